"""tests/unit mirrors src/corescope: every test file sits in the subpackage named after the
corescope package it tests (toplevel: the modules directly in src/corescope; bench: bench/'s
scripts; scripts: scripts/' tools), and it imports from that package, directly or through
the tests/support module it uses, so a file filed under the wrong name fails here."""

from __future__ import annotations

import ast
from pathlib import Path

from support import REPO, SRC

UNIT = REPO / "tests" / "unit"
PKG = SRC / "corescope"
PACKAGES = {p.name for p in PKG.iterdir() if (p / "__init__.py").is_file()}
TOP_MODULES = {p.stem for p in PKG.glob("*.py") if p.stem not in ("__init__", "__main__")}
# the subpackages that are not a corescope package, and what each holds
EXTRA = {"toplevel": "the modules directly in src/corescope", "bench": "bench/'s scripts",
         "scripts": "scripts/' tools"}


def _imported(path: Path) -> set[str]:
    """The modules a file imports (module level and inside functions); `from a import b`
    counts as a.b too, since b may be a module."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.add(node.module)
            found.update(f"{node.module}.{a.name}" for a in node.names)
    return found


def _corescope_imports(path: Path) -> set[str]:
    """corescope modules the test imports, and those the tests/support modules it imports do
    (a helper such as support.kernel_logs is how some tests reach the parser they test)."""
    mods = _imported(path)
    for mod in list(mods):
        parts = mod.split(".")
        helper = REPO / "tests" / Path(*parts).with_suffix(".py")
        if parts[0] == "support" and len(parts) > 1 and helper.is_file():
            mods |= _imported(helper)
    return {m for m in mods if m.split(".")[0] == "corescope"}


def _tests(d: Path) -> list[Path]:
    return sorted(p for p in d.glob("*.py") if p.name != "__init__.py")


def test_no_test_file_directly_in_tests_unit() -> None:
    assert _tests(UNIT) == [], "put these in the subpackage of the package they test"


def test_every_subpackage_is_a_corescope_package() -> None:
    # a directory holding no Python (a stale __pycache__ a checkout left behind) is none
    subs = {p.name for p in UNIT.iterdir() if p.is_dir() and any(p.glob("*.py"))}
    assert subs, "tests/unit has no subpackages"
    assert subs <= PACKAGES | set(EXTRA), \
        f"not a package of src/corescope: {sorted(subs - PACKAGES - set(EXTRA))}"
    for name in subs:
        init = UNIT / name / "__init__.py"
        # without it two test files of one basename in two subpackages would clash
        assert init.is_file(), f"{init} is missing"
        assert ast.get_docstring(ast.parse(init.read_text(encoding="utf-8"))), \
            f"{init}: say what the subpackage tests"


def _belongs(path: Path, sub: str) -> bool:
    mods = _corescope_imports(path)
    if sub in ("bench", "scripts"):
        return f'"{sub}"' in path.read_text(encoding="utf-8")
    if sub == "toplevel":
        # a top-level module, or the whole package's source tree (the import layers)
        return (any(m.split(".")[1] in TOP_MODULES for m in mods if "." in m)
                or "SRC" in {n.id for n in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
                             if isinstance(n, ast.Name)})
    return any(m.split(".")[1:2] == [sub] for m in mods)


def test_every_test_file_imports_the_package_it_is_filed_under() -> None:
    wrong = [str(p.relative_to(UNIT)) for sub in sorted(p.name for p in UNIT.iterdir()
                                                        if (p / "__init__.py").is_file())
             for p in _tests(UNIT / sub) if not _belongs(p, sub)]
    assert wrong == [], f"these import nothing of the package they are filed under: {wrong}"


def test_the_rule_sees_a_misfiled_test(tmp_path: Path) -> None:
    """A store test filed under sources, and a file that only names the package in a string."""
    store_test = tmp_path / "test_x.py"
    store_test.write_text("from corescope.store.db import Store\n")
    assert _belongs(store_test, "store") and not _belongs(store_test, "sources")
    named = tmp_path / "test_y.py"
    named.write_text('"""corescope.sources"""\nimport corescope\n')
    assert not _belongs(named, "sources")
