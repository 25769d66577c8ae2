"""`make doctor`: findings (doctor's exit 1) are its answer, shown as such, not a make error;
an environment or usage error (exit 2) still fails make."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from support import REPO, cli_env
from support.synth_procstat import write_replay


def _make_doctor(args: str) -> subprocess.CompletedProcess[str]:
    make = shutil.which("make")
    if make is None:
        pytest.skip("make not installed")
    # SETUP=true: no install step here (tests import src/ through PYTHONPATH)
    return subprocess.run([make, "-s", "-C", str(REPO), "doctor", "SETUP=true",
                           f"PY={sys.executable}", f"DOCTOR_ARGS={args}"],
                          capture_output=True, text=True, env=cli_env(), timeout=120)


def test_findings_are_reported_not_a_make_failure(tmp_path: Path) -> None:
    root = write_replay(tmp_path / "root", ncpu=8, seconds=30, t0=1_795_000_020.0,
                        hot_cpu=3, hot_start=10, hot_len=4, busy=False, seed=3)
    proc = _make_doctor(f"--root {root} --store {tmp_path / 'none'}")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "FINDINGS (exit 1)" in proc.stdout and "make doctor: findings" in proc.stdout
    assert "Error" not in proc.stderr


def test_a_doctor_that_cannot_run_still_fails_make() -> None:
    proc = _make_doctor("--seconds 0")
    assert proc.returncode != 0
    assert "at least 1" in proc.stderr
