"""Plain `mpstat -P ALL N` text (12 h and 24 h clocks, any locale's date and decimal comma,
ISO with S_TIME_FORMAT=ISO; `mpstat -A` and sar's text too, of which only the CPU tables are
read), and its SCPU tables (`mpstat -I SCPU`, inside `-I ALL` and `-A`): NET_RX and NET_TX per
CPU."""

from __future__ import annotations

import re

from corescope.sources.artifacts.base import Parsed
from corescope.sources.artifacts.dates import ZONES, parse_clock, parse_day
from corescope.sources.artifacts.mpstat_clock import DayClock
from corescope.sources.artifacts.sysstat_samples import (
    ALIAS,
    MODE_AT,
    NO_SAMPLE,
    PctSamples,
    averages,
    cpu_id,
    num,
)
from corescope.sources.artifacts.sysstat_softirqs import SoftirqRates

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

    def row(self, toks: list[str], clock: DayClock, out: SoftirqRates, p: Parsed) -> None:
        if len(toks) != self.width:
            return
        got = _split_time(toks, self.ntime)
        cpu = cpu_id(toks[self.ntime])
        if got is None or cpu is None:
            return  # Average lines; an "all" row
        t = clock.epoch(got[0], p)
        if t is None:
            return
        h, m, sec = got[0]
        itv = float((h * 3600 + m * 60 + sec - self.start) % 86400)
        vals = toks[self.ntime + 1:]
        out.add(t, itv, cpu, num(vals[self.rx]), num(vals[self.tx]) if self.tx >= 0 else 0.0)


def parse_mpstat_text(data: bytes, acc: PctSamples, p: Parsed) -> None:
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
    clock: DayClock | None = None
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
                       f" {averages(ids, rows)}; it covers no interval: " + NO_SAMPLE)
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
            names = [ALIAS.get(c) for c in toks[i + 1:]]
            soft = None
            if label == "CPU" and got is not None and "NET_RX/s" in toks[i + 1:]:
                # `mpstat -I SCPU` (and -I ALL, -A): softirqs per second on each CPU
                if clock is None:
                    clock = DayClock(day, got[1] if got[1] in ZONES else None)
                soft = _SoftTable(got[0], i, toks[i + 1:])
            if label != "CPU" or got is None or "idle" not in names:
                cols = None
                continue
            hms, zone = got
            if clock is None:
                clock = DayClock(day, zone if zone in ZONES else None)
            header_t = clock.epoch(hms, p)
            cols = [MODE_AT[n] if n else -1 for n in names]
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
        cpu = cpu_id(toks[ntime])
        if cpu is None:
            continue  # "all"
        vals = [0.0] * 10
        for c, tok in zip(cols, toks[ntime + 1:], strict=True):
            if c >= 0:
                vals[c] = num(tok)
        if any(v != v for v in vals):
            p.diag(f"unreadable values for cpu {cpu}", lineno)
            continue
        ids.append(cpu)
        rows.append(vals)
    flush()
    softirqs.done(p)
