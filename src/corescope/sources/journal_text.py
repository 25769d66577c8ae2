"""journalctl's two text forms of whole entries, read into the dicts `-o json` gives, so every
journal reader (kernel lines, restart entries, the boot time) takes them as it takes JSON:

- `-o export`: `FIELD=value` lines, one entry per paragraph (entries end at a blank line). A
  value that is not plain text (a newline or other control byte in it, or not UTF-8) is
  written as the field name alone on its line, a 64-bit little-endian length, the raw bytes
  and a newline.
- `-o verbose`: a header line that ends in the entry's cursor,
  `Mon 2026-11-30 21:04:17.160311 UTC [s=...;i=1;b=BOOT;m=MONO;t=REALTIME;x=...]`, where
  `m` and `t` are the monotonic and wall clocks in hexadecimal µs, then `    FIELD=value`
  lines (four spaces). A value's further lines are indented to where the value began; a
  value that is not text is shown as `[22B blob data]` (its bytes are not in the output).
  journalctl's `-- Boot ID --` lines between entries are skipped.

The header's printed date is in the reader's locale and zone; the cursor's fields are not,
so they are what is read."""

from __future__ import annotations

import re
from collections.abc import Iterator

from corescope.model.common import Diagnostic

_FIELD = re.compile(rb"^[A-Za-z0-9_]{1,64}$")
# the first line of an export entry: journalctl begins each with __CURSOR; an export written
# by other tools (systemd-journal-remote's input) may begin with any field
_EXPORT_FIRST = re.compile(rb"^(?:__CURSOR|__REALTIME_TIMESTAMP|__MONOTONIC_TIMESTAMP|__SEQNUM"
                           rb"|_BOOT_ID|MESSAGE|_TRANSPORT|PRIORITY)=")
_VERBOSE_HEAD = re.compile(
    rb"^\S.* \[(?P<cursor>s=[0-9a-f]+;i=(?P<i>[0-9a-f]+);b=(?P<b>[0-9a-f]+);"
    rb"m=(?P<m>[0-9a-f]+);t=(?P<t>[0-9a-f]+);x=[0-9a-f]+)\]\s*$")
# journalctl's own lines between entries: `-- Boot 4f3e... --`, `-- No entries --`
_NOTE = re.compile(rb"^-- .* --$")
_VERBOSE_FIELD = re.compile(rb"^    ([A-Za-z0-9_]{1,64})=(.*)$")
_FROM_HEADER = ("_BOOT_ID",)  # set from the cursor, and printed again as a field
MAX_BINARY = 1 << 24  # journald keeps fields far below this; a larger length is corrupt


def text_form(data: bytes) -> str | None:
    """'export' or 'verbose' when `data` begins as journalctl writes that form, else None."""
    first = data[:8192].lstrip(b"\r\n").split(b"\n", 1)[0]
    if _EXPORT_FIRST.match(first):
        return "export"
    if _VERBOSE_HEAD.match(first):
        return "verbose"
    return None


def text_entries(data: bytes, form: str, diags: list[Diagnostic] | None = None,
                 source: str = "journal", limit: int | None = None) -> Iterator[dict]:
    """The entries of a `text_form` journal, as JSON-like dicts (str values; a field given
    twice keeps its first value, as the kernel and restart readers want the message)."""
    reader = _export_entries if form == "export" else _verbose_entries
    for n, entry in enumerate(reader(data, diags if diags is not None else [], source), 1):
        if limit is not None and n > limit:
            return
        yield entry


def _text(value: bytes) -> str:
    return value.decode("utf-8", errors="replace")


def _export_entries(data: bytes, diags: list[Diagnostic], source: str) -> Iterator[dict]:
    entry: dict[str, str] = {}
    pos, end, lineno = 0, len(data), 1
    while pos < end:
        nl = data.find(b"\n", pos)
        if nl < 0:
            nl = end
        line = data[pos:nl].rstrip(b"\r")
        start_line = lineno
        pos, lineno = nl + 1, lineno + 1
        if not line:
            if entry:
                yield entry
                entry = {}
            continue
        name, eq, value = line.partition(b"=")
        if eq:
            if _FIELD.match(name):
                entry.setdefault(name.decode(), _text(value))
            else:
                diags.append(Diagnostic(source, "not a journal export field", start_line))
            continue
        if not _FIELD.match(name):
            diags.append(Diagnostic(source, "not a journal export field", start_line))
            continue
        # a binary field: name, 8-byte little-endian length, the bytes, a newline
        size = int.from_bytes(data[pos:pos + 8], "little") if pos + 8 <= end else -1
        tail = pos + 8 + size
        if not 0 <= size <= MAX_BINARY or tail > end or data[tail:tail + 1] not in (b"\n", b""):
            diags.append(Diagnostic(source, f"binary field {name.decode()} with a bad length: "
                                    "rest of its entry skipped", start_line))
            # resynchronise at the next blank line (the end of this entry)
            blank = data.find(b"\n\n", pos)
            entry = {}
            if blank < 0:
                return
            lineno += data.count(b"\n", pos, blank + 2)
            pos = blank + 2
            continue
        entry.setdefault(name.decode(), _text(data[pos + 8:tail]))
        lineno += data.count(b"\n", pos, tail + 1)
        pos = tail + 1
    if entry:
        yield entry


def _verbose_entries(data: bytes, diags: list[Diagnostic], source: str) -> Iterator[dict]:
    entry: dict[str, str] | None = None
    field: str | None = None  # the field whose value further indented lines continue
    indent = 0
    keep = False
    for lineno, raw in enumerate(data.split(b"\n"), 1):
        line = raw.rstrip(b"\r")
        head = _VERBOSE_HEAD.match(line)
        if head is not None:
            if entry:
                yield entry
            entry = {"__CURSOR": _text(head["cursor"]), "_BOOT_ID": _text(head["b"]),
                     "__SEQNUM": str(int(head["i"], 16)),
                     "__MONOTONIC_TIMESTAMP": str(int(head["m"], 16)),
                     "__REALTIME_TIMESTAMP": str(int(head["t"], 16))}
            field = None
            continue
        if not line.strip() or _NOTE.match(line):
            continue
        if entry is None:
            diags.append(Diagnostic(source, "line before the first entry's header", lineno))
            continue
        m = _VERBOSE_FIELD.match(line)
        if m is not None:
            name = m.group(1).decode()
            field, indent = name, 4 + len(name) + 1
            keep = name not in entry or name in _FROM_HEADER  # a repeated field keeps its first
            if keep:
                entry[name] = _text(m.group(2))
            continue
        if field is not None and line[:indent].strip() == b"":
            if keep:
                entry[field] += "\n" + _text(line[indent:])
            continue
        diags.append(Diagnostic(source, "not a journal verbose field", lineno))
    if entry:
        yield entry
