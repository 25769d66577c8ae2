"""Softirqs per second in sysstat's output (`mpstat -I SCPU`, the SCPU table of `-I ALL` and
`-A`, JSON's "soft-interrupts"): NET_RX and NET_TX per CPU, a rate × the interval being the
count the /proc/softirqs loop gives (what `record` keeps and the investigation reads)."""

from __future__ import annotations

import math

from corescope.model.events import SoftirqSample
from corescope.sources.artifacts.base import Parsed
from corescope.sources.artifacts.sysstat_samples import NO_SAMPLE

_SINCE_BOOT_SOFT = ("one softirq report without an interval to read its rates over (the rates "
                    "since boot: `mpstat -I SCPU` without an interval, or one JSON entry; "
                    "`mpstat -I SCPU -P ALL 1 N` gives per-second rates): ")


class SoftirqRates:
    """NET_RX/NET_TX rates as they are read, by time; `done` turns them into SoftirqSample
    rows in `p.extra` (written by ingest.write_softirqs, as a softirqs loop is)."""

    def __init__(self) -> None:
        # time → (interval, NET_RX per CPU, NET_TX per CPU), counts already
        self.by_t: dict[float, tuple[float, dict[int, int], dict[int, int]]] = {}
        self.since_boot = False
        self.bad = 0

    def add(self, t: float, itv: float, cpu: int, rx: float, tx: float) -> None:
        if not 0 < itv <= 86400:
            self.since_boot |= itv == 0
            return
        if not all(math.isfinite(v) and 0 <= v < 1e12 for v in (rx, tx)):
            self.bad += 1
            return
        entry = self.by_t.setdefault(t, (itv, {}, {}))
        # the first kept (files glued together repeat a time)
        entry[1].setdefault(cpu, round(rx * entry[0]))
        entry[2].setdefault(cpu, round(tx * entry[0]))

    def done(self, p: Parsed) -> None:
        if self.bad:
            p.diag(f"{self.bad} softirq rows with unreadable NET_RX/NET_TX rates skipped")
        if self.since_boot and not self.by_t:
            p.diag(_SINCE_BOOT_SOFT + NO_SAMPLE)
        if not self.by_t:
            return
        rows = [SoftirqSample(t, itv, rx, tx) for t, (itv, rx, tx) in sorted(self.by_t.items())]
        p.extra = rows
        p.extra_records = len(rows)
        p.extra_span = (min(r.t - r.interval_s for r in rows), rows[-1].t)
        p.extra_cpus = tuple(sorted({c for r in rows for c in r.net_rx}))
