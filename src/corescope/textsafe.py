"""Text made safe for a terminal, for every layer that prints: process names, kernel log
lines and exception texts come from other users and from the kernel, so control characters
in them must not reach a terminal raw. render.term builds its line printer on these; the
recorder's own log and `record`'s messages use them too (the agent loads no renderer)."""

from __future__ import annotations

import click

# C0 controls, DEL, C1 controls (0x9b is a one-byte CSI), and the Unicode characters that
# reorder or break lines (bidi overrides, "Trojan Source"; line/paragraph separators), and
# surrogates: a file name that was not UTF-8 holds them (os.fsdecode), and so can JSON ("\ud800");
# no terminal encoding can write them.
_UNSAFE = [*range(0x00, 0x20), 0x7F, *range(0x80, 0xA0),
           0x2028, 0x2029, *range(0x202A, 0x202F), *range(0x2066, 0x206A),
           *range(0xD800, 0xE000)]
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
    """One line of human-readable output whose text may hold untrusted fields: a newline in a
    name is escaped too, so no name can forge a line of its own."""
    click.echo(clean(text), err=err)
