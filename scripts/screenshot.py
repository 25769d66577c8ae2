#!/usr/bin/env python3
"""Regenerate docs/report.png, the README's screenshot: a generated 96-CPU zombie-chain hour
(`lab scenario`, seed 1), analyzed into a store, written by `report --html` and shown in
headless Chromium (Playwright with the system's chromium) at 1200x820.
Run after changing the incident page: python3 scripts/screenshot.py [OUT.png]"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def corescope(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    proc = subprocess.run([sys.executable, "-m", "corescope", *args], env=env, text=True,
                          capture_output=True, check=False, timeout=1800)
    if proc.returncode not in (0, 1):
        sys.exit(f"corescope {' '.join(args)} exited {proc.returncode}: {proc.stderr[-2000:]}")
    return proc


def main() -> int:
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else REPO / "docs" / "report.png"
    chromium = os.environ.get("CORESCOPE_CHROMIUM") or shutil.which("chromium")
    if not chromium:
        sys.exit("no chromium: install Debian's chromium or set CORESCOPE_CHROMIUM")
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory() as tmp:
        t = Path(tmp)
        corescope("lab", "scenario", "--kind", "zombie_chain", "--seed", "1", "--cpus", "96",
                  "-o", str(t / "hour"))
        corescope("--store", str(t / "store"), "analyze", str(t / "hour"))
        corescope("--store", str(t / "store"), "report", "--last", "1h", "--html", "-o",
                  str(t / "report.html"))
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=chromium,
                                        args=["--no-sandbox", "--disable-gpu"])
            page = browser.new_page(viewport={"width": 1200, "height": 820})
            page.goto((t / "report.html").as_uri())
            page.wait_for_load_state("networkidle")
            page.screenshot(path=str(out))
            browser.close()
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
