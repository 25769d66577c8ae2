#!/usr/bin/env python3
"""Regenerate the reference made from the code (`make docs`): the option block of every
docs/commands/<command>.md page (a page is created when a command has none), every man
page in docs/man/, and the list of registered artifact kinds in docs/artifacts.md. The prose
around each generated block is hand-written and kept.
`--check` writes nothing and exits 1 when something is out of date (tests/cli/test_docs.py
runs the same comparison)."""

from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

from corescope.views import manual  # noqa: E402


def artifact_block(page: str) -> str:
    """The artifact registry (sources.artifacts.KIND_MODULES) as a table, in detection order,
    and any registered kind the hand-written part of the page does not describe yet."""
    import importlib

    from corescope.sources.artifacts import KIND_MODULES

    start, end = page.find(manual.BEGIN), page.find(manual.END)
    prose = page[:start] + page[end + len(manual.END):] if 0 <= start < end else page
    lines = [manual.BEGIN, "", "Detection order: the first module whose sniffer claims a file's "
             "content decides its kind.", "", "| module | kinds |", "| --- | --- |"]
    missing = []
    for name in KIND_MODULES:
        kinds = getattr(importlib.import_module(name), "KINDS", ())
        lines.append(f"| `{name.rsplit('.', 1)[1]}` | " + ", ".join(f"`{k}`" for k in kinds)
                     + " |")
        missing += [k for k in kinds if f"`{k}`" not in prose and k not in missing]
    if missing:
        lines += ["", "Registered but not described above yet: "
                  + ", ".join(f"`{k}`" for k in missing) + "."]
    return "\n".join([*lines, "", manual.END])


def wanted() -> dict[Path, str]:
    """Every generated file and the text it must hold."""
    out: dict[Path, str] = {}
    docs = REPO / "docs"
    for e in manual.entries():
        page = docs / "commands" / f"{e.page}.md"
        old = page.read_text(encoding="utf-8") if page.exists() else (
            f"# corescope {e.path}\n\n{(e.command.help or '').strip()}\n")
        new = manual.replace_block(old, manual.markdown_block(e))
        out[page] = new
        out[docs / "man" / f"corescope-{e.page}.1"] = manual.man_page(e, new)
    arts = docs / "artifacts.md"
    text = arts.read_text(encoding="utf-8")
    out[arts] = manual.replace_block(text, artifact_block(text))
    intro = (docs / "commands" / "index.md").read_text(encoding="utf-8")
    out[docs / "man" / "corescope.1"] = manual.main_page(manual.sections(), intro)
    return out


def main(argv: list[str]) -> int:
    check = "--check" in argv
    stale = []
    files = wanted()
    for path, text in files.items():
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            stale.append(path)
            if not check:
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(text, encoding="utf-8")
    extra = [p for p in (REPO / "docs" / "man").glob("*.1") if p not in files]
    for p in extra:
        stale.append(p)
        if not check:
            p.unlink()  # a command that is gone takes its page with it
    for p in stale:
        print(f"{'stale' if check else 'wrote'}: {p.relative_to(REPO)}")
    return 1 if check and stale else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
