"""`serve`'s heatmap range -> flame answer, timed in Chromium, as FlameScope's click does it.

A store holding a column ring (BENCH_STORE: a store `record` wrote, or the one
`BENCH_KEEP=DIR python3 bench/profile_ring_columns.py` keeps in DIR/columns, 2 min at the
sample rate of a 96-CPU node) is served by `corescope serve` (a real process on 127.0.0.1).
Headless Chromium opens its page, shows one CPU's subsecond heatmap of the ring (the page's
own "show" button) and drags BENCH_CLICKS (15) ranges of 1 to 10 s across it with the mouse;
each click is timed in the page (performance.now) from the mouse-up to the range's flame
graph and its diff against the baseline built in the page: serve.js's /api/flame fetch with
diff=auto, the JSON parse and the two graphs drawn. Prints p50 and p90 and p50's ratio to
the goal (p50 <= 300 ms), and the same fetch alone (no drawing) and /api/heatmap of the
minute around each range, from the page.
"""

from __future__ import annotations

import os
import random
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from _profile_common import REPO, env

sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(REPO / "src"))

from corescope.store import profiles as ring
from corescope.store.db import Store
from support.chromium import CHROMIUM_ARGS, chromium_path, drag_heatmap

CLICKS = int(os.environ.get("BENCH_CLICKS", "15"))
GOAL_MS = 300.0

# in the page: the time from the mouse-up to the diff graph's elements being in place (the
# flame graph is mounted first, in the same task)
WATCH = """() => {
  window.__done = null;
  window.addEventListener("mouseup", () => { window.__up = performance.now(); }, true);
  new MutationObserver(() => {
    if (document.querySelector("#fs-diff svg, #fs-diff p")) window.__done = performance.now();
  }).observe(document.getElementById("fs-diff"), {childList: true, subtree: true});
}"""
FETCH = """async (u) => { const t = performance.now(); const r = await fetch(u);
    const j = await r.json(); if (!r.ok) throw new Error(JSON.stringify(j));
    return [performance.now() - t, j.samples ?? 0]; }"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def drag(page: Any, t0: float, t1: float) -> None:
    """Mouse down on second t0 (row 0), up on second t1 (last row) of the heatmap; the
    click's clock starts at the mouse-up."""
    page.evaluate("() => { window.__done = null; }")
    drag_heatmap(page, t0, t1, steps=3)


def quantiles(xs: list[float]) -> str:
    return (f"p50 {statistics.median(xs):.0f} ms, p90 "
            f"{statistics.quantiles(xs, n=10)[-1]:.0f} ms")


def main() -> None:
    store_dir = Path(os.environ.get("BENCH_STORE", ""))
    if not any(store_dir.glob("*.db")):
        raise SystemExit("set BENCH_STORE to a store with a profile ring")
    with Store.open(store_dir, create=False) as s:
        chunks = ring.all_chunks(s)
    lo, hi = chunks[0].wall_start, chunks[-1].wall_end
    port = free_port()
    srv = subprocess.Popen([sys.executable, "-m", "corescope", "--store", str(store_dir),
                            "serve", "--listen", f"127.0.0.1:{port}"], env=env(),
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        base = f"http://127.0.0.1:{port}"
        for _ in range(100):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                time.sleep(0.2)
        from playwright.sync_api import sync_playwright

        rnd = random.Random(22)
        cpu = 1
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS)
            page = browser.new_page(viewport={"width": 1600, "height": 1000})
            # the page's window ends 10 s after the ring: "show" draws [end - 130 s, end]
            page.goto(f"{base}/?since={lo - 60:.0f}&until={hi + 10:.0f}", timeout=300_000)
            page.fill("#fs-cpu", str(cpu))
            page.fill("#fs-before", str(int(hi - lo) + 10))
            page.click("#fs-go")
            page.wait_for_function("() => window.__fs && window.__fs().start !== undefined",
                                   timeout=120_000)
            page.locator("#subsecond-canvas").scroll_into_view_if_needed()
            page.evaluate(WATCH)
            start = page.evaluate("() => window.__fs().start")
            cols = page.evaluate("() => window.__fs().columns")
            first = max(0.0, lo - start) + 1
            last = min(cols - 1.0, hi - start - 1)
            clicks, fetches, heats = [], [], []
            for i in range(CLICKS + 1):  # the first one warms the server's chunk cache
                length = rnd.randint(1, 10)
                a = rnd.randint(int(first), int(last) - length)
                drag(page, start + a, start + a + length - 1)
                page.wait_for_function("() => window.__done !== null", timeout=120_000)
                ms = page.evaluate("() => window.__done - window.__up")
                samples = int(page.locator("#fs-flame-title").inner_text()
                              .split(": ")[-1].split()[0])
                t0, t1 = start + a, start + a + length
                f_ms, _n = page.evaluate(
                    FETCH, f"/api/flame?cpu={cpu}&start={t0:.3f}&end={t1:.3f}&diff=auto")
                m0 = max(lo, (t0 + t1) / 2 - 30)
                h_ms, _ = page.evaluate(
                    FETCH, f"/api/heatmap?cpu={cpu}&start={m0:.0f}&end={m0 + 60:.0f}")
                if i == 0:
                    continue
                clicks.append(ms)
                fetches.append(f_ms)
                heats.append(h_ms)
                print(f"cpu {cpu} {length:2d} s range: click -> flame drawn {ms:5.0f} ms "
                      f"({samples} samples); the fetch alone {f_ms:5.0f} ms; heatmap of a "
                      f"minute {h_ms:5.0f} ms", flush=True)
            browser.close()
        p50 = statistics.median(clicks)
        print(f"range -> flame and diff drawn (diff=auto), {len(clicks)} clicks: "
              f"{quantiles(clicks)}; p50 ÷ the {GOAL_MS:.0f} ms goal {p50 / GOAL_MS:.2f} "
              "(goal <= 1)")
        print(f"the /api/flame fetch and JSON parse alone: {quantiles(fetches)}")
        print(f"/api/heatmap of a minute: {quantiles(heats)}")
    finally:
        srv.terminate()
        srv.wait()


if __name__ == "__main__":
    main()
