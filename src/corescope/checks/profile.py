"""Doctor line for the profile ring: how much of the past it holds, or why it holds none."""

from __future__ import annotations

import time

from corescope.checks.base import CheckResult, DoctorContext
from corescope.model.common import SensorStatus
from corescope.sources.perf import PERF_MISSING
from corescope.store import profiles as ring
from corescope.timeparse import format_duration

NAME = "profile ring"


def check(ctx: DoctorContext) -> CheckResult:
    result = CheckResult()
    perf_here = ctx.runner.which("perf") is not None
    if ctx.store is None:
        why = "no store yet: run `corescope record` to keep a ring of CPU stacks"
        if not perf_here:
            why = PERF_MISSING
        result.sensors.append(SensorStatus(NAME, False, why))
        return result
    n, oldest, newest, size, samples = ring.summary(ctx.store)
    if n == 0:
        why = PERF_MISSING if not perf_here else (
            "empty: `corescope record` has not finished a profile chunk yet "
            "(or ran with --no-profile)")
        result.sensors.append(SensorStatus(NAME, False, why))
        return result
    assert oldest is not None and newest is not None
    age = max(0.0, time.time() - newest)
    detail = (f"{n} chunks, {format_duration(newest - oldest)} of stacks "
              f"({samples} samples, {size / 1e6:.1f} MB), newest {format_duration(age)} ago")
    if not perf_here:
        detail += f"; {PERF_MISSING} (queries need perf script)"
    result.sensors.append(SensorStatus(NAME, perf_here, detail))
    return result
