"""The per-core sensor: /proc/stat every interval into the series store.

A tick whose write fails may still have stored its sample: the row reached the journal and
only the minute's fold failed (a full disk), and the next fold stores it. So a failed tick
is not counted as a lost sample; `losses` compares the samples of failed ticks with what the
store holds at the end and counts the ones it does not."""

from __future__ import annotations

import sys

import numpy as np

from corescope.model.common import SensorStatus
from corescope.sensors.base import Sensor, SensorEnv
from corescope.sources.procstat import CoreDeltas, ProcStatReader
from corescope.store.db import Store
from corescope.store.series import read_matrix
from corescope.store.series_writer import SeriesWriter
from corescope.timeparse import iso

# a sample's time as read back from the store matches the one written within this (they are
# at least 0.1 s apart)
_SAME_T = 1e-3
_MAX_UNSURE = 1_000_000  # failed ticks remembered (a day at 0.1 s is 864,000)


class CoresSensor(Sensor):
    name = "cores"
    tick_failure_loses_data = False  # losses() counts the samples the store does not hold

    def __init__(self, env: SensorEnv) -> None:
        super().__init__(env)
        self.interval_s = env.options.interval_s
        self._reader: ProcStatReader | None = None
        self._deltas: CoreDeltas | None = None
        self._writer: SeriesWriter | None = None
        self._prev_mono = 0.0
        self._store: Store | None = None
        self._unsure: list[float] = []  # times of samples whose write raised
        self._unsampled = 0  # failed ticks that raised before a sample was made
        self._why = ""  # the last such failure

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
        self._store = store
        self._writer = SeriesWriter(store, journal_cpus=len(first.cpus))
        note = f" ({self._writer.journal_note})" if self._writer.journal_note else ""
        return SensorStatus(
            self.name, True,
            f"{len(first.cpus)} CPUs every {self.interval_s:g}s from /proc/stat{note}")

    def tick(self, wall: float, mono: float) -> None:
        assert self._deltas is not None and self._writer is not None
        # the deltas move on before the write: a sample the store refuses is lost (counted
        # in losses()), never folded into the next one
        try:
            sample = self._deltas.sample(wall, mono - self._prev_mono)
        except Exception as exc:
            self._unsampled += 1
            self._why = str(exc)
            raise
        prev, self._prev_mono = self._prev_mono, mono
        if not prev:
            return
        self.env.tap.cores(sample)  # live metrics go on even when the store refuses
        try:
            self._writer.append(sample)
        except Exception as exc:
            if len(self._unsure) < _MAX_UNSURE:
                self._unsure.append(sample.t)
            self._why = str(exc)
            raise
        finally:
            for note in self._writer.notes:
                print(f"corescope record: cores: {note}", file=sys.stderr, flush=True)
            self._writer.notes.clear()

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

    def losses(self) -> list[str]:
        """The samples of failed ticks the store does not hold now (read back after the
        last fold), and the ticks that failed before making a sample."""
        if not self._unsure and not self._unsampled:
            return []
        missing = self._unsure
        if self._unsure and self._store is not None:
            try:
                held = np.sort(read_matrix(self._store, self._unsure[0] - 1,
                                           self._unsure[-1] + 1).t)
            except Exception as exc:
                return [f"{len(self._unsure) + self._unsampled} samples from "
                        f"{iso(self._unsure[0])} to {iso(self._unsure[-1])} were not confirmed "
                        f"in the store (it cannot be read back: {exc}); {self._why}"]
            missing = [t for t, d in zip(self._unsure, _nearest(held, self._unsure),
                                         strict=True) if d > _SAME_T]
        out = []
        if missing:
            out.append(f"{len(missing)} of the {len(self._unsure)} samples whose write failed "
                       f"are not in the store ({iso(missing[0])} to {iso(missing[-1])}): "
                       f"{self._why}")
        if self._unsampled:
            out.append(f"{self._unsampled} ticks failed before a sample was taken: "
                       f"{self._why}")
        return out

def _nearest(held: np.ndarray, want: list[float]) -> np.ndarray:
    """For each time in `want`, how far the nearest time in sorted `held` is (inf: none)."""
    w = np.asarray(want, np.float64)
    if not len(held):
        return np.full(len(w), np.inf)
    idx = np.searchsorted(held, w)
    lo = held[np.clip(idx - 1, 0, len(held) - 1)]
    hi = held[np.clip(idx, 0, len(held) - 1)]
    return np.minimum(np.abs(lo - w), np.abs(hi - w))


def build(env: SensorEnv) -> list[Sensor]:
    return [CoresSensor(env)]
