"""corescope's own files, as `corescope capture` writes them: the exact NDJSON records
(`corescope_native`, see native_codec) and the bundle's `manifest.json`
(`corescope_manifest`), which names the human-readable copies that must not be imported a
second time."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from corescope.sources.artifacts import native_codec as native
from corescope.sources.artifacts.base import Parsed
from corescope.sources.artifacts.dates import EPOCH_MAX
from corescope.sources.artifacts.native_codec import FORMAT

KINDS = ("corescope_native", "corescope_manifest")


@dataclass
class Manifest:
    """A bundle's manifest: sha256 of each human-readable copy → the exact file it copies."""

    copies: dict[str, str] = field(default_factory=dict)
    window: tuple[float, float] | None = None


def sniff(head: str) -> str | None:
    if native.sniff(head) is not None:
        return "corescope_native"
    start = head.lstrip()[:400]
    if start.startswith("{") and f'"format": "{FORMAT}"' in start:
        return "corescope_manifest"
    return None


def parse(data: bytes, kind: str, source: str) -> Parsed:
    p = Parsed(kind, source)
    text = data.decode("utf-8", errors="replace")
    if kind == "corescope_manifest":
        return _manifest(text, p)
    n = native.parse(text, source)
    p.diagnostics += n.diagnostics[:200]
    p.samples = n.samples  # the importer's own sample writer keeps one source per stretch
    n.samples = []
    p.extra = n
    p.extra_records = n.records()
    times = ([e.time for e in n.events] + [c.t for c in n.censuses] + [r.t for r in n.restarts]
             + [t for t, _ in n.irq_maps] + [c.t for c in n.churn])
    p.extra_span = (min(times), max(times)) if times else None
    return p


def _manifest(text: str, p: Parsed) -> Parsed:
    m = Manifest()
    try:
        doc = json.loads(text)
        files = doc.get("files", []) if isinstance(doc, dict) else []
        for f in files:
            if isinstance(f, dict) and f.get("copy_of") and isinstance(f.get("sha256"), str):
                m.copies[f["sha256"]] = str(f["copy_of"])
        w = doc.get("window") if isinstance(doc, dict) else None
        if isinstance(w, dict):
            start, end = float(w["start"]), float(w["end"])
            # the window becomes analyze's: never before 1970, past 2100 or backwards
            if not 0 <= start <= end <= EPOCH_MAX:
                raise ValueError(f"window {start!r} to {end!r} is not a time span")
            m.window = (start, end)
    except (ValueError, TypeError, KeyError, RecursionError, OverflowError) as exc:
        p.diag(f"unreadable manifest: {exc}")
    p.extra = m
    p.undated = True
    return p
