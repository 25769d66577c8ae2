"""Writing imported `perf script` text and folded stacks into the profile ring, one text
chunk per artifact, through the ring's own API (store.profiles.add_text_chunk)."""

from __future__ import annotations

from corescope.ingest.write import WriteContext, Written
from corescope.model.profiles import NO_CLOCK, UNANCHORED
from corescope.sources import perf_import
from corescope.sources.artifacts.base import Parsed
from corescope.sources.artifacts.perf_profiles import ProfileText
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
    clockid, offset = perf_import.chunk_clock(got, ctx.boot_time)
    chunk = ring.add_text_chunk(store, pay.data, clockid=clockid, perf_start=got.first,
                                perf_end=got.last + perf_import.TICK, clock_offset=offset,
                                samples=got.samples, hz=got.hz)
    notes = []
    unanchored = clockid == UNANCHORED
    if unanchored:
        notes.append("perf's boot-relative timestamps and no boot time found: stored as "
                     "seconds since boot counted from 1970-01-01 (unanchored); pass "
                     "--boot-time (the node's `uptime -s`) to place them")
    elif got.clock == "boot":
        notes.append(f"perf's boot-relative timestamps placed by the boot time "
                     f"({ctx.boot_time_how or 'given'})")
    return Written(got.samples, (chunk.wall_start, chunk.wall_end), got.cpus, notes,
                   unanchored)
