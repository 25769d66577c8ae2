"""/proc/pressure/{cpu,memory,io}, /proc/schedstat and /proc/vmstat: pure parsers (text in,
records plus diagnostics out; total) and a reader that keeps the files open and preads them.

- PSI (4.20+; absent when the kernel lacks CONFIG_PSI or booted with psi=0): `some` and
  `full` lines of `avg10= avg60= avg300= total=`; `cpu` has no `full` line before 5.13.
- schedstat (CONFIG_SCHEDSTATS): `cpuN` lines whose 7th and 8th numbers are the time tasks
  ran on that CPU and waited in its run queue (ns, since boot), the 9th the timeslices run
  (versions 15 to 17 keep these columns); `domainN` lines are load-balancing counters we skip.
- vmstat: `key value` lines; we keep reclaim scanning and stealing, allocation stalls,
  compaction stalls and OOM kills.
"""

from __future__ import annotations

import contextlib
import os
import re
from dataclasses import dataclass, field

from corescope.model.common import Diagnostic
from corescope.model.pressure import Psi, PsiSample, RunQueue, SchedstatSample, VmstatSample
from corescope.rootfs import MAX_READ, Root, check_regular

PSI_RESOURCES = ("cpu", "memory", "io")
VMSTAT_PREFIXES = ("pgscan", "pgsteal", "allocstall", "compact_stall", "compact_fail",
                   "compact_success", "oom_kill", "pgmajfault", "workingset_refault")
_MAX_DIAGS = 50


def _num(text: str) -> float | None:
    try:
        v = float(text)
    except ValueError:
        return None
    return v if v == v and abs(v) != float("inf") else None


# psi_show()'s output exactly (`%lu.%02lu` averages): matched in one call, with no Python loop
# over tokens; any other text goes through the token-by-token parse below
_PSI_AVG = r"([0-9]+\.[0-9]+)"
_PSI_LINE = rf"avg10={_PSI_AVG} avg60={_PSI_AVG} avg300={_PSI_AVG} total=([0-9]+)\n"
_PSI_EXACT = re.compile(f"some {_PSI_LINE}(?:full {_PSI_LINE})?")


def parse_psi(text: str, t: float = 0.0, resource: str = "cpu",
              source: str = "/proc/pressure") -> tuple[PsiSample | None, list[Diagnostic]]:
    diags: list[Diagnostic] = []
    lines: dict[str, Psi] = {}
    if not isinstance(text, str):
        return None, [Diagnostic(source, "not text")]
    m = _PSI_EXACT.fullmatch(text)
    if m is not None:
        g = m.groups()
        full = None if g[4] is None else Psi(float(g[4]), float(g[5]), float(g[6]), int(g[7]))
        return PsiSample(t, resource, Psi(float(g[0]), float(g[1]), float(g[2]), int(g[3])),
                         full), diags
    for lineno, line in enumerate(text.splitlines(), 1):
        toks = line.split()
        if not toks:
            continue
        kind = toks[0]
        vals: dict[str, str] = {}
        for tok in toks[1:]:
            k, sep, v = tok.partition("=")
            if sep:
                vals[k] = v
        if kind not in ("some", "full") or not {"avg10", "avg60", "avg300", "total"} <= set(vals):
            if len(diags) < _MAX_DIAGS:
                diags.append(Diagnostic(source, f"not a PSI line: {line[:60]!r}", lineno))
            continue
        a10, a60, a300 = (_num(vals[k]) for k in ("avg10", "avg60", "avg300"))
        total = vals["total"]
        if a10 is None or a60 is None or a300 is None or not total.isdigit():
            if len(diags) < _MAX_DIAGS:
                diags.append(Diagnostic(source, f"unreadable numbers: {line[:60]!r}", lineno))
            continue
        lines[kind] = Psi(a10, a60, a300, int(total))
    if not lines:
        return None, diags or [Diagnostic(source, "no some/full line")]
    return PsiSample(t, resource, lines.get("some"), lines.get("full")), diags


def parse_schedstat(text: str, t: float = 0.0, source: str = "/proc/schedstat"
                    ) -> tuple[SchedstatSample | None, list[Diagnostic]]:
    diags: list[Diagnostic] = []
    if not isinstance(text, str):
        return None, [Diagnostic(source, "not text")]
    version: int | None = None
    cpus: list[RunQueue] = []
    for lineno, line in enumerate(text.splitlines(), 1):
        toks = line.split()
        if not toks:
            continue
        head = toks[0]
        if head == "version" and len(toks) > 1 and toks[1].isdigit():
            version = int(toks[1])
        elif head.startswith("cpu") and head[3:].isdigit():
            nums = toks[1:]
            if len(nums) < 9 or not all(n.isdigit() for n in nums[6:9]):
                if len(diags) < _MAX_DIAGS:
                    diags.append(Diagnostic(source, f"short or unreadable {head} line", lineno))
                continue
            cpus.append(RunQueue(int(head[3:]), int(nums[6]), int(nums[7]), int(nums[8])))
        elif head.startswith("domain") or head == "timestamp":
            continue
        elif len(diags) < _MAX_DIAGS:
            diags.append(Diagnostic(source, f"unknown line: {line[:60]!r}", lineno))
    if version is not None and not 10 <= version <= 99:
        diags.append(Diagnostic(source, f"unexpected schedstat version {version}"))
    if not cpus:
        return None, diags or [Diagnostic(source, "no cpu lines")]
    return SchedstatSample(t, version, tuple(cpus)), diags


# /proc/vmstat as the kernel prints it: every line `key value`. A text that is all such lines
# (one C-level match) has its kept counters picked out by a second regex, without a Python
# loop over its ~180 lines; anything else goes through the line-by-line parse below.
_VMSTAT_KEY = r"_*[A-Za-z0-9][A-Za-z0-9_]*"  # as the loop accepts: not underscores alone
_VMSTAT_WELL_FORMED = re.compile(rf"(?:{_VMSTAT_KEY} [0-9]+\n)*{_VMSTAT_KEY} [0-9]+\n?")
_VMSTAT_KEPT = re.compile(rf"^((?:{'|'.join(VMSTAT_PREFIXES)})[A-Za-z0-9_]*) ([0-9]+)$", re.M)


def parse_vmstat(text: str, t: float = 0.0, source: str = "/proc/vmstat"
                 ) -> tuple[VmstatSample | None, list[Diagnostic]]:
    diags: list[Diagnostic] = []
    if not isinstance(text, str):
        return None, [Diagnostic(source, "not text")]
    if _VMSTAT_WELL_FORMED.fullmatch(text):
        return VmstatSample(t, {k: int(v) for k, v in _VMSTAT_KEPT.findall(text)}), diags
    counters: dict[str, int] = {}
    seen = 0
    for lineno, line in enumerate(text.splitlines(), 1):
        key, _, value = line.strip().partition(" ")
        if not key:
            continue
        value = value.strip()
        if not value.isdigit() or not key.replace("_", "").isalnum():
            if len(diags) < _MAX_DIAGS:
                diags.append(Diagnostic(source, f"not `key value`: {line[:60]!r}", lineno))
            continue
        seen += 1
        if key.startswith(VMSTAT_PREFIXES):
            counters[key] = int(value)
    if not seen:
        return None, diags or [Diagnostic(source, "no counters")]
    return VmstatSample(t, counters), diags


@dataclass
class PressureFiles:
    """The live files, kept open and re-read with pread (one call per file per read)."""

    root: Root
    fds: dict[str, int] = field(default_factory=dict)
    missing: dict[str, str] = field(default_factory=dict)  # path → why it is not read

    def open(self) -> None:
        for path in [f"/proc/pressure/{r}" for r in PSI_RESOURCES] + ["/proc/schedstat",
                                                                      "/proc/vmstat"]:
            try:
                fd = os.open(self.root.path(path), os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
            except OSError as exc:
                self.missing[path] = exc.strerror or str(exc)
                continue
            try:
                check_regular(fd, path)  # not a FIFO or a device in a captured tree
                # PSI files can open and still refuse reads (psi=0 on some kernels)
                os.pread(fd, 4096, 0)
            except OSError as exc:
                os.close(fd)
                self.missing[path] = exc.strerror or str(exc)
                continue
            self.fds[path] = fd

    def read(self, path: str) -> str | None:
        fd = self.fds.get(path)
        if fd is None:
            return None
        chunks = []
        off = 0
        while True:
            try:
                b = os.pread(fd, 1 << 18, off)
            except OSError:
                return None
            if not b:
                break
            chunks.append(b)
            off += len(b)
            if len(b) < 1 << 18 or off > MAX_READ:
                break
        return b"".join(chunks).decode("ascii", "replace")

    def close(self) -> None:
        for fd in self.fds.values():
            with contextlib.suppress(OSError):
                os.close(fd)
        self.fds.clear()
