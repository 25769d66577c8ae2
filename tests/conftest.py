"""Shared test helpers: run the real CLI in a subprocess, and the live-test gate."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

# One headless Chromium for the whole session (Playwright's sync API allows one per thread):
# the browser tests, the live page test and the live flame-page test all share it.
from chromium import browser, visit  # noqa: F401  (fixtures)

REPO = Path(__file__).resolve().parent.parent
SRC = REPO / "src"
FIXTURES = Path(__file__).resolve().parent / "fixtures"


def parse_artifact(data: bytes, name: str = "t") -> Any:
    """A saved artifact parsed as `analyze` reads it: its kind told from its content, then
    that kind's parser (the result is the parser's `Parsed`)."""
    from corescope.sources.artifacts.content import module_for, sniff

    kind = sniff(data)
    assert kind is not None, name
    mod = module_for(kind)
    assert mod is not None
    return mod.parse(data, kind, name)


def cli_env(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(SRC) + os.pathsep + env.get("PYTHONPATH", "")
    env.update(extra)
    return env


def run_cli(*args: str, timeout: float = 120, check: bool = False,
            input: str | None = None) -> subprocess.CompletedProcess[str]:
    """`corescope ARGS...` as a user runs it (python -m corescope, this work tree's code)."""
    proc = subprocess.run(
        [sys.executable, "-m", "corescope", *args], capture_output=True, text=True,
        timeout=timeout, env=cli_env(), input=input, check=False,
    )
    if check and proc.returncode != 0:
        raise AssertionError(
            f"corescope {' '.join(args)} exited {proc.returncode}\n"
            f"stdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
        )
    return proc


def run_cli_json(*args: str, timeout: float = 120, ok_codes: tuple[int, ...] = (0, 1)) -> Any:
    proc = run_cli(*args, timeout=timeout)
    assert proc.returncode in ok_codes, (proc.returncode, proc.stdout, proc.stderr)
    return json.loads(proc.stdout)


def popen_cli(*args: str, **kw: Any) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "corescope", *args], text=True, env=cli_env(),
        stdout=kw.pop("stdout", subprocess.PIPE), stderr=kw.pop("stderr", subprocess.PIPE), **kw,
    )


def live_required() -> bool:
    return os.environ.get("CORESCOPE_REQUIRE_LIVE") == "1"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if "tests/live/" in str(item.fspath).replace(os.sep, "/"):
            item.add_marker(pytest.mark.live)


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    # With CORESCOPE_REQUIRE_LIVE=1 a skipped live test is a failure: CI must never pass by
    # silently not testing the real kernel.
    # The same holds for the Chromium tests (tests/browser/): they are not live tests, but a
    # missing browser must not pass CI quietly.
    node = report.nodeid.replace(os.sep, "/")
    if live_required() and report.skipped and ("tests/live/" in node or "tests/browser/" in node):
        report.outcome = "failed"
        report.longrepr = f"test skipped under CORESCOPE_REQUIRE_LIVE=1: {report.longrepr}"


@pytest.fixture
def store_dir(tmp_path: Path) -> Path:
    return tmp_path / "store"


@pytest.fixture
def utc(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Read local-time captures (mpstat, `date`, taken on UTC machines) in UTC."""
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()
