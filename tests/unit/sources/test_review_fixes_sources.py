"""Review fixes: one boot-id reader, the kmsg sensor's shutdown race, huge numbers in saved
logs, and `report`'s no-store hint."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest
from click.testing import CliRunner

from corescope.rootfs import Root
from corescope.runner import Runner
from corescope.sensors import kmsg as kmsg_sensor
from corescope.sensors.base import RecordOptions, SensorEnv
from corescope.sources import boot, cgroups
from corescope.sources.kmsg_clock import anchor_clock
from corescope.sources.kmsg_records import parse_kmsg_record
from corescope.sources.kmsg_saved import parse_journal_json, parse_saved_log
from corescope.sources.kmsg_text import parse_dmesg
from corescope.views.cli import cli

BID = "ce99e544-b9d9-455d-a5b1-83790e1aa6ff"


# --- boot id ----------------------------------------------------------------------------------


def test_read_boot_id(tmp_path: Path) -> None:
    root = Root.of(tmp_path)
    assert boot.read_boot_id(root) is None  # missing
    p = root.path(boot.BOOT_ID_PATH)
    p.parent.mkdir(parents=True)
    p.write_text("\n")
    assert boot.read_boot_id(root) is None  # empty
    p.write_text(BID + "\n")
    assert boot.read_boot_id(root) == BID


def test_one_boot_id_reader() -> None:
    assert kmsg_sensor.read_boot_id is boot.read_boot_id
    assert cgroups.read_boot_id is boot.read_boot_id
    assert not hasattr(cgroups, "boot_id")


# --- the kmsg sensor's close() ----------------------------------------------------------------


def _sensor(tmp_path: Path, thread: threading.Thread) -> tuple[kmsg_sensor.KmsgSensor, int,
                                                                list[int]]:
    sensor = kmsg_sensor.KmsgSensor(SensorEnv(Root(), Runner(), tmp_path, RecordOptions()))
    r, w = os.pipe()
    os.close(w)
    drained: list[int] = []
    sensor._fd = r
    sensor._store = object()  # type: ignore[assignment]
    sensor._reader = object()  # type: ignore[assignment]
    sensor.drain = lambda: drained.append(1) or []  # type: ignore[method-assign]
    sensor._thread = thread
    return sensor, r, drained


def test_close_skips_drain_while_reader_thread_still_runs(tmp_path: Path) -> None:
    release = threading.Event()
    t = threading.Thread(target=release.wait, daemon=True)  # a drain stuck past the join
    t.start()
    sensor, fd, drained = _sensor(tmp_path, t)
    try:
        sensor.close()
        assert drained == []  # not drained from a second thread
        os.fstat(fd)  # and the fd the thread uses is still open
    finally:
        release.set()
        t.join()
        os.close(fd)


def test_close_drains_once_the_thread_has_exited(tmp_path: Path) -> None:
    t = threading.Thread(target=lambda: None)
    t.start()
    sensor, fd, drained = _sensor(tmp_path, t)
    sensor.close()
    assert drained == [1] and sensor._fd is None
    with pytest.raises(OSError):
        os.fstat(fd)


# --- huge numbers in saved logs ---------------------------------------------------------------


@pytest.mark.parametrize("text", [
    '{"MESSAGE":[1e400]}',
    '{"MESSAGE":[Infinity, 65]}',
    '{"MESSAGE":"x","__REALTIME_TIMESTAMP":1e400}',
    '{"MESSAGE":"x","__REALTIME_TIMESTAMP":-Infinity}',
    '{"MESSAGE":"x","__REALTIME_TIMESTAMP":' + "9" * 400 + "}",
    '{"MESSAGE":"x","_SOURCE_MONOTONIC_TIMESTAMP":' + "9" * 400 + ',"PRIORITY":1e308}',
])
def test_journal_huge_numbers_do_not_crash(text: str) -> None:
    recs, _ = parse_journal_json(text)
    for r in recs:
        assert r.wall is None and r.usec is None and r.level is None


def test_journal_int64_values_are_kept() -> None:
    recs, _ = parse_journal_json('{"MESSAGE":"x","__REALTIME_TIMESTAMP":1700000000000000,'
                                 '"_SOURCE_MONOTONIC_TIMESTAMP":9223372036854775807}')
    assert recs[0].wall == 1_700_000_000.0 and recs[0].usec == 2**63 - 1


def test_kmsg_header_beyond_int64_is_a_diagnostic() -> None:
    rec, diags = parse_kmsg_record(b"6,1," + b"9" * 400 + b",-;hello\n")
    assert rec is None and "out of range" in diags[0].message
    recs, _ = parse_saved_log(b"6,1," + b"9" * 400 + b",-;hello\n")
    for r in recs:  # what events --file does with each record: must stay a finite float
        if r.usec is not None:
            anchor_clock().wall_of(r.usec)


@pytest.mark.parametrize("digits", [13, 5000])
def test_dmesg_stamp_with_too_many_digits_has_no_clock(digits: int) -> None:
    for line in (b"[ " + b"1" * digits + b".123456] x", b"<6>[ " + b"1" * digits + b".1] x"):
        recs, _ = parse_dmesg(line)
        assert len(recs) == 1 and recs[0].usec is None


# --- the no-store hint ------------------------------------------------------------------------


def test_no_store_hint_matches_the_command(tmp_path: Path) -> None:
    store = str(tmp_path / "nostore")
    rep = CliRunner().invoke(cli, ["--store", store, "report"])
    assert rep.exit_code == 2 and "corescope record" in rep.output
    assert "--file" not in rep.output  # report has no --file
    ev = CliRunner().invoke(cli, ["--store", store, "events"])
    assert ev.exit_code == 2 and "--file" in ev.output
