"""Text for a terminal: process names, kernel log lines and file contents come from other
users and from the kernel, so control characters in them must not reach the terminal raw
(`\\x1b[2J` clears the screen, an OSC sequence retitles the window or writes the clipboard).
A newline inside a unit or container name would forge a line of its own, and a lone surrogate
(a name that was not valid UTF-8) would make printing raise. `clean` is the one function that
makes text safe: every human-readable renderer prints its lines with `echo` (one line each,
through `clean`), or passes fields through `clean` itself; `clean_lines` is for text that is
several lines by design (a table). Colour decisions go through `use_color` (honours NO_COLOR)."""

from __future__ import annotations

import os
from typing import IO

import click

from corescope.textsafe import clean, clean_lines, echo

__all__ = ["clean", "clean_lines", "echo", "use_color"]


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
