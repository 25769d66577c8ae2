"""/proc/stat: per-CPU time counters.

The parser is pure and total: any text in, the CPU lines it could read out, plus diagnostics.
The delta follows sysstat (get_per_cpu_interval and mpstat's offline handling):

- a CPU absent now (offline) is hidden, and its last counters are kept (`ProcStat.gone`): when
  it comes back, its delta is taken from them, not skipped and not taken from zero;
- idle and iowait restart from 0 when a CPU comes back online while user and system keep
  counting: an idle (or iowait) that went backwards is a delta from 0, not a delta clamped to
  0 (that clamp showed a 58 %-busy CPU 100 % busy); an iowait that went backwards while idle
  went forwards is the kernel moving iowait into idle: a delta of 0;
- but an idle that went backwards by less than it still holds did not restart (a CPU back
  online has counted idle only since, far less than it had): it is an accounting glitch (a
  tickless CPU's idle time read twice, say), and the CPU gets no sample for the interval,
  never the ~100 % idle that taking it from 0 would show;
- a counter within 0x7ffff of 2**64 that goes backwards wrapped: its delta is taken modulo;
- user, nice or system going backwards is not hotplug (those keep counting): the whole line
  restarted, so that CPU has no honest delta for this interval and is skipped (never shown
  as idle or busy); irq, softirq, steal and guest going backwards give 0 for that field, as
  sysstat's ll_sp_value does;
- a CPU never seen before has no delta for its first interval; a line whose counters are
  all 0 is an offline CPU, as sysstat reads it.
"""

from __future__ import annotations

import errno
import os
from array import array
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import numpy as np

from corescope.model.common import Diagnostic
from corescope.model.cores import FIELDS, CoreSample
from corescope.model.packed import PackedRows
from corescope.rootfs import MAX_READ, Root, check_regular

_NFIELDS = len(FIELDS)
_STRIDE = _NFIELDS + 1  # a cpu line's tokens: its name, then its counters
# Up to this many CPUs a tick parses and subtracts in plain Python: at 1 Hz the caches are
# cold at every tick and each numpy call costs ~10 µs then, more than the list work for a few
# CPUs (2 CPUs: ~60 µs a tick less). More CPUs: numpy's per-value speed wins.
SMALL_CPUS = 16


@dataclass(frozen=True)
class ProcStat:
    """One read of /proc/stat: per-CPU counters in FIELDS order (online CPUs only) and the
    aggregate `cpu` line."""

    cpus: Mapping[int, tuple[int, ...]]
    total: tuple[int, ...] | None = None
    btime: int | None = None
    diagnostics: tuple[Diagnostic, ...] = field(default=())
    # the last counters of CPUs seen in an earlier read and offline in this one (see carry)
    gone: Mapping[int, tuple[int, ...]] = field(default_factory=dict)


def _parse_fast(head: bytes) -> tuple[PackedRows, tuple[int, ...]] | None:
    """The common case in one C-level pass: a `cpu` line then `cpuN` lines of exactly ten
    counters. Anything else (old or new kernels' column counts, garbage, a minus sign) returns
    None and the careful parser below takes over."""
    n = head.count(b"\ncpu")
    if n == 0 or not head.startswith(b"cpu ") or b"-" in head:
        return None
    # numpy stops (with a warning, ignored by default) at the first token it cannot read: the
    # size check below then rejects the partial result
    try:
        values = np.fromstring(head.replace(b"cpu", b" "), dtype=np.int64, sep=" ")
    except ValueError:  # numpy 2 raises on some unmatched data (a NUL byte, say)
        return None
    if values.size != _NFIELDS + n * (_NFIELDS + 1):
        return None
    rows = values[_NFIELDS:].reshape(n, _NFIELDS + 1)
    ids = rows[:, 0].tolist()
    if len(set(ids)) != n:
        return None
    return PackedRows(ids, rows[:, 1:]), tuple(values[:_NFIELDS].tolist())


def _btime(rest: bytes) -> int | None:
    at = rest.find(b"btime ")
    if at < 0:
        return None
    end = rest.find(b"\n", at)
    value = rest[at + 6 : end if end >= 0 else None].strip()
    return int(value) if value.isdigit() else None


def parse_proc_stat(text: str | bytes, source: str = "/proc/stat") -> ProcStat:
    """Parse the cpu lines (and btime) of /proc/stat. Never raises on content."""
    if isinstance(text, str):
        text = text.encode("utf-8", errors="replace")
    # cpu lines come first; stop before the long intr line rather than splitting it
    head_b, _, rest_b = text.partition(b"\nintr ")
    fast = _parse_fast(head_b)
    if fast is not None:
        return ProcStat(cpus=fast[0], total=fast[1], btime=_btime(rest_b))
    return _parse_careful(head_b.decode("ascii", errors="replace"), rest_b, source)


def _parse_careful(head: str, rest: bytes, source: str) -> ProcStat:
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
    btime = _btime(rest)
    if rest.find(b"btime ") >= 0 and btime is None:
        diags.append(Diagnostic(source, "unreadable btime line"))
    if not cpus:
        diags.append(Diagnostic(source, "no per-cpu lines found"))
    return ProcStat(cpus=cpus, total=total, btime=btime, diagnostics=tuple(diags))


_U, _N, _S, _I, _W = (FIELDS.index(f) for f in ("user", "nice", "system", "idle", "iowait"))
_WRAP64 = (1 << 64) - 0x7FFFF  # sysstat: a previous value above this wrapped, not restarted
# the modes sysstat's per-CPU interval adds (user..softirq and steal; guest is inside user)
_INTERVAL = tuple(FIELDS.index(f) for f in ("user", "nice", "system", "idle", "iowait", "irq",
                                            "softirq", "steal"))
_RESTARTS = (_U, _N, _S)  # these keep counting through hotplug: going back restarts the line


def cpu_delta(before: tuple[int, ...], now: tuple[int, ...]) -> tuple[int, ...] | None:
    """One CPU's tick deltas with sysstat's rules for counters that go backwards (module
    docstring); None when the line restarted as a whole (no honest delta this interval)."""
    d = [y - x for x, y in zip(before, now, strict=True)]
    if min(d) >= 0:
        return tuple(d)
    clamped = 0  # what the fields counted as 0 below went back by
    for i, v in enumerate(d):
        if v >= 0:
            continue
        if before[i] >= _WRAP64:
            d[i] = (now[i] - before[i]) % (1 << 64)
        elif i in _RESTARTS:
            return None
        elif i == _I:
            if now[i] > before[i] - now[i]:
                return None  # a glitch, not a restart (module docstring): no honest delta
            d[i] = now[i]  # back online: idle restarted from 0
        elif i == _W:
            # iowait moved into idle (idle went on) or restarted with it (back online)
            d[i] = 0 if now[_I] > before[_I] or before[_I] >= _WRAP64 else now[i]
        else:
            d[i] = 0
            if i in _INTERVAL:
                clamped += v
    if clamped and sum(d[i] for i in _INTERVAL) + clamped <= 0:
        # sysstat subtracts a backwards field from the interval: none left is a tickless
        # CPU, which mpstat prints fully idle (counting the field as 0 would show it busy)
        return (0,) * len(d)
    return tuple(d)


def _offline(counters: tuple[int, ...]) -> bool:
    return not any(counters[:8])  # user..steal all 0: sysstat's offline CPU


def delta(prev: ProcStat, cur: ProcStat, t: float, interval_s: float) -> CoreSample:
    """Per-CPU tick deltas from `prev` to `cur`, sysstat style (module docstring). Pass
    `carry(prev, cur)` as the next call's `prev` so CPUs that go offline keep their counters."""
    a, b = prev.cpus, cur.cpus
    if isinstance(a, PackedRows) and isinstance(b, PackedRows) and a.ids == b.ids:
        d = b.flat - a.flat
        # (a CPU whose previous line was all zeros was offline: the careful path skips it)
        if not len(d) or (d.min() >= 0 and np.reshape(a.flat, (len(a.ids), -1))[:, :8]
                          .any(axis=1).all()):
            return CoreSample(t=t, interval_s=interval_s, deltas=PackedRows(b.ids, d))
    out: dict[int, tuple[int, ...]] = {}
    for cpu, now in b.items():
        before = a.get(cpu)
        if before is None or _offline(before):
            before = prev.gone.get(cpu)
        if before is None or _offline(now):
            continue  # never seen before: no honest delta yet
        d = cpu_delta(tuple(map(int, before)), tuple(map(int, now)))
        if d is not None:
            out[cpu] = d
    return CoreSample(t=t, interval_s=interval_s, deltas=out)


def carry(prev: ProcStat, cur: ProcStat) -> ProcStat:
    """`cur` as the base of the next delta: with the last counters of every CPU seen before
    and offline now (mpstat keeps them, so a CPU coming back is measured from them)."""
    seen = dict(prev.gone)
    seen.update((c, tuple(v)) for c, v in prev.cpus.items() if not _offline(v))
    gone = {c: v for c, v in seen.items() if c not in cur.cpus or _offline(cur.cpus[c])}
    if not gone and not cur.gone:
        return cur
    return ProcStat(cpus=cur.cpus, total=cur.total, btime=cur.btime,
                    diagnostics=cur.diagnostics, gone=gone)


class CoreDeltas:
    """The sampling hot path: each `sample` reads /proc/stat once and returns the per-CPU
    deltas since the previous read. While the online CPUs stay the same (almost always), that
    is one parse of the cpu lines and one subtraction (numpy's for many CPUs, a list's for up
    to SMALL_CPUS): no per-CPU objects, no btime, no re-validation of a layout already
    validated. Anything else (a CPU going on- or offline, an odd line) goes through
    `parse_proc_stat` and `delta`, so the result is the same."""

    def __init__(self, read_bytes: Callable[[], bytes], source: str = "/proc/stat") -> None:
        self._read_bytes = read_bytes
        self._source = source
        self._prev: ProcStat | None = None
        # the last read in the fast layout: `cpu` total, then per CPU its id and ten counters
        self._vals: np.ndarray | None = None
        self._ids: tuple[int, ...] = ()
        self._id_bytes = b""  # the CPU id column of _vals, compared as bytes (one C call)
        self._fields_at = np.zeros((0, _NFIELDS), np.intp)
        # the small path: the last read's name tokens (b"cpu", b"cpu0", ...) in file order,
        # and its counters with the names taken out (the total's, then each CPU's)
        self._names: list[bytes] | None = None
        self._last: list[int] = []
        self._gone: Mapping[int, tuple[int, ...]] = {}  # offline CPUs' last counters

    def reset(self) -> ProcStat:
        """Read now as the base of the next delta (the full parse, validated)."""
        cur = parse_proc_stat(self._read_bytes(), self._source)
        self._remember(cur)
        return cur

    def _remember(self, cur: ProcStat) -> None:
        self._prev, self._vals, self._names = cur, None, None
        self._gone = cur.gone
        cpus = cur.cpus
        if isinstance(cpus, PackedRows) and isinstance(cpus.flat, np.ndarray) and cur.total:
            n = len(cpus.ids)
            if n <= SMALL_CPUS:
                self._names = [b"cpu", *(b"cpu%d" % c for c in cpus.ids)]
                self._last = [*cur.total, *cpus.flat.ravel().tolist()]
                self._ids = cpus.ids
                return
            vals = np.empty(_NFIELDS + n * (_NFIELDS + 1), dtype=np.int64)
            vals[:_NFIELDS] = cur.total
            grid = vals[_NFIELDS:].reshape(n, _NFIELDS + 1)
            grid[:, 0] = cpus.ids
            grid[:, 1:] = cpus.flat
            self._vals, self._ids = vals, cpus.ids
            self._id_bytes = vals[_NFIELDS::_NFIELDS + 1].tobytes()
            # where each CPU's ten counters sit in the flat read: one take() lays them out as
            # [cpu, field], contiguous, as the store writes them
            self._fields_at = (np.arange(n)[:, None] * (_NFIELDS + 1) + (_NFIELDS + 1)
                               + np.arange(_NFIELDS)[None, :])

    def _prev_stat(self) -> ProcStat:
        if self._prev is None and self._names is not None:  # a small-path read
            last = self._last
            flat = np.array(last[_NFIELDS:], np.int64).reshape(-1, _NFIELDS)
            self._prev = ProcStat(cpus=PackedRows(self._ids, flat),
                                  total=tuple(last[:_NFIELDS]), gone=self._gone)
        if self._prev is None:  # the last read was a fast one: view it as a ProcStat
            assert self._vals is not None
            grid = self._vals[_NFIELDS:].reshape(-1, _NFIELDS + 1)
            self._prev = ProcStat(cpus=PackedRows(self._ids, grid[:, 1:]),
                                  total=tuple(self._vals[:_NFIELDS].tolist()),
                                  gone=self._gone)
        return self._prev

    def sample(self, t: float, interval_s: float) -> CoreSample:
        if self._prev is None and self._vals is None and self._names is None:
            self.reset()
        data = self._read_bytes()
        end = data.find(b"\nintr ")
        head = data[:end] if end >= 0 else data
        names = self._names
        if names is not None and b"-" not in head:
            toks = head.split()
            # a name every eleventh token and nothing else: the same CPUs, ten counters each
            if len(toks) == _STRIDE * len(names) and toks[::_STRIDE] == names:
                del toks[::_STRIDE]
                try:
                    cur = list(map(int, toks))
                    last = self._last
                    # "I": a delta past 32 bits (an interval of years) or below 0 (a
                    # counter going backwards: the careful path's rules) is not the usual case
                    d = array("I", [b - a
                                    for a, b in zip(last[_NFIELDS:], cur[_NFIELDS:], strict=True)])
                except (ValueError, OverflowError):
                    pass
                else:
                    self._last, self._prev = cur, None
                    return CoreSample(t=t, interval_s=interval_s,
                                      deltas=PackedRows(self._ids, d))
        prev = self._vals
        if prev is not None and b"-" not in head:
            vals = np.fromstring(head.replace(b"cpu", b" "), dtype=np.int64, sep=" ")
            # every numpy call costs ~10 µs on a cold cache at 1 Hz: as few as possible
            if vals.size == prev.size and \
                    vals[_NFIELDS::_NFIELDS + 1].tobytes() == self._id_bytes:
                d = (vals - prev).take(self._fields_at)
                if d.min() >= 0:  # else a counter went backwards: the careful path
                    self._vals, self._prev = vals, None
                    return CoreSample(t=t, interval_s=interval_s,
                                      deltas=PackedRows(self._ids, d))
        now = parse_proc_stat(data, self._source)
        prior = self._prev_stat()
        out = delta(prior, now, t, interval_s)
        self._remember(carry(prior, now))
        return out


class ProcStatReader:
    """Keeps /proc/stat open and re-reads it from offset 0: one pread, no open() per sample."""

    def __init__(self, root: Root | None = None) -> None:
        self.root = root or Root()
        self._path = str(self.root.path("/proc/stat"))
        self._fd = os.open(self._path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        try:
            check_regular(self._fd, self._path)  # not a FIFO or /dev/zero in a captured tree
        except OSError:
            self.close()
            raise
        self._bufsize = 1 << 16

    def read_bytes(self) -> bytes:
        while True:
            data = os.pread(self._fd, self._bufsize, 0)
            if len(data) < self._bufsize:
                return data
            if self._bufsize >= MAX_READ:
                raise OSError(errno.EFBIG, f"larger than {MAX_READ} bytes", self._path)
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
