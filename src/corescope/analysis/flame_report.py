"""The `flame --format json/top` report: a window's profile, its tables and the diff, as
plain data (the JSON contract: docs/json/v1/flame.schema.json)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from corescope.analysis.flame import Change, FunctionShare, Profile, diff


def top_functions(profile: Profile, limit: int = 20) -> list[FunctionShare]:
    """The heaviest functions by self share and by total share, heaviest total first, so a
    hot leaf and the hot path above it both show."""
    counts = profile.function_counts()  # once for both tables
    by_self = profile.top_functions(limit, counts)
    by_total = profile.top_functions_by_total(limit, counts)
    seen: dict[tuple[str, bool], FunctionShare] = {}
    for f in by_self + by_total:
        seen.setdefault((f.name, f.kernel), f)
    return sorted(seen.values(), key=lambda f: (-f.total_pct, -f.self_pct, f.name))


@dataclass
class FlameReport:
    start: float | None
    end: float | None
    clock: str  # "wall" (UTC epoch) or "perf" (offline files: perf's own clock)
    cpu: int | None
    profile: Profile
    baseline: Profile | None = None
    baseline_start: float | None = None
    baseline_end: float | None = None
    baseline_note: str = ""
    chunks: int = 0
    diagnostics: list[str] = field(default_factory=list)
    limit: int = 20
    # the perf event drawn (one per graph) and every event present with its sample count;
    # None: every sample was drawn
    event: str | None = None
    events_present: dict[str, int] | None = None

    def changes(self) -> tuple[list[Change], list[Change]]:
        if self.baseline is None:
            return [], []
        return diff(self.profile, self.baseline, limit=self.limit)

    def to_json(self) -> dict[str, Any]:
        p = self.profile
        out: dict[str, Any] = {
            "window": {"start": _r(self.start), "end": _r(self.end), "clock": self.clock},
            "cpu": self.cpu,
            "samples": p.samples,
            "idle_samples": p.idle_samples,
            "busy_samples": p.busy_samples,
            "top_processes": [
                {"comm": s.comm, "pct": round(s.pct, 2), "samples": s.samples}
                for s in p.top_processes(self.limit)
            ],
            "top_functions": [
                {"name": f.name, "kernel": f.kernel, "self_pct": round(f.self_pct, 2),
                 "total_pct": round(f.total_pct, 2), "self_samples": f.self_samples,
                 "total_samples": f.total_samples}
                for f in top_functions(p, self.limit)
            ],
            "diff": None,
            "events": dict(self.events_present if self.events_present is not None
                           else p.events),
            "event": self.event,
            "weight": p.weight,
            "total_weight": p.total_weight,
            "chunks": self.chunks,
            "diagnostics": self.diagnostics[:50],
        }
        if self.baseline is not None:
            grew, shrank = self.changes()
            out["diff"] = {
                "baseline": {"start": _r(self.baseline_start), "end": _r(self.baseline_end),
                             "note": self.baseline_note},
                "baseline_samples": self.baseline.samples,
                "normalised_by": "total samples (idle included): pct is the CPU share",
                "grew": [c.to_json() for c in grew],
                "shrank": [c.to_json() for c in shrank],
            }
        return out


def _r(t: float | None) -> float | None:
    return None if t is None else round(t, 6)


def top_table(report: FlameReport) -> str:
    """The terminal table for `--format top`."""
    p = report.profile
    lines = []
    where = f"cpu {report.cpu}" if report.cpu is not None else "all CPUs"
    lines.append(f"{p.samples} samples on {where}, {p.idle_samples} idle, "
                 f"{p.busy_samples} busy")
    lines.append("")
    lines.append(f"{'PROCESS':<32} {'BUSY%':>7} {'SAMPLES':>8}")
    for s in p.top_processes(report.limit):
        lines.append(f"{s.comm[:32]:<32} {s.pct:7.2f} {s.samples:8d}")
    lines.append("")
    lines.append(f"{'FUNCTION':<48} {'SELF%':>7} {'TOTAL%':>7}")
    for f in top_functions(p, report.limit):
        lines.append(f"{f.label[:48]:<48} {f.self_pct:7.2f} {f.total_pct:7.2f}")
    if report.baseline is not None:
        grew, _shrank = report.changes()
        lines.append("")
        lines.append(f"grew most against the baseline ({report.baseline_note or 'baseline'};"
                     " % of all samples):")
        for c in grew:
            lines.append(f"  {c.kind:<8} {c.name[:48]:<48} {c.before_pct:6.2f}% → "
                         f"{c.after_pct:6.2f}%")
        if not grew:
            lines.append("  (nothing grew)")
    return "\n".join(lines)
