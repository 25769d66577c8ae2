"""Where `flame` and `heatmap` read stacks: the store's profile ring, or (--perf-script) the
user's saved perf script or folded files imported into a temporary store, which the same ring
query then reads; and the progress line a long query shows."""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from corescope.evidence import open as open_evidence
from corescope.evidence.base import Evidence
from corescope.evidence.profiles import RingProfiles
from corescope.model.common import Diagnostic
from corescope.render import term
from corescope.views.clitypes import CliContext, fail

# what every query reads the ring with (numpy, the chunks' columns), and what imports saved
# perf script input into the temporary store
QUERY_MODULES = ("corescope.evidence.ring_profile",)
OFFLINE_MODULES = ("corescope.ingest.perf_write", "corescope.sources.perf_import",
                   "corescope.store.db")


class Progress:
    """`chunk 3/40` on stderr, only when stderr is a terminal."""

    def __init__(self) -> None:
        self.on = sys.stderr.isatty()
        self.used = False

    def __call__(self, i: int, n: int, what: str) -> None:
        if self.on:
            self.used = True
            sys.stderr.write(f"\r\x1b[K{i}/{n} {term.clean(what[-60:])}")
            sys.stderr.flush()

    def done(self) -> None:
        if self.used:
            sys.stderr.write("\r\x1b[K")
            sys.stderr.flush()


def open_source(obj: CliContext, inputs: tuple[str, ...], boot_time: float | None,
                diags: list[Diagnostic], progress: Progress) -> RingProfiles:
    """The ring to read. Offline, the notes worth showing name the user's files, made while
    importing: the query's own notes are left out of `diags`."""
    if not inputs:
        src = open_evidence.ring_profiles(obj.store_dir, obj.runner)
        src.diags, src.progress = diags, progress
        return src
    from corescope.ingest.perf_write import import_input  # the writer: offline input only
    from corescope.sources import perf_import
    from corescope.store.db import Store

    tmp = tempfile.TemporaryDirectory(prefix="corescope-flame-")
    src = RingProfiles(Store.open(Path(tmp.name) / "store"), obj.runner, offline=True,
                       progress=progress, on_close=tmp.cleanup)
    skipped = []
    for path in perf_import.expand(inputs):
        got = import_input(src.store, path, boot_time=boot_time, diags=diags)
        if got.skipped:
            skipped.append(f"{got.name}: {got.skipped}")
            diags.append(Diagnostic(got.name, f"skipped: {got.skipped}"))
    chunks = src.all_chunks()
    if not chunks:
        src.close()
        fail("no samples in the --perf-script input" +
             (f" ({'; '.join(skipped[:3])})" if skipped else ""))
    timed = {c.anchored for c in chunks if c.format in ("text", "columns") and not c.untimed}
    if len(timed) > 1:
        diags.append(Diagnostic("--perf-script", "inputs mix wall-clock and boot-relative "
                                "times: give --boot-time to put them on one clock"))
    return src


def events_of(obj: CliContext, src: RingProfiles) -> Evidence:
    """The Evidence whose kernel events --event ID names: the ring's own store, or for
    offline input the store of --store."""
    if not src.offline:
        return src.evidence()
    return open_evidence.ring_profiles(obj.store_dir, obj.runner).evidence()
