"""Folded stacks: `comm;root;...;leaf N`, one distinct stack per line with its sample count
(Brendan Gregg's stackcollapse format, and what `flame --format folded` writes). They carry
no times and no CPUs, so they can only be read whole. Never raises: a line it cannot read
becomes a Diagnostic."""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator

from corescope.model.common import Diagnostic
from corescope.model.profiles import StackSample
from corescope.sources import perf_layout
from corescope.sources.perf_script import GENERIC, HEADER, intern_frame

SOURCE = "folded stacks"
_MAX_DIAGNOSTICS = 1000
EVENT = "folded"  # the event name folded samples count under
# stackcollapse's frame annotations: kernel, inlined, JIT
_KERNEL, _INLINED, _JIT = "_[k]", "_[i]", "_[j]"


def folded_line(line: str) -> tuple[str, int] | None:
    """(stack, count) of one folded line, or None if it is not one."""
    stack, sep, num = line.rstrip("\r\n").rpartition(" ")
    # isdecimal, not isdigit: int() refuses "²"; and no count past 10**15 samples (300 years
    # of 10 kHz on 10,000 CPUs) is real, nor fits the store's integers
    if (not sep or not stack or not num.isdecimal() or len(num) > 15
            or stack[:1].isspace()):
        return None
    return stack, int(num)


def _sample(stack: str, count: int) -> StackSample:
    parts = stack.split(";")
    comm = parts[0] or "[unknown]"
    frames = []
    for name in reversed(parts[1:]):  # folded is root first; samples are leaf first
        kernel = inlined = False
        if name.endswith(_KERNEL):
            name, kernel = name[: -len(_KERNEL)], True
        elif name.endswith(_INLINED):
            name, inlined = name[: -len(_INLINED)], True
        elif name.endswith(_JIT):
            name = name[: -len(_JIT)]
        frames.append(intern_frame(name or "[unknown]", "", kernel, inlined))
    return StackSample(comm, 0, 0, None, None, EVENT, tuple(frames), count)


def parse_blocks(blocks: Iterable[str], diagnostics: list[Diagnostic] | None = None,
                 source: str = SOURCE) -> Iterator[StackSample]:
    """One StackSample (with `count`) per folded line, from blocks of text of any size."""
    diags = diagnostics if diagnostics is not None else []
    tail = ""
    lineno = 0
    dropped = 0

    def lines() -> Iterator[str]:
        nonlocal tail
        for block in blocks:
            text = tail + block
            cut = text.rfind("\n")
            if cut < 0:
                tail = text
                continue
            tail = text[cut + 1 :]
            yield from text[:cut].split("\n")
        if tail:
            yield tail

    for line in lines():
        lineno += 1
        if not line.strip() or line.startswith("#"):
            continue
        got = folded_line(line)
        if got is None or got[1] == 0:
            if len(diags) < _MAX_DIAGNOSTICS:
                diags.append(Diagnostic(source, f"not a folded stack: {line.strip()[:80]!r}",
                                        lineno))
            else:
                dropped += 1
            continue
        yield _sample(*got)
    if dropped:
        diags.append(Diagnostic(source, f"{dropped} more problems not listed"))


def sniff(text: str) -> str | None:
    """"perf script", "folded" or None, from the start of an input."""
    lines = [ln for ln in text.split("\n")[:400] if ln.strip() and not ln.startswith("#")]
    if len(text) > 4096 and lines:
        lines = lines[:-1]  # the last line of a sample may be cut short
    if not lines:
        return None
    # lstrip: without callchains perf pads comm to 16 columns
    if HEADER.match(lines[0].lstrip()) and folded_line(lines[0]) is None:
        return "perf script"
    for head, nxt in itertools.pairwise(lines):
        # a record header followed by an indented frame line (there may be junk before)
        if nxt[:1] in ("\t", " ") and head[:1] not in ("\t", " ") and HEADER.match(head):
            return "perf script"
    if perf_layout.looks_like(text, GENERIC):
        return "perf script"  # -F without comm, pid or time and event: its own layout
    if all(folded_line(ln) is not None for ln in lines):
        return "folded"
    return None
