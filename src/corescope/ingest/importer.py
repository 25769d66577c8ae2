"""Saved incident artifacts → the store: `import_paths(paths, store)`.

Two passes. First every file is read (files, directories recursively, tar bundles, with
transparent gzip/zstd/xz/bzip2), its kind detected from its content, and parsed; the clock
anchors the files carry are gathered (a boot time from /proc/stat's btime, a journal's realtime
and monotonic pair, the same kernel log saved with and without wall-clock stamps). Then the
anchors are settled once and everything is written through the store's own APIs
(`ingest.write`), so `cores`, `events`, `zombies`, `report`, `flame`, `heatmap` and `doctor`
read an import exactly as a recording. Each file gets one `FileReport`; a file that cannot be
read is reported as skipped with the reason and never fails the run. The import itself is
recorded in the store's `imports` table.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from corescope.ingest import blocks
from corescope.ingest.gather import Artifact, Limits, gather
from corescope.ingest.write import WriteContext, write_parsed
from corescope.model.common import Diagnostic
from corescope.model.events import KmsgRecord
from corescope.sources.artifacts import SNIFF_BYTES
from corescope.sources.artifacts.base import BootTime, Parsed
from corescope.sources.artifacts.content import looks_binary, module_for, sniff
from corescope.store.db import Store
from corescope.store.imports import ImportRow, imported_before, record_imports
from corescope.store.meta import ORIGIN, set_meta
from corescope.timeparse import iso

__all__ = ["FileReport", "IngestReport", "Limits", "import_paths"]

# Which source wins where two cover the same seconds: exact counters first (per-core load:
# /proc/stat before sysstat's percentages; softirqs: a /proc/softirqs loop before mpstat's
# SCPU rates). A capture bundle's exact files go first of all, so its human-readable copies
# are duplicates.
_SAMPLE_PRIORITY = {"corescope_native": -1, "proc_stat": 0, "softirqs_loop": 0,
                    "sadf_json": 1, "sadf_csv": 1, "sadf_ppc": 1, "sadf_xml": 1,
                    "mpstat_json": 2, "mpstat_text": 3}
# Boot-time anchors closer than this agree (btime and dmesg -T are whole seconds).
_AGREE_S = 2.0


@dataclass
class FileReport:
    """One file of an import: what it was, what was written, or why it was skipped."""

    path: str
    kind: str | None
    status: str  # "imported" | "partial" | "unanchored" | "skipped"
    records: int = 0
    span: tuple[float, float] | None = None  # UTC epoch seconds of what was written
    cpus: tuple[int, ...] = ()
    reason: str | None = None  # why skipped; or what was approximated or dropped
    diagnostics: list[str] = field(default_factory=list)
    codecs: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "kind": self.kind, "status": self.status,
                "records": self.records,
                "span": list(self.span) if self.span else None,
                "cpus": list(self.cpus), "reason": self.reason,
                "diagnostics": self.diagnostics, "compression": list(self.codecs)}


@dataclass
class IngestReport:
    files: list[FileReport]
    boot_time: float | None  # the boot time used for boot-relative clocks
    boot_time_how: str | None
    span: tuple[float, float] | None  # of everything written
    notes: list[str] = field(default_factory=list)

    @property
    def imported(self) -> list[FileReport]:
        return [f for f in self.files if f.status != "skipped"]

    @property
    def skipped(self) -> list[FileReport]:
        return [f for f in self.files if f.status == "skipped"]

    def to_json(self) -> dict[str, Any]:
        return {"files": [f.to_json() for f in self.files], "boot_time": self.boot_time,
                "boot_time_source": self.boot_time_how,
                "span": list(self.span) if self.span else None, "notes": self.notes}


def _unknown_text(data: bytes) -> str:
    """Why a text file was not recognised; a kernel log saved without timestamps is named."""
    from corescope.analysis.classify import classify

    lines = [ln for ln in data[:65536].decode("utf-8", errors="replace").splitlines()
             if ln.strip()][:500]
    if any(classify(ln.strip()).kind != "other" for ln in lines):
        return ("looks like a kernel log without timestamps (`dmesg --notime`?): it cannot be "
                "placed in time; save it with `dmesg` or `dmesg --time-format iso`")
    return "unknown format (no parser recognised its content)"


def _parse(a: Artifact) -> tuple[Parsed | None, FileReport]:
    """Pass 1 for one artifact (a big one: what settling the clocks needs, see blocks)."""
    rep = FileReport(a.label, None, "skipped", codecs=a.codecs)
    if a.data is None and a.content is None:
        rep.reason = a.error or "not read"
        return None, rep
    if a.content is None and not (a.data or b"").strip():
        rep.reason = "empty"
        return None, rep
    head = a.head(SNIFF_BYTES)
    kind = sniff(head)
    if kind is None:
        rep.reason = ("binary content, not a text artifact" if looks_binary(head[:4096])
                      else _unknown_text(head))
        return None, rep
    rep.kind = kind
    mod = module_for(kind)
    if mod is None:
        rep.reason = f"no parser registered for {kind}"
        return None, rep
    try:
        parsed: Parsed = (blocks.scan(a, kind) if a.content is not None
                          else mod.parse(a.data, kind, a.label))
    except Exception as exc:  # a parser bug must cost one file, never the import
        rep.reason = f"parser error ({type(exc).__name__}: {exc}); please report it"
        return None, rep
    if a.error:  # read, but cut short (a truncated compressed stream)
        parsed.diag(a.error)
    return parsed, rep


def _unique(records: list[KmsgRecord], wall: bool) -> dict[str, KmsgRecord]:
    """Records of one file stamped one way (wall clock, or since boot only), by message, for
    messages that occur once in it."""
    seen: dict[str, KmsgRecord | None] = {}
    for r in records:
        if (r.wall is not None) if wall else (r.wall is None and r.usec is not None):
            seen[r.message] = None if r.message in seen else r
    return {m: r for m, r in seen.items() if r is not None}


def _twin_boot_times(parsed: list[Parsed]) -> list[BootTime]:
    """The same kernel log saved twice, with wall-clock stamps (dmesg -T / iso) and with
    boot-relative ones: wall − since-boot of the same lines is the boot time."""
    walls = [_unique(p.kernel, True) for p in parsed if p.kernel]
    boots = [_unique(p.kernel, False) for p in parsed if p.kernel]
    offsets = [w[m].wall - r.usec / 1e6  # type: ignore[operator]
               for b in boots for w in walls for m, r in b.items() if m in w]
    if len(offsets) < 3:
        return []
    return [BootTime(statistics.median(offsets), f"the same kernel log with and without "
                     f"wall-clock stamps ({len(offsets)} lines)", 1.0)]


def _settle_boot(given: float | None, parsed: list[Parsed], notes: list[str]
                 ) -> tuple[float | None, str | None]:
    if given is not None:
        return given, "--boot-time"
    cands = [b for p in parsed for b in p.boot_times] + _twin_boot_times(parsed)
    if not cands:
        return None, None
    best = min(cands, key=lambda b: b.error_s)
    far = [b for b in cands if abs(b.epoch - best.epoch) > _AGREE_S + b.error_s]
    if far:
        notes.append(f"boot times disagree (a reboot, or artifacts from two nodes?): using "
                     f"{best.epoch:.0f} from {best.how}; others: " + "; ".join(
                         f"{b.epoch:.0f} from {b.how}" for b in far[:5]))
    return best.epoch, best.how


def _status(records: int, diags: list[Diagnostic], unanchored: bool, anchors: bool) -> str:
    if records == 0:
        return "imported" if anchors else "skipped"
    if unanchored:
        return "unanchored"
    return "partial" if diags else "imported"


def _skip_bundle_copies(entries: list[tuple[Parsed | None, FileReport, Artifact]],
                        hashes: dict[int, str]) -> None:
    """A capture bundle carries human-readable copies (mpstat JSON, dmesg) beside its exact
    files; its manifest names them by SHA-256, and each fact is imported once."""
    from corescope.sources.artifacts.native import Manifest

    copies: dict[str, str] = {}
    for p, _, _ in entries:
        if p is not None and isinstance(p.extra, Manifest):
            copies.update(p.extra.copies)
    if not copies:
        return
    for i, (p, rep, a) in enumerate(entries):
        of = copies.get(hashes.get(id(rep), ""))
        if p is not None and of is not None:
            rep.reason = f"a human-readable copy of {of} (bundle manifest): read from there"
            entries[i] = (None, rep, a)


def import_paths(paths: Sequence[str | Path], store: Store, *, boot_time: float | None = None,
                 limits: Limits | None = None, reimport: bool = False,
                 now: float | None = None) -> IngestReport:
    """Import saved artifacts under `paths` into `store`. Never raises for content: every
    file is reported, imported or skipped with its reason. `boot_time` (UTC epoch seconds)
    overrides any boot time found in the artifacts. Content already imported into this
    store (same SHA-256) is skipped unless `reimport`."""
    now = time.time() if now is None else now
    notes: list[str] = []
    entries: list[tuple[Parsed | None, FileReport, Artifact]] = []
    hashes: dict[int, str] = {}
    seen_hashes: dict[str, str] = {}
    for a in gather(list(paths), limits):
        parsed, rep = _parse(a)
        if parsed is not None:
            digest = blocks.digest(a)
            hashes[id(rep)] = digest
            if digest in seen_hashes:
                parsed, rep.reason = None, f"same content as {seen_hashes[digest]}"
            elif not reimport and (at := imported_before(store, digest)) is not None:
                parsed, rep.reason = None, f"already imported into this store at {iso(at)}"
            else:
                seen_hashes[digest] = a.label
        a.data = None  # parsed: the bytes are no longer needed
        if parsed is None:
            a.close()  # a big file is read again in pass 2: its file stays open till then
        entries.append((parsed, rep, a))
    _skip_bundle_copies(entries, hashes)

    parsed_all = [p for p, _, _ in entries if p is not None]
    boot, how = _settle_boot(boot_time, parsed_all, notes)
    dated = [s for p in parsed_all if not p.undated for s in [p.span()] if s]
    if boot is not None:
        dated += [(boot + r.usec / 1e6,) * 2 for p in parsed_all for r in p.kernel[-1:]
                  if r.usec is not None and r.wall is None]
    if dated:
        undated_t = max(s[1] for s in dated)
        undated_how = "the end of the imported time span"
    else:
        mtimes = [a.mtime for p, _, a in entries if p is not None and a.mtime]
        undated_t = max(mtimes) if mtimes else now
        undated_how = "the file modification time" if mtimes else "the import time"
    ctx = WriteContext(boot, how, undated_t,
                       dedupe_kernel=sum(1 for p in parsed_all if p.kernel) > 1)

    order = sorted(range(len(entries)), key=lambda i: _SAMPLE_PRIORITY.get(
        e.kind if (e := entries[i][0]) else "", 9))
    for i in order:
        parsed, rep, a = entries[i]
        if parsed is None:
            a.close()
            continue
        try:
            w = (blocks.write_big(parsed, a, store, ctx) if a.content is not None
                 else write_parsed(parsed, store, ctx))
        except Exception as exc:  # a store error on one file: report it, go on
            rep.reason = f"could not be written: {type(exc).__name__}: {exc}"
            continue
        finally:
            a.close()
        rep.records, rep.span, rep.cpus = w.records, w.span, w.cpus
        rep.diagnostics = [f"line {d.line}: {d.message}" if d.line else d.message
                           for d in parsed.diagnostics[:50]]
        rep.status = _status(w.records, parsed.diagnostics, w.unanchored,
                             bool(parsed.boot_times))
        extra = list(parsed.notes) + list(w.notes)
        if parsed.boot_times:
            b = parsed.boot_times[0]
            if how in {x.how for x in parsed.boot_times}:
                extra.append(f"gave the boot time ({how})")
            elif boot is not None:
                agree = abs(b.epoch - boot) <= _AGREE_S + b.error_s
                verdict = "agrees with" if agree else "differs from"
                extra.append(f"gave a boot time ({b.how}) that {verdict} the one used ({how})")
        if parsed.undated and w.records:
            extra.append(f"the snapshot has no time of its own: placed at {undated_how}")
        if w.records == 0 and not parsed.boot_times and not extra:
            extra.append(parsed.diagnostics[0].message if parsed.diagnostics
                         else "no records in it")
        rep.reason = "; ".join(extra) or None

    ctx.seen_kernel.close()
    reports = [rep for _, rep, _ in entries]
    if any(r.records for r in reports):
        # the store now describes the node the artifacts came from: no view mixes this
        # machine's live state into it
        set_meta(store, ORIGIN, "analyze")
    spans = [r.span for r in reports if r.span and r.status != "unanchored"]
    span = (min(s[0] for s in spans), max(s[1] for s in spans)) if spans else None
    record_imports(store, [ImportRow(r.path, r.kind, r.records, r.span, r.cpus, r.status,
                                     r.reason, hashes.get(id(r))) for r in reports], now)
    return IngestReport(reports, boot, how, span, notes)
