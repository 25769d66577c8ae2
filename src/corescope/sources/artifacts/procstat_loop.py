"""`/proc/stat` snapshots: one read, or a `date; cat /proc/stat` loop (`date` in its default
format, `+%s` or ISO 8601). Consecutive snapshots become CoreSamples with the recorder's own
parser and sysstat arithmetic (sources.procstat). `btime` is the node's boot time: an anchor
for boot-relative kernel log stamps.

Sample times are the date lines (whole seconds with the default `date` format); the interval is
measured from the counters themselves (the all-CPU tick delta ÷ CPUs ÷ USER_HZ), as sysstat
does, falling back to the date difference."""

from __future__ import annotations

import itertools
import re

from corescope.model.cores import CoreSample
from corescope.sources.artifacts.base import BootTime, Parsed
from corescope.sources.artifacts.dates import EPOCH_MAX
from corescope.sources.artifacts.loops import split_dated
from corescope.sources.procstat import ProcStat, carry, delta, parse_proc_stat

KINDS = ("proc_stat",)
USER_HZ = 100  # /proc/stat's unit on every architecture Linux exports it for

_AGGREGATE = re.compile(r"^cpu +\d+ +\d+ +\d+ +\d+", re.MULTILINE)
_OTHER_CPU_FILES = re.compile(r"^(?:version \d+|timestamp \d+|domain\d+ )", re.MULTILINE)


def sniff(head: str) -> str | None:
    # the aggregate `cpu` line (which /proc/schedstat lacks: it has `cpuN` and `domainN`)
    if (_AGGREGATE.search(head) and re.search(r"^cpu\d+ +\d", head, re.MULTILINE)
            and not _OTHER_CPU_FILES.search(head)):
        return "proc_stat"
    return None


def _interval(prev: ProcStat, cur: ProcStat, dated: float | None) -> float | None:
    if prev.total is not None and cur.total is not None and cur.cpus:
        # user+nice+sys+idle+iowait+irq+softirq+steal, as sysstat's uptime
        ticks = sum(b - a for a, b in zip(prev.total[:8], cur.total[:8], strict=True))
        # more than a day between two reads is a corrupt counter, not an interval (and
        # 10**400 ticks are past a float's range)
        if 0 < ticks <= 86400 * USER_HZ * len(cur.cpus):
            return ticks / len(cur.cpus) / USER_HZ
    return dated


def parse(data: bytes, kind: str, source: str) -> Parsed:
    p = Parsed(kind, source)
    text = data.decode("utf-8", errors="replace")
    blocks = split_dated(text)
    snaps: list[tuple[float | None, ProcStat]] = []
    for t, lineno, lines in blocks:
        body = "\n".join(lines)
        if "cpu" not in body:
            if lines and any(ln.strip() for ln in lines):
                p.diag("block without /proc/stat cpu lines", lineno)
            continue
        ps = parse_proc_stat(body, source)
        for d in ps.diagnostics[:5]:
            p.diag(d.message, lineno + (d.line or 1) - 1 if d.line else lineno)
        if not ps.cpus:
            continue
        snaps.append((t, ps))
        if ps.btime is not None and not 0 < ps.btime <= EPOCH_MAX:
            p.diag(f"btime {str(ps.btime)[:24]} is not a boot time: not used", lineno)
        elif ps.btime is not None:
            bt = BootTime(float(ps.btime), "btime in /proc/stat", 1.0)
            if not any(b.epoch == bt.epoch for b in p.boot_times):
                p.boot_times.append(bt)
    if not snaps:
        p.diag("no /proc/stat snapshot could be read")
        return p
    if len(snaps) == 1:
        p.diag("a single /proc/stat snapshot gives no per-core interval (needs two or more); "
               "only its boot time (btime) is used")
        return p
    if all(t is None for t, _ in snaps):
        p.diag("the /proc/stat snapshots carry no date lines: they cannot be placed in time "
               "(use `date; cat /proc/stat` in the loop)")
        return p
    samples: list[CoreSample] = []
    based = snaps[0][1]  # the pair's first snapshot, with the offline CPUs' last counters
    for (t0, a), (t1, b) in itertools.pairwise(snaps):
        base, based = based, b  # a skipped pair carries nothing over
        if t0 is None or t1 is None:
            p.diag("a snapshot without its date line was skipped")
            continue
        if t1 < t0:
            p.diag(f"time went backwards ({t0:.0f} → {t1:.0f}): pair skipped")
            continue
        itv = _interval(a, b, t1 - t0)
        if not itv or itv <= 0:
            p.diag(f"no time passed between snapshots at {t0:.0f} and {t1:.0f}: pair skipped")
            continue
        if a.btime is not None and b.btime is not None and a.btime != b.btime:
            p.diag(f"btime changed between snapshots (a reboot at about {b.btime}): pair "
                   "skipped")
            continue
        s = delta(base, b, t1, itv)
        based = carry(base, b)
        # materialise: packed numpy rows must not outlive the snapshots they came from
        samples.append(CoreSample(s.t, s.interval_s,
                                  {c: tuple(int(v) for v in s.deltas[c]) for c in s.deltas}))
    p.samples = samples
    return p
