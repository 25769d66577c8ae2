"""Recognises `perf script` text and folded stacks. Importing them into the profile ring is a
plug-in (see the package docstring): until one is registered before this module, a recognised
file is reported as such, not imported."""

from __future__ import annotations

import re

from corescope.sources import perf_layout, perf_script
from corescope.sources.artifacts.base import Parsed

KINDS = ("perf_script", "folded")

# `comm  pid[/tid]  [cpu]  secs.usecs: [period] event:` (comm may be right-aligned)
_HEADER = re.compile(r"^\s*\S.*?\s+-?\d+(?:/-?\d+)?\s+(?:\[\d+\]\s+)?\d+\.\d+:\s",
                     re.MULTILINE)
# a call-chain line: tab/space, hex address, symbol
_FRAME = re.compile(r"^[\t ]+[0-9a-fA-F]{1,16} \S", re.MULTILINE)
# folded: `frame;frame;frame count` (Brendan Gregg's stackcollapse output)
_FOLDED = re.compile(r"^[^\s;][^\n]*;[^\n]* \d+$")


# `perf script` without callchains (or -G): the sample's frame on its header line
# (without the event too: `-F comm,pid,tid,time,ip,sym`)
_INLINE = re.compile(r"^\s*\S.*?\s+-?\d+(?:/-?\d+)?\s+(?:\[\d+\]\s+)?\d+\.\d+:\s+"
                     r"(?:(?:\d+\s+)?\S+:\s+)?[0-9a-fA-F]{1,16} \S", re.MULTILINE)


# perf's side-band records (`perf script --show-task-events`, `--show-mmap-events`, ...),
# which can fill the first pages before any sample
_SIDEBAND = re.compile(r"^\s*\S.*?\s+-?\d+(?:/-?\d+)?\s+(?:\[\d+\]\s+)?(?:\d+\.\d+:\s+)?"
                       r"PERF_RECORD_[A-Z]", re.MULTILINE)


def sniff(head: str) -> str | None:
    if _HEADER.search(head) and _FRAME.search(head):
        return "perf_script"
    lines = head.count("\n") + 1
    if len(_INLINE.findall(head[:16384])) >= min(3, lines):
        return "perf_script"
    if len(_SIDEBAND.findall(head[:16384])) >= min(3, lines):
        return "perf_script"
    if perf_layout.looks_like(head, perf_script.GENERIC):
        return "perf_script"  # `-F` without comm, pid/tid, or both time and event
    rows = [ln for ln in head.splitlines()[:200] if ln.strip()]
    ok = [bool(_FOLDED.match(ln)) for ln in rows]
    if ok and (all(ok) or (len(ok) > 2 and all(ok[:-1]))):  # the last line may be cut
        return "folded"
    return None


def parse(data: bytes, kind: str, source: str) -> Parsed:
    p = Parsed(kind, source)
    p.diag(f"recognised as {kind}; no profile importer is installed in this build, so it was "
           "not imported (use `flame --perf-script` to read it directly)")
    return p
