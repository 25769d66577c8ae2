"""sysstat's per-CPU utilisation: `mpstat -P ALL -o JSON` (sysstat 11 and 12), plain
`mpstat -P ALL N` text (12 h and 24 h clocks, any locale's date and decimal comma, ISO with
S_TIME_FORMAT=ISO; `mpstat -A` and sar's text too, of which only the CPU tables are read),
and `sadf -j` or `sadf -d` of a `sar -o` file (`-- -P ALL -u` or `-u ALL`). mpstat's SCPU
tables (`mpstat -I SCPU`, inside `-I ALL` and `-A`; JSON's "soft-interrupts") give NET_RX and
NET_TX per CPU (`SoftirqRates`), the rows a `/proc/softirqs` loop gives, in `Parsed.extra`.

Percentages back to ticks. The store keeps USER_HZ tick deltas per CPU in /proc/stat's field
order (model.cores.FIELDS), so each CPU's interval is rebuilt as round(interval_s × 100)
ticks and shared among the fields in proportion to the printed percentages (largest
remainder, so the ticks add up exactly; guest ticks are put back inside user and guest_nice
inside nice, as /proc/stat counts them). The percentages are renormalised first: sysstat
prints each one rounded to 0.01 and the kernel's per-second deltas jitter by a tick (99 or
101 ticks), so the printed values sum to 99.98–100.02. Resolution is one tick: at a 1 s
interval a percentage comes back within ±0.5 percentage points of what mpstat printed, and a
core mpstat showed at 100% system time comes back at 100%.

Times. sadf states UTC. mpstat prints the node's local time of day with the date only in its
header (and in JSON's "date"): times are read in the local zone of the machine running
corescope (set TZ to the node's zone), and a time of day that jumps back by more than 12 h
is the next day (midnight rollover)."""

from __future__ import annotations

import itertools
import json
import math
import re
import statistics
from collections.abc import Iterator, Sequence
from datetime import date as _date
from datetime import datetime as _datetime
from datetime import timedelta as _timedelta
from typing import Any

import numpy as np

from corescope.model.events import SoftirqSample
from corescope.model.matrix import CoreMatrix
from corescope.sources.artifacts.base import Parsed
from corescope.sources.artifacts.dates import (
    EPOCH_MAX,
    ZONES,
    parse_clock,
    parse_day,
    zoned_epoch,
)

KINDS = ("mpstat_json", "sadf_json", "mpstat_text", "sadf_csv")
USER_HZ = 100

# the printed percentages, in this order (model.cores.MODES)
MODES = ("usr", "nice", "sys", "iowait", "irq", "soft", "steal", "guest", "gnice", "idle")
_NAMES = {
    "usr": ("usr", "user", "%usr", "%user"), "nice": ("nice", "%nice"),
    "sys": ("sys", "system", "%sys", "%system"), "iowait": ("iowait", "%iowait"),
    "irq": ("irq", "%irq"), "soft": ("soft", "%soft"), "steal": ("steal", "%steal"),
    "guest": ("guest", "%guest"), "gnice": ("gnice", "%gnice"), "idle": ("idle", "%idle"),
}
_ALIAS = {alias: mode for mode, aliases in _NAMES.items() for alias in aliases}
_M = {m: i for i, m in enumerate(MODES)}


def sniff(head: str) -> str | None:
    s = head.lstrip()
    if s.startswith("{") and '"sysstat"' in head[:200]:
        if re.search(r'"timestamp":\s*\{', head) or '"file-date"' in head:
            return "sadf_json"
        return "mpstat_json"
    if s.startswith("# hostname;interval;timestamp;") and _CSV_CPU_HEADER.search(head):
        return "sadf_csv"
    first = s.split("\n", 1)[0]
    if re.match(r"^Linux \S+ \(\S*\)\s", first) and re.search(
            r"^\S+(?: [AP]M)?(?: [A-Z]{2,5})?\s+CPU(?:(?:\s+(?:CORE|SOCK|NODE))*\s+%|\s+HI/s\s)",
            head, re.MULTILINE):  # `mpstat -T` puts the topology columns after CPU; -I SCPU
        return "mpstat_text"
    return None


# ---------------------------------------------------------------------------------------------
# percentages → ticks

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
            a = np.array([[_num(str(v)) for v in r] for r in rows], dtype=np.float64)
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


_NO_SAMPLE = "not a per-core sample, skipped"


def averages(ids: Sequence[int], rows: Sequence[Sequence[float]] | np.ndarray,
             top: int = 4) -> str:
    """A report that is no sample, summed up for the reader: the busiest CPUs' busy share
    (100 − %idle − %iowait) and their %sys."""
    busy = []
    for cpu, r in zip(ids, rows, strict=False):
        v = [float(x) for x in r]
        if len(v) == len(MODES) and all(math.isfinite(x) for x in v):
            busy.append((100.0 - v[_M["idle"]] - v[_M["iowait"]], v[_M["sys"]], int(cpu)))
    if not busy:
        return "no readable CPU rows"
    busy.sort(key=lambda b: (-b[0], b[2]))
    shown = ", ".join(f"cpu{c} {b:.1f}% busy ({sy:.1f}% sys)" for b, sy, c in busy[:top])
    more = f", {len(busy) - top} more CPUs" if len(busy) > top else ""
    return shown + more


_MAX_CPUS = 65536  # CPU ids at or past this are garbage, not a CPU


def _cpu_id(v: Any) -> int | None:
    if isinstance(v, int) and not isinstance(v, bool) and 0 <= v < _MAX_CPUS:
        return v
    if isinstance(v, str) and v.isdigit() and len(v) < 6 and int(v) < _MAX_CPUS:
        return int(v)
    return None  # "all", a NUMA node, garbage


class _Day:
    """Turns times of day into epochs from a start date, rolling over at midnight. Without a
    zone of its own the file is read in the local zone, DST rules included: a day after the
    rollover is read with its own date's offset (not the start date's plus 24 h), and at the
    autumn change the repeated hour, which the file prints again after the step back, is read
    as standard time (its second pass), not as the summer hour already seen."""

    def __init__(self, ymd: tuple[int, int, int], zone: str | None = None) -> None:
        self.ymd = ymd
        self.zone = zone
        self.days = 0
        self.fold = 0  # 1 after the autumn step back: ambiguous local times are the second
        self.prev: int | None = None
        self.prev_t: float | None = None

    def _at(self, hms: tuple[int, int, int], fold: int) -> float | None:
        try:
            day = _date(*self.ymd) + _timedelta(days=self.days)
        except (ValueError, OverflowError):
            return None
        if self.zone is not None:
            return zoned_epoch(day.year, day.month, day.day, *hms, self.zone)
        try:
            return _datetime(day.year, day.month, day.day, *hms, fold=fold).timestamp()
        except (ValueError, OverflowError, OSError):
            return None

    def epoch(self, hms: tuple[int, int, int], p: Parsed) -> float | None:
        secs = hms[0] * 3600 + hms[1] * 60 + hms[2]
        if secs == self.prev and self.prev_t is not None:
            return self.prev_t  # the other CPUs' rows of the same report
        if self.prev is not None and secs < self.prev:
            if self.prev - secs > 12 * 3600:
                self.days += 1  # midnight
                self.fold = 0
            elif self._dst_fold(hms):
                self.fold = 1
                p.diag("the time of day went back an hour at the DST change: the repeated "
                       "hour is read as standard time")
            else:
                p.diag(f"time of day went back from {self.prev}s to {secs}s (a clock or DST "
                       "step?): read as the same day")
        self.prev = secs
        t = self._at(hms, self.fold)
        self.prev_t = t
        return t

    def _dst_fold(self, hms: tuple[int, int, int]) -> bool:
        """Whether a step back to `hms` is the local zone's autumn change: the time is
        ambiguous today, and its second (standard-time) reading follows the last one."""
        if self.zone is not None or self.fold or self.prev_t is None:
            return False
        first, second = self._at(hms, 0), self._at(hms, 1)
        return first is not None and second is not None and first != second and \
            second > self.prev_t


def _median_step(times: list[float]) -> float:
    steps = [b - a for a, b in itertools.pairwise(times) if b > a]
    return statistics.median(steps) if steps else 1.0


# ---------------------------------------------------------------------------------------------
# mpstat -o JSON and sadf -j: one entry at a time (a day of 96 CPUs is hundreds of MB as one
# decoded document; entry by entry it is never all in memory)

_DECIMAL_COMMA = re.compile(r'("[A-Za-z%-]+":\s*-?\d+),(\d+)')
_TS = re.compile(r'"timestamp":\s*(?:"(?P<s>[^"]*)"|(?P<o>\{[^{}]*\}))')
_CPU_OBJ = re.compile(r'\{\s*"cpu":[^{}]*\}')
_DEC = json.JSONDecoder()


def _loads(text: str) -> Any:
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return None


def _header(text: str) -> dict[str, Any]:
    """The host fields before "statistics" (date, file-date, ...)."""
    end = text.find('"statistics"')
    head = text[: end if end >= 0 else 65536]
    host: dict[str, Any] = {}
    for key in ("date", "file-date", "number-of-cpus", "nodename", "timezone"):
        m = re.search(rf'"{key}":\s*("(?:[^"\\]|\\.)*"|\d+)', head)
        if m:
            host[key] = _loads(m.group(1))
    return host


def _entries(text: str, p: Parsed):  # type: ignore[no-untyped-def]
    """Each statistics entry as a dict; an entry that does not decode is read piece by piece
    (its complete CPU objects), and a cut last entry is left out."""
    marks = list(_TS.finditer(text))
    broken = 0
    decoded_to = failed_at = -1
    for i, m in enumerate(marks):
        if m.start() < decoded_to:
            continue  # a second "timestamp" inside the entry just read (its last one won)
        brace = text.rfind("{", 0, m.start())
        # timestamps repeated within one object must not decode it again each time: that is
        # quadratic (a 150 KB line of them took 15 s)
        if brace != failed_at:
            try:
                obj, decoded_to = _DEC.raw_decode(text, brace)
                if isinstance(obj, dict):
                    yield obj
                    continue
            except (ValueError, RecursionError):
                failed_at = brace
        end = marks[i + 1].start() if i + 1 < len(marks) else len(text)
        if i + 1 == len(marks) and "]" not in text[m.end():end]:
            p.diag("the last entry is cut short (mpstat stopped mid-write?): skipped")
            continue  # its CPU list is cut: a partial list would read as CPUs gone offline
        broken += 1
        ts = m.group("s") if m.group("s") is not None else _loads(m.group("o"))
        cpus = [o for o in (_loads(x.group(0)) for x in _CPU_OBJ.finditer(text, m.end(), end))
                if isinstance(o, dict)]
        yield {"timestamp": ts, "cpu-load": cpus}
    if broken:
        p.diag(f"{broken} entries did not decode as JSON: read piece by piece")


def _rows(entry: dict[str, Any], p: Parsed) -> tuple[list[int], list[list[float]]]:
    rows = entry.get("cpu-load")
    if rows is None:
        rows = entry.get("cpu-load-all")
    ids: list[int] = []
    out: list[list[float]] = []
    if not isinstance(rows, list):
        return ids, out
    for r in rows:
        if not isinstance(r, dict):
            continue
        cpu = _cpu_id(r.get("cpu"))
        if cpu is None:
            if r.get("cpu") not in ("all", "-1"):
                p.diag(f"unreadable cpu id {str(r.get('cpu'))[:20]!r}")
            continue
        vals = [0.0] * 10
        for k, v in r.items():
            i = _M.get(_ALIAS.get(k, ""), -1)
            if i < 0:
                continue
            try:
                vals[i] = float(v) if not isinstance(v, bool) else float("nan")
            except (TypeError, ValueError, OverflowError):  # 1e400 as an int: no float
                vals[i] = float("nan")
        ids.append(cpu)
        out.append(vals)
    return ids, out


def _json_text(data: bytes, p: Parsed) -> str:
    text = data.decode("utf-8", errors="replace")
    if _DECIMAL_COMMA.search(text[:65536]):  # never valid JSON, so never a false repair
        # sysstat 11 printed JSON numbers in the locale's LC_NUMERIC ("usr": 50,25)
        fixed = _DECIMAL_COMMA.sub(r"\1.\2", text)
        if fixed != text:
            p.notes.append("numbers used a decimal comma (sysstat 11 under a non-C locale): "
                           "read as decimals")
        return fixed
    return text


# sysstat 12's own printf layout of a CPU row (mpstat.c write_json_cpu_stats), for the fast
# path; anything else (topology fields, sysstat 11 variants) goes through the JSON decoder
_FAST_ROW = re.compile(
    r'\{"cpu": "(\d+|all)", "usr": ([-\d.]+), "nice": ([-\d.]+), '
    r'"sys": ([-\d.]+), "iowait": ([-\d.]+), "irq": ([-\d.]+), "soft": ([-\d.]+), '
    r'"steal": ([-\d.]+), "guest": ([-\d.]+), "gnice": ([-\d.]+), "idle": ([-\d.]+)\}')
_FAST_TS = '"timestamp": "'


def _fast_mpstat(text: str, clock: _Day, acc: PctSamples, p: Parsed) -> bool:
    """sysstat 12's plain layout: one C-level regex per entry, the numbers converted a batch
    of entries at a time. False (nothing added, no notes left) when the file holds anything
    the pattern does not cover, or is cut short: the careful path then decides."""
    if not text.rstrip().endswith("}}"):
        return False
    first = text.find(_FAST_TS)
    if text.find('{"cpu"', 0, first if first >= 0 else len(text)) >= 0:
        return False  # CPU rows before the first timestamp: not this layout
    times: list[float] = []
    sizes: list[int] = []
    base = len(p.diagnostics)
    marks: list[int] = []  # how many notes (bad timestamps, clock steps) came before each
    numbers = _Numbers()
    pending: list[tuple[str, ...]] = []  # rows not yet converted (bounded: memory)
    for chunk in _pieces(text, first):
        end = chunk.find('"')
        rows = _FAST_ROW.findall(chunk)
        if end < 0 or len(rows) != chunk.count('{"cpu"'):
            del p.diagnostics[base:]  # the careful path reads it all again and says so
            return False
        hms = parse_clock(chunk[:end])
        t = clock.epoch(hms, p) if hms is not None else None
        if t is None:
            p.diag(f"unreadable timestamp {chunk[:min(end, 30)]!r}")
            continue
        cpu_rows = [r for r in rows if r[0] != "all"]
        if cpu_rows:
            times.append(t)
            sizes.append(len(cpu_rows))
            marks.append(len(p.diagnostics) - base)
            pending += cpu_rows
            if len(pending) >= _BATCH_ROWS:
                if not numbers.take(pending):
                    del p.diagnostics[base:]
                    return False
                pending = []
    if not times:
        return True
    if pending and not numbers.take(pending):
        del p.diagnostics[base:]  # a token the regex let through that is no number ("1.2.3")
        return False
    a = numbers.array().reshape(-1, 11)
    if len(a) and a[:, 0].max() >= _MAX_CPUS:
        del p.diagnostics[base:]  # a CPU id no kernel has: the careful path says which
        return False
    k_of = np.array(sizes, np.int64)
    if not acc.add_uniform(times, a, k_of):
        # entry by entry, its notes in file order among those the loop above made
        loop_notes = p.diagnostics[base:]
        del p.diagnostics[base:]
        at = done = 0
        for t, k, mark in zip(times, sizes, marks, strict=True):
            for d in loop_notes[done:mark]:
                p.diag(d.message, d.line)
            done = mark
            acc.add(t, float("nan"), a[at:at + k, 0].astype(np.int64).tolist(),
                    a[at:at + k, 1:], p)
            at += k
        for d in loop_notes[done:]:
            p.diag(d.message, d.line)
    return True


def _pieces(text: str, at: int) -> Iterator[str]:
    """text.split(_FAST_TS)[1:] one piece at a time (a split would copy the whole file)."""
    n = len(_FAST_TS)
    while at >= 0:
        nxt = text.find(_FAST_TS, at + n)
        yield text[at + n : nxt if nxt >= 0 else len(text)]
        at = nxt


_BATCH_ROWS = 20_000


class _Numbers:
    """Decimal strings → float64, each distinct string converted once: a day of mpstat
    repeats a few thousand values (0.00 … 100.00) millions of times."""

    def __init__(self) -> None:
        self.values: dict[str, float] = {}
        self.parts: list[np.ndarray] = []

    def take(self, rows: list[tuple[str, ...]]) -> bool:
        """Convert rows of number strings; False if one is no number."""
        tokens = list(itertools.chain.from_iterable(rows))
        try:
            for k in set(tokens).difference(self.values):
                self.values[k] = float(k)
        except ValueError:
            return False
        self.parts.append(np.fromiter(map(self.values.__getitem__, tokens), np.float64,
                                      len(tokens)))
        return True

    def array(self) -> np.ndarray:
        return np.concatenate(self.parts) if self.parts else np.zeros(0)


def _parse_mpstat_json(text: str, acc: PctSamples, p: Parsed) -> None:
    host = _header(text)
    day = parse_day(str(host.get("date", "")))
    if day is None:
        p.diag(f"no readable \"date\" in the header ({str(host.get('date'))[:20]!r}): "
               "samples cannot be placed in time")
        return
    soft: list[tuple[float, Any]] = []
    # the fast path knows only CPU load: softirq rates (`-I SCPU`, `-A`: in every entry, so
    # in the first MiB) go the careful way
    if (text.find('"soft-interrupts"', 0, 1 << 20) >= 0
            or not _fast_mpstat(text, _Day(day), acc, p)):
        clock = _Day(day)
        for entry in _entries(text, p):
            ts = entry.get("timestamp")
            hms = parse_clock(ts) if isinstance(ts, str) else None
            if hms is None:
                p.diag(f"unreadable timestamp {str(ts)[:30]!r}")
                continue
            t = clock.epoch(hms, p)
            ids, rows = _rows(entry, p)
            if t is not None and ids:
                acc.add(t, float("nan"), ids, rows, p)
            if t is not None and "soft-interrupts" in entry:
                soft.append((t, entry["soft-interrupts"]))
    rates = SoftirqRates()
    json_softirqs(soft, rates)
    rates.done(p)
    if len(acc.t) == 1:
        # mpstat's JSON states no interval: a lone entry is `mpstat -o JSON` without one
        # (the averages since boot, stamped now) or one report of any length (`5 1`); its
        # interval cannot be known, and reading it as a second would invent a hot second
        p.diag("one entry, and mpstat's JSON states no interval: the averages since boot "
               "(`mpstat -o JSON` without an interval) or one report of unknown length: "
               f"{averages(acc.ids[0].tolist(), acc.pct[0])} (`mpstat -P ALL -o JSON 1 N` gives "
               "per-second samples): " + _NO_SAMPLE)
        acc.__init__()  # type: ignore[misc]
        return
    acc.fill_intervals()


def sadf_local_zone(header_tz: str) -> str | None:
    """The zone `sadf -t` times (the recording node's local time) are read in. Its header names
    that zone only as the standard-time abbreviation (no DST): only a zone without DST is
    taken from it, anything else is read in this machine's zone (set TZ to the node's)."""
    tz = header_tz.strip().upper()
    return tz if tz in ("UTC", "GMT", "UT") else None


def read_sadf_entry(entry: dict[str, Any], local_zone: str | None, acc: PctSamples,
                    p: Parsed) -> None:
    """One sadf statistics entry, `{"timestamp": {date, time, utc, interval}, "cpu-load":
    [{"cpu": id, "usr": ..., ...}]}`, as `sadf -j` prints it and `sadf -x` (sadf_forms)
    is read into: its per-CPU percentages into `acc`."""
    ts = entry.get("timestamp")
    if not isinstance(ts, dict):
        p.diag("entry without a timestamp object")
        return
    day = parse_day(str(ts.get("date", "")))
    hms = parse_clock(str(ts.get("time", "")))
    if day is None or hms is None:
        p.diag(f"unreadable timestamp {json.dumps(ts)[:60]}")
        return
    utc = ts.get("utc", 1) in (1, "1", True)
    t = zoned_epoch(*day, *hms, "UTC" if utc else local_zone)
    try:
        itv = float(ts.get("interval", 0))
    except (TypeError, ValueError, OverflowError):  # an int of 400 digits: no float
        itv = 0.0
    ids, rows = _rows(entry, p)
    if t is None or not ids:
        return
    if not 0 < itv <= 86400:
        p.diag(f"unreadable interval {str(ts.get('interval'))[:20]!r}: entry skipped")
        return
    acc.add(t, itv, ids, rows, p)


def _parse_sadf(text: str, acc: PctSamples, p: Parsed) -> None:
    # `sadf -t` prints the recording node's local time ("utc": 0)
    local_zone = sadf_local_zone(str(_header(text).get("timezone", "")))
    for entry in _entries(text, p):
        read_sadf_entry(entry, local_zone, acc, p)


# ---------------------------------------------------------------------------------------------
# plain mpstat text

_TIME_TOKENS = re.compile(r"^(\d{1,2}:\d\d:\d\d)(?:\s+([AaPp][Mm]))?(?:\s+([A-Z]{2,5}))?$")


def _split_time(tokens: list[str], ncols: int) -> tuple[tuple[int, int, int], str | None] | None:
    m = _TIME_TOKENS.match(" ".join(tokens[:ncols]))
    if not m:
        return None
    hms = parse_clock(m.group(1) + (" " + m.group(2) if m.group(2) else ""))
    if hms is None:
        return None
    return hms, m.group(3)


# the column label that starts a table of mpstat/sar text (`12:00:01 AM  CPU  %usr ...`)
_LABELS = ("CPU", "NODE")


def _section_label(toks: list[str]) -> str | None:
    """The label of a table header line (within its first four tokens: time, AM/PM, zone),
    else None (a row)."""
    for tok in toks[:4]:
        if tok in _LABELS:
            return tok
    return None


def _num(tok: str) -> float:
    try:
        return float(tok.replace(",", ".").removesuffix("%"))  # sar -h: `12.5%`
    except ValueError:
        return float("nan")


# ---------------------------------------------------------------------------------------------
# softirqs per second (`mpstat -I SCPU`, the SCPU table of `-I ALL` and `-A`, JSON's
# "soft-interrupts"): NET_RX and NET_TX per CPU, a rate × the interval being the count the
# /proc/softirqs loop gives (what `record` keeps and the investigation reads)

_SINCE_BOOT_SOFT = ("one softirq report without an interval to read its rates over (the rates "
                    "since boot: `mpstat -I SCPU` without an interval, or one JSON entry; "
                    "`mpstat -I SCPU -P ALL 1 N` gives per-second rates): ")


class SoftirqRates:
    """NET_RX/NET_TX rates as they are read, by time; `done` turns them into SoftirqSample
    rows in `p.extra` (written by ingest.write_softirqs, as a softirqs loop is)."""

    def __init__(self) -> None:
        # time → (interval, NET_RX per CPU, NET_TX per CPU), counts already
        self.by_t: dict[float, tuple[float, dict[int, int], dict[int, int]]] = {}
        self.since_boot = False
        self.bad = 0

    def add(self, t: float, itv: float, cpu: int, rx: float, tx: float) -> None:
        if not 0 < itv <= 86400:
            self.since_boot |= itv == 0
            return
        if not all(math.isfinite(v) and 0 <= v < 1e12 for v in (rx, tx)):
            self.bad += 1
            return
        entry = self.by_t.setdefault(t, (itv, {}, {}))
        # the first kept (files glued together repeat a time)
        entry[1].setdefault(cpu, round(rx * entry[0]))
        entry[2].setdefault(cpu, round(tx * entry[0]))

    def done(self, p: Parsed) -> None:
        if self.bad:
            p.diag(f"{self.bad} softirq rows with unreadable NET_RX/NET_TX rates skipped")
        if self.since_boot and not self.by_t:
            p.diag(_SINCE_BOOT_SOFT + _NO_SAMPLE)
        if not self.by_t:
            return
        rows = [SoftirqSample(t, itv, rx, tx) for t, (itv, rx, tx) in sorted(self.by_t.items())]
        p.extra = rows
        p.extra_records = len(rows)
        p.extra_span = (min(r.t - r.interval_s for r in rows), rows[-1].t)
        p.extra_cpus = tuple(sorted({c for r in rows for c in r.net_rx}))


class _SoftTable:
    """One SCPU table of mpstat text: its header's time of day and the NET_RX/NET_TX columns.
    The header prints the interval's start, its rows the end: their difference is the
    interval (taken on the time of day, so the header does not step the date clock back)."""

    def __init__(self, start: tuple[int, int, int], ntime: int, names: list[str]) -> None:
        self.start = start[0] * 3600 + start[1] * 60 + start[2]
        self.ntime = ntime
        self.width = ntime + 1 + len(names)
        self.rx = names.index("NET_RX/s")
        self.tx = names.index("NET_TX/s") if "NET_TX/s" in names else -1

    def row(self, toks: list[str], clock: _Day, out: SoftirqRates, p: Parsed) -> None:
        if len(toks) != self.width:
            return
        got = _split_time(toks, self.ntime)
        cpu = _cpu_id(toks[self.ntime])
        if got is None or cpu is None:
            return  # Average lines; an "all" row
        t = clock.epoch(got[0], p)
        if t is None:
            return
        h, m, sec = got[0]
        itv = float((h * 3600 + m * 60 + sec - self.start) % 86400)
        vals = toks[self.ntime + 1:]
        out.add(t, itv, cpu, _num(vals[self.rx]), _num(vals[self.tx]) if self.tx >= 0 else 0.0)


def json_softirqs(entries: list[tuple[float, Any]], out: SoftirqRates) -> None:
    """JSON's "soft-interrupts" lists, `[{"cpu": "0", "intr": [{"name": "NET_RX", "value":
    57588.00}, ...]}]`, one per entry time. mpstat's JSON states no interval: each is the step
    from the entry before (the first takes the usual step), as for its CPU load; one entry
    has none."""
    if not entries:
        return
    times = [t for t, _ in entries]
    ivs = json_intervals(times) if len(times) > 1 else [0.0]
    for (t, soft), itv in zip(entries, ivs, strict=True):
        if not isinstance(soft, list):
            continue
        for r in soft:
            cpu = _cpu_id(r.get("cpu")) if isinstance(r, dict) else None
            intr = r.get("intr") if isinstance(r, dict) else None
            if cpu is None or not isinstance(intr, list):
                continue
            rate = {i["name"]: i.get("value") for i in intr
                    if isinstance(i, dict) and isinstance(i.get("name"), str)}
            if "NET_RX" not in rate:
                continue
            rx, tx = (_num(str(v)) if isinstance(v, int | float) and not isinstance(v, bool)
                      else float("nan") for v in (rate.get("NET_RX"), rate.get("NET_TX", 0.0)))
            out.add(t, itv, cpu, rx, tx)


def _parse_mpstat_text(data: bytes, acc: PctSamples, p: Parsed) -> None:
    lines = data.decode("utf-8", errors="replace").splitlines()
    day = None
    for tok in (lines[0].split() if lines else []):
        day = parse_day(tok)
        if day is not None:
            break
    if day is None:
        p.diag("no date in the header line (`Linux ... (host)  DATE  arch  (N CPU)`): "
               "samples cannot be placed in time", 1)
        return
    clock: _Day | None = None
    cols: list[int] | None = None  # MODES index of each value column (-1: not ours)
    ntime = 0
    header_t: float | None = None
    cur_t: float | None = None
    ids: list[int] = []
    rows: list[list[float]] = []
    last_itv = 1.0
    soft: _SoftTable | None = None  # in an SCPU table
    softirqs = SoftirqRates()

    def flush() -> None:
        nonlocal ids, rows, last_itv
        if cur_t is not None and ids:
            if header_t is not None and cur_t == header_t and not acc.t:
                # `mpstat -P ALL` without an interval: one report of the averages since
                # boot, stamped now; it is no interval's utilisation
                p.diag("a report of the averages since boot (`mpstat` without an interval):"
                       f" {averages(ids, rows)}; it covers no interval: " + _NO_SAMPLE)
                ids, rows = [], []
                return
            itv = cur_t - header_t if header_t is not None and cur_t > header_t else last_itv
            last_itv = itv
            acc.add(cur_t, itv, ids, rows, p)
        ids, rows = [], []

    for lineno, line in enumerate(lines[1:], 2):
        toks = line.split()
        if not toks:
            continue
        label = _section_label(toks)
        if label is not None:
            # a section header: `mpstat -A`, `-I`, `-N` and sar print other tables (NODE
            # rows, interrupts per second) in the same layout; only the CPU table with
            # %idle is ours, and the other tables' rows must not pass for CPU rows
            flush()
            cur_t = None
            i = toks.index(label)
            got = _split_time(toks, i)
            names = [_ALIAS.get(c) for c in toks[i + 1:]]
            soft = None
            if label == "CPU" and got is not None and "NET_RX/s" in toks[i + 1:]:
                # `mpstat -I SCPU` (and -I ALL, -A): softirqs per second on each CPU
                if clock is None:
                    clock = _Day(day, got[1] if got[1] in ZONES else None)
                soft = _SoftTable(got[0], i, toks[i + 1:])
            if label != "CPU" or got is None or "idle" not in names:
                cols = None
                continue
            hms, zone = got
            if clock is None:
                clock = _Day(day, zone if zone in ZONES else None)
            header_t = clock.epoch(hms, p)
            cols = [_M[n] if n else -1 for n in names]
            ntime = i
            continue
        if soft is not None and clock is not None:
            soft.row(toks, clock, softirqs, p)
            continue
        if cols is None or clock is None or len(toks) != ntime + 1 + len(cols):
            continue
        got = _split_time(toks, ntime)
        if got is None:
            continue  # Average lines, localised ("Durchschn.:")
        t = clock.epoch(got[0], p)
        if t is None:
            continue
        if cur_t is not None and t != cur_t:
            flush()
            header_t = cur_t
        cur_t = t
        cpu = _cpu_id(toks[ntime])
        if cpu is None:
            continue  # "all"
        vals = [0.0] * 10
        for c, tok in zip(cols, toks[ntime + 1:], strict=True):
            if c >= 0:
                vals[c] = _num(tok)
        if any(v != v for v in vals):
            p.diag(f"unreadable values for cpu {cpu}", lineno)
            continue
        ids.append(cpu)
        rows.append(vals)
    flush()
    softirqs.done(p)


# ---------------------------------------------------------------------------------------------
# sadf -d: `# hostname;interval;timestamp;CPU;%usr;...;%idle` then `host;1;2026-11-30 15:34:01
# UTC;-1;50.25;...` (CPU -1 is all). -h puts one timestamp's CPUs on one line (the header
# ends `[...]`); -t prints local time without a zone; -U epoch seconds. sadf -d -- -A holds
# every activity, each after its own header: only the CPU table is read.

_GROUP_ID = re.compile(r"^-?\d{1,6}$")  # a CPU group's first column: -1 (all) or the CPU
_CSV_CPU_HEADER = re.compile(r"^# hostname;interval;timestamp;CPU;.*%idle", re.MULTILINE)
_CSV_TS = re.compile(r"^(\d{4})-(\d\d)-(\d\d) (\d\d):(\d\d):(\d\d)(?: (\S+))?$")


# sadf -T / -t name the zone by its standard-time abbreviation (tzname[0]) in summer too:
# sysstat's own tests print New York's 09:20 EDT as `09:20:19 EST` and Paris's 15:20 CEST as
# `15:20:19 CET`. Such a name is read with its zone's rules, not as a fixed offset (an hour off
# half the year). Names several zones share with other offsets (MST: Phoenix keeps it all year)
# stay fixed offsets.
_SADF_STD_ZONES = {"EST": "America/New_York", "CST": "America/Chicago",
                   "PST": "America/Los_Angeles", "CET": "Europe/Paris", "EET": "Europe/Helsinki",
                   "WET": "Europe/Lisbon", "AEST": "Australia/Sydney"}


def _std_zone_epoch(y: int, mo: int, d: int, h: int, mi: int, sec: int, zone: str
                    ) -> float | None:
    import datetime
    import zoneinfo

    try:
        tz = zoneinfo.ZoneInfo(_SADF_STD_ZONES[zone])
        return datetime.datetime(y, mo, d, h, mi, sec, tzinfo=tz).timestamp()
    except (zoneinfo.ZoneInfoNotFoundError, ValueError, OSError):
        return None


def sadf_time(tok: str) -> float | None:
    if tok.isdigit() and 9 <= len(tok) <= 11:
        return float(tok) if float(tok) <= EPOCH_MAX else None  # sadf -U
    m = _CSV_TS.match(tok)
    if m is None:
        return None
    y, mo, d, h, mi, sec = (int(x) for x in m.groups()[:6])
    if not 1970 <= y < 2100:  # year 0026 (a digit lost) would place samples before 1970
        return None
    if m.group(7) in _SADF_STD_ZONES:
        t = _std_zone_epoch(y, mo, d, h, mi, sec, m.group(7))
        if t is not None:
            return t
    return zoned_epoch(y, mo, d, h, mi, sec, m.group(7))


def _parse_sadf_csv(data: bytes, acc: PctSamples, p: Parsed) -> None:
    cols: list[int] | None = None  # MODES index of each value column (-1: not ours)
    bad = 0
    cur: tuple[float, float] | None = None
    ids: list[int] = []
    rows: list[list[float]] = []

    def flush() -> None:
        nonlocal ids, rows
        if cur is not None and ids:
            acc.add(cur[0], cur[1], ids, rows, p)
        ids, rows = [], []

    for line in data.decode("utf-8", errors="replace").splitlines():
        if line.startswith("#"):
            names = line.lstrip("# ").split(";")
            if names[3:4] == ["CPU"] and any(n.startswith("%idle") for n in names):
                # the CPU group's columns end at the one marked `[...]` (repeated per CPU
                # with -P); another activity's columns may follow (`-- -Iu ALL`: INTR;...)
                group = names[4:]
                end = next((k for k, n in enumerate(group) if n.endswith("[...]")), None)
                if end is None:
                    end = next((k for k, n in enumerate(group) if not n.startswith("%")),
                               len(group)) - 1
                names = [n.removesuffix("[...]") for n in group[:end + 1]]
                cols = [_M.get(_ALIAS.get(n, ""), -1) for n in names]
            else:
                cols = None  # another activity's table
            continue
        f = line.split(";")
        if len(f) >= 4 and f[3].startswith(("LINUX-RESTART", "COM ")):
            continue  # sadf's restart and comment records (-dh prints them as rows)
        if cols is None or len(f) < 4 + len(cols) or not _GROUP_ID.match(f[3]):
            if cols is not None and line.strip():
                bad += 1
            continue
        t = sadf_time(f[2])
        try:
            itv = float(f[1])
        except ValueError:
            itv = float("nan")
        if t is None or not 0 < itv <= 86400:
            bad += 1
            continue
        if cur != (t, itv):
            flush()
            cur = (t, itv)
        width = 1 + len(cols)
        for g in range(3, len(f) - width + 1, width):
            if not _GROUP_ID.match(f[g]):
                break  # the next activity's columns (`sum;...` of -I)
            cpu = _cpu_id(f[g])
            if cpu is None:
                continue  # -1: all CPUs
            vals = [0.0] * 10
            for c, tok in zip(cols, f[g + 1:g + width], strict=True):
                if c >= 0:
                    vals[c] = _num(tok)
            ids.append(cpu)
            rows.append(vals)
    flush()
    if bad:
        p.diag(f"{bad} unreadable sadf -d lines skipped")


def parse(data: bytes, kind: str, source: str) -> Parsed:
    p = Parsed(kind, source)
    acc = PctSamples()
    if kind == "mpstat_text":
        _parse_mpstat_text(data, acc, p)
    elif kind == "sadf_json":
        _parse_sadf(_json_text(data, p), acc, p)
    elif kind == "sadf_csv":
        _parse_sadf_csv(data, acc, p)
    else:
        _parse_mpstat_json(_json_text(data, p), acc, p)
    return finish(acc, p, data)


def finish(acc: PctSamples, p: Parsed, data: bytes) -> Parsed:
    """The samples read into `acc` become `p.samples`; a file that gave none says why."""
    m = acc.matrix()
    if m is not None:
        p.samples = m
    elif p.extra_records:
        pass  # softirq rates only (`mpstat -I SCPU`): no CPU table was asked for
    elif p.diagnostics and p.diagnostics[0].message.endswith(_NO_SAMPLE):
        pass  # a report that is no sample: said so, and its per-CPU rows were there
    elif re.search(rb'"cpu": "all"|^\S+(?: [AP]M)?\s+all\s|;-1;|\tall\t%|<cpu number="all"',
                   data[:1 << 20], re.MULTILINE):
        p.diag("only the all-CPU average is in it: per-core data needs `mpstat -P ALL` "
               "(or `sadf -j FILE -- -P ALL -u ALL`)")
    elif not p.diagnostics:
        p.diag("no per-CPU utilisation entries found")
    return p
