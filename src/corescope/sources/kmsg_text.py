"""Saved kernel logs as text: dmesg in every time format, syslog files (kern.log, messages,
OpenWrt logread, RFC 5424) and journalctl -k's short forms, also pasted from a terminal.

Pure and total: bytes in, records plus diagnostics out. Each line keeps the time it prints:
the kernel's since-boot stamp (`usec`), a wall clock (`wall`), or both (a syslog line that
carries the kernel's stamp after `kernel:`). Only the kernel's lines are records: a syslog
line of another program (netifd, NetworkManager, systemd) is counted and skipped.
"""

from __future__ import annotations

import re
import time
from datetime import datetime
from typing import NamedTuple

from corescope.model.common import Diagnostic
from corescope.model.events import _NO_META, KmsgRecord
from corescope.sources.artifacts.dates import EPOCH_MAX, zoned_epoch
from corescope.sources.kmsg_stamps import (
    CTIME,
    RELTIME_ANCHOR,
    RELTIME_DELTA,
    ctime_wall,
    guess_year,
    local_time,
    reltime_anchor_wall,
    unpaste,
)

# `[  123.456789] msg`, optionally after `<6>` (dmesg -r) and `kern  :err   : ` (dmesg -x);
# `dmesg -d` adds the time since the message before: `[  123.456789 <    0.000011>]`. A stamp
# cut short by a narrow terminal (`[  240.]`, `[ 240.12]`) is read as far as it goes.
_DMESG = re.compile(
    rb"^(?:<(?P<prio>\d{1,4})>)?(?:(?P<fac>[a-z][a-z0-9]*)\s*:(?P<lvl>[a-z]+)\s*:\s)?"
    rb"\[\s*(?P<sec>\d{1,12})\.(?P<frac>\d{0,9})(?:\s*<\s*\d{1,12}\.\d{1,9}\s*>)?\s*\]\s?"
    rb"(?P<msg>.*)$"
)
# `dmesg --time-format iso`: `2026-11-29T19:36:54,123456+00:00 msg`, also after -x's prefix
_DMESG_ISO = re.compile(
    rb"^(?:<(?P<prio>\d{1,4})>)?(?:(?P<fac>[a-z][a-z0-9]*)\s*:(?P<lvl>[a-z]+)\s*:\s)?"
    rb"(?P<ts>\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:[,.]\d+)?"
    rb"(?:[+-]\d\d:?\d\d|Z))\s(?P<msg>.*)$"
)
# A syslog or journal line: `STAMP host ident[pid]: text`. STAMP is syslog's traditional
# `Nov 29 19:36:54` (journalctl's `short`; `short-precise` adds microseconds), RFC 3339
# (rsyslog's default file format; journalctl `short-iso`, `short-iso-precise`),
# `Sun 2026-11-29 19:36:54 UTC` (`short-full`), epoch seconds (`short-unix`) or the
# kernel's own `[  123.456789]` (`short-monotonic`; `short-delta` adds `<  0.000011 >`).
# The traditional, full and epoch stamps are never dmesg's own, nor an ISO stamp with a dot
# or no fraction (dmesg's iso has a comma: `15:29:06,410164+00:00`), so there a line from
# another program is known for one; a `short-monotonic` file is told from dmesg as a whole
# (journal_monotonic).
# journalctl (systemd's output_short) prints `STAMP[ HOST] IDENT[[PID]]: MESSAGE`: no HOST
# when the entry has no _HOSTNAME, and for IDENT the SYSLOG_IDENTIFIER, else _COMM, else
# `unknown`. A host name holds no colon, so `kernel: ACPI: ...` is no host `kernel:`.
SYSLOG_LINE = re.compile(
    rb"^(?:<(?P<pri>\d{1,3})>)?"
    rb"(?:(?P<trad>[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d(?:\.\d{1,9})?)"
    rb"|(?P<iso>\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d{1,9})?(?:Z|[+-]\d\d:?\d\d)?)"
    rb"|(?P<full>[A-Z][a-z]{2} \d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d{1,9})? [A-Za-z0-9+_/-]+)"
    rb"|(?P<unix>\d{9,11}\.\d{1,9})"
    rb"|\[\s*(?P<mono>\d{1,12}\.\d{1,9})(?:\s*<\s*\d{1,12}\.\d{1,9}\s*>)?\s*\]"
    # OpenWrt logread: `Tue Feb  8 12:57:41 2022 kern.warn kernel: ...` (where syslog prints
    # the host, logread prints facility.level)
    rb"|(?P<ctime>[A-Z][a-z]{2} [A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d \d{4})"
    # syslog with a year: `2022 Feb  8 12:57:41`, `Feb  8 2022 12:57:41`
    rb"|(?P<tradyear>\d{4} [A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d(?:\.\d{1,9})?)"
    rb"|(?P<trad2>[A-Z][a-z]{2} [ \d]\d \d{4} \d\d:\d\d:\d\d(?:\.\d{1,9})?)"
    # `2022-02-08 12:57:41.123 host kernel:` (syslog-ng and log shippers; local time)
    rb"|(?P<spaced>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:[.,]\d{1,9})?(?: ?(?:Z|[+-]\d\d:?\d\d))?))"
    # (pastes may hold two spaces where a syslog template left an empty host); BusyBox
    # syslogd prints `facility.priority` after the host (`node7 kern.warn kernel: `); a
    # template without rsyslog's sp-if-no-1st-sp glues the kernel's stamp on (`kernel:[`)
    rb"(?: {1,2}(?P<host>[^\s:]+))?(?: (?P<faclvl>[a-z]{2,8}\d?\.[a-z]{3,7}))?"
    rb" {1,2}(?P<ident>[^\s\[\]:]+)(?:\[\d+\])?:(?: |(?=\[))(?P<rest>.*)$"
)
# RFC 5424: `<PRI>1 TIMESTAMP HOST APP PROCID MSGID SD MSG` (rsyslog's
# RSYSLOG_SyslogProtocol23Format, syslog-ng's syslog() destination)
RFC5424_LINE = re.compile(
    rb"^(?:<(?P<pri>\d{1,3})>)?1 (?P<ts>\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d{1,9})?"
    rb"(?:Z|[+-]\d\d:\d\d)|-) (?P<host>\S{1,255}) (?P<ident>\S{1,48}) \S{1,128} \S{1,32} "
    rb"(?:-|(?:\[(?:[^\]\\]|\\.)*\])+) ?(?:\xef\xbb\xbf)?(?P<rest>.*)$"
)
# logread's `facility.level` where syslog prints the host
_FAC_LEVEL = re.compile(rb"^(?P<fac>[a-z]{2,8}\d?)\.(?P<lvl>[a-z]{3,7})$")
# what follows `short-monotonic`'s stamp: `[HOST ]IDENT[[PID]]: `
_MONO_IDENT = re.compile(rb"(?:[^\s:]+ )?([^\s\[\]:]+)(\[\d+\])?: ")
# the identifier journalctl prints for an entry with neither SYSLOG_IDENTIFIER nor _COMM
_UNKNOWN = b"unknown"
_KERNEL_IDENTS = (b"kernel", b"vmunix", b"klogd")
# journalctl's own lines: `-- Boot 4f3e... --`, `-- No entries --`, `-- Logs begin at ... --`;
# grep's `--` between context groups
_JOURNAL_NOTE = re.compile(rb"^-- .* --$|^--$")
# colours (`dmesg --color=always`, a terminal capture)
_SGR = re.compile(rb"\x1b\[[0-9;]*m")

_FACILITIES = {"kern": 0, "user": 1, "mail": 2, "daemon": 3, "auth": 4, "syslog": 5,
               "lpr": 6, "news": 7, "uucp": 8, "cron": 9, "authpriv": 10, "ftp": 11,
               **{f"local{i}": 16 + i for i in range(8)}}

_LEVELS = {"emerg": 0, "alert": 1, "crit": 2, "err": 3, "warn": 4, "warning": 4, "notice": 5,
           "info": 6, "debug": 7}

# the common `[  123.456789] msg`; seconds bounded like _DMESG's (a longer run of digits
# is no real stamp, and past 4300 of them int() raises). `dmesg -d` and `journalctl -o
# short-delta` add the time since the line before: `[  123.456789 <    0.000011>]`, which
# journalctl writes `[123.456789 <    0.000011 >]`, and pads to that width on its first line
_FAST = re.compile(rb"\[\s*(\d{1,12})\.(\d{6})(?:\s*<\s*\d{1,12}\.\d{6}\s*>)?\s*\] ?(.*)$")

_OTHER, _NO_IDENT = -1, -2  # a header's facility for another program's, `unknown`'s line

# Repeats folded into one line by the syslog daemon (the message came again N times after the
# line before it): rsyslog's `message repeated N times: [ MSG]` (runtime/ratelimit.c
# ratelimitGenRepMsg, RepeatedMsgReduction with RepeatedMsgContainsOriginalMsg) and its old
# ` last message repeated N times` (action.c), which keep the original's tag (`kernel: `);
# syslog-ng's `Last message '%.20s' repeated N times, suppressed by syslog-ng on HOST`
# (logwriter.c log_writer_emit_suppress_summary); sysklogd's `last message repeated N times`
# after the host, without a tag. The record becomes the repeated message itself, with the
# count in `REPEATED` (the classifier's `repeated` field).
_REPEAT_MSG = re.compile(r"message repeated (\d{1,9}) times?: \[ ?(.*)\]\s*$", re.S)
_REPEAT_LAST = re.compile(r"last message repeated (\d{1,9}) times?\s*$")
_REPEAT_NG = re.compile(r"Last message '(.{0,20})' repeated (\d{1,9}) times?, suppressed by "
                        r"syslog-ng on \S+\s*$", re.S)
# sysklogd's: any syslog stamp, the host, the words (the stamps are SYSLOG_LINE's own)
_REPEAT_BARE = re.compile(SYSLOG_LINE.pattern.split(rb"(?: {1,2}(?P<host>")[0]
                          + rb" [^\s:]+ last message repeated (?P<n>\d{1,9}) times?\s*$")


def _repeat_of(msg: str, prev: str | None) -> tuple[str, int] | None:
    """(the message repeated, how many times) for a syslog daemon's repeat line, else None.
    `prev`: the kernel line just before it (what `last message repeated` repeats)."""
    if msg.startswith("message repeated"):
        if (m := _REPEAT_MSG.match(msg)) is not None:
            return m.group(2), int(m.group(1))
    elif msg.startswith("last message repeated"):
        if prev is not None and (m := _REPEAT_LAST.match(msg)) is not None:
            return prev, int(m.group(1))
    elif msg.startswith("Last message '"):
        m = _REPEAT_NG.match(msg)
        if m is not None and prev is not None and prev.startswith(m.group(1)):
            return prev, int(m.group(2))
    return None


class _Head(NamedTuple):
    """What a line's stamps say. `delta`: a relative stamp (seconds since the line before);
    `anchor`: a `dmesg -H` minute line (an absolute time, to the minute)."""

    msg: str
    usec: int | None = None
    wall: float | None = None
    level: int | None = None
    facility: int | None = None
    delta: float | None = None
    anchor: bool = False


def journal_monotonic(data: bytes, probe: int = 200) -> bool:
    """Whether `[  123.456789] ...` lines are `journalctl -o short-monotonic` (each with
    `[HOST ]IDENT[[PID]]: ` after the stamp), not dmesg: most of the first `probe` stamped
    lines name the kernel, `unknown` or a program with its pid (dmesg's messages seldom do)."""
    seen = named = 0
    for line in data[:1 << 20].split(b"\n", probe * 4)[:probe * 4]:
        m = _FAST.match(line)
        if m is None:
            continue
        seen += 1
        h = _MONO_IDENT.match(m.group(3))
        if h is not None and (h.group(1) in (b"kernel", _UNKNOWN) or h.group(2)):
            named += 1
        if seen >= probe:
            break
    return seen > 0 and 2 * named >= seen


def _usec(sec: bytes, frac: bytes) -> int:
    return int(sec) * 1_000_000 + int((frac.decode() + "000000")[:6])


def parse_dmesg(data: str | bytes, source: str = "dmesg"
                ) -> tuple[list[KmsgRecord], list[Diagnostic]]:
    """`dmesg` (plain, -r, -x, -T in any locale, -H/-e, -d, --time-format
iso/ctime/reltime/delta, --notime, coloured, stamps cut short), syslog files (kern.log,
/var/log/messages, OpenWrt logread, RFC 5424: only the kernel's lines) or `journalctl -k -o
short*` text, also as pasted from a terminal (prompts, commands, fences, `>` quoting and grep
prefixes around it).

    An indented line without a timestamp continues the timestamped record before it (dmesg
    indents the further lines of a multi-line message). Any other line without a timestamp
    (`dmesg --notime`, say) is a record of its own, with no clock: one line, one event.
    Relative stamps (`dmesg -H`'s `[  +0.005106]`) are placed from the last absolute line
    before them (`[Feb 8 12:57]`), else left without a clock."""
    if isinstance(data, str):
        data = data.encode("utf-8", errors="replace")
    records: list[KmsgRecord] = []
    diags: list[Diagnostic] = []
    others = noise = unanchored = 0  # other programs' lines; terminal noise; lost deltas
    # the record being built: its lines and header (kept in locals: this loop sees millions)
    lines: list[str] | None = None
    usec: int | None = None
    wall: float | None = None
    level: int | None = None
    facility: int | None = None
    stamped = False  # the record had a stamp (its indented lines continue it)
    rel: float | None = None  # the wall clock a relative stamp counts from
    append = records.append
    fast = _FAST.match
    untimed = untimed_first = 0
    journal_mono = journal_monotonic(data)
    no_ident: list[int] = []  # records of `unknown` lines: the kernel's only in a kernel log
    repeats: dict[int, int] = {}  # record index → times a syslog daemon said it came again
    for lineno, raw_line in enumerate(data.split(b"\n"), 1):
        line = raw_line.rstrip(b"\r")
        if line[:2] == b"\x1b[":
            # `dmesg --color=always` colours the stamp: a line that starts coloured loses its
            # colours (escapes inside other lines' text are kept, shown escaped)
            line = _SGR.sub(b"", line)
        m = fast(line)
        if m is not None:
            if lines is not None:
                append(KmsgRecord("\n".join(lines), usec, None, level, facility, "", _NO_META,
                                  wall, "dmesg"))
            usec = int(m.group(1)) * 1_000_000 + int(m.group(2))
            msg = m.group(3)
            if journal_mono and (h := _MONO_IDENT.match(msg)) is not None:
                # journalctl -o short-monotonic: `[host ]kernel: `, `[host ]unknown: `
                if h.group(1) == _UNKNOWN:
                    no_ident.append(len(records))
                elif h.group(1) != b"kernel":
                    others += 1  # another program's line
                    lines = None
                    continue
                msg = msg[h.end():]
            lines = [msg.decode("utf-8", errors="replace")]
            wall = level = facility = None
            stamped = True
            continue
        if not line.strip() or _JOURNAL_NOTE.match(line):
            continue
        if b"last message repeated" in line and (rb := _REPEAT_BARE.match(line)) is not None:
            # sysklogd's: the line before it came again, if that was the kernel's
            if lines is None:
                others += 1
                continue
            prev_msg = "\n".join(lines)
            append(KmsgRecord(prev_msg, usec, None, level, facility, "", _NO_META, wall,
                              "dmesg"))
            repeats[len(records)] = int(rb["n"])
            lines = [prev_msg]
            usec, wall = None, syslog_wall(rb)
            rel = wall if wall is not None else rel
            stamped = True
            continue
        header = _dmesg_header(line, diags, source, lineno)
        if header is None:
            # a pasted line: `> ` quoting, a prompt, a fence, a grep prefix, indentation
            text = line.decode("utf-8", errors="replace")
            clean = unpaste(text)
            if clean is None:
                noise += 1
                continue
            inner = clean.lstrip()
            if inner != text:
                cand = inner.encode("utf-8", errors="replace")
                m = fast(cand)
                if m is not None and not journal_mono:
                    header = _Head(m.group(3).decode("utf-8", errors="replace"),
                                   int(m.group(1)) * 1_000_000 + int(m.group(2)))
                else:
                    header = _dmesg_header(cand, diags, source, lineno)
                if header is None and clean != text and clean[:1] not in " \t":
                    line = clean.encode("utf-8", errors="replace")  # quoted, unstamped
        if header is not None and header.facility == _OTHER:
            others += 1
            if lines is not None:
                append(KmsgRecord("\n".join(lines), usec, None, level, facility, "",
                                  _NO_META, wall, "dmesg"))
            lines = None
            continue
        if header is None:
            if lines is not None and line[:1] in b" \t" and stamped:
                lines.append(line.strip().decode("utf-8", errors="replace"))
                continue
            if lines is not None:
                append(KmsgRecord("\n".join(lines), usec, None, level, facility, "", _NO_META,
                                  wall, "dmesg"))
            if not untimed:
                untimed_first = lineno
            untimed += 1
            # kept, not dropped: a record with no clock (its text as it is: messages may
            # begin with spaces)
            lines = [line.decode("utf-8", errors="replace")]
            usec = wall = level = facility = None
            stamped = False
            continue
        flushed = lines is not None
        if lines is not None:
            append(KmsgRecord("\n".join(lines), usec, None, level, facility, "", _NO_META,
                              wall, "dmesg"))
        msg, usec, wall, level, facility, delta, anchor = header
        if "repeated" in msg[:60] and (rep := _repeat_of(
                msg, records[-1].message if flushed else None)) is not None:
            msg = rep[0]
            repeats[len(records)] = rep[1]
        if delta is not None:
            # a relative stamp: placed only after an absolute one
            if rel is None:
                unanchored += 1
            else:
                wall = rel = rel + delta
        elif wall is not None:
            # dmesg -H's minute line truncates its time: a line after it is no earlier
            # than the one before
            rel = wall if not anchor or rel is None else max(wall, rel)
            wall = rel
        if facility == _NO_IDENT:
            no_ident.append(len(records))
            facility = None
        lines = [msg]
        stamped = True
    if lines is not None:
        append(KmsgRecord("\n".join(lines), usec, None, level, facility, "", _NO_META, wall,
                          "dmesg"))
    for i, n in repeats.items():
        records[i] = records[i]._replace(dict_={"REPEATED": str(n)})
    if no_ident and others:
        # entries journalctl printed as `unknown` (no identifier, no command) are the
        # kernel's in `journalctl -k`; beside other programs' lines they could be anyone's
        drop = set(no_ident)
        records[:] = [r for i, r in enumerate(records) if i not in drop]
        diags.append(Diagnostic(source, f"{len(drop)} lines without an identifier "
                                "(`unknown:`) among other programs' lines skipped: they "
                                "may not be the kernel's"))
    if untimed:
        diags.append(Diagnostic(source, f"{untimed} lines without a timestamp: each is an event "
                                "of its own, with no time", untimed_first))
    if unanchored:
        diags.append(Diagnostic(source, f"{unanchored} lines with relative stamps (`dmesg -H`, "
                                "`-e`, `--time-format reltime` or `delta`) and no absolute "
                                "stamp before them: classified, but not placed in time"))
    if others:
        diags.append(Diagnostic(source, f"{others} syslog lines of other programs than the "
                                "kernel skipped"))
    if noise:
        diags.append(Diagnostic(source, f"{noise} pasted terminal lines (prompts, commands, "
                                "code fences) skipped"))
    return records, diags


def plausible_wall(t: float | None) -> float | None:
    """A stamp's epoch, or None before 1970 or past 2100: year 0026 (a digit lost) is no
    time to place a line at."""
    return t if t is not None and 0 <= t <= EPOCH_MAX else None


def _frac(ts: str) -> tuple[str, float]:
    whole, _, frac = ts.replace(",", ".").partition(".")
    return whole, float("0." + frac) if frac else 0.0


def _iso_wall(ts: str) -> float | None:
    ts = ts.replace(",", ".")
    if ts[-5:-4] in "+-" and ts[-3:-2] != ":" and ts[-5:].lstrip("+-").isdigit():
        ts = ts[:-2] + ":" + ts[-2:]  # +0000 → +00:00 (fromisoformat before 3.11)
    dt = datetime.fromisoformat(ts.replace("Z", "+00:00"))
    return plausible_wall(dt.timestamp())  # naive: local time


def syslog_wall(m: re.Match[bytes], now: float | None = None) -> float | None:
    """The wall clock of a `SYSLOG_LINE` match (None for `short-monotonic`). Stamps without a
    zone are local time (like `dmesg -T`); syslog's traditional stamp has no year: the
    latest year that does not put the line more than two days ahead of `now`."""
    try:
        if m["trad"] is not None:
            whole, frac = _frac(m["trad"].decode())
            st = time.strptime(f"2000 {whole}", "%Y %b %d %H:%M:%S")  # 2000: a leap year
            y = guess_year(st.tm_mon, st.tm_mday, st.tm_hour, st.tm_min, now)
            return plausible_wall(local_time(y, st.tm_mon, st.tm_mday, st.tm_hour, st.tm_min,
                                             st.tm_sec + frac))
        if m["iso"] is not None:
            return _iso_wall(m["iso"].decode())
        if m["spaced"] is not None:
            return _iso_wall(m["spaced"].decode().replace(" ", "T", 1).replace(" ", ""))
        if m["full"] is not None:
            _, date, clock, zone = m["full"].decode().split(" ")
            y, mo, d = (int(x) for x in date.split("-"))
            hh, mi, sec = clock.split(":")
            return plausible_wall(zoned_epoch(y, mo, d, int(hh), int(mi), float(sec), zone))
        if m["unix"] is not None:
            return plausible_wall(float(m["unix"]))
        for name, fmt in (("ctime", "%a %b %d %H:%M:%S %Y"), ("tradyear", "%Y %b %d %H:%M:%S"),
                          ("trad2", "%b %d %Y %H:%M:%S")):
            if m[name] is not None:
                whole, frac = _frac(m[name].decode())
                st = time.strptime(whole, fmt)
                return plausible_wall(local_time(st.tm_year, st.tm_mon, st.tm_mday,
                                                 st.tm_hour, st.tm_min, st.tm_sec + frac))
    except (ValueError, OverflowError):
        return None
    return None


def _prio(pri: bytes | None) -> tuple[int | None, int | None]:
    if pri is None:
        return None, None
    p = int(pri)
    return (p & 7, p >> 3) if p < 192 else (None, None)


def _dmesg_header(line: bytes, diags: list[Diagnostic], source: str, lineno: int
                  ) -> _Head | None:
    """The stamps of the less common line forms, else None. A syslog line of another
    program than the kernel gives facility _OTHER."""
    syslog_wall_t: float | None = None
    level: int | None = None
    facility: int | None = None
    r = RFC5424_LINE.match(line) if line[:1] in b"<1" else None
    if r is not None:
        if r["ident"] not in _KERNEL_IDENTS:
            return _Head("", facility=_OTHER)
        level, facility = _prio(r["pri"])
        if r["ts"] != b"-":
            try:
                syslog_wall_t = _iso_wall(r["ts"].decode())
            except ValueError:
                syslog_wall_t = None
            if syslog_wall_t is None:
                diags.append(Diagnostic(source, "unreadable RFC 5424 stamp", lineno))
        line = r["rest"]
    else:
        m = SYSLOG_LINE.match(line)
        if m and (m["ident"] in (b"kernel", _UNKNOWN) or m["mono"] is None):
            if m["ident"] not in (b"kernel", _UNKNOWN):
                return _Head("", facility=_OTHER)  # another program's line in a syslog file
            level, facility = _prio(m["pri"])
            fl = (_FAC_LEVEL.match(m["faclvl"]) if m["faclvl"] else
                  _FAC_LEVEL.match(m["host"]) if m["host"] and m["ctime"] else None)
            if fl is not None:  # logread's or BusyBox syslogd's `kern.warn`
                level = _LEVELS.get(fl["lvl"].decode(), level)
                facility = _FACILITIES.get(fl["fac"].decode(), facility)
            if m["ident"] == _UNKNOWN:
                # an entry with no identifier: the message as it is, on journald's clock
                rest = m.group("rest").decode("utf-8", errors="replace")
                if m["mono"] is not None:
                    sec, _, frac = m["mono"].partition(b".")
                    return _Head(rest, _usec(sec, frac), facility=_NO_IDENT)
                t = syslog_wall(m)
                if t is None:
                    diags.append(Diagnostic(source, "unreadable syslog stamp", lineno))
                return _Head(rest, None, t, facility=_NO_IDENT)
            line = m.group("rest")
            if m["mono"] is not None:
                sec, _, frac = m["mono"].partition(b".")
                return _Head(line.decode("utf-8", errors="replace"), _usec(sec, frac))
            syslog_wall_t = syslog_wall(m)
            if syslog_wall_t is None:
                diags.append(Diagnostic(source, "unreadable syslog stamp", lineno))
    d = _DMESG.match(line)
    if d:
        lv, fa = _level_of(d)
        # a syslog line keeps its own wall clock beside the kernel's stamp
        return _Head(d.group("msg").decode("utf-8", errors="replace"),
                     _usec(d.group("sec"), d.group("frac")), syslog_wall_t,
                     lv if lv is not None else level, fa if fa is not None else facility)
    d = _DMESG_ISO.match(line)
    if d:
        try:
            wall = plausible_wall(datetime.fromisoformat(
                d.group("ts").decode().replace(",", ".").replace("Z", "+00:00")
            ).timestamp())
        except ValueError:
            wall = None
        if wall is None:
            diags.append(Diagnostic(source, "unreadable ISO stamp", lineno))
        lv, fa = _level_of(d)
        return _Head(d.group("msg").decode("utf-8", errors="replace"), None, wall, lv, fa)
    if line[:1] in b"[<" or line[:4].isalpha():
        text = line.decode("utf-8", errors="replace")
        c = CTIME.match(text)
        if c:
            wall = plausible_wall(ctime_wall(c))
            if wall is None:
                diags.append(Diagnostic(source, "unreadable ctime stamp", lineno))
            lv, fa = _level_of(c)
            return _Head(c["msg"], None, wall if wall is not None else syslog_wall_t, lv, fa)
        if text[:1] == "[":
            rd = RELTIME_DELTA.match(text)
            if rd:
                delta = float(rd["plus"] or rd["lt"])
                if syslog_wall_t is not None:
                    return _Head(rd["msg"], None, syslog_wall_t, level, facility)
                return _Head(rd["msg"], None, None, level, facility, delta=delta)
            ra = RELTIME_ANCHOR.match(text)
            if ra:
                wall = plausible_wall(reltime_anchor_wall(ra))
                if wall is None:
                    diags.append(Diagnostic(source, "unreadable reltime stamp", lineno))
                    return _Head(ra["msg"], None, None, level, facility, delta=0.0)
                return _Head(ra["msg"], None, wall, level, facility, anchor=True)
    if syslog_wall_t is not None:
        # journalctl -k's kernel lines carry journald's clock only
        return _Head(line.decode("utf-8", errors="replace"), None, syslog_wall_t, level,
                     facility)
    if r is not None:
        return _Head(line.decode("utf-8", errors="replace"), None, None, level, facility)
    return None


def _level_of(m: re.Match) -> tuple[int | None, int | None]:
    level = facility = None
    lvl, fac = m.group("lvl"), m.group("fac")
    if lvl is not None:
        lvl = lvl.decode() if isinstance(lvl, bytes) else lvl
        fac = fac.decode() if isinstance(fac, bytes) else fac
        level, facility = _LEVELS.get(lvl), _FACILITIES.get(fac)
    prio = m.group("prio")
    if prio is not None:
        p = int(prio)
        level, facility = p & 7, p >> 3
    return level, facility
