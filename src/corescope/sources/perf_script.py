"""Streaming parser of `perf script` text: lines in, stack samples out.

It reads the default output and the `-F comm,pid,tid,cpu,time,event,ip,sym,dso` form the
ring uses, with or without `+symoff`, `srcline` lines, `(inlined)` frames and several events.
A record is a header line followed by frame lines and ended by a blank line. The parser never
raises: a line it cannot read becomes a Diagnostic and it resynchronises on the next header.
It holds one record at a time, so memory does not grow with the input.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator

from corescope.model.common import Diagnostic
from corescope.model.profiles import Frame, StackSample

SOURCE = "perf script"

# comm [pid/]tid [cpu] time: [period] event: [rest]
# comm may hold spaces ("Web Content"); event names may hold colons ("sched:sched_switch",
# "cpu-clock:ppp"), so the event is the shortest run of non-blanks ending in ": " or ":$".
HEADER = re.compile(
    r"^(?P<comm>\S.*?)\s+(?P<pid>-?\d+)(?:/(?P<tid>-?\d+))?\s+"
    r"(?:\[(?P<cpu>\d+)\]\s+)?"
    r"(?:(?P<time>\d+\.\d+):\s+)?"
    r"(?:(?P<period>\d+)\s+)?"
    r"(?P<event>\S+?):(?:\s|$)"
)
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
    """Frame lines and whole stacks repeat endlessly: parse each distinct text once."""

    __slots__ = ("lines", "stacks")

    def __init__(self) -> None:
        self.lines: dict[str, Frame | None] = {}
        self.stacks: dict[tuple[str, ...], tuple[Frame, ...]] = {}

    def stack(self, texts: list[str]) -> tuple[Frame, ...]:
        key = tuple(texts)
        frames = self.stacks.get(key)
        if frames is None:
            out = []
            for t in texts:
                f = self.lines.get(t, _MISSING)
                if f is _MISSING:
                    f = _frame_line(t)
                    if len(self.lines) < 200_000:
                        self.lines[t] = f
                if f is not None:
                    out.append(f)
            frames = tuple(out)
            if len(self.stacks) < 100_000:
                self.stacks[key] = frames
        return frames


def _frame_line(text: str) -> Frame | None:
    """`<addr> <sym>[+off] (<dso>)` without leading blanks, or None if it is not a frame
    (a srcline line, raw data)."""
    addr, _, rest = text.partition(" ")
    if not addr or not rest or addr.strip(_HEXCHARS):
        return None
    return _parse_frame(rest, _is_kernel_addr(addr))


_MISSING: Frame | None = Frame("", "")  # sentinel, never returned
_HEXCHARS = "0123456789abcdefABCDEF"


def _parse_frame(rest: str, kaddr: bool) -> Frame | None:
    rest = rest.strip()
    if rest.endswith(" (inlined)"):
        sym = _SYMOFF.sub("", rest[: -len(" (inlined)")].strip())
        return intern_frame(sym or "[unknown]", "", kaddr, True)
    if rest.endswith(")"):
        i = rest.rfind(" (")
        if i >= 0:
            sym, dso = rest[:i].strip(), rest[i + 2 : -1]
        elif rest.startswith("("):  # no symbol printed: "(dso)"
            sym, dso = "[unknown]", rest[1:-1]
        else:
            sym, dso = rest, ""
    else:
        sym, dso = rest, ""  # -F without dso
    sym = _SYMOFF.sub("", sym) or "[unknown]"
    kernel = _is_kernel_dso(dso) or (kaddr and dso in ("", "[unknown]"))
    return intern_frame(sym, dso, kernel, False)


def _header(line: str) -> dict[str, str | None] | None:
    m = HEADER.match(line)
    return m.groupdict() if m else None


def _sample(head: dict[str, str | None], frames: tuple[Frame, ...]) -> StackSample | None:
    try:
        tid = int(head["tid"] or head["pid"] or 0)
        pid = int(head["pid"] or 0)
        cpu = int(head["cpu"]) if head["cpu"] is not None else None
        t = float(head["time"]) if head["time"] is not None else None
    except (TypeError, ValueError):
        return None
    comm = (head["comm"] or "").strip() or "[unknown]"
    return StackSample(comm, pid, tid, cpu, t, head["event"] or "", frames)


def parse(
    lines: Iterable[str | bytes],
    diagnostics: list[Diagnostic] | None = None,
    source: str = SOURCE,
    first_line: int = 1,
) -> Iterator[StackSample]:
    """Yield one StackSample per record in `lines`; append what was skipped to diagnostics
    (line numbers count from `first_line`: the block parser hands over records from the
    middle of a file)."""
    diags = diagnostics if diagnostics is not None else []
    cache = _FrameCache()
    head: dict[str, str | None] | None = None
    head_no = 0
    texts: list[str] = []  # the record's frame lines, parsed at its end through the cache
    skipping = False  # inside an unreadable record: drop lines until the next blank line
    lineno = first_line - 1
    dropped = 0

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
        if first == "\t" or first == " ":
            stripped = line.strip()
            if stripped:
                # a frame line (or a srcline line, which the frame parser turns down)
                if skipping:
                    continue
                if head is None:
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
        if head is not None:
            # no blank line before the next record: the previous one was cut short
            note("record truncated (no blank line before next header)", head_no)
            s = emit()
            if s is not None:
                yield s
            head, texts = None, []
        h = _header(line.rstrip("\r\n"))
        if h is None:
            note(f"unreadable line: {stripped[:80]!r}", lineno)
            skipping = True
            continue
        head, head_no, texts, skipping = h, lineno, [], False
    if head is not None:
        note("input ended inside a record (no closing blank line)", head_no)
        s = emit()
        if s is not None:
            yield s
    if dropped:
        diags.append(Diagnostic(source, f"{dropped} more problems not listed"))


# Inside a well-formed record every line after the header is an indented, non-blank frame
# (or srcline) line; this finds any line that is not.
_NOT_A_FRAME_LINE = re.compile(r"\n(?![\t ]+\S)")
_BODY_CACHE_MAX = 100_000


def parse_blocks(
    blocks: Iterable[str],
    diagnostics: list[Diagnostic] | None = None,
    source: str = SOURCE,
    cpu: int | None = None,
) -> Iterator[StackSample]:
    """The same samples as `parse`, from blocks of text of any size (1 MiB reads of perf
    script's pipe). Records are split on blank lines and a whole stack is looked up as one
    string, so the common case runs in C; a record that is not well formed goes through
    `parse` line by line, told the line it starts on so its notes name the right line.
    `cpu`: well-formed records of other CPUs are skipped before their stack is looked up
    (a hint for speed: callers still filter what the careful path returns)."""
    diags = diagnostics if diagnostics is not None else []
    cache = _FrameCache()
    bodies: dict[str, tuple[Frame, ...]] = {}
    tail = ""
    base = 1  # the line number `tail` starts on
    for block in blocks:
        text = tail + block
        cut = text.rfind("\n\n")
        if cut < 0:
            tail = text  # no record ends in this block yet (bounded by one record's size)
            continue
        tail = text[cut + 2 :]
        yield from _records(text[:cut], base, cache, bodies, diags, source,
                            None if cpu is None else str(int(cpu)))
        base += text.count("\n", 0, cut + 2)
    if tail.strip():
        # input that ends without a blank line: the careful path says what was cut short
        yield from parse(tail.splitlines(), diags, source, base)


def _records(text: str, base: int, cache: _FrameCache, bodies: dict[str, tuple[Frame, ...]],
             diags: list[Diagnostic], source: str, cpu: str | None = None
             ) -> Iterator[StackSample]:
    pos = 0  # where the current record starts in `text`
    counted, line = 0, base  # line numbers are counted lazily, only when a note needs one

    def line_at(at: int) -> int:
        nonlocal counted, line
        line += text.count("\n", counted, at)
        counted = at
        return line

    for raw in text.split("\n\n"):
        start = pos
        pos += len(raw) + 2
        rec = raw.lstrip("\n")
        start += len(raw) - len(rec)
        rec = rec.rstrip("\n")
        if not rec:
            continue
        nl = rec.find("\n")
        header = rec if nl < 0 else rec[:nl]
        m = None
        if header[:1] not in ("\t", " ", "#", "") and (
            nl < 0 or not _NOT_A_FRAME_LINE.search(rec, nl)
        ):
            m = HEADER.match(header.rstrip("\r"))
        if m is None:
            yield from parse([*rec.split("\n"), ""], diags, source, line_at(start))
            continue
        if cpu is not None:
            c = m["cpu"]
            if c is not None and c.lstrip("0") != cpu.lstrip("0"):
                continue  # another CPU's record: not worth its stack
        body = "" if nl < 0 else rec[nl + 1 :]
        frames = bodies.get(body)
        if frames is None:
            frames = cache.stack([ln.strip() for ln in body.split("\n")] if body else [])
            if len(bodies) < _BODY_CACHE_MAX:
                bodies[body] = frames
        s = _sample(m.groupdict(), frames)
        if s is None:
            if len(diags) < _MAX_DIAGNOSTICS:
                diags.append(Diagnostic(source, "unreadable numbers in record header",
                                        line_at(start)))
            continue
        yield s


def parse_text(text: str | bytes) -> tuple[list[StackSample], list[Diagnostic]]:
    """Convenience for tests and small inputs."""
    diags: list[Diagnostic] = []
    if isinstance(text, bytes | bytearray):
        text = text.decode("utf-8", "replace")
    samples = list(parse(text.splitlines(), diags))
    return samples, diags
