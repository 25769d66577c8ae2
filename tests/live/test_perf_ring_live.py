"""The recorder side on the real kernel: perf restarts when it dies, rotates early when its
RSS passes the limit, and the ring stays inside its byte budget keeping the newest chunks."""

from __future__ import annotations

import itertools
import os
import shutil
import signal
import time
from pathlib import Path

import pytest

from corescope.model.profiles import ProfileChunk
from corescope.rootfs import Root
from corescope.runner import Runner
from corescope.sensors.base import RecordOptions, SensorEnv
from corescope.sensors.profile import ProfileSensor
from corescope.sources.perf import PerfRing, probe
from corescope.store import profiles as ring
from corescope.store.db import Store
from live.conftest import wait_for
from support import popen_cli


@pytest.fixture(autouse=True)
def _live() -> None:
    if os.geteuid() != 0 or shutil.which("perf") is None:
        pytest.skip("needs root and perf")


def test_probe_says_why_when_perf_is_missing(tmp_path: Path) -> None:
    class NoPerf(Runner):
        def which(self, program: str) -> str | None:
            return None

    assert probe(NoPerf(), tmp_path) == \
        "perf not found: install linux-perf, or run with --no-profile"
    assert probe(Runner(), tmp_path) is None


def test_perf_killed_is_restarted_and_rss_limit_rotates(tmp_path: Path) -> None:
    chunks: list[ProfileChunk] = []
    problems: list[str] = []
    r = PerfRing(Runner(), tmp_path, "profiles", hz=49, chunk_s=30,
                 on_chunk=chunks.append, on_problem=problems.append)
    r.start()
    try:
        assert wait_for(lambda: r._cur_pid() is not None, 10)
        first = r._cur_pid()
        time.sleep(1.5)
        os.kill(first, signal.SIGKILL)  # perf dies under us
        assert wait_for(lambda: r._cur_pid() not in (None, first), 15), problems
        assert r.restarts == 1 and any("restarting perf" in p for p in problems)
        time.sleep(1.5)
        r.rss_limit = 1  # every perf is now "too big": rotate early
        assert wait_for(lambda: r.rss_restarts >= 1 and len(chunks) >= 1, 20), problems
    finally:
        r.stop()
    assert not r.alive
    assert chunks, problems
    # hand-overs leave no overlap: each chunk starts where the previous one ended
    for a, b in itertools.pairwise(chunks):
        assert b.perf_start >= a.perf_end - 1e-9
    assert all(c.samples > 0 and c.bytes > 0 for c in chunks[-1:])
    left = {p.suffix for p in tmp_path.iterdir()}
    assert left <= {".zst"}, left  # no raw perf.data or logs left behind


def test_sensor_ring_past_budget_keeps_newest_under_budget(tmp_path: Path) -> None:
    # a budget a few chunks deep, and wait until the ring has really dropped one. Chunks are
    # short and sampled at 49 Hz: on a loaded machine every sample is a deep, distinct busy
    # stack, and 5 s chunks at 99 Hz each outgrew the whole budget (nothing could be kept)
    budget = 20_000
    opts = RecordOptions(profile_hz=49, profile_chunk_s=2.0, profile_max_bytes=budget)
    env = SensorEnv(Root.of(None), Runner(), tmp_path / "s", opts)
    with Store.open(tmp_path / "s") as store:
        s = ProfileSensor(env)
        st = s.open(store)
        assert st.ok, st.detail
        try:
            seen: set[str] = set()

            def enough() -> bool:
                current = ring.all_chunks(store)
                seen.update(c.path for c in current)
                return len(seen) >= 5 and len(seen) > len(current)

            assert wait_for(enough, 120)
        finally:
            s.close()
        kept = ring.all_chunks(store)
        seen.update(c.path for c in kept)  # close() indexed the chunk in progress
        files = list((tmp_path / "s" / "profiles").iterdir())
        # under the budget; or, when the machine's load made one chunk alone outgrow it, the
        # ring keeps that newest chunk only (record says so) rather than nothing
        if len(kept) > 1:
            assert sum(c.bytes for c in kept) <= budget
            assert sum(p.stat().st_size for p in files) <= budget
        assert len(seen) > len(kept) >= 1
        # the kept chunks are the newest ones
        newest = max(seen)  # chunk names grow with time
        assert Path(newest).name in {Path(c.path).name for c in kept}
        assert {Path(c.path).name for c in kept} == {p.name for p in files}


def _comm(pid: int) -> str | None:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return None


def _children(pid: int) -> dict[int, str]:
    """{child pid: comm} of `pid`, from /proc."""
    out = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                head, rest = f.read().rsplit(")", 1)
        except OSError:
            continue
        if int(rest.split()[1]) == pid:
            out[int(d)] = head.split("(", 1)[1]
    return out


def test_perf_does_not_outlive_a_killed_recorder(tmp_path: Path) -> None:
    """kill -9 of `record` must not leave `perf record -a` profiling the machine forever."""
    rec = popen_cli("--store", str(tmp_path / "s"), "record", "--profile-chunk", "10s",
                    "--no-kmsg", "--no-census", "--no-netdev")
    try:
        deadline = time.monotonic() + 30
        perfs: dict[int, str] = {}
        while time.monotonic() < deadline and not perfs:
            time.sleep(0.5)
            perfs = {p: c for p, c in _children(rec.pid).items() if c == "perf"}
        assert perfs, "perf never started"
    finally:
        rec.kill()
        rec.wait(timeout=10)
    deadline = time.monotonic() + 10
    alive = set(perfs)
    while alive and time.monotonic() < deadline:
        time.sleep(0.2)
        alive = {p for p in alive if _comm(p) == "perf"}
    for p in alive:  # don't leave it running even when the test fails
        os.kill(p, signal.SIGKILL)
    assert not alive, f"perf {alive} outlived the recorder"
