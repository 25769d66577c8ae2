"""Writing `perf script` text and folded stacks into the profile ring, one text chunk per
input, through the ring's own API (store.profiles): an artifact `analyze` parsed
(write_profile), or a file `flame --perf-script` streams in (import_input)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from corescope.ingest.write import WriteContext, Written
from corescope.model.common import Diagnostic
from corescope.model.profiles import NO_CLOCK, UNANCHORED
from corescope.sources import perf_import
from corescope.sources.artifacts.base import Parsed
from corescope.sources.artifacts.perf_profiles import ProfileText
from corescope.sources.perf_import import Imported, InputError
from corescope.store import profiles as ring
from corescope.store.db import Store


def write_profile(p: Parsed, store: Store, ctx: WriteContext) -> Written:
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
    streaming it once (compressed into the chunk as the scan counts it). boot_time (UTC
    epoch of the boot) anchors boot-relative timestamps."""
    diags = diags if diags is not None else []
    name = perf_import.input_name(source, name)
    try:
        opened = perf_import.open_input(source, name)
    except InputError as exc:
        return Imported(name, None, skipped=str(exc))
    with ring.ChunkWriter(store, "folded" if opened.kind == "folded" else "text") as w:

        def tee() -> Iterator[str]:
            for block in opened.blocks:
                w.write(block)
                yield block

        got = perf_import.scan(tee(), opened.kind, name, diags)
        diags.extend(opened.read_diags)
        if got.samples == 0:
            got.skipped = "no samples"
            return got
        span = perf_import.chunk_span(got, boot_time)
        got.chunk = w.commit(clockid=span.clockid, perf_start=span.perf_start,
                             perf_end=span.perf_end, clock_offset=span.clock_offset,
                             samples=got.samples, hz=got.hz)
    return got
