"""corescope's own exact formats: NDJSON files whose first line is a header
`{"corescope": KIND, "version": 1}` and whose other lines are one record each. They carry what
the compatible copies in a bundle (mpstat JSON, dmesg) round away: tick counts, sub-second
times, event ids, churn and locations. Pure: records in, text out, and back; never raises on
bad input (a bad line becomes a diagnostic)."""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from corescope.model.cgroups import (
    ChurnCount,
    Location,
    MemcgCensus,
    RestartRecord,
    StatReadCost,
)
from corescope.model.common import Diagnostic
from corescope.model.cores import FIELDS, CoreSample
from corescope.model.events import KernelEvent, QueueIrq

FORMAT = "corescope-capture"  # a bundle's manifest names this format
VERSION = 1
KINDS = ("cores", "events", "censuses", "churn", "locations", "stat_costs", "restarts",
         "irq_maps", "losses")
MAX_DIAGNOSTICS = 200


@dataclass
class Native:
    """Everything the native files of one bundle hold."""

    samples: list[CoreSample] = field(default_factory=list)
    events: list[KernelEvent] = field(default_factory=list)
    censuses: list[MemcgCensus] = field(default_factory=list)
    churn: list[ChurnCount] = field(default_factory=list)
    locations: list[tuple[float, Location]] = field(default_factory=list)
    stat_costs: list[StatReadCost] = field(default_factory=list)
    restarts: list[RestartRecord] = field(default_factory=list)
    irq_maps: list[tuple[float, list[QueueIrq]]] = field(default_factory=list)
    losses: list[tuple[float, int]] = field(default_factory=list)
    diagnostics: list[Diagnostic] = field(default_factory=list)

    def records(self) -> int:
        return sum(len(getattr(self, k)) for k in ("samples", "events", "censuses", "churn",
                                                   "locations", "stat_costs", "restarts",
                                                   "irq_maps", "losses"))


# --- writing ---------------------------------------------------------------------------------

def _lines(kind: str, rows: Iterable[dict[str, Any]], meta: dict[str, Any] | None = None
           ) -> str:
    head = {"corescope": kind, "version": VERSION, **(meta or {})}
    out = [json.dumps(head, separators=(",", ":"))]
    out += [json.dumps(r, separators=(",", ":"), default=str) for r in rows]
    return "\n".join(out) + "\n"


def dump_cores(samples: Iterable[CoreSample]) -> str:
    return _lines("cores", ({"t": s.t, "interval_s": s.interval_s, "cpus": s.cpus,
                             "ticks": [list(s.deltas[c]) for c in s.cpus]} for s in samples),
                  {"fields": list(FIELDS)})


def dump_events(events: Iterable[KernelEvent]) -> str:
    return _lines("events", ({"id": e.id, "time": e.time, "kind": e.kind, "driver": e.driver,
                              "device": e.device, "fields": e.fields, "lab": e.lab,
                              "raw": e.raw, "mono_usec": e.mono_usec, "seq": e.seq,
                              "level": e.level, "source": e.source} for e in events))


def dump_censuses(rows: Iterable[MemcgCensus]) -> str:
    return _lines("censuses", (c.__dict__ for c in rows))


def dump_churn(rows: Iterable[ChurnCount]) -> str:
    return _lines("churn", (c.__dict__ for c in rows))


def dump_locations(rows: Iterable[tuple[float, Location]]) -> str:
    return _lines("locations", ({"t": t, **loc.__dict__} for t, loc in rows))


def dump_stat_costs(rows: Iterable[StatReadCost]) -> str:
    return _lines("stat_costs", (c.__dict__ for c in rows))


def dump_restarts(rows: Iterable[RestartRecord]) -> str:
    return _lines("restarts", (r.__dict__ for r in rows))


def dump_irq_maps(rows: Iterable[tuple[float, list[QueueIrq]]]) -> str:
    return _lines("irq_maps", ({"t": t, "map": [dataclasses.asdict(q) for q in m]}
                               for t, m in rows))


def dump_losses(rows: Iterable[tuple[float, int]]) -> str:
    return _lines("losses", ({"t": t, "lost": n} for t, n in rows))


# --- reading ---------------------------------------------------------------------------------

def sniff(head: str) -> str | None:
    """The native kind of a file from its first line, or None."""
    first = head.split("\n", 1)[0].strip()
    if not first.startswith('{"corescope"'):
        return None
    try:
        h = json.loads(first)
    except (ValueError, RecursionError):  # nesting deeper than the decoder's stack
        return None
    kind = h.get("corescope") if isinstance(h, dict) else None
    return kind if kind in KINDS else None


def _num(v: Any) -> float:
    # a wall-clock time: epoch seconds, never before 1970 (nor past ~5138)
    if isinstance(v, bool) or not isinstance(v, int | float) or not 0 <= v <= 1e11:
        raise ValueError(f"not a time: {v!r}")
    return float(v)


def _count(v: Any, what: str, top: int = 2**63 - 1) -> int:
    """A non-negative whole number (a CPU, a tick count, an IRQ): a float, a string or a
    negative number in its place is a tampered or corrupt record, not a value to convert."""
    if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v <= top:
        raise ValueError(f"{what}: {v!r} is not a count")
    return v


def _opt_count(r: dict[str, Any], key: str, top: int = 2**63 - 1) -> int | None:
    v = r.get(key)
    return None if v is None else _count(v, key, top)


def _opt_str(r: dict[str, Any], key: str) -> str | None:
    v = r.get(key)
    return None if v is None else str(v)


def _core(r: dict[str, Any]) -> CoreSample:
    cpus = [_count(c, "cpu") for c in r["cpus"]]
    ticks = [tuple(_count(x, "ticks") for x in row) for row in r["ticks"]]
    if len(cpus) != len(ticks) or any(len(t) != len(FIELDS) for t in ticks):
        raise ValueError("cpus and ticks do not match")
    t, interval = _num(r["t"]), _num(r["interval_s"])
    if not 0 < interval <= t:  # t 0 with 1 s began in 1969
        raise ValueError(f"not an interval: {interval!r}")
    return CoreSample(t=t, interval_s=interval,
                      deltas=dict(zip(cpus, ticks, strict=True)))


def _event(r: dict[str, Any]) -> KernelEvent:
    return KernelEvent(time=_num(r["time"]), kind=str(r["kind"]), raw=str(r.get("raw", "")),
                       driver=_opt_str(r, "driver"), device=_opt_str(r, "device"),
                       fields=dict(r.get("fields") or {}), lab=bool(r.get("lab")),
                       mono_usec=_opt_count(r, "mono_usec"), seq=_opt_count(r, "seq"),
                       level=_opt_count(r, "level", 7),
                       source=str(r.get("source") or "kmsg"),
                       id=r["id"] if isinstance(r.get("id"), int) else None)


def _queue(q: Any) -> QueueIrq:
    if not isinstance(q, dict):
        raise ValueError(f"not a queue: {q!r}")
    return QueueIrq(iface=_opt_str(q, "iface"), queue=_opt_count(q, "queue"),
                    irq=_count(q["irq"], "irq"), name=str(q["name"]),
                    direction=str(q["direction"]),
                    cpus=tuple(_count(c, "cpu") for c in q["cpus"]),
                    basis=str(q.get("basis", "")))


def _typed(cls: type, r: dict[str, Any], signed: bool = False) -> Any:
    """cls(**r), refusing values whose type does not match the field's annotation, so a
    tampered file cannot smuggle a string into arithmetic later; numbers are finite, and
    not negative unless `signed` (counts, times and durations never are)."""
    obj = cls(**r)
    for f in dataclasses.fields(obj):
        v, ann = getattr(obj, f.name), str(f.type)
        if v is None and "None" in ann:
            continue
        ok = (isinstance(v, bool) if ann.startswith("bool") else
              isinstance(v, str) if ann.startswith("str") else
              isinstance(v, dict) if ann.startswith("dict") else
              # a count is a whole number the store's integers hold (1e308 made Infinity)
              isinstance(v, int) and not isinstance(v, bool) and abs(v) < 2**63
              if ann.startswith("int") else
              isinstance(v, int | float) and not isinstance(v, bool)
              if ann.startswith("float") else True)
        if not ok or (isinstance(v, float) and not math.isfinite(v)) or (
                not signed and isinstance(v, int | float) and v < 0):
            raise ValueError(f"{f.name}: {v!r} is not {ann}")
    return obj


def _add(n: Native, kind: str, r: dict[str, Any]) -> None:
    if kind == "cores":
        n.samples.append(_core(r))
    elif kind == "events":
        n.events.append(_event(r))
    elif kind == "censuses":
        n.censuses.append(_typed(MemcgCensus, {**r, "t": _num(r["t"])}))
    elif kind == "churn":
        n.churn.append(_typed(ChurnCount, {**r, "t": _num(r["t"])}))
    elif kind == "locations":
        t = _num(r.pop("t"))
        n.locations.append((t, _typed(Location, r, signed=True)))  # own excess may be < 0
    elif kind == "stat_costs":
        n.stat_costs.append(_typed(StatReadCost, {**r, "t": _num(r["t"])}))
    elif kind == "restarts":
        n.restarts.append(_typed(RestartRecord, {**r, "t": _num(r["t"])}))
    elif kind == "irq_maps":
        n.irq_maps.append((_num(r["t"]), [_queue(q) for q in r["map"]]))
    elif kind == "losses":
        n.losses.append((_num(r["t"]), _count(r["lost"], "lost")))


def parse(text: str, source: str, into: Native | None = None) -> Native:
    """Records of one native file added to `into` (or a new Native)."""
    n = into if into is not None else Native()
    lines = text.splitlines()
    kind = sniff(lines[0] if lines else "")
    if kind is None:
        n.diagnostics.append(Diagnostic(source, "not a corescope native file"))
        return n
    for i, line in enumerate(lines[1:], 2):
        if not line.strip():
            continue
        try:
            r = json.loads(line)
            if not isinstance(r, dict):
                raise ValueError("not an object")
            _add(n, kind, r)
        except (ValueError, TypeError, KeyError, RecursionError) as exc:
            if len(n.diagnostics) < MAX_DIAGNOSTICS:
                n.diagnostics.append(Diagnostic(source, f"bad {kind} record: {exc}", i))
    return n
