"""/proc/stat: per-CPU time counters.

The parser is pure and total: any text in, the CPU lines it could read out, plus diagnostics.
The delta follows sysstat: negative deltas clamp to zero, CPUs absent now (offline) are hidden,
and a CPU that just came back is skipped for one interval rather than shown as idle.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from corescope.model.common import Diagnostic
from corescope.model.cores import FIELDS, CoreSample, CpuTimes
from corescope.rootfs import Root

_NFIELDS = len(FIELDS)


@dataclass(frozen=True)
class ProcStat:
    """One read of /proc/stat: the per-CPU counters (online CPUs only) and the aggregate."""

    cpus: dict[int, CpuTimes]
    total: CpuTimes | None = None
    btime: int | None = None
    diagnostics: tuple[Diagnostic, ...] = field(default=())


def parse_proc_stat(text: str | bytes, source: str = "/proc/stat") -> ProcStat:
    """Parse the cpu lines (and btime) of /proc/stat. Never raises on content."""
    if isinstance(text, bytes):
        text = text.decode("ascii", errors="replace")
    cpus: dict[int, CpuTimes] = {}
    total: CpuTimes | None = None
    btime: int | None = None
    diags: list[Diagnostic] = []
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.startswith("cpu"):
            if line.startswith("btime "):
                try:
                    btime = int(line.split()[1])
                except (IndexError, ValueError):
                    diags.append(Diagnostic(source, f"unreadable btime: {line[:60]!r}", lineno))
            continue
        parts = line.split()
        name = parts[0]
        values: list[int] = []
        bad = False
        for raw in parts[1 : 1 + _NFIELDS]:  # extra columns from newer kernels are ignored
            if not raw.isdigit():
                bad = True
                break
            values.append(int(raw))
        if bad or len(values) < 4:
            diags.append(Diagnostic(source, f"unreadable cpu line: {line[:80]!r}", lineno))
            continue
        values += [0] * (_NFIELDS - len(values))  # old kernels have fewer columns
        times = CpuTimes(*values)
        if name == "cpu":
            total = times
            continue
        suffix = name[3:]
        if not suffix.isdigit():
            diags.append(Diagnostic(source, f"unknown cpu name {name!r}", lineno))
            continue
        cpu = int(suffix)
        if cpu in cpus:
            diags.append(Diagnostic(source, f"duplicate line for {name}", lineno))
            continue
        cpus[cpu] = times
    if not cpus:
        diags.append(Diagnostic(source, "no per-cpu lines found"))
    return ProcStat(cpus=cpus, total=total, btime=btime, diagnostics=tuple(diags))


def delta(prev: ProcStat, cur: ProcStat, t: float, interval_s: float) -> CoreSample:
    """Per-CPU tick deltas from `prev` to `cur`, sysstat style."""
    out: dict[int, tuple[int, ...]] = {}
    for cpu, now in cur.cpus.items():
        before = prev.cpus.get(cpu)
        if before is None:
            continue  # came online during the interval: no honest delta yet
        a = before.as_tuple()
        b = now.as_tuple()
        out[cpu] = tuple(y - x if y > x else 0 for x, y in zip(a, b, strict=True))
    return CoreSample(t=t, interval_s=interval_s, deltas=out)


class ProcStatReader:
    """Keeps /proc/stat open and re-reads it from offset 0: one pread, no open() per sample."""

    def __init__(self, root: Root | None = None) -> None:
        self.root = root or Root()
        self._path = str(self.root.path("/proc/stat"))
        self._fd = os.open(self._path, os.O_RDONLY | os.O_CLOEXEC)
        self._bufsize = 1 << 16

    def read_bytes(self) -> bytes:
        while True:
            data = os.pread(self._fd, self._bufsize, 0)
            if len(data) < self._bufsize:
                return data
            self._bufsize *= 2  # many CPUs: grow until one read holds the file

    def read(self) -> ProcStat:
        return parse_proc_stat(self.read_bytes(), self._path)

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def __enter__(self) -> ProcStatReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
