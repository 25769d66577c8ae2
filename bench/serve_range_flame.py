"""`serve`'s heatmap range -> flame answer, timed in Chromium, as FlameScope's click does it.

A store holding a column ring (BENCH_STORE: a store `record` wrote, or the one
`BENCH_KEEP=DIR python3 bench/profile_ring_columns.py` keeps in DIR/columns) is served by
`corescope serve` (a real process on 127.0.0.1); headless Chromium opens its page and, from
the page, fetches `/api/flame?cpu=N&start=..&end=..&diff=auto` (what serve.js asks when a
range is dragged) for BENCH_CLICKS (15) ranges of 1 to 10 s spread over the ring, timing
each fetch and its JSON parse with performance.now(). Prints p50 and p90, and the same for
`/api/heatmap` of the minute around each range. Goal: p50 <= 300 ms.
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

from _profile_common import REPO, env

sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(REPO / "src"))

from corescope.store import profiles as ring
from corescope.store.db import Store
from support.chromium import CHROMIUM_ARGS, chromium_path

CLICKS = int(os.environ.get("BENCH_CLICKS", "15"))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


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
        ranges = []
        for _ in range(CLICKS):
            length = rnd.uniform(1, 10)
            a = rnd.uniform(lo, max(lo, hi - length))
            ranges.append((rnd.choice([0, 1]), a, min(hi, a + length)))
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS)
            page = browser.new_page()
            page.goto(f"{base}/ring-bench")  # same origin, a 404: no page work
            timing = """async (u) => { const t = performance.now(); const r = await fetch(u);
                const j = await r.json(); if (!r.ok) throw new Error(JSON.stringify(j));
                return [performance.now() - t, j.samples ?? 0]; }"""
            flame, heat = [], []
            page.evaluate(timing, f"/api/flame?cpu=1&start={lo:.3f}&end={lo + 1:.3f}")  # warm
            for cpu, a, b in ranges:
                ms, n = page.evaluate(
                    timing, f"/api/flame?cpu={cpu}&start={a:.3f}&end={b:.3f}&diff=auto")
                flame.append(ms)
                m0 = max(lo, (a + b) / 2 - 30)
                ms_h, _ = page.evaluate(
                    timing, f"/api/heatmap?cpu={cpu}&start={m0:.0f}&end={m0 + 60:.0f}")
                heat.append(ms_h)
                print(f"cpu {cpu} {b - a:4.1f} s range: flame {ms:6.0f} ms ({n} samples), "
                      f"heatmap {ms_h:5.0f} ms", flush=True)
            browser.close()
        q = statistics.quantiles
        print(f"range -> flame (diff=auto): p50 {statistics.median(flame):.0f} ms, "
              f"p90 {q(flame, n=10)[-1]:.0f} ms (goal p50 <= 300 ms)")
        print(f"heatmap of a minute: p50 {statistics.median(heat):.0f} ms, "
              f"p90 {q(heat, n=10)[-1]:.0f} ms")
    finally:
        srv.terminate()
        srv.wait()


if __name__ == "__main__":
    main()
