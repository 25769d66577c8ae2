"""The lazy command table (views/cli.py COMMAND_MODULES), in-process: every row matches what
its module registers. The fresh-interpreter probes of what the CLI imports are in
tests/cli/test_cli_lazy.py."""

from __future__ import annotations

import importlib
import subprocess
from collections import defaultdict

import click

from corescope.views.cli import COMMAND_MODULES


def test_every_row_matches_what_its_module_registers() -> None:
    by_module: dict[str, set[str]] = defaultdict(set)
    for name, module, help_ in COMMAND_MODULES:
        by_module[module].add(name)
        assert help_ and "\n" not in help_
    for module, names in by_module.items():
        top, lab = click.Group("top"), click.Group("lab")
        importlib.import_module(module).register(top, lab)
        got = set(top.commands) | {f"lab {n}" for n in lab.commands}
        assert got == names, (module, got, names)


def test_runner_devnull_is_subprocess_devnull() -> None:
    from corescope.runner import DEVNULL

    assert subprocess.DEVNULL == DEVNULL
