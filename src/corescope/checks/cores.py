"""Doctor check: hot-core episodes in the live sample and in the stored record."""

from __future__ import annotations

from corescope.analysis.episodes import find_episodes
from corescope.checks.base import CheckResult, DoctorContext
from corescope.model.common import Finding, SensorStatus
from corescope.model.cores import CoreSample, Episode
from corescope.store.series import read_samples
from corescope.timeparse import iso

# ENA resets a queue whose TX completions stall for 5 s: an episode that long is critical.
CRITICAL_S = 5.0


def merged_samples(ctx: DoctorContext) -> tuple[list[CoreSample], int]:
    """Stored samples since ctx.since, then live samples the store does not already cover."""
    stored = read_samples(ctx.store, ctx.since, ctx.end + 1) if ctx.store else []
    live = ctx.live_samples
    if stored:
        covered = stored[-1].t
        live = [s for s in live if s.t > covered]
    return stored + live, len(stored)


def episode_finding(e: Episode) -> Finding:
    return Finding(
        kind="hot_core_episode",
        severity="critical" if e.duration_s >= CRITICAL_S else "warning",
        summary=(
            f"cpu{e.cpu} at {e.mean_pct:.0f}% {e.mode} time for {e.duration_s:.1f}s from "
            f"{iso(e.start)}, while the machine averaged {e.machine_avg_pct:.0f}% and a 30 s "
            f"monitor would have shown {e.seen_at_30s_pct:.0f}% for that core"
        ),
        evidence={"episode": e.to_json()},
    )


def check(ctx: DoctorContext) -> CheckResult:
    result = CheckResult()
    samples, n_stored = merged_samples(ctx)
    cpus = sorted({c for s in samples for c in s.deltas})
    if not samples:
        result.sensors.append(SensorStatus("cores", False, "no per-core samples: /proc/stat "
                                           "unreadable and no stored record"))
        return result
    result.sensors.append(SensorStatus(
        "cores", True,
        f"{len(cpus)} CPUs, {len(samples) - n_stored} live samples over {ctx.seconds:g}s"
        + (f" + {n_stored} stored samples since {iso(ctx.since)}" if n_stored else ""),
    ))
    episodes = find_episodes(samples)
    ctx.shared["samples"] = samples
    ctx.shared["episodes"] = episodes
    result.findings.extend(episode_finding(e) for e in episodes)
    return result
