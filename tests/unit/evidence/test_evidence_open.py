"""Evidence chosen once (evidence/open.py): the node's evidence with no store, with a store
that cannot be read, and with a recorded one; a saved log's evidence, and a log that cannot be
read; the flame views' profile source (the store's ring, or saved perf script files in a
temporary ring); the stores commands open. In-process, over the zombie fixture tree as the node
(--root), the captured perf script fixtures and real store files."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from corescope.errors import InvalidInput
from corescope.evidence.live import LiveEvidence
from corescope.evidence.merged import MergedEvidence
from corescope.evidence.open import (
    existing_store,
    log_evidence,
    node_evidence,
    open_store,
    profile_input,
    profile_modules,
    recording_store,
    ring_events,
    scratch_store,
)
from corescope.evidence.store import StoreEvidence
from corescope.model.common import Diagnostic
from corescope.rootfs import Root
from corescope.runner import Runner
from corescope.store.db import Store, StoreError
from support import FIXTURES

NODE = Root(FIXTURES / "zombies" / "hybrid")
PROFILES = FIXTURES / "profiles"


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


@pytest.fixture
def tmpdir_here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Temporary directories made under this test's own folder, to see them go."""
    where = tmp_path / "tmp"
    where.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(where))
    return where


def test_perf_script_files_are_a_temporary_ring_gone_on_close(tmp_path: Path,
                                                              tmpdir_here: Path) -> None:
    diags: list[Diagnostic] = []
    inputs = (str(PROFILES / "spin_realtime_ring.txt"), str(PROFILES / "spin_boot_ring.txt"))
    src = profile_input(tmp_path / "no-store", Runner(), inputs, None, diags, None)
    try:
        assert src.offline and len(src.all_chunks()) == 2
        assert [p.name[:16] for p in tmpdir_here.iterdir()] == ["corescope-flame-"]
        # one input on the wall clock, one on perf's boot clock with no boot time to place it
        assert any("mix wall-clock and boot-relative" in d.message for d in diags)
    finally:
        src.close()
    assert not any(tmpdir_here.iterdir())
    assert "corescope.ingest.perf_write" in profile_modules(inputs)
    assert "corescope.ingest.perf_write" not in profile_modules(())


def test_perf_script_files_without_samples_are_invalid_input(tmp_path: Path,
                                                             tmpdir_here: Path) -> None:
    (tmp_path / "notes.txt").write_text("called the on-call at 03:10\n")
    said = r"no samples in the --perf-script input \(.*notes.txt: not perf"  # and which file
    with pytest.raises(InvalidInput, match=said):
        profile_input(tmp_path, Runner(), (str(tmp_path / "notes.txt"),), None, [], None)
    assert not any(tmpdir_here.iterdir())  # the temporary ring went with the error


def test_no_inputs_is_the_store_ring_and_its_own_events(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="no store at"):
        profile_input(tmp_path / "none", Runner(), (), None, [], None)
    Store.open(tmp_path, create=True).close()
    diags: list[Diagnostic] = []
    src = profile_input(tmp_path, Runner(), (), None, diags, None)
    try:
        assert not src.offline and src.diags is diags
        ev = ring_events(tmp_path / "unused", Runner(), src)
        assert isinstance(ev, StoreEvidence) and ev.store is src.store
    finally:
        src.close()


def test_the_stores_commands_open(tmp_path: Path, tmpdir_here: Path) -> None:
    with pytest.raises(StoreError, match="no store at"):
        open_store(tmp_path / "a")
    open_store(tmp_path / "a", create=True).close()
    open_store(tmp_path / "a").close()
    with scratch_store("corescope-test-") as store:
        assert store.directory.parent.parent == tmpdir_here
    assert not any(tmpdir_here.iterdir())
    (tmp_path / "b").mkdir(mode=0o700)
    (tmp_path / "b" / "corescope.db").write_bytes(b"not a database" * 100)
    said: list[str] = []
    recording_store(tmp_path / "b", said.append).close()  # the recorder goes on, on a new one
    assert len(said) == 1 and "moved it aside" in said[0]
