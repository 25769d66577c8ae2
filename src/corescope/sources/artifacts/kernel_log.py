"""Kernel logs in every format `events --file` reads: dmesg (plain, -r, -x, -T,
--time-format iso), syslog's kern.log, and a raw /dev/kmsg dump. The parsing is
sources.kmsg's; this module only recognises the content and hands it over.

Boot-relative stamps (`[  123.456789]`) are placed by the importer with the import's boot
time. syslog's kern.log carries its own wall clock beside them (`Nov 30 15:34:48 host kernel:
[  342.006981] ...`): wall − since-boot over its lines is a boot time, so a kern.log anchors
itself (syslog prints no year: the latest year that does not put the line in the future is
taken). A log without any timestamps (`dmesg --notime`) cannot be placed in time and is not
recognised."""

from __future__ import annotations

import re
import statistics
import time

from corescope.sources.artifacts.base import BootTime, Parsed
from corescope.sources.artifacts.dates import MONTHS, local_epoch
from corescope.sources.kmsg import parse_saved_log

_SYSLOG = re.compile(rb"^(?P<mon>[A-Z][a-z]{2}) +(?P<day>\d{1,2}) (?P<h>\d\d):(?P<m>\d\d):"
                     rb"(?P<s>\d\d) \S+ kernel: \[\s*(?P<sec>\d{1,10})\.(?P<us>\d{6})\]",
                     re.MULTILINE)

KINDS = ("kernel_log",)


def sniff(head: str) -> str | None:
    sample = head[:16384]
    if re.match(r"\s*(?:\{|\[\s*[{\]])", sample):  # JSON: the units module's (journal_json)
        return None
    records, _ = parse_saved_log(sample.encode("utf-8", errors="replace"), "sniff")
    lines = [ln for ln in sample.splitlines() if ln.strip()]
    timed = sum(1 for r in records if r.usec is not None or r.wall is not None)
    if not lines or timed == 0:
        return None
    if timed >= min(3, len(lines)) and timed / len(lines) >= 0.3:
        return "kernel_log"
    return None


def parse(data: bytes, kind: str, source: str) -> Parsed:
    p = Parsed(kind, source)
    records, diags = parse_saved_log(data, source)
    p.kernel = records
    for d in diags[:50]:
        p.diag(d.message, d.line)
    if len(diags) > 50:
        p.diag(f"{len(diags) - 50} more unreadable lines")
    bt = _syslog_boot_time(data, p)
    if bt is not None:
        p.boot_times.append(bt)
    return p


def _syslog_boot_time(data: bytes, p: Parsed, now: float | None = None) -> BootTime | None:
    """kern.log's syslog wall clock against the kernel's since-boot stamp of the same lines.
    A reboot inside the log restarts the stamps: the last boot's lines are used."""
    now = time.time() if now is None else now
    this_year = time.localtime(now).tm_year
    pairs: list[tuple[tuple[int, int, int, int, int], float]] = []
    for m in _SYSLOG.finditer(data):
        mon = MONTHS.get(m.group("mon").decode().lower())
        if mon is None:
            continue
        pairs.append(((mon, int(m.group("day")), int(m.group("h")), int(m.group("m")),
                       int(m.group("s"))), int(m.group("sec")) + int(m.group("us")) / 1e6))
    if len(pairs) < 1:
        return None
    start = 0
    for i in range(1, len(pairs)):
        if pairs[i][1] + 1.0 < pairs[i - 1][1]:  # since-boot went back: a reboot
            start = i
    if start:
        p.notes.append("the kernel log spans a reboot: its last boot's syslog stamps give "
                       "the boot time")
    tail = pairs[start:]
    year = this_year
    last = local_epoch(year, *tail[-1][0])
    if last is not None and last > now + 2 * 86400:
        year -= 1  # syslog prints no year: a date ahead of today is last year's
    offsets = [w - usec for (mdhms, usec) in tail
               if (w := local_epoch(year, *mdhms)) is not None]
    if not offsets:
        return None
    # syslog stamps whole seconds when it receives the line: at most ~1 s after the kernel's
    return BootTime(statistics.median(offsets), f"kern.log syslog stamps (year {year})", 1.5)
