"""Text that every writer accepts: a name that was not UTF-8 (os.fsdecode's surrogateescape)
or a JSON "\\ud800" holds lone surrogates, which no UTF-8 writer (SQLite, a terminal, a pipe)
accepts. Records from other users' names are made valid here before they are stored."""

from __future__ import annotations

import re
from dataclasses import fields, is_dataclass, replace
from typing import Any, TypeVar

T = TypeVar("T")

_SURROGATES = {cp: f"\\u{cp:04x}" for cp in range(0xD800, 0xE000)}


def valid_text(text: str) -> str:
    """`text` with each lone surrogate written as the visible escape `\\udcff`: a name that was
    not valid UTF-8 can be stored and shown, and stays told apart from its neighbours."""
    return text.translate(_SURROGATES)


def has_surrogates(text: str) -> bool:
    try:
        text.encode("utf-8")  # only a surrogate makes this fail
    except UnicodeEncodeError:
        return True
    return False


def _valid(value: Any, bad: list[bool]) -> Any:
    if isinstance(value, str):
        if has_surrogates(value):
            bad.append(True)
            return valid_text(value)
        return value
    if isinstance(value, dict):
        return {_valid(k, bad): _valid(v, bad) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(_valid(v, bad) for v in value)
    return value


def valid_record(record: T) -> tuple[T, bool]:
    """A dataclass record with every string in it (nested in dicts, lists and tuples too) made
    valid by `valid_text`; True when something had to be escaped."""
    assert is_dataclass(record) and not isinstance(record, type)
    bad: list[bool] = []
    changed = {f.name: _valid(getattr(record, f.name), bad) for f in fields(record)}
    return (replace(record, **changed) if bad else record), bool(bad)  # type: ignore[type-var]


# in JSON text: an escaped backslash (kept), a surrogate pair (kept), a lone surrogate escape
_JSON_ESCAPES = re.compile(r"(\\\\)|(\\u[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2})"
                           r"|\\(u[dD][89a-fA-F][0-9a-fA-F]{2})")


def _visible(m: re.Match[str]) -> str:
    return m.group(0) if m.group(3) is None else "\\\\" + m.group(3)


def valid_json_text(text: str) -> str:
    """JSON text whose lone surrogate escapes (`"\\ud800"`, valid JSON, no valid Unicode)
    are written as an escaped backslash, so they decode to the visible text `\\ud800`, as
    `valid_text` writes them; surrogate pairs (an emoji) are kept."""
    if "\\ud" not in text and "\\uD" not in text:
        return text
    return _JSON_ESCAPES.sub(_visible, text)


def valid_json(value: Any) -> Any:
    """A JSON-able value (dicts, lists, strings, numbers) with every string made valid."""
    return _valid(value, [])
