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
