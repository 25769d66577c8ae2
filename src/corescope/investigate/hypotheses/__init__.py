"""Hypotheses, one module each. Every module defines `NAME` and
`evaluate(inv: Investigation, thresholds: Thresholds) -> Hypothesis`: supported, ruled out or
not measured (naming the sensor that was off and why), with a score, the numbers behind it
and what observation would flip it. `diagnose` runs them all, in this order."""

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
