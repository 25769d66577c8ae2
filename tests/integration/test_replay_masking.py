"""A 96-core replay through --root: one core at 100% for 4 s is an episode, while the machine
average and a 30 s monitor both hide it. Masking, proven on the real code path."""

from __future__ import annotations

import pytest

from support import run_cli, run_cli_json
from support.synth_procstat import write_replay

T0 = 1_795_000_020.0  # aligned so the 4 s burn sits inside one 30 s and one 60 s window


@pytest.fixture
def replay96(tmp_path):
    return write_replay(tmp_path / "root", ncpu=96, seconds=120, t0=T0, hot_cpu=39,
                        hot_start=50, hot_len=4, busy=False, seed=39)


def test_replay_shows_hot_core_masked_by_averages(replay96, tmp_path):
    store = tmp_path / "store"
    run_cli("--root", str(replay96), "--store", str(store), "record", check=True)
    out = run_cli_json("cores", "--store", str(store), "--last", "1h", "--json")
    assert len(out["cpus"]) == 96
    assert out["interval_s"] == 1.0
    eps = out["episodes"]
    assert len(eps) == 1, eps
    e = eps[0]
    assert e["cpu"] == 39
    assert e["duration_s"] == pytest.approx(4.0)
    assert e["mean_pct"] >= 99
    assert e["machine_avg_pct"] < 5  # spatial masking: 1 of 96 cores
    assert e["seen_at_30s_pct"] < 20  # temporal masking: 4 s of 30
    assert e["seen_at_60s_pct"] < e["seen_at_30s_pct"]
    assert e["start"] == pytest.approx(T0 + 50)


def test_doctor_replays_frames_and_reports_the_episode(replay96, tmp_path):
    proc = run_cli("--root", str(replay96), "--store", str(tmp_path / "none"), "doctor",
                   "--json")
    assert proc.returncode == 1, proc.stderr
    import json

    report = json.loads(proc.stdout)
    hot = [f for f in report["findings"] if f["kind"] == "hot_core_episode"]
    assert [f["evidence"]["episode"]["cpu"] for f in hot] == [39]
    assert report["sensors"]["cores"]["ok"] is True


def test_quiet_replay_has_no_episode(tmp_path):
    root = write_replay(tmp_path / "root", ncpu=96, seconds=30, t0=T0, busy=True, seed=1)
    store = tmp_path / "store"
    run_cli("--root", str(root), "--store", str(store), "record", check=True)
    assert run_cli_json("cores", "--store", str(store), "--last", "1h", "--json")["episodes"] == []
