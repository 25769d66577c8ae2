"""Shell loop logs: `while true; do date; cat /proc/X; ...; sleep N; done > file`.

A log is cut into blocks at each line `date` printed; each block is (epoch, its lines). A file
with no date line is one undated block (epoch None)."""

from __future__ import annotations

import re

from corescope.sources.artifacts.dates import parse_date_line

# the CPU column header of /proc/interrupts and /proc/softirqs
CPU_HEADER = re.compile(r"^\s+CPU0(\s+CPU\d+)*\s*$", re.MULTILINE)


def split_dated(text: str, is_date_candidate=None) -> list[tuple[float | None, int, list[str]]]:  # type: ignore[no-untyped-def]
    """[(epoch or None, first line number, lines)]. A line is a date line when it parses as
    one and (optionally) passes `is_date_candidate` (e.g. not a bare number that could be a
    count)."""
    blocks: list[tuple[float | None, int, list[str]]] = []
    cur: list[str] = []
    cur_t: float | None = None
    cur_line = 1
    for lineno, line in enumerate(text.splitlines(), 1):
        t = parse_date_line(line) if len(line) <= 64 else None
        if t is not None and (is_date_candidate is None or is_date_candidate(line)):
            if cur or cur_t is not None:
                blocks.append((cur_t, cur_line, cur))
            cur, cur_t, cur_line = [], t, lineno
            continue
        cur.append(line)
    if cur or cur_t is not None:
        blocks.append((cur_t, cur_line, cur))
    return blocks
