"""Streaming parser of `perf script` text: lines in, stack samples out.

It reads the default output and the `-F comm,pid,tid,cpu,time,event,ip,sym,dso` form the
ring uses, with or without `+symoff`, `srcline` lines, `(inlined)` frames and several events,
and any `-F` list of header fields (see perf_layout: the layout is settled once per file).
A record is a header line (empty with `-F ip,sym`) followed by frame lines and ended by a
blank line. The parser never
raises: a line it cannot read becomes a Diagnostic and it resynchronises on the next header.
It holds one record at a time, so memory does not grow with the input.
"""

from __future__ import annotations

import itertools
import math
import re
import sys
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

from corescope.model.common import Diagnostic
from corescope.model.profiles import Batch, Frame, StackSample
from corescope.sources import perf_layout
from corescope.sources.perf_layout import INFER_LINES, Layout

SOURCE = "perf script"

# comm [pid/]tid [cpu] time: [period] event: [rest]
# comm may hold spaces ("Web Content"); event names may hold colons ("sched:sched_switch",
# "cpu-clock:ppp"), so the event is the shortest run of non-blanks ending in ": " or ":$".
# The cpu is absent when perf recorded one command without -a (or -F leaves it out), the
# event when -F leaves it out (`-F comm,pid,tid,time,ip,sym`): a header then ends at its
# `time:`, so a header needs a time or an event (the lookahead), and may have both. A period
# is read only before an event: without one, an address of decimal digits (a non-PIE binary
# without -g) is the inline frame's.
HEADER = re.compile(
    r"^(?P<comm>\S.*?)\s+(?P<pid>-?\d+)(?:/(?P<tid>-?\d+))?\s+"
    r"(?:\[(?P<cpu>\d+)\]\s+)?"
    r"(?=\d+\.\d+:(?:\s|$)|(?:\d+\s+)?\S+?:(?:\s|$))"
    r"(?:(?P<time>\d+\.\d+):(?:\s+|$))?"
    r"(?:(?:(?P<period>\d+)\s+)?(?P<event>\S+?):(?:\s|$))?"
)
# `perf script --show-task-events` (and --show-mmap-events, --show-switch-events, ...) put
# perf's side-band records between the samples, on header-shaped lines:
# `work.sh 17540 40390.876633: PERF_RECORD_FORK(17542:17542):(17540:17540)`. They are not
# samples (those at 0.000000 are the threads perf found running when it started).
SIDEBAND = "PERF_RECORD_"


def sideband_kind(m: re.Match[str]) -> str | None:
    """The side-band record a HEADER match is (`PERF_RECORD_COMM`, ...), or None for a
    sample."""
    at = m.start("event") if m["event"] is not None else m.end()
    if not m.string.startswith(SIDEBAND, at):
        return None
    end = at + len(SIDEBAND)
    while end < len(m.string) and (m.string[end].isalnum() or m.string[end] == "_"):
        end += 1
    return m.string[at:end]


SIDEBAND_TAIL = "are not samples: skipped"


def sideband_note(counts: Counter[str]) -> str:
    kinds = ", ".join(f"{k.removeprefix(SIDEBAND)} {n}" for k, n in counts.most_common())
    total = sum(counts.values())
    return (f"{total} perf side-band line{'s' if total != 1 else ''} ({kinds}; from "
            "--show-task-events and the like) " + SIDEBAND_TAIL)
_SYMOFF = re.compile(r"\+0x[0-9a-fA-F]+$")
# dsos in brackets that are not the kernel
_USER_BRACKETS = frozenset(
    {"[unknown]", "[vdso]", "[vsyscall]", "[vdso32]", "[vdsox32]", "[heap]", "[stack]",
     "[anon]", "[uprobes]", "[JIT]", "[jit]"}
)
_MAX_DIAGNOSTICS = 1000  # a garbage file must not turn into a garbage-sized list


def _is_kernel_dso(dso: str) -> bool:
    if dso.startswith("[kernel") or dso.startswith("[guest.kernel"):
        return True
    if dso[:1] == "/":
        # the kernel image with symbols (`/lib/modules/4.3.0/build/vmlinux`,
        # `/usr/lib/debug/boot/vmlinux-6.1.0-13-amd64`) and module files (`.../ena.ko`)
        base = dso.rsplit("/", 1)[-1]
        return base.startswith("vmlinux") or base.endswith((".ko", ".ko.xz", ".ko.zst",
                                                             ".ko.gz"))
    # kernel modules print as "[ena]", "[xfs]"
    return dso.startswith("[") and dso.endswith("]") and dso not in _USER_BRACKETS \
        and not dso.startswith("[JIT")


def _is_kernel_addr(addr: str) -> bool:
    # x86_64 and arm64 kernel text lives in the top half: ffff....
    return len(addr) == 16 and addr[:4].lower() == "ffff"


# Frames are interned process-wide: the same (symbol, dso, kernel, inlined) is one object,
# so stacks hash by identity and aggregate across chunks and files.
_INTERN: dict[tuple[str, str, bool, bool], Frame] = {}
_INTERN_MAX = 500_000


def intern_frame(symbol: str, dso: str, kernel: bool, inlined: bool) -> Frame:
    key = (symbol, dso, kernel, inlined)
    f = _INTERN.get(key)
    if f is None:
        f = Frame(symbol, dso, kernel, inlined)
        if len(_INTERN) < _INTERN_MAX:
            _INTERN[key] = f
    return f


class _FrameCache:
    """Frame lines and whole stacks repeat endlessly: parse each distinct text once. A line
    stands for no frame (a srcline line), one, or several (`a->b`: inlined frames). Lines
    that differ only in their address and `+0x` offset (most distinct lines do) name the
    same frames: a plain line (see _PLAIN_FRAME) is parsed once per symbol, dso and address
    half. `bodies`: a record's frame lines as one text, to its stack."""

    __slots__ = ("bodies", "lines", "plain", "stacks")

    def __init__(self) -> None:
        self.lines: dict[str, tuple[Frame, ...]] = {}
        self.stacks: dict[tuple[str, ...], tuple[Frame, ...]] = {}
        self.plain: dict[tuple[str, str, bool], tuple[Frame, ...]] = {}
        self.bodies: dict[str, tuple[Frame, ...]] = {}

    def line(self, text: str) -> tuple[Frame, ...]:
        """The frames of one line (leading blanks allowed: the key is the line as given)."""
        got = self.lines.get(text)
        if got is None:
            got = self._parse(text.strip())
            if len(self.lines) < _LINES_MAX:
                self.lines[text] = got
        return got

    def _parse(self, text: str) -> tuple[Frame, ...]:
        m = _PLAIN_FRAME.fullmatch(text)
        if m is None or "+0x" in m[2]:
            return _frame_line(text)
        addr, sym, _off, dso = m.groups()
        kaddr = _is_kernel_addr(addr)
        key = (sym, dso, kaddr)
        got = self.plain.get(key)
        if got is None:
            # the same reading as the whole line's: the offset is all the rest drops
            got = _parse_frame(f"{sym} ({dso})", kaddr)
            if len(self.plain) < _LINES_MAX:
                self.plain[key] = got
        return got

    def stack(self, texts: list[str]) -> tuple[Frame, ...]:
        key = tuple(texts)
        frames = self.stacks.get(key)
        if frames is None:
            out: list[Frame] = []
            for t in texts:
                out.extend(self.line(t))
            frames = tuple(out)
            if len(self.stacks) < 100_000:
                self.stacks[key] = frames
        return frames

    def body(self, body: str) -> tuple[Frame, ...]:
        """The stack of a record's frame lines (its text after the header line)."""
        frames = self.bodies.get(body)
        if frames is None:
            if body:
                lines = body.split("\n")
                got = list(map(self.lines.get, lines))
                for i, g in enumerate(got):
                    if g is None:
                        got[i] = self.line(lines[i])
                frames = tuple(itertools.chain.from_iterable(got))  # type: ignore[arg-type]
            else:
                frames = ()
            if len(self.bodies) < _BODY_CACHE_MAX:
                self.bodies[body] = frames
        return frames

    def bodies_of(self, bodies: list[str]) -> list[tuple[Frame, ...]]:
        """`body` of each: the known ones looked up in one pass, the new ones split into
        lines all together (one join, one split, one lookup pass) and cut back by their
        line counts."""
        known = self.bodies
        got = list(map(known.get, bodies))
        if None not in got:
            return got  # type: ignore[return-value]
        new = list(dict.fromkeys(b for b, g in zip(bodies, got, strict=True) if g is None))
        lines = "\n".join(new).split("\n")
        frames = list(map(self.lines.get, lines))
        if None in frames:
            frames = [self.line(ln) if f is None else f
                      for ln, f in zip(lines, frames, strict=True)]
        made: dict[str, tuple[Frame, ...]] = {}
        at = 0
        flat = itertools.chain.from_iterable
        for b in new:
            k = b.count("\n") + 1
            made[b] = tuple(flat(frames[at : at + k]))  # type: ignore[arg-type]
            at += k
        room = _BODY_CACHE_MAX - len(known)
        if room > 0:
            known.update(itertools.islice(made.items(), room))
        return [made[b] if g is None else g for b, g in zip(bodies, got, strict=True)]


_LINES_MAX = 200_000
_BODY_CACHE_MAX = 100_000
# A frame line with nothing for the careful reading (_frame_line) to decide: an address, one
# blank, a symbol without parentheses that starts and ends with a non-blank, perhaps its
# offset, and ` (dso)` without parentheses. Its frames depend only on the symbol, the dso and
# whether the address is a kernel one (a symbol that itself holds `+0x` goes the careful way:
# stripping one offset from it would be another reading).
_PLAIN_FRAME = re.compile(
    r"([0-9a-fA-F]+) ([^\s()](?:[^()]*?[^\s()])?)(\+0x[0-9a-fA-F]+)? \(([^()]*)\)")


def _frame_line(text: str) -> tuple[Frame, ...]:
    """The frames of `<addr> <sym>[+off] (<dso>)` without leading blanks (leaf first), or
    () if it is not a frame line (a srcline line, raw data)."""
    addr, _, rest = text.partition(" ")
    if not addr or not rest or addr.strip(_HEXCHARS):
        return ()
    return _parse_frame(rest, _is_kernel_addr(addr))


_HEXCHARS = "0123456789abcdefABCDEF"
_INLINED = " (inlined)"
# stackcollapse-perf.pl's tidying of a function name: everything from the first `(` is an
# argument list, except in a Go method (`net/http.(*Client).Do`) or `(anonymous namespace)`
_GO_METHOD = re.compile(r"\.\(.*\)\.")
_ARGS = re.compile(r"\((?!anonymous namespace\)).*", re.DOTALL)
_SPLICED = re.compile(r"(.+) \((\S*)\)$", re.DOTALL)


def _dso_start(rest: str) -> int:
    """Where the ` (dso)` that ends `rest` starts (the blank before its `(`), or -1. The
    parentheses are balanced from the end, so a dso that holds some keeps them:
    `(/memfd:sealed-91173221a7ea (deleted))`, `(/opt/My App (x86)/lib.so)`."""
    i = rest.rfind(" (")
    if i >= 0 and rest.find(")", i + 2) == len(rest) - 1:
        return i  # the common case: no parenthesis inside the dso (found in C)
    depth = 0
    for i in range(len(rest) - 1, -1, -1):
        c = rest[i]
        if c == ")":
            depth += 1
        elif c == "(":
            depth -= 1
            if depth == 0:
                return i - 1 if i and rest[i - 1] == " " else -1
    return -1


def tidy_symbol(sym: str) -> str:
    """A function name as stackcollapse-perf.pl shows it: no argument list, no quotes."""
    if "(" in sym and not _GO_METHOD.search(sym):
        sym = _ARGS.sub("", sym)
    if '"' in sym or "'" in sym:
        sym = sym.replace('"', "").replace("'", "")
    return sym


def _parse_frame(rest: str, kaddr: bool) -> tuple[Frame, ...]:
    rest = rest.strip()
    if rest.endswith(_INLINED):  # perf's own line for an inlined function
        sym = tidy_symbol(_SYMOFF.sub("", rest[: -len(_INLINED)].strip()))
        return (intern_frame(sym or "[unknown]", "", kaddr, True),)
    i = _dso_start(rest) if rest.endswith(")") else -1
    spliced = _SPLICED.match(rest) if i < 0 and rest.endswith(")") else None
    if i >= 0:
        sym, dso = rest[:i].strip(), rest[i + 2 : -1]
    elif rest.startswith("(") and rest.endswith(")"):  # no symbol printed: "(dso)"
        sym, dso = "[unknown]", rest[1:-1]
    elif spliced is not None:
        # parentheses that do not balance (a line cut and joined to another in an edited
        # file): stackcollapse-perf.pl's reading, the dso after the last ` (`
        sym, dso = spliced.group(1).strip(), spliced.group(2)
    elif " (" in rest and rest.count("(") > rest.count(")"):
        return ()  # the dso cut short (`start_thread (/lib/x86_64-linux-gnu`): no frame
    else:
        sym, dso = rest, ""  # -F without dso
    sym = _SYMOFF.sub("", sym) or "[unknown]"
    # a kernel address is the only clue where -F prints no dso; perf names the map of every
    # kernel address it resolves, so `[unknown]` there is garbage (`ffffffff00000002`)
    kernel = _is_kernel_dso(dso) or (kaddr and not dso)
    if "->" not in sym:
        return (intern_frame(tidy_symbol(sym), dso, kernel, False),)
    # `outer->inner`: perf names the functions inlined at this address; the first is the
    # frame itself, the others were inlined into it, each a frame leafward of the last
    parts = [tidy_symbol(p) or "[unknown]" for p in sym.split("->")]
    frames = [intern_frame(parts[0], dso, kernel, False)]
    frames += [intern_frame(p, dso, kernel, True) for p in parts[1:]]
    return tuple(reversed(frames))


def _header(line: str) -> dict[str, str | None] | None:
    m = HEADER.match(line)
    return m.groupdict() if m else None


# what a sample reads when -F leaves out comm, pid and tid: no process is known
NO_COMM = "[unknown]"
NO_PID = -1
_NO_HEAD: dict[str, str | None] = dict.fromkeys(
    ("comm", "pid", "tid", "cpu", "time", "period", "event"))


def _sample(head: dict[str, str | None], frames: tuple[Frame, ...]) -> StackSample | None:
    try:
        pid = int(head["pid"]) if head["pid"] else NO_PID
        tid = int(head["tid"]) if head["tid"] else pid
        cpu = int(head["cpu"]) if head["cpu"] is not None else None
        t = float(head["time"]) if head["time"] is not None else None
        period = int(head["period"]) if head["period"] else None
    except (TypeError, ValueError):
        return None
    comm = (head["comm"] or "").strip() or NO_COMM
    return StackSample(comm, pid, tid, cpu, t, head["event"] or "", frames,
                       period=period, pid_known=head["tid"] is not None)


def parse(
    lines: Iterable[str | bytes],
    diagnostics: list[Diagnostic] | None = None,
    source: str = SOURCE,
    first_line: int = 1,
    sideband: Counter[str] | None = None,
    layout: Layout | None = None,
) -> Iterator[StackSample]:
    """Yield one StackSample per record in `lines`; append what was skipped to diagnostics
    (line numbers count from `first_line`: the block parser hands over records from the
    middle of a file). Side-band lines are counted into `sideband` when given (the block
    parser sums them over its many calls and says so once), else noted here at the end.
    `layout`: the file's header fields, settled by the caller (the block parser, from the
    file's start); without one it is settled here from the first lines."""
    diags = diagnostics if diagnostics is not None else []
    if layout is None:
        it = iter(lines)
        start = list(itertools.islice(it, INFER_LINES))
        layout = layout_of(_text_line(x) for x in start)
        lines = itertools.chain(start, it)
    gen = layout.generic
    pattern = layout.header
    spaced = layout.blank_start and not layout.empty  # headers may start with blanks
    cache = _FrameCache()
    head: dict[str, str | None] | None = None
    head_no = 0
    texts: list[str] = []  # the record's frame lines, parsed at its end through the cache
    skipping = False  # inside an unreadable record: drop lines until the next blank line
    inline = False  # the record is one line with its frame on it (perf script without -g)
    lineno = first_line - 1
    dropped = 0
    side = sideband if sideband is not None else Counter()

    def note(msg: str, at: int) -> None:
        nonlocal dropped
        if len(diags) < _MAX_DIAGNOSTICS:
            diags.append(Diagnostic(source, msg, at))
        else:
            dropped += 1

    def emit() -> StackSample | None:
        assert head is not None
        s = _sample(head, cache.stack(texts))
        if s is None:
            note("unreadable numbers in record header", head_no)
        return s

    for raw in lines:
        lineno += 1
        if isinstance(raw, str):
            line = raw
        else:
            try:
                line = raw.decode("utf-8", "replace") if isinstance(raw, bytes | bytearray) \
                    else str(raw)
            except Exception:
                note("undecodable line", lineno)
                continue
        first = line[:1]
        flat = None
        if first == " " and gen:
            # without callchains perf pads comm to 16 columns: a header that starts with
            # blanks (a frame line never has a `[cpu]` or a `time:`)
            flat = HEADER.match(line.strip())
            if flat is not None and flat["time"] is None and flat["cpu"] is None:
                flat = None
        elif first == " " and spaced:
            # -F without comm: perf right-aligns the first number (`    0 51665.475970: `);
            # the layout's pattern reads the whole line, which no srcline line fills
            flat = pattern.match(line.rstrip("\r\n"))
        if (first == "\t" or first == " ") and flat is None:
            stripped = line.strip()
            if stripped:
                # a frame line (or a srcline line, which the frame parser turns down)
                if skipping:
                    continue
                if head is None:
                    if layout.empty:
                        # `-F ip,sym`: the blank line before was the record's empty header
                        head, head_no, texts, inline = _NO_HEAD, lineno - 1, [], False
                    else:
                        note("frame line outside a record", lineno)
                        skipping = True
                        continue
                texts.append(stripped)
                continue
        else:
            stripped = line.strip()
        if not stripped:
            if head is not None:
                s = emit()
                if s is not None:
                    yield s
            head, texts, skipping = None, [], False
            continue
        if stripped.startswith("#"):
            continue  # `perf script --header` comments
        # a header line
        m = flat if flat is not None else pattern.match(line.rstrip("\r\n"))
        if m is None and head is not None and not inline and cache.line(stripped):
            # a frame line printed without its indent (pasted, or cut by an editor):
            # stackcollapse-perf.pl reads `^\s*addr sym (dso)` too
            texts.append(stripped)
            continue
        if gen:
            kind = sideband_kind(m) if m is not None else None
        else:  # the layout's pattern reads a whole line: a side-band line is more
            kind = _sideband_in(stripped) if m is None else None
        if head is not None:
            if not (inline and len(texts) == 1) and kind is None:
                # no blank line before the next record: the previous one was cut short
                note("record truncated (no blank line before next header)", head_no)
            s = emit()
            if s is not None:
                yield s
            head, texts = None, []
        if kind is not None:
            side[kind] += 1  # a side-band line: no frames follow it
            skipping = False
            continue
        if m is None:
            note(f"unreadable line: {stripped[:80]!r}", lineno)
            skipping = True
            continue
        head, head_no, texts, skipping = m.groupdict(), lineno, [], False
        # `perf script` without callchains (or with -G) prints the sample's one frame on
        # the header line: `cpu-clock:      7fdcb90730be sym+0x19e (dso)`
        rest = m.string[m.end():].strip()
        inline = False
        if rest:
            inline = bool(cache.line(rest))  # the stack lookup at emit() finds it there
        if inline:
            texts.append(rest)
    if head is not None and not (inline and len(texts) == 1):
        note("input ended inside a record (no closing blank line)", head_no)
    if head is not None:
        s = emit()
        if s is not None:
            yield s
    if dropped:
        diags.append(Diagnostic(source, f"{dropped} more problems not listed"))
    if sideband is None and side:
        diags.append(Diagnostic(source, sideband_note(side)))


# Inside a well-formed record every line after the header is an indented, non-blank frame
# (or srcline) line; this finds any line that is not.
_NOT_A_FRAME_LINE = re.compile(r"\n(?![\t ]+\S)")

# HEADER for many lines at once (re.MULTILINE): the same groups, where HEADER's `\s` is any
# whitespace but a newline, so a match never leaves its line. On a single line the two are
# the same pattern (tests/unit/sources/test_perf_script_fast.py holds them to it).
_HEADER_LINES = re.compile(
    r"^(\S.*?)[^\S\n]+(-?\d+)(?:/(-?\d+))?[^\S\n]+"
    r"(?:\[(\d+)\][^\S\n]+)?"
    r"(?=\d+\.\d+:(?:[^\S\n]|$)|(?:\d+[^\S\n]+)?\S+?:(?:[^\S\n]|$))"
    r"(?:(\d+\.\d+):(?:[^\S\n]+|$))?"
    r"(?:(?:(\d+)[^\S\n]+)?(\S+?):(?:[^\S\n]|$))?",
    re.MULTILINE,
)
# _HEADER_LINES for the headers perf prints by default (`comm tid [cpu] time: period event:`,
# pid/tid and the period optional), anchored and without the lazy comm and the lookahead:
# it reads a block's headers in about half the time. Where it matches a line, _HEADER_LINES
# reads the same groups from it. _HEADER_LINES tries comms shortest first, each ending before
# a blank, and a comm can only be followed by a pid word (`-?\d+` or `-?\d+/-?\d+`, then a
# blank); this comm's words after the first are never such a word, so its comm is the first
# one _HEADER_LINES can try. From there every choice _HEADER_LINES makes (each optional field
# present first, the event shortest first) is the one made here, and its end asks less. A
# block with any other line (a comm with a number for a word, tracepoint data after the
# event) is read by _HEADER_LINES (tests/unit/sources/test_perf_script_fast.py holds the two
# to this).
_DEFAULT_LINES = re.compile(
    r"^(\S+(?:[^\S\n]+(?!-?\d+(?:/-?\d+)?[^\S\n])\S+)*)"
    r"[^\S\n]+(-?\d+)(?:/(-?\d+))?[^\S\n]+\[(\d+)\][^\S\n]+(\d+\.\d+):[^\S\n]+"
    r"(?:(\d+)[^\S\n]+)?(\S+?):[^\S\n]*$",
    re.MULTILINE,
)
# One pass over a block: at a blank line, the line after it (a record's header); at any
# other line break not followed by a frame line, "" (something the fast path does not read).
_SEPARATORS = re.compile(r"\n(?:\n([^\n]*)|(?![\t ]+\S))")
# the same where headers may start with blanks (-F without comm): a frame line starts with a
# tab (a line of blanks is a header there, or a srcline line: the careful path tells)
_SEPARATORS_TAB = re.compile(r"\n(?:\n([^\n]*)|(?!\t[\t ]*\S))")
_NOT_A_TAB_LINE = re.compile(r"\n(?!\t[\t ]*\S)")
# the layout of the default fields, the ring's, and the others the original pattern reads
GENERIC = perf_layout.generic(HEADER, _HEADER_LINES)
_SIDEBAND_KIND = re.compile(SIDEBAND + r"\w*")


def _sideband_in(text: str) -> str | None:
    """The side-band record named on a line no layout reads, if any."""
    m = _SIDEBAND_KIND.search(text)
    return m[0] if m else None


def _text_line(raw: str | bytes) -> str:
    if isinstance(raw, bytes | bytearray):
        raw = raw.decode("utf-8", "replace")
    return str(raw).rstrip("\r\n")


def layout_of(lines: Iterable[str]) -> Layout:
    """The header fields of a `perf script` text, from its first lines (ends stripped)."""
    return perf_layout.infer(perf_layout.headers(lines), GENERIC)


def layout_of_text(text: str) -> Layout:
    return layout_of(text.split("\n", INFER_LINES)[:INFER_LINES])


def _settle(blocks: Iterable[str], layout: Layout | None
            ) -> tuple[Iterable[str], Layout]:
    """The blocks again, and the layout their first INFER_LINES lines settle (unless given):
    the same lines `parse` looks at, so both paths read a file alike."""
    if layout is not None:
        return blocks, layout
    it = iter(blocks)
    held: list[str] = []
    lines = 0
    for block in it:
        held.append(block)
        # (a 1 MiB block holds thousands of lines in its first 256 KiB: count no further)
        lines += block.count("\n", 0, 1 << 18)
        if lines >= INFER_LINES:
            break
    return itertools.chain(held, it), layout_of_text(held[0] if len(held) == 1
                                                     else "".join(held))
# a header row: comm, pid, tid, cpu, time, period, event ("" where HEADER has None)
Row = tuple[str, str, str, str, str, str, str]


def _clean_rows(text: str, layout: Layout = GENERIC) -> list[Row] | None:
    """The header fields of every record in `text` (whole records, as parse_blocks cuts
    them) when each record is plain: a header line HEADER reads, then indented frame lines,
    records apart by exactly one blank line, no comments, no carriage returns. None for
    anything else, which the careful path then reads (and reports) line by line, as it does
    numbers too long for int(). Every test here runs in C: one regex pass over the block,
    one over its header lines."""
    spaced = layout.blank_start
    if not text or "\r" in text or text[0] in "\t\n#" or SIDEBAND in text or layout.empty \
            or (text[0] == " " and not spaced):
        return None  # (side-band lines: the careful path counts and skips them)
    nl = text.find("\n")
    heads = [text if nl < 0 else text[:nl]]
    if nl >= 0:
        found = (_SEPARATORS_TAB if spaced else _SEPARATORS).findall(text, nl)
        if "" in found:
            return None
        heads += found
    joined = "\n".join(heads)
    if "\n\t" in joined or ("\n " in joined and not spaced) or "\n#" in joined:
        return None  # a frame line or a comment right after a blank line
    rows: list[Row] = _DEFAULT_LINES.findall(joined) if layout.generic else []
    if len(rows) != len(heads):
        rows = layout.lines.findall(joined)
    if len(rows) != len(heads):
        return None  # a header line HEADER does not read
    if not _int_safe(rows, max(map(len, heads))):
        return None
    return rows


def _int_safe(rows: list[Row], longest: int) -> bool:
    """Whether int() takes every pid, tid, cpu and period of `rows`, whose longest header line has
    `longest` characters (Python refuses integers of more digits than
    sys.get_int_max_str_digits(): the careful path notes those)."""
    limit = sys.get_int_max_str_digits()  # 0: no limit
    return not limit or longest <= limit or not rows or max(
        len(x) for r in rows for x in (r[1], r[2], r[3], r[5])) <= limit


def _whole_records(blocks: Iterable[str]) -> Iterator[tuple[str, int, bool]]:
    """Blocks of any size → (text, line it starts on, whole): runs of whole records cut at
    their last blank line, then the rest (`whole` False), which may be cut short."""
    tail = ""
    base = 1  # the line number `tail` starts on
    for block in blocks:
        text = tail + block
        cut = text.rfind("\n\n")
        if cut < 0:
            if len(text) > _FLAT_FLUSH and (nl := _last_line_start(text)) > 0:
                # no blank line in megabytes: `perf script` without callchains (one line per
                # sample). The careful path reads it up to the last line that starts a
                # record, so the text does not grow with the file.
                yield text[:nl], base, False
                base += text.count("\n", 0, nl + 1)
                tail = text[nl + 1 :]
                continue
            tail = text  # no record ends in this block yet (bounded by one record's size)
            continue
        tail = text[cut + 2 :]
        yield text[:cut], base, True
        base += text.count("\n", 0, cut + 2)
    yield tail, base, False


_FLAT_FLUSH = 4 << 20


def _last_line_start(text: str) -> int:
    """The last line break followed by a line that is not a tab-indented frame line (-1)."""
    end = len(text)
    while (nl := text.rfind("\n", 0, end)) >= 0:
        if text[nl + 1 : nl + 2] not in ("\t", "\n", ""):
            return nl
        end = nl
    return -1


def parse_blocks(
    blocks: Iterable[str],
    diagnostics: list[Diagnostic] | None = None,
    source: str = SOURCE,
    cpu: int | None = None,
    times: tuple[float, float] | None = None,
    layout: Layout | None = None,
) -> Iterator[StackSample]:
    """The same samples as `parse`, from blocks of text of any size (1 MiB reads of perf
    script's pipe). Records are split on blank lines and a whole stack is looked up as one
    string, so the common case runs in C; a record that is not well formed goes through
    `parse` line by line, told the line it starts on so its notes name the right line.
    `cpu`, `times` ([lo, hi) on the text's clock): well-formed records of other CPUs, or
    timed outside the span, may be skipped before their stack is looked up (hints for
    speed: callers still filter what they get). `layout`: settled from the first lines
    unless given."""
    diags = diagnostics if diagnostics is not None else []
    for part in _parts(blocks, diags, source, cpu, times, layout):
        yield from part.samples() if isinstance(part, Batch) else part


def parse_batches(blocks: Iterable[str], diagnostics: list[Diagnostic] | None = None,
                  source: str = SOURCE, layout: Layout | None = None) -> Iterator[Batch]:
    """`parse_blocks`' samples (and notes) a run of records at a time, as columns: the
    well-formed blocks never become one object per sample (a column chunk and a summary
    take them so)."""
    diags = diagnostics if diagnostics is not None else []
    for part in _parts(blocks, diags, source, None, None, layout):
        got = part if isinstance(part, Batch) else Batch.of(part)
        if len(got):
            yield got


def _parts(blocks: Iterable[str], diags: list[Diagnostic], source: str, cpu: int | None,
           times: tuple[float, float] | None, layout: Layout | None
           ) -> Iterator[Batch | Iterator[StackSample]]:
    """The samples of each run of records: a Batch for a plain block, else the careful
    path's samples one by one (to be used up before the next part: they share the notes)."""
    blocks, lay = _settle(blocks, layout)
    cache = _FrameCache()
    want = None if cpu is None else str(int(cpu))
    side: Counter[str] = Counter()
    for text, base, whole in _whole_records(blocks):
        if whole:
            fast = _fast_batch(text, cache, want, times, lay)
            yield fast if fast is not None else _careful(text, base, cache, diags, source,
                                                         want, side, lay)
        elif text.strip():
            # input that ends without a blank line: the careful path says what was cut short
            yield parse(text.splitlines(), diags, source, base, side, lay)
    if side:
        diags.append(Diagnostic(source, sideband_note(side)))


def _fast_batch(text: str, cache: _FrameCache, cpu: str | None,
                times: tuple[float, float] | None = None,
                layout: Layout = GENERIC) -> Batch | None:
    """The samples of a block of plain records (see _clean_rows) of CPU `cpu` and timed in
    [lo, hi) when those are given, or None when the block is not plain. Built a column at a
    time (map over the header fields, the stacks looked up together): nothing in Python
    runs once per record."""
    rows = _clean_rows(text, layout)
    if rows is None:
        return None
    keep: list[int] | None = None
    if cpu is not None or times is not None:
        _, _, _, cpus, stamps, _, _ = zip(*rows, strict=True)
        want = None if cpu is None else cpu.lstrip("0")
        lo, hi = times if times is not None else (-math.inf, math.inf)
        keep = [i for i, (c, t) in enumerate(zip(cpus, stamps, strict=True))
                if (want is None or not c or c.lstrip("0") == want)
                and (times is None or (t and lo <= float(t) < hi))]
        if not keep:
            return Batch([], [], [], [], [], [], [], [], [])
    recs = text.split("\n\n")
    if len(recs) != len(rows):
        return None
    if keep is not None and len(keep) < len(rows):
        rows = [rows[i] for i in keep]
        recs = [recs[i] for i in keep]
    comms, pids, tids, cpus, stamps, periods, events = zip(*rows, strict=True)
    frames = cache.bodies_of([r.partition("\n")[2] for r in recs])
    comm_col = list(map(str.strip, comms))
    if "" in comm_col:
        comm_col = [c or NO_COMM for c in comm_col]
    pid_col: list[int] = [int(x) if x else NO_PID for x in pids] if "" in pids else \
        list(map(int, pids))
    if "" in tids:
        tid_col = [int(t) if t else p for t, p in zip(tids, pid_col, strict=True)]
    else:
        tid_col = list(map(int, tids))
    time_col: list[float | None] = [float(t) if t else None for t in stamps] \
        if "" in stamps else list(map(float, stamps))
    return Batch(comm_col, pid_col, tid_col, _ints(cpus), time_col, list(events),
                 frames, _ints(periods), list(map(bool, tids)))


def _ints(col: tuple[str, ...]) -> list[int | None]:
    """int() of each field, None for the fields the header leaves out ("")."""
    if "" in col:
        return [int(x) if x else None for x in col]
    return list(map(int, col))


def _careful(text: str, base: int, cache: _FrameCache, diags: list[Diagnostic],
             source: str, cpu: str | None = None, side: Counter[str] | None = None,
             layout: Layout = GENERIC) -> Iterator[StackSample]:
    """The samples of whole records that are not all plain, record by record (the line
    parser for any record the header pattern does not read)."""
    pos = 0  # where the current record starts in `text`
    counted, line = 0, base  # line numbers are counted lazily, only when a note needs one

    def line_at(at: int) -> int:
        nonlocal counted, line
        line += text.count("\n", counted, at)
        counted = at
        return line

    gen, spaced = layout.generic, layout.blank_start
    not_body = _NOT_A_FRAME_LINE if not spaced else _NOT_A_TAB_LINE
    for raw in text.split("\n\n"):
        start = pos
        pos += len(raw) + 2
        rec = raw.lstrip("\n")
        start += len(raw) - len(rec)
        rec = rec.rstrip("\n")
        if not rec.strip():  # whitespace alone is a blank line to the line parser too
            continue
        if layout.empty:
            # `-F ip,sym`: the record is its frame lines (its header, the empty line before)
            if rec[0] == "\t" and not _NOT_A_TAB_LINE.search(rec):
                yield StackSample(NO_COMM, NO_PID, NO_PID, None, None, "",
                                  cache.body(rec), pid_known=False)
            else:
                yield from parse([*rec.split("\n"), ""], diags, source, line_at(start), side,
                                 layout)
            continue
        nl = rec.find("\n")
        header = rec if nl < 0 else rec[:nl]
        m = None
        if header[:1] not in ("\t", "#", "") and (header[0] != " " or spaced) and (
            nl < 0 or not not_body.search(rec, nl)
        ):
            m = layout.header.match(header.rstrip("\r"))
            if gen and m is not None and sideband_kind(m) is not None:
                m = None  # the careful path counts side-band lines
        if m is None:
            yield from parse([*rec.split("\n"), ""], diags, source, line_at(start), side,
                             layout)
            continue
        if cpu is not None:
            c = m["cpu"]
            if c is not None and c.lstrip("0") != cpu.lstrip("0"):
                continue  # another CPU's record: not worth its stack
        frames = cache.body("" if nl < 0 else rec[nl + 1 :])
        s = _sample(m.groupdict(), frames)
        if s is None:
            if len(diags) < _MAX_DIAGNOSTICS:
                diags.append(Diagnostic(source, "unreadable numbers in record header",
                                        line_at(start)))
            continue
        yield s


@dataclass
class Summary:
    """What a `perf script` text holds, without its stacks: the import needs no more."""

    samples: int = 0
    first: float | None = None  # finite sample times only
    last: float | None = None
    cpus: set[int] = field(default_factory=set)
    events: Counter[str] = field(default_factory=Counter)
    # the header fields the text prints (None: not settled, as for a sum of samples)
    layout: Layout | None = field(default=None, compare=False)

    def add(self, s: StackSample) -> None:
        self.samples += s.count
        self.events[s.event] += s.count
        if s.cpu is not None:
            self.cpus.add(s.cpu)
        self._times([s.time] if s.time is not None else [])

    def add_rows(self, rows: list[Row]) -> None:
        if not rows:
            return
        _, _, _, cpus, times, _, events = zip(*rows, strict=True)
        self.samples += len(rows)
        self.events.update(events)
        self.cpus.update(int(c) for c in set(cpus) if c)
        self._times(list(map(float, filter(None, times))))

    def add_batch(self, b: Batch) -> None:
        self.samples += len(b)
        self.events.update(b.event)
        self.cpus.update(c for c in set(b.cpu) if c is not None)
        self._times([t for t in b.time if t is not None])

    def _times(self, ts: list[float]) -> None:
        if not ts:
            return
        lo, hi = min(ts), max(ts)  # never NaN: the header pattern reads digits only
        if math.isinf(hi):  # more digits than a float holds
            ts = [t for t in ts if math.isfinite(t)]
            if not ts:
                return
            lo, hi = min(ts), max(ts)
        if self.first is None or lo < self.first:
            self.first = lo
        if self.last is None or hi > self.last:
            self.last = hi


def summarize_blocks(blocks: Iterable[str], diagnostics: list[Diagnostic] | None = None,
                     source: str = SOURCE, sink: Callable[[Batch], object] | None = None
                     ) -> Summary:
    """What `parse_blocks` would yield, summed (samples, time span, CPUs, events) with the
    same notes, without building a stack: plain blocks are read from their header lines.
    With `sink`, the stacks are read too and every batch of samples handed to it: one pass
    for a caller that keeps them (an import into columns)."""
    diags = diagnostics if diagnostics is not None else []
    blocks, lay = _settle(blocks, None)
    got = Summary(layout=lay)
    if sink is not None:
        for batch in parse_batches(blocks, diags, source, lay):
            got.add_batch(batch)
            sink(batch)
        return got
    cache = _FrameCache()
    side: Counter[str] = Counter()
    for text, base, whole in _whole_records(blocks):
        if whole:
            rows = _clean_rows(text, lay)
            if rows is not None:
                got.add_rows(rows)
                continue
            for s in _careful(text, base, cache, diags, source, side=side, layout=lay):
                got.add(s)
        elif text.strip():
            for s in parse(text.splitlines(), diags, source, base, side, lay):
                got.add(s)
    if side:
        diags.append(Diagnostic(source, sideband_note(side)))
    return got


def parse_text(text: str | bytes) -> tuple[list[StackSample], list[Diagnostic]]:
    """Convenience for tests and small inputs."""
    diags: list[Diagnostic] = []
    if isinstance(text, bytes | bytearray):
        text = text.decode("utf-8", "replace")
    samples = list(parse(text.splitlines(), diags))
    return samples, diags
