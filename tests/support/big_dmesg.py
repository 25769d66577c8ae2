"""A big kernel log written as it is generated (never whole in memory), for the bounded-memory
tests and bench/analyze_memory.py: the ordinary chatter of a Kubernetes node (veth ports,
AppArmor audit, IPVS, SYN cookies: lab.scenarios.dmesg's own texts), with a memcg OOM report
now and then and an ENA TX stall → reset pair (ena_netdev.c's format strings) every few
thousand lines, in plain `dmesg` form (boot-relative `[ sec.usec]` stamps)."""

from __future__ import annotations

import random
from pathlib import Path

from corescope.lab.scenarios import dmesg as lab_dmesg
from corescope.lab.scenarios.plan import make_plan


def write_big_dmesg(path: Path, target_bytes: int, seed: int = 1) -> dict[str, float | int]:
    """Write at least `target_bytes` of log to `path`; returns the boot time the stamps count
    from, the line count and how many stall → reset pairs it holds."""
    p = make_plan("zombie_chain", cpus=8, seed=seed, duration_s=3600)
    r = random.Random(seed)
    pre = f"ena {p.bus} {p.iface}: "
    t, n, lines, stalls = float(p.start), 0, 0, 0
    with path.open("w") as f:
        while n < target_bytes:
            t += r.uniform(0.001, 0.05)
            block = lab_dmesg._noise_block(p, t, r)
            x = r.random()
            if x < 0.0005:
                block += lab_dmesg._oom(p, t + 0.001, r, stalls)
            elif x < 0.0015:
                stalls += 1
                block += [(t + 0.002, pre + f"TX q {p.hot_queue} is paused for too long "
                           "(threshold 5000000). Time since last napi 6004000 usec. napi "
                           "scheduled: 1", "nic_tx_stall"),
                          (t + 0.002021, pre + "Trigger reset is on", "nic_reset")]
            out = []
            for tt, msg, _ in block:
                us = round((tt - p.boot_time) * 1e6)
                out.append(f"[{us // 1_000_000:5d}.{us % 1_000_000:06d}] {msg}\n")
            s = "".join(out)
            f.write(s)
            n += len(s)
            lines += len(out)
    return {"boot_time": float(p.boot_time), "lines": lines, "stalls": stalls}
