"""corescope's pprof, as a file and as the Pyroscope push's body, read by the real
`go tool pprof` (Debian golang-go): a subprocess each, so not in tests/unit."""

from __future__ import annotations

import gzip
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from corescope.analysis.flame import Profile
from corescope.metrics.pyroscope import build_pushes, send
from corescope.render.pprof import encode, to_pprof
from corescope.sources.perf_script import parse_text
from support import FIXTURES
from support.pyroscope_sink import Sink


def _go_env(tmp_path: Path) -> dict[str, str]:
    return dict(os.environ, HOME=str(tmp_path), GOCACHE=str(tmp_path / "gocache"),
                PPROF_TMPDIR=str(tmp_path))


def test_go_tool_pprof_reads_it(tmp_path: Path) -> None:
    go = shutil.which("go")
    if go is None:
        pytest.skip("go (golang-go) not installed")
    prof = Profile().extend(parse_text((FIXTURES / "profiles" / "burner_idle.txt").read_text())[0])
    out = tmp_path / "p.pb.gz"
    out.write_bytes(to_pprof(prof, 49, duration_nanos=3 * 10**9))
    assert gzip.decompress(out.read_bytes()) == encode(prof, 49, duration_nanos=3 * 10**9)
    res = subprocess.run([go, "tool", "pprof", "-top", "-sample_index=samples", str(out)],
                         capture_output=True, text=True, timeout=120, env=_go_env(tmp_path))
    assert res.returncode == 0, res.stderr
    lines = [ln for ln in res.stdout.splitlines() if ln.strip()]
    assert any("Total samples = 137" in ln or "137 total" in ln for ln in lines), res.stdout
    top = next(ln for ln in lines if ln.strip().endswith("iov_iter_zero_[k]"))
    assert float(top.split()[1].rstrip("%")) > 80
    assert any(ln.strip().endswith(" python3") for ln in lines)


def test_go_tool_pprof_reads_the_pyroscope_push(tmp_path: Path) -> None:
    """The body a Pyroscope server receives (tests/unit/metrics/test_pyroscope_push.py decodes it),
    read back by go tool pprof with its period and labels."""
    go = shutil.which("go")
    if go is None:
        pytest.skip("go (golang-go) not installed")
    samples, _ = parse_text((FIXTURES / "profiles" / "burner_idle.txt").read_text())
    sink = Sink()
    try:
        for p in build_pushes(samples, "node-7", 99, 1_800_000_000.0, 1_800_000_003.0):
            assert send(sink.url, p) == 200
    finally:
        sink.close()
    by_name = {q["name"]: body for q, body in sink.got}
    f = tmp_path / "push.pb.gz"
    f.write_bytes(by_name["corescope.cpu{node=node-7,cpu=1,comm=python3}"])
    res = subprocess.run([go, "tool", "pprof", "-raw", str(f)], capture_output=True, text=True,
                         timeout=120, env=_go_env(tmp_path))
    assert res.returncode == 0, res.stderr
    assert "Period: 10101010" in res.stdout
    assert "comm:[python3] cpu:[1] thread:[" in res.stdout
