"""Stack samples from `perf script`, profile-ring chunks, and clock anchors. No I/O."""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True, slots=True, eq=False)
class Frame:
    """One frame of a call stack. `kernel` frames are drawn with a `_[k]` suffix.

    Compared by identity (hashing stacks of frames is the hot path of aggregation); the
    parser interns frames, so equal content is the same object. Compare `key` for content.
    """

    symbol: str
    dso: str
    kernel: bool = False
    inlined: bool = False

    @property
    def key(self) -> tuple[str, str, bool, bool]:
        return (self.symbol, self.dso, self.kernel, self.inlined)

    @property
    def label(self) -> str:
        """The name a flame graph shows: `[unknown]` becomes `[<dso basename>]` when the
        dso is known (as Brendan Gregg's stackcollapse-perf does), inlined frames get `_[i]`
        and other kernel frames `_[k]` (stackcollapse-perf --kernel's annotations)."""
        name = self.symbol
        if name == "[unknown]" and self.dso and self.dso != "[unknown]":
            # as stackcollapse prints it, brackets and all: `[[kernel.kallsyms]]`
            name = "[" + self.dso.removesuffix(" (deleted)").rsplit("/", 1)[-1] + "]"
        if self.inlined:
            return name + "_[i]"
        return name + "_[k]" if self.kernel else name


@dataclass(frozen=True, slots=True)
class StackSample:
    """One sample. `time` is on perf's clock (seconds); `frames` are leaf first. `count` is
    above 1 only for a folded-stack line, which stands for that many samples (with no time).
    `period` is the sample period when the header prints one (`  10101010 cpu-clock:`): what
    stackcollapse-perf.pl weights a sample by. `pid_known` is False when the header prints one
    number (perf's default prints the tid alone): `pid` then repeats the tid, and folded
    stacks with pids show `comm-?` as stackcollapse does."""

    comm: str
    pid: int
    tid: int
    cpu: int | None
    time: float | None
    event: str
    frames: tuple[Frame, ...]
    count: int = 1
    period: int | None = None
    pid_known: bool = True

    @property
    def weight(self) -> int:
        """The sample's weight by period: its period (1 where none is printed) times count."""
        p = self.period
        return self.count * p if p else self.count

    def matches(self, pid: int | None, comm: str | None) -> bool:
        """The profile queries' --pid (the process or one of its threads) and --comm filters;
        None lets every sample through."""
        return (pid is None or self.pid == pid or self.tid == pid) and \
            (comm is None or self.comm == comm)


@dataclass(frozen=True, slots=True)
class ClockAnchor:
    """A simultaneous reading of perf's clock and the wall clock.

    perf records with `-k CLOCK_MONOTONIC`, so a perf timestamp is CLOCK_MONOTONIC seconds;
    `offset` = wall - perf maps one to the other for the chunk it was taken for.
    """

    perf: float
    wall: float

    @property
    def offset(self) -> float:
        return self.wall - self.perf

    def to_wall(self, perf_t: float) -> float:
        return perf_t + self.offset

    def to_perf(self, wall_t: float) -> float:
        return wall_t - self.offset


UNANCHORED = "unanchored"  # clockid of imported boot-relative text with no boot time
NO_CLOCK = "none"  # clockid of folded stacks: no times at all


@dataclass(frozen=True, slots=True)
class ProfileChunk:
    """One finished, compressed chunk of the ring, as the index holds it.

    [perf_start, perf_end) is the stretch of perf time this chunk owns: consecutive perf
    processes overlap briefly at a hand-over, and each sample belongs to exactly one chunk.
    """

    id: int
    path: str  # relative to the store directory
    clockid: str
    perf_start: float
    perf_end: float
    wall_start: float
    wall_end: float
    clock_offset: float  # wall - perf, measured when the chunk's perf started
    bytes: int
    raw_bytes: int
    samples: int
    hz: int

    @property
    def format(self) -> str:
        """What the chunk file holds, from its name: "text" (`perf script` text, symbolised
        when the chunk closed, or imported), "folded" (folded stacks, no times) or
        "perf.data" (raw, from stores written before chunks were symbolised) or "columns"
        (samples as columns, what a chunk becomes when it closes or is first read)."""
        if self.path.endswith(".cols.zst"):
            return "columns"
        if self.path.endswith(".perf.zst"):
            return "perf.data"
        if self.path.endswith(".folded.zst"):
            return "folded"
        return "text"

    @property
    def recorded(self) -> bool:
        """Written by `record` (named chunk-*), not imported."""
        return self.path.rsplit("/", 1)[-1].startswith("chunk-")

    @property
    def untimed(self) -> bool:
        """No times at all (folded stacks, `perf script -F` without `time`): read whole,
        never placed in a window."""
        return self.clockid == NO_CLOCK

    @property
    def anchored(self) -> bool:
        """Whether wall times are real UTC: false for imported boot-relative text that no
        boot time anchored (its "wall" times are then perf's clock)."""
        return self.clockid not in (UNANCHORED, NO_CLOCK)

    def perf_window(self, wall_start: float, wall_end: float) -> tuple[float, float] | None:
        """The perf-clock stretch of this chunk inside a wall-clock window, or None."""
        lo = max(wall_start - self.clock_offset, self.perf_start)
        hi = min(wall_end - self.clock_offset, self.perf_end)
        return (lo, hi) if hi > lo else None


@dataclass(slots=True)
class Batch:
    """Samples of a run of perf script records as columns, one list per StackSample field
    (a perf script sample's count is always 1): what sources.perf_script parses a plain
    block into and store.profile_columns writes a column at a time."""

    comm: list[str]
    pid: list[int]
    tid: list[int]
    cpu: list[int | None]
    time: list[float | None]
    event: list[str]
    frames: list[tuple[Frame, ...]]
    period: list[int | None]
    pid_known: list[bool]

    def __len__(self) -> int:
        return len(self.comm)

    def samples(self) -> list[StackSample]:
        return list(map(StackSample, self.comm, self.pid, self.tid, self.cpu, self.time,
                        self.event, self.frames, itertools.repeat(1), self.period,
                        self.pid_known))

    @classmethod
    def of(cls, samples: Iterable[StackSample]) -> Batch:
        got = list(samples)
        return cls([s.comm for s in got], [s.pid for s in got], [s.tid for s in got],
                   [s.cpu for s in got], [s.time for s in got], [s.event for s in got],
                   [s.frames for s in got], [s.period for s in got],
                   [s.pid_known for s in got])
