"""The ring's stacks for a window as `perf script` text on the wall clock (the form
`perf script` prints for `perf record -k CLOCK_REALTIME`), one file per ring chunk, so any
machine reads them without perf or the original binaries."""

from __future__ import annotations

from collections.abc import Iterator

from corescope.evidence.store import StoreEvidence
from corescope.model.common import Diagnostic
from corescope.model.profiles import StackSample
from corescope.store import profiles as ring


def script_text(rows: list[tuple[StackSample, float]]) -> str:
    """perf script's default layout: `comm pid/tid [cpu] time: event:` then one frame per
    line (`ip symbol (dso)`), a blank line after each sample."""
    out: list[str] = []
    for s, wall in rows:
        cpu = f" [{s.cpu:03d}]" if s.cpu is not None else ""
        out.append(f"{s.comm} {s.pid}/{s.tid}{cpu} {wall:.6f}: 1 {s.event}:")
        for f in s.frames:
            ip = "ffffffffffffffff" if f.kernel else "0"
            if f.inlined:  # perf prints no dso for an inlined frame
                out.append(f"\t{ip} {f.symbol} (inlined)")
                continue
            dso = f.dso or ("[kernel.kallsyms]" if f.kernel else "[unknown]")
            out.append(f"\t{ip} {f.symbol} ({dso})")
        out.append("")
    return "\n".join(out) + ("\n" if out else "")


def chunk_scripts(ev: StoreEvidence, lo: float, hi: float
                  ) -> Iterator[tuple[str, str, int, str]]:
    """(file name, text, samples, note) per ring chunk overlapping [lo, hi]."""
    for chunk in ring.chunks_overlapping(ev.store, lo, hi):
        a, b = max(lo, chunk.wall_start), min(hi, chunk.wall_end)
        diags: list[Diagnostic] = []
        got = list(ev.stacks(a, b, None, diags))
        rows = [(s, wall) for s, wall in got if wall is not None]
        note = f"ring chunk {chunk.id}, {chunk.hz} Hz, wall-clock times"
        if len(rows) < len(got):  # folded stacks: no time to place them on the wall clock
            note += f"; {len(got) - len(rows)} folded samples without times left out"
        if diags:
            note += "; " + "; ".join(str(d) for d in diags[:3])
        yield f"chunk-{int(a)}-{chunk.id}.perf-script.txt", script_text(rows), len(rows), note
