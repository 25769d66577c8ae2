"""sysstat's JSON (`mpstat -o JSON`, `sadf -j`) one statistics entry at a time: a day of 96
CPUs is hundreds of MB as one decoded document; entry by entry it is never all in memory. An
entry that does not decode is read piece by piece, sysstat 11's decimal commas are repaired,
and each entry's CPU rows come out in MODES order."""

from __future__ import annotations

import json
import re
from typing import Any

from corescope.sources.artifacts.base import Parsed
from corescope.sources.artifacts.sysstat_samples import ALIAS, MODE_AT, cpu_id

_DECIMAL_COMMA = re.compile(r'("[A-Za-z%-]+":\s*-?\d+),(\d+)')
_TS = re.compile(r'"timestamp":\s*(?:"(?P<s>[^"]*)"|(?P<o>\{[^{}]*\}))')
_CPU_OBJ = re.compile(r'\{\s*"cpu":[^{}]*\}')
DECODER = json.JSONDecoder()


def _loads(text: str) -> Any:
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return None


def json_header(text: str) -> dict[str, Any]:
    """The host fields before "statistics" (date, file-date, ...)."""
    end = text.find('"statistics"')
    head = text[: end if end >= 0 else 65536]
    host: dict[str, Any] = {}
    for key in ("date", "file-date", "number-of-cpus", "nodename", "timezone"):
        m = re.search(rf'"{key}":\s*("(?:[^"\\]|\\.)*"|\d+)', head)
        if m:
            host[key] = _loads(m.group(1))
    return host


def json_entries(text: str, p: Parsed):  # type: ignore[no-untyped-def]
    """Each statistics entry as a dict; an entry that does not decode is read piece by piece
    (its complete CPU objects), and a cut last entry is left out."""
    marks = list(_TS.finditer(text))
    broken = 0
    decoded_to = failed_at = -1
    for i, m in enumerate(marks):
        if m.start() < decoded_to:
            continue  # a second "timestamp" inside the entry just read (its last one won)
        brace = text.rfind("{", 0, m.start())
        # timestamps repeated within one object must not decode it again each time: that is
        # quadratic (a 150 KB line of them took 15 s)
        if brace != failed_at:
            try:
                obj, decoded_to = DECODER.raw_decode(text, brace)
                if isinstance(obj, dict):
                    yield obj
                    continue
            except (ValueError, RecursionError):
                failed_at = brace
        end = marks[i + 1].start() if i + 1 < len(marks) else len(text)
        if i + 1 == len(marks) and "]" not in text[m.end():end]:
            p.diag("the last entry is cut short (mpstat stopped mid-write?): skipped")
            continue  # its CPU list is cut: a partial list would read as CPUs gone offline
        broken += 1
        ts = m.group("s") if m.group("s") is not None else _loads(m.group("o"))
        cpus = [o for o in (_loads(x.group(0)) for x in _CPU_OBJ.finditer(text, m.end(), end))
                if isinstance(o, dict)]
        yield {"timestamp": ts, "cpu-load": cpus}
    if broken:
        p.diag(f"{broken} entries did not decode as JSON: read piece by piece")


def entry_rows(entry: dict[str, Any], p: Parsed) -> tuple[list[int], list[list[float]]]:
    rows = entry.get("cpu-load")
    if rows is None:
        rows = entry.get("cpu-load-all")
    ids: list[int] = []
    out: list[list[float]] = []
    if not isinstance(rows, list):
        return ids, out
    for r in rows:
        if not isinstance(r, dict):
            continue
        cpu = cpu_id(r.get("cpu"))
        if cpu is None:
            if r.get("cpu") not in ("all", "-1"):
                p.diag(f"unreadable cpu id {str(r.get('cpu'))[:20]!r}")
            continue
        vals = [0.0] * 10
        for k, v in r.items():
            i = MODE_AT.get(ALIAS.get(k, ""), -1)
            if i < 0:
                continue
            try:
                vals[i] = float(v) if not isinstance(v, bool) else float("nan")
            except (TypeError, ValueError, OverflowError):  # 1e400 as an int: no float
                vals[i] = float("nan")
        ids.append(cpu)
        out.append(vals)
    return ids, out


def json_text(data: bytes, p: Parsed) -> str:
    text = data.decode("utf-8", errors="replace")
    if _DECIMAL_COMMA.search(text[:65536]):  # never valid JSON, so never a false repair
        # sysstat 11 printed JSON numbers in the locale's LC_NUMERIC ("usr": 50,25)
        fixed = _DECIMAL_COMMA.sub(r"\1.\2", text)
        if fixed != text:
            p.notes.append("numbers used a decimal comma (sysstat 11 under a non-C locale): "
                           "read as decimals")
        return fixed
    return text
