"""sar's per-CPU load in sadf's other output forms, read into the same samples `sadf -d`
(`sadf_csv`) and `sadf -j` give: the same percentages-to-ticks conversion and the
same time rules (sadf states UTC; `-t` is the node's local time; `-U` epoch seconds).

- `sadf_ppc`: `sadf -p` ("ppc" form), one value a line, tab-separated
  `host  interval  timestamp  device  field  value`
  (`vm  1  2026-12-01 10:27:54 UTC  cpu0  %usr  1.01`). The CPU rows are those whose device
  is `cpuN` and whose field is a CPU-load percentage (`%usr` ... `%idle`, or `%user` and
  `%system` with `-u`); `sadf -p -- -A` interleaves other activities (interrupts as
  `IRQ  cpuN  value`, softnet and frequency as `cpuN  total/s` or `MHz`), which are passed
  over.
- `sadf_xml`: `sadf -x`, `<timestamp date= time= utc= interval=><cpu-load><cpu number="0"
  usr=... />`: each timestamp element becomes the entry `sadf -j` prints and is read by the
  same code (`sadf_json.read_sadf_entry`). Parsed as a stream by expat with no DTD loaded (sadf
  names an http DTD: never fetched) and refused outright when the document declares entities
  (the billion-laughs and external-entity attacks need a declaration), as defusedxml does.
"""

from __future__ import annotations

import re
from typing import Any
from xml.parsers import expat

from corescope.sources.artifacts.base import Parsed
from corescope.sources.artifacts.sadf_csv import sadf_time
from corescope.sources.artifacts.sadf_json import read_sadf_entry, sadf_local_zone
from corescope.sources.artifacts.sysstat_samples import (
    ALIAS,
    MODE_AT,
    PctSamples,
    cpu_id,
    finish,
    num,
)

KINDS = ("sadf_ppc", "sadf_xml")

# one `sadf -p` line: host, interval, timestamp (UTC, local with -t, epoch with -U), device,
# field, value
_PPC_LINE = re.compile(r"^[^\t\n]+\t\d+\t(?:\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?: \S+)?|\d{9,11})"
                       r"\t[^\t\n]+\t[^\t\n]+\t[^\t\n]*$")
# a per-CPU %idle row (`-P ALL`; `-- -A` prints the CPU activity first)
_PPC_CPU = re.compile(r"^[^\t\n]+\t\d+\t[^\t\n]+\tcpu\d+\t%idle\t", re.MULTILINE)


# sadf -x: the XML declaration, sadf's DOCTYPE, then the <sysstat> root
_XML_ROOT = re.compile(r"<sysstat[\s/>]")


def sniff(head: str) -> str | None:
    s = head.lstrip("\ufeff \t\r\n")
    first = s.split("\n", 1)[0]
    if _PPC_LINE.match(first) and _PPC_CPU.search(head):
        return "sadf_ppc"
    if s.startswith(("<?xml", "<!DOCTYPE sysstat", "<sysstat")) and _XML_ROOT.search(s[:16384]):
        return "sadf_xml"
    return None


def _parse_ppc(data: bytes, acc: PctSamples, p: Parsed) -> None:
    bad = dup = cut = twice = 0
    done: set[tuple[float, float]] = set()
    cur: tuple[float, float] | None = None
    group: dict[int, dict[int, float]] = {}  # CPU → {MODES index: percentage}
    fields: frozenset[int] | None = None  # the percentages a CPU row has in this file

    def flush() -> None:
        nonlocal group, fields, cut
        if cur is not None and group:
            ids: list[int] = []
            rows: list[list[float]] = []
            for cpu, row in group.items():
                if fields is None and MODE_AT["idle"] in row:
                    fields = frozenset(row)
                if fields is None or not fields <= row.keys():
                    cut += 1  # the file ends (or breaks) inside this CPU's fields
                    continue
                vals = [0.0] * 10
                for i, v in row.items():
                    vals[i] = v
                ids.append(cpu)
                rows.append(vals)
            acc.add(cur[0], cur[1], ids, rows, p)
            done.add(cur)
        group = {}

    for line in data.decode("utf-8", errors="replace").splitlines():
        f = line.split("\t")
        if len(f) != 6:
            if line.strip():
                bad += 1
            continue
        mode = MODE_AT.get(ALIAS.get(f[4], ""), -1)
        if mode < 0 or not f[3].startswith("cpu"):
            continue  # "all", or another activity's rows
        cpu = cpu_id(f[3][3:])
        t = sadf_time(f[2])
        try:
            itv = float(f[1])
        except ValueError:
            itv = float("nan")
        if cpu is None or t is None or not 0 < itv <= 86400:
            bad += 1
            continue
        if cur != (t, itv):
            flush()
            cur = (t, itv)
            if cur in done:
                dup += 1
        if cur in done:
            continue  # a second run of rows for a time already read (files glued together)
        row = group.setdefault(cpu, {})
        if mode in row:
            twice += 1  # the first kept, as sadf_csv keeps a CPU's first row
            continue
        row[mode] = num(f[5])
    flush()
    if twice:
        p.diag(f"{twice} values given twice for one CPU and time: the first kept")
    if cut:
        p.diag(f"{cut} CPU rows without all their fields (the file ends mid-record?) skipped")
    if dup:
        p.diag(f"{dup} runs of rows for a time already read skipped")
    if bad:
        p.diag(f"{bad} unreadable sadf -p lines skipped")


# ---------------------------------------------------------------------------------------------
# sadf -x

# deeper than any sadf document (sysstat > host > statistics > timestamp > cpu-load > cpu)
_MAX_DEPTH = 32
_LOAD = ("cpu-load", "cpu-load-all")


class _Refused(Exception):
    """The document is not read at all (entity declarations, absurd nesting)."""


class _XmlReader:
    """expat callbacks: the header's timezone, and each timestamp's CPU rows."""

    def __init__(self, acc: PctSamples, p: Parsed) -> None:
        self.acc, self.p = acc, p
        self.stack: list[str] = []
        self.text: list[str] = []  # character data of <timezone>
        self.local_zone: str | None = None
        self.ts: dict[str, str] | None = None
        self.rows: list[dict[str, Any]] = []

    def start(self, name: str, attrs: dict[str, str]) -> None:
        if len(self.stack) >= _MAX_DEPTH:
            raise _Refused(f"elements nested over {_MAX_DEPTH} deep: not sadf's layout")
        parent = self.stack[-1] if self.stack else ""
        self.stack.append(name)
        if name == "timestamp":
            self.ts, self.rows = dict(attrs), []
        elif name == "cpu" and parent in _LOAD and self.ts is not None:
            # sadf -j's row: the CPU under "cpu", the percentages under their names
            self.rows.append({**attrs, "cpu": attrs.get("number")})
        elif name == "timezone":
            self.text = []

    def end(self, name: str) -> None:
        if self.stack:
            self.stack.pop()
        if name == "timezone":
            self.local_zone = sadf_local_zone("".join(self.text))
        elif name == "timestamp" and self.ts is not None:
            # only a complete timestamp element is read: a cut one would drop CPUs
            read_sadf_entry({"timestamp": self.ts, "cpu-load": self.rows}, self.local_zone,
                            self.acc, self.p)
            self.ts, self.rows = None, []

    def chars(self, data: str) -> None:
        if self.stack and self.stack[-1] == "timezone" and len(self.text) < 64:
            self.text.append(data)


def _refuse_entity(*_: object) -> None:
    raise _Refused("the document declares entities (an entity-expansion or external-entity "
                   "attack? sadf never writes any): refused, nothing in it read")


def _refuse_external(*_: object) -> int:
    raise _Refused("the document refers to an external entity: refused, nothing read")


def _parse_xml(data: bytes, acc: PctSamples, p: Parsed) -> None:
    r = _XmlReader(acc, p)
    parser = expat.ParserCreate()
    # no DTD is read: not sadf's (an http URL, never fetched), not any parameter entity
    parser.SetParamEntityParsing(expat.XML_PARAM_ENTITY_PARSING_NEVER)
    parser.EntityDeclHandler = _refuse_entity
    parser.UnparsedEntityDeclHandler = _refuse_entity
    parser.ExternalEntityRefHandler = _refuse_external
    parser.StartElementHandler = r.start
    parser.EndElementHandler = r.end
    parser.CharacterDataHandler = r.chars
    parser.buffer_text = True
    try:
        parser.Parse(data, True)
    except _Refused as exc:
        p.diag(str(exc))
        p.samples = []
        acc.__init__()  # type: ignore[misc]
    except expat.ExpatError as exc:
        # a cut or damaged file: what came before the error was read
        p.diag(f"the XML breaks at line {exc.lineno}: {expat.ErrorString(exc.code)}; the "
               "timestamps before it were read")
    except (ValueError, LookupError, RecursionError, MemoryError) as exc:  # an unknown encoding
        p.diag(f"the XML could not be read: {type(exc).__name__}: {str(exc)[:80]}")


def parse(data: bytes, kind: str, source: str) -> Parsed:
    p = Parsed(kind, source)
    acc = PctSamples()
    if kind == "sadf_xml":
        _parse_xml(data, acc, p)
    else:
        _parse_ppc(data, acc, p)
    return finish(acc, p, data)
