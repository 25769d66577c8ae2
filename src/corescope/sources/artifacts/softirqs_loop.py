"""`/proc/softirqs` saved in a loop (`while :; do date; cat /proc/softirqs; sleep 5; done`) →
NET_RX and NET_TX per CPU over each interval, the rows `record`'s netdev sensor keeps. The
blocks are parsed by the sensor's own parser (sources.interrupts); an interval is the time
between two consecutive date lines, so a single or undated read gives no rate (said, not
guessed). Written by `corescope.ingest.write_softirqs` through store/events.py."""

from __future__ import annotations

import re

from corescope.model.events import SoftirqSample
from corescope.sources.artifacts.base import Parsed
from corescope.sources.artifacts.loops import CPU_HEADER, split_dated
from corescope.sources.interrupts import parse_softirqs, softirq_delta

KINDS = ("softirqs_loop",)
# a gap longer than this between two reads (a stopped loop, a reboot) starts over
MAX_INTERVAL_S = 600.0

_NET_RX = re.compile(r"^\s*NET_RX:(\s+\d+)+\s*$", re.MULTILINE)


def sniff(head: str) -> str | None:
    if CPU_HEADER.search(head) and _NET_RX.search(head):
        return "softirqs_loop"
    return None


def parse(data: bytes, kind: str, source: str) -> Parsed:
    p = Parsed(kind, source)
    text = data.decode("utf-8", errors="replace")
    rows: list[SoftirqSample] = []
    prev: tuple[float, dict[str, dict[int, int]]] | None = None
    undated = 0
    for t, lineno, lines in split_dated(text):
        if not any(ln.strip() for ln in lines):
            continue
        if t is None:
            undated += 1
            continue
        soft, diags = parse_softirqs("\n".join(lines), source)
        for diag in diags[:3]:
            p.diag(diag.message, lineno + (diag.line or 0))
        if "NET_RX" not in soft:
            p.diag("read without a NET_RX row", lineno)
            continue
        if prev is not None and 0 < t - prev[0] <= MAX_INTERVAL_S:
            d = softirq_delta(prev[1], soft)
            rows.append(SoftirqSample(t, t - prev[0], d.get("NET_RX", {}), d.get("NET_TX", {})))
        prev = (t, soft)
    if undated:
        p.diag(f"{undated} reads without a date line: a rate needs two dated reads")
    p.extra = rows
    p.extra_records = len(rows)
    p.extra_span = (rows[0].t - rows[0].interval_s, rows[-1].t) if rows else None
    p.extra_cpus = tuple(sorted({c for r in rows for c in r.net_rx}))
    if not rows:
        p.diag("no two dated /proc/softirqs reads: no NET_RX rate")
    return p
