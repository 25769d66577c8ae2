"""Doctor checks: one module per feature, each with `check(ctx: DoctorContext) -> CheckResult`.

`corescope doctor` runs every module listed in `CHECK_MODULES`, in order. A check that cannot
measure returns a SensorStatus with ok=False saying what was not measured; it never raises
for a missing capability.
"""

CHECK_MODULES: tuple[str, ...] = (
    "corescope.checks.cores",
    "corescope.checks.profile",
    "corescope.checks.zombies",
    "corescope.checks.events",
)
