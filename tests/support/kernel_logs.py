"""Shared by the kernel-log table tests: a saved log's text -> the events `events --file`
shows (parse_saved_log, then classify_saved_log with a fixed boot anchor)."""

from __future__ import annotations

import time

from corescope.analysis.classify import classify_saved_log
from corescope.model.events import KernelEvent
from corescope.sources.kmsg_saved import parse_saved_log

BOOT = 1_700_000_000.0  # the anchor a log without a wall clock is placed with


class _Anchor:
    def wall_of(self, usec: int) -> float:
        return BOOT + usec / 1e6


def events_of(text: str) -> tuple[list[KernelEvent], list[str], str]:
    records, diags = parse_saved_log(text.encode(), "test")
    evs, clock = classify_saved_log(records, _Anchor())
    return evs, [d.message for d in diags], clock


def incidents(text: str, links: bool = False) -> list[KernelEvent]:
    evs, _, _ = events_of(text)
    return [e for e in evs if e.is_incident or (links and e.kind == "link_up")]


def local(y: int, mo: int, d: int, h: int, mi: int, s: float = 0.0) -> float:
    return time.mktime((y, mo, d, h, mi, int(s), 0, 0, -1)) + (s - int(s))
