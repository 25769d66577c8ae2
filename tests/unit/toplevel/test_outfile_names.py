"""The output writer takes every name the file system takes: its temporary name is cut by
bytes, not characters (NAME_MAX is 255 bytes; "é" is two)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from corescope.outfile import write_output


@pytest.mark.parametrize("name", [
    "é" * 127,  # 254 bytes: legal, and 127 characters
    "页" * 85,  # 255 bytes, three a character: cut inside one
    "é" * 100 + "a" * 55,  # 255 bytes, cut between two characters
    os.fsdecode(b"\xff" * 100 + b"-not-utf8.html"),  # bytes that are not UTF-8
])
def test_a_long_legal_name_is_written(tmp_path: Path, name: str) -> None:
    assert len(os.fsencode(name)) <= 255
    out = tmp_path / name
    assert write_output(out, b"<p>x</p>") == 8
    assert out.read_bytes() == b"<p>x</p>"
    assert stat.S_IMODE(out.stat().st_mode) == 0o600
    assert os.listdir(tmp_path) == [name]  # no temporary left beside it


def test_a_name_past_name_max_is_refused_cleanly(tmp_path: Path) -> None:
    with pytest.raises(OSError, match="too long"):
        write_output(tmp_path / ("é" * 128), b"x")
    assert os.listdir(tmp_path) == []
