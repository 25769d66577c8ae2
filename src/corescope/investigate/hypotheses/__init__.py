"""Hypotheses, one module each. Every module defines `NAME`, `DECLARED` (a Declared: its
rank as a root cause, what it explains, its advice) and
`evaluate(inv: Investigation, thresholds: Thresholds) -> Hypothesis`: supported, ruled out or
not measured (naming the sensor that was off and why), with a score, the numbers behind it
and what observation would flip it. `diagnose` runs them all, in this order."""

from __future__ import annotations

import importlib
from functools import cache
from types import MappingProxyType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Mapping

    from corescope.investigate.diagnosis import Declared

HYPOTHESIS_MODULES: tuple[str, ...] = (
    "corescope.investigate.hypotheses.zombie_memcg_leak",
    "corescope.investigate.hypotheses.zombie_leak_no_harm",
    "corescope.investigate.hypotheses.irq_softirq_saturation",
    "corescope.investigate.hypotheses.hardware_fault",
    "corescope.investigate.hypotheses.cpu_contention",
    "corescope.investigate.hypotheses.memory_pressure",
    "corescope.investigate.hypotheses.hypervisor_steal",
    "corescope.investigate.hypotheses.crash_loop",
    "corescope.investigate.hypotheses.healthy",
)


@cache
def declared() -> Mapping[str, Declared]:
    """Each hypothesis's name and declaration, in evaluation order."""
    mods = [importlib.import_module(m) for m in HYPOTHESIS_MODULES]
    return MappingProxyType({m.NAME: m.DECLARED for m in mods})
