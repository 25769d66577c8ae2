"""`mpstat -P ALL -o JSON` (sysstat 11 and 12): CPU load per entry and, with `-I SCPU` or
`-A`, NET_RX/NET_TX rates per CPU. sysstat 12's own printf layout takes a fast path (one
regex per entry, numbers converted in batches); anything else is decoded entry by entry."""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from corescope.sources.artifacts.base import Parsed
from corescope.sources.artifacts.dates import parse_clock, parse_day
from corescope.sources.artifacts.mpstat_clock import DayClock
from corescope.sources.artifacts.sysstat_json import entry_rows, json_entries, json_header
from corescope.sources.artifacts.sysstat_samples import (
    MAX_CPUS,
    NO_SAMPLE,
    PctSamples,
    averages,
    cpu_id,
    json_intervals,
    num,
)
from corescope.sources.artifacts.sysstat_softirqs import SoftirqRates

# sysstat 12's own printf layout of a CPU row (mpstat.c write_json_cpu_stats), for the fast
# path; anything else (topology fields, sysstat 11 variants) goes through the JSON decoder
_FAST_ROW = re.compile(
    r'\{"cpu": "(\d+|all)", "usr": ([-\d.]+), "nice": ([-\d.]+), '
    r'"sys": ([-\d.]+), "iowait": ([-\d.]+), "irq": ([-\d.]+), "soft": ([-\d.]+), '
    r'"steal": ([-\d.]+), "guest": ([-\d.]+), "gnice": ([-\d.]+), "idle": ([-\d.]+)\}')
_FAST_TS = '"timestamp": "'


def fast_mpstat(text: str, clock: DayClock, acc: PctSamples, p: Parsed) -> bool:
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
    if len(a) and a[:, 0].max() >= MAX_CPUS:
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
            cpu = cpu_id(r.get("cpu")) if isinstance(r, dict) else None
            intr = r.get("intr") if isinstance(r, dict) else None
            if cpu is None or not isinstance(intr, list):
                continue
            rate = {i["name"]: i.get("value") for i in intr
                    if isinstance(i, dict) and isinstance(i.get("name"), str)}
            if "NET_RX" not in rate:
                continue
            rx, tx = (num(str(v)) if isinstance(v, int | float) and not isinstance(v, bool)
                      else float("nan") for v in (rate.get("NET_RX"), rate.get("NET_TX", 0.0)))
            out.add(t, itv, cpu, rx, tx)


def parse_mpstat_json(text: str, acc: PctSamples, p: Parsed,
                      fast: Callable[[str, DayClock, PctSamples, Parsed], bool] | None = None
                      ) -> None:
    """The entries of one document into `acc`, by `fast` (fast_mpstat unless told) when it
    can read them all, else entry by entry."""
    fast = fast_mpstat if fast is None else fast
    host = json_header(text)
    day = parse_day(str(host.get("date", "")))
    if day is None:
        p.diag(f"no readable \"date\" in the header ({str(host.get('date'))[:20]!r}): "
               "samples cannot be placed in time")
        return
    soft: list[tuple[float, Any]] = []
    # the fast path knows only CPU load: softirq rates (`-I SCPU`, `-A`: in every entry, so
    # in the first MiB) go the careful way
    if (text.find('"soft-interrupts"', 0, 1 << 20) >= 0
            or not fast(text, DayClock(day), acc, p)):
        clock = DayClock(day)
        for entry in json_entries(text, p):
            ts = entry.get("timestamp")
            hms = parse_clock(ts) if isinstance(ts, str) else None
            if hms is None:
                p.diag(f"unreadable timestamp {str(ts)[:30]!r}")
                continue
            t = clock.epoch(hms, p)
            ids, rows = entry_rows(entry, p)
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
               "per-second samples): " + NO_SAMPLE)
        acc.__init__()  # type: ignore[misc]
        return
    acc.fill_intervals()
