"""The Prometheus text formats, written directly: 0.0.4 (`text/plain`) and OpenMetrics 1.0.

Why not prometheus-client's registry: it rebuilds every family, sample and label string on
each scrape and escapes label values a character at a time (its OpenMetrics writer checks each
character against the UTF-8 name rules), about 0.6 ms of Python for our ~100 series. Here a
family's HELP/TYPE lines are built once, a label set's text once per distinct set, and a scrape
formats only the values. The output is prometheus-client's byte for byte
(tests/cli/test_exporter.py renders the same families with it and compares).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence

TEXT_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
OPENMETRICS_CONTENT_TYPE = ("application/openmetrics-text; version=1.0.0; charset=utf-8; "
                            "escaping=underscores")
_LABEL_CACHE_MAX = 4096  # distinct label sets remembered per family (units, ifaces come and go)


def escape(value: str) -> str:
    """Label values and HELP text (OpenMetrics also escapes `"` in HELP; 0.0.4 does not)."""
    return value.replace("\\", r"\\").replace("\n", r"\n").replace('"', r"\"")


def number(v: float) -> str:
    """prometheus-client's floatToGoString: Go's exponent form from 1e6 up, ±Inf, NaN."""
    if v != v:
        return "NaN"
    if math.isinf(v):
        return "+Inf" if v > 0 else "-Inf"
    s = repr(float(v))
    dot = s.find(".")
    if v > 0 and dot > 6:
        mantissa = f"{s[0]}.{s[1:dot]}{s[dot + 1:]}".rstrip("0.")
        return f"{mantissa}e+{dot - 1:02d}"
    return s


class Family:
    """One metric family: its two headers, prebuilt, and sample lines on demand.

    `kind` is the OpenMetrics type (gauge, counter, info); 0.0.4 names counters `_total` and
    info families `_info` typed gauge, as prometheus-client does."""

    __slots__ = ("_labels", "_sets", "om_head", "sample", "text_head")

    def __init__(self, name: str, kind: str, help_text: str, labels: Sequence[str] = ()) -> None:
        suffix = {"counter": "_total", "info": "_info"}.get(kind, "")
        self.sample = name + suffix
        text_help = help_text.replace("\\", r"\\").replace("\n", r"\n")
        self.text_head = (f"# HELP {self.sample} {text_help}\n"
                          f"# TYPE {self.sample} {'gauge' if kind == 'info' else kind}\n")
        self.om_head = f"# HELP {name} {escape(help_text)}\n# TYPE {name} {kind}\n"
        self._labels = tuple(labels)
        self._sets: dict[tuple[str, ...], str] = {}

    def line(self, values: tuple[str, ...], v: float) -> str:
        """`name{labels} value`, the labels given in the order the family declared them."""
        head = self._sets.get(values)
        if head is None:
            head = self.sample + _labelset(zip(self._labels, values, strict=True))
            if len(self._sets) >= _LABEL_CACHE_MAX:
                self._sets.clear()
            self._sets[values] = head
        return f"{head} {number(v)}\n"

    def info_line(self, labels: Mapping[str, str]) -> str:
        return f"{self.sample}{_labelset(labels.items())} 1.0\n"


def _labelset(pairs: Iterable[tuple[str, str]]) -> str:
    items = sorted(pairs)
    if not items:
        return ""
    return "{" + ",".join(f'{k}="{escape(v)}"' for k, v in items) + "}"


Block = tuple[Family, str]  # a family and its sample lines, joined


def render(blocks: Sequence[Block], openmetrics: bool) -> bytes:
    if openmetrics:
        parts = [s for f, body in blocks for s in (f.om_head, body)]
        parts.append("# EOF\n")
    else:
        parts = [s for f, body in blocks for s in (f.text_head, body)]
    # a name from the node (a NIC, a unit) may hold bytes that are not UTF-8: escaped, not fatal
    return "".join(parts).encode("utf-8", "backslashreplace")


def wants_openmetrics(accept: str) -> bool:
    """prometheus-client's choice: the first of OpenMetrics (no version, or >= 1: Prometheus
    asks for it) and text/plain >= 1 in the Accept header wins; else 0.0.4."""
    for part in accept.split(","):
        toks = part.split(";")
        kind = toks[0].strip()
        if kind not in ("application/openmetrics-text", "text/plain"):
            continue
        version = next((t.split("=", 1)[1].strip() for t in toks[1:]
                        if t.strip().startswith("version=")), "")
        if kind == "application/openmetrics-text" and (not version or _major(version) >= 1):
            return True
        if kind == "text/plain" and _major(version) >= 1:
            return False
    return False


def _major(version: str) -> int:
    """The major version; 0 for anything that is not a few ASCII digits (a client's header:
    '²' is a digit to str.isdigit and not to int, 5,000 digits are past int's limit)."""
    head = version.split(".", 1)[0].strip()
    if not head or len(head) > 9 or not (head.isascii() and head.isdigit()):
        return 0
    return int(head)
