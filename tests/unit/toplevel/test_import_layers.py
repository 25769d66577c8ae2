"""The packages' imports point one way (sources | store -> evidence -> investigate -> render ->
views). Read from the code's own import statements (module level and inside functions), so a new
arrow up the stack fails here the day it is written.

KNOWN lists the arrows that still point the wrong way, file by file, each to be removed by moving
the shared piece down a layer. An arrow not in KNOWN fails; a KNOWN entry the code no longer has
fails too, so the list only shrinks."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from support import SRC as _SRC

SRC = _SRC / "corescope"

# What each package may import (besides itself). The foundation is plain records and small
# utilities; sources only parse and analysis only computes, so neither knows the store; the store
# keeps records and runs no parser; an investigation reads only Evidence.
FOUNDATION = {"model", "errors", "timeparse", "rootfs", "runner", "protect", "outfile",
              "textsafe"}
_DATA = FOUNDATION | {"sources", "analysis", "store"}
ALLOWED: dict[str, set[str]] = {
    "errors": set(),
    **{pkg: {"errors"} for pkg in FOUNDATION - {"errors"}},
    "sources": FOUNDATION,
    "analysis": FOUNDATION,
    # analysis is pure arithmetic over model records and never imports the store: the store
    # applies its percentage rule (analysis.usage.mode_bounds) to index each block it writes
    "store": FOUNDATION | {"analysis"},
    "ingest": _DATA | {"sensors"},
    "sensors": _DATA | {"ingest"},
    # saved perf script input (flame --perf-script) becomes evidence as a temporary ring that
    # ingest writes and the ring query reads, chosen in evidence.open like every other input;
    # ingest imports nothing above the store, so no circle
    "evidence": _DATA | {"ingest"},
    "investigate": FOUNDATION | {"analysis", "evidence"},
    "render": FOUNDATION | {"analysis", "evidence", "investigate"},
    "recorder": _DATA | {"sensors", "ingest"},
    "sdnotify": _DATA | {"sensors", "recorder"},
    "capture": _DATA | {"evidence", "investigate", "render", "ingest"},
    "lab": _DATA | {"evidence", "investigate", "render", "capture"},
    "metrics": _DATA | {"sensors", "ingest", "recorder", "evidence", "investigate", "render",
                        "capture", "(top)"},
    "views": _DATA | {"sensors", "ingest", "recorder", "sdnotify", "evidence", "investigate",
                      "render", "capture", "lab", "metrics", "(top)"},
    "(top)": {"views"},
}

# (importing file, imported package): the arrows still to be turned round.
KNOWN: set[tuple[str, str]] = set()


def _package(parts: tuple[str, ...]) -> str:
    """corescope.<pkg>... -> pkg; the top modules (corescope, __main__) are '(top)'."""
    if len(parts) < 2 or parts[1] in ("__init__", "__main__"):
        return "(top)"
    return parts[1]


def _scanner():  # type: ignore[no-untyped-def]
    """scripts/gen_docs.py's import reader (the architecture page is drawn with it too)."""
    spec = importlib.util.spec_from_file_location("gen_docs", SRC.parents[1] / "scripts"
                                                  / "gen_docs.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.module_imports


_SCAN = _scanner()


def _imports(path: Path) -> set[str]:
    """Every corescope module this file imports, relative imports resolved."""
    return _SCAN(path, SRC)


def arrows() -> set[tuple[str, str]]:
    """(file, package) for every import of another package."""
    out: set[tuple[str, str]] = set()
    for path in SRC.rglob("*.py"):
        rel = path.relative_to(SRC.parent)
        own = _package(rel.with_suffix("").parts)
        for mod in _imports(path):
            pkg = _package(tuple(mod.split(".")))
            if pkg != own:
                out.add((str(path.relative_to(SRC)), pkg))
    return out


def _own(file: str) -> str:
    return _package(("corescope", *Path(file).with_suffix("").parts))


def _wrong_way(file: str, pkg: str) -> bool:
    return pkg not in ALLOWED[_own(file)]


def test_every_package_has_a_layer() -> None:
    pkgs = {_own(f) for f, _ in arrows()} | {p for _, p in arrows()}
    assert pkgs <= set(ALLOWED), f"say what these may import: {sorted(pkgs - set(ALLOWED))}"


def test_imports_point_down_the_layers() -> None:
    wrong = {(f, p) for f, p in arrows() if _wrong_way(f, p)}
    new = sorted(wrong - KNOWN)
    assert not new, "imports up the layers (move the shared piece down instead):\n" + "\n".join(
        f"  {f} -> {p}" for f, p in new)


def test_known_exceptions_are_still_real() -> None:
    wrong = {(f, p) for f, p in arrows() if _wrong_way(f, p)}
    stale = sorted(KNOWN - wrong)
    assert not stale, "turned round already: remove from KNOWN:\n" + "\n".join(
        f"  {f} -> {p}" for f, p in stale)


def test_the_checker_sees_a_wrong_arrow(tmp_path: Path) -> None:
    """The rule itself: a source importing the store is up the layers; the reverse is not."""
    assert _wrong_way("sources/x.py", "store")
    assert _wrong_way("store/x.py", "sources")
    assert _wrong_way("evidence/x.py", "investigate")
    assert _wrong_way("render/x.py", "views")
    assert not _wrong_way("store/x.py", "model")
    assert not _wrong_way("views/x.py", "render")
    # and the parser resolves relative imports
    pkg = tmp_path / "corescope" / "sources"
    pkg.mkdir(parents=True)
    (pkg / "m.py").write_text("from ..store import db\nfrom . import kmsg\n")
    global SRC
    saved, SRC = SRC, tmp_path / "corescope"
    try:
        assert _imports(pkg / "m.py") == {"corescope.store", "corescope.sources"}
    finally:
        SRC = saved
