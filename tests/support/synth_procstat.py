"""Synthetic /proc/stat text in the kernel's exact format, for many-CPU fixtures and replays.

The line order and field layout follow fs/proc/stat.c (as in the capture
tests/fixtures/procstat/vm-2cpu-6.18.stat from this machine's 6.18 kernel): the `cpu` sum line,
one `cpuN` line per online CPU with ten USER_HZ counters, then intr, ctxt, btime, processes,
procs_running, procs_blocked and softirq. Counters advance by USER_HZ (100) ticks per second
split between modes, which is what the kernel accounts on a busy machine.
"""

from __future__ import annotations

import random
from pathlib import Path

USER_HZ = 100
NFIELDS = 10
BTIME = 1795000000


def render(cpus: dict[int, list[int]], extra_columns: int = 0, seq: int = 0) -> str:
    total = [sum(v[i] for v in cpus.values()) for i in range(NFIELDS)]
    extra = " 0" * extra_columns
    lines = ["cpu  " + " ".join(map(str, total)) + extra]
    lines += [f"cpu{c} " + " ".join(map(str, v)) + extra for c, v in sorted(cpus.items())]
    intr_total = 1000 * (seq + 1)
    lines.append(f"intr {intr_total} " + " ".join(["0"] * 64))
    lines.append(f"ctxt {50000 + seq * 731}")
    lines.append(f"btime {BTIME}")
    lines.append(f"processes {9000 + seq}")
    lines.append("procs_running 1")
    lines.append("procs_blocked 0")
    lines.append(f"softirq {4000 + seq} 0 1000 6 700 900 0 2 3000 0 3000")
    return "\n".join(lines) + "\n"


def initial(ncpu: int, rng: random.Random) -> dict[int, list[int]]:
    return {c: [rng.randint(1000, 90000), rng.randint(0, 500), rng.randint(1000, 40000),
                rng.randint(100000, 900000), rng.randint(0, 3000), 0, rng.randint(0, 900),
                rng.randint(0, 50), 0, 0] for c in range(ncpu)}


def advance(counters: dict[int, list[int]], rng: random.Random, busy: bool,
            hot: set[int] = frozenset(), ticks: int = USER_HZ) -> None:
    """One interval: each CPU's ticks split across modes; `hot` CPUs spend it all in system."""
    for c, v in counters.items():
        if c in hot:
            sys_ = ticks - rng.randint(0, 1)
            v[2] += sys_
            v[5] += 0
            v[6] += ticks - sys_
            continue
        if busy:
            usr = rng.randint(40, 85)
            sys_ = rng.randint(3, 15)
            soft = rng.randint(0, 3)
            iowait = rng.randint(0, 2)
        else:
            usr = rng.randint(0, 4)
            sys_ = rng.randint(0, 2)
            soft = rng.randint(0, 1)
            iowait = 0
        idle = max(0, ticks - usr - sys_ - soft - iowait)
        v[0] += usr
        v[2] += sys_
        v[3] += idle
        v[4] += iowait
        v[6] += soft


def write_replay(base: Path, ncpu: int, seconds: int, t0: float, hot_cpu: int | None = None,
                 hot_start: int = 0, hot_len: int = 0, busy: bool = False,
                 seed: int = 1) -> Path:
    """A frame sequence (see corescope.sources.frames) of `seconds` + 1 frames, 1 s apart."""
    from corescope.sources.frames import write_frame

    rng = random.Random(seed)
    counters = initial(ncpu, rng)
    for i in range(seconds + 1):
        if i:
            burning = hot_cpu is not None and hot_start < i <= hot_start + hot_len
            hot = {hot_cpu} if burning else set()
            advance(counters, rng, busy, hot)
        write_frame(base, i, t0 + i, {"/proc/stat": render(counters, seq=i)})
    return base
