"""Big artifacts (content over gather.STREAM_BYTES) in bounded memory.

The import settles the boot time from every file before it writes any (a /proc/stat's btime
may come after the dmesg it places), so a big file is read twice: pass 1 keeps only what
settling needs (`summary`: boot times, span, diagnostics, the first lines for the twin-log
boot time), pass 2 reads it again and writes it (`write_big`). A kernel log in text form
(dmesg, kern.log, a /dev/kmsg dump) is read block by block both times, each block cut
before a line that starts a record, and written one block at a time; any other format is
parsed whole, one file at a time, and its records dropped between the passes.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator
from typing import BinaryIO

from corescope.analysis.boots import Boots
from corescope.ingest.gather import Artifact
from corescope.ingest.write import KernelWriter, WriteContext, Written, write_parsed
from corescope.model.events import KmsgRecord
from corescope.sources.artifacts import SNIFF_BYTES
from corescope.sources.artifacts.base import Parsed
from corescope.sources.artifacts.content import module_for
from corescope.sources.journal_text import text_form as journal_text_form
from corescope.store.db import Store

BLOCK_BYTES = 4 * 1024 * 1024
# the first records of a big kernel log kept between the passes: enough for the boot time
# of a log saved twice (with and without wall-clock stamps), which needs a few shared lines
TWIN_SAMPLE = 20_000
# journal JSON, json-seq, json-sse (as sources.kmsg_saved reads them): parsed whole
_JSON_START = re.compile(rb"^\s*(?:\{|\[\s*[{\]]|\x1e|data: \{)")
_CONTINUES = b" \t\r\n"  # a line starting so continues the record before it (or is blank)
# dmesg's relative stamps (-H, -e, --time-format reltime/delta) count from the lines before:
# such a log is read whole
_RELATIVE = re.compile(rb"^\[(?:\s*\+\d+\.\d+|<\s*\d+\.\d+>"
                       rb"|[A-Z][a-z]{2}\s?\d{1,2} \d\d:\d\d)\]",
                       re.MULTILINE)


def blocks(f: BinaryIO, size: int | None = None) -> Iterator[tuple[int, bytes]]:
    """(line number of its first line, block) over the whole of `f`; each block ends at a
    line end before a line that starts a record (not indented, not blank)."""
    f.seek(0)
    carry = b""
    line = 1
    while True:
        chunk = f.read(size or BLOCK_BYTES)
        buf = carry + chunk if carry else chunk
        if not chunk:
            if buf:
                yield line, buf
            return
        cut = _cut(buf)
        if cut <= 0:  # no record starts in it yet (one huge record): read on
            carry = buf
            continue
        block, carry = buf[:cut], buf[cut:]
        yield line, block
        line += block.count(b"\n")


def _cut(buf: bytes) -> int:
    pos = buf.rfind(b"\n", 0, len(buf) - 1)
    while pos >= 0:
        if buf[pos + 1] not in _CONTINUES:
            return pos + 1
        pos = buf.rfind(b"\n", 0, pos)
    return 0


def digest(a: Artifact) -> str:
    h = hashlib.sha256()
    if a.content is None:
        h.update(a.data or b"")
        return h.hexdigest()
    a.content.seek(0)
    while piece := a.content.read(1 << 20):
        h.update(piece)
    return h.hexdigest()


def streamable(kind: str, head: bytes) -> bool:
    """A kernel log in a line form (not journal JSON or export text): read block by block."""
    stripped = head.lstrip()
    return kind == "kernel_log" and not _JSON_START.match(stripped) \
        and not journal_text_form(stripped) and not _RELATIVE.search(head)


def summary(p: Parsed) -> Parsed:
    """What pass 1 keeps of a big file parsed whole: its records are read again in pass 2."""
    s = Parsed(p.kind, p.source, diagnostics=p.diagnostics, boot_times=p.boot_times,
               notes=p.notes, undated=p.undated)
    s.kernel = p.kernel[:TWIN_SAMPLE] + p.kernel[TWIN_SAMPLE:][-1:]
    s.boot_offsets = _boot_offsets(p.kernel)
    s.extra_span = p.span()
    return s


def scan(a: Artifact, kind: str) -> Parsed:
    """Pass 1 over a big file."""
    mod = module_for(kind)
    assert mod is not None and a.content is not None
    if not streamable(kind, a.head(SNIFF_BYTES)):
        return summary(mod.parse(a.read_all(), kind, a.label))
    s = Parsed(kind, a.label)
    walls: list[float] = []
    last = []
    boots = Boots()
    for first_line, block in blocks(a.content):
        p: Parsed = mod.parse(block, kind, a.label)
        for r in p.kernel:
            boots.feed(r)
        for d in p.diagnostics:
            s.diag(d.message, d.line + first_line - 1 if d.line else None)
        s.notes += [n for n in p.notes if n not in s.notes]
        if p.boot_times:  # the last boot's stamps: a log spanning a reboot ends in its boot
            s.boot_times = p.boot_times
        if len(s.kernel) < TWIN_SAMPLE:
            s.kernel += p.kernel[:TWIN_SAMPLE - len(s.kernel)]
        if p.kernel:
            last = p.kernel[-1:]
        w = [r.wall for r in p.kernel if r.wall is not None]
        if w:
            walls += [min(w), max(w)]
    if last and (not s.kernel or s.kernel[-1] is not last[0]):
        s.kernel += last
    s.extra_span = (min(walls), max(walls)) if walls else None
    s.boot_offsets = tuple(boots.offsets())
    return s


def _boot_offsets(records: list[KmsgRecord]) -> tuple[float | None, ...]:
    boots = Boots()
    for r in records:
        boots.feed(r)
    return tuple(boots.offsets())


def write_big(p: Parsed, a: Artifact, store: Store, ctx: WriteContext) -> Written:
    """Pass 2 over a big file: read again, written block by block (or whole, one file)."""
    mod = module_for(p.kind)
    assert mod is not None and a.content is not None
    if not streamable(p.kind, a.head(SNIFF_BYTES)):
        return write_parsed(mod.parse(a.read_all(), p.kind, a.label), store, ctx)
    w = KernelWriter(store, ctx, p.boot_times, p.boot_offsets)
    for _, block in blocks(a.content):
        w.add(mod.parse(block, p.kind, a.label).kernel)
    return w.finish()
