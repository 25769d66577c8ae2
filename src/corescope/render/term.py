"""Text for a terminal: process names, kernel log lines and file contents come from other
users and from the kernel, so control characters in them must not reach the terminal raw
(`\\x1b[2J` clears the screen, an OSC sequence retitles the window or writes the clipboard).
Every human-readable renderer passes untrusted text through `clean` (one field) or prints
with `echo` (whole lines). Colour decisions go through `use_color` (honours NO_COLOR)."""

from __future__ import annotations

import os
from typing import IO

import click

# C0 controls, DEL, C1 controls (0x9b is a one-byte CSI), and the Unicode characters that
# reorder or break lines (bidi overrides, "Trojan Source"; line/paragraph separators).
_UNSAFE = [*range(0x00, 0x20), 0x7F, *range(0x80, 0xA0),
           0x2028, 0x2029, *range(0x202A, 0x202F), *range(0x2066, 0x206A)]
_NAMED = {0x09: "\\t", 0x0A: "\\n", 0x0D: "\\r"}


def _escape(cp: int) -> str:
    if cp in _NAMED:
        return _NAMED[cp]
    return f"\\x{cp:02x}" if cp <= 0xFF else f"\\u{cp:04x}"


_FIELD = {cp: _escape(cp) for cp in _UNSAFE}
_LINES = {cp: esc for cp, esc in _FIELD.items() if cp not in (0x09, 0x0A)}


def clean(text: object) -> str:
    """One field (a process name, one log line) made safe for a terminal: every control
    character, newlines included, becomes a visible escape such as `\\x1b`."""
    return str(text).translate(_FIELD)


def clean_lines(text: object) -> str:
    """Multi-line text made safe for a terminal: newlines and tabs are kept, every other
    control character becomes a visible escape."""
    return str(text).translate(_LINES)


def echo(text: object = "", err: bool = False) -> None:
    """click.echo for human-readable output whose text may hold untrusted fields."""
    click.echo(clean_lines(text), err=err)


def use_color(stream: IO | None = None) -> bool:
    """Colour only on a terminal, and never when NO_COLOR is set to anything non-empty
    (https://no-color.org) or TERM is dumb."""
    if os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("TERM") == "dumb":
        return False
    stream = stream if stream is not None else click.get_text_stream("stdout")
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False
