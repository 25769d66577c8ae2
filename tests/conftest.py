"""pytest's hooks and fixtures for every test directory; the helpers tests import are in
tests/support."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

# One headless Chromium for the whole session (Playwright's sync API allows one per thread):
# the browser tests, the live page test and the live flame-page test all share it.
from support import live_required
from support.chromium import browser, visit  # noqa: F401  (fixtures)

# session fixtures that take tens of seconds to build (the generated 96-CPU hour of
# tests/browser): with `--dist loadgroup` their tests run on one worker instead of each worker
# building its own
SHARED_FIXTURES = frozenset({"generated"})


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist's, which reads the groups
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        # the tests on one costly session fixture share a worker, so it is built once
        shared = SHARED_FIXTURES.intersection(getattr(item, "fixturenames", ()))
        if shared and item.get_closest_marker("xdist_group") is None:
            item.add_marker(pytest.mark.xdist_group(f"fixture-{min(shared)}"))
        if "tests/live/" in str(item.fspath).replace(os.sep, "/"):
            item.add_marker(pytest.mark.live)
            # a live test not marked MACHINE (tests/live/conftest.py) runs on the other worker
            if item.get_closest_marker("xdist_group") is None:
                item.add_marker(pytest.mark.xdist_group("beside"))


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
