"""Zombie-memcg census loop logs and single `/proc/cgroups` reads.

The loop incident teams run:
    while true; do date; cat /proc/cgroups; find /sys/fs/cgroup/memory -type d | wc -l;
    sleep 10; done
Each block gives one MemcgCensus: the kernel's memory `num_cgroups` (dying included), the live
directory count (the bare number `wc -l` printed, the root directory included, as the
recorder's own census counts), and dying = kernel − live. A single `/proc/cgroups` without a
date or a count gives the kernel count only, as an undated snapshot."""

from __future__ import annotations

import re

from corescope.model.cgroups import MemcgCensus
from corescope.sources.artifacts.base import Parsed
from corescope.sources.artifacts.dates import parse_date_line
from corescope.sources.artifacts.loops import split_dated
from corescope.sources.cgroups import parse_proc_cgroups

KINDS = ("census_loop", "proc_cgroups")

_ROW = re.compile(r"^(?:#subsys_name\s+hierarchy\s+num_cgroups\s+enabled|memory\s+\d+\s+\d+\s+"
                  r"[01])\s*$", re.MULTILINE)
_COUNT = re.compile(r"^\s*(\d{1,9})\s*$")
SOURCE = ("census loop log: /proc/cgroups memory num_cgroups - live memory cgroup "
          "directories (find -type d | wc -l)")


def sniff(head: str) -> str | None:
    if not _ROW.search(head):
        return None
    dated = any(parse_date_line(ln) is not None for ln in head.splitlines()[:400]
                if not _COUNT.match(ln))
    return "census_loop" if dated else "proc_cgroups"


def parse(data: bytes, kind: str, source: str) -> Parsed:
    p = Parsed(kind, source)
    text = data.decode("utf-8", errors="replace")
    blocks = split_dated(text, lambda ln: not _COUNT.match(ln) or len(ln.strip()) >= 9)
    undated = 0
    for t, lineno, lines in blocks:
        counts = [int(m.group(1)) for ln in lines if (m := _COUNT.match(ln))]
        rows_text = "\n".join(ln for ln in lines if not _COUNT.match(ln))
        rows, diags = parse_proc_cgroups(rows_text, source)
        for d in diags[:3]:
            p.diag(d.message, lineno)
        mem = rows.get("memory")
        if mem is None:
            if rows or counts:
                p.diag("block without a /proc/cgroups memory row", lineno)
            continue
        if len(counts) > 1:
            p.diag(f"{len(counts)} bare numbers in one block: the last is taken as the live "
                   "count", lineno)
        live = counts[-1] if counts else None
        dying = mem.num_cgroups - live if live is not None else None
        if dying is not None and dying < 0:
            p.diag(f"live count {live} exceeds the kernel's {mem.num_cgroups} (a count of a "
                   "different hierarchy?): dying not computed", lineno)
            dying = None
        hier = "v1" if mem.hierarchy > 0 else "v2"
        if t is None:
            undated += 1
        p.censuses.append(MemcgCensus(
            t=t if t is not None else 0.0, layout=hier, hierarchy=hier,
            kernel_count=mem.num_cgroups, live=live, dying=dying,
            source=SOURCE if live is not None else "/proc/cgroups memory num_cgroups (no live "
            "count in the log)",
            proc_cgroups_count=mem.num_cgroups,
        ))
    if undated and undated == len(p.censuses):
        p.undated = True
        if len(p.censuses) > 1:
            p.diag(f"{len(p.censuses)} /proc/cgroups reads without date lines: only the last "
                   "is kept (they cannot be placed in time)")
            p.censuses = p.censuses[-1:]
    elif undated:
        p.diag(f"{undated} blocks without a date line were skipped")
        p.censuses = [c for c in p.censuses if c.t > 0]
    if not p.censuses:
        p.diag("no /proc/cgroups memory row found")
    return p
