"""kill -9 of `record` mid-write: the store opens and its data up to the kill is queryable."""

from __future__ import annotations

import os
import signal
import sqlite3
import time

from conftest import popen_cli, run_cli_json
from corescope.store.db import Store
from corescope.store.series import read_samples


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
    out = run_cli_json("cores", "--store", str(store_dir), "--json", "--last", "10m")
    assert out["samples"] == len(samples)


def test_sigterm_is_a_clean_shutdown(tmp_path):
    store_dir = tmp_path / "store"
    proc = popen_cli("record", "--store", str(store_dir), "--no-profile", "--no-kmsg")
    time.sleep(3)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=20)
    assert proc.returncode == 0, err
    assert "corescope record:" in err.splitlines()[0]  # one-line status on start
    assert err.strip().endswith("stopped")
    with Store.open(store_dir, create=False) as s:
        assert s.query("SELECT COUNT(*) FROM core_recent")[0][0] == 0  # folded on close
        assert len(read_samples(s, 0, 4e9)) >= 1
