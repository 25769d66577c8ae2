"""`analyze` with no window reads everything imported: a kernel log that reaches back before
the per-core record keeps its NIC resets in the investigation (they are the question), and
with no per-core samples around them the diagnosis says it cannot tell, not `healthy`."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from support import FIXTURES, run_cli

# the ENA driver's own stall and reset lines (ena_netdev.c), a day before the mpstat fixture
STALL = ("2026-11-29T15:00:00,100000+00:00 ena 0000:00:05.0 eth0: TX q 5 is paused for too "
         "long (threshold 5000000). Time since last napi 6120000 usec. napi scheduled: 1\n"
         "2026-11-29T15:00:00,300000+00:00 ena 0000:00:05.0 eth0: Trigger reset is on\n")


def test_old_resets_stay_in_the_window_and_leave_the_cause_open(tmp_path: Path) -> None:
    art = tmp_path / "node"
    art.mkdir()
    shutil.copy(FIXTURES / "artifacts" / "mpstat12.json", art / "mpstat.json")
    (art / "dmesg.txt").write_text(STALL)
    proc = run_cli("analyze", str(art), "--json")
    assert proc.returncode in (0, 1), proc.stderr
    inv = json.loads(proc.stdout)["investigation"]
    kinds = [e["kind"] for e in inv["events"]["events"]]
    assert "nic_tx_stall" in kinds and "nic_reset" in kinds, kinds
    verdict = inv["report"]["diagnosis"]["verdict"]
    assert verdict["root_cause"] == "undetermined", verdict
    hw = {h["name"]: h for h in inv["report"]["diagnosis"]["hypotheses"]}["hardware_fault"]
    assert hw["verdict"] == "not_measured", hw
    assert proc.returncode == 1  # NIC resets are findings
