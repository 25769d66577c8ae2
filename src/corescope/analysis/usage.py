"""Per-CPU percentages from tick deltas, with sysstat's mpstat arithmetic."""

from __future__ import annotations

from collections.abc import Iterable

from corescope.model.cores import FIELDS, MODES, CoreSample, CpuUsage

_IDX = {name: i for i, name in enumerate(FIELDS)}
_U, _N, _S, _I, _W, _Q, _SQ, _ST, _G, _GN = (_IDX[f] for f in FIELDS)


def usage_of(cpu: int, d: tuple[int, ...]) -> CpuUsage:
    """mpstat's per-CPU line. The interval is user+nice+sys+iowait+idle+steal+irq+softirq
    (guest is inside user, so it is not added again); %usr excludes guest, %nice guest_nice."""
    itv = d[_U] + d[_N] + d[_S] + d[_W] + d[_I] + d[_ST] + d[_Q] + d[_SQ]
    if itv == 0:
        # tickless idle CPU: mpstat prints it as fully idle
        pct = dict.fromkeys(MODES, 0.0)
        pct["idle"] = 100.0
        return CpuUsage(cpu=cpu, ticks=0, pct=pct)
    f = 100.0 / itv
    usr = d[_U] - d[_G] if d[_U] > d[_G] else 0
    nice = d[_N] - d[_GN] if d[_N] > d[_GN] else 0
    pct = {
        "usr": usr * f,
        "nice": nice * f,
        "sys": d[_S] * f,
        "iowait": d[_W] * f,
        "irq": d[_Q] * f,
        "soft": d[_SQ] * f,
        "steal": d[_ST] * f,
        "guest": d[_G] * f,
        "gnice": d[_GN] * f,
        "idle": d[_I] * f,
    }
    return CpuUsage(cpu=cpu, ticks=itv, pct=pct)


def sample_usage(sample: CoreSample) -> dict[int, CpuUsage]:
    return {cpu: usage_of(cpu, d) for cpu, d in sample.deltas.items()}


def sum_deltas(rows: Iterable[tuple[int, ...]]) -> tuple[int, ...]:
    """Field-wise sum of tick-delta rows (over CPUs, or over time)."""
    summed = [0] * len(FIELDS)
    for d in rows:
        for i, v in enumerate(d):
            summed[i] += v
    return tuple(summed)


def machine_usage(sample: CoreSample) -> CpuUsage:
    """mpstat's `all` row: the sum of the per-CPU counters (CPU -1)."""
    return usage_of(-1, sum_deltas(sample.deltas.values()))
