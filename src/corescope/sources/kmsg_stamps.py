"""The less common stamps of saved kernel logs, and the noise of logs pasted from a terminal.

- `dmesg -T` / `--time-format ctime` in any locale: util-linux formats `[%a %b %e %H:%M:%S %Y]`
  with the reader's locale, so the weekday and month may be `mar.` and `févr.`, `Di` and `Feb`,
  `Вт` and `фев`, `火` and ` 2月`. The month is read from a table of common locales; the
  weekday is not needed.
- `dmesg -H` / `-e` / `--time-format reltime`: `[Feb 8 12:57]` (`%b%e %H:%M`, the reader's
  locale) when a new minute begins, `[  +0.005106]` (the time since the line before) otherwise;
  `--time-format delta`: `[<    0.002672>]`. Only a minute line is an absolute anchor.
- Pasted terminal noise: markdown `>` quoting, code fences, shell prompts and commands, a
  `grep` file name or line number before the stamp (`kern.log.1:Feb  8 ...`, `123:[  1.0]`).
"""

from __future__ import annotations

import re
import time

# month abbreviations as glibc's locales print %b, lower-cased, trailing dot dropped:
# en, fr, de, es, it, pt, nl, sv, pl, cs, tr, ru, uk
_MONTH_NAMES: dict[str, int] = {}
for _i, _names in enumerate((
    "jan janv januar ene gen sty led oca янв січ",
    "feb févr fév fev lut úno şub фев лют",
    "mar mars mär mrz mrt bře мар бер",
    "apr avr abr kwi dub nis апр кві",
    "may mai mag mei maj kvě мая май тра",
    "jun juin giu cze čvn haz июн чер",
    "jul juil lug lip čvc tem июл лип",
    "aug août ago sie srp ağu авг сер",
    "sep sept set wrz zář eyl сен вер",
    "oct okt ott out paź říj eki окт жов",
    "nov lis kas ноя лис",
    "dec déc dez dic gru pro ara дек гру",
), 1):
    for _n in _names.split():
        _MONTH_NAMES.setdefault(_n, _i)


def month_number(name: str) -> int | None:
    """1-12 for a month abbreviation in a common locale (`Feb`, `févr.`, `фев`, `2月`)."""
    n = name.strip().rstrip(".").lower()
    m = re.fullmatch(r"(\d{1,2})\s*[月월]", n)
    if m:
        v = int(m.group(1))
        return v if 1 <= v <= 12 else None
    if n in _MONTH_NAMES:
        return _MONTH_NAMES[n]
    return _MONTH_NAMES.get(n[:3]) or _MONTH_NAMES.get(n[:4])


_WORD = r"[^\W\d_]{1,12}\.?"
_MON = r"(?:\d{1,2}\s?[月월]|[^\W\d_]{2,12}\.?)"
# `[Tue Feb  8 12:57:41 2022]`, `[mar. févr.  8 12:57:41 2022]`, `[火  2月  8 12:57:41 2022]`,
# optionally after -r's `<6>` or -x's `kern  :info  : `, with -d's `< 0.000011>` inside
CTIME = re.compile(
    r"^(?:<(?P<prio>\d{1,4})>)?(?:(?P<fac>[a-z][a-z0-9]*)\s*:(?P<lvl>[a-z]+)\s*:\s)?"
    rf"\[\s*{_WORD}\s+(?P<mon>{_MON})\s*(?P<day>\d{{1,2}})\s+"
    r"(?P<h>\d\d):(?P<mi>\d\d):(?P<s>\d\d)\s+(?P<y>\d{4})(?:\s*<\s*\d{1,12}\.\d{1,9}\s*>)?\]"
    r"\s?(?P<msg>.*)$")
# dmesg -H / reltime: `[Feb 8 12:57] msg` (a new minute), `[  +0.005106] msg`; delta:
# `[<    0.002672>] msg`
RELTIME_ANCHOR = re.compile(
    rf"^\[(?P<mon>{_MON})\s*(?P<day>\d{{1,2}})\s(?P<h>\d\d):(?P<mi>\d\d)\]\s?(?P<msg>.*)$")
RELTIME_DELTA = re.compile(
    r"^\[\s*(?:\+\s*(?P<plus>\d{1,9}\.\d{1,9})|<\s*(?P<lt>\d{1,9}\.\d{1,9})\s*>)\s*\]\s?"
    r"(?P<msg>.*)$")


def guess_year(mo: int, d: int, h: int, mi: int, now: float | None = None) -> int:
    """A stamp printed without a year: the latest year that does not put it more than two
    days ahead of `now` (syslog's rule)."""
    now = time.time() if now is None else now
    year = time.localtime(now).tm_year
    for y in (year, year - 1):
        try:
            t = time.mktime((y, mo, d, h, mi, 0, 0, 0, -1))
        except (OverflowError, ValueError):
            continue
        if t <= now + 2 * 86400:
            return y
    return year - 1


def local_time(y: int, mo: int, d: int, h: int, mi: int, s: float = 0.0) -> float | None:
    """A local wall time printed by the node, or None when it is no date."""
    if not (1 <= mo <= 12 and 1 <= d <= 31 and h < 24 and mi < 60 and s < 61):
        return None
    try:
        whole = int(s)
        return time.mktime((y, mo, d, h, mi, whole, 0, 0, -1)) + (s - whole)
    except (OverflowError, ValueError):
        return None


def ctime_wall(m: re.Match[str]) -> float | None:
    mo = month_number(m["mon"])
    if mo is None:
        return None
    return local_time(int(m["y"]), mo, int(m["day"]), int(m["h"]), int(m["mi"]), int(m["s"]))


def reltime_anchor_wall(m: re.Match[str], now: float | None = None) -> float | None:
    mo = month_number(m["mon"])
    if mo is None:
        return None
    d, h, mi = int(m["day"]), int(m["h"]), int(m["mi"])
    return local_time(guess_year(mo, d, h, mi, now), mo, d, h, mi)


# --- pasted-terminal noise ---------------------------------------------------------------

# markdown quoting (`> `, `>> `), possibly indented
QUOTE = re.compile(r"^(?:[ \t]{0,3}>[ \t]?)+")
# a code fence, or a line journalctl/dmesg never print: `...`, `[...]`, `<snip>`
FENCE = re.compile(r"^\s*(?:```|~~~)\S*\s*$|^\s*(?:\.\.\.|\[\.\.\.\]|<snip>|\[snip\])\s*$")
# a shell prompt with or without a command: `[root@host ~]# dmesg`, `user@host:~$ sudo dmesg`,
# `$ journalctl -k`, `# dmesg | grep ena`, `PS C:\> ...` is not Linux and not matched
PROMPT = re.compile(
    r"^(?:\[[\w.@-]+(?: [^\]]{0,80})?\]|[\w.-]+@[\w.-]+(?::\S{0,80})?|\([\w.-]+\) ?[\w.@:~/-]*)"
    r"\s?[#$%>]\s?(?:\S.*)?$"
    r"|^[$#] (?:sudo |doas )?[\w./-]+(?: .*)?$")
# what a grep over several files (or with -n) puts before the line: `kern.log.1:`,
# `/var/log/messages-20220208:`, `123:`, `kern.log:123:`; only stripped where a stamp follows
GREP_PREFIX = re.compile(
    r"^(?:(?:[\w.+-]*/)*[\w.+-]*(?:\.log|log\.\d+|messages|syslog|kern|dmesg|journal)"
    r"[\w.+-]*:|(?:[\w.+-]*/)+[\w.+-]+:)?(?:\d{1,9}[:-])?"
    r"(?=\[|<\d|[A-Z][a-z]{2} [ \d]\d |\d{4}-\d\d-\d\d|[A-Z][a-z]{2} [A-Z][a-z]{2} )")


def unpaste(line: str) -> str | None:
    """The log line inside a pasted line, or None for terminal noise (prompts, commands,
    fences). Lines without such noise come back unchanged."""
    if line[:1] == ">" or line[:4].lstrip()[:1] == ">":
        line = QUOTE.sub("", line, count=1)
    if FENCE.match(line) or PROMPT.match(line):
        return None
    g = GREP_PREFIX.match(line)
    if g and g.end():
        line = line[g.end():]
    return line
