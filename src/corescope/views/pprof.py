"""pprof output (profile.proto, gzipped) so `go tool pprof`, Pyroscope and Parca read our
windows. The wire format needs only varints and length-delimited fields, so it is encoded
here rather than pulling in protobuf for one message type.

Each sample's stack is leaf first, with the process name as the root frame (as in folded
stacks) and `comm`/`pid` labels, and two values: samples/count and cpu/nanoseconds.
"""

from __future__ import annotations

import gzip
from collections.abc import Iterable

from corescope.analysis.flame import Profile


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


def encode(profile: Profile, hz: int = 49, time_nanos: int = 0,
           duration_nanos: int = 0) -> bytes:
    """The serialized (not yet gzipped) Profile message."""
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

    samples = bytearray()
    for (comm, pid, frames), n in profile.stacks.items():
        ids = [location(f.label, f.dso) for f in frames]  # leaf first, as pprof wants
        ids.append(location(comm, ""))
        labels = _bytes(3, _int(1, st("comm")) + _int(2, st(comm)))
        labels += _bytes(3, _int(1, st("pid")) + _int(3, pid & ((1 << 63) - 1)))
        samples += _bytes(2, _packed(1, ids) + _packed(2, [n, n * period]) + labels)
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


def to_pprof(profile: Profile, hz: int = 49, time_nanos: int = 0,
             duration_nanos: int = 0) -> bytes:
    return gzip.compress(encode(profile, hz, time_nanos, duration_nanos))
