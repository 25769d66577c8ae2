"""Every command's --help: each option says what it does, and durations show as a person
writes them (2s, 24h), never as a float or a count of seconds (2.0, 86400s)."""

from __future__ import annotations

import re

import click
import pytest

from corescope.views.cli import COMMAND_MODULES, cli, lab, load_module
from corescope.views.clitypes import TimeValue


def _commands() -> list[tuple[str, click.Command]]:
    out = []
    for name, module, _help in COMMAND_MODULES:
        load_module(module)
        group, sub = (lab, name[4:]) if name.startswith("lab ") else (cli, name)
        cmd = group.commands[sub]
        out.append((name, cmd))
    return out


@pytest.mark.parametrize("name,cmd", _commands(), ids=[n for n, _ in _commands()])
def test_every_option_has_help_and_human_defaults(name: str, cmd: click.Command) -> None:
    ctx = click.Context(cmd, info_name=name)
    problems = []
    for p in cmd.params:
        if not isinstance(p, click.Option) or p.hidden:
            continue
        if not (p.help and p.help.strip()):
            problems.append(f"{p.opts[0]} has no help text")
        rec = p.get_help_record(ctx)
        shown = re.search(r"\[default: ([^\]]*)\]", rec[1]) if rec else None
        if isinstance(p.type, TimeValue) and p.type.name == "duration" and shown:
            value = shown.group(1)
            # 2s, 500ms, 10m, 24h, 1h30m; not 2.0, 10, 0.2s or 86400s
            numeric = value[:1].isdigit()  # words such as "all" or "now" are fine
            if numeric and (not re.fullmatch(r"(\d+(ms|s|m|h|d))+", value)
                            or re.fullmatch(r"\d{4,}s", value)):
                problems.append(f"{p.opts[0]} shows its default as {value!r}")
    assert not problems, f"{name}: " + "; ".join(problems)
