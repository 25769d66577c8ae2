"""Flame-graph arithmetic over stack samples: idle detection, folded stacks, top processes
and functions (self and total %), and the differential against a baseline.

Everything here is pure and streaming: `Profile.add` takes one sample at a time and keeps
one counter per distinct stack, so memory grows with the variety of stacks, not the window.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from corescope.model.profiles import Batch, Frame, StackSample

# FlameScope's idle test: the process is swapper and the stack holds one of these
# (flamescope app/perf/regexp.py idle_stack).
FLAMESCOPE_IDLE = (
    "cpu_idle", "cpu_bringup_and_idle", "native_safe_halt", "xen_hypercall_sched_op",
    "xen_hypercall_vcpu_op", "cpuidle_enter_state", "cpu_startup_entry",
)
# This kernel's idle path (checked on this machine: swapper 0/0 with pv_native_safe_halt ←
# default_idle ← default_idle_call ← do_idle ← cpu_startup_entry) and its siblings on
# bare metal (ACPI/intel/mwait/poll idle).
KERNEL_IDLE = (
    "pv_native_safe_halt", "default_idle", "default_idle_call", "do_idle", "arch_cpu_idle",
    "acpi_idle_do_entry", "acpi_safe_halt", "intel_idle", "mwait_idle", "poll_idle",
    "cpuidle_enter", "cpu_idle_poll", "native_halt", "default_enter_idle",
)
IDLE_FUNCTIONS = frozenset(FLAMESCOPE_IDLE + KERNEL_IDLE)
# Frames that say "an interrupt arrived": work done by irq/softirq on an idle CPU (NAPI
# polling, the very thing a starved core delays) is not idle, even under swapper's idle loop.
IRQ_PREFIXES = (
    "asm_sysvec_", "sysvec_", "asm_common_interrupt", "common_interrupt", "__do_softirq",
    "handle_softirqs", "__irq_exit_rcu", "irq_exit_rcu", "do_softirq", "net_rx_action",
    "asm_exc_",
)


def is_idle(sample: StackSample) -> bool:
    """FlameScope's rule (swapper + an idle frame) made stricter: no interrupt frame may sit
    leafward of the first idle frame."""
    return idle_stack(sample.comm, sample.pid, sample.frames)


def idle_stack(comm: str, pid: int, frames: tuple[Frame, ...]) -> bool:
    """`is_idle` of a sample of `comm`, `pid` (as the header printed it) and `frames`."""
    # pid -1: the process is not known (perf's own "no pid", or `perf script -F` without
    # comm and pid/tid): the stack alone decides
    if not (pid in (0, -1) or comm.startswith("swapper")):
        return False
    if not frames:
        return True
    for f in frames:  # leaf first
        if f.symbol in IDLE_FUNCTIONS:
            return True
        if f.symbol.startswith(IRQ_PREFIXES):
            return False
    return False


@dataclass(frozen=True)
class FunctionShare:
    name: str
    kernel: bool
    self_samples: int
    total_samples: int
    self_pct: float
    total_pct: float

    @property
    def label(self) -> str:
        return self.name + "_[k]" if self.kernel else self.name


@dataclass(frozen=True)
class ProcessShare:
    comm: str
    samples: int
    pct: float


@dataclass(frozen=True)
class StackShare:
    """One call stack (leaf first) of one process, across its pids."""

    comm: str
    frames: tuple[Frame, ...]
    samples: int
    pct: float


@dataclass(frozen=True)
class Change:
    """A process or function whose share of all samples changed against the baseline."""

    kind: str  # "process" | "function"
    name: str
    before_pct: float
    after_pct: float

    @property
    def delta(self) -> float:
        return self.after_pct - self.before_pct

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "kind": self.kind, "before_pct": round(self.before_pct, 2),
                "after_pct": round(self.after_pct, 2), "delta_pct": round(self.delta, 2)}


# Frame-pointer chains end in a `0 [unknown]` frame: drawn in the graph, but not a function.
NOT_FUNCTIONS = frozenset({"[unknown]"})

StackKey = tuple[str, int, tuple[Frame, ...]]  # comm, pid, frames leaf first
ThreadKey = tuple[str, int, int, tuple[Frame, ...]]  # comm, pid, tid, frames


WEIGHTS = ("period", "samples")
# (self, total) sample counts per (function, kernel)
FunctionCounts = tuple[Counter[tuple[str, bool]], Counter[tuple[str, bool]]]
UNKNOWN_PID = -1  # the stack key's pid where the header printed only a thread id


@dataclass
class Profile:
    """Aggregated samples of one window. `samples` counts idle too; stacks hold non-idle
    samples unless built with include_idle.

    `weight`: "samples" counts each sample once; "period" weighs it by its period where
    the header prints one (stackcollapse-perf.pl's rule: `cycles` or `page-faults` sampled
    at varying periods), else once. Stack counts, `total_weight` and the shares are in
    that unit; `samples` and `idle_samples` always count samples. `by_thread` also keeps
    the stacks per thread, for folded stacks as `comm-pid/tid`."""

    include_idle: bool = False
    samples: int = 0
    idle_samples: int = 0
    _stacks: Counter[StackKey] = field(default_factory=Counter, repr=False)
    events: Counter[str] = field(default_factory=Counter)
    first_time: float | None = None
    last_time: float | None = None
    weight: str = "samples"
    by_thread: bool = False
    total_weight: int = 0
    idle_weight: int = 0
    _threads: Counter[ThreadKey] = field(default_factory=Counter, repr=False)
    # stack_totals() made once: `add` drops it; ring_profile, which counts the ring's
    # columns, supplies it counted there
    totals: Counter[tuple[str, tuple[Frame, ...]]] | None = field(
        default=None, repr=False, compare=False)
    # fills `stacks` and `threads` on first use with what was counted elsewhere: a window
    # of the ring has several (comm, pid, stack) entries a stack, and the folded stacks
    # and the tables, which merge the pids, never need them
    pending: Callable[[], None] | None = field(default=None, repr=False, compare=False)

    @property
    def stacks(self) -> Counter[StackKey]:
        """(comm, pid or UNKNOWN_PID, frames) -> weight, in order of first sight."""
        if self.pending is not None:
            self.fill()
        return self._stacks

    @property
    def threads(self) -> Counter[ThreadKey]:
        """(comm, pid, tid, frames) -> weight, kept when by_thread."""
        if self.pending is not None:
            self.fill()
        return self._threads

    def fill(self) -> None:
        """Run what `pending` holds back (the stacks come before anything added since)."""
        pending, self.pending = self.pending, None
        if pending is not None:
            pending()

    def add(self, sample: StackSample) -> bool:
        """Count one sample (a folded line counts as many); returns whether it was idle."""
        n = sample.count
        w = sample.weight if self.weight == "period" else n
        self.samples += n
        self.total_weight += w
        self.events[sample.event] += n
        t = sample.time
        if t is not None:
            if self.first_time is None or t < self.first_time:
                self.first_time = t
            if self.last_time is None or t > self.last_time:
                self.last_time = t
        idle = is_idle(sample)
        if idle:
            self.idle_samples += n
            self.idle_weight += w
            if not self.include_idle:
                return True
        if self.pending is not None:
            self.fill()
        self.totals = None
        pid = sample.pid if sample.pid_known else UNKNOWN_PID
        self._stacks[(sample.comm, pid, sample.frames)] += w
        if self.by_thread:
            self._threads[(sample.comm, pid, sample.tid, sample.frames)] += w
        return idle

    def add_batch(self, b: Batch) -> None:
        """`add` of every sample of a batch (perf script samples: count 1), counted once per
        distinct (comm, pid, tid, stack) instead of once per sample."""
        n = len(b)
        if not n:
            return
        ws = [p if p else 1 for p in b.period] if self.weight == "period" else None
        self.samples += n
        self.total_weight += sum(ws) if ws is not None else n
        ev = b.event
        if ev.count(ev[0]) == n:
            self.events[ev[0]] += n
        else:
            self.events.update(ev)
        times = [t for t in b.time if t is not None]
        if times:
            lo, hi = min(times), max(times)
            if self.first_time is None or lo < self.first_time:
                self.first_time = lo
            if self.last_time is None or hi > self.last_time:
                self.last_time = hi
        tids = b.tid if self.by_thread else [0] * n
        keys = list(zip(b.comm, b.pid, b.pid_known, tids, b.frames, strict=True))
        counts = Counter(keys)
        weights: Counter[Any] = counts
        if ws is not None:
            weights = Counter()
            for k, w in zip(keys, ws, strict=True):
                weights[k] += w
        if self.pending is not None:
            self.fill()
        for (comm, pid, known, tid, frames), c in counts.items():
            w = weights[(comm, pid, known, tid, frames)]
            if idle_stack(comm, pid, frames):
                self.idle_samples += c
                self.idle_weight += w
                if not self.include_idle:
                    continue
            self.totals = None
            key_pid = pid if known else UNKNOWN_PID
            self._stacks[(comm, key_pid, frames)] += w
            if self.by_thread:
                self._threads[(comm, key_pid, tid, frames)] += w

    def extend(self, samples: Iterable[StackSample]) -> Profile:
        for s in samples:
            self.add(s)
        return self

    def stack_totals(self) -> Counter[tuple[str, tuple[Frame, ...]]]:
        """Weight per (comm, frames), the pids of one comm merged, in order of first sight:
        what the tables and the folded stacks without pids count (`stacks` changes only
        through `add`, or ring_profile, which keeps this in step)."""
        got = self.totals
        if got is None:
            got = Counter()
            for (comm, _pid, frames), n in self.stacks.items():
                got[(comm, frames)] += n
            self.totals = got
        return got

    @property
    def busy_samples(self) -> int:
        return self.samples - self.idle_samples

    @property
    def drawn_samples(self) -> int:
        return sum(self.stack_totals().values())

    # --- folded stacks -------------------------------------------------------------------

    def folded(self, with_pid: bool = False, with_tid: bool = False) -> Counter[str]:
        """`comm[-pid[/tid]];root;...;leaf` → count, as stackcollapse-perf.pl --kernel
        prints it: kernel frames suffixed `_[k]`, inlined ones `_[i]`, blanks in comm
        `_`, `?` for a pid the header did not print; with_tid needs a by_thread Profile."""
        out: Counter[str] = Counter()
        if with_tid:
            items: Iterable[tuple[str, tuple[Frame, ...], int]] = (
                (f"{comm}-{_pid(pid)}/{tid}", frames, n)
                for (comm, pid, tid, frames), n in self.threads.items())
        elif with_pid:
            items = ((f"{comm}-{_pid(pid)}", frames, n)
                     for (comm, pid, frames), n in self.stacks.items())
        else:
            items = ((comm, frames, n) for (comm, frames), n in self.stack_totals().items())
        heads: dict[str, str] = {}
        for head, frames, n in items:
            h = heads.get(head)
            if h is None:
                h = heads[head] = _clean(head).replace(" ", "_")
            out[f"{h};{_folded_frames(frames, head == 'java')}" if frames else h] += n
        return out

    # --- tables --------------------------------------------------------------------------

    def top_processes(self, limit: int = 20) -> list[ProcessShare]:
        """Processes by share of the non-idle samples."""
        by: Counter[str] = Counter()
        for (comm, _frames), n in self.stack_totals().items():
            by[comm] += n
        denom = self.drawn_samples or 1
        return [ProcessShare(c, n, 100.0 * n / denom) for c, n in by.most_common(limit)]

    def top_stacks(self, limit: int = 5) -> list[StackShare]:
        """Whole stacks by share of the non-idle samples (pids of one comm merged: a
        restarting walker is one stack)."""
        denom = self.drawn_samples or 1
        return [StackShare(c, f, n, 100.0 * n / denom)
                for (c, f), n in self.stack_totals().most_common(limit)]

    def function_counts(self) -> FunctionCounts:
        """(self, total) sample counts per (function, kernel)."""
        selfc: Counter[tuple[str, bool]] = Counter()
        total: Counter[tuple[str, bool]] = Counter()
        for (_c, frames), n in self.stack_totals().items():
            if not frames:
                continue
            leaf = frames[0]
            selfc[(leaf.symbol, leaf.kernel)] += n
            for key in {(f.symbol, f.kernel) for f in frames}:  # recursion counts once
                total[key] += n
        return selfc, total

    def top_functions(self, limit: int = 20, counts: FunctionCounts | None = None
                      ) -> list[FunctionShare]:
        """Functions by self share, then total share, of the non-idle samples. `counts`:
        function_counts() when the caller has it already (it walks every stack's frames)."""
        selfc, total = counts or self.function_counts()
        denom = self.drawn_samples or 1
        keys = sorted((k for k in total if k[0] not in NOT_FUNCTIONS),
                      key=lambda k: (-selfc.get(k, 0), -total[k], k[0]))[:limit]
        return [
            FunctionShare(k[0], k[1], selfc.get(k, 0), total[k],
                          100.0 * selfc.get(k, 0) / denom, 100.0 * total[k] / denom)
            for k in keys
        ]

    def top_functions_by_total(self, limit: int = 20, counts: FunctionCounts | None = None
                               ) -> list[FunctionShare]:
        selfc, total = counts or self.function_counts()
        denom = self.drawn_samples or 1
        keys = sorted((k for k in total if k[0] not in NOT_FUNCTIONS),
                      key=lambda k: (-total[k], -selfc.get(k, 0), k[0]))[:limit]
        return [
            FunctionShare(k[0], k[1], selfc.get(k, 0), total[k],
                          100.0 * selfc.get(k, 0) / denom, 100.0 * total[k] / denom)
            for k in keys
        ]


def _pid(pid: int) -> str:
    return "?" if pid == UNKNOWN_PID else str(pid)


def _java(label: str) -> str:
    # stackcollapse-perf.pl's Java tidying, for the process named exactly `java`:
    # `Lorg/mozilla/javascript/ContextFactory;.call` → `org/mozilla/...`
    return label[1:] if label[:1] == "L" and "/" in label else label


# a stack's frames as folded text, root first: the same stacks recur in every window (and
# in a graph and its diff), and frames are interned, so the tuple hashes by identity
_FOLDED: dict[tuple[tuple[Frame, ...], bool], str] = {}
_FOLDED_MAX = 200_000


class _Labels(dict[Frame, str]):
    """A frame's name as folded text shows it, made once per frame (frames are interned:
    a handful of thousands make every stack of a window)."""

    def __init__(self, java: bool) -> None:
        super().__init__()
        self.java = java

    def __missing__(self, f: Frame) -> str:
        if len(self) >= _FOLDED_MAX:
            self.clear()
        text = self[f] = _clean(_java(f.label) if self.java else f.label)
        return text


_LABELS = (_Labels(False), _Labels(True))


def _folded_frames(frames: tuple[Frame, ...], java: bool = False) -> str:
    key = (frames, java)
    text = _FOLDED.get(key)
    if text is None:
        text = ";".join(map(_LABELS[java].__getitem__, reversed(frames)))
        if len(_FOLDED) >= _FOLDED_MAX:
            _FOLDED.clear()
        _FOLDED[key] = text
    return text


def _clean(name: str) -> str:
    # ';' separates frames and a trailing ' N' is the count: keep both out of names
    return name.replace(";", ":").replace("\n", " ")


def shares_of_all(profile: Profile) -> tuple[dict[str, float], dict[str, float]]:
    """Process and function (total) shares as % of ALL samples, idle included: the CPU share,
    so windows of different load compare fairly ("kubelet 0.8% → 6.5%")."""
    denom = profile.total_weight or profile.samples or 1
    procs: Counter[str] = Counter()
    for (comm, _f), n in profile.stack_totals().items():
        procs[comm] += n
    _selfc, total = profile.function_counts()
    p = {c: 100.0 * n / denom for c, n in procs.items()}
    f = {(name + "_[k]" if k else name): 100.0 * n / denom for (name, k), n in total.items()}
    return p, f


def diff(after: Profile, before: Profile, limit: int = 15,
         min_delta_pct: float = 0.1) -> tuple[list[Change], list[Change]]:
    """(grew, shrank): processes and functions ordered by change in share of all samples."""
    pa, fa = shares_of_all(after)
    pb, fb = shares_of_all(before)
    changes: list[Change] = []
    for kind, a, b in (("process", pa, pb), ("function", fa, fb)):
        for name in set(a) | set(b):
            changes.append(Change(kind, name, b.get(name, 0.0), a.get(name, 0.0)))
    grew = sorted((c for c in changes if c.delta >= min_delta_pct),
                  key=lambda c: (-c.delta, c.kind != "process", c.name))[:limit]
    shrank = sorted((c for c in changes if -c.delta >= min_delta_pct),
                    key=lambda c: (c.delta, c.kind != "process", c.name))[:limit]
    return grew, shrank


def diff_folded(after: Profile, before: Profile,
                with_pid: bool = False) -> dict[str, tuple[int, float]]:
    """stack → (after count, before count scaled to the after profile's total samples),
    the normalisation of Brendan Gregg's difffolded.pl -n."""
    fa = after.folded(with_pid)
    fb = before.folded(with_pid)
    scale = (after.total_weight / before.total_weight) if before.total_weight else 0.0
    out: dict[str, tuple[int, float]] = {}
    for k in set(fa) | set(fb):
        out[k] = (fa.get(k, 0), fb.get(k, 0) * scale)
    return out
