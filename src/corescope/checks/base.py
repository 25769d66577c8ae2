"""What a doctor check receives and returns."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from corescope.model.common import Finding, SensorStatus
from corescope.model.cores import CoreSample
from corescope.rootfs import Root
from corescope.runner import Runner
from corescope.store.db import Store


@dataclass
class DoctorContext:
    root: Root
    runner: Runner
    store_dir: Path
    store: Store | None  # None when no store exists yet
    seconds: float  # how long doctor sampled live
    start: float  # wall time the live sampling began
    end: float  # wall time it ended
    since: float  # oldest wall time of stored data doctor looks at
    live_samples: list[CoreSample] = field(default_factory=list)
    # earlier checks may leave results here for later ones (e.g. episodes for correlation)
    shared: dict[str, object] = field(default_factory=dict)


@dataclass
class CheckResult:
    sensors: list[SensorStatus] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
