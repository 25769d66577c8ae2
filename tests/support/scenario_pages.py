"""The public corpus's generated hours (corescope.lab.scenarios) as the pages see them:
generated, imported into a store by the artifact importer (what `analyze --store` does),
investigated, laid out.

Stacks: the importer does not bring `perf script` chunks into the profile ring yet, so the
Evidence here is the store's, with the scenario's perf chunks parsed once by corescope's
own perf script parser (wall times: the generated chunks use perf's CLOCK_REALTIME, or are
anchored at the scenario's boot time). Remove `ChunkStacks` once `analyze` imports them."""

from __future__ import annotations

import bisect
import json
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from corescope.evidence.base import Coverage, Span
from corescope.evidence.profile_query import file_samples
from corescope.evidence.store import StoreEvidence
from corescope.ingest import import_paths
from corescope.lab.scenarios import generate
from corescope.model.common import Diagnostic, SensorStatus
from corescope.model.profiles import StackSample
from corescope.store.db import Store


def chunk_rows(perf_files: list[Path], boot_time: float, realtime: bool
               ) -> tuple[list[float], list[StackSample]]:
    """The chunks' samples, parsed once, sorted by wall time."""
    rows = []
    for s in file_samples(sorted(perf_files)):
        if s.time is not None:
            rows.append((s.time if realtime else s.time + boot_time, s))
    rows.sort(key=lambda r: r[0])
    return [r[0] for r in rows], [r[1] for r in rows]


class ChunkStacks(StoreEvidence):
    """The store's evidence, with stacks from the scenario's perf chunks."""

    def __init__(self, store: Store, rows: tuple[list[float], list[StackSample]]) -> None:
        super().__init__(store)
        self._t, self._s = rows

    def stacks(self, t0: float, t1: float, cpu: int | None = None,
               diags: list[Diagnostic] | None = None) -> Iterator[tuple[StackSample, float]]:
        lo, hi = bisect.bisect_left(self._t, t0), bisect.bisect_left(self._t, t1)
        for i in range(lo, hi):
            s = self._s[i]
            if cpu is None or s.cpu == cpu:
                yield s, self._t[i]

    def statuses(self) -> list[SensorStatus]:
        out = [s for s in super().statuses() if s.name != "profile ring"]
        return [*out, SensorStatus("profile ring", True,
                                   f"{len(self._t)} samples from the scenario's perf chunks")]

    def coverage(self) -> Coverage:
        c = super().coverage()
        return replace(c, profiles=Span(self._t[0], self._t[-1]) if self._t else None)



@dataclass
class GeneratedHour:
    expected: dict[str, Any]
    directory: Path
    store_dir: Path

    rows: tuple[list[float], list[StackSample]] | None = None

    def evidence(self) -> ChunkStacks:
        if self.rows is None:
            exp = self.expected
            self.rows = chunk_rows(list((self.directory / "perf").glob("perf-*")),
                                   exp["boot_time"], exp["formats"]["perf_clock"] == "realtime")
        return ChunkStacks(Store.open(self.store_dir, create=False), self.rows)


def generated_hour(tmp: Path, kind: str = "zombie_chain", cpus: int = 96,
                   seed: int = 1) -> GeneratedHour:
    d, store_dir = tmp / "scenario", tmp / "store"
    exp = generate(kind, d, cpus=cpus, seed=seed)
    store = Store.open(store_dir, create=True)
    try:
        import_paths([d], store)
    finally:
        store.close()
    (tmp / "expected.json").write_text(json.dumps(exp))
    return GeneratedHour(exp, d, store_dir)


def page_of(hour: GeneratedHour) -> dict[str, Any]:
    from corescope.investigate import Window, investigate
    from corescope.views.report_pages import page_model

    ev = hour.evidence()
    try:
        w = hour.expected["window"]
        return page_model(ev, investigate(ev, Window(w["start"], w["end"])))
    finally:
        ev.close()
