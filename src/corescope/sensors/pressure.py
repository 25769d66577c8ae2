"""Pressure: CPU, memory and IO PSI every tick (5 s by default), /proc/vmstat's reclaim
counters every 2nd tick and per-CPU run-queue wait from /proc/schedstat every 6th. Each file
stays open and costs one pread when read; a file the kernel lacks is left out with a
message saying what is not measured."""

from __future__ import annotations

from corescope.model.common import SensorStatus
from corescope.model.pressure import PsiSample, SchedstatSample, VmstatSample
from corescope.sensors.base import Sensor, SensorEnv
from corescope.sources import pressure as src
from corescope.store import pressure as store_pressure
from corescope.store.db import Store

VMSTAT_EVERY = 2
SCHEDSTAT_EVERY = 6

_WHY = {
    "psi": "no /proc/pressure (kernel before 4.20, built without CONFIG_PSI, or booted with "
           "psi=0; add psi=1 to the kernel command line): CPU, memory and IO pressure not "
           "measured",
    "/proc/schedstat": "no /proc/schedstat (kernel built without CONFIG_SCHEDSTATS): per-CPU "
                       "run-queue wait not measured",
    "/proc/vmstat": "no /proc/vmstat: reclaim, allocation stalls and OOM kills not measured",
}


class PressureSensor(Sensor):
    name = "pressure"

    def __init__(self, env: SensorEnv) -> None:
        super().__init__(env)
        self.interval_s = env.options.pressure_interval_s
        self.files = src.PressureFiles(env.root)
        self._store: Store | None = None
        self._n = 0

    def open(self, store: Store) -> SensorStatus:
        self._store = store
        self.files.open()
        have = set(self.files.fds)
        psi = [p for p in (f"/proc/pressure/{r}" for r in src.PSI_RESOURCES) if p in have]
        parts = []
        off = []
        if psi:
            parts.append("PSI " + "/".join(p.rsplit("/", 1)[1] for p in psi)
                         + f" every {self.interval_s:g}s")
        else:
            off.append(_WHY["psi"])
        for path, every in (("/proc/vmstat", VMSTAT_EVERY), ("/proc/schedstat",
                                                             SCHEDSTAT_EVERY)):
            if path in have:
                parts.append(f"{path.rsplit('/', 1)[1]} every {self.interval_s * every:g}s")
            else:
                off.append(_WHY[path])
        if not parts:
            return SensorStatus(self.name, False, "; ".join(off))
        return SensorStatus(self.name, True, "; ".join(parts + off))

    def tick(self, wall: float, mono: float) -> None:
        assert self._store is not None
        psi: list[PsiSample] = []
        for r in src.PSI_RESOURCES:
            text = self.files.read(f"/proc/pressure/{r}")
            if text is not None:
                s, _ = src.parse_psi(text, wall, r)
                if s is not None:
                    psi.append(s)
        vm: list[VmstatSample] = []
        sched: list[SchedstatSample] = []
        if self._n % VMSTAT_EVERY == 0:
            text = self.files.read("/proc/vmstat")
            if text is not None:
                v, _ = src.parse_vmstat(text, wall)
                if v is not None:
                    vm.append(v)
        if self._n % SCHEDSTAT_EVERY == 0:
            text = self.files.read("/proc/schedstat")
            if text is not None:
                q, _ = src.parse_schedstat(text, wall)
                if q is not None:
                    sched.append(q)
        self._n += 1
        if psi or vm or sched:
            store_pressure.write(self._store, psi, sched, vm)

    def close(self) -> None:
        self.files.close()


def build(env: SensorEnv) -> list[Sensor]:
    return [PressureSensor(env)] if env.options.pressure else []
