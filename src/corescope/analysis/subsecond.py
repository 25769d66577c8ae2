"""FlameScope's subsecond offset heatmap: one column per second, one row per 20 ms offset
within the second, each cell the count of non-idle samples. Per CPU when the caller filters
samples by CPU (FlameScope cannot: it never parses the CPU column)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

ROW_MS = 20


@dataclass
class Heatmap:
    """Accumulates (time, idle) points. `start` pins column 0 to a whole second; without it
    the first point's second is used."""

    start: float | None = None
    end: float | None = None
    row_ms: int = ROW_MS
    cells: dict[int, list[int]] = field(default_factory=dict)
    points: int = 0
    idle_points: int = 0

    @property
    def rows(self) -> int:
        return max(1, 1000 // self.row_ms)

    def add(self, t: float, idle: bool) -> None:
        if not math.isfinite(t):
            return
        if self.start is None:
            self.start = math.floor(t)
        self.points += 1
        if idle:
            self.idle_points += 1
            # idle still stretches the map so quiet seconds show as empty columns
        col = math.floor(t) - math.floor(self.start)
        if col < 0:
            return
        column = self.cells.get(col)
        if column is None:
            column = self.cells[col] = [0] * self.rows
        if not idle:
            # perf prints microseconds: round to them first, so 100.020 is row 1, not a
            # float hair below it
            offset_us = round((t - math.floor(t)) * 1_000_000)
            row = min(self.rows - 1, offset_us // (self.row_ms * 1000))
            column[row] += 1

    def add_many(self, ts: Any, idle: Any) -> None:
        """`add` for arrays of times and idle flags (numpy), in the order given."""
        import numpy as np  # only the ring's column queries pass arrays

        ts = np.asarray(ts, dtype=np.float64)
        idle = np.asarray(idle, dtype=bool)
        ok = np.isfinite(ts)
        ts, idle = ts[ok], idle[ok]
        if not ts.size:
            return
        if self.start is None:
            self.start = math.floor(ts[0])
        self.points += int(ts.size)
        self.idle_points += int(idle.sum())
        whole = np.floor(ts)
        col = (whole - math.floor(self.start)).astype(np.int64)
        keep = col >= 0
        for c in np.unique(col[keep]).tolist():
            if c not in self.cells:
                self.cells[c] = [0] * self.rows
        busy = keep & ~idle
        if not busy.any():
            return
        # as `add`: round to microseconds first, then the row
        offset_us = np.rint((ts[busy] - whole[busy]) * 1_000_000).astype(np.int64)
        row = np.minimum(self.rows - 1, offset_us // (self.row_ms * 1000))
        cells, counts = np.unique(col[busy] * self.rows + row, return_counts=True)
        for cell, n in zip(cells.tolist(), counts.tolist(), strict=True):
            self.cells[cell // self.rows][cell % self.rows] += n

    @property
    def columns(self) -> int:
        if self.start is None:
            return 0
        last = max(self.cells) + 1 if self.cells else 0
        if self.end is not None:
            last = max(last, math.ceil(self.end) - math.floor(self.start))
        return last

    def values(self) -> list[list[int]]:
        """values[column][row]: FlameScope's layout (a list of columns)."""
        empty = [0] * self.rows
        return [list(self.cells.get(c, empty)) for c in range(self.columns)]

    def to_json(self) -> dict[str, Any]:
        vals = self.values()
        return {
            "start": math.floor(self.start) if self.start is not None else None,
            "rows_ms": self.row_ms,
            "rows": self.rows,
            "columns": len(vals),
            "values": vals,
            "max": max((max(c) for c in vals), default=0),
            "samples": self.points,
            "idle_samples": self.idle_points,
        }
