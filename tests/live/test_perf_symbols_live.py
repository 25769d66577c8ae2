"""Symbols survive (issue 12 item 4): the ring symbolises each chunk when it closes, so a
short-lived program whose binary is gone by query time (a container torn down) still
resolves. And stores written before that (raw perf.data chunks) still read."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from corescope.model.profiles import ClockAnchor, ProfileChunk
from corescope.rootfs import Root
from corescope.runner import Runner
from corescope.sensors.base import RecordOptions, SensorEnv
from corescope.sensors.profile import ProfileSensor
from corescope.sources.perf import capture_anchor, compress_file
from corescope.store import profiles as ring
from corescope.store.db import Store
from live.conftest import MACHINE, wait_for
from support import FIXTURES, run_cli_json

pytestmark = MACHINE

TARGET = "corescope_spin_target"
COMM = "cs-spin-sym"  # its own name: other sessions' loads never match it


@pytest.fixture(autouse=True)
def _live() -> None:
    if os.geteuid() != 0 or shutil.which("perf") is None or shutil.which("gcc") is None:
        pytest.skip("needs root, perf and gcc")
    if 1 not in os.sched_getaffinity(0):
        pytest.skip("needs cpu 1")


def _compile(d: Path) -> Path:
    exe = d / COMM
    subprocess.run(["gcc", "-O1", "-fno-omit-frame-pointer", "-o", str(exe),
                    str(FIXTURES / "profiles" / "spin.c")], check=True, timeout=120)
    return exe


def _spin(exe: Path, seconds: float) -> tuple[float, float]:
    t0 = time.time()
    subprocess.run(["taskset", "-c", "1", str(exe), str(seconds)], check=True,
                   timeout=seconds + 30)
    return t0, time.time()


def _flame(store: Path, t0: float, t1: float) -> dict:
    return run_cli_json("--store", str(store), "flame", "--at", repr(t1 + 0.5), "--before",
                        f"{t1 - t0 + 1.0:.3f}s", "--cpu", "1", "--comm", COMM,
                        "--format", "json", timeout=300)


def test_program_deleted_before_the_query_still_resolves(tmp_path: Path) -> None:
    exe = _compile(tmp_path)
    store_dir = tmp_path / "s"
    opts = RecordOptions(profile_hz=99, profile_chunk_s=5.0)
    env = SensorEnv(Root.of(None), Runner(), store_dir, opts)
    with Store.open(store_dir) as store:
        sensor = ProfileSensor(env)
        st = sensor.open(store)
        assert st.ok, st.detail
        try:
            time.sleep(1.0)
            t0, t1 = _spin(exe, 2.0)
            # the chunk holding the run closes and is indexed (symbolised) while the recorder
            # keeps going
            assert wait_for(lambda: any(c.wall_end >= t1 for c in ring.all_chunks(store)), 30)
            exe.unlink()  # the program and its binary are gone before anyone asks
            # a chunk closes as symbolised text (cheap for the agent); columns come later
            assert {c.format for c in ring.all_chunks(store)} == {"text"}
            j = _flame(store_dir, t0, t1)
        finally:
            sensor.close()
        chunks = ring.all_chunks(store)
    # the query turned the chunks it read into columns (see store/profile_columns), while
    # the recorder kept writing the ring
    read = [c for c in chunks if c.wall_start < t1 and c.wall_end > t0]
    assert read and all(c.format == "columns" for c in read), [c.path for c in chunks]
    assert {c.format for c in chunks} <= {"columns", "text"}
    again = _flame(store_dir, t0, t1)
    assert (again["samples"], again["top_functions"]) == (j["samples"], j["top_functions"])
    assert {p.suffix for p in (store_dir / "profiles").iterdir()} <= {".zst"}
    # 2 s at 99 Hz on cpu 1; other sessions' burners may share the core (noisy machine)
    assert j["samples"] >= 30, j
    fns = {f["name"]: f for f in j["top_functions"]}
    assert TARGET in fns, list(fns)
    assert fns[TARGET]["self_pct"] >= 80.0
    assert fns[TARGET]["kernel"] is False


def test_old_perf_data_chunks_still_read(tmp_path: Path) -> None:
    """Migration: stores written before chunks were symbolised hold raw perf.data."""
    exe = _compile(tmp_path)
    raw = tmp_path / "old.data"
    anchor: ClockAnchor = capture_anchor()
    perf = subprocess.Popen(["perf", "record", "-e", "cpu-clock", "-F", "99", "-a", "-g", "-k",
                             "CLOCK_MONOTONIC", "-N", "-q", "-o", str(raw)])
    try:
        time.sleep(1.0)
        t0, t1 = _spin(exe, 1.5)
        time.sleep(0.5)
    finally:
        perf.send_signal(2)
        perf.wait(timeout=60)
    store_dir = tmp_path / "s"
    with Store.open(store_dir) as store:
        d = ring.profile_dir(store_dir)
        dst = d / "chunk-1.perf.zst"
        size = compress_file(raw, dst)
        end = time.clock_gettime(time.CLOCK_MONOTONIC)
        ring.add_chunk(store, ProfileChunk(
            0, f"profiles/{dst.name}", "CLOCK_MONOTONIC", anchor.perf, end,
            anchor.wall, anchor.to_wall(end), anchor.offset, size, raw.stat().st_size, 0, 99))
        (chunk,) = ring.all_chunks(store)
        assert chunk.format == "perf.data"
    j = _flame(store_dir, t0, t1)
    assert j["samples"] >= 30, j
    assert TARGET in {f["name"] for f in j["top_functions"]}
    # the query turned it into columns (perf script once), and they answer the same
    with Store.open(store_dir) as store:
        assert [c.format for c in ring.all_chunks(store)] == ["columns"]
    again = _flame(store_dir, t0, t1)
    assert (again["samples"], again["top_functions"]) == (j["samples"], j["top_functions"])
