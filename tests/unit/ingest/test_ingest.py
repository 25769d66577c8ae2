"""The importer's own rules: boot-time anchoring (found, given, twin logs, none), duplicate
logs, one per-core source per stretch, undated snapshots, re-imports, the imports table."""

from __future__ import annotations

import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from corescope.ingest import import_paths
from corescope.store.db import Store
from corescope.store.events import read_events
from corescope.store.imports import read_imports
from corescope.store.series import read_samples
from support import FIXTURES

ART = FIXTURES / "artifacts"
BTIME = 1796052546
STALL_USEC = 342_006_981  # `[  342.006981] ena ... TX q 5 is paused` in the captures


def _folder(tmp_path: Path, *names: str) -> Path:
    d = tmp_path / "in"
    d.mkdir()
    for n in names:
        shutil.copy(ART / n, d / n)
    return d


def _stall_times(store: Store) -> list[float]:
    """`TX q 5 is paused` (the first) and `napi handler hasn't been called` are both stalls."""
    return [e.time for e in read_events(store, 0, 4e9) if e.kind == "nic_tx_stall"]


def test_btime_anchors_a_plain_dmesg(tmp_path: Path) -> None:
    d = _folder(tmp_path, "dmesg.txt", "procstat_loop_date.txt")
    with Store.open(tmp_path / "s") as st:
        rep = import_paths([d], st)
        assert rep.boot_time == BTIME and rep.boot_time_how == "btime in /proc/stat"
        assert _stall_times(st)[0] == pytest.approx(BTIME + STALL_USEC / 1e6)


@pytest.fixture
def utc(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The captures were printed on a node in UTC, and `dmesg -T` stamps carry no zone: they
    are read in the zone the import runs in, so the test pins it (it failed under
    TZ=America/Los_Angeles)."""
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    try:
        yield
    finally:
        monkeypatch.undo()
        time.tzset()


def test_twin_logs_anchor_each_other_and_are_stored_once(tmp_path: Path, utc: None) -> None:
    d = _folder(tmp_path, "dmesg.txt", "dmesg_iso.txt", "dmesg_T.txt")
    with Store.open(tmp_path / "s") as st:
        rep = import_paths([d], st)
        # dmesg computes -T/iso stamps from its own idea of the boot time: the same instant
        assert rep.boot_time == pytest.approx(BTIME, abs=1.0)
        assert "with and without wall-clock stamps" in (rep.boot_time_how or "")
        assert len(_stall_times(st)) == 2
        by = {Path(f.path).name: f for f in rep.files}
        assert sum(f.records for f in by.values()) == 45
        assert sum("already imported from another file" in (f.reason or "")
                   for f in by.values()) == 2


def test_given_boot_time_wins(tmp_path: Path) -> None:
    d = _folder(tmp_path, "dmesg_r.txt", "procstat_loop_epoch.txt")
    with Store.open(tmp_path / "s") as st:
        rep = import_paths([d], st, boot_time=1_800_000_000.0)
        assert rep.boot_time_how == "--boot-time"
        assert _stall_times(st)[0] == pytest.approx(1_800_000_000 + STALL_USEC / 1e6)
        by = {Path(f.path).name: f for f in rep.files}
        assert "differs from the one used" in (by["procstat_loop_epoch.txt"].reason or "")


def test_no_boot_time_imports_unanchored_and_says_how_to_fix(tmp_path: Path) -> None:
    d = _folder(tmp_path, "dmesg_x.txt")
    with Store.open(tmp_path / "s") as st:
        rep = import_paths([d], st)
        f = rep.files[0]
        assert f.status == "unanchored" and f.records == 45
        assert "--boot-time" in (f.reason or "")
        assert _stall_times(st)[0] == pytest.approx(STALL_USEC / 1e6)  # seconds since boot
        assert rep.span is None  # an unanchored file does not make up a time span


def test_one_core_source_per_stretch(tmp_path: Path) -> None:
    # the same seconds from sadf (UTC, exact intervals) and from mpstat text
    d = _folder(tmp_path, "sadf.json", "sadf_u.json")
    with Store.open(tmp_path / "s") as st:
        rep = import_paths([d], st)
        assert sorted(f.records for f in rep.files) == [0, 3]
        assert len(read_samples(st, 0, 4e9)) == 3


def test_undated_snapshots_are_placed_at_the_end_of_the_span(tmp_path: Path) -> None:
    d = _folder(tmp_path, "census_loop.txt")
    shutil.copy(FIXTURES / "zombies" / "tools" / "systemctl_show.txt", d / "units.txt")
    with Store.open(tmp_path / "s") as st:
        rep = import_paths([d], st)
        by = {Path(f.path).name: f for f in rep.files}
        assert rep.span is not None
        assert by["units.txt"].span == (rep.span[1], rep.span[1])
        assert "no time of its own" in (by["units.txt"].reason or "")


def test_reimport_is_recognised_and_recorded(tmp_path: Path) -> None:
    d = _folder(tmp_path, "census_loop.txt", "sar_sa.bin")
    with Store.open(tmp_path / "s") as st:
        first = import_paths([d], st)
        second = import_paths([d], st)
        rows = read_imports(st)
    assert [f.records for f in first.files] == [4, 0]
    assert all(f.records == 0 for f in second.files)
    assert "already imported" in (second.files[0].reason or "")
    assert len(rows) == 4
    assert {r.status for r in rows} == {"imported", "skipped"}
    assert rows[0].kind == "census_loop" and rows[0].sha256


def test_missing_path_is_a_skipped_line(tmp_path: Path) -> None:
    with Store.open(tmp_path / "s") as st:
        rep = import_paths([tmp_path / "nope"], st)
    assert rep.files[0].status == "skipped" and "No such file" in (rep.files[0].reason or "")


def test_dmesg_notime_is_named_in_the_reason(tmp_path: Path) -> None:
    d = _folder(tmp_path, "dmesg_notime.txt")
    with Store.open(tmp_path / "s") as st:
        rep = import_paths([d], st)
    assert rep.files[0].status == "skipped"
    assert "without timestamps" in (rep.files[0].reason or "")


def _kern_log(tmp_path: Path, off_s: float) -> Path:
    """A kern.log of ENA lines as rsyslog writes them (`Mon DD HH:MM:SS host kernel: [ sec.usec]
    ...`: traditional stamps, no zone), written on a node whose clock reads `off_s` from
    this machine's local time, beside the node's /proc/stat loop (btime, UTC)."""
    import time

    d = _folder(tmp_path, "procstat_loop_date.txt")
    lines = []
    for usec, msg in ((STALL_USEC, "ena 0000:00:05.0 eth0: TX q 5 is paused for too long "
                                   "(threshold 5000000). Time since last napi 6120000 usec. "
                                   "napi scheduled: 1"),
                      (STALL_USEC + 21, "ena 0000:00:05.0 eth0: Trigger reset is on"),
                      (STALL_USEC + 910_000, "ena 0000:00:05.0 eth0: Device reset completed "
                                             "successfully, Driver info: Elastic Network "
                                             "Adapter (ENA) v2.8.0g")):
        wall = BTIME + usec / 1e6 + 0.4 + off_s  # syslog stamps a moment after the kernel
        stamp = time.strftime("%b %e %H:%M:%S", time.localtime(wall))
        lines.append(f"{stamp} node-17 kernel: [{usec // 1_000_000:5d}.{usec % 1_000_000:06d}] "
                     f"{msg}\n")
    (d / "kern.log").write_text("".join(lines))
    return d


def test_a_kern_log_from_another_time_zone_is_placed_by_its_kernel_stamps(
        tmp_path: Path) -> None:
    # the node ran on US Pacific (8 h behind): its syslog stamps, read here, are 8 h early;
    # the kernel's since-boot stamps and btime say when the lines really were
    d = _kern_log(tmp_path, -8 * 3600)
    with Store.open(tmp_path / "s") as st:
        rep = import_paths([d], st)
        assert rep.boot_time == BTIME
        assert _stall_times(st)[0] == pytest.approx(BTIME + STALL_USEC / 1e6)
        log = next(f for f in rep.files if Path(f.path).name == "kern.log")
        assert "8 h behind" in (log.reason or ""), log.reason


def test_a_kern_log_off_by_no_zone_keeps_its_stamps(tmp_path: Path) -> None:
    # 37 min 13 s off is no time zone (another node's log, a clock set wrong): kept as printed
    d = _kern_log(tmp_path, -(37 * 60 + 13))
    with Store.open(tmp_path / "s") as st:
        import_paths([d], st)
        assert _stall_times(st)[0] == pytest.approx(BTIME + STALL_USEC / 1e6 - 2233, abs=1.0)
