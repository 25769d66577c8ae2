"""Shared pieces of the command line: the context object, parameter types, JSON output,
and the lab's consent and root checks."""

from __future__ import annotations

import gc
import math
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, NoReturn

import click

from corescope.errors import CorescopeError
from corescope.rootfs import Root
from corescope.runner import Runner
from corescope.timeparse import TimeParseError, parse_duration, parse_instant

if TYPE_CHECKING:
    from corescope.store.db import Store

EXIT_OK = 0
EXIT_FINDINGS = 1
EXIT_USAGE = CorescopeError.exit_code  # a usage or environment error, of any kind


@dataclass
class CliContext:
    root: Root
    store_dir: Path
    runner: Runner
    store_given: bool = False  # --store was written (analyze keeps its import only then)


# instants are epoch seconds the store can hold: 1970 up to 2106
MAX_INSTANT = float(1 << 32)


class TimeValue(click.ParamType):
    """A duration or an instant, read by the one timeparse function for it, and checked:
    finite, instants between 1970 and 2106, and durations above zero where zero would mean
    nothing (or forever)."""

    def __init__(self, name: str, parse: Callable[[str], float], *, instant: bool = False,
                 positive: bool = False) -> None:
        self.name = name
        self._parse = parse
        self._instant = instant
        self._positive = positive

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None):
        if isinstance(value, float | int):
            v = float(value)
        else:
            try:
                v = self._parse(value)
            except TimeParseError as exc:
                self.fail(str(exc), param, ctx)
        if not math.isfinite(v):
            self.fail(f"{value!r} is not a finite {self.name}", param, ctx)
        if self._instant and not 0 <= v < MAX_INSTANT:
            self.fail(f"{value!r} is not a time between 1970 and 2106", param, ctx)
        if not self._instant and v < 0:
            self.fail(f"{value!r}: a duration cannot be negative", param, ctx)
        if self._positive and v <= 0:
            self.fail(f"{value!r}: must be longer than zero", param, ctx)
        return v


class FiniteFloatRange(click.FloatRange):
    """click.FloatRange that also refuses nan (which compares false to every bound)."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None):
        v = super().convert(value, param, ctx)
        if not math.isfinite(v):
            self.fail(f"{value!r} is not a finite number", param, ctx)
        return v


class ByteSize(click.ParamType):
    """1000000, 500k, 64M, 2G → bytes (decimal multiples; KiB/MiB/GiB are binary)."""

    name = "bytes"
    _MULT: ClassVar[dict[str, int]] = {"": 1, "k": 10**3, "m": 10**6, "g": 10**9, "t": 10**12,
             "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40, "b": 1,
             "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12}

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None):
        if isinstance(value, int):
            size = value
        else:
            text = str(value).strip().lower()
            num = text.rstrip("abcdefghijklmnopqrstuvwxyz")
            unit = text[len(num):].strip()
            try:
                if unit not in self._MULT:
                    raise ValueError
                size = int(float(num) * self._MULT[unit])
            except (ValueError, OverflowError):  # OverflowError: inf
                self.fail(f"not a size: {value!r} (expected e.g. 500M, 2G, 1048576)", param,
                          ctx)
        if size <= 0:  # every size option is a budget: zero or less would hold nothing
            self.fail(f"{value!r}: a size must be more than zero bytes", param, ctx)
        return size

    @staticmethod
    def written(size: int) -> str:
        """A size as a person writes it and convert() reads back: 2G, 500M, 64k, 1500."""
        for unit, mult in (("T", 10**12), ("G", 10**9), ("M", 10**6), ("k", 10**3)):
            if size >= mult and size % mult == 0:
                return f"{size // mult}{unit}"
        return str(size)


DURATION = TimeValue("duration", parse_duration)  # 90, 90s, 2m, 12h → seconds
POSITIVE_DURATION = TimeValue("duration", parse_duration, positive=True)
INSTANT = TimeValue("time", parse_instant, instant=True)  # epoch, ISO 8601, 90s ago
BYTES = ByteSize()


def emit_json(data: Any) -> None:
    import json  # only --json needs it

    click.echo(json.dumps(data, indent=2, sort_keys=False, default=str))


def write_private(path: Path, data: bytes) -> int:
    """Write an output file the user named through corescope.outfile (0600, never through a
    symlink, replaced whole); exit 2 with the reason on an error. Returns its size."""
    from corescope.outfile import OutputError, write_output

    try:
        return write_output(path, data)
    except OutputError as exc:
        fail(str(exc))


def fail(message: str, code: int = EXIT_USAGE) -> NoReturn:
    """Print a clear error and exit with the usage/environment code (the message may name
    someone else's file or text: cleaned, one line)."""
    from corescope.render.term import clean

    click.echo(f"corescope: {clean(message)}", err=True)
    sys.exit(code)


def require_lab_consent(yes: bool, what: str) -> None:
    """Lab commands change the kernel's state: root plus an explicit --yes, or exit 2."""
    if not yes:
        fail(f"{what}\nThis changes the kernel's state. Re-run with --yes to proceed.")
    if os.geteuid() != 0:
        fail("lab commands need root (they create cgroups, pin processes or write /dev/kmsg)")


def load_modules(*names: str) -> None:
    """Import what a command needs once its options say which (the renderer of its format,
    the reader of its input) as start-up imports its modules: with no cyclic collection
    while they load (each module only allocates; collections walking its new objects cost a
    tenth of the import) and what they made frozen after (see views/cli.py main)."""
    was = gc.isenabled()
    gc.disable()
    try:
        for name in names:
            __import__(name)  # the import statement's path: -X importtime shows it
    finally:
        if was:
            gc.freeze()
            gc.enable()


def open_store_or_fail(obj: CliContext, hint: str = "") -> Store:
    """The existing store for a reading command, or exit 2 saying what to do (`hint` adds
    a command's own alternative, e.g. "or use --file")."""
    from corescope.evidence.open import open_store  # sqlite3: only commands that read it
    from corescope.store.db import StoreError

    try:
        return open_store(obj.store_dir)
    except StoreError as exc:
        fail(f"{exc}{'; ' + hint if hint else ''}")


def json_option(help: str = "Machine-readable output."
                ) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """`--json` (as_json): one declaration for every command that has a JSON form (each
    output's schema is in docs/json/v1/)."""
    return click.option("--json", "as_json", is_flag=True, help=help)
