"""The `corescope` command. Features add their commands from their own modules, listed in
COMMAND_MODULES, each with `register(cli, lab)`."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import click

from corescope import __version__
from corescope.rootfs import Root
from corescope.runner import Runner
from corescope.store.db import default_store_dir
from corescope.views.clitypes import CliContext

COMMAND_MODULES: tuple[str, ...] = (
    "corescope.views.cli_record",
    "corescope.views.cli_cores",
    "corescope.views.cli_doctor",
    "corescope.views.cli_lab_hotcore",
    "corescope.views.cli_flame",
    "corescope.views.cli_zombies",
    "corescope.views.cli_events",
)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="corescope")
@click.option("--root", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Read every /proc and /sys path under this directory (replay a captured tree).")
@click.option("--store", "store_dir", type=click.Path(file_okay=False, path_type=Path),
              default=None, help="Store directory [default: /var/lib/corescope as root, "
              "else $XDG_STATE_HOME/corescope].")
@click.pass_context
def cli(ctx: click.Context, root: Path | None, store_dir: Path | None) -> None:
    """corescope: a per-core flight recorder for the single starved core that every
    dashboard misses. Start with `corescope doctor`.

    --root and --store may also be given after the subcommand."""
    ctx.obj = CliContext(
        root=Root.of(root), store_dir=store_dir or default_store_dir(), runner=Runner()
    )


@cli.group()
def lab() -> None:
    """Reproduce the failure on this kernel (needs root and --yes; always cleans up)."""


for _name in COMMAND_MODULES:
    importlib.import_module(_name).register(cli, lab)


GLOBAL_OPTIONS = ("--root", "--store")


def hoist_global_options(argv: list[str]) -> list[str]:
    """Let `--root`/`--store` appear after the subcommand too (`corescope cores --store X`):
    move them to the front, where click's group reads them."""
    front: list[str] = []
    rest: list[str] = []
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--":
            rest.extend(argv[i:])
            break
        if arg in GLOBAL_OPTIONS and i + 1 < len(argv):
            front += [arg, argv[i + 1]]
            i += 2
            continue
        if arg.split("=", 1)[0] in GLOBAL_OPTIONS and "=" in arg:
            front.append(arg)
        else:
            rest.append(arg)
        i += 1
    return front + rest


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    cli(args=hoist_global_options(args), prog_name="corescope")
