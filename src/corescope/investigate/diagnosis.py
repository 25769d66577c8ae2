"""The diagnosis records: each hypothesis's verdict with its evidence, the root-cause verdict
and the causal chain. Plain records; the JSON contract and text are built by renderers."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

SUPPORTED, RULED_OUT, NOT_MEASURED = "supported", "ruled_out", "not_measured"

UNDETERMINED = "undetermined"  # the verdict when no hypothesis stands


@dataclass(frozen=True)
class Declared:
    """What a hypothesis module says about itself (its `DECLARED`), read by diagnose, the
    renderers and the lab. `primary`: a root cause that explains incidents, ranked by `rank`
    (the stronger claim first on equal scores); otherwise a fallback, in `rank` order, that
    stands only when no primary one does. `explains`: the evidence keys counting the
    incidents it accounts for. `correlated`: its claim is that a saturated core preceded the
    incidents (weighed by how surprising that is). `leak`: a zombie-memcg verdict, whose
    culprit may come from a crash loop. `advice`: what to do next ({culprit}, {cpu})."""

    primary: bool
    rank: int
    advice: str
    explains: tuple[str, ...] = ()
    correlated: bool = False
    leak: bool = False


@dataclass(frozen=True)
class Fact:
    """One number behind a verdict: its value, unit, and where it came from."""

    value: Any
    unit: str
    source: str


@dataclass(frozen=True)
class Hypothesis:
    name: str
    verdict: str  # SUPPORTED | RULED_OUT | NOT_MEASURED
    score: float  # 0..1: how strongly the evidence supports it
    evidence: dict[str, Fact] = field(default_factory=dict)
    would_change: str = ""
    summary: str = ""
    # what a supported hypothesis names, for the verdict
    culprit: str | None = None
    hot_cpu: int | None = None
    walker: tuple[str, str] | None = None  # (comm, function)


@dataclass(frozen=True)
class Link:
    """One step of the causal chain, in order."""

    step: str
    summary: str
    evidence: dict[str, Fact] = field(default_factory=dict)


@dataclass(frozen=True)
class Verdict:
    root_cause: str
    culprit: str | None
    hot_cpu: int | None
    walker: tuple[str, str] | None
    confidence: float
    # events shown but not accused (one NIC reset that healed itself, with no other sign)
    benign_events: tuple[str, ...] = ()


@dataclass(frozen=True)
class Diagnosis:
    verdict: Verdict
    chain: tuple[Link, ...]
    hypotheses: tuple[Hypothesis, ...]
    # which node's pods were kept when a listing covered several (None: no such listing)
    node: dict[str, Any] | None = None

    def hypothesis(self, name: str) -> Hypothesis | None:
        return next((h for h in self.hypotheses if h.name == name), None)
