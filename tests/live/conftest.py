"""Live tests need root and the real kernel. On a laptop they skip; in CI
(CORESCOPE_REQUIRE_LIVE=1) a skip here fails the run (see tests/conftest.py)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from conftest import cli_env, popen_cli


@pytest.fixture(autouse=True)
def _needs_root() -> None:
    if os.geteuid() != 0:
        pytest.skip("live tests need root")


def need_tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        pytest.skip(f"{name} not installed (CI installs it in .ci/run)")
    return path


class Recording:
    def __init__(self, proc: subprocess.Popen[str], store: Path) -> None:
        self.proc = proc
        self.store = store


@contextmanager
def recording_process(store: Path, *options: str) -> Iterator[Recording]:
    """`corescope record --store STORE OPTIONS...` running, stopped (SIGTERM) on exit."""
    proc = popen_cli("record", "--store", str(store), *options)
    time.sleep(2.5)
    assert proc.poll() is None, proc.communicate()
    try:
        yield Recording(proc, store)
    finally:
        proc.terminate()
        try:
            proc.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()


@pytest.fixture
def recording(tmp_path: Path) -> Iterator[Recording]:
    """`corescope record` running on a fresh store (profiling and kmsg off: cores only)."""
    with recording_process(tmp_path / "store", "--no-profile", "--no-kmsg") as rec:
        yield rec


def burner(cpu: int, seconds: float) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "corescope", "lab", "hotcore", "--cpu", str(cpu), "--seconds",
         str(seconds), "--yes"], env=cli_env(), text=True,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )
