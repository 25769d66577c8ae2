"""Which header fields a `perf script` text prints, decided once per file.

`perf script -F` drops any of the header's fields, and perf prints those it keeps in one fixed
order (builtin-script.c, perf_sample__fprintf_start then the period and the event):

    comm  pid/tid (or one of them)  [cpu]  secs.usecs:  period  event:

comm as `%s ` (`%16s ` without callchains), pid and tid `%5d` (`%5d/%-5d` both), the cpu as
`[%03d]`, the period `%10` and the event name right-aligned to the longest one, then `: `.
What is left out leaves no mark, so one header line can be read several ways (`python 3 ` is
comm `python 3`, or comm `python` and tid 3; a lone number may be a tid or a period). A file
is written with one field list, so the layout is settled from its first record headers (a
header is the line before a record's first tab-indented frame line), and every line is then
read by that one layout's pattern.

The layouts the original parser read (comm, a pid or tid, and a time or an event) keep its
pattern, `perf_script.HEADER`, which also reads headers with tracepoint data after them,
and one file of several such layouts; every other layout gets a pattern of its own,
anchored at both ends of the line.
"""

from __future__ import annotations

import functools
import itertools
import re
from collections.abc import Iterable
from dataclasses import dataclass, field

# how many lines of a file's start, and how many of its record headers, settle the layout
INFER_LINES = 4000
INFER_HEADERS = 64
_SIDEBAND = "PERF_RECORD_"
# a callchain line as perf prints it: a tab, the address right-aligned in 16 columns, a blank
FRAME_LINE = re.compile(r"\t(?=[ 0-9a-fA-F]{16} )[ ]*[0-9a-fA-F]{1,16} ")
# the width of perf's tid and period columns: a lone number printed wider than a tid can
# be (`%5d`, or the number's own width) is a period (`%10`)
_PERIOD_WIDTH = 10
# a comm whose first word is shaped like another field (a number, `pid/tid`, `[cpu]`, a
# time, an event name) is that field of a layout without comm
_FIELD_WORD = re.compile(r"-?\d+(?:/-?\d+)?|\[\d+\]|\d+\.\d+:?|\S+:")


def _comm_ok(comm: str | None) -> bool:
    return comm is None or not _FIELD_WORD.fullmatch(comm.split(None, 1)[0] if comm else "")


@dataclass(frozen=True)
class Layout:
    """The header fields present: `ids` 0 (no pid or tid), 1 (one number: the pid or the
    tid, which perf prints alike) or 2 (`pid/tid`). `generic`: read by the original
    flexible pattern (perf_script.HEADER) rather than by this layout's own."""

    comm: bool
    ids: int
    cpu: bool
    time: bool
    period: bool
    event: bool
    generic: bool = False
    header: re.Pattern[str] = field(compare=False, repr=False, default=re.compile(""))
    lines: re.Pattern[str] = field(compare=False, repr=False, default=re.compile(""))

    @property
    def empty(self) -> bool:
        """`-F ip,sym`: every header line is empty."""
        return not (self.comm or self.ids or self.cpu or self.time or self.period
                    or self.event)

    @property
    def blank_start(self) -> bool:
        """Whether a header may start with blanks (no comm: perf right-aligns numbers)."""
        return not self.comm and not self.generic

    @property
    def lone_number(self) -> bool:
        """One bare number with no cpu or time beside it: a tid or a period alike."""
        return not (self.cpu or self.time) and (self.ids == 1) != self.period

    def missing(self) -> list[str]:
        """The fields this layout leaves out, as `-F` names them."""
        if self.generic:
            return []
        have = {"comm": self.comm, "pid/tid": bool(self.ids), "cpu": self.cpu,
                "time": self.time, "event": self.event}
        return [k for k, v in have.items() if not v]

    def describe(self) -> str:
        if self.generic:
            return "comm, pid/tid, [cpu], time or event"
        names = [n for n, on in (("comm", self.comm), ("pid/tid" if self.ids == 2 else
                 "tid", bool(self.ids)), ("cpu", self.cpu), ("time", self.time),
                 ("period", self.period), ("event", self.event)) if on]
        return ", ".join(names) or "none"


def _pattern(comm: bool, ids: int, cpu: bool, time: bool, period: bool, event: bool,
             ws: str) -> str:
    """The anchored pattern of one layout; `ws` is the blank class (`\\s`, or `[^\\S\\n]` for
    the many-lines form, which must never leave its line). The seven groups are always
    there, in HEADER's order (comm, pid, tid, cpu, time, period, event): an absent field's
    group can never match, so it reads None (and "" from findall)."""

    def never(*names: str) -> str:
        return "".join(f"(?P<{n}>(?!))?" for n in names)

    ids_text = {2: r"(?P<pid>-?\d+)/(?P<tid>-?\d+)", 1: r"(?P<pid>-?\d+)" + never("tid"),
                0: never("pid", "tid")}[ids]
    fields = [(comm, r"(?P<comm>\S.*?)" if comm else never("comm")),
              (ids > 0, ids_text),
              (cpu, r"\[(?P<cpu>\d+)\]" if cpu else never("cpu")),
              (time, r"(?P<time>\d+\.\d+):" if time else never("time")),
              (period, r"(?P<period>\d+)" if period else never("period")),
              (event, r"(?P<event>\S+?):" if event else never("event"))]
    body, first = "", True
    for present, text in fields:
        if present:
            body += ("" if first else f"{ws}+") + text
            first = False
        else:
            body += text
    lead = "" if comm else f"{ws}*"
    return f"^{lead}{body}{ws}*$"


def _make(comm: bool, ids: int, cpu: bool, time: bool, period: bool, event: bool) -> Layout:
    args = (comm, ids, cpu, time, period, event)
    return Layout(*args, header=re.compile(_pattern(*args, r"\s")),
                  lines=re.compile(_pattern(*args, r"[^\S\n]"), re.MULTILINE))


@functools.cache
def all_layouts() -> tuple[Layout, ...]:
    """Every layout, more fields first (a header that two layouts read goes to the fuller
    one). Built on first use: 192 patterns cost more to compile than a `flame` run on a
    file in the default format, which never needs them."""
    return tuple(sorted(
        (_make(*a) for a in itertools.product((True, False), (2, 1, 0), (True, False),
                                              (True, False), (True, False), (True, False))),
        key=lambda lay: -(lay.comm + bool(lay.ids) + lay.cpu + lay.time + lay.period
                          + lay.event)))


def __getattr__(name: str) -> object:
    # LAYOUTS and EMPTY stay module attributes, compiled when first read
    if name == "LAYOUTS":
        return all_layouts()
    if name == "EMPTY":
        return next(lay for lay in all_layouts() if lay.empty)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def generic(header: re.Pattern[str], lines: re.Pattern[str]) -> Layout:
    """The layout of the original pattern (comm, pid/tid, [cpu], time and/or event)."""
    return Layout(True, 1, True, True, True, True, generic=True, header=header, lines=lines)


def _in_generic_family(lay: Layout) -> bool:
    return lay.comm and lay.ids > 0 and (lay.time or lay.event)


def _fits(lay: Layout, m: re.Match[str]) -> bool:
    """A comm never starts like another field (a number, `pid/tid`, `[cpu]`, an event):
    that is a layout without comm. A lone number is read as a tid or as a period by its printed
    width."""
    if not _comm_ok(m["comm"]):
        return False
    if not lay.lone_number:
        return True
    g = "pid" if lay.ids else "period"
    start = m.start(g)
    digits = len(m[g])
    blanks = start - len(m.string[:start].rstrip())
    width = digits + (blanks if start == blanks else blanks - 1)
    wide = width >= _PERIOD_WIDTH
    return wide if lay.period else (not wide or width == digits)


def _starts(lines: list[str]) -> list[tuple[str, str]]:
    """(header, first frame line) of the records that begin among `lines` (line ends
    stripped): a line that is not a frame line, comes first or after a blank (or `#`
    comment) line, and is followed by a tab-indented line. Side-band lines are left out."""
    out: list[tuple[str, str]] = []
    for i in range(len(lines) - 1):
        head, nxt = lines[i].rstrip("\r"), lines[i + 1]
        if nxt[:1] != "\t" or head[:1] == "\t" or _SIDEBAND in head:
            continue
        if i and lines[i - 1].strip() and lines[i - 1][:1] != "#":
            continue
        out.append((head.rstrip(), nxt))
        if len(out) >= INFER_HEADERS:
            break
    return out


def headers(lines: Iterable[str]) -> list[str]:
    """The first record headers among the first INFER_LINES of `lines`."""
    return [h for h, _ in _starts(list(itertools.islice(lines, INFER_LINES)))]


def infer(heads: list[str], generic_layout: Layout) -> Layout:
    """The layout that reads the most of `heads`; `generic_layout` when it reads at least
    half of them (what the original pattern read stays read so: junk between the records
    must not make a looser layout, such as comm alone, win), or as many as any other."""
    if not heads:
        return generic_layout
    best, best_n = generic_layout, sum(
        1 for h in heads if (m := generic_layout.header.match(h)) and _comm_ok(m["comm"]))
    if 2 * best_n >= len(heads):
        return generic_layout
    for lay in all_layouts():
        n = 0
        for h in heads:
            m = lay.header.match(h)
            if m is not None and _fits(lay, m):
                n += 1
        if n > best_n:
            best, best_n = lay, n
    if best is not generic_layout and _in_generic_family(best) and best_n < len(heads):
        return generic_layout  # a family layout that does not read every header: as before
    return best


def looks_like(text: str, generic_layout: Layout) -> bool:
    """Whether `text` (a file's start) is perf script text with a layout only this module
    reads: record headers, each followed by a callchain line as perf prints it, all read by
    one layout."""
    lines = text.split("\n", INFER_LINES)[:INFER_LINES]
    if not text.endswith("\n"):
        lines = lines[:-1]  # the last line may be cut short
    starts = _starts(lines)
    if not starts or not all(FRAME_LINE.match(f) for _, f in starts):
        return False
    heads = [h for h, _ in starts]
    lay = infer(heads, generic_layout)
    return not lay.generic and all(
        (m := lay.header.match(h)) is not None and _fits(lay, m) for h in heads)
