"""Pressure evidence saved on a node, single reads or dated loops:

- `psi_loop`: `date; grep . /proc/pressure/*` (lines `/proc/pressure/cpu:some avg10=...`), or
  `head /proc/pressure/*` (`==> /proc/pressure/cpu <==` headers). A bare `some/full` file
  names no resource, so it is reported, not guessed.
- `schedstat_loop`: `date; cat /proc/schedstat` (per-CPU run and run-queue wait time).
- `vmstat_loop`: `date; cat /proc/vmstat` (reclaim, allocation stalls, compaction, OOM kills).

Parsing goes through the live sensor's parsers (sources/pressure.py); the records are written
by `corescope.ingest.write_pressure` through store/pressure.py, like a recording's.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from corescope.model.pressure import PsiSample, SchedstatSample, VmstatSample
from corescope.sources import pressure as src
from corescope.sources.artifacts.base import Parsed
from corescope.sources.artifacts.loops import split_dated

KINDS = ("psi_loop", "schedstat_loop", "vmstat_loop")

_PSI = re.compile(r"^(?:/proc/pressure/(?:cpu|memory|io):)?(?:some|full) avg10=\S+ avg60=\S+ "
                  r"avg300=\S+ total=\d+\s*$", re.MULTILINE)
_PSI_NAMED = re.compile(r"^/proc/pressure/(cpu|memory|io):((?:some|full) .*)$")
_HEAD_HDR = re.compile(r"^==> /proc/pressure/(cpu|memory|io) <==\s*$")
_SCHED_CPU = re.compile(r"^cpu\d+(?: \d+){9,}\s*$", re.MULTILINE)
_SCHED_VER = re.compile(r"^version \d+\s*$", re.MULTILINE)
_VMSTAT = re.compile(r"^(?:nr_free_pages|pgpgin|pgfault|pgscan_kswapd|pgsteal_kswapd) \d+\s*$",
                     re.MULTILINE)


@dataclass
class Pressure:
    """The payload a pressure artifact carries (written by ingest.write_pressure)."""

    psi: list[PsiSample] = field(default_factory=list)
    sched: list[SchedstatSample] = field(default_factory=list)
    vm: list[VmstatSample] = field(default_factory=list)


def sniff(head: str) -> str | None:
    if _SCHED_VER.search(head) and _SCHED_CPU.search(head):
        return "schedstat_loop"
    if _PSI.search(head):
        return "psi_loop"
    if len(_VMSTAT.findall(head)) >= 2:
        return "vmstat_loop"
    return None


def parse(data: bytes, kind: str, source: str) -> Parsed:
    p = Parsed(kind, source)
    text = data.decode("utf-8", errors="replace")
    payload = Pressure()
    undated = 0
    for t, lineno, lines in split_dated(text):
        if not any(ln.strip() for ln in lines):
            continue
        if t is None:
            undated += 1
        when = t if t is not None else 0.0
        body = "\n".join(lines)
        if kind == "schedstat_loop":
            s, diags = src.parse_schedstat(body, when, source)
            if s is not None:
                payload.sched.append(s)
        elif kind == "vmstat_loop":
            v, diags = src.parse_vmstat(body, when, source)
            if v is not None:
                payload.vm.append(v)
        else:
            got, diags = _psi_block(lines, when, source)
            payload.psi += got
        for d in diags[:3]:
            p.diag(d.message, lineno + (d.line or 0))
    n = len(payload.psi) + len(payload.sched) + len(payload.vm)
    if undated:
        if undated > 1:
            p.diag(f"{undated} reads without a date line: they cannot be placed in time; only "
                   "the last is kept")
            _keep_last_undated(payload)
        p.undated = undated == n or n <= 1
    times = [s.t for s in payload.psi + payload.sched + payload.vm if s.t > 0]  # type: ignore[operator]
    p.extra = payload
    p.extra_records = len(payload.psi) + len(payload.sched) + len(payload.vm)
    p.extra_span = (min(times), max(times)) if times else None
    p.extra_cpus = tuple(sorted({q.cpu for s in payload.sched for q in s.cpus}))
    if not p.extra_records:
        p.diag(f"no {kind.removesuffix('_loop')} readings found")
    return p


def _keep_last_undated(payload: Pressure) -> None:
    for name in ("psi", "sched", "vm"):
        items = getattr(payload, name)
        dated = [s for s in items if s.t > 0]
        undated = [s for s in items if s.t <= 0]
        # one PSI read holds up to three resources
        undated = undated[-3:] if name == "psi" else undated[-1:]
        setattr(payload, name, dated + undated)


def _psi_block(lines: list[str], t: float, source: str
               ) -> tuple[list[PsiSample], list]:  # type: ignore[type-arg]
    """One read of several PSI files, each line naming its resource (grep) or under a
    `==> path <==` header (head)."""
    by_res: dict[str, list[str]] = {}
    current: str | None = None
    diags = []
    unnamed = 0
    for ln in lines:
        if not ln.strip():
            continue
        m = _HEAD_HDR.match(ln)
        if m:
            current = m.group(1)
            continue
        m = _PSI_NAMED.match(ln)
        if m:
            by_res.setdefault(m.group(1), []).append(m.group(2))
        elif current is not None:
            by_res.setdefault(current, []).append(ln)
        else:
            unnamed += 1
    if unnamed:
        from corescope.model.common import Diagnostic
        diags.append(Diagnostic(source, f"{unnamed} PSI lines name no resource (save them with "
                                "`grep . /proc/pressure/*`): not imported"))
    out = []
    for res, body in by_res.items():
        s, d = src.parse_psi("\n".join(body), t, res, source)
        diags += d
        if s is not None:
            out.append(s)
    return out, diags
