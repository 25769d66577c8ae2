"""The `corescope` command. Each command lives in its own module with `register(cli, lab)`;
COMMAND_MODULES maps command names to those modules, and a module is imported only when its
command runs, so `corescope --version` and `events --file` do not pay for numpy, the store
or the other commands."""

from __future__ import annotations

import gc
import importlib
import os
import sys
from pathlib import Path

import click

from corescope import __version__
from corescope.errors import CorescopeError, StoreFault

# ─── The command table ──────────────────────────────────────────────────────────────────────
# To add a command: add ONE row (name, module, one-line help). The module defines the click
# command(s) and adds them in `register(cli, lab)`. "lab NAME" puts a command under `lab`.
# The help text is what `corescope --help` lists without importing the module; the test
# tests/cli/test_cli_lazy.py checks every row against what its module really registers.
COMMAND_MODULES: tuple[tuple[str, str, str], ...] = (
    ("record", "corescope.views.cli_record",
     "Record every core every second (plus the other sensors) into the store."),
    ("cores", "corescope.views.cli_cores",
     "Per-core heatmap of the recent record, and the hot-core episodes in it."),
    ("doctor", "corescope.views.cli_doctor",
     "Check this node now: sample every core live, read the store, report findings."),
    ("flame", "corescope.views.cli_flame",
     "A flame graph of one window, per CPU, optionally against a baseline."),
    ("heatmap", "corescope.views.cli_flame",
     "FlameScope's subsecond heatmap of the profile ring."),
    ("zombies", "corescope.views.cli_zombies",
     "Zombie (dying) memory cgroups: count, growth, location, suspects."),
    ("events", "corescope.views.cli_events",
     "Kernel events: NIC stalls and resets, lockups, RCU stalls, hung tasks, OOM kills."),
    ("report", "corescope.views.cli_events",
     "The incident timeline: each event and the hot-core episodes before it."),
    ("analyze", "corescope.views.cli_analyze",
     "Investigate artifacts saved from a node (mpstat, dmesg, perf script, ...)."),
    ("diagnose", "corescope.views.cli_diagnose",
     "Name the root cause: the hypothesis sweep, the causal chain and a verdict."),
    ("capture", "corescope.views.cli_capture",
     "Write a window of the store as one bundle of plain files."),
    ("serve", "corescope.views.cli_serve",
     "The report pages live over the store in a browser, with FlameScope's rewind."),
    ("lab hotcore", "corescope.views.cli_lab_hotcore",
     "Burn system time on one core."),
    ("lab nicreset", "corescope.views.cli_lab_nicreset",
     "Write a realistic NIC stall-and-reset sequence to /dev/kmsg."),
    ("lab zombies", "corescope.views.cli_zombies",
     "Create real dying memory cgroups under corescope-lab."),
    ("lab crashloop", "corescope.views.cli_zombies",
     "An agent that crashes and is restarted, leaking memory cgroups."),
    ("lab clean", "corescope.views.cli_zombies",
     "Stop a running crashloop and remove every corescope-lab cgroup."),
    ("lab scenario", "corescope.views.cli_lab_scenario",
     "Write a generated incident hour of saved evidence (no root needed)."),
    ("inventory", "corescope.views.cli_inventory",
     "This node's units, kernel, image, cgroup layout, NICs and IRQ placement."),
    ("fleet", "corescope.views.cli_fleet",
     "Compare nodes: what differs between groups of nodes, from their inventories."),
    ("man", "corescope.views.cli_man",
     "Show the manual page of corescope or of one command."),
)

# How `corescope --help` groups the top-level commands (in this order). A command not named
# here is listed under "Other commands", so a new row still shows before it is placed.
COMMAND_SECTIONS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("Record", ("record", "doctor", "capture")),
    ("Investigate", ("cores", "events", "report", "zombies", "diagnose", "analyze", "serve")),
    ("Profile", ("flame", "heatmap")),
    ("Fleet", ("inventory", "fleet")),
    ("Lab", ("lab",)),
    ("Help", ("man",)),
)


class LazyGroup(click.Group):
    """A click group whose commands come from COMMAND_MODULES, imported on first use.
    `prefix` selects this group's rows ("" for the top level, "lab " for `lab`)."""

    def __init__(self, *args, prefix: str = "", **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.prefix = prefix

    def _rows(self) -> dict[str, tuple[str, str]]:
        n = len(self.prefix)
        return {name[n:]: (mod, help_) for name, mod, help_ in COMMAND_MODULES
                if name.startswith(self.prefix) and " " not in name[n:]}

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(set(self.commands) | set(self._rows()))

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands:
            row = self._rows().get(cmd_name)
            if row is not None:
                load_module(row[0])
            else:  # not in the table: a module may still register it
                for _name, mod, _help in COMMAND_MODULES:
                    load_module(mod)
        return self.commands.get(cmd_name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        # list from the table, so `--help` imports nothing
        rows = self._rows()
        entries = []
        for name in self.list_commands(ctx):
            cmd = self.commands.get(name)
            if cmd is not None and not cmd.hidden:
                entries.append((name, cmd.get_short_help_str(formatter.width - 16)))
            elif name in rows:
                entries.append((name, rows[name][1]))
        if not entries:
            return
        if self.prefix:  # `lab --help`: one list
            with formatter.section("Commands"):
                formatter.write_dl(entries)
            return
        by_name = dict(entries)
        placed: set[str] = set()
        for title, names in COMMAND_SECTIONS:
            listed = [(n, by_name[n]) for n in names if n in by_name]
            placed.update(names)
            if listed:
                with formatter.section(f"{title} commands"):
                    formatter.write_dl(listed)
        rest = [(n, h) for n, h in entries if n not in placed]
        if rest:
            with formatter.section("Other commands"):
                formatter.write_dl(rest)


_LOADED: set[str] = set()


def load_module(module: str) -> None:
    """Import a command module once and let it add its commands to both groups."""
    if module not in _LOADED:
        _LOADED.add(module)
        importlib.import_module(module).register(cli, lab)
        for group in (cli, lab):
            for cmd in group.commands.values():
                written_durations(cmd)


def written_durations(cmd: click.Command) -> None:
    """Show duration defaults as a person writes them (`2s`, `24h`), not as the float
    a module passed (`2.0`, `86400.0`), and a whole float as a whole number (`90`, not
    `90.0`); the option's value is the same either way."""
    from corescope.timeparse import format_duration, parse_duration
    from corescope.views.clitypes import TimeValue

    for p in cmd.params:
        t, d = p.type, p.default
        if isinstance(t, click.types.FloatParamType) and isinstance(d, float) and d.is_integer():
            p.default = int(d)  # click casts it back to float: the value is unchanged
            continue
        if not (isinstance(t, TimeValue) and t.name == "duration") or isinstance(d, bool):
            continue
        try:
            value = parse_duration(d) if isinstance(d, str) else d
        except ValueError:
            continue
        if isinstance(value, int | float) and value > 0:
            text = format_duration(value)
            if parse_duration(text) == value:  # only when the written form reads back exactly
                p.default = text


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
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
    if not gc.isenabled():  # main() turned it off for start-up: the modules are loaded now
        gc.freeze()  # what start-up made lives as long as the process: never walk it again
        gc.enable()
    from corescope.rootfs import Root
    from corescope.runner import Runner
    from corescope.store.location import default_store_dir
    from corescope.views.clitypes import CliContext

    ctx.obj = CliContext(
        root=Root.of(root), store_dir=store_dir or default_store_dir(), runner=Runner(),
        store_given=store_dir is not None,
    )


@cli.group(cls=LazyGroup, prefix="lab ")
def lab() -> None:
    """Reproduce the failure on this kernel (needs root and --yes; always cleans up)."""


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
    # numpy's OpenBLAS starts a thread per core when it loads, and corescope does no linear
    # algebra: one thread makes `import numpy` 30-50 ms cheaper in every command that loads it
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    # Start-up only allocates (the command's modules: classes, dataclass methods, compiled
    # patterns) and frees nothing, yet every 700 allocations trigger a collection that walks
    # the young objects again. The group's callback freezes what start-up made and turns
    # collection back on before any command runs.
    gc.disable()
    try:
        cli(args=hoist_global_options(args), prog_name="corescope")
    except CorescopeError as exc:
        # every deliberate error, of any kind, is its message and its exit code: never a
        # traceback (fail() cleans the message: it may quote a file's text)
        from corescope.views.clitypes import fail

        fail(str(exc), exc.exit_code)
    except Exception as exc:
        # a store that turns out damaged mid-read: say so, never a traceback
        from corescope.store.db import is_corruption
        from corescope.views.clitypes import fail

        if not is_corruption(exc):
            raise
        fail(f"the store is corrupt ({exc}); `corescope record` moves it aside and starts a "
             "fresh one on its next start", StoreFault.exit_code)
    finally:
        gc.enable()
