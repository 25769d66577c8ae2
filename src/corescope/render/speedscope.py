"""`flame --format speedscope`: the window as a speedscope file
(https://www.speedscope.app/file-format-schema.json), one sampled profile per CPU in time
order, so each CPU's seconds can be scrubbed in speedscope's time-order view.

Weights are sample counts (unit "none"): consecutive samples with the same stack on a CPU
are merged into one weighted sample, which keeps a 2-minute, 96-CPU window small."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from corescope.analysis.flame import is_idle
from corescope.model.profiles import Frame, StackSample

SCHEMA_URL = "https://www.speedscope.app/file-format-schema.json"


class Speedscope:
    def __init__(self, include_idle: bool = False, enabled: bool = True) -> None:
        self.include_idle = include_idle
        self.enabled = enabled
        self.frames: list[dict[str, str]] = []
        self._frame_ids: dict[tuple[str, str], int] = {}
        self._stack_ids: dict[tuple[str, tuple[Frame, ...]], list[int]] = {}
        # cpu → (stacks, weights, first time, last time)
        self.cpus: dict[int | None, tuple[list[list[int]], list[int], list[float]]] = {}

    def _frame(self, name: str, file: str) -> int:
        key = (name, file)
        i = self._frame_ids.get(key)
        if i is None:
            i = self._frame_ids[key] = len(self.frames)
            self.frames.append({"name": name, "file": file} if file else {"name": name})
        return i

    def _stack(self, s: StackSample) -> list[int]:
        key = (s.comm, s.frames)
        got = self._stack_ids.get(key)
        if got is None:
            # root first: the process, then the frames from the outermost caller to the leaf
            got = [self._frame(s.comm, "")]
            got.extend(self._frame(f.label, "" if f.dso == "[unknown]" else f.dso)
                       for f in reversed(s.frames))
            self._stack_ids[key] = got
        return got

    def add(self, s: StackSample, t: float | None) -> None:
        if not self.include_idle and is_idle(s):
            return
        stacks, weights, span = self.cpus.setdefault(s.cpu, ([], [], []))
        stack = self._stack(s)
        if stacks and stacks[-1] is stack:
            weights[-1] += 1
        else:
            stacks.append(stack)
            weights.append(1)
        if t is not None:
            if not span:
                span.extend((t, t))
            else:
                span[0], span[1] = min(span[0], t), max(span[1], t)

    def tap(self, stream: Iterator[tuple[StackSample, float | None]]
            ) -> Iterator[tuple[StackSample, float | None]]:
        """Pass the stream through, recording each sample on the way (when enabled)."""
        if not self.enabled:
            yield from stream
            return
        for s, t in stream:
            self.add(s, t)
            yield s, t

    def to_json(self, name: str) -> dict[str, Any]:
        profiles = []
        for cpu in sorted(self.cpus, key=lambda c: (c is None, c or 0)):
            stacks, weights, _span = self.cpus[cpu]
            profiles.append({
                "type": "sampled",
                "name": f"cpu {cpu}" if cpu is not None else "cpu unknown",
                "unit": "none",
                "startValue": 0,
                "endValue": sum(weights),
                "samples": stacks,
                "weights": weights,
            })
        return {"$schema": SCHEMA_URL, "shared": {"frames": self.frames},
                "profiles": profiles, "name": name, "activeProfileIndex": 0,
                "exporter": "corescope"}
