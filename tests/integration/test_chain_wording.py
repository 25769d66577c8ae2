"""The diagnosis chain's last step says what its evidence counted. A NIC stall after a
saturated core that no reset followed once read "0 NIC resets"; one reset read "1 NIC
resets". The store is written the way `record` writes it (blocks of per-core ticks, classified
kernel events), from ENA lines in the formats INCIDENT-era drivers print."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest

from corescope.analysis.classify import classify
from corescope.model.events import KernelEvent
from corescope.model.matrix import NF
from corescope.store import events as store_events
from corescope.store.db import Store
from corescope.store.series_writer import INSERT_BLOCK, block_row
from support import run_cli_json

STALL = ("ena 0000:00:05.0 eth0: TX hasn't completed, qid 1, index 801. 129 msecs since last "
         "interrupt, 5320 msecs since last napi execution, napi scheduled: 1")
RESET = "ena 0000:00:05.0 eth0: Trigger reset is on"


def _store(path: Path, lines: list[str]) -> None:
    """10 minutes of 4 CPUs at 1 Hz, cpu2 at 100% system time for 8 s from second 300, and
    `lines` in the kernel log 3 s after the saturation ends."""
    n, ncpu = 600, 4
    t0 = time.time() - n - 60
    ticks = np.zeros((n, ncpu, NF), np.int64)
    ticks[..., 0], ticks[..., 3] = 10, 90  # user, idle
    ticks[300:308, 2] = 0
    ticks[300:308, 2, 2] = 100  # system
    rows = []
    for b0 in range(0, n, 60):
        t = t0 + np.arange(b0 + 1, b0 + 61, dtype=np.float64)
        rows.append(block_row(t, np.ones(60), np.arange(ncpu), ticks[b0:b0 + 60],
                              np.ones((60, ncpu), bool)))
    with Store.open(path) as store:
        with store.write() as c:
            c.executemany(INSERT_BLOCK, rows)
        evs = []
        for k, msg in enumerate(lines):
            cl = classify(msg)
            evs.append(KernelEvent(time=t0 + 308 + 3 + 0.1 * k, kind=cl.kind, raw=msg,
                                   driver=cl.driver, device=cl.device, fields=cl.fields))
        store_events.insert_events(store, evs)


@pytest.mark.parametrize("lines,want", [
    ([STALL], "no NIC reset; 1 NIC incident (nic_tx_stall), 3."),
    ([STALL, RESET], "1 NIC reset, 3."),
])
def test_the_last_step_names_what_followed(tmp_path: Path, lines: list[str], want: str) -> None:
    _store(tmp_path / "s", lines)
    d = run_cli_json("--store", str(tmp_path / "s"), "report", "--last", "1h", "--json")
    chain = {link["step"]: link for link in d["diagnosis"]["chain"]}
    assert chain["core_saturated"]["evidence"]["cpu"]["value"] == 2
    assert chain["reset"]["summary"].startswith(want), chain["reset"]
