"""pprof output must be readable by the real `go tool pprof` (Debian golang-go)."""

from __future__ import annotations

import gzip
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from corescope.analysis.flame import Profile
from corescope.render.pprof import _varint, encode, to_pprof
from corescope.sources.perf_script import parse_text
from support import FIXTURES


def test_varint() -> None:
    assert _varint(0) == b"\x00" and _varint(1) == b"\x01"
    assert _varint(300) == b"\xac\x02"
    assert _varint(-1) == b"\xff" * 9 + b"\x01"


def test_go_tool_pprof_reads_it(tmp_path: Path) -> None:
    go = shutil.which("go")
    if go is None:
        pytest.skip("go (golang-go) not installed")
    prof = Profile().extend(parse_text((FIXTURES / "profiles" / "burner_idle.txt").read_text())[0])
    out = tmp_path / "p.pb.gz"
    out.write_bytes(to_pprof(prof, 49, duration_nanos=3 * 10**9))
    assert gzip.decompress(out.read_bytes()) == encode(prof, 49, duration_nanos=3 * 10**9)
    env = dict(os.environ, HOME=str(tmp_path), GOCACHE=str(tmp_path / "gocache"),
               PPROF_TMPDIR=str(tmp_path))
    res = subprocess.run([go, "tool", "pprof", "-top", "-sample_index=samples", str(out)],
                         capture_output=True, text=True, timeout=120, env=env)
    assert res.returncode == 0, res.stderr
    lines = [ln for ln in res.stdout.splitlines() if ln.strip()]
    assert any("Total samples = 137" in ln or "137 total" in ln for ln in lines), res.stdout
    top = next(ln for ln in lines if ln.strip().endswith("iov_iter_zero_[k]"))
    assert float(top.split()[1].rstrip("%")) > 80
    assert any(ln.strip().endswith(" python3") for ln in lines)
