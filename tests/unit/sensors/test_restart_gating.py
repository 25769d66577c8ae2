"""The restart sensor spawns systemctl/journalctl/crictl/docker only when a unit or
container may have restarted (cgroup churn, a runtime directory changed) or the refresh is
due, not every minute. Tool output is the captured fixtures (there is no systemd here)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from corescope.rootfs import Root
from corescope.runner import RecordedRunner, RunResult
from corescope.sensors import census as census_mod
from corescope.sensors.base import RecordOptions, SensorEnv
from corescope.sensors.census import CensusSensor, RestartSensor
from corescope.store import census as cs
from corescope.store.db import Store
from support import FIXTURES

T = FIXTURES / "zombies" / "tools"


class CountingRunner(RecordedRunner):
    def __init__(self, outputs: dict) -> None:
        super().__init__(outputs)
        self.calls: list[tuple[str, ...]] = []

    def run(self, argv: Sequence[str], timeout: float = 30.0) -> RunResult:
        self.calls.append(tuple(argv))
        return super().run(argv, timeout)


def test_restart_evidence_is_asked_only_when_something_changed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # the recorded docker output stands for an engine the client can reach
    monkeypatch.setenv("DOCKER_HOST", "unix:///run/docker-recorded.sock")
    runner = CountingRunner({
        ("crictl", "ps"): (T / "crictl_ps.json").read_text(),
        ("docker", "ps"): (T / "docker_ps.jsonl").read_text(),
        ("docker", "inspect"): (T / "docker_inspect.json").read_text(),
    })
    env = SensorEnv(Root(), runner, tmp_path / "s", RecordOptions())
    units_dir = tmp_path / "run-systemd-units"
    units_dir.mkdir()
    census = CensusSensor(env)
    sensor = RestartSensor(env, census)
    sensor.runtime_dirs = (str(units_dir),)
    with Store.open(tmp_path / "s") as store:
        assert sensor.open(store).ok
        per_ask = len(runner.calls)
        assert per_ask >= 3 and sensor.asked == 1  # crictl ps, docker ps, docker inspect
        t0 = 1_800_000_000.0
        # ten quiet minutes: the old sensor spawned 10 × per_ask processes, this one none
        for i in range(1, 11):
            sensor.tick(t0 + 60 * i, 60.0 * i)
        assert sensor.asked == 1 and len(runner.calls) == per_ask
        # cgroups churned (a container restarted): asked on the next tick
        census.churn_seen += 2
        sensor.tick(t0 + 660, 660.0)
        assert sensor.asked == 2 and len(runner.calls) == 2 * per_ask
        assert cs.read_restarts(store, t0, t0 + 700)  # the fixtures hold restarted ones
        sensor.tick(t0 + 720, 720.0)
        assert sensor.asked == 2
        # systemd replaced a unit's invocation link: asked
        (units_dir / "invocation:x.service").symlink_to("abc")
        sensor.tick(t0 + 780, 780.0)
        assert sensor.asked == 3
        # nothing changed, but the refresh is due
        sensor.tick(t0 + 780 + census_mod.RESTARTS_REFRESH_S, 780.0 + census_mod.RESTARTS_REFRESH_S)
        assert sensor.asked == 4
        assert len(runner.calls) == 4 * per_ask
