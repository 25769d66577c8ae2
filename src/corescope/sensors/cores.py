"""The per-core sensor: /proc/stat every interval into the series store."""

from __future__ import annotations

from corescope.model.common import SensorStatus
from corescope.sensors.base import Sensor, SensorEnv
from corescope.sources.procstat import CoreDeltas, ProcStatReader
from corescope.store.db import Store
from corescope.store.series import SeriesWriter


class CoresSensor(Sensor):
    name = "cores"

    def __init__(self, env: SensorEnv) -> None:
        super().__init__(env)
        self.interval_s = env.options.interval_s
        self._reader: ProcStatReader | None = None
        self._deltas: CoreDeltas | None = None
        self._writer: SeriesWriter | None = None
        self._prev_mono = 0.0

    def open(self, store: Store) -> SensorStatus:
        try:
            self._reader = ProcStatReader(self.env.root)
            self._deltas = CoreDeltas(self._reader.read_bytes)
            first = self._deltas.reset()
        except OSError as exc:
            return SensorStatus(self.name, False, f"cannot read /proc/stat: {exc}; "
                                "per-core CPU time not measured")
        if not first.cpus:
            return SensorStatus(self.name, False, "no per-cpu lines in /proc/stat")
        self._writer = SeriesWriter(store, journal_cpus=len(first.cpus))
        note = f" ({self._writer.journal_note})" if self._writer.journal_note else ""
        return SensorStatus(
            self.name, True,
            f"{len(first.cpus)} CPUs every {self.interval_s:g}s from /proc/stat{note}")

    def tick(self, wall: float, mono: float) -> None:
        assert self._deltas is not None and self._writer is not None
        # the deltas move on before the write: a sample the store refuses is lost (the
        # recorder counts it), never folded into the next one
        sample = self._deltas.sample(wall, mono - self._prev_mono)
        if self._prev_mono:
            self.env.tap.cores(sample)  # live metrics go on even when the store refuses
            self._writer.append(sample)
        self._prev_mono = mono

    def start_clock(self, mono: float) -> None:
        """Re-read at the recorder's start so the first interval is a whole one."""
        if self._deltas is not None:
            self._deltas.reset()
            self._prev_mono = mono

    def close(self) -> None:
        try:
            if self._writer is not None:
                self._writer.close()
        finally:
            self._writer = None
            if self._reader is not None:
                self._reader.close()

def build(env: SensorEnv) -> list[Sensor]:
    return [CoresSensor(env)]
