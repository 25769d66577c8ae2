"""kill -9 of `record` mid-write: the store opens and its data up to the kill is queryable."""

from __future__ import annotations

import os
import signal
import sqlite3
import time

import pytest

from corescope.store import journal
from corescope.store.db import Store
from corescope.store.meta import get_meta
from corescope.store.series import read_samples
from support import popen_cli, run_cli, run_cli_json


def test_kill_9_loses_nothing_committed(tmp_path):
    store_dir = tmp_path / "store"
    # 0.1 s interval: writes are nearly continuous, so the kill lands mid-write often
    proc = popen_cli("record", "--store", str(store_dir), "--interval", "0.1", "--no-profile",
                     "--no-kmsg")
    try:
        deadline = time.monotonic() + 30
        count = 0
        while time.monotonic() < deadline and count < 75:  # past one block fold (60)
            time.sleep(0.5)
            if (store_dir / "corescope.db").exists():
                try:
                    with Store.open(store_dir, create=False) as s:
                        count = len(read_samples(s, 0, 4e9))
                except (sqlite3.Error, Exception):
                    count = 0
        seen_before_kill = count
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait(timeout=10)
    assert seen_before_kill >= 75
    with Store.open(store_dir, create=False) as s:
        assert s.query("PRAGMA integrity_check")[0][0] == "ok"
        samples = read_samples(s, 0, 4e9)
    assert len(samples) >= seen_before_kill
    assert [x.t for x in samples] == sorted(x.t for x in samples)
    assert len({x.t for x in samples}) == len(samples)  # a row in a block and the journal: once
    out = run_cli_json("cores", "--store", str(store_dir), "--json", "--last", "10m")
    assert out["samples"] == len(samples)
    # the rows not yet folded were in the journal; the next start folds them, each once
    with Store.open(store_dir, create=False) as s:
        unfolded = len(journal.read(store_dir).unfolded(get_meta(s, journal.FOLDED_KEY)))
        in_blocks = s.query("SELECT SUM(n) FROM core_blocks")[0][0]
    assert unfolded > 0 and in_blocks + unfolded == len(samples)
    run_cli("record", "--store", str(store_dir), "--interval", "0.1", "--duration", "1",
            "--no-profile", "--no-kmsg", "--no-census", "--no-netdev", check=True)
    with Store.open(store_dir, create=False) as s:
        after = read_samples(s, 0, 4e9)
        assert s.query("SELECT SUM(n) FROM core_blocks")[0][0] == len(after)
    assert len({x.t for x in after}) == len(after) > len(samples)
    # the same samples (a block keeps times to the millisecond)
    assert [x.t for x in after[: len(samples)]] == pytest.approx([x.t for x in samples],
                                                                  abs=1e-3)


def test_sigterm_is_a_clean_shutdown(tmp_path):
    store_dir = tmp_path / "store"
    proc = popen_cli("record", "--store", str(store_dir), "--no-profile", "--no-kmsg")
    # the status line comes once the sensors are open (seconds on a loaded machine: a fixed
    # 3 s sleep sent SIGTERM before the first sample once); then two 1 s ticks
    assert proc.stderr is not None
    first = proc.stderr.readline()
    time.sleep(2.5)
    proc.send_signal(signal.SIGTERM)
    _, rest = proc.communicate(timeout=20)
    err = first + rest
    assert proc.returncode == 0, err
    assert "corescope record:" in err.splitlines()[0]  # one-line status on start
    assert err.strip().endswith("stopped")
    with Store.open(store_dir, create=False) as s:
        assert s.query("SELECT COUNT(*) FROM core_recent")[0][0] == 0  # folded on close
        assert len(read_samples(s, 0, 4e9)) >= 1
