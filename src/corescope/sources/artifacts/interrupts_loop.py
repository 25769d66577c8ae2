"""`/proc/interrupts` snapshots (one, or a `date; cat /proc/interrupts` loop) → the NIC queue
→ CPU map at each snapshot, with sources.interrupts' parser and map builder. Between two
snapshots the CPUs whose count rose serve the queue (basis "delta"); a lone snapshot says
which CPUs ever took it (basis "total"). Offline there is no sysfs: interfaces are known
only where the IRQ name carries them (`eth0-Tx-Rx-5`, `i40e-eth1-TxRx-3`), not for virtio or
mlx5 names."""

from __future__ import annotations

import re

from corescope.sources.artifacts.base import Parsed
from corescope.sources.artifacts.loops import CPU_HEADER, split_dated
from corescope.sources.interrupts import Interrupts, parse_proc_interrupts, queue_map

KINDS = ("proc_interrupts",)

_ROW = re.compile(r"^\s*\d+:\s+\d+", re.MULTILINE)


def sniff(head: str) -> str | None:
    if CPU_HEADER.search(head) and _ROW.search(head):
        return "proc_interrupts"
    return None


def parse(data: bytes, kind: str, source: str) -> Parsed:
    p = Parsed(kind, source)
    text = data.decode("utf-8", errors="replace")
    snaps: list[tuple[float | None, Interrupts]] = []
    for t, lineno, lines in split_dated(text):
        body = "\n".join(lines)
        if not CPU_HEADER.search(body):
            if any(ln.strip() for ln in lines):
                p.diag("block without a /proc/interrupts CPU header", lineno)
            continue
        irq = parse_proc_interrupts(body, source)
        for d in irq.diagnostics[:3]:
            p.diag(d.message, lineno)
        snaps.append((t, irq))
    if not snaps:
        p.diag("no /proc/interrupts snapshot could be read")
        return p
    if all(t is None for t, _ in snaps):
        p.undated = True
        if len(snaps) > 1:
            p.diag(f"{len(snaps)} snapshots without date lines: only the last two are used")
        prev = snaps[-2][1] if len(snaps) > 1 else None
        p.irq_maps.append((0.0, queue_map(snaps[-1][1], prev, {})))
    else:
        prev_irq: Interrupts | None = None
        for t, irq in snaps:
            if t is None:
                p.diag("a snapshot without its date line was skipped")
                continue
            p.irq_maps.append((t, queue_map(irq, prev_irq, {})))
            prev_irq = irq
    if not any(q for _, q in p.irq_maps):
        p.diag("no NIC queue interrupts in it (no names like eth0-Tx-Rx-N, virtioN-output.N, "
               "mlx5_compN)")
    return p
