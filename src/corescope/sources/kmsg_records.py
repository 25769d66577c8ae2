"""/dev/kmsg's record form: `prio,seq,usec,flag[,more];message` with ` KEY=value`
continuation lines, one record per read, or many in a saved dump (`cat /dev/kmsg`).

Pure and total: bytes in, records plus diagnostics out, never an exception for bad content."""

from __future__ import annotations

import re

from corescope.model.common import Diagnostic
from corescope.model.events import KmsgRecord

# Parsed integers must fit SQLite's INTEGER (signed 64-bit) and turn into finite floats
# (usec / 1e6): a saved log is untrusted input and may carry any number at all.
INT_MAX = 2**63 - 1

_ESCAPE = re.compile(rb"\\x([0-9a-fA-F]{2})")


def unescape(data: bytes) -> str:
    """/dev/kmsg escapes non-printable bytes and the backslash itself as `\\xNN`."""
    if b"\\x" in data:
        data = _ESCAPE.sub(lambda m: bytes((int(m.group(1), 16),)), data)
    return data.decode("utf-8", errors="replace")


def parse_kmsg_record(data: bytes, source: str = "/dev/kmsg"
                      ) -> tuple[KmsgRecord | None, list[Diagnostic]]:
    """One record: `prio,seq,usec,flag[,more];message` then ` KEY=value` continuation lines."""
    diags: list[Diagnostic] = []
    if not isinstance(data, bytes | bytearray):
        return None, [Diagnostic(source, f"not bytes: {type(data).__name__}")]
    head, _, rest = bytes(data).partition(b"\n")
    prefix, sep, msg = head.partition(b";")
    if not sep:
        return None, [Diagnostic(source, f"no ';' in record header: {head[:60]!r}")]
    parts = prefix.split(b",")
    if len(parts) < 3:
        return None, [Diagnostic(source, f"short record header: {prefix[:60]!r}")]
    try:
        prio = int(parts[0])
        seq = int(parts[1])
        usec = int(parts[2])
    except ValueError:  # also: more digits than int() will read (sys.int_info)
        return None, [Diagnostic(source, f"unreadable record header: {prefix[:60]!r}")]
    if prio < 0 or seq < 0 or usec < 0:
        return None, [Diagnostic(source, f"negative field in record header: {prefix[:60]!r}")]
    if max(prio, seq, usec) > INT_MAX:  # the kernel's are u64; beyond int64 is garbage
        return None, [Diagnostic(source, f"field out of range in record header: "
                                 f"{prefix[:60]!r}")]
    flags = parts[3].decode("ascii", errors="replace") if len(parts) > 3 else ""
    meta: dict[str, str] = {}
    for line in rest.split(b"\n"):
        if not line:
            continue
        if not line.startswith(b" "):
            diags.append(Diagnostic(source, f"continuation line without space: {line[:60]!r}"))
            continue
        key, eq, value = line[1:].partition(b"=")
        if not eq:
            diags.append(Diagnostic(source, f"continuation line without '=': {line[:60]!r}"))
            continue
        meta[unescape(key)] = unescape(value)
    rec = KmsgRecord(
        message=unescape(msg), usec=usec, seq=seq, level=prio & 7, facility=prio >> 3,
        flags=flags, dict_=meta, source="kmsg",
    )
    return rec, diags


def parse_kmsg_dump(data: bytes, source: str = "kmsg dump"
                    ) -> tuple[list[KmsgRecord], list[Diagnostic]]:
    """Many records back to back, as `cat /dev/kmsg > file` saves them."""
    records: list[KmsgRecord] = []
    diags: list[Diagnostic] = []
    chunk: list[bytes] = []

    def flush() -> None:
        if chunk:
            rec, d = parse_kmsg_record(b"\n".join(chunk), source)
            diags.extend(d)
            if rec is not None:
                records.append(rec)
            chunk.clear()

    for line in data.split(b"\n"):
        if line.startswith(b" ") and chunk:
            chunk.append(line)
            continue
        flush()
        if line:
            chunk.append(line)
    flush()
    return records, diags
