"""Terminal heatmap of per-core time: one row per CPU, one column per time bucket, coloured by
the chosen mode's %, with the machine average as the last row."""

from __future__ import annotations

from collections.abc import Sequence

from corescope.analysis.usage import sum_deltas, usage_of
from corescope.model.cores import CoreSample, Episode
from corescope.timeparse import iso

_SHADES = " .:-=+*#%@"
# 256-colour ramp from dark to hot red, for kernel-time %
_RAMP = (236, 22, 28, 34, 100, 142, 178, 208, 202, 196)


def _cell(pct: float, color: bool) -> str:
    idx = min(9, max(0, int(pct / 10)))
    if color:
        return f"\x1b[48;5;{_RAMP[idx]}m \x1b[0m"
    return _SHADES[idx]


def _bucketed(samples: Sequence[CoreSample], columns: int) -> tuple[list[list[CoreSample]], float]:
    t0 = samples[0].t - samples[0].interval_s
    span = max(samples[-1].t - t0, 1e-3)
    width = span / columns
    cols: list[list[CoreSample]] = [[] for _ in range(columns)]
    for s in samples:
        cols[min(columns - 1, int((s.t - s.interval_s / 2 - t0) / width))].append(s)
    return cols, width


def _pct(rows: list[tuple[int, ...]], mode: str) -> float | None:
    return usage_of(0, sum_deltas(rows)).mode_pct(mode) if rows else None


def render(samples: Sequence[CoreSample], episodes: Sequence[Episode], mode: str,
           width: int = 100, color: bool = False) -> str:
    if not samples:
        return "no samples in this range (is `corescope record` running?)"
    cpus = sorted({c for s in samples for c in s.deltas})
    columns = max(1, min(width - 12, len(samples)))
    cols, bucket = _bucketed(samples, columns)
    label = max(5, len(f"cpu{cpus[-1]}"))
    lines = [
        f"{mode} time per core, {iso(samples[0].t - samples[0].interval_s)} → "
        f"{iso(samples[-1].t)}, {bucket:.3g}s per column"
        + ("" if color else f"  (shades '{_SHADES}' = 0..100%)")
    ]
    for cpu in cpus:
        row = []
        for group in cols:
            p = _pct([s.deltas[cpu] for s in group if cpu in s.deltas], mode)
            row.append("?" if p is None else _cell(p, color))
        lines.append(f"{'cpu' + str(cpu):>{label}} |{''.join(row)}|")
    avg = []
    for group in cols:
        p = _pct([d for s in group for d in s.deltas.values()], mode)
        avg.append("?" if p is None else _cell(p, color))
    lines.append(f"{'all':>{label}} |{''.join(avg)}|")
    lines.append("")
    if not episodes:
        lines.append("no hot-core episodes")
    else:
        lines.append(f"{len(episodes)} hot-core episode(s):")
        for e in episodes:
            lines.append(
                f"  cpu{e.cpu}  {iso(e.start)}  {e.duration_s:5.1f}s  {e.mode} mean "
                f"{e.mean_pct:5.1f}% peak {e.peak_pct:5.1f}%  | machine avg "
                f"{e.machine_avg_pct:4.1f}%  | seen by a 30s monitor {e.seen_at_30s_pct:4.1f}%, "
                f"60s {e.seen_at_60s_pct:4.1f}%"
            )
    return "\n".join(lines)


def terminal_width(default: int = 100) -> int:
    import shutil

    return max(40, shutil.get_terminal_size((default, 24)).columns)


