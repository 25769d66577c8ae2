"""A saved dmesg of several boots (a persistent log, or dmesg files saved one after another):
the since-boot stamps start again at each boot. Only the last boot is placed with the boot time
(this machine's, or the import's); an earlier boot is placed by its own lines when it has them
(the RTC's `setting system clock to`), else it is left out and said: never on the last boot's
timeline.

The lines are as the kernel prints them: init/version.c linux_banner (`Linux version ...`),
arch/x86/kernel/setup.c (`Command line: ...`), drivers/rtc/class.c rtc_hctosys (`rtc_cmos
00:00: setting system clock to %ptR UTC (%lld)`), amazon/ena/ena_netdev.c (the incidents);
stamps, versions and numbers made up."""

from __future__ import annotations

from pathlib import Path

import pytest

from corescope.analysis.boots import Boots
from corescope.ingest import blocks, import_paths
from corescope.model.events import KmsgRecord
from corescope.store.db import Store
from corescope.store.events import read_events
from support.kernel_logs import BOOT, events_of

BANNER = ("Linux version 6.1.0-13-cloud-amd64 (debian-kernel@lists.debian.org) (gcc-12 "
          "(Debian 12.2.0-14) 12.2.0, GNU ld (GNU Binutils for Debian) 2.40) #1 SMP "
          "PREEMPT_DYNAMIC Debian 6.1.55-1 (2023-09-29)")
CMDLINE = "Command line: BOOT_IMAGE=/boot/vmlinuz-6.1.0-13-cloud-amd64 root=UUID=1b3c ro"
RTC_EPOCH = 1696509296
THREE_BOOTS = (
    # boot 0: nothing in it gives the wall clock
    f"[    0.000000] {BANNER}\n[    0.000000] {CMDLINE}\n"
    "[ 5012.123456] ena 0000:00:05.0 eth0: TX q 5 is paused for too long (threshold 5000000)\n"
    "[ 5013.000001] ena 0000:00:05.0 eth0: Trigger reset is on\n"
    # boot 1: its RTC line places it
    f"[    0.000000] {BANNER}\n[    0.000000] {CMDLINE}\n"
    "[    1.043127] rtc_cmos 00:00: setting system clock to 2023-10-05T12:34:56 UTC "
    f"({RTC_EPOCH})\n"
    "[   12.345678] ena 0000:00:05.0 eth0: Trigger reset is on\n"
    # boot 2, the last: placed with the boot time
    f"[    0.000000] {BANNER}\n"
    "[   42.000000] ena 0000:00:05.0 eth0: Trigger reset is on\n")


def test_boots_are_numbered_where_the_stamps_start_again() -> None:
    b = Boots()
    got = [b.feed(KmsgRecord(m, u)) for m, u in [
        (BANNER, 0), ("a", 5_000_000), ("b", 4_999_990),  # a few usec back: the same boot
        ("c", 3_000_000),  # a second back: a new boot
        ("d", 3_500_000), (BANNER, 3_400_000)]]  # the banner always starts one
    assert got == [0, 0, 0, 1, 1, 2] and b.count == 3


def test_events_file_places_only_the_last_boot_on_the_boot_time() -> None:
    evs, _, clock = events_of(THREE_BOOTS)
    got = [(e.kind, round(e.time, 6)) for e in evs if e.is_incident]
    assert got == [("nic_reset", round(RTC_EPOCH - 1.043127 + 12.345678, 6)),
                   ("nic_reset", BOOT + 42.0)]
    assert "3 boots" in clock and "left out" in clock


@pytest.mark.parametrize("tiny", [False, True], ids=["whole", "block by block"])
def test_import_places_only_the_last_boot_on_the_boot_time(
        tiny: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if tiny:
        import importlib

        monkeypatch.setattr(importlib.import_module("corescope.ingest.gather"),
                            "STREAM_BYTES", 300)
        monkeypatch.setattr(blocks, "BLOCK_BYTES", 512)
    (tmp_path / "dmesg.txt").write_text(THREE_BOOTS)
    with Store.open(tmp_path / "s", create=True) as st:
        rep = import_paths([tmp_path / "dmesg.txt"], st, boot_time=BOOT)
        got = [(e.kind, round(e.time, 6)) for e in read_events(st, 0, 4e9) if e.is_incident]
    assert got == [("nic_reset", round(RTC_EPOCH - 1.043127 + 12.345678, 6)),
                   ("nic_reset", BOOT + 42.0)]
    assert "3 boots" in (rep.files[0].reason or "")
