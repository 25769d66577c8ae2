"""Kernel logs in every format `events --file` reads: dmesg (plain, -r, -x, -T,
--time-format iso), syslog's kern.log, and a raw /dev/kmsg dump. The parsing is
sources.kmsg's; this module only recognises the content and hands it over.

Boot-relative stamps (`[  123.456789]`) are placed by the importer with the import's boot
time. A log without any timestamps (`dmesg --notime`) cannot be placed in time and is not
recognised."""

from __future__ import annotations

import re

from corescope.sources.artifacts.base import Parsed
from corescope.sources.kmsg import parse_saved_log

KINDS = ("kernel_log",)


def sniff(head: str) -> str | None:
    sample = head[:16384]
    if re.match(r"\s*(?:\{|\[\s*[{\]])", sample):  # JSON: the units module's (journal_json)
        return None
    records, _ = parse_saved_log(sample.encode("utf-8", errors="replace"), "sniff")
    lines = [ln for ln in sample.splitlines() if ln.strip()]
    timed = sum(1 for r in records if r.usec is not None or r.wall is not None)
    if not lines or timed == 0:
        return None
    if timed >= min(3, len(lines)) and timed / len(lines) >= 0.3:
        return "kernel_log"
    return None


def parse(data: bytes, kind: str, source: str) -> Parsed:
    p = Parsed(kind, source)
    records, diags = parse_saved_log(data, source)
    p.kernel = records
    for d in diags[:50]:
        p.diag(d.message, d.line)
    if len(diags) > 50:
        p.diag(f"{len(diags) - 50} more unreadable lines")
    return p
