from __future__ import annotations

import pytest

from corescope.analysis.usage import usage_of
from corescope.model.cores import FIELDS


def d(**kw: int) -> tuple[int, ...]:
    return tuple(kw.get(f, 0) for f in FIELDS)


def test_sysstat_interval_excludes_guest_and_usr_excludes_guest():
    # guest ticks are already inside user: interval is 100, not 140
    u = usage_of(0, d(user=60, system=20, idle=20, guest=40))
    assert u.ticks == 100
    assert u.pct["usr"] == pytest.approx(20.0)
    assert u.pct["guest"] == pytest.approx(40.0)
    assert u.pct["sys"] == pytest.approx(20.0)
    assert u.mode_pct("kernel") == pytest.approx(20.0)


def test_kernel_mode_is_sys_irq_soft():
    u = usage_of(0, d(system=50, irq=10, softirq=30, idle=10))
    assert u.mode_pct("kernel") == pytest.approx(90.0)
    assert u.mode_pct("busy") == pytest.approx(90.0)


def test_tickless_idle_cpu_is_all_idle():
    u = usage_of(3, d())
    assert u.ticks == 0 and u.pct["idle"] == 100.0 and u.mode_pct("kernel") == 0.0
