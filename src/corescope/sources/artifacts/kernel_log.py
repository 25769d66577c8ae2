"""Kernel logs in every format `events --file` reads: dmesg (plain, -r, -x, -T, -d,
--time-format iso, coloured), syslog files (kern.log, /var/log/syslog: traditional or RFC 3339
stamps), journalctl -k's short forms, and a raw /dev/kmsg dump. The parsing is
sources.kmsg_saved's; this module only recognises the content and hands it over.

Boot-relative stamps (`[  123.456789]`) are placed by the importer with the import's boot
time. syslog's kern.log carries its own wall clock beside them (`Nov 30 15:34:48 host kernel:
[  342.006981] ...`, or rsyslog's `2026-11-30T15:34:48.000412+00:00 host kernel: [ ...`):
wall − since-boot over its lines is a boot time, so a kern.log anchors itself (syslog's
traditional stamp prints no year: the latest year that does not put the line in the future is
taken). A log without any timestamps (`dmesg --notime`) cannot be placed in time and is not
recognised. `dmesg -H`/`-e`/`--time-format reltime` is placed from its minute lines (exact to
the minute, said in a note); `--time-format delta` alone cannot be placed and is refused with
the reason."""

from __future__ import annotations

import re
import statistics
import time

from corescope.sources.artifacts.base import BootTime, Parsed
from corescope.sources.kmsg_saved import parse_saved_log
from corescope.sources.kmsg_text import SYSLOG_LINE, syslog_wall

# an RFC 3339 / spaced stamp that names its zone (`+01:00`, `Z`)
_ZONED = re.compile(rb"(?:Z|[+-]\d\d:?\d\d)$")
# `[  342.006981]` at the start of a syslog line's text: the kernel's stamp beside syslog's
_STAMP = re.compile(rb"\[\s*(?P<sec>\d{1,10})\.(?P<us>\d{6})\]")

KINDS = ("kernel_log",)

# dmesg's relative stamps: `[  +0.002672]` (-e, -H, --time-format reltime), `[<    0.002672>]`
# (--time-format delta) and reltime's `[Nov30 17:04]` at each new minute
_RELATIVE = re.compile(r"^\[(?:\s*\+\d+\.\d+|<\s*\d+\.\d+>|[A-Z][a-z]{2}\d{1,2} \d\d:\d\d)\] ",
                       re.MULTILINE)
_RELATIVE_MSG = ("dmesg's relative timestamps (`dmesg -e`, `-H`, `--time-format reltime` or "
                 "`delta`) give only the time since the line before, and no line gives the "
                 "minute (`[Nov30 18:34]`): the log cannot be placed in time; save it with "
                 "`dmesg --time-format iso` (or plain `dmesg`)")
_MINUTE_NOTE = ("dmesg -H/-e/reltime times come from its minute lines (`[Nov30 18:34]`), which "
                "print no seconds: each line is placed up to 60 s before it happened (the "
                "deltas between lines are exact to the microsecond; the year, which they do "
                "not print, is the latest that does not put them in the future)")


def _relative(sample: str) -> bool:
    lines = [ln for ln in sample.splitlines() if ln.strip()]
    return bool(lines) and len(_RELATIVE.findall(sample)) >= max(1, len(lines) // 2)


def sniff(head: str) -> str | None:
    sample = head[:16384]
    if re.match(r"\s*(?:\{|\[\s*[{\]])", sample):  # JSON: the units module's (journal_json)
        return None
    if _relative(sample):
        return "kernel_log"  # recognised, to say why it cannot be read
    records, _ = parse_saved_log(sample.encode("utf-8", errors="replace"), "sniff")
    lines = [ln for ln in sample.splitlines() if ln.strip()]
    timed = sum(1 for r in records if r.usec is not None or r.wall is not None)
    if not lines or timed == 0:
        return None
    if timed >= min(3, len(lines)) and timed / len(lines) >= 0.3:
        return "kernel_log"
    # a whole syslog file (/var/log/syslog, `journalctl -o short`): other programs' lines
    # too, of which the kernel's are read
    syslog = sum(1 for ln in lines if SYSLOG_LINE.match(ln.encode("utf-8", "replace")))
    if syslog / len(lines) >= 0.5:
        return "kernel_log"
    return None


def parse(data: bytes, kind: str, source: str) -> Parsed:
    p = Parsed(kind, source)
    records, diags = parse_saved_log(data, source)
    if _relative(data[:16384].decode("utf-8", errors="replace")):
        # placed from the minute lines where the log has them (exact to the minute only);
        # a log of deltas alone (`--time-format delta`) has nothing to place it by
        if not any(r.wall is not None for r in records):
            p.diag(_RELATIVE_MSG)
            return p
        p.notes.append(_MINUTE_NOTE)
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
    """kern.log's syslog wall clock against the kernel's since-boot stamp of the same lines
    (traditional or RFC 3339 stamps). A reboot inside the log restarts the stamps: the last
    boot's lines are used."""
    pairs: list[tuple[float, float]] = []
    trad = zoneless = False
    for line in data.split(b"\n"):
        if b" kernel: [" not in line[:120] and b" kernel:[" not in line[:120]:
            continue
        m = SYSLOG_LINE.match(line)
        if m is None or m["ident"] != b"kernel" or m["mono"] is not None:
            continue
        s = _STAMP.match(m["rest"])
        if s is None:
            continue
        wall = syslog_wall(m, now)
        if wall is None:
            continue
        trad = trad or m["trad"] is not None
        zoneless = zoneless or not (m["unix"] or m["full"]
                                    or _ZONED.search(m["iso"] or m["spaced"] or b""))
        pairs.append((wall, int(s.group("sec")) + int(s.group("us")) / 1e6))
    if not pairs:
        return None
    start = 0
    for i in range(1, len(pairs)):
        if pairs[i][1] + 1.0 < pairs[i - 1][1]:  # since-boot went back: a reboot
            start = i
    if start:
        p.notes.append("the kernel log spans a reboot: its last boot's syslog stamps give "
                       "the boot time")
    offsets = [w - usec for w, usec in pairs[start:]]
    how = "kern.log syslog stamps"
    if trad:
        year = time.localtime(pairs[-1][0]).tm_year
        how += f" (year {year}: syslog prints none)"
    # syslog stamps whole seconds when it receives the line: at most ~1 s after the kernel's
    return BootTime(statistics.median(offsets), how, 1.5, zoneless)
