"""sysstat's per-CPU utilisation: `mpstat -P ALL -o JSON` (sysstat 11 and 12), plain
`mpstat -P ALL N` text (12 h and 24 h clocks, any locale's date and decimal comma, ISO with
S_TIME_FORMAT=ISO), and `sadf -j` of a `sar -o` file (`-- -P ALL -u` or `-u ALL`).

Percentages back to ticks. The store keeps USER_HZ tick deltas per CPU in /proc/stat's field
order (model.cores.FIELDS), so each CPU's interval is rebuilt as round(interval_s × 100)
ticks and shared among the fields in proportion to the printed percentages (largest
remainder, so the ticks add up exactly; guest ticks are put back inside user and guest_nice
inside nice, as /proc/stat counts them). The percentages are renormalised first: sysstat
prints each one rounded to 0.01 and the kernel's per-second deltas jitter by a tick (99 or
101 ticks), so the printed values sum to 99.98–100.02. Resolution is one tick: at a 1 s
interval a percentage comes back within ±0.5 percentage points of what mpstat printed, and a
core mpstat showed at 100% system time comes back at 100%.

Times. sadf states UTC. mpstat prints the node's local time of day with the date only in its
header (and in JSON's "date"): times are read in the local zone of the machine running
corescope (set TZ to the node's zone), and a time of day that jumps back by more than 12 h
is the next day (midnight rollover)."""

from __future__ import annotations

import itertools
import json
import re
import statistics
from typing import Any

from corescope.model.cores import CoreSample
from corescope.sources.artifacts.base import Parsed
from corescope.sources.artifacts.dates import (
    ZONES,
    parse_clock,
    parse_day,
    zoned_epoch,
)

KINDS = ("mpstat_json", "sadf_json", "mpstat_text")
USER_HZ = 100

# sysstat's names for each percentage, across versions and commands
_NAMES = {
    "usr": ("usr", "user", "%usr", "%user"), "nice": ("nice", "%nice"),
    "sys": ("sys", "system", "%sys", "%system"), "iowait": ("iowait", "%iowait"),
    "irq": ("irq", "%irq"), "soft": ("soft", "%soft"), "steal": ("steal", "%steal"),
    "guest": ("guest", "%guest"), "gnice": ("gnice", "%gnice"), "idle": ("idle", "%idle"),
}
_ALIAS = {alias: mode for mode, aliases in _NAMES.items() for alias in aliases}


def sniff(head: str) -> str | None:
    s = head.lstrip()
    if s.startswith("{") and '"sysstat"' in head[:200]:
        if re.search(r'"timestamp":\s*\{', head) or '"file-date"' in head:
            return "sadf_json"
        return "mpstat_json"
    first = s.split("\n", 1)[0]
    if re.match(r"^Linux \S+ \(\S*\)\s", first) and re.search(
            r"^\S+(?: [AP]M)?(?: [A-Z]{2,5})?\s+CPU\s+%", head, re.MULTILINE):
        return "mpstat_text"
    return None


# ---------------------------------------------------------------------------------------------
# percentages → ticks

def ticks_from_pct(pct: dict[str, float], interval_s: float) -> tuple[int, ...] | None:
    """FIELDS-order tick deltas for one CPU's printed percentages over `interval_s`."""
    g = lambda k: max(0.0, float(pct.get(k, 0.0)))  # noqa: E731
    # /proc/stat's interval fields; user holds guest and nice holds guest_nice
    parts = [g("usr") + g("guest"), g("nice") + g("gnice"), g("sys"), g("idle"), g("iowait"),
             g("irq"), g("soft"), g("steal")]
    total = sum(parts)
    n = max(1, round(interval_s * USER_HZ))
    if total <= 0:
        return None
    exact = [v / total * n for v in parts]
    ticks = [int(x) for x in exact]
    short = n - sum(ticks)
    for i in sorted(range(len(exact)), key=lambda i: exact[i] - ticks[i], reverse=True)[:short]:
        ticks[i] += 1
    guest = min(ticks[0], round(g("guest") / total * n))
    gnice = min(ticks[1], round(g("gnice") / total * n))
    u, ni, sy, idle, io, irq, soft, steal = ticks
    return (u, ni, sy, idle, io, irq, soft, steal, guest, gnice)


def _pct_of(obj: dict[str, Any]) -> dict[str, float] | None:
    out: dict[str, float] = {}
    for k, v in obj.items():
        mode = _ALIAS.get(k)
        if mode is None:
            continue
        if isinstance(v, str):
            v = v.replace(",", ".")
        try:
            f = float(v)
        except (TypeError, ValueError):
            return None
        if not 0.0 <= f <= 100.5:  # NaN fails too
            return None
        out[mode] = f
    return out if "idle" in out else None


def _cpu_id(v: Any) -> int | None:
    if isinstance(v, int) and not isinstance(v, bool) and 0 <= v < 65536:
        return v
    if isinstance(v, str) and v.isdigit() and len(v) < 6:
        return int(v)
    return None  # "all", a NUMA node, garbage


class _Day:
    """Turns times of day into epochs from a start date, rolling over at midnight."""

    def __init__(self, ymd: tuple[int, int, int], zone: str | None = None) -> None:
        self.ymd = ymd
        self.zone = zone
        self.days = 0
        self.prev: int | None = None

    def epoch(self, hms: tuple[int, int, int], p: Parsed) -> float | None:
        secs = hms[0] * 3600 + hms[1] * 60 + hms[2]
        if self.prev is not None and secs < self.prev:
            if self.prev - secs > 12 * 3600:
                self.days += 1  # midnight
            else:
                p.diag(f"time of day went back from {self.prev}s to {secs}s (a clock or DST "
                       "step?): read as the same day")
        self.prev = secs
        y, mo, d = self.ymd
        t = zoned_epoch(y, mo, d, *hms, self.zone)
        return None if t is None else t + self.days * 86400


def _median_step(times: list[float]) -> float:
    steps = [b - a for a, b in itertools.pairwise(times) if b > a]
    return statistics.median(steps) if steps else 1.0


def _sample(t: float, itv: float, cpus: dict[int, dict[str, float]], p: Parsed
            ) -> CoreSample | None:
    deltas: dict[int, tuple[int, ...]] = {}
    for cpu, pct in cpus.items():
        d = ticks_from_pct(pct, itv)
        if d is not None:
            deltas[cpu] = d
    if not deltas:
        return None
    return CoreSample(t=t, interval_s=itv, deltas=deltas)


# ---------------------------------------------------------------------------------------------
# mpstat -o JSON and sadf -j

_DECIMAL_COMMA = re.compile(r'("[A-Za-z%-]+":\s*-?\d+),(\d+)')
_TS = re.compile(r'"timestamp":\s*(?:"(?P<s>[^"]*)"|(?P<o>\{[^{}]*\}))')
_CPU_OBJ = re.compile(r'\{\s*"cpu":[^{}]*\}')


def _loads(text: str) -> Any:
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return None


def _salvage(text: str, p: Parsed) -> dict[str, Any] | None:
    """A truncated or broken document (mpstat killed mid-run prints no closing brackets):
    the host header fields and every complete statistics entry, read piece by piece."""
    host: dict[str, Any] = {}
    for key in ("date", "file-date", "number-of-cpus", "nodename", "timezone"):
        m = re.search(rf'"{key}":\s*("(?:[^"\\]|\\.)*"|\d+)', text)
        if m:
            host[key] = _loads(m.group(1))
    stats = []
    marks = list(_TS.finditer(text))
    for i, m in enumerate(marks):
        end = marks[i + 1].start() if i + 1 < len(marks) else len(text)
        ts = m.group("s") if m.group("s") is not None else _loads(m.group("o"))
        cpus = [o for o in (_loads(x.group(0)) for x in _CPU_OBJ.finditer(text, m.end(), end))
                if isinstance(o, dict)]
        if i + 1 == len(marks) and "]" not in text[m.end():end]:
            p.diag("the last entry is cut short: skipped")
            continue  # its CPU list is cut: a partial list would read as CPUs gone offline
        if cpus:
            stats.append({"timestamp": ts, "cpu-load": cpus})
    if not stats:
        return None
    p.diag(f"JSON is truncated or broken: read {len(stats)} complete entries piece by piece")
    host["statistics"] = stats
    return {"sysstat": {"hosts": [host]}}


def _json_doc(data: bytes, p: Parsed) -> dict[str, Any] | None:
    text = data.decode("utf-8", errors="replace")
    doc = _loads(text)
    if doc is None and _DECIMAL_COMMA.search(text):
        # sysstat 11 printed JSON numbers in the locale's LC_NUMERIC (e.g. "usr": 50,25)
        fixed = _DECIMAL_COMMA.sub(r"\1.\2", text)
        doc = _loads(fixed)
        if doc is not None:
            p.notes.append("numbers used a decimal comma (sysstat 11 under a non-C locale): "
                           "read as decimals")
        text = fixed
    if not isinstance(doc, dict):
        doc = _salvage(text, p)
    return doc


def _hosts(doc: dict[str, Any]) -> list[dict[str, Any]]:
    ss = doc.get("sysstat")
    hosts = ss.get("hosts") if isinstance(ss, dict) else None
    return [h for h in hosts if isinstance(h, dict)] if isinstance(hosts, list) else []


def _cpu_rows(entry: dict[str, Any], p: Parsed) -> dict[int, dict[str, float]]:
    rows = entry.get("cpu-load")
    if rows is None:
        rows = entry.get("cpu-load-all")
    out: dict[int, dict[str, float]] = {}
    if not isinstance(rows, list):
        return out
    for r in rows:
        if not isinstance(r, dict):
            continue
        cpu = _cpu_id(r.get("cpu"))
        if cpu is None:
            if r.get("cpu") not in ("all", "-1"):
                p.diag(f"unreadable cpu id {str(r.get('cpu'))[:20]!r}")
            continue
        pct = _pct_of(r)
        if pct is None:
            p.diag(f"cpu {cpu}: unreadable percentages")
            continue
        out[cpu] = pct
    return out


def _parse_mpstat_json(doc: dict[str, Any], p: Parsed) -> None:
    for host in _hosts(doc):
        day = parse_day(str(host.get("date", "")))
        if day is None:
            p.diag(f"no readable \"date\" in the header ({str(host.get('date'))[:20]!r}): "
                   "samples cannot be placed in time")
            continue
        clock = _Day(day)
        stamped: list[tuple[float, dict[int, dict[str, float]]]] = []
        for entry in host.get("statistics") or []:
            if not isinstance(entry, dict):
                continue
            ts = entry.get("timestamp")
            hms = parse_clock(ts) if isinstance(ts, str) else None
            if hms is None:
                p.diag(f"unreadable timestamp {str(ts)[:30]!r}")
                continue
            t = clock.epoch(hms, p)
            rows = _cpu_rows(entry, p)
            if t is not None and rows:
                stamped.append((t, rows))
        step = _median_step([t for t, _ in stamped])
        prev: float | None = None
        for t, rows in stamped:
            itv = t - prev if prev is not None and 0 < t - prev <= 4 * step else step
            prev = t
            s = _sample(t, itv, rows, p)
            if s is not None:
                p.samples.append(s)


def _parse_sadf(doc: dict[str, Any], p: Parsed) -> None:
    for host in _hosts(doc):
        for entry in host.get("statistics") or []:
            if not isinstance(entry, dict):
                continue
            ts = entry.get("timestamp")
            if not isinstance(ts, dict):
                p.diag("entry without a timestamp object")
                continue
            day = parse_day(str(ts.get("date", "")))
            hms = parse_clock(str(ts.get("time", "")))
            if day is None or hms is None:
                p.diag(f"unreadable timestamp {json.dumps(ts)[:60]}")
                continue
            utc = ts.get("utc", 1) in (1, "1", True)
            t = zoned_epoch(*day, *hms, "UTC" if utc else None)
            try:
                itv = float(ts.get("interval", 0))
            except (TypeError, ValueError):
                itv = 0.0
            rows = _cpu_rows(entry, p)
            if t is None or not rows:
                continue
            if not 0 < itv <= 86400:
                p.diag(f"unreadable interval {ts.get('interval')!r}: entry skipped")
                continue
            s = _sample(t, itv, rows, p)
            if s is not None:
                p.samples.append(s)


# ---------------------------------------------------------------------------------------------
# plain mpstat text

_TIME_TOKENS = re.compile(r"^(\d{1,2}:\d\d:\d\d)(?:\s+([AaPp][Mm]))?(?:\s+([A-Z]{2,5}))?$")


def _split_time(tokens: list[str], ncols: int) -> tuple[tuple[int, int, int], str | None] | None:
    m = _TIME_TOKENS.match(" ".join(tokens[:ncols]))
    if not m:
        return None
    hms = parse_clock(m.group(1) + (" " + m.group(2) if m.group(2) else ""))
    if hms is None:
        return None
    zone = m.group(3)
    return hms, zone


def _parse_mpstat_text(data: bytes, p: Parsed) -> None:
    lines = data.decode("utf-8", errors="replace").splitlines()
    day = None
    for tok in (lines[0].split() if lines else []):
        day = parse_day(tok)
        if day is not None:
            break
    if day is None:
        p.diag("no date in the header line (`Linux ... (host)  DATE  arch  (N CPU)`): "
               "samples cannot be placed in time", 1)
        return
    clock: _Day | None = None
    cols: list[str] | None = None
    ntime = 0
    header_t: float | None = None
    cur_t: float | None = None
    cur: dict[int, dict[str, float]] = {}

    def flush() -> None:
        nonlocal cur
        if cur_t is not None and cur:
            itv = cur_t - header_t if header_t is not None and cur_t > header_t else None
            if itv is None:
                itv = p.samples[-1].interval_s if p.samples else 1.0
            s = _sample(cur_t, itv, cur, p)
            if s is not None:
                p.samples.append(s)
        cur = {}

    for lineno, line in enumerate(lines[1:], 2):
        toks = line.split()
        if not toks:
            continue
        if "CPU" in toks and any(t.startswith("%") for t in toks):
            flush()
            cur_t = None
            i = toks.index("CPU")
            got = _split_time(toks, i)
            if got is None:  # "Average:" headers and the like
                cols = None
                continue
            hms, zone = got
            if clock is None:
                clock = _Day(day, zone if zone in ZONES else None)
            header_t = clock.epoch(hms, p)
            cols = toks[i + 1:]
            ntime = i
            continue
        if cols is None or clock is None or len(toks) != ntime + 1 + len(cols):
            continue
        got = _split_time(toks, ntime)
        if got is None:
            continue  # Average lines, localised ("Durchschn.:"), other sections
        t = clock.epoch(got[0], p)
        if t is None:
            continue
        if cur_t is not None and t != cur_t:
            flush()
            header_t = cur_t
        cur_t = t
        cpu = _cpu_id(toks[ntime])
        if cpu is None:
            continue  # "all"
        pct = _pct_of(dict(zip(cols, toks[ntime + 1:], strict=True)))
        if pct is None:
            p.diag(f"unreadable values for cpu {cpu}", lineno)
            continue
        cur[cpu] = pct
    flush()


def parse(data: bytes, kind: str, source: str) -> Parsed:
    p = Parsed(kind, source)
    if kind == "mpstat_text":
        _parse_mpstat_text(data, p)
    else:
        doc = _json_doc(data, p)
        if doc is None:
            p.diag("not readable as sysstat JSON")
            return p
        if kind == "sadf_json":
            _parse_sadf(doc, p)
        else:
            _parse_mpstat_json(doc, p)
    if not p.samples and not p.diagnostics:
        p.diag("no per-CPU utilisation entries found")
    p.samples.sort(key=lambda s: s.t)
    return p
