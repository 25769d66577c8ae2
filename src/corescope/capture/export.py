"""A window of the store → one bundle (`.tar.zst`, `.tar.gz` or `.tar`) of plain files.

Every kind of evidence is written twice where a common format exists: an exact native NDJSON
file (`*.ndjson`, see sources.artifacts.native_codec) and a human-readable copy that other
tools read (mpstat JSON, dmesg ISO, the census loop). `manifest.json` lists every file, says which
are copies of which (by SHA-256), and `analyze` imports each fact once."""

from __future__ import annotations

import hashlib
import io
import json
import platform
import socket
import tarfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from corescope.capture import compat
from corescope.evidence.store import StoreEvidence
from corescope.investigate.build import CONTEXT_S, PROFILE_BEFORE_S
from corescope.investigate.model import Window
from corescope.outfile import write_output
from corescope.sources.artifacts import native_codec as native
from corescope.sources.artifacts.native_codec import FORMAT
from corescope.store import census as census_store
from corescope.store import events as store_events

VERSION = 1


@dataclass
class BundleFile:
    name: str
    data: bytes
    kind: str
    records: int
    copy_of: str | None = None
    note: str = ""


@dataclass
class Bundle:
    window: Window
    files: list[BundleFile] = field(default_factory=list)

    def add(self, name: str, text: str, kind: str, records: int, copy_of: str | None = None,
            note: str = "") -> None:
        self.files.append(BundleFile(name, text.encode(), kind, records, copy_of, note))


def collect(ev: StoreEvidence, window: Window, correlation_window_s: float) -> Bundle:
    """What the investigation of `window` reads, and nothing more: the per-core record from
    the context before it, every event, census, churn, restart and interrupt map in it, the
    census state and stat-read history it starts from, and the stacks before it."""
    b = Bundle(window)
    lo = window.start - correlation_window_s - CONTEXT_S
    samples = ev.core_samples(lo, window.end)
    b.add("cores.ndjson", native.dump_cores(samples), "cores", len(samples))
    b.add("cores.mpstat.json", compat.mpstat_json(samples, socket.gethostname(),
                                                  platform.release(), platform.machine()),
          "mpstat_json", len(samples), copy_of="cores.ndjson",
          note="percentages rounded to 0.01 and times to the second, as mpstat prints them")
    events = ev.events(window.start, window.end)
    b.add("events.ndjson", native.dump_events(events), "events", len(events))
    b.add("events.dmesg-iso.txt", compat.dmesg_iso(events), "kernel_log", len(events),
          copy_of="events.ndjson")
    store = ev.store
    losses = [(t, n) for t, n in store.query(
        "SELECT time, lost FROM kmsg_log WHERE what = 'loss' AND time >= ? AND time <= ?",
        (window.start, window.end))]
    b.add("kmsg-losses.ndjson", native.dump_losses(losses), "losses", len(losses))
    # the census state at the window's end may come from before it: keep that one too
    state = ev.cgroup_state(window.end)
    censuses = ev.censuses(window.start, window.end)
    if state is not None and state.census is not None and state.census not in censuses:
        censuses = [state.census, *censuses]
    b.add("censuses.ndjson", native.dump_censuses(censuses), "censuses", len(censuses))
    b.add("census-loop.txt", compat.census_loop(censuses), "census_loop", len(censuses),
          copy_of="censuses.ndjson")
    churn = ev.churn(window.start, window.end)
    b.add("churn.ndjson", native.dump_churn(churn), "churn", len(churn))
    locs = [(state.census.t, loc) for loc in state.locations] \
        if state is not None and state.census is not None else []
    b.add("locations.ndjson", native.dump_locations(locs), "locations", len(locs))
    costs = census_store.read_stat_costs(store, float("-inf"), window.end)
    b.add("stat-costs.ndjson", native.dump_stat_costs(costs), "stat_costs", len(costs))
    restarts = ev.restarts(window.start, window.end).records
    b.add("restarts.ndjson", native.dump_restarts(restarts), "restarts", len(restarts))
    maps = _irq_maps(ev, window, [e.time for e in events])
    b.add("irq-maps.ndjson", native.dump_irq_maps(maps), "irq_maps", len(maps))
    _add_profiles(b, ev, window.start - PROFILE_BEFORE_S, window.end)
    return b


def _irq_maps(ev: StoreEvidence, window: Window, event_times: list[float]
              ) -> list[tuple[float, list[Any]]]:
    """Every snapshot stored in the window, and the one in force at each event."""
    times = {t for (t,) in ev.store.query(
        "SELECT DISTINCT time FROM irq_map WHERE time >= ? AND time <= ?",
        (window.start, window.end))}
    for t in event_times:
        row = ev.store.query("SELECT MAX(time) FROM irq_map WHERE time <= ?", (t,))[0][0]
        if row is None:
            row = ev.store.query("SELECT MIN(time) FROM irq_map WHERE time > ?", (t,))[0][0]
        if row is not None:
            times.add(row)
    return [(t, store_events.irq_map_at(ev.store, t)) for t in sorted(times)]


def _add_profiles(b: Bundle, ev: StoreEvidence, lo: float, hi: float) -> None:
    """The ring's stacks in [lo, hi] as `perf script` text, one file per chunk."""
    from corescope.capture.profiles import chunk_scripts

    for name, text, records, note in chunk_scripts(ev, lo, hi):
        b.add(f"profiles/{name}", text, "perf_script", records, note=note)


def manifest(b: Bundle, host: str) -> dict[str, Any]:
    digests = {f.name: hashlib.sha256(f.data).hexdigest() for f in b.files}
    return {
        "format": FORMAT, "version": VERSION, "host": host, "created": time.time(),
        "window": {"start": b.window.start, "end": b.window.end},
        "files": [{"path": f.name, "kind": f.kind, "records": f.records,
                   "sha256": digests[f.name], "copy_of": f.copy_of, "note": f.note}
                  for f in b.files],
    }


def write_bundle(b: Bundle, out: Path) -> int:
    """Write the bundle, 0600, compressed by the name's suffix; returns its size."""
    host = socket.gethostname()
    top = f"corescope-capture-{host}-{int(b.window.start)}"
    man = json.dumps(manifest(b, host), indent=1).encode()
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name, data in [("manifest.json", man), *((f.name, f.data) for f in b.files)]:
            info = tarfile.TarInfo(f"{top}/{name}")
            info.size, info.mode, info.mtime = len(data), 0o600, int(time.time())
            tar.addfile(info, io.BytesIO(data))
    payload = raw.getvalue()
    name = out.name
    if name.endswith((".tar.zst", ".tzst")):
        import zstandard

        payload = zstandard.ZstdCompressor(level=10).compress(payload)
    elif name.endswith((".tar.gz", ".tgz")):
        import gzip

        payload = gzip.compress(payload, 6)
    return write_output(out, payload)  # 0600, never through a link: stacks are private
