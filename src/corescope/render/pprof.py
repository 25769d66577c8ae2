"""pprof output (profile.proto, gzipped) so `go tool pprof`, Pyroscope and Parca read our
windows. The wire format needs only varints and length-delimited fields, so it is encoded
here rather than pulling in protobuf for one message type.

Each sample's stack is leaf first, with the process name as the root frame (as in folded
stacks), labels `comm`, `pid` and (from `Samples`) `cpu` and `thread`, and two values:
samples/count and cpu/nanoseconds at the rate the samples were really taken.
"""

from __future__ import annotations

import gzip
from collections import Counter
from collections.abc import Iterable

from corescope.analysis.flame import Profile, is_idle
from corescope.model.profiles import Frame, StackSample


def _varint(n: int) -> bytes:
    n &= (1 << 64) - 1
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _key(field: int, wire: int) -> bytes:
    return _varint((field << 3) | wire)


def _int(field: int, n: int) -> bytes:
    return _key(field, 0) + _varint(n) if n else b""


def _bytes(field: int, data: bytes) -> bytes:
    return _key(field, 2) + _varint(len(data)) + data


def _packed(field: int, values: Iterable[int]) -> bytes:
    body = b"".join(_varint(v) for v in values)
    return _bytes(field, body) if body else b""


class _Strings:
    def __init__(self) -> None:
        self.table: list[str] = [""]
        self.index: dict[str, int] = {"": 0}

    def __call__(self, s: str) -> int:
        i = self.index.get(s)
        if i is None:
            i = self.index[s] = len(self.table)
            self.table.append(s)
        return i


# one pprof sample: string labels, the numeric pid label, frames leaf first, count
PprofKey = tuple[tuple[tuple[str, str], ...], int, str, tuple[Frame, ...]]


class Samples:
    """Stack samples aggregated for pprof with their `cpu` and `thread` (tid) labels, which
    the flame `Profile` does not keep. Idle samples are left out unless `include_idle`.
    Also estimates the sampling rate from the samples' own spacing, for input (perf script
    text) that does not say it."""

    def __init__(self, include_idle: bool = False) -> None:
        self.include_idle = include_idle
        self.counts: Counter[PprofKey] = Counter()
        self._last: dict[int | None, float] = {}
        self._gaps: list[float] = []

    def add(self, s: StackSample, idle: bool | None = None) -> None:
        if s.time is not None and len(self._gaps) < 100_000:
            prev = self._last.get(s.cpu)
            if prev is not None and s.time > prev:
                self._gaps.append(s.time - prev)
            self._last[s.cpu] = s.time
        if (is_idle(s) if idle is None else idle) and not self.include_idle:
            return
        labels = (("comm", s.comm), ("cpu", "" if s.cpu is None else str(s.cpu)),
                  ("thread", str(s.tid)))
        self.counts[(labels, s.pid, s.comm, s.frames)] += 1

    def estimated_hz(self) -> int | None:
        """cpu-clock samples every CPU at the rate, idle included: the median gap says it."""
        if len(self._gaps) < 10:
            return None
        g = sorted(self._gaps)[len(self._gaps) // 2]
        return max(1, round(1.0 / g)) if g > 0 else None


def _from_profile(profile: Profile) -> Iterable[tuple[PprofKey, int]]:
    for (comm, pid, frames), n in profile.stacks.items():
        yield ((("comm", comm),), pid, comm, frames), n


def encode(profile: Profile | Samples, hz: int, time_nanos: int = 0,
           duration_nanos: int = 0) -> bytes:
    """The serialized (not yet gzipped) Profile message. `hz` is the rate the samples were
    taken at: each sample stands for 1/hz s of CPU (the chunk's --profile-hz, not a guess)."""
    st = _Strings()
    period = int(1e9 / hz) if hz > 0 else 0
    out = bytearray()
    # sample_type = 1: [samples/count, cpu/nanoseconds]
    for typ, unit in (("samples", "count"), ("cpu", "nanoseconds")):
        out += _bytes(1, _int(1, st(typ)) + _int(2, st(unit)))
    functions: dict[tuple[str, str], int] = {}
    locations: dict[tuple[str, str], int] = {}
    func_msgs = bytearray()
    loc_msgs = bytearray()

    def location(name: str, filename: str) -> int:
        key = (name, filename)
        lid = locations.get(key)
        if lid is not None:
            return lid
        fid = functions.get(key)
        if fid is None:
            fid = functions[key] = len(functions) + 1
            nonlocal func_msgs
            func_msgs += _bytes(5, _int(1, fid) + _int(2, st(name)) + _int(3, st(name))
                                + _int(4, st(filename)))
        lid = locations[key] = len(locations) + 1
        nonlocal loc_msgs
        loc_msgs += _bytes(4, _int(1, lid) + _bytes(4, _int(1, fid)))
        return lid

    items = profile.counts.items() if isinstance(profile, Samples) else _from_profile(profile)
    samples = bytearray()
    for (labels, pid, comm, frames), n in items:
        ids = [location(f.label, f.dso) for f in frames]  # leaf first, as pprof wants
        ids.append(location(comm, ""))
        lab = b"".join(_bytes(3, _int(1, st(k)) + _int(2, st(v))) for k, v in labels if v)
        lab += _bytes(3, _int(1, st("pid")) + _int(3, pid & ((1 << 63) - 1)))
        samples += _bytes(2, _packed(1, ids) + _packed(2, [n, n * period]) + lab)
    out += samples
    out += loc_msgs
    out += func_msgs
    period_type = _bytes(11, _int(1, st("cpu")) + _int(2, st("nanoseconds")))
    for s in st.table:  # last: every string above is interned by now
        out += _bytes(6, s.encode("utf-8", "replace"))
    out += _int(9, time_nanos)
    out += _int(10, duration_nanos)
    out += period_type
    out += _int(12, period)
    return bytes(out)


def to_pprof(profile: Profile | Samples, hz: int, time_nanos: int = 0,
             duration_nanos: int = 0) -> bytes:
    return gzip.compress(encode(profile, hz, time_nanos, duration_nanos))
