"""Per-CPU percentages from tick deltas, with sysstat's mpstat arithmetic."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np

from corescope.model.cores import COMPOSITE_MODES, FIELDS, MODES, CoreSample, CpuUsage

_IDX = {name: i for i, name in enumerate(FIELDS)}
_U, _N, _S, _I, _W, _Q, _SQ, _ST, _G, _GN = (_IDX[f] for f in FIELDS)


def interval_of(d: tuple[int, ...]) -> int:
    """sysstat's per-CPU interval (get_per_cpu_interval): user+nice+sys+iowait+idle+steal+
    irq+softirq, guest being inside user and guest_nice inside nice; when the guest counter
    ran ahead of user (the kernel updates them apart), the excess is added back so that the
    modes still add up to the interval."""
    return (d[_U] + d[_N] + d[_S] + d[_W] + d[_I] + d[_ST] + d[_Q] + d[_SQ]
            + (d[_G] - d[_U] if d[_G] > d[_U] else 0) + (d[_GN] - d[_N] if d[_GN] > d[_N] else 0))


def usage_of(cpu: int, d: tuple[int, ...]) -> CpuUsage:
    """mpstat's per-CPU line: each mode's ticks over `interval_of`; %usr excludes guest,
    %nice guest_nice, and the ten modes add up to 100."""
    itv = interval_of(d)
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
    # column sums in C (zip transposes, sum adds): exact integers, the same as a loop
    summed = tuple(map(sum, zip(*rows, strict=True)))
    return summed if summed else (0,) * len(FIELDS)


def machine_usage(sample: CoreSample) -> CpuUsage:
    """mpstat's `all` row: the sum of the per-CPU counters (CPU -1)."""
    return usage_of(-1, sum_deltas(sample.deltas.values()))


class _Planes:
    """One field plane of a tick array at a time, widened once (uint8 → int16, uint16 →
    int32: wide enough for a sum of ten), so a field-major view costs no copy."""

    def __init__(self, ticks: np.ndarray) -> None:
        self.ticks = ticks
        self.wide = {1: np.int16, 2: np.int32}.get(ticks.dtype.itemsize, np.int64)
        self._got: dict[int, np.ndarray] = {}

    def __call__(self, f: int) -> np.ndarray:
        if f not in self._got:
            self._got[f] = self.ticks[..., f].astype(self.wide)
        return self._got[f]

    def interval(self) -> np.ndarray:
        d = self
        return (d(_U) + d(_N) + d(_S) + d(_W) + d(_I) + d(_ST) + d(_Q) + d(_SQ)
                + _excess(d(_G), d(_U)) + _excess(d(_GN), d(_N)))


def mode_ticks(ticks: np.ndarray, modes: Sequence[str]) -> tuple[np.ndarray, list[np.ndarray]]:
    """`interval_of` over an array of tick rows (last axis FIELDS), and each (composite)
    mode's ticks: the one percentage rule, for the store's matrices, the live metrics and the
    report's heatmap alike."""
    d = _Planes(ticks)
    out = []
    for mode in modes:
        parts = COMPOSITE_MODES.get(mode, (mode,))
        total = _MODE_TICKS[parts[0]](d)
        for p in parts[1:]:
            total = total + _MODE_TICKS[p](d)
        out.append(total)
    return d.interval(), out


def mode_pct(ticks: np.ndarray, mode: str) -> tuple[np.ndarray, np.ndarray]:
    """usage_of over an array of tick rows (last axis FIELDS): (itv ticks, `mode` %), with the
    same operations in the same order, so each cell equals usage_of(...).mode_pct(mode) (a
    composite mode's sum may differ in the last bit where Python's sum() compensates). Empty
    intervals read as idle: 0 %, or 100 % for idle."""
    d = _Planes(ticks)
    itv = d.interval()
    parts = COMPOSITE_MODES.get(mode, (mode,))
    with np.errstate(divide="ignore", invalid="ignore"):
        f = 100.0 / itv
        pct = _MODE_TICKS[parts[0]](d) * f  # sum() starts from 0: 0 + x is x
        for p in parts[1:]:
            pct += _MODE_TICKS[p](d) * f
    empty = itv == 0
    pct[empty] = 100.0 if parts == ("idle",) else 0.0
    return itv, pct


def _excess(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.where(a > b, a - b, 0)


_MODE_TICKS: dict[str, Callable[[_Planes], np.ndarray]] = {
    "usr": lambda d: _excess(d(_U), d(_G)),
    "nice": lambda d: _excess(d(_N), d(_GN)),
    "sys": lambda d: d(_S),
    "iowait": lambda d: d(_W),
    "irq": lambda d: d(_Q),
    "soft": lambda d: d(_SQ),
    "steal": lambda d: d(_ST),
    "guest": lambda d: d(_G),
    "gnice": lambda d: d(_GN),
    "idle": lambda d: d(_I),
}


# A core is hot when `mode` took `threshold` % of the time the guest had it: time the hypervisor
# stole was not the guest's to spend (a core at 87 % sys and 10 % steal ran kernel code 97 % of
# the time it ran: the NIC driver's softirq on it starved all the same). Only while the guest
# had the core at least half the time: beyond that the host, not the guest, is the story (the
# steal hypothesis), and the threshold applies to wall time as for every other monitor.
STEAL_DISCOUNT_BELOW_PCT = 50.0


def hot_floor(threshold: float, mode: str, steal_pct: Any) -> Any:
    """The `mode` % at or above which a cell is hot, given its steal % (a float or an array):
    `threshold` of the unstolen time; steal and idle themselves are judged on wall time."""
    if mode in ("steal", "idle"):
        return threshold if not isinstance(steal_pct, np.ndarray) else \
            np.full(steal_pct.shape, float(threshold))
    lo = threshold * (100.0 - steal_pct) / 100.0
    if isinstance(steal_pct, np.ndarray):
        return np.where(steal_pct < STEAL_DISCOUNT_BELOW_PCT, lo, float(threshold))
    return lo if steal_pct < STEAL_DISCOUNT_BELOW_PCT else threshold


def lowest_hot_floor(threshold: float, mode: str, steal_bound: np.ndarray) -> np.ndarray:
    """The least hot_floor over cells whose steal % is below `steal_bound` (a zone map's
    strict upper bound): what a segment's `mode` bound must reach for it to hold a hot cell."""
    if mode in ("steal", "idle"):
        return np.full(steal_bound.shape, float(threshold))
    return threshold * (100.0 - np.minimum(steal_bound, STEAL_DISCOUNT_BELOW_PCT)) / 100.0


def mode_bounds(fields: np.ndarray, present: np.ndarray) -> np.ndarray:
    """A block's zone map: [ncpu, len(MODES)] uint8, per CPU per base mode an integer strictly
    above the highest `mode` % of any online cell with a non-empty interval (0 when there is
    none), so `sum of a composite's parts' bounds <= threshold` proves no cell is hot. Takes
    the block as stored (fields[f, cpu, k], present[k, cpu])."""
    ticks = fields.transpose(1, 2, 0)  # [cpu, k, field]
    out = np.zeros((fields.shape[1], len(MODES)), np.uint8)
    if not fields.shape[2]:
        return out
    itv, _ = mode_pct(ticks, "idle")
    ok = present.T & (itv > 0)
    for j, mode in enumerate(MODES):
        _, pct = mode_pct(ticks, mode)
        top = np.where(ok, pct, -1.0).max(axis=1)
        out[:, j] = np.where(top >= 0, np.floor(np.minimum(top, 254.0)) + 1, 0)
    return out


def bound_of(bounds: np.ndarray, mode: str) -> np.ndarray:
    """Per-CPU upper bound of a (composite) mode's % from mode_bounds rows [..., MODES]."""
    parts = COMPOSITE_MODES.get(mode, (mode,))
    return bounds[..., [MODES.index(p) for p in parts]].astype(np.int64).sum(axis=-1)
