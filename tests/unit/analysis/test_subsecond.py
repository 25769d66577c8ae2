"""FlameScope's subsecond heatmap on a real capture and on hand-placed points."""

from __future__ import annotations

from corescope.analysis.flame import is_idle
from corescope.analysis.subsecond import Heatmap
from corescope.sources.perf_script import parse_text
from support import FIXTURES


def test_cells_count_non_idle_samples_by_second_and_20ms_offset() -> None:
    h = Heatmap(start=100.0, end=103.0)
    h.add(100.005, False)  # col 0, row 0
    h.add(100.019, False)  # col 0, row 0
    h.add(100.020, False)  # col 0, row 1
    h.add(101.999, False)  # col 1, row 49
    h.add(102.5, True)  # idle: not counted
    j = h.to_json()
    assert j["start"] == 100 and j["rows_ms"] == 20 and j["columns"] == 3
    assert len(j["values"]) == 3 and all(len(c) == 50 for c in j["values"])
    assert j["values"][0][0] == 2 and j["values"][0][1] == 1 and j["values"][1][49] == 1
    assert sum(map(sum, j["values"])) == 4 and j["max"] == 2
    assert j["idle_samples"] == 1


def test_real_capture_per_cpu() -> None:
    samples = parse_text((FIXTURES / "profiles" / "burner_idle.txt").read_text())[0]
    busy = Heatmap()
    idle_cpu = Heatmap()
    for s in samples:
        (busy if s.cpu == 1 else idle_cpu).add(s.time, is_idle(s))
    assert sum(map(sum, busy.values())) == 137  # the burner: every sample busy
    assert sum(map(sum, idle_cpu.values())) == 0  # cpu 0 only idled
    assert busy.to_json()["columns"] >= 3


def test_points_before_start_and_non_finite_are_ignored() -> None:
    h = Heatmap(start=10.0)
    h.add(9.5, False)
    h.add(float("nan"), False)
    assert h.to_json()["max"] == 0
