"""How well the verdict's confidence is calibrated: the Brier score of `diagnose` over
generated scenario hours (`lab scenario`), each one's truth in its expected.json.

Each verdict that names a root cause is a forecast "this is the root cause" with its
confidence; the outcome is 1 when the scenario's truth agrees, else 0. Brier = mean of
(confidence − outcome)². An `undetermined` verdict claims nothing (confidence 0, no cause):
it is counted apart, as right or wrong, not in the score."""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

# (kind, seed, cpus, knobs): every class, with varied seeds, CPU counts and second stories
CORPUS: tuple[tuple[str, int, int, dict[str, tuple[str, ...] | str]], ...] = (
    ("zombie_chain", 1, 96, {}), ("zombie_chain", 7, 16, {}), ("zombie_chain", 12, 48, {}),
    ("zombie_chain", 62, 16, {"also": ("neighbours",)}),
    ("zombie_chain", 53, 16, {"census_format": "v2", "walker": "cadvisor"}),
    ("zombie_chain", 741, 24, {"census_format": "v2", "walker": "node_exporter"}),
    ("zombie_chain", 712, 24, {"also": ("cluster_pods",)}),
    ("softirq_storm", 2, 32, {}), ("softirq_storm", 9, 8, {}),
    ("softirq_storm", 73, 16, {"also": ("contention",)}),
    ("healthy_bursty", 3, 64, {}), ("healthy_bursty", 10, 8, {}),
    ("healthy_bursty", 237, 16, {"also": ("neighbours",)}),
    ("healthy_bursty", 711, 12, {"also": ("cluster_pods",)}),
    ("healthy_bursty", 731, 8, {"also": ("benign_reset",)}),
    ("zombie_no_harm", 4, 16, {}), ("zombie_no_harm", 703, 8, {"also": ("recent_loop",)}),
    ("zombie_no_harm", 71, 16, {"also": ("neighbours",)}),
    ("hardware_fault", 5, 24, {}), ("hardware_fault", 11, 96, {}),
    ("hardware_fault", 208, 2, {"also": ("hot_core",)}),
    ("cpu_contention", 6, 8, {}), ("cpu_contention", 97, 16, {"omit": ("pressure",)}),
    ("memory_pressure", 7, 16, {}), ("memory_pressure", 721, 24, {"also": ("oom_legacy",)}),
    ("memory_pressure", 722, 6, {"also": ("oom_legacy", "cluster_pods")}),
    ("hypervisor_steal", 8, 32, {}), ("hypervisor_steal", 24, 16, {}),
    ("crash_loop", 9, 16, {}), ("crash_loop", 701, 12, {"also": ("recent_loop",)}),
    ("crash_loop", 713, 6, {"also": ("cluster_pods",)}),
    ("crash_loop", 733, 16, {"also": ("benign_reset",)}),
    ("crash_loop", 204, 16, {"also": ("contention",)}),
)


@dataclass(frozen=True)
class Outcome:
    kind: str
    seed: int
    cpus: int
    want: str
    got: str
    confidence: float

    @property
    def right(self) -> bool:
        return self.want == self.got


def brier(outcomes: Iterable[Outcome]) -> tuple[float | None, int]:
    """(Brier score over the verdicts that name a cause, how many named one)."""
    named = [o for o in outcomes if o.got != "undetermined"]
    if not named:
        return None, 0
    return sum((o.confidence - (1.0 if o.right else 0.0)) ** 2 for o in named) / len(named), \
        len(named)


def diagnose_dir(path: Path) -> tuple[str, float]:
    """The verdict `diagnose PATH` reaches on one directory (root cause, confidence)."""
    from corescope.evidence.open import scratch_store
    from corescope.evidence.store import StoreEvidence
    from corescope.ingest import import_paths
    from corescope.investigate import Window, investigate
    from corescope.runner import Runner
    from corescope.store.meta import capture_window

    with scratch_store("corescope-calib-") as store:
        import_paths([path], store)
        ev = StoreEvidence(store, Runner())
        cov = ev.coverage()
        if cov.start is None or cov.end is None:
            return "undetermined", 0.0
        start, end = capture_window(store) or (cov.start, cov.end)
        inv = investigate(ev, Window(start, end))
    v = inv.diagnosis.verdict if inv.diagnosis else None
    return (v.root_cause, v.confidence) if v else ("undetermined", 0.0)


def run(cases: Sequence[tuple[str, int, int, dict]] = CORPUS, duration_s: int = 900
        ) -> list[Outcome]:
    from corescope.lab.scenarios import generate

    out: list[Outcome] = []
    for kind, seed, cpus, knobs in cases:
        tmp = Path(tempfile.mkdtemp(prefix="corescope-calib-scen-"))
        try:
            d = tmp / "s"
            exp = generate(kind, d, cpus=cpus, seed=seed, duration_s=duration_s, **knobs)
            got, conf = diagnose_dir(d)
            out.append(Outcome(kind, seed, cpus, exp["root_cause"], got, conf))
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return out


def main() -> None:
    outcomes = run()
    score, n = brier(outcomes)
    for o in outcomes:
        print(json.dumps({"kind": o.kind, "seed": o.seed, "cpus": o.cpus, "want": o.want,
                          "got": o.got, "confidence": o.confidence}))
    right = sum(o.right for o in outcomes)
    print(f"{right}/{len(outcomes)} right; Brier {score:.4f} over {n} named verdicts"
          if score is not None else "no verdict named a cause")


if __name__ == "__main__":
    main()
