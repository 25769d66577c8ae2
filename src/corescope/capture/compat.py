"""The human-readable copies a bundle carries beside the exact native files, in the formats
other tools already read: `mpstat -P ALL -o JSON` (sysstat 12), `dmesg --time-format iso`,
and the incident team's census loop (`date; cat /proc/cgroups; find ... | wc -l`)."""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from corescope.analysis.usage import machine_usage, sample_usage
from corescope.model.cgroups import MemcgCensus
from corescope.model.cores import CoreSample
from corescope.model.events import KernelEvent

_MPSTAT_MODES = ("usr", "nice", "sys", "iowait", "irq", "soft", "steal", "guest", "gnice",
                 "idle")


def _load(cpu: str, pct: dict[str, float]) -> dict[str, Any]:
    return {"cpu": cpu, **{m: round(pct.get(m, 0.0), 2) for m in _MPSTAT_MODES}}


def mpstat_json(samples: Sequence[CoreSample], host: str, release: str, machine: str) -> str:
    """sysstat 12's `mpstat -P ALL -o JSON` layout, on UTC (as with TZ=UTC): one
    `statistics` entry per sample, `all` first, then each CPU."""
    day = datetime.fromtimestamp(samples[0].t, UTC) if samples else datetime.now(UTC)
    stats = []
    for s in samples:
        per = sample_usage(s)
        stats.append({
            "timestamp": datetime.fromtimestamp(s.t, UTC).strftime("%H:%M:%S"),
            "cpu-load": [_load("all", machine_usage(s).pct)]
            + [_load(str(c), per[c].pct) for c in sorted(per)],
        })
    ncpu = max((len(s.deltas) for s in samples), default=0)
    doc = {"sysstat": {"hosts": [{
        "nodename": host, "sysname": "Linux", "release": release, "machine": machine,
        "number-of-cpus": ncpu, "date": day.strftime("%m/%d/%y"), "statistics": stats}]}}
    return json.dumps(doc, indent=1) + "\n"


def dmesg_iso(events: Sequence[KernelEvent]) -> str:
    """`dmesg --time-format iso` lines (UTC offset, microseconds)."""
    out = []
    for e in events:
        dt = datetime.fromtimestamp(e.time, UTC)
        stamp = dt.strftime("%Y-%m-%dT%H:%M:%S,") + f"{dt.microsecond:06d}+00:00"
        out.append(f"{stamp} {e.raw}")
    return "\n".join(out) + ("\n" if out else "")


def census_loop(censuses: Sequence[MemcgCensus]) -> str:
    """The incident team's loop, one block per census: `date` (UTC), the memory row of
    /proc/cgroups, and the live directory count."""
    out = []
    for c in censuses:
        if c.kernel_count is None or c.live is None:
            continue
        out.append(time.strftime("%a %b %d %H:%M:%S UTC %Y", time.gmtime(c.t)))
        out.append("#subsys_name\thierarchy\tnum_cgroups\tenabled")
        # hierarchy 0 is how /proc/cgroups shows a controller that lives on cgroup v2
        out.append(f"memory\t{0 if c.hierarchy == 'v2' else 1}\t{c.kernel_count}\t1")
        out.append(str(c.live))
    return "\n".join(out) + ("\n" if out else "")
