"""Snapshots taken at the end of the hour: `/proc/interrupts` (the NIC queue → CPU map),
`/proc/stat` (its `btime` anchors every boot-relative clock) and `uptime -s`."""

from __future__ import annotations

import time
from pathlib import Path

from corescope.lab.scenarios.load import Totals
from corescope.lab.scenarios.out import write_text
from corescope.lab.scenarios.plan import Plan, rng_for

_ARCH_ROWS = (("NMI", "Non-maskable interrupts"), ("LOC", "Local timer interrupts"),
              ("SPU", "Spurious interrupts"), ("PMI", "Performance monitoring interrupts"),
              ("IWI", "IRQ work interrupts"), ("RTR", "APIC ICR read retries"),
              ("RES", "Rescheduling interrupts"), ("CAL", "Function call interrupts"),
              ("TLB", "TLB shootdowns"), ("TRM", "Thermal event interrupts"),
              ("THR", "Threshold APIC interrupts"), ("DFR", "Deferred Error APIC interrupts"),
              ("MCE", "Machine check exceptions"), ("MCP", "Machine check polls"))


def proc_interrupts(p: Plan) -> str:
    """`show_interrupts()` layout: `%*d: ` then `%10u ` per CPU, chip, hwirq-trigger, name."""
    r = rng_for(p.kind, p.seed, "interrupts")
    up = p.end - p.boot_time
    n = p.cpus
    prec = 3
    head = " " * (prec + 8) + "".join(f"CPU{c:<8d}" for c in range(n)) + "\n"
    rows: list[tuple[str, list[int], str]] = []
    rows.append(("  0", [40 if c == 0 else 0 for c in range(n)], " IO-APIC   2-edge      timer"))
    rows.append(("  4", [0] * n, " IO-APIC   4-edge      ttyS0"))
    irq = 24
    nvme = min(n, 64)
    rows.append((f"{irq:3d}", [0] * n, f" PCI-MSI {65536:d}-edge      nvme0q0"))
    irq += 1
    for q in range(1, nvme + 1):
        counts = [0] * n
        counts[(q - 1) % n] = int(up * r.uniform(0.2, 4))
        rows.append((f"{irq:3d}", counts, f" PCI-MSI {65536 + q:d}-edge      nvme0q{q}"))
        irq += 1
    mlx5 = p.nic_driver == "mlx5_core"
    mgmt = [0] * n
    mgmt[0] = int(up / 500)
    rows.append((f"{irq:3d}", mgmt, f" IR-PCI-MSI {4194304:d}-edge      mlx5_async0@pci:{p.bus}"
                 if mlx5 else f" PCI-MSI {81920:d}-edge      ena-mgmnt@pci:{p.bus}"))
    irq += 1
    for q in range(p.queues):
        counts = [0] * n
        cpus = p.queue_cpu[q]
        rate = r.uniform(300, 2500) * (6 if p.kind == "softirq_storm" and q in _hot(p) else 1)
        for c in cpus:
            counts[c] = int(up * rate / len(cpus))
        home = q % n
        if p.noise > 0.4 and home not in cpus:
            # irqbalance moved it here at some point: the old CPU keeps a residue
            counts[home] = int(up * r.uniform(1, 20))
        rows.append((f"{irq:3d}", counts,
                     f" IR-PCI-MSI {4194305 + q:d}-edge      mlx5_comp{q}@pci:{p.bus}" if mlx5
                     else f" PCI-MSI {81921 + q:d}-edge      {p.iface}-Tx-Rx-{q}"))
        irq += 1
    body = []
    for label, counts, tail in rows:
        body.append(f"{label}: " + "".join(f"{v:10d} " for v in counts) + tail + "\n")
    for label, text in _ARCH_ROWS:
        if label in ("LOC",):
            vals = [int(up * r.uniform(150, 1000)) for _ in range(n)]
        elif label in ("RES", "CAL", "TLB", "NMI", "PMI", "IWI"):
            vals = [int(up * r.uniform(0.5, 30)) for _ in range(n)]
        elif label == "MCP":
            vals = [int(up / 300) for _ in range(n)]
        else:
            vals = [0] * n
        body.append(f"{label}: " + "".join(f"{v:10d} " for v in vals) + f"  {text}\n")
    body.append(f"ERR: {0:10d}\nMIS: {0:10d}\n")
    return head + "".join(body)


def _hot(p: Plan) -> set[int]:
    return {q for q, cpus in p.queue_cpu.items() if p.hot_cpu in cpus}


def proc_stat(p: Plan, totals: Totals) -> str:
    """`/proc/stat` at the end of the hour (fields: user nice system idle iowait irq softirq
    steal guest guest_nice; our tick order is usr nice sys iowait irq soft steal idle)."""
    r = rng_for(p.kind, p.seed, "procstat")
    lines = []
    rows = totals.ticks
    s = [sum(t[k] for t in rows) for k in range(8)]

    def fmt(name: str, t: list[int]) -> str:
        return f"{name} {t[0]} {t[1]} {t[2]} {t[7]} {t[3]} {t[4]} {t[5]} {t[6]} 0 0"

    lines.append(fmt("cpu ", s))
    lines += [fmt(f"cpu{c}", t) for c, t in enumerate(rows)]
    up = p.end - p.boot_time
    intr = [int(up * r.uniform(50, 500)) for _ in range(64)]
    lines.append(f"intr {sum(intr)} " + " ".join(map(str, intr)))
    lines.append(f"ctxt {int(up * p.cpus * r.uniform(800, 3000))}")
    lines.append(f"btime {p.boot_time}")
    lines.append(f"processes {int(up * r.uniform(5, 40))}")
    lines.append(f"procs_running {r.randrange(2, max(3, p.cpus))}")
    lines.append("procs_blocked 0")
    soft = [int(up * r.uniform(10, 900)) for _ in range(10)]
    lines.append(f"softirq {sum(soft)} " + " ".join(map(str, soft)))
    return "\n".join(lines) + "\n"


def write(p: Plan, directory: Path, totals: Totals) -> list[Path]:
    out = [] if "interrupts" in p.omit else [
        write_text(directory / "proc_interrupts.txt", proc_interrupts(p), mtime=p.end)]
    out.append(write_text(directory / "proc_stat.txt", proc_stat(p, totals), mtime=p.end))
    if p.uptime_file:
        out.append(write_text(directory / "uptime_since.txt",
                              time.strftime("%Y-%m-%d %H:%M:%S\n", time.gmtime(p.boot_time)),
                              mtime=p.end))
    return out
