"""The lazy command table: every row matches what its module registers, and the fast paths
(`--version`, `--help`, `events --file`) import neither numpy nor the other commands."""

from __future__ import annotations

import importlib
import subprocess
import sys
from collections import defaultdict

import click

from conftest import FIXTURES, cli_env, run_cli
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


def _imported(*args: str) -> set[str]:
    proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "corescope", *args],
                          capture_output=True, text=True, env=cli_env(), timeout=60)
    assert proc.returncode in (0, 1), proc.stderr[-2000:]
    return {line.split("|")[-1].strip() for line in proc.stderr.splitlines()
            if line.startswith("import time:")}


def test_fast_paths_import_little() -> None:
    for args in (("--version",), ("--help",), ("lab", "--help"),
                 ("events", "--file", str(FIXTURES / "events" / "dmesg_incidents.txt"))):
        mods = _imported(*args)
        assert "click" in mods  # the probe works
        assert "numpy" not in mods, args
        assert "sqlite3" not in mods or args[0] in ("events", "lab"), args
        others = {m for m in mods if m.startswith("corescope.views.cli_")}
        assert others <= {"corescope.views.cli_events"}, (args, others)


def test_help_lists_every_command_and_unknown_is_a_usage_error() -> None:
    out = run_cli("--help").stdout
    for name, _m, _h in COMMAND_MODULES:
        if not name.startswith("lab "):
            assert f"  {name} " in out, name
    lab_out = run_cli("lab", "--help").stdout
    for name, _m, _h in COMMAND_MODULES:
        if name.startswith("lab "):
            assert f"  {name[4:]} " in lab_out, name
    bad = run_cli("nosuchcommand")
    assert bad.returncode == 2 and "No such command" in bad.stderr
    # a command registered by its module runs through the table
    assert run_cli("cores", "--help").returncode == 0
    assert run_cli("lab", "hotcore", "--help").returncode == 0
