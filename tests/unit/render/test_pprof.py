"""pprof's protobuf varints (the whole file read by the real `go tool pprof`:
tests/integration/test_pprof_go.py)."""

from __future__ import annotations

from corescope.render.pprof import _varint


def test_varint() -> None:
    assert _varint(0) == b"\x00" and _varint(1) == b"\x01"
    assert _varint(300) == b"\xac\x02"
    assert _varint(-1) == b"\xff" * 9 + b"\x01"
