"""`mpstat -P ALL -o JSON 1 N` (sysstat 12) output, byte for byte in sysstat's layout.

sysstat computes each percentage as delta ÷ interval × 100 where the interval is the sum of
that CPU's mode deltas (99, 100 or 101 ticks at 1 s), so rows sum to 100 only up to
rounding; `all` is the same over the sums of every CPU's counters.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path

from corescope.lab.scenarios.load import Ticks
from corescope.lab.scenarios.out import TextOut
from corescope.lab.scenarios.plan import Plan

_ZERO = "0.00"


def _table(total: int) -> list[str]:
    return [f"{t / total * 100:.2f}" for t in range(total + 1)]


class MpstatWriter:
    def __init__(self, plan: Plan, directory: Path) -> None:
        self.plan = plan
        self.out = TextOut(directory / "mpstat.json", plan.mpstat_compress, plan.end)
        self.tables = {t: _table(t) for t in (99, 100, 101)}
        first = time.gmtime(plan.start)
        date = (time.strftime("%Y-%m-%d", first) if plan.mpstat_date == "iso"
                else time.strftime("%m/%d/%y", first))
        self.out.write(
            '{"sysstat": {\n\t"hosts": [\n\t\t{\n'
            f'\t\t\t"nodename": "{plan.hostname}",\n'
            '\t\t\t"sysname": "Linux",\n'
            f'\t\t\t"release": "{plan.kernel}",\n'
            '\t\t\t"machine": "x86_64",\n'
            f'\t\t\t"number-of-cpus": {plan.cpus},\n'
            f'\t\t\t"date": "{date}",\n'
            '\t\t\t"statistics": [\n'
        )

    def __call__(self, i: int, row: Sequence[Ticks]) -> None:
        stamp = time.strftime("%H:%M:%S", time.gmtime(self.plan.start + i))
        sums = [0] * 8
        lines = []
        tables = self.tables
        for c, t in enumerate(row):
            tot = t[0] + t[1] + t[2] + t[3] + t[4] + t[5] + t[6] + t[7]
            tab = tables.get(tot) or _table(tot)
            lines.append(
                f'\t\t\t\t\t\t{{"cpu": "{c}", "usr": {tab[t[0]]}, "nice": {tab[t[1]]}, '
                f'"sys": {tab[t[2]]}, "iowait": {tab[t[3]]}, "irq": {tab[t[4]]}, '
                f'"soft": {tab[t[5]]}, "steal": {tab[t[6]]}, "guest": {_ZERO}, '
                f'"gnice": {_ZERO}, "idle": {tab[t[7]]}}}')
            for k in range(8):
                sums[k] += t[k]
        itv = sum(sums) or 1
        a = [f"{v / itv * 100:.2f}" for v in sums]
        head = (f'\t\t\t\t\t\t{{"cpu": "all", "usr": {a[0]}, "nice": {a[1]}, "sys": {a[2]}, '
                f'"iowait": {a[3]}, "irq": {a[4]}, "soft": {a[5]}, "steal": {a[6]}, '
                f'"guest": {_ZERO}, "gnice": {_ZERO}, "idle": {a[7]}}}')
        self.out.write(
            ("\t\t\t\t},\n" if i > 1 else "")
            + f'\t\t\t\t{{\n\t\t\t\t\t"timestamp": "{stamp}",\n\t\t\t\t\t"cpu-load": [\n'
            + head + ",\n" + ",\n".join(lines) + "\n\t\t\t\t\t]\n")

    def close(self) -> Path:
        self.out.write("\t\t\t\t}\n\t\t\t]\n\t\t}\n\t]\n}}\n")
        return self.out.close()
