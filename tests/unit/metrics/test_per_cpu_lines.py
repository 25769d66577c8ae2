"""The exporter's per-CPU line cache (metrics/exporter._PerCpu): scrapes before the first
sample (no CPU yet) answer no lines, as often as they come; then the lines follow the values,
rebuilt only where a value moved."""

from __future__ import annotations

import numpy as np

from corescope.metrics.exporter import _PerCpu


def _family() -> tuple[_PerCpu, list[str]]:
    built: list[str] = []

    def lines(cpu: str, v: object) -> str:
        built.append(cpu)
        return f"x{{cpu=\"{cpu}\"}} {v}\n"

    return _PerCpu(lines), built


def test_scrapes_before_the_first_sample_answer_nothing_each_time() -> None:
    fam, built = _family()
    empty = np.zeros((0, 7))
    # twice in a row: the second compared the empty arrays and raised (a 500 to Prometheus)
    assert fam((), empty) == "" and fam((), empty) == ""
    assert fam((0, 1), np.array([1.0, 2.0])) == 'x{cpu="0"} 1.0\nx{cpu="1"} 2.0\n'
    assert built == ["0", "1"]


def test_only_moved_cpus_are_rebuilt_and_back_to_no_cpu() -> None:
    fam, built = _family()
    fam((0, 1), np.array([1.0, 2.0]))
    assert fam((0, 1), np.array([1.0, 3.0])) == 'x{cpu="0"} 1.0\nx{cpu="1"} 3.0\n'
    assert built == ["0", "1", "1"]
    nan = np.array([np.nan, 3.0])
    fam((0, 1), nan)
    assert fam((0, 1), nan.copy()).count("nan") == 1 and built[-1] == "0"  # NaN equals itself
    assert fam((), np.zeros(0)) == ""
