"""Writing `perf script` text and folded stacks into the profile ring, one text chunk per
input, through the ring's own API (store.profiles): an artifact `analyze` parsed
(write_profile), or a file `flame --perf-script` streams in (import_input)."""

from __future__ import annotations

import dataclasses
import math
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

from corescope.model.common import Diagnostic
from corescope.model.profiles import NO_CLOCK, UNANCHORED, ProfileChunk
from corescope.sources import perf_import, perf_script
from corescope.sources.artifacts.base import Parsed
from corescope.sources.artifacts.perf_profiles import ProfileText
from corescope.sources.perf_import import Imported, InputError
from corescope.store import profile_columns as pcols
from corescope.store import profiles as ring
from corescope.store.db import Store

if TYPE_CHECKING:  # the artifact importer's; `flame --perf-script` never loads it
    from corescope.ingest.write import WriteContext, Written


def write_profile(p: Parsed, store: Store, ctx: WriteContext) -> Written:
    from corescope.ingest.write import Written

    pay: ProfileText = p.extra
    got = pay.scanned
    if p.kind == "folded":
        t = ctx.undated_t
        ring.add_text_chunk(store, pay.data, clockid=NO_CLOCK, perf_start=t, perf_end=t,
                            clock_offset=0.0, samples=got.samples, fmt="folded")
        return Written(got.samples, (t, t), (), [
            "folded stacks have no times or CPUs: stored as one profile at that instant; "
            "`flame` reads it whole in any window that includes it (not with --cpu)"])
    assert got.first is not None and got.last is not None  # parse checked
    span = perf_import.chunk_span(got, ctx.boot_time)
    chunk = ring.add_text_chunk(store, pay.data, clockid=span.clockid,
                                perf_start=span.perf_start, perf_end=span.perf_end,
                                clock_offset=span.clock_offset, samples=got.samples, hz=got.hz)
    notes = []
    unanchored = span.clockid == UNANCHORED
    if unanchored:
        notes.append("perf's boot-relative timestamps and no boot time found: stored as "
                     "seconds since boot counted from 1970-01-01 (unanchored); pass "
                     "--boot-time (the node's `uptime -s`) to place them")
    elif got.clock == "boot":
        notes.append(f"perf's boot-relative timestamps placed by the boot time "
                     f"({ctx.boot_time_how or 'given'})")
    return Written(got.samples, (chunk.wall_start, chunk.wall_end), got.cpus, notes,
                   unanchored)


def import_input(store: Store, source: str | Path | BinaryIO, name: str | None = None,
                 boot_time: float | None = None,
                 diags: list[Diagnostic] | None = None) -> Imported:
    """Import one `perf script` or folded input into the store's ring as one chunk,
    streaming it once. boot_time (UTC epoch of the boot) anchors boot-relative timestamps.
    Timed `perf script` text becomes a column chunk, parsed in the pass that counts it (the
    query then reads no text: a `flame --perf-script` parses its file once); the rest (folded
    stacks, text without times) is compressed into a text chunk as it streams."""
    diags = diags if diags is not None else []
    name = perf_import.input_name(source, name)
    try:
        opened = perf_import.open_input(source, name)
    except InputError as exc:
        return Imported(name, None, skipped=str(exc))
    cols = pcols.ColumnsBuilder() if opened.kind == "perf_script" else None
    # a sample with a (finite) time seen: the columns will hold the input, not the text
    timed = [False]
    raw = [0]

    def keep(batch: perf_script.Batch) -> None:
        assert cols is not None
        cols.add_batch(batch)
        if not timed[0]:
            timed[0] = any(t is not None and math.isfinite(t) for t in batch.time)

    with ring.ChunkWriter(store, "folded" if opened.kind == "folded" else "text") as w:

        def tee() -> Iterator[str]:
            for block in opened.blocks:
                if timed[0]:
                    raw[0] += len(block) if block.isascii() else \
                        len(block.encode("utf-8", "surrogateescape"))
                else:
                    w.write(block)  # text is kept only until it proves to be timed
                yield block

        got = perf_import.scan(tee(), opened.kind, name, diags,
                               sink=keep if cols is not None else None)
        diags.extend(opened.read_diags)
        if got.samples == 0:
            got.skipped = "no samples"
            return got
        span = perf_import.chunk_span(got, boot_time)
        if cols is not None and timed[0]:
            got.chunk = _commit_columns(store, cols, span, got, w.raw_bytes + raw[0])
            return got
        got.chunk = w.commit(clockid=span.clockid, perf_start=span.perf_start,
                             perf_end=span.perf_end, clock_offset=span.clock_offset,
                             samples=got.samples, hz=got.hz)
    return got


def _commit_columns(store: Store, cols: pcols.ColumnsBuilder, span: perf_import.ChunkSpan,
                    got: Imported, raw_bytes: int) -> ProfileChunk:
    """Write the import's columns as a chunk of the ring and index it (the file first: a
    crash leaves an orphan file, which the ring sweeps, never a row without its file)."""
    rel = f"{ring.PROFILE_DIR}/import-{uuid.uuid4().hex[:16]}{pcols.SUFFIX}"
    path = ring.profile_dir(Path(store.directory)) / rel.rsplit("/", 1)[-1]
    size = cols.write(path)
    chunk = ProfileChunk(0, rel, span.clockid, span.perf_start, span.perf_end,
                         span.perf_start + span.clock_offset, span.perf_end + span.clock_offset,
                         span.clock_offset, size, raw_bytes, got.samples, got.hz)
    try:
        cid = ring.add_chunk(store, chunk)
    except BaseException:
        path.unlink(missing_ok=True)
        raise
    return dataclasses.replace(chunk, id=cid)
