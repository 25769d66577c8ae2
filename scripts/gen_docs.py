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


# --- the architecture page: packages and each command's road, read from the import statements

SRC = REPO / "src" / "corescope"
ROAD = ("evidence", "investigate", "render")


def module_imports(path: Path, src: Path = SRC) -> set[str]:
    """Every corescope module one file under `src` imports (module level and inside
    functions), relative imports resolved. tests/unit/toplevel/test_import_layers.py reads the
    imports with this too."""
    import ast

    rel = path.relative_to(src.parent).with_suffix("")
    here = list(rel.parts[:-1]) if path.name != "__init__.py" else list(rel.parts[:-2])
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = here[: len(here) - (node.level - 1)]
                found.add(".".join([*base, *([node.module] if node.module else [])]))
            elif node.module:
                found.add(node.module)
    return {m for m in found if m == "corescope" or m.startswith("corescope.")}


def package(mod: str) -> str:
    """corescope.<pkg>... -> pkg; the package's own top modules are '(top)'."""
    parts = mod.split(".")
    return "(top)" if len(parts) < 2 or parts[1] in ("__init__", "__main__") else parts[1]


def _file(mod: str) -> Path | None:
    p = SRC.parent.joinpath(*mod.split("."))
    for f in (p.with_suffix(".py"), p / "__init__.py"):
        if f.is_file():
            return f
    return None


def _summary(path: Path) -> str:
    """The first sentence of a module's docstring."""
    import ast
    import re

    doc = " ".join((ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or "")
                   .split("\n\n")[0].split())
    m = re.match(r"(.+?\.)(\s|$)", doc)
    return (m.group(1) if m else doc).rstrip(":.") + "."


def _road(mod: str) -> dict[str, set[str]]:
    """What a command's module reaches, following the views modules it imports."""
    seen: set[str] = set()
    todo, reach = [mod], {}
    while todo:
        m = todo.pop()
        f = _file(m)
        if m in seen or f is None:
            continue
        seen.add(m)
        for i in module_imports(f):
            pkg = package(i)
            if pkg == "views":
                todo.append(i)
            elif pkg != "(top)":
                reach.setdefault(pkg, set()).add(i.split(".", 2)[2] if i.count(".") > 1 else "")
    return reach


def _names(pkg: str, mods: set[str]) -> str:
    return ", ".join(f"`{pkg}.{m}`" if m else f"`{pkg}`" for m in sorted(mods))


def architecture_block() -> str:
    """The layers as the code has them (each package, what it holds, what it imports) and the
    road every command takes through evidence, investigation and render."""
    from corescope.views.cli import COMMAND_MODULES

    graph: dict[str, set[str]] = {}
    files: dict[str, Path] = {}
    for path in sorted(SRC.rglob("*.py")):
        mod = ".".join(path.relative_to(SRC.parent).with_suffix("").parts)
        own = package(mod)
        if own == "(top)":
            continue
        graph.setdefault(own, set()).update(package(i) for i in module_imports(path))
        if path.parent == SRC or path.name == "__init__.py":
            files.setdefault(own, path)
    lines = [manual.BEGIN, "", "Packages and modules below `corescope`, what each holds (its "
             "docstring) and which others it imports (its import statements, module level and "
             "inside functions; tests/unit/toplevel/test_import_layers.py keeps them pointing "
             "one way).",
             "", "| package | holds | imports |", "| --- | --- | --- |"]
    for pkg in sorted(graph):
        deps = sorted(graph[pkg] - {pkg, "(top)"})
        lines.append(f"| `{pkg}` | {_summary(files[pkg])} | "
                     + (", ".join(f"`{d}`" for d in deps) or "nothing") + " |")
    lines += ["", "The road each command takes, from its module in `views/` and the views "
              "modules it uses:", "",
              "| command | evidence | investigation | render | also |",
              "| --- | --- | --- | --- | --- |"]
    roads = {name: _road(mod) for name, mod, _help in COMMAND_MODULES}
    # what every command reaches (the CLI's shared context and option types): said once
    common = {p: set.intersection(*(r.get(p, set()) for r in roads.values()))
              for p in set.intersection(*(set(r) for r in roads.values()))}
    for name, r in roads.items():
        r = {p: mods - common.get(p, set()) for p, mods in r.items()}
        r = {p: mods for p, mods in r.items() if mods}
        also = "; ".join(_names(p, r[p]) for p in sorted(r) if p not in ROAD)
        cells = [_names(p, r[p]) if p in r else "—" for p in ROAD]
        lines.append(f"| `{name}` | " + " | ".join(cells) + f" | {also or '—'} |")
    lines += ["", "Every command also reaches " + "; ".join(
        _names(p, common[p]) for p in sorted(common)) + " (the CLI's shared context and "
        "option types)."]
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
    arch = docs / "design" / "architecture.md"
    out[arch] = manual.replace_block(arch.read_text(encoding="utf-8"), architecture_block())
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
