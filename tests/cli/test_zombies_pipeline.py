"""Store round trips, the census sensor on a copied tree, the doctor check, and the
`zombies` command on fixture roots."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

from corescope.evidence.live import LiveEvidence
from corescope.investigate import Investigation, Window, investigate
from corescope.model.cgroups import ChurnCount, Location, MemcgCensus, RestartRecord, StatReadCost
from corescope.rootfs import Root
from corescope.runner import RecordedRunner
from corescope.sensors.base import RecordOptions, SensorEnv
from corescope.sensors.census import CensusSensor, RestartSensor
from corescope.store import census as cs
from corescope.store.db import Store
from support import FIXTURES, run_cli, run_cli_json

Z = FIXTURES / "zombies"
T = Z / "tools"


def test_store_round_trip_and_retain(tmp_path: Path) -> None:
    with Store.open(tmp_path / "s") as store:
        c = MemcgCensus(t=10.0, layout="hybrid", hierarchy="v1", kernel_count=49, live=6,
                        dying=43, source="x", walk_ms=0.2, boot_id="b", uptime_s=5.0,
                        churn_interval_s=10.0)
        cs.write_census(store, c, [ChurnCount(10.0, "/a", 2, 1, 3, 10.0, "inotify")],
                        [Location("/a", 4, 5)])
        cs.write_stat_costs(store, [StatReadCost(10.0, "memory.stat", 0.1, 0.2, 5, 43)])
        cs.write_restarts(store, [RestartRecord(10.0, "systemd-unit", "x.service", 3,
                                                "auto-restart", "/system.slice/x.service",
                                                {"Result": "exit-code"})])
        assert cs.read_censuses(store, 0, 20) == [c]
        assert cs.read_churn(store, 0, 20) == [ChurnCount(10.0, "/a", 2, 1, 3, 10.0,
                                                          "inotify")]
        assert cs.read_stat_costs(store, 0, 20)[0].dying == 43
        assert cs.read_restarts(store, 0, 20)[0].detail == {"Result": "exit-code"}
        cs.retain(store, 11.0)
        assert cs.read_censuses(store, 0, 20) == [] and cs.read_churn(store, 0, 20) == []
        assert cs.read_restarts(store, 0, 20) == []


def test_census_sensor_counts_churn_on_a_tree(tmp_path: Path) -> None:
    root_dir = tmp_path / "root"
    shutil.copytree(Z / "hybrid", root_dir)
    env = SensorEnv(Root(root_dir), RecordedRunner({}), tmp_path / "s",
                    RecordOptions(census_interval_s=2.0))
    sensor = CensusSensor(env)
    assert sensor.interval_s == 2.0
    with Store.open(tmp_path / "s") as store:
        status = sensor.open(store)
        assert status.ok and "inotify" in status.detail, status.detail
        try:
            mem = root_dir / "sys/fs/cgroup/memory"
            (mem / "corescope-lab/agent").mkdir(parents=True)
            time.sleep(0.3)  # the watcher adds a watch on the new directory
            for i in range(4):
                (mem / f"corescope-lab/agent/run-{i}").mkdir()
                (mem / f"corescope-lab/agent/run-{i}").rmdir()
            time.sleep(0.6)
            sensor.tick(time.time(), time.monotonic())
        finally:
            sensor.close()
        [c] = cs.read_censuses(store, 0, time.time() + 1)
        assert (c.kernel_count, c.live, c.dying) == (49, 8, 41)
        assert c.churn_interval_s > 0
        churn = {r.parent: r for r in cs.read_churn(store, 0, time.time() + 1)}
        assert (churn["/corescope-lab/agent"].created, churn["/corescope-lab/agent"].removed) \
            == (4, 4)
        assert churn["/"].created == 1  # corescope-lab itself
        assert len(cs.read_stat_costs(store, 0, time.time() + 1)) == 2


def test_census_sensor_degrades_without_memory(tmp_path: Path) -> None:
    (tmp_path / "r/proc/self").mkdir(parents=True)
    (tmp_path / "r/proc/self/mountinfo").write_text(
        "41 31 0:38 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n")
    (tmp_path / "r/sys/fs/cgroup").mkdir(parents=True)
    (tmp_path / "r/sys/fs/cgroup/cgroup.controllers").write_text("cpu\n")
    env = SensorEnv(Root(tmp_path / "r"), RecordedRunner({}), tmp_path / "s", RecordOptions())
    with Store.open(tmp_path / "s") as store:
        st = CensusSensor(env).open(store)
        assert not st.ok and "not measured" in st.detail
        rs = RestartSensor(env).open(store)
        assert not rs.ok and "captured tree" in rs.detail


def _investigate(root: Path, runner: RecordedRunner, ask_tools: bool) -> Investigation:
    """The zombie part of doctor's investigation, on a fixture root read as the live node."""
    now = time.time()
    live = LiveEvidence(Root(root), runner)
    live.read_cgroups(now)
    if ask_tools:  # a fixture root is not the live system: ask the recorded tools directly
        from corescope.evidence.base import JournalRestartEntry, RestartEvidence
        from corescope.sources import units

        ev = units.collect(Root(root), runner, now, journal_since=now - 86400)
        live.restart_ev = RestartEvidence(ev.records, [JournalRestartEntry(j.t, j.unit,
                                                                           j.n_restarts)
                                                       for j in ev.journal])
    return investigate(live, Window(now - 3600, now), parts=("zombies",))


def test_doctor_names_the_auto_restart_unit(tmp_path: Path) -> None:
    runner = RecordedRunner({
        ("systemctl", "show"): (T / "systemctl_show.txt").read_text(),
        ("journalctl",): (T / "journal_restarts.json").read_text(),
        ("crictl", "ps"): (T / "crictl_ps.json").read_text(),
    })
    inv = _investigate(Z / "v612", runner, ask_tools=True)
    report = inv.zombies
    assert report is not None
    [f] = [f for f in inv.findings if f.kind == "zombie_memcg_leak"]
    assert f.severity == "critical"  # 1838 dying, 5 live
    assert f.evidence["locations"][0].path == "/system.slice/ecs.service"
    names = [s.name for s in report.suspects]
    assert names[0] == "ecs.service"
    assert report.suspects[0].evidence["state"] == "auto-restart"
    assert report.suspects[0].evidence["rate_basis"] == "journal"
    assert "kube-system/ecs-agent-x7k2p/ecs-agent" in names
    sensors = {s.name: s for s in inv.statuses}
    assert sensors["memcg_census"].ok


def test_doctor_v2nested_no_finding() -> None:
    inv = _investigate(Z / "v2nested", RecordedRunner({}), ask_tools=False)
    assert [f for f in inv.findings if f.kind.startswith("zombie")] == []
    assert inv.zombies is not None and inv.zombies.locations[0].dying == 45


def test_cli_zombies_json_contract_on_v2nested(tmp_path: Path) -> None:
    out = run_cli_json("zombies", "--root", str(Z / "v2nested"), "--store",
                       str(tmp_path / "none"), "--json", ok_codes=(0,))
    assert out["layout"] == "v2"
    assert {"kernel_count", "live", "dying", "source"} <= set(out["memory"])
    assert (out["memory"]["live"], out["memory"]["dying"]) == (9, 57)
    assert {"per_hour", "projected_threshold_at"} <= set(out["growth"])
    assert out["growth"]["method"] == "since-boot"
    assert out["locations"][0]["path"].endswith("0e1f2a3b4c5d.slice")
    assert {"path", "dying"} <= set(out["locations"][0])
    assert isinstance(out["suspects"], list) and isinstance(out["stat_read_ms"], dict)
    assert "memory.stat" in out["stat_read_ms"]
    assert not out["sensors"]["restarts"]["ok"]  # a captured tree: live tools not asked
    assert not (tmp_path / "none").exists()  # reading never creates a store


def test_cli_zombies_exit_codes(tmp_path: Path) -> None:
    crossed = run_cli("zombies", "--root", str(Z / "v612"), "--store", str(tmp_path / "n"))
    assert crossed.returncode == 1, crossed.stderr
    assert "zombie_memcg_leak" in crossed.stdout and "CROSSED" in crossed.stdout
    relaxed = run_cli("zombies", "--root", str(Z / "v612"), "--store", str(tmp_path / "n"),
                      "--max-dying", "100000", "--ratio-min-dying", "100000")
    assert relaxed.returncode == 0, relaxed.stdout
    (tmp_path / "r/proc/self").mkdir(parents=True)
    (tmp_path / "r/proc/self/mountinfo").write_text("")
    none = run_cli("zombies", "--root", str(tmp_path / "r"), "--store", str(tmp_path / "n"))
    assert none.returncode == 2


def test_cli_zombies_hybrid_text(tmp_path: Path) -> None:
    p = run_cli("zombies", "--root", str(Z / "hybrid"), "--store", str(tmp_path / "n"))
    assert p.returncode == 0, p.stderr
    assert "layout: hybrid (memory on v1 at /sys/fs/cgroup/memory)" in p.stdout
    assert "49 held by the kernel, 6 live, 43 dying" in p.stdout


def test_cli_zombies_reads_stored_history(tmp_path: Path) -> None:
    store_dir = tmp_path / "s"
    now = time.time()
    with Store.open(store_dir) as store:
        for i in range(10):
            c = MemcgCensus(t=now - 100 + 10 * i, layout="hybrid", hierarchy="v1",
                            kernel_count=10 + 5 * i + 6, live=6, dying=10 + 5 * i, source="x",
                            boot_id="ce99e544-b9d9-455d-a5b1-83790e1aa6ff", uptime_s=300.0,
                            churn_interval_s=10.0)
            cs.write_census(store, c, [ChurnCount(c.t, "/corescope-lab/agent", 5, 5, 1, 10.0,
                                                  "inotify")])
    out = run_cli_json("zombies", "--root", str(Z / "hybrid"), "--store", str(store_dir),
                       "--json")
    assert out["growth"]["method"] == "theil-sen" and out["growth"]["per_hour"] > 0
    assert out["suspects"][0]["name"] == "/corescope-lab/agent"
    assert out["locations"][0]["path"] == "/corescope-lab/agent"


def test_lab_commands_need_consent(tmp_path: Path) -> None:
    for args in (("lab", "zombies", "--count", "1"), ("lab", "crashloop"), ("lab", "clean")):
        p = run_cli(*args)
        assert p.returncode == 2 and "--yes" in p.stderr, (args, p.stderr)
    p = run_cli("lab", "zombies", "--count", "1", "--yes", "--root", str(tmp_path))
    assert p.returncode == 2


def test_census_sensor_on_v2_without_inotify_counts_churn_by_snapshot(tmp_path: Path) -> None:
    """v2: the one walk of every cgroup.stat also gives the live tree, so churn still works
    (as a snapshot diff) where inotify is missing, and locations are stored."""
    root_dir = tmp_path / "root"
    shutil.copytree(Z / "v2nested", root_dir)
    env = SensorEnv(Root(root_dir), RecordedRunner({}), tmp_path / "s",
                    RecordOptions(census_interval_s=2.0))
    sensor = CensusSensor(env)
    with Store.open(tmp_path / "s") as store:
        assert sensor.open(store).ok
        if sensor.watcher is not None:  # as on a host without inotify
            sensor.watcher.stop()
            sensor.watcher = None
        try:
            sensor.tick(time.time(), time.monotonic())
            (root_dir / "sys/fs/cgroup/new-parent/a").mkdir(parents=True)
            sensor.tick(time.time() + 2, time.monotonic() + 2)
        finally:
            sensor.close()
        churn = {r.parent: r for r in cs.read_churn(store, 0, time.time() + 10)}
        assert churn["/"].created == 1 and churn["/"].method == "snapshot"
        assert churn["/new-parent"].created == 1
        assert store.query("SELECT COUNT(*) FROM memcg_location")[0][0] > 0


def test_where_says_churn_was_watched_when_nothing_churned() -> None:
    """A recording that watched churn and saw none must not tell the user to start `record`."""
    from corescope.evidence.base import RestartEvidence
    from corescope.evidence.memory import MemoryEvidence
    from corescope.investigate.zombies import zombie_report

    def census(t: float, interval: float) -> MemcgCensus:
        return MemcgCensus(t=t, layout="hybrid", hierarchy="v1", kernel_count=20, live=10,
                           dying=10, source="test", churn_interval_s=interval)

    watched = MemoryEvidence(census_rows=[census(100.0 + 10 * i, 10.0) for i in range(5)])
    rep = zombie_report(watched, 0.0, 200.0, RestartEvidence())
    assert "no child cgroup was removed while churn was watched" in rep.location_basis
    unwatched = MemoryEvidence(census_rows=[census(100.0 + 10 * i, 0.0) for i in range(5)])
    rep = zombie_report(unwatched, 0.0, 200.0, RestartEvidence())
    assert "run `corescope record`" in rep.location_basis
