"""Zombie-memcg census loop logs, single `/proc/cgroups` reads, and cgroup v2 `cgroup.stat`
loops and snapshots.

The loop incident teams run:
    while true; do date; cat /proc/cgroups; find /sys/fs/cgroup/memory -type d | wc -l;
    sleep 10; done
Each `/proc/cgroups` dump gives one MemcgCensus: the kernel's memory `num_cgroups` (dying
included), the live directory count (the bare number `wc -l` printed, the root directory
included, as the recorder's own census counts), and dying = kernel − live. Every dump is kept,
in order, a paste holding several included. A single `/proc/cgroups` without a date or a count
gives the kernel count only, as an undated snapshot.

A paste from a terminal shows the commands: there a bare number is the live count only when
the command that printed it counts memory cgroup directories (`find /sys/fs/cgroup/memory
-type d | wc -l`, `ls -d /sys/fs/cgroup/memory/*/ | wc -l`); any other count (`docker ps -a |
wc -l`) is not, and its dump is a kernel count alone. Without commands, the text is the loop
above, whose bare number is the live count.

On a cgroup v2 node the loop reads the root's cgroup.stat instead:
    while true; do date; cat /sys/fs/cgroup/cgroup.stat; sleep 10; done
Each block gives live and dying from its counters, as the recorder's own v2 census does:
nr_subsys_memory / nr_dying_subsys_memory on 6.12+, else nr_descendants + 1 (the root) and
nr_dying_descendants (cgroups of every controller: an upper bound on dying memcgs)."""

from __future__ import annotations

import re

from corescope.model.cgroups import MemcgCensus
from corescope.sources.artifacts.base import Parsed
from corescope.sources.artifacts.dates import parse_date_line
from corescope.sources.artifacts.loops import split_dated
from corescope.sources.cgroups import (
    parse_cgroup_stat,
    parse_proc_cgroups,
    unreadable_counts,
    v2_memcg_counts,
)

KINDS = ("census_loop", "proc_cgroups", "cgroup_stat")

_ROW = re.compile(r"^(?:#subsys_name\s+hierarchy\s+num_cgroups\s+enabled|memory\s+\d+\s+\d+\s+"
                  r"[01])\s*$", re.MULTILINE)
# the v2 root's cgroup.stat: these two lines are in every kernel's file since 4.14
_STAT = re.compile(r"^nr_dying_descendants[ \t]+\d+[ \t]*$", re.MULTILINE)
_STAT_LINE = re.compile(r"^nr_(?:dying_)?(?:descendants|subsys_\w+)[ \t]+\d+[ \t]*$")
_COUNT = re.compile(r"^\s*(\d{1,9})\s*$")
# a shell prompt and its command: `$ cmd`, `# cmd`, `user@host:~$ cmd`, `[root@host ~]# cmd`
_PROMPT = re.compile(r"^\s*(?:\[[^\]\n]{1,80}\]|[\w.@:~/-]{0,80})[$#%>]\s+(\S.*)$")
# a count of memory cgroup directories: find ... memory ... -type d | wc -l, ls -d ... | wc -l
_LIVE_CMD = re.compile(r"(?:\bfind\b[^|]*memory[^|]*-type\s+d|\bls\b[^|]*\s-\w*d\w*\b[^|]*memory"
                       r"|\bls\b[^|]*memory[^|]*\s-\w*d\w*\b)[^|]*\|\s*wc\s+-l\b")
_HEADER = re.compile(r"^#subsys_name\s")
_MEMORY = re.compile(r"^memory\s+\d+\s+\d+\s+[01]\s*$")
SOURCE = ("census loop log: /proc/cgroups memory num_cgroups - live memory cgroup "
          "directories (find -type d | wc -l)")


def sniff(head: str) -> str | None:
    v1 = _ROW.search(head) is not None
    if not v1 and _STAT.search(head) is None:
        return None
    dated = any(parse_date_line(ln) is not None for ln in head.splitlines()[:400]
                if not _COUNT.match(ln) and not _STAT_LINE.match(ln))
    return "census_loop" if dated else "proc_cgroups" if v1 else "cgroup_stat"


def _command(line: str) -> str | None:
    """The command of a prompt line, or None. `#subsys_name` (the table's header) is none."""
    if _HEADER.match(line.strip()):
        return None
    m = _PROMPT.match(line)
    return m.group(1) if m else None


def _dumps(lines: list[str], pasted: bool) -> list[tuple[list[str], int | None, str | None]]:
    """A block's /proc/cgroups dumps in order: (table lines, live count or None, why a bare
    number was not taken). A dump starts at its header (or, headerless, its memory row); a
    number counts for the dump before it (the first one when it comes before them all)."""
    dumps: list[tuple[list[str], list[int], list[str]]] = []
    cmd: str | None = None
    early: list[int] = []
    for line in lines:
        c = _command(line)
        if c is not None:
            cmd = c
            continue
        m = _COUNT.match(line)
        if m:
            n = int(m.group(1))
            if pasted and (cmd is None or not _LIVE_CMD.search(cmd)):
                if dumps:
                    dumps[-1][2].append(cmd or "a number with no command")
                continue
            if pasted and cmd is not None and "-mindepth 1" in cmd:
                n += 1  # the root directory was left out of the count
            (dumps[-1][1] if dumps else early).append(n)
            continue
        starts = _HEADER.match(line.strip()) or (
            _MEMORY.match(line.strip()) and not (dumps and not _has_memory(dumps[-1][0])))
        if starts or not dumps:
            dumps.append(([], [], []))
        dumps[-1][0].append(line)
    if dumps and early:
        dumps[0][1][:0] = early
    return [(t, counts[-1] if counts else None,
             None if counts or not skipped else skipped[-1]) for t, counts, skipped in dumps]


def _has_memory(table: list[str]) -> bool:
    return any(_MEMORY.match(ln.strip()) for ln in table)


def parse(data: bytes, kind: str, source: str) -> Parsed:
    p = Parsed(kind, source)
    text = data.decode("utf-8", errors="replace")
    if _ROW.search(text) is None and _STAT.search(text) is not None:
        return _parse_v2(p, text, source)
    pasted = any(_command(ln) is not None for ln in text.splitlines())
    blocks = split_dated(text, lambda ln: not _COUNT.match(ln) or len(ln.strip()) >= 9)
    undated = 0
    for t, lineno, lines in blocks:
        dumps = _dumps(lines, pasted)
        if not dumps:
            continue
        for table, live, why in dumps:
            rows, diags = parse_proc_cgroups("\n".join(table), source)
            for d in diags[:3]:
                p.diag(d.message, lineno)
            mem = rows.get("memory")
            if mem is None:
                if rows or live is not None:
                    p.diag("block without a /proc/cgroups memory row", lineno)
                continue
            if why is not None:
                p.diag(f"a count printed by `{why[:80]}` is not a count of live memory cgroup "
                       "directories: this /proc/cgroups gives the kernel count alone", lineno)
            dying = mem.num_cgroups - live if live is not None else None
            if dying is not None and dying < 0:
                p.diag(f"live count {live} exceeds the kernel's {mem.num_cgroups} (a count of "
                       "a different hierarchy?): dying not computed", lineno)
                dying = None
            hier = "v1" if mem.hierarchy > 0 else "v2"
            if t is None:
                undated += 1
            p.censuses.append(MemcgCensus(
                t=t if t is not None else 0.0, layout=hier, hierarchy=hier,
                kernel_count=mem.num_cgroups, live=live, dying=dying,
                source=SOURCE if live is not None else "/proc/cgroups memory num_cgroups (no "
                "live count in the log)",
                proc_cgroups_count=mem.num_cgroups,
            ))
    return _keep_dated(p, undated)


def _parse_v2(p: Parsed, text: str, source: str) -> Parsed:
    blocks = split_dated(text, lambda ln: not _STAT_LINE.match(ln.strip()))
    undated = 0
    for t, lineno, lines in blocks:
        stat_text = "\n".join(ln for ln in lines if _STAT_LINE.match(ln.strip()))
        other = [ln for ln in lines if ln.strip() and not _STAT_LINE.match(ln.strip())]
        if other:
            p.diag(f"{len(other)} lines that are not cgroup.stat counters: ignored", lineno)
        stat, diags = parse_cgroup_stat(stat_text, source)
        for d in diags[:3]:
            p.diag(d.message, lineno)
        bad = unreadable_counts(stat)
        if bad:
            p.diag(f"block whose {bad[0]} line is unreadable: no census from it", lineno)
            continue
        counts = v2_memcg_counts(stat)
        if counts is None:
            if lines:
                p.diag("block without nr_descendants/nr_dying_descendants", lineno)
            continue
        live, dying, how = counts
        if t is None:
            undated += 1
        p.censuses.append(MemcgCensus(
            t=t if t is not None else 0.0, layout="v2", hierarchy="v2",
            kernel_count=live + dying, live=live, dying=dying,
            source=f"cgroup.stat loop log: {how}"))
    return _keep_dated(p, undated, "cgroup.stat")


def _keep_dated(p: Parsed, undated: int, what: str = "/proc/cgroups") -> Parsed:
    """An all-undated log is one snapshot (the last); undated blocks among dated ones go."""
    if undated and undated == len(p.censuses):
        p.undated = True
        if len(p.censuses) > 1:
            p.diag(f"{len(p.censuses)} {what} reads without date lines: all kept, in order, "
                   "at one time (they cannot be placed apart)")
    elif undated:
        p.diag(f"{undated} blocks without a date line were skipped")
        p.censuses = [c for c in p.censuses if c.t > 0]
    if not p.censuses:
        p.diag("no /proc/cgroups memory row found" if what == "/proc/cgroups" else
               "no cgroup.stat counters found")
    return p
