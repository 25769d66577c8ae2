"""Headless Debian Chromium through Playwright, for the pages corescope writes and serves
(tests/browser and the live page test).

Every page visit records console errors, uncaught exceptions and dialogs, and refuses any
request that would leave file:// or 127.0.0.1 (recorded, then aborted, so a test that
loads a page from the network fails instead of fetching). Screenshots go to
tests/browser/artifacts/ (gitignored). Without Chromium these tests skip, except under
CORESCOPE_REQUIRE_LIVE=1, where the root conftest turns the skip into a failure."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import pytest

ARTIFACTS = Path(__file__).resolve().parents[1] / "browser" / "artifacts"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update",
                 "--disable-sync"]


def chromium_path() -> str | None:
    env = os.environ.get("CORESCOPE_CHROMIUM")
    if env:
        return env
    for name in ("chromium", "chromium-browser"):
        found = shutil.which(name)
        if found:
            return found
    return None


def local_url(url: str) -> bool:
    u = urlparse(url)
    if u.scheme in ("file", "data", "about", "blob"):
        return True
    return u.scheme in ("http", "https") and u.hostname in ("127.0.0.1", "localhost")


@dataclass
class Visit:
    """One page and everything it did that a test must look at."""

    page: Any
    console_errors: list[str] = field(default_factory=list)
    dialogs: list[str] = field(default_factory=list)
    outside: list[str] = field(default_factory=list)

    def screenshot(self, name: str, full_page: bool = False) -> Path:
        ARTIFACTS.mkdir(exist_ok=True)
        path = ARTIFACTS / f"{name}.png"
        self.page.screenshot(path=str(path), full_page=full_page)
        return path

    def assert_clean(self) -> None:
        assert not self.console_errors, self.console_errors
        assert not self.dialogs, f"a dialog fired: {self.dialogs}"
        assert not self.outside, f"requests left 127.0.0.1/file://: {self.outside}"


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.skip("python playwright is not installed (scripts/setup.sh test)")
    exe = chromium_path()
    if exe is None:
        pytest.skip("no chromium on PATH (scripts/setup.sh test installs Debian's)")
    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=exe, headless=True, args=CHROMIUM_ARGS)
        try:
            yield b
        finally:
            b.close()


@pytest.fixture
def visit(browser: Any) -> Iterator[Any]:
    """visit(url) → Visit; the context is closed after the test."""
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    visits: list[Visit] = []

    def open_(url: str, wait: str = "load", timeout_s: float = 30.0) -> Visit:
        page = context.new_page()
        v = Visit(page)
        page.on("console", lambda m: m.type == "error" and v.console_errors.append(m.text))
        page.on("pageerror", lambda e: v.console_errors.append(f"uncaught: {e}"))

        def on_dialog(d: Any) -> None:
            v.dialogs.append(f"{d.type}: {d.message}")
            d.dismiss()

        page.on("dialog", on_dialog)

        def route(r: Any) -> None:
            if local_url(r.request.url):
                r.continue_()
            else:
                v.outside.append(r.request.url)
                r.abort()

        page.route("**/*", route)
        page.goto(url, wait_until=wait, timeout=timeout_s * 1000)
        visits.append(v)
        return v

    try:
        yield open_
    finally:
        context.close()


def drag_heatmap(page: Any, t0: float, t1: float, steps: int = 6) -> None:
    """Drag on serve's subsecond heatmap from second t0 (row 0) to second t1 (last row), as
    a user selects a range (window.__fs() gives the heatmap's geometry)."""
    page.locator("#subsecond-canvas").scroll_into_view_if_needed()
    lay = page.evaluate("() => document.getElementById('subsecond-canvas')"
                        ".getBoundingClientRect().toJSON()")
    st = page.evaluate("() => window.__fs()")
    x = lambda t: lay["x"] + st["left"] + (t - st["start"] + 0.5) * st["cw"]  # noqa: E731
    page.mouse.move(x(t0), lay["y"] + st["top"] + 1)
    page.mouse.down()
    page.mouse.move(x(t1), lay["y"] + st["top"] + st["rows"] * st["ch"] - 2, steps=steps)
    page.mouse.up()
