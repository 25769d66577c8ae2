"""Names that are not valid UTF-8 (a NIC named with raw bytes in a --root tree, a container
whose JSON name holds a lone surrogate) cost only themselves: the record is kept with the
bad characters escaped and a note, and every other NIC's and container's data goes on being
stored (SQLite refuses surrogates, so before this one such name failed the whole write, every
tick). Trees are real directories with real non-UTF-8 file names; the container runtime's
output is the captured crictl fixture with one name changed."""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

import pytest

from corescope.model.text import valid_text
from corescope.render import term
from corescope.rootfs import Root
from corescope.runner import RecordedRunner
from corescope.sensors import census as census_mod
from corescope.sensors.base import RecordOptions, SensorEnv
from corescope.sensors.census import CensusSensor, RestartSensor
from corescope.sensors.netdev import NetdevSensor
from corescope.store import census as cs
from corescope.store.db import Store
from support import FIXTURES
from support.nic_tree import nic_tree

TOOLS = FIXTURES / "zombies" / "tools"
BAD_NAMES = [b"eth\xff", b"\xc3(x", b"e\xed\xa0\x80", b"n\x1b[2J\xfe"]


def test_valid_text_escapes_only_surrogates() -> None:
    assert valid_text("ecs-agent ✓") == "ecs-agent ✓"
    assert valid_text(os.fsdecode(b"eth\xff")) == "eth\\udcff"
    assert valid_text("a\ud800b") == "a\\ud800b"
    assert valid_text("a\ud800b").encode("utf-8")


@pytest.mark.parametrize("bad", BAD_NAMES)
def test_nic_sensor_keeps_every_nic_beside_one_not_valid_utf8(tmp_path: Path,
                                                                bad: bytes) -> None:
    root = tmp_path / "r"
    net = nic_tree(root)
    # a second NIC, same device layout, named with raw bytes (Linux allows any but / and space)
    other = os.path.join(os.fsencode(net.parent), bad)
    shutil.copytree(net, os.fsdecode(other), symlinks=True)
    os.unlink(os.path.join(other, b"device"))
    os.symlink(b"../../devices/pci0000:00/0000:00:03.0/virtio2", os.path.join(other, b"device"))
    env = SensorEnv(Root(root), RecordedRunner({}), tmp_path / "s",
                    RecordOptions(netdev_interval_s=5.0))
    sensor = NetdevSensor(env)
    shown = valid_text(os.fsdecode(bad))
    with Store.open(tmp_path / "s") as store:
        status = sensor.open(store)
        assert status.ok and "not valid UTF-8" in status.detail and shown in status.detail
        status.detail.encode("utf-8")
        try:
            t0 = time.time()
            sensor.tick(t0, 100.0)
            (net / "queues/tx-0/tx_timeout").write_text("1\n")
            with open(os.path.join(other, b"statistics/rx_errors"), "w") as f:
                f.write("3\n")
            sensor.tick(t0 + 5, 105.0)
        finally:
            sensor.close()
        rows = {i: json.loads(c) for i, c in
                store.query("SELECT iface, counters FROM nic_counters WHERE time = ?",
                            (t0 + 5,))}
    # both NICs' counters, the bad one under its escaped name
    assert rows["eth0"]["tx-0.tx_timeout"] == 1
    assert rows[shown]["sys.rx_errors"] == 3


def test_restart_sensor_keeps_every_container_beside_a_lone_surrogate(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DOCKER_HOST", raising=False)
    doc = json.loads((TOOLS / "crictl_ps.json").read_text())
    doc["containers"][0]["metadata"]["name"] = "ecs-\ud800agent\n[fake] line"
    # json.dumps writes the surrogate as the \ud800 escape, as a runtime's JSON can
    runner = RecordedRunner({("crictl", "ps"): json.dumps(doc)})
    env = SensorEnv(Root(), runner, tmp_path / "s", RecordOptions())
    sensor = RestartSensor(env)
    sensor.runtime_dirs = ()
    with Store.open(tmp_path / "s") as store:
        assert sensor.open(store).ok
        t0 = 1_800_000_000.0
        sensor.tick(t0 + 1000, time.monotonic() + census_mod.RESTARTS_REFRESH_S)
        got = {r.name.rsplit("/", 1)[-1]: r for r in cs.read_restarts(store, t0, t0 + 2000)}
    bad = "ecs-\\ud800agent\n[fake] line"
    assert bad in got  # kept, the surrogate written as visible text
    restarted = {c["metadata"]["name"] for c in doc["containers"][1:]
                 if int(c["annotations"].get("io.kubernetes.container.restartCount", 0))}
    assert restarted and restarted <= set(got)  # every other container's restarts stored
    assert all("note" not in got[n].detail for n in restarted)
    # and shown on one line, nothing raw
    assert term.clean(bad) == "ecs-\\ud800agent\\n[fake] line"


def test_census_sensor_counts_churn_under_a_cgroup_not_valid_utf8(tmp_path: Path) -> None:
    root_dir = tmp_path / "root"
    shutil.copytree(FIXTURES / "zombies" / "hybrid", root_dir)
    env = SensorEnv(Root(root_dir), RecordedRunner({}), tmp_path / "s",
                    RecordOptions(census_interval_s=2.0))
    sensor = CensusSensor(env)
    mem = os.fsencode(root_dir / "sys/fs/cgroup/memory")
    bad = os.path.join(mem, b"pod\xff\xfe")
    with Store.open(tmp_path / "s") as store:
        assert sensor.open(store).ok
        try:
            os.mkdir(bad)
            time.sleep(0.3)  # the watcher adds a watch on the new directory
            for i in range(3):
                os.mkdir(os.path.join(bad, b"run-%d" % i))
                os.rmdir(os.path.join(bad, b"run-%d" % i))
            (root_dir / "sys/fs/cgroup/memory/good").mkdir()
            time.sleep(0.6)
            sensor.tick(time.time(), time.monotonic())
        finally:
            sensor.close()
        assert len(cs.read_censuses(store, 0, time.time() + 1)) == 1
        churn = {r.parent: r for r in cs.read_churn(store, 0, time.time() + 1)}
    assert churn["/pod\\udcff\\udcfe"].created == 3
    assert churn["/"].created == 2


def _with_surrogate(text: str, old: str, new: str) -> str:
    """The document with one name changed to hold a lone surrogate, written as JSON writes
    it (the \\ud800 escape)."""
    assert old in text
    return text.replace(old, new, 1)


def test_analyze_keeps_every_record_beside_a_lone_surrogate(tmp_path: Path) -> None:
    """A journal export whose one MESSAGE holds a lone surrogate, a crictl listing and a
    kubectl one whose one name does: every file imports whole, the bad names escaped
    (before, SQLite refused the surrogate and the whole file was skipped)."""
    from corescope.ingest import import_paths
    from corescope.store.events import read_events

    ev = FIXTURES / "events" / "journal_k.json"
    d = tmp_path / "in"
    d.mkdir()
    (d / "journal.json").write_text(_with_surrogate(ev.read_text(), "eth0: TX q 5",
                                                    "eth\\ud800: TX q 5"))
    (d / "crictl.json").write_text(_with_surrogate((TOOLS / "crictl_ps.json").read_text(),
                                                   '"name": "ecs-agent"',
                                                   '"name": "ecs-\\udc80agent"'))
    with Store.open(tmp_path / "s") as st:
        rep = import_paths([d], st)
        events = read_events(st, 0, 4e9)
        names = {r.name for r in cs.read_restarts(st, 0, 4e9)}
    status = {f.path.rsplit("/", 1)[-1]: f for f in rep.files}
    assert status["journal.json"].status != "skipped", status["journal.json"].reason
    assert status["crictl.json"].status != "skipped", status["crictl.json"].reason
    assert any("lone surrogate" in str(n) for n in status["journal.json"].diagnostics), \
        status["journal.json"]
    plain = tmp_path / "plain"
    plain.mkdir()
    shutil.copy(ev, plain / "journal.json")
    with Store.open(tmp_path / "s2") as st:
        import_paths([plain], st)
        want = read_events(st, 0, 4e9)
    assert len(events) == len(want)
    assert any("eth\\ud800: TX q 5" in e.raw for e in events)
    assert any(n.endswith("/ecs-\\udc80agent") for n in names), names
    # an emoji (a surrogate pair in JSON) is text, kept as it is
    from corescope.model.text import valid_json_text
    assert json.loads(valid_json_text('"\\ud83d\\ude00 \\\\ud800"')) == "\U0001f600 \\ud800"
