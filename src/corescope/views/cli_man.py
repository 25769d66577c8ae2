"""`corescope man [COMMAND]`: the manual page, wherever the package can find it: installed
with the package (share/man/man1), in the checkout it runs from (docs/man), or, failing both,
made now from the click definitions alone (options without the docs' prose)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import click

from corescope.views.clitypes import fail


def page_file(stem: str) -> Path | None:
    checkout = Path(__file__).resolve().parents[3] / "docs" / "man"
    for d in (Path(sys.prefix) / "share" / "man" / "man1", checkout):
        f = d / f"{stem}.1"
        if f.is_file():
            return f
    return None


@click.command("man")
@click.argument("command", nargs=-1)
@click.option("--roff", is_flag=True, help="Print the page's roff source instead of showing it.")
def man(command: tuple[str, ...], roff: bool) -> None:
    """Show the manual page of corescope, or of COMMAND (`corescope man lab clean`)."""
    from corescope.views import manual

    name = "-".join(w for part in command for w in part.split())
    stem = f"corescope-{name}" if name else "corescope"
    found = page_file(stem)
    if found is not None:
        text = found.read_text(encoding="utf-8")
    else:
        by_page = {e.page: e for e in manual.entries()}
        if name and name not in by_page:
            fail(f"no command {' '.join(command)!r}; `corescope --help` lists them")
        text = (manual.man_page(by_page[name], "") if name
                else manual.main_page(manual.sections(), ""))
    viewer = shutil.which("man")
    if roff or viewer is None:
        click.echo(text, nl=False)
        return
    sys.exit(subprocess.run([viewer, "-l", "-"], input=text.encode(), check=False).returncode)


def register(cli: click.Group, lab: click.Group) -> None:
    cli.add_command(man)
