"""sar's per-CPU load in sadf's other output forms, read into the same samples `sadf -d`
(`sysstat.sadf_csv`) and `sadf -j` give: the same percentages-to-ticks conversion and the
same time rules (sadf states UTC; `-t` is the node's local time; `-U` epoch seconds).

- `sadf_ppc`: `sadf -p` ("ppc" form), one value a line, tab-separated
  `host  interval  timestamp  device  field  value`
  (`vm  1  2026-12-01 10:27:54 UTC  cpu0  %usr  1.01`). The CPU rows are those whose device
  is `cpuN` and whose field is a CPU-load percentage (`%usr` ... `%idle`, or `%user` and
  `%system` with `-u`); `sadf -p -- -A` interleaves other activities (interrupts as
  `IRQ  cpuN  value`, softnet and frequency as `cpuN  total/s` or `MHz`), which are passed
  over.
"""

from __future__ import annotations

import re

from corescope.sources.artifacts.base import Parsed
from corescope.sources.artifacts.sysstat import (
    _ALIAS,
    _M,
    PctSamples,
    _cpu_id,
    _num,
    finish,
    sadf_time,
)

KINDS = ("sadf_ppc",)

# one `sadf -p` line: host, interval, timestamp (UTC, local with -t, epoch with -U), device,
# field, value
_PPC_LINE = re.compile(r"^[^\t\n]+\t\d+\t(?:\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?: \S+)?|\d{9,11})"
                       r"\t[^\t\n]+\t[^\t\n]+\t[^\t\n]*$")
# a per-CPU %idle row (`-P ALL`; `-- -A` prints the CPU activity first)
_PPC_CPU = re.compile(r"^[^\t\n]+\t\d+\t[^\t\n]+\tcpu\d+\t%idle\t", re.MULTILINE)


def sniff(head: str) -> str | None:
    first = head.lstrip().split("\n", 1)[0]
    if _PPC_LINE.match(first) and _PPC_CPU.search(head):
        return "sadf_ppc"
    return None


def _parse_ppc(data: bytes, acc: PctSamples, p: Parsed) -> None:
    bad = dup = cut = twice = 0
    done: set[tuple[float, float]] = set()
    cur: tuple[float, float] | None = None
    group: dict[int, dict[int, float]] = {}  # CPU → {MODES index: percentage}
    fields: frozenset[int] | None = None  # the percentages a CPU row has in this file

    def flush() -> None:
        nonlocal group, fields, cut
        if cur is not None and group:
            ids: list[int] = []
            rows: list[list[float]] = []
            for cpu, row in group.items():
                if fields is None and _M["idle"] in row:
                    fields = frozenset(row)
                if fields is None or not fields <= row.keys():
                    cut += 1  # the file ends (or breaks) inside this CPU's fields
                    continue
                vals = [0.0] * 10
                for i, v in row.items():
                    vals[i] = v
                ids.append(cpu)
                rows.append(vals)
            acc.add(cur[0], cur[1], ids, rows, p)
            done.add(cur)
        group = {}

    for line in data.decode("utf-8", errors="replace").splitlines():
        f = line.split("\t")
        if len(f) != 6:
            if line.strip():
                bad += 1
            continue
        mode = _M.get(_ALIAS.get(f[4], ""), -1)
        if mode < 0 or not f[3].startswith("cpu"):
            continue  # "all", or another activity's rows
        cpu = _cpu_id(f[3][3:])
        t = sadf_time(f[2])
        try:
            itv = float(f[1])
        except ValueError:
            itv = float("nan")
        if cpu is None or t is None or not 0 < itv <= 86400:
            bad += 1
            continue
        if cur != (t, itv):
            flush()
            cur = (t, itv)
            if cur in done:
                dup += 1
        if cur in done:
            continue  # a second run of rows for a time already read (files glued together)
        row = group.setdefault(cpu, {})
        if mode in row:
            twice += 1  # the first kept, as sadf_csv keeps a CPU's first row
            continue
        row[mode] = _num(f[5])
    flush()
    if twice:
        p.diag(f"{twice} values given twice for one CPU and time: the first kept")
    if cut:
        p.diag(f"{cut} CPU rows without all their fields (the file ends mid-record?) skipped")
    if dup:
        p.diag(f"{dup} runs of rows for a time already read skipped")
    if bad:
        p.diag(f"{bad} unreadable sadf -p lines skipped")


def parse(data: bytes, kind: str, source: str) -> Parsed:
    p = Parsed(kind, source)
    acc = PctSamples()
    _parse_ppc(data, acc, p)
    return finish(acc, p, data)
