"""The verdict's confidence is calibrated: over generated scenario hours of every class (with
issue 19's joined classes), the Brier score of the confidence of verdicts naming a cause
stays under 0.05 and every verdict is right. The whole corpus is
`python -m corescope.views.calibration` (docs/diagnose.md gives its figure)."""

from __future__ import annotations

from corescope.views.calibration import CORPUS, Outcome, brier, run

# one of each class, the joined ones among them, on other seeds and CPU counts than the
# corpus test's
SUBSET = [c for c in CORPUS if (c[0], c[1]) in {
    ("zombie_chain", 7), ("softirq_storm", 9), ("healthy_bursty", 731),
    ("zombie_no_harm", 703), ("hardware_fault", 5), ("memory_pressure", 722),
    ("hypervisor_steal", 24), ("crash_loop", 701), ("healthy_bursty", 711),
    ("cpu_contention", 6)}]


def test_brier_is_the_mean_squared_error_of_named_verdicts() -> None:
    out = [Outcome("k", 1, 2, "a", "a", 0.9), Outcome("k", 2, 2, "a", "b", 0.6),
           Outcome("k", 3, 2, "a", "undetermined", 0.0)]
    score, n = brier(out)
    assert n == 2 and abs(score - (0.01 + 0.36) / 2) < 1e-9
    assert brier([]) == (None, 0)


def test_confidence_is_calibrated_over_generated_hours() -> None:
    assert len(SUBSET) == 10
    outcomes = run(SUBSET)
    wrong = [o for o in outcomes if not o.right]
    assert not wrong, wrong
    score, n = brier(outcomes)
    assert n == len(outcomes) and score is not None and score < 0.05, (score, outcomes)
