"""Evidence chosen once (evidence/open.py): the node's evidence with no store, with a store
that cannot be read, and with a recorded one; a saved log's evidence, and a log that cannot be
read. In-process, over the zombie fixture tree as the node (--root) and real store files."""

from __future__ import annotations

from pathlib import Path

import pytest

from corescope.errors import InvalidInput
from corescope.evidence.live import LiveEvidence
from corescope.evidence.merged import MergedEvidence
from corescope.evidence.open import existing_store, log_evidence, node_evidence
from corescope.rootfs import Root
from corescope.runner import Runner
from corescope.store.db import Store, StoreError
from support import FIXTURES

NODE = Root(FIXTURES / "zombies" / "hybrid")


def test_no_store_is_the_live_node_and_a_status_line(tmp_path: Path) -> None:
    got = node_evidence(tmp_path / "none", NODE, Runner())
    assert isinstance(got.evidence, LiveEvidence)
    assert [s.name for s in got.statuses] == ["store"] and not got.statuses[0].ok
    assert "no store at" in got.statuses[0].detail and not got.warnings
    assert existing_store(tmp_path / "none") is None


def test_an_unreadable_store_is_said_and_the_live_node_read(tmp_path: Path) -> None:
    (tmp_path / "corescope.db").write_bytes(b"not a database" * 100)
    with pytest.raises(StoreError):
        existing_store(tmp_path)
    got = node_evidence(tmp_path, NODE, Runner())
    assert isinstance(got.evidence, LiveEvidence)
    assert not got.statuses[0].ok and "live read only" in got.statuses[0].detail
    assert len(got.warnings) == 1 and "reading the live node only" in got.warnings[0]


def test_a_recorded_store_is_merged_with_the_live_node_unless_the_window_is_past(
        tmp_path: Path) -> None:
    Store.open(tmp_path, create=True).close()
    now = node_evidence(tmp_path, NODE, Runner())
    assert isinstance(now.evidence, MergedEvidence) and not now.statuses
    now.evidence.close()
    past = node_evidence(tmp_path, NODE, Runner(), now=False)
    assert not isinstance(past.evidence, MergedEvidence | LiveEvidence)
    past.evidence.close()


def test_a_saved_log_and_one_that_cannot_be_read(tmp_path: Path) -> None:
    log = log_evidence(FIXTURES / "events" / "dmesg_incidents.txt")
    kinds = {e.kind for e in log.evidence.events(0, 4102444800)}
    assert {"nic_tx_stall", "nic_reset"} <= kinds and log.clock
    with pytest.raises(InvalidInput, match="cannot read"):
        log_evidence(tmp_path / "missing.log")
    with pytest.raises(InvalidInput):
        log_evidence(Path("/dev/zero"))
