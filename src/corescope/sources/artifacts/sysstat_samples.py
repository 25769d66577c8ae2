"""sysstat's printed per-CPU percentages back to the store's tick deltas, and the samples they
are read into (`PctSamples`, one CoreMatrix at the end), for every sysstat form: mpstat text
and JSON, sadf -j, -d, -p and -x.

The store keeps USER_HZ tick deltas per CPU in /proc/stat's field order (model.cores.FIELDS),
so each CPU's interval is rebuilt as round(interval_s × 100) ticks and shared among the fields
in proportion to the printed percentages (largest remainder, so the ticks add up exactly;
guest ticks are put back inside user and guest_nice inside nice, as /proc/stat counts them).
The percentages are renormalised first: sysstat prints each one rounded to 0.01 and the
kernel's per-second deltas jitter by a tick (99 or 101 ticks), so the printed values sum to
99.98–100.02. Resolution is one tick: at a 1 s interval a percentage comes back within ±0.5
percentage points of what mpstat printed, and a core mpstat showed at 100% system time comes
back at 100%."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Any

import numpy as np

from corescope.model.matrix import CoreMatrix
from corescope.sources.artifacts.base import Parsed

USER_HZ = 100

# the printed percentages, in this order (model.cores.MODES)
MODES = ("usr", "nice", "sys", "iowait", "irq", "soft", "steal", "guest", "gnice", "idle")
_NAMES = {
    "usr": ("usr", "user", "%usr", "%user"), "nice": ("nice", "%nice"),
    "sys": ("sys", "system", "%sys", "%system"), "iowait": ("iowait", "%iowait"),
    "irq": ("irq", "%irq"), "soft": ("soft", "%soft"), "steal": ("steal", "%steal"),
    "guest": ("guest", "%guest"), "gnice": ("gnice", "%gnice"), "idle": ("idle", "%idle"),
}
ALIAS = {alias: mode for mode, aliases in _NAMES.items() for alias in aliases}
MODE_AT = {m: i for i, m in enumerate(MODES)}


def ticks_from_pct_array(pct: np.ndarray, n_ticks: np.ndarray) -> np.ndarray:
    """[N, 10] percentages (MODES order) and [N] interval ticks → [N, 10] int64 tick deltas in
    FIELDS order. Rows must be finite, non-negative and not all zero."""
    g = pct.astype(np.float64)
    u, ni, sy, io, irq, soft, steal, guest, gnice, idle = (g[:, i] for i in range(10))
    # /proc/stat's interval fields, FIELDS order; user holds guest and nice holds guest_nice
    parts = np.stack([u + guest, ni + gnice, sy, idle, io, irq, soft, steal], axis=1)
    total = parts.sum(axis=1, keepdims=True)
    n = n_ticks.astype(np.int64)[:, None]
    exact = parts / total * n
    ticks = np.floor(exact).astype(np.int64)
    short = n - ticks.sum(axis=1, keepdims=True)
    # largest remainder: the `short` fields with the biggest fractions get one more tick
    # (only rows that are short at all: the others need no sort)
    need = np.flatnonzero(short[:, 0] > 0)
    if need.size:
        order = np.argsort(ticks[need] - exact[need], axis=1, kind="stable")
        rank = np.empty_like(order)
        np.put_along_axis(rank, order, np.arange(8)[None, :].repeat(len(order), 0), axis=1)
        ticks[need] += rank < short[need]
    g_t = np.minimum(ticks[:, 0], np.rint(guest / total[:, 0] * n[:, 0]).astype(np.int64))
    gn_t = np.minimum(ticks[:, 1], np.rint(gnice / total[:, 0] * n[:, 0]).astype(np.int64))
    return np.concatenate([ticks, g_t[:, None], gn_t[:, None]], axis=1)


def ticks_from_pct(pct: dict[str, float], interval_s: float) -> tuple[int, ...] | None:
    """One CPU's printed percentages over `interval_s` → FIELDS-order tick deltas."""
    row = np.array([[max(0.0, float(pct.get(m, 0.0))) for m in MODES]])
    if not np.isfinite(row).all() or row.sum() <= 0:
        return None
    n = np.array([max(1, round(interval_s * USER_HZ))])
    return tuple(int(v) for v in ticks_from_pct_array(row, n)[0])


_OFFLINE_NOTE = ("CPU rows of all zeros (how sysstat prints an offline CPU) read as that CPU "
                 "being offline at that time")


def json_intervals(times: list[float]) -> list[float]:
    """mpstat JSON states no interval: each is the step from the entry before (the first,
    and any gap over 4x the usual step, take the usual step)."""
    t = np.array(times)
    steps = np.diff(t)
    pos = steps[steps > 0]
    step = float(np.median(pos)) if pos.size else 1.0
    iv = np.full(len(t), step)
    if len(t) > 1:
        ok = (steps > 0) & (steps <= 4 * step)
        iv[1:][ok] = steps[ok]
    return [float(x) for x in iv]


class PctSamples:
    """Samples as they are read: (time, interval, CPU ids, [k, 10] percentages) per sample;
    turned into one CoreMatrix (ticks computed for all rows at once) at the end. sadf_forms
    reads `sadf -p` and `sadf -x` into it too."""

    def __init__(self) -> None:
        self.t: list[float] = []
        self.iv: list[float] = []
        self.ids: list[np.ndarray] = []
        self.pct: list[np.ndarray] = []
        self.block: np.ndarray | None = None  # add_uniform's rows, [entries, CPUs, 10]

    def add(self, t: float, iv: float, ids: list[int], rows: list[list[float]] | np.ndarray,
            p: Parsed) -> None:
        if not len(ids):
            return
        try:
            a = np.asarray(rows, dtype=np.float64)
        except (TypeError, ValueError):  # a value that is no number: row by row
            a = np.array([[num(str(v)) for v in r] for r in rows], dtype=np.float64)
        ok = np.isfinite(a).all(axis=1) & (a >= 0).all(axis=1) & (a <= 100.5).all(axis=1)
        zero = ok & (a.sum(axis=1) <= 0)
        ok &= ~zero
        # sysstat prints an offline CPU as all zeros: the CPU is absent, not idle
        if zero.any() and _OFFLINE_NOTE not in p.notes:
            p.notes.append(_OFFLINE_NOTE)
        if not (ok | zero).all():
            p.diag(f"{int((~(ok | zero)).sum())} CPU rows with unreadable percentages skipped")
        keep = np.array(ids, dtype=np.int64)[ok]
        if keep.size == 0:
            return
        _, first = np.unique(keep, return_index=True)
        if first.size != keep.size:
            p.diag("a CPU listed twice in one entry: the first kept")
        self.t.append(t)
        self.iv.append(iv)
        self.ids.append(keep[np.sort(first)])
        self.pct.append(a[ok][np.sort(first)])

    def add_uniform(self, times: list[float], a: np.ndarray, sizes: np.ndarray) -> bool:
        """Many entries at once when they list the same CPUs in the same order, once each,
        and every row is readable ([n·k, 11]: CPU id, then the percentages): what `add`
        would keep, without its per-entry work. False (nothing added) otherwise."""
        n = len(times)
        if n == 0 or not (sizes == sizes[0]).all():
            return False
        k = int(sizes[0])
        ids = a[:, 0].astype(np.int64).reshape(n, k)
        first = ids[0]
        if not (ids == first).all() or np.unique(first).size != k:
            return False
        pct = a[:, 1:]
        ok = np.isfinite(pct).all(axis=1) & (pct >= 0).all(axis=1) & (pct <= 100.5).all(axis=1)
        if not (ok & (pct.sum(axis=1) > 0)).all():
            return False
        self.block = pct.reshape(n, k, 10)
        self.t.extend(times)
        self.iv.extend([float("nan")] * n)
        self.ids.extend([first] * n)  # one array shared by every entry: matrix() sees it
        self.pct.extend(self.block)
        return True

    def fill_intervals(self) -> None:
        self.iv = json_intervals(self.t)

    def matrix(self) -> CoreMatrix | None:
        if not self.t:
            return None
        order = np.argsort(np.array(self.t), kind="stable")
        cpus = np.unique(np.concatenate(self.ids))
        n, ncpu = len(self.t), len(cpus)
        pct = np.zeros((n, ncpu, 10))
        present = np.zeros((n, ncpu), bool)
        shared = self.ids[0]
        if self.block is not None and all(ids is shared for ids in self.ids):
            # add_uniform's entries (and only those): one layout, no per-entry copies
            cols = np.searchsorted(cpus, shared)
            in_order = bool((np.diff(np.array(self.t)) >= 0).all())  # the stable sort kept it
            pct[:, cols] = self.block if in_order else self.block[order]
            present[:, cols] = True
        else:
            for k, j in enumerate(order):
                cols = np.searchsorted(cpus, self.ids[j])
                pct[k, cols] = self.pct[j]
                present[k, cols] = True
        iv = np.array(self.iv, np.float64)[order]
        n_ticks = np.maximum(1, np.rint(np.nan_to_num(iv, nan=1.0) * USER_HZ)).astype(np.int64)
        flat_n = np.repeat(n_ticks, ncpu).reshape(n, ncpu)
        if present.all():  # every CPU in every entry: no masked copies
            ticks = ticks_from_pct_array(pct.reshape(-1, 10), flat_n.reshape(-1)
                                         ).reshape(n, ncpu, 10)
        else:
            ticks = np.zeros((n, ncpu, 10), np.int64)
            ticks[present] = ticks_from_pct_array(pct[present], flat_n[present])
        return CoreMatrix.from_ticks(t=np.array(self.t, np.float64)[order], interval_s=iv,
                                     cpus=cpus.astype(np.int64), ticks=ticks, present=present)


NO_SAMPLE = "not a per-core sample, skipped"


def averages(ids: Sequence[int], rows: Sequence[Sequence[float]] | np.ndarray,
             top: int = 4) -> str:
    """A report that is no sample, summed up for the reader: the busiest CPUs' busy share
    (100 − %idle − %iowait) and their %sys."""
    busy = []
    for cpu, r in zip(ids, rows, strict=False):
        v = [float(x) for x in r]
        if len(v) == len(MODES) and all(math.isfinite(x) for x in v):
            busy.append((100.0 - v[MODE_AT["idle"]] - v[MODE_AT["iowait"]], v[MODE_AT["sys"]],
                         int(cpu)))
    if not busy:
        return "no readable CPU rows"
    busy.sort(key=lambda b: (-b[0], b[2]))
    shown = ", ".join(f"cpu{c} {b:.1f}% busy ({sy:.1f}% sys)" for b, sy, c in busy[:top])
    more = f", {len(busy) - top} more CPUs" if len(busy) > top else ""
    return shown + more


MAX_CPUS = 65536  # CPU ids at or past this are garbage, not a CPU


def cpu_id(v: Any) -> int | None:
    if isinstance(v, int) and not isinstance(v, bool) and 0 <= v < MAX_CPUS:
        return v
    if isinstance(v, str) and v.isdigit() and len(v) < 6 and int(v) < MAX_CPUS:
        return int(v)
    return None  # "all", a NUMA node, garbage


def num(tok: str) -> float:
    try:
        return float(tok.replace(",", ".").removesuffix("%"))  # sar -h: `12.5%`
    except ValueError:
        return float("nan")


def finish(acc: PctSamples, p: Parsed, data: bytes) -> Parsed:
    """The samples read into `acc` become `p.samples`; a file that gave none says why."""
    m = acc.matrix()
    if m is not None:
        p.samples = m
    elif p.extra_records:
        pass  # softirq rates only (`mpstat -I SCPU`): no CPU table was asked for
    elif p.diagnostics and p.diagnostics[0].message.endswith(NO_SAMPLE):
        pass  # a report that is no sample: said so, and its per-CPU rows were there
    elif re.search(rb'"cpu": "all"|^\S+(?: [AP]M)?\s+all\s|;-1;|\tall\t%|<cpu number="all"',
                   data[:1 << 20], re.MULTILINE):
        p.diag("only the all-CPU average is in it: per-core data needs `mpstat -P ALL` "
               "(or `sadf -j FILE -- -P ALL -u ALL`)")
    elif not p.diagnostics:
        p.diag("no per-CPU utilisation entries found")
    return p
