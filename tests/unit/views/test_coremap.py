from __future__ import annotations

from corescope.analysis.episodes import find_episodes
from corescope.model.cores import FIELDS, CoreSample
from corescope.views.coremap import render

IDLE = tuple(100 if f == "idle" else 0 for f in FIELDS)
HOT = tuple(100 if f == "system" else 0 for f in FIELDS)


def test_heatmap_rows_columns_and_episode_list():
    samples = [CoreSample(t=1000.0 + i, interval_s=1.0,
                          deltas={c: HOT if c == 3 and 10 <= i < 15 else IDLE for c in range(4)})
               for i in range(40)]
    eps = find_episodes(samples)
    out = render(samples, eps, "kernel", width=52, color=False)
    lines = out.splitlines()
    rows = {ln.split("|")[0].strip(): ln.split("|")[1] for ln in lines if "|" in ln[:8]}
    assert set(rows) == {"cpu0", "cpu1", "cpu2", "cpu3", "all"}
    assert len(rows["cpu3"]) == 40  # one column per sample when it fits
    assert rows["cpu3"][10:15] == "@@@@@" and rows["cpu0"].strip() == ""
    assert rows["all"][10:15] == "=====" or set(rows["all"][10:15]) <= set(":-=")
    assert "1 hot-core episode(s)" in out and "cpu3" in lines[-1]
    coloured = render(samples, eps, "kernel", width=52, color=True)
    assert "\x1b[48;5;196m" in coloured


def test_empty_record_says_why():
    assert "corescope record" in render([], [], "kernel")
