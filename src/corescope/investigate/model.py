"""The Investigation and its parts: typed records, no formatting (renderers round and
print)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from corescope.model.common import JSON_SCHEMA

# Annotations only: `events --file` builds an Investigation without the zombie, profile and
# diagnosis parts, and must not pay for defining their records at start-up.
if TYPE_CHECKING:
    from corescope.analysis.flame import Profile
    from corescope.analysis.zombies import ZombieReport
    from corescope.evidence.base import Coverage, RestartEvidence
    from corescope.investigate.diagnosis import Diagnosis
    from corescope.investigate.node import NodeChoice
    from corescope.model.common import Diagnostic, Finding, SensorStatus
    from corescope.model.cores import CoreSample, Episode
    from corescope.model.events import (
        CorrelationSummary,
        Incident,
        KernelEvent,
        QueueIrq,
        SoftirqSample,
    )
    from corescope.model.pressure import PressureSummary

SCHEMA = JSON_SCHEMA


@dataclass(frozen=True)
class Window:
    """[start, end] in UTC epoch seconds. `asked`: the window as requested, when it reached
    far past what the evidence covers and was clipped to it (see investigate.window)."""

    start: float
    end: float
    asked: tuple[float, float] | None = None

    @property
    def seconds(self) -> float:
        return self.end - self.start


@dataclass(frozen=True)
class EpisodeParams:
    mode: str
    threshold_pct: float
    min_duration_s: float


@dataclass(frozen=True)
class ResolutionPoint:
    t: float
    kernel_pct: float
    machine_kernel_pct: float


@dataclass(frozen=True)
class Resolution:
    """The seconds before an event on one CPU at 1 s, and what 30 s / 60 s samplers and the
    machine average showed (kernel time = sys + irq + soft)."""

    cpu: int
    series_1s: tuple[ResolutionPoint, ...]
    at_30s_pct: float | None
    at_60s_pct: float | None
    machine_at_30s_pct: float | None
    machine_at_60s_pct: float | None

    @property
    def peak_1s_pct(self) -> float | None:
        return max((p.kernel_pct for p in self.series_1s), default=None)

    @property
    def machine_peak_1s_pct(self) -> float | None:
        return max((p.machine_kernel_pct for p in self.series_1s), default=None)


@dataclass(frozen=True)
class IncidentView:
    incident: Incident
    interrupt_map: tuple[QueueIrq, ...]
    resolution: Resolution | None


@dataclass(frozen=True)
class HotCoreProfile:
    """What ran on a hot core in the window before an incident, from the perf ring: the
    aggregated stacks of that CPU (analysis.flame.Profile), so any view or hypothesis can ask
    who spent the kernel time and in which functions."""

    cpu: int
    start: float
    end: float
    event_id: int | None
    event_time: float
    profile: Profile
    diagnostics: tuple[Diagnostic, ...] = ()
    # the same CPU's stacks in the saturated seconds only (the episode before the incident):
    # what the core did while starved, undiluted by the rest of the window
    during: Profile | None = None
    # why these stacks were read: "incident" (before event_id), "episode" (a saturation no
    # incident followed) or "stacks" (no per-core record: the CPU busiest in the kernel)
    basis: str = "incident"


@dataclass
class Investigation:
    source: str  # which evidence: "store", "live", "store+live", "artifacts"
    window: Window
    coverage: Coverage
    params: EpisodeParams
    samples: Sequence[CoreSample]  # the window's per-core samples (a CoreMatrix when any)
    cpus: list[int]
    episodes: list[Episode]  # hot-core episodes in the window
    context_episodes: list[Episode]  # also those running into it: what incidents are tested on
    # the window's kernel events, unclassified lines included, as the budget keeps them
    # (every incident line and the lines around it; analysis.event_focus)
    events: list[KernelEvent]
    incidents: list[IncidentView]
    correlation: CorrelationSummary
    correlation_window_s: float
    lost_records: int
    record_span: tuple[float, float] | None
    zombies: ZombieReport | None
    restarts: RestartEvidence
    profiles: list[HotCoreProfile]
    findings: list[Finding]
    statuses: list[SensorStatus]
    diagnostics: list[Diagnostic] = field(default_factory=list)
    pressure: PressureSummary | None = None
    # NET_RX/NET_TX per CPU around the irq/softirq-mode episodes, and the baseline before
    # each (empty: none such episode, or not measured)
    softirqs: list[SoftirqSample] = field(default_factory=list)
    diagnosis: Diagnosis | None = None
    # stacks of the longest kernel-time episodes when no incident had a hot core before it
    # (a log without times, or harm that has not reached the NIC yet): for the hypotheses
    episode_profiles: list[HotCoreProfile] = field(default_factory=list)
    # whose pods the restart evidence kept when a listing covered several nodes
    node: NodeChoice | None = None
    # kind -> lines of the window counted but not held in `events` (the budget's quiet lines)
    events_omitted: dict[str, int] = field(default_factory=dict)
    schema: int = SCHEMA

    def status(self, name: str) -> SensorStatus | None:
        return next((s for s in self.statuses if s.name == name), None)
