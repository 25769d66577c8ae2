"""Parsers take text or bytes: one decoding rule for all of them (never raises)."""

from __future__ import annotations

from corescope.model.common import Diagnostic
from corescope.model.text import valid_json_text


def as_text(data: str | bytes) -> str:
    return data.decode("utf-8", errors="replace") if isinstance(data, bytes) else data


def json_text(data: str | bytes, diags: list[Diagnostic] | None = None,
              source: str = "") -> str:
    """A JSON document's text, ready for json.loads: a lone surrogate escape in a name (a
    runtime's or the journal's "\\ud800") decodes to visible text, not to a string that no
    store, terminal or pipe can write; `diags` gets a note when that happened."""
    text = as_text(data)
    valid = valid_json_text(text)
    if diags is not None and valid != text:
        diags.append(Diagnostic(source, "a string holds a lone surrogate (not valid Unicode): "
                                "kept, with it written as \\udXXX"))
    return valid


# SQLite's INTEGER is a signed 64-bit number. No kernel or runtime counter reaches it; one
# saved number past it (a damaged or hostile file) must cost its record, never the file.
INT64_MAX = (1 << 63) - 1
_INT64_DIGITS = len(str(INT64_MAX))


def int64(value: int) -> int | None:
    """`value` when a store can hold it, else None."""
    return value if -INT64_MAX - 1 <= value <= INT64_MAX else None


def count_of(text: str) -> int | None:
    """A non-negative ASCII decimal a store can hold, else None (`²`, `٣`, or too many
    digits: int() of thousands of them raises, past 19 it cannot be stored)."""
    if not (text.isascii() and text.isdigit()):
        return None
    if len(text) < _INT64_DIGITS:  # every count a parser meets: no bound to check
        return int(text)
    return int64(int(text)) if len(text.lstrip("0")) <= _INT64_DIGITS else None
