"""Generated incident hours (corescope.lab.scenarios, standard library, deterministic) through
the importer: what the store then holds equals the generator's ground truth. The seeds vary
the formats (dmesg plain or ISO, gzip or not, mpstat date styles, midnight crossings)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from corescope.analysis.episodes import find_episodes
from corescope.ingest import import_paths
from corescope.lab.scenarios import generate
from corescope.store.census import read_censuses
from corescope.store.db import Store
from corescope.store.events import irq_map_at, read_events
from corescope.store.series import read_samples


@pytest.fixture(autouse=True)
def _utc(utc: None) -> None:
    """The generated node's clock is UTC; mpstat and `date` print local time."""


@pytest.mark.parametrize("seed", [1, 2, 3, 4, 7])
def test_zombie_chain_hour_imports_to_its_ground_truth(tmp_path: Path, seed: int) -> None:
    exp = generate("zombie_chain", tmp_path / "hour", cpus=8, seed=seed, duration_s=900)
    with Store.open(tmp_path / "store") as store:
        rep = import_paths([tmp_path / "hour"], store)
        kinds = {Path(f.path).name: f.kind for f in rep.files}
        assert kinds["mpstat.json" if "mpstat.json" in kinds else "mpstat.json.gz"] == \
            "mpstat_json"
        assert kinds["census.log"] == "census_loop"
        assert kinds["dmesg.txt"] == "kernel_log"
        assert not [f for f in rep.files if f.status == "partial"], rep.to_json()
        assert rep.boot_time == pytest.approx(exp["boot_time"], abs=1.0)

        span = rep.span
        assert span is not None
        samples = read_samples(store, span[0] - 1, span[1] + 1)
        assert len(samples) == 900
        eps = find_episodes(samples, 90.0, 2.0, "kernel")
        want = [e for e in exp["episodes"] if e["kernel"] and e["end"] - e["start"] >= 2.5]
        got = [e for e in eps if e.cpu == exp["hot_cpu"]]
        # each generated saturation of 2.5 s or more is found, on the right core, within 1 s
        for w in want:
            assert any(abs(g.end - w["end"]) <= 1.5 and g.cpu == w["cpu"] for g in got), w

        events = read_events(store, span[0] - 60, span[1] + 60)
        counts = Counter(e.kind for e in events)
        for kind, n in exp["events"].items():
            assert counts[kind] == n, (kind, counts)
        stalls = [e for e in events if e.kind == "nic_tx_stall"]
        for ev in stalls:  # boot-relative dmesg placed by the btime anchor: after an episode
            assert any(0 <= ev.time - g.end <= 30 for g in got), ev
            qmap = irq_map_at(store, ev.time)
            serving = {c for q in qmap if q.queue == ev.queue and q.direction != "rx"
                       for c in q.cpus}
            assert exp["hot_cpu"] in serving

        cens = read_censuses(store, span[0] - 60, span[1] + 60)
        assert len(cens) >= 80 and cens[-1].dying == exp["dying"]["end"]


def test_zombies_on_an_imported_store_reads_the_imported_node(tmp_path: Path) -> None:
    """The import marks the store as another node's: `zombies` then reports the imported
    censuses and restart evidence, not this machine's cgroups."""
    import json

    from support import run_cli

    exp = generate("zombie_chain", tmp_path / "hour", cpus=8, seed=5, duration_s=1800)
    with Store.open(tmp_path / "store") as store:
        import_paths([tmp_path / "hour"], store)
    proc = run_cli("--store", str(tmp_path / "store"), "zombies", "--json")
    assert proc.returncode in (0, 1), proc.stderr
    z = json.loads(proc.stdout)
    assert z["memory"]["dying"] == exp["dying"]["end"]
    assert z["growth"]["points"] >= 150
    assert z["growth"]["per_hour"] == pytest.approx(exp["dying"]["per_hour"], rel=0.2)
    names = [s["name"] for s in z["suspects"]]
    assert names and any(a in names[0] for a in exp["culprit_aliases"])
