"""The docs are kept in step with the code: the generated option blocks and man pages equal
what the click definitions give now, every command has a docs page, every link in the README
and docs/ leads somewhere, and every option has one line of help with a default written as a
user writes it. When one fails: run `make docs` (python3 scripts/gen_docs.py) and commit."""

from __future__ import annotations

import importlib.util
import re
import shutil
import subprocess
import sys
from pathlib import Path

import click
import pytest

from corescope.views import manual
from corescope.views.cli import COMMAND_SECTIONS

REPO = Path(__file__).resolve().parents[2]
MSG = manual.REGENERATE


def _gen():
    spec = importlib.util.spec_from_file_location("gen_docs", REPO / "scripts" / "gen_docs.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_every_command_has_a_docs_page_and_a_man_page() -> None:
    missing = [e.path for e in manual.entries()
               if not (REPO / "docs" / "commands" / f"{e.page}.md").is_file()
               or not (REPO / "docs" / "man" / f"corescope-{e.page}.1").is_file()]
    assert not missing, f"commands without a docs page or man page: {missing}; {MSG}"


def test_generated_pages_match_the_code() -> None:
    stale = [str(p.relative_to(REPO)) for p, text in _gen().wanted().items()
             if not p.exists() or p.read_text(encoding="utf-8") != text]
    assert not stale, f"generated docs out of date: {stale}; {MSG}"


def test_no_man_page_for_a_command_that_is_gone() -> None:
    wanted = set(_gen().wanted())
    extra = [p.name for p in (REPO / "docs" / "man").glob("*.1") if p not in wanted]
    assert not extra, f"man pages of no command: {extra}; {MSG}"


def test_the_check_mode_reports_a_stale_block(tmp_path: Path) -> None:
    # the comparison can fail: a page whose option table lost a row is stale
    e = next(x for x in manual.entries() if x.path == "record")
    good = manual.replace_block("# x\n", manual.markdown_block(e))
    bad = good.replace("| `--retain DURATION`", "| `--keep DURATION`")
    assert bad != good
    assert manual.replace_block(bad, manual.markdown_block(e)) == good


@pytest.mark.skipif(shutil.which("groff") is None, reason="groff not installed")
def test_man_pages_render_without_warnings() -> None:
    for page in sorted((REPO / "docs" / "man").glob("*.1")):
        proc = subprocess.run(["groff", "-man", "-Tutf8", "-ww", "-Wbreak", "-z", str(page)],
                              capture_output=True, text=True, timeout=60)
        assert proc.returncode == 0 and not proc.stderr.strip(), (page.name, proc.stderr)


# ─── links ──────────────────────────────────────────────────────────────────────────────────

LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)|!\[[^\]]*\]\(([^)\s]+)\)")


def _anchors(md: str) -> set[str]:
    """GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens."""
    out: set[str] = set()
    in_code = False
    for line in md.splitlines():
        if line.startswith("```"):
            in_code = not in_code
        if in_code or not line.startswith("#"):
            continue
        title = line.lstrip("#").strip().lower()
        slug = re.sub(r"[^\w\- ]", "", title).replace(" ", "-")
        n = 1
        base = slug
        while slug in out:
            slug = f"{base}-{n}"
            n += 1
        out.add(slug)
    return out


def _doc_files() -> list[Path]:
    files = [REPO / n for n in ("README.md", "CHANGELOG.md", "CONTRIBUTING.md")
             if (REPO / n).exists()]
    return files + sorted((REPO / "docs").rglob("*.md"))


def _links(md: str) -> list[str]:
    text = re.sub(r"```.*?```", "", md, flags=re.S)
    text = re.sub(r"`[^`\n]*`", "", text)
    return [a or b for a, b in LINK.findall(text)]


def test_every_link_in_the_readme_and_docs_leads_somewhere() -> None:
    dead = []
    for f in _doc_files():
        for target in _links(f.read_text(encoding="utf-8")):
            if re.match(r"^[a-z]+:", target):  # http(s), mailto: not fetched
                continue
            path, _, anchor = target.partition("#")
            dest = (f.parent / path).resolve() if path else f
            if not dest.exists():
                dead.append(f"{f.relative_to(REPO)}: {target}")
            elif anchor and dest.suffix == ".md" and anchor not in _anchors(
                    dest.read_text(encoding="utf-8")):
                dead.append(f"{f.relative_to(REPO)}: {target} (no such heading)")
    assert not dead, "dead links:\n" + "\n".join(dead)


def test_the_link_checker_finds_a_dead_link(tmp_path: Path) -> None:
    assert _links("see [x](nowhere.md) and `[y](code.md)`") == ["nowhere.md"]
    assert "exit-codes" in _anchors("# t\n## Exit codes\n")


def test_readme_is_a_short_front_door() -> None:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 250
    for command in ("make doctor", "make test"):
        assert command in text
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    assert "make test" in ci  # the README's command is the one CI runs
    linked = set(_links(text))
    for e in manual.entries():  # the command list links every command's page
        if e.path.split()[0] != "lab" or e.path == "lab scenario":
            assert f"docs/commands/{e.page}.md" in linked, e.path


# ─── help texts ─────────────────────────────────────────────────────────────────────────────

def _all_options():
    root, ctx = manual.global_context()
    yield "corescope", root, ctx
    for e in manual.entries():
        yield e.path, e.command, e.ctx


def test_every_option_has_one_line_of_help() -> None:
    bad = [f"{path} {p.opts[0]}" for path, cmd, _ctx in _all_options() for p in cmd.params
           if isinstance(p, click.Option) and p.name != "help"
           and (not (p.help or "").strip() or "\n\n" in (p.help or ""))]
    assert not bad, f"options without one line of help: {bad}"


def test_defaults_print_as_users_write_them() -> None:
    bad = []
    for path, cmd, ctx in _all_options():
        for r in manual.option_rows(cmd, ctx):
            default = r.default.split(";")[0]
            if re.fullmatch(r"-?\d+\.0+", default) or re.fullmatch(r"\d+\.\d+e\+?\d+", default):
                bad.append(f"{path} {r.flags}: {default}")
    assert not bad, f"defaults printed as floats: {bad}"


def test_help_groups_the_commands() -> None:
    proc = subprocess.run([sys.executable, "-m", "corescope", "--help"], capture_output=True,
                          text=True, timeout=60, cwd=REPO, env={"PYTHONPATH": str(REPO / "src"),
                                                                "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 0, proc.stderr
    for title, _names in COMMAND_SECTIONS:
        assert f"{title} commands:" in proc.stdout
    assert "Other commands:" not in proc.stdout  # every command is placed in a section
    placed = {n for _t, names in COMMAND_SECTIONS for n in names}
    tops = {e.path.split()[0] for e in manual.entries()}
    assert tops <= placed, f"commands in no --help section: {tops - placed} (cli.py)"


def test_man_command_shows_the_generated_page() -> None:
    from click.testing import CliRunner

    from corescope.views.cli_man import man

    r = CliRunner().invoke(man, ["lab", "clean", "--roff"])
    assert r.exit_code == 0, r.output
    assert r.output == (REPO / "docs" / "man" / "corescope-lab-clean.1").read_text()
    r = CliRunner().invoke(man, ["no-such-command", "--roff"])
    assert r.exit_code == 2 and "no command" in r.output
