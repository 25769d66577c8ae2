"""`perf script` text (either clock; a folder of chunks is one artifact per file) and folded
stacks, imported into the profile ring as text chunks, so `flame` and `heatmap` (windows,
`--event`, `--diff`) read an analyzed store as they read a recording.

Registered before `perf_detect` (whose `sniff` it reuses): that module only recognises these
kinds. The parse is pure (it scans the text for samples, span, clock and CPUs); the writer,
`corescope.ingest.perf_write`, stores the text once the import has settled a boot time."""

from __future__ import annotations

from dataclasses import dataclass

from corescope.model.common import Diagnostic
from corescope.sources import perf_import, perf_script
from corescope.sources.artifacts.base import Parsed
from corescope.sources.artifacts.perf_detect import KINDS, sniff

__all__ = ["KINDS", "NO_CPU", "ProfileText", "parse", "sniff"]

NO_CPU = ("no CPU column (perf recorded one command, without -a, or -F left `cpu` out): the "
          "stacks are stored with the CPU unknown: `flame` and `heatmap` read them, but not "
          "with --cpu N, and the hot-core views cannot place them")


# what a sample reads when -F left its field out
_MISSING = {"comm": "the process shows as [unknown]",
            "pid/tid": "no pid or thread (read as -1)",
            "event": "the samples have no event name"}


@dataclass(frozen=True)
class ProfileText:
    """The payload for the writer: the text as read, and what the scan found in it."""

    data: bytes
    scanned: perf_import.Imported


def parse(data: bytes, kind: str, source: str) -> Parsed:
    p = Parsed(kind, source)
    text = data.decode("utf-8", "replace")
    step = perf_import.BLOCK
    diags: list[Diagnostic] = []
    got = perf_import.scan((text[i:i + step] for i in range(0, len(text), step)), kind,
                           source, diags)
    for d in diags:
        if d.message.endswith(perf_script.SIDEBAND_TAIL):
            p.notes.append(d.message)  # side-band lines skipped: nothing was lost
        else:
            p.diag(d.message, d.line)
    if got.samples == 0:
        p.diag("no samples")
        return p
    if kind == "perf_script" and (got.first is None or got.last is None):
        p.diag(perf_import.NO_TIME)
        return p
    if kind == "perf_script" and got.first == 0.0 and got.clock != "epoch":
        # no capture starts at the very boot: these are `perf script --reltime` or
        # `--deltatime` times, counted from the first sample (or the one before)
        p.diag("sample times start at 0 (`perf script --reltime` or `--deltatime`): they "
               "count from the first sample, not from boot, and cannot be placed in time; "
               "print it again without those options")
        return p
    if kind == "perf_script" and not got.cpus:
        p.notes.append(NO_CPU)
    if kind == "perf_script" and got.layout is not None and (
            gone := [f for f in got.layout.missing() if f not in ("cpu", "time")]):
        p.notes.append(f"`perf script -F` left out {', '.join(gone)}: " + "; ".join(
            _MISSING[f] for f in gone))
    p.extra = ProfileText(data, got)
    p.extra_records = got.samples
    p.extra_cpus = got.cpus
    if kind == "folded":
        p.undated = True  # no times: placed like an undated snapshot
    elif got.clock == "epoch" and got.first is not None and got.last is not None:
        p.extra_span = (got.first, got.last)
    return p
