"""/proc/stat: per-CPU time counters.

The parser is pure and total: any text in, the CPU lines it could read out, plus diagnostics.
The delta follows sysstat: negative deltas clamp to zero, CPUs absent now (offline) are hidden,
and a CPU that just came back is skipped for one interval rather than shown as idle.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from corescope.model.common import Diagnostic
from corescope.model.cores import FIELDS, CoreSample
from corescope.rootfs import Root

_NFIELDS = len(FIELDS)


@dataclass(frozen=True)
class ProcStat:
    """One read of /proc/stat: per-CPU counters in FIELDS order (online CPUs only) and the
    aggregate `cpu` line."""

    cpus: dict[int, tuple[int, ...]]
    total: tuple[int, ...] | None = None
    btime: int | None = None
    diagnostics: tuple[Diagnostic, ...] = field(default=())


def parse_proc_stat(text: str | bytes, source: str = "/proc/stat") -> ProcStat:
    """Parse the cpu lines (and btime) of /proc/stat. Never raises on content."""
    if isinstance(text, bytes):
        text = text.decode("ascii", errors="replace")
    # cpu lines come first; stop before the long intr line rather than splitting it
    head, sep, rest = text.partition("\nintr ")
    cpus: dict[int, tuple[int, ...]] = {}
    total: tuple[int, ...] | None = None
    diags: list[Diagnostic] = []
    pad = (0,) * _NFIELDS
    for lineno, line in enumerate(head.splitlines(), 1):
        if not line.startswith("cpu"):
            continue
        parts = line.split()
        try:
            values = tuple(map(int, parts[1 : 1 + _NFIELDS]))  # extra columns are ignored
        except ValueError:
            values = ()
        if len(values) < 4 or min(values) < 0:
            diags.append(Diagnostic(source, f"unreadable cpu line: {line[:80]!r}", lineno))
            continue
        if len(values) < _NFIELDS:  # old kernels have fewer columns
            values = values + pad[len(values) :]
        name = parts[0]
        if name == "cpu":
            total = values
            continue
        suffix = name[3:]
        if not (suffix.isdigit() and suffix.isascii()):
            diags.append(Diagnostic(source, f"unknown cpu name {name[:20]!r}", lineno))
            continue
        cpu = int(suffix)
        if cpu in cpus:
            diags.append(Diagnostic(source, f"duplicate line for {name}", lineno))
            continue
        cpus[cpu] = values
    btime: int | None = None
    at = rest.find("btime ") if sep else text.find("btime ")
    if at >= 0:
        src = rest if sep else text
        field_ = src[at + 6 : src.find("\n", at) if src.find("\n", at) >= 0 else None].strip()
        if field_.isdigit():
            btime = int(field_)
        else:
            diags.append(Diagnostic(source, f"unreadable btime: {field_[:40]!r}"))
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
        out[cpu] = tuple(y - x if y > x else 0 for x, y in zip(before, now, strict=True))
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
