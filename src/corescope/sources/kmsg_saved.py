"""Saved kernel logs, whatever their form: a /dev/kmsg dump, dmesg and syslog text
(sources.kmsg_text), or journalctl -k exported as JSON or as text (sources.journal_text).

Pure and total: bytes or text in, records plus diagnostics out."""

from __future__ import annotations

import re
from collections.abc import Iterator

from corescope.model.common import Diagnostic
from corescope.model.events import KmsgRecord
from corescope.sources.artifacts.dates import EPOCH_MAX
from corescope.sources.journal_text import text_entries
from corescope.sources.journal_text import text_form as journal_text_form
from corescope.sources.kmsg_records import INT_MAX, parse_kmsg_dump
from corescope.sources.kmsg_text import parse_dmesg
from corescope.sources.text import json_text


def kernel_entries(records: list[KmsgRecord]) -> list[KmsgRecord]:
    """The kernel's records of a journal: those with `_TRANSPORT=kernel` when the entries say
    their transport (a whole journal holds every program's), else all (a `journalctl -k`
    export written without it)."""
    if any(r.dict_.get("TRANSPORT") is not None for r in records):
        return [r for r in records if r.dict_.get("TRANSPORT") == "kernel"]
    return records


def parse_journal_json(data: str | bytes, source: str = "journal"
                       ) -> tuple[list[KmsgRecord], list[Diagnostic]]:
    """`journalctl -k -o json` (one object per line; json-pretty and arrays also read), and
    `-o export` and `-o verbose` (sources.journal_text). Every entry is returned; pass them to
    `kernel_entries` for the kernel's.

    The kernel's own clock is `_SOURCE_MONOTONIC_TIMESTAMP`; journald's receive time
    `__REALTIME_TIMESTAMP` gives the wall clock directly."""
    records: list[KmsgRecord] = []
    diags: list[Diagnostic] = []
    n = 0
    for obj in journal_objects(data, diags, source):
        n += 1
        if not isinstance(obj, dict):
            diags.append(Diagnostic(source, f"entry {n} is not an object"))
            continue
        rec = _journal_record(obj)
        if rec is None:
            diags.append(Diagnostic(source, f"entry {n} has no MESSAGE"))
            continue
        records.append(rec)
    return records, diags


_SSE_DATA = re.compile(r"^data: ", re.MULTILINE)


def journal_objects(data: str | bytes, diags: list[Diagnostic] | None = None,
                    source: str = "journal", limit: int | None = None) -> Iterator[object]:
    """The JSON values of `journalctl -o json` (one per line), `json-pretty` (spread over
    lines), `json-seq` (RS separators), `json-sse` (`data: ` lines) or a JSON array; an
    unreadable stretch is skipped to the next line (noted in `diags`). `-o export` and
    `-o verbose` entries come as the dicts JSON would give (sources.journal_text)."""
    # told from the first bytes: a JSON journal is not copied to bytes for the test
    head = data[:8192]
    form = journal_text_form(head if isinstance(head, bytes)
                             else head.encode("utf-8", errors="replace"))
    if form is not None:
        raw = data if isinstance(data, bytes) else data.encode("utf-8", errors="replace")
        yield from text_entries(raw, form, diags, source, limit)
        return
    if isinstance(data, bytes):
        data = data.decode("utf-8", errors="replace")
    # json-seq record separators; a lone surrogate escape in a MESSAGE decodes to visible
    # text (SQLite refuses surrogates)
    text = json_text(data.replace("\x1e", "\n"), diags, source)
    if text.lstrip().startswith("data: "):
        text = _SSE_DATA.sub("", text)
    import json  # only a journalctl export needs it, not every command that imports this

    dec = json.JSONDecoder()
    pos = n = 0
    while limit is None or n < limit:
        while pos < len(text) and text[pos] in " \t\r\n,[]":
            pos += 1
        if pos >= len(text):
            break
        try:
            obj, end = dec.raw_decode(text, pos)
        except (ValueError, RecursionError):
            nl = text.find("\n", pos)
            if diags is not None:
                diags.append(Diagnostic(source, f"unreadable JSON at offset {pos}"))
            if nl < 0:
                break
            pos = nl + 1
            continue
        pos = end
        n += 1
        yield obj


def _journal_record(obj: dict) -> KmsgRecord | None:
    msg = obj.get("MESSAGE")
    if isinstance(msg, list):  # non-UTF-8 messages come as byte arrays
        try:
            msg = bytes(int(b) & 0xFF for b in msg).decode("utf-8", errors="replace")
        except (TypeError, ValueError, OverflowError):  # int(inf) raises OverflowError
            return None
    if not isinstance(msg, str):
        return None

    def num(key: str, lo: float = 0, hi: float = INT_MAX) -> int | None:
        v = obj.get(key)
        try:
            n = int(v) if v is not None else None
        except (TypeError, ValueError, OverflowError):  # int(1e400) is int(inf): Overflow
            return None
        # 10**400 is a valid JSON int: out of int64 it would overflow realtime / 1e6 and
        # the store; a negative clock or a priority past 7 is no value journald writes:
        # either is treated as missing
        return n if n is None or lo <= n <= hi else None

    # journald's receive time: a wall clock past any incident's years is not one
    realtime = num("__REALTIME_TIMESTAMP", 0, EPOCH_MAX * 1e6)
    meta = {}
    for k in ("_KERNEL_DEVICE", "_KERNEL_SUBSYSTEM", "_BOOT_ID", "_TRANSPORT"):
        if isinstance(obj.get(k), str):
            meta[k.lstrip("_").replace("KERNEL_", "")] = obj[k]
    return KmsgRecord(
        message=msg, usec=num("_SOURCE_MONOTONIC_TIMESTAMP"), level=num("PRIORITY", 0, 7),
        facility=num("SYSLOG_FACILITY", 0, 23), dict_=meta,
        wall=realtime / 1e6 if realtime is not None else None, source="journal",
    )


_KMSG_HEAD = re.compile(rb"^\d+,\d+,\d+,")
# JSON as journalctl writes it: an object, an array of objects (or an empty one), json-seq's
# RS, json-sse's `data: `. A `[` alone is no JSON: dmesg stamps, a shell prompt and dmesg -T
# in any locale begin with one too.
_JSON_START = re.compile(rb"^(?:\{|\[\s*[{\]]|\x1e|data: \{)")


def parse_saved_log(data: str | bytes, source: str = "file"
                    ) -> tuple[list[KmsgRecord], list[Diagnostic]]:
    """Any saved kernel log: journal JSON (or export/verbose text), a raw /dev/kmsg dump, or
    dmesg/syslog text (sources.kmsg_text)."""
    if isinstance(data, str):
        data = data.encode("utf-8", errors="replace")
    stripped = data.lstrip()
    if _JSON_START.match(stripped) or journal_text_form(stripped):
        records, diags = parse_journal_json(data, source)
        kernel = kernel_entries(records)
        if len(kernel) < len(records):
            diags.append(Diagnostic(source, f"{len(records) - len(kernel)} journal entries of "
                                    "other programs than the kernel skipped"))
        return kernel, diags
    if _KMSG_HEAD.match(data.lstrip(b"\n")):
        return parse_kmsg_dump(data, source)
    return parse_dmesg(data, source)
