"""Hostile or broken stores and inputs: each of these crashed, followed a symlink, poisoned
the store or was silently accepted before (issue 12, item 5)."""

from __future__ import annotations

import json
import os
import sqlite3
import stat

import pytest

from corescope.store.db import DB_NAME, READER_UNCHECKED, Store, StoreError
from support import run_cli
from support.synth_procstat import write_replay

T0 = 1_795_000_020.0  # in the past: `cores --last` reads a stopped record from its end


# --- a symlink planted in a shared store directory -------------------------------------------

def test_a_store_dir_others_can_write_is_refused_and_a_planted_symlink_not_followed(tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)  # like a --store under /tmp that another user could write to
    victim = tmp_path / "victim"  # say, /etc/cron.d/x: root must not create or chmod it
    (shared / DB_NAME).symlink_to(victim)
    with pytest.raises(StoreError, match="writable by other users"):
        Store.open(shared)
    assert not victim.exists()
    assert stat.S_IMODE(shared.stat().st_mode) == 0o777  # not "fixed" behind the user's back
    proc = run_cli("--store", str(shared), "record", "--duration", "1s", "--no-profile")
    assert proc.returncode == 2, proc.stderr
    assert "writable by other users" in proc.stderr and "Traceback" not in proc.stderr
    assert not victim.exists()


def test_a_symlinked_file_in_a_private_store_is_refused(tmp_path):
    d = tmp_path / "mine"
    d.mkdir(mode=0o700)
    victim = tmp_path / "victim"
    victim.write_text("keep me")
    # its mode said outright, whatever the worker's umask (until Store.open stopped narrowing
    # the process-wide umask, a store opened in another thread at that moment made it 0600)
    victim.chmod(0o644)
    (d / (DB_NAME + "-wal")).symlink_to(victim)
    with pytest.raises(StoreError, match="symlink"):
        Store.open(d)
    assert victim.read_text() == "keep me"
    assert stat.S_IMODE(victim.stat().st_mode) != 0o600 or os.geteuid() != 0


# --- bad replay times ------------------------------------------------------------------------

def test_replay_frames_with_nan_inf_backwards_and_huge_times(tmp_path):
    root = write_replay(tmp_path / "root", ncpu=4, seconds=20, t0=T0, hot_cpu=1, hot_start=2,
                        hot_len=5, seed=3)
    frames = root / "frames"
    for idx, bad in ((5, "nan"), (8, "inf"), (11, f"{T0 + 2:.6f}"), (14, "1e300"),
                     (15, "-inf")):
        (frames / f"{idx:06d}" / ".time").write_text(bad + "\n")
    store = tmp_path / "store"
    proc = run_cli("--root", str(root), "--store", str(store), "record", timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.count("frame skipped") == 5, proc.stderr
    out = run_cli("--store", str(store), "cores", "--last", "1h", "--json", timeout=60)
    assert out.returncode in (0, 1), out.stderr
    data = json.loads(out.stdout)
    assert data["samples"] == 21 - 5 - 1  # 16 good frames give 15 intervals
    assert data["end"] == pytest.approx(T0 + 20)
    # doctor replays the same frames: it must finish (it used to spin at 100 % CPU)
    doc = run_cli("--root", str(root), "--store", str(store), "doctor", "--json",
                  "--since", f"{T0 - 60:.0f}", timeout=60)
    assert doc.returncode in (0, 1), doc.stderr
    assert json.loads(doc.stdout)["sensors"]["cores"]["ok"] is True


def test_one_bad_stored_row_or_block_does_not_break_reads_or_folding(tmp_path):
    root = write_replay(tmp_path / "root", ncpu=4, seconds=90, t0=T0, seed=4)
    store = tmp_path / "store"
    run_cli("--root", str(root), "--store", str(store), "record", check=True)
    conn = sqlite3.connect(store / DB_NAME)
    # what an older, unchecked recorder could have left: a garbage block, raw rows with an
    # infinite time, a huge one and a negative interval, a row with a truncated payload
    conn.execute("INSERT INTO core_blocks (t0, t1, n, payload) VALUES (?, ?, ?, ?)",
                 (T0 + 30, T0 + 40, 10, b"\x28\xb5\x2f\xfdgarbage"))
    row = (1).to_bytes(4, "little") + bytes(44)
    conn.executemany("INSERT INTO core_recent VALUES (?, ?, ?)", [
        (float("inf"), 1.0, row), (1e300, 1.0, row), (T0 + 95, -1.0, row),
        (T0 + 96, 1.0, row[:9]),
    ])
    conn.commit()
    conn.close()
    out = run_cli("--store", str(store), "cores", "--last", "1h", "--json")
    assert out.returncode in (0, 1), out.stderr
    assert "Traceback" not in out.stderr
    assert "skipped" in out.stderr  # said, not silent
    assert json.loads(out.stdout)["samples"] == 90
    rep = run_cli("--store", str(store), "report", "--last", "1h", "--json")
    assert rep.returncode in (0, 1) and "Traceback" not in rep.stderr, rep.stderr
    # the next fold drops the unusable raw rows instead of failing on them forever
    with Store.open(store) as s:
        from corescope.store.series_writer import SeriesWriter

        SeriesWriter(s).flush()
        assert s.query("SELECT COUNT(*) FROM core_recent")[0][0] == 0


# --- a corrupt store -------------------------------------------------------------------------

def _corrupt(db) -> None:
    size = db.stat().st_size
    with open(db, "r+b") as f:  # keep the header page, smash the rest
        f.seek(4096)
        f.write(os.urandom(max(0, size - 4096)))


def test_record_moves_a_corrupt_store_aside_and_records_into_a_fresh_one(tmp_path):
    root = write_replay(tmp_path / "root", ncpu=8, seconds=300, t0=T0, seed=5)
    store = tmp_path / "store"
    run_cli("--root", str(root), "--store", str(store), "record", check=True)
    _corrupt(store / DB_NAME)
    proc = run_cli("--store", str(store), "record", "--duration", "2s", "--no-profile",
                   "--no-kmsg", "--no-netdev", "--no-census", timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "corrupt" in proc.stderr and "moved it aside" in proc.stderr, proc.stderr
    aside = sorted(store.glob(DB_NAME + ".corrupt-*"))
    assert aside, list(store.iterdir())
    for f in aside:
        assert stat.S_IMODE(f.stat().st_mode) == 0o600
    out = run_cli("--store", str(store), "cores", "--last", "1m", "--json")
    assert out.returncode in (0, 1), out.stderr
    assert json.loads(out.stdout)["samples"] >= 1


def test_reading_commands_report_a_corrupt_store(tmp_path):
    root = write_replay(tmp_path / "root", ncpu=8, seconds=300, t0=T0, seed=5)
    store = tmp_path / "store"
    run_cli("--root", str(root), "--store", str(store), "record", check=True)
    _corrupt(store / DB_NAME)
    for cmd in (["cores", "--last", "1h", "--json"], ["report", "--last", "1h", "--json"],
                ["events", "--json"]):
        proc = run_cli("--store", str(store), *cmd)
        assert proc.returncode == 2, (cmd, proc.stdout)
        assert "Traceback" not in proc.stderr, (cmd, proc.stderr)
        assert "corrupt" in proc.stderr, (cmd, proc.returncode, proc.stderr)
    # zombies reads the live node too: it goes on, and says the store is not usable
    proc = run_cli("--store", str(store), "zombies", "--json")
    assert "Traceback" not in proc.stderr, proc.stderr
    assert "corrupt" in proc.stderr and "live node only" in proc.stderr, proc.stderr
    json.loads(proc.stdout)


def test_damaged_block_pages_are_found_when_read(tmp_path):
    """A reading command's check at open leaves out the per-core blocks (most of the store's
    pages; a query reads only the blocks it decodes): damage there is found when the pages
    are read, and reported (a corrupt store, or a block skipped), never a traceback. The
    recorder's full check at start finds it."""
    root = write_replay(tmp_path / "root", ncpu=64, seconds=300, t0=T0, seed=5)
    store = tmp_path / "store"
    run_cli("--root", str(root), "--store", str(store), "record", check=True)
    conn = sqlite3.connect(store / DB_NAME)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    page = conn.execute("PRAGMA page_size").fetchone()[0]
    kinds = dict(conn.execute("SELECT pagetype, COUNT(*) FROM dbstat "
                              "WHERE name = 'core_blocks' GROUP BY pagetype").fetchall())
    pages = [r[0] for r in conn.execute(
        "SELECT pageno FROM dbstat WHERE name = 'core_blocks' AND pagetype = 'overflow'")]
    conn.close()
    assert pages, kinds  # 64 CPUs' minute overflows its leaf page
    with open(store / DB_NAME, "r+b") as f:  # next-page pointers and contents: all 0xff
        for p in pages:
            f.seek((p - 1) * page)
            f.write(b"\xff" * page)
    with Store.open(store, create=False) as s:  # the reader's check does not read them
        assert s.integrity_problem(skip=READER_UNCHECKED) is None
        assert "invalid page number" in (s.integrity_problem() or "")  # the recorder's
    # (the newest block is always decoded: the CPU list comes from the last sample)
    proc = run_cli("--store", str(store), "cores", "--last", "1h", "--json")
    assert "Traceback" not in proc.stderr, proc.stderr
    if proc.returncode == 2:  # SQLite found a page it could not follow
        assert "corrupt" in proc.stderr, proc.stderr
    else:  # the pages read, their contents not a block: skipped, and said
        assert "skipped: corrupt series block" in proc.stderr, proc.stderr


# --- option validation -----------------------------------------------------------------------

@pytest.mark.parametrize("args", [
    ["record", "--retain", "0"],
    ["record", "--max-bytes", "-1"],
    ["record", "--max-bytes", "inf"],
    ["record", "--max-bytes", "0"],
    ["record", "--duration", "0"],
    ["record", "--profile-retain", "0s"],
    ["record", "--profile-max-bytes", "-5M"],
    ["cores", "--threshold", "nan"],
    ["cores", "--last", "0"],
    ["cores", "--since", "nan"],
    ["cores", "--until", "1e300"],
    ["zombies", "--ratio", "nan"],
    ["zombies", "--interval", "0"],
    ["flame", "--at", "inf"],
])
def test_absurd_numeric_options_are_refused(tmp_path, args):
    proc = run_cli("--store", str(tmp_path / "s"), *args, timeout=30)
    assert proc.returncode == 2, (args, proc.returncode, proc.stderr)
    assert "Traceback" not in proc.stderr
    assert args[1] in proc.stderr, proc.stderr  # the message names the option
