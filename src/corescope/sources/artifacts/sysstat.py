"""sysstat's per-CPU utilisation: `mpstat -P ALL -o JSON` (sysstat 11 and 12), plain
`mpstat -P ALL N` text (12 h and 24 h clocks, any locale's date and decimal comma, ISO with
S_TIME_FORMAT=ISO; `mpstat -A` and sar's text too, of which only the CPU tables are read),
and `sadf -j` or `sadf -d` of a `sar -o` file (`-- -P ALL -u` or `-u ALL`). mpstat's SCPU
tables (`mpstat -I SCPU`, inside `-I ALL` and `-A`; JSON's "soft-interrupts") give NET_RX and
NET_TX per CPU (`SoftirqRates`), the rows a `/proc/softirqs` loop gives, in `Parsed.extra`.

One module per form: mpstat_json, mpstat_text, sadf_json, sadf_csv (sadf_forms: `sadf -p`
and `-x`); what they share is in sysstat_samples (percentages back to ticks), sysstat_json
(the entry reader), sysstat_softirqs and mpstat_clock. This module is the kind table's entry
for the four forms: KINDS, sniff and parse."""

from __future__ import annotations

import re

from corescope.sources.artifacts.base import Parsed
from corescope.sources.artifacts.mpstat_json import fast_mpstat as _fast_mpstat
from corescope.sources.artifacts.mpstat_json import parse_mpstat_json
from corescope.sources.artifacts.mpstat_text import parse_mpstat_text
from corescope.sources.artifacts.sadf_csv import CSV_CPU_HEADER, parse_sadf_csv, sadf_time
from corescope.sources.artifacts.sadf_json import parse_sadf_json

# the JSON decoder, by the name tests count its decodes under
from corescope.sources.artifacts.sysstat_json import DECODER as _DEC  # noqa: F401
from corescope.sources.artifacts.sysstat_json import json_text
from corescope.sources.artifacts.sysstat_samples import PctSamples, finish, ticks_from_pct

__all__ = ["KINDS", "Parsed", "PctSamples", "parse", "sadf_time", "sniff", "ticks_from_pct"]
KINDS = ("mpstat_json", "sadf_json", "mpstat_text", "sadf_csv")


def sniff(head: str) -> str | None:
    s = head.lstrip()
    if s.startswith("{") and '"sysstat"' in head[:200]:
        if re.search(r'"timestamp":\s*\{', head) or '"file-date"' in head:
            return "sadf_json"
        return "mpstat_json"
    if s.startswith("# hostname;interval;timestamp;") and CSV_CPU_HEADER.search(head):
        return "sadf_csv"
    first = s.split("\n", 1)[0]
    if re.match(r"^Linux \S+ \(\S*\)\s", first) and re.search(
            r"^\S+(?: [AP]M)?(?: [A-Z]{2,5})?\s+CPU(?:(?:\s+(?:CORE|SOCK|NODE))*\s+%|\s+HI/s\s)",
            head, re.MULTILINE):  # `mpstat -T` puts the topology columns after CPU; -I SCPU
        return "mpstat_text"
    return None


def parse(data: bytes, kind: str, source: str) -> Parsed:
    p = Parsed(kind, source)
    acc = PctSamples()
    if kind == "mpstat_text":
        parse_mpstat_text(data, acc, p)
    elif kind == "sadf_json":
        parse_sadf_json(json_text(data, p), acc, p)
    elif kind == "sadf_csv":
        parse_sadf_csv(data, acc, p)
    else:
        # the fast path looked up here at each parse: a test turns it off to hold a file to
        # the careful path
        parse_mpstat_json(json_text(data, p), acc, p, _fast_mpstat)
    return finish(acc, p, data)
