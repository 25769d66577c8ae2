"""One error hierarchy: every error class corescope defines is a CorescopeError of a kind, and
the CLI turns any of them into its message and exit code, never a traceback."""

from __future__ import annotations

import ast
import importlib
import inspect
import itertools
import pkgutil
from pathlib import Path
from typing import NoReturn

import click
import pytest

import corescope
from corescope.errors import CorescopeError, InvalidInput, MissingTool, NotPermitted, StoreFault
from corescope.views import cli as cli_module


def _modules() -> list[object]:
    out = []
    for info in pkgutil.walk_packages(corescope.__path__, "corescope."):
        if info.name.endswith("__main__"):
            continue
        out.append(importlib.import_module(info.name))
    return out


def test_every_error_class_is_a_corescope_error() -> None:
    strays = []
    for mod in _modules():
        for name, obj in vars(mod).items():
            if (inspect.isclass(obj) and issubclass(obj, Exception)
                    and obj.__module__ == mod.__name__ and not name.startswith("_")
                    and not issubclass(obj, CorescopeError)):
                strays.append(f"{mod.__name__}.{name}")
    assert not strays, f"give these a kind from corescope.errors: {strays}"


def test_kinds_keep_the_builtin_bases_callers_catch() -> None:
    from corescope.store.db import StoreError
    from corescope.store.journal import JournalBusy
    from corescope.timeparse import TimeParseError

    assert issubclass(StoreError, StoreFault) and issubclass(StoreError, RuntimeError)
    assert issubclass(JournalBusy, StoreFault) and issubclass(JournalBusy, OSError)
    assert issubclass(TimeParseError, InvalidInput) and issubclass(TimeParseError, ValueError)
    assert {k.kind for k in (InvalidInput, StoreFault, MissingTool, NotPermitted)} == {
        "input", "store", "tool", "permission"}


@pytest.mark.parametrize("error", [InvalidInput, StoreFault, MissingTool, NotPermitted])
def test_the_cli_maps_every_kind_to_its_message_and_code(
        error: type[CorescopeError], capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    def boom() -> None:
        raise error("the store at /x is not a corescope store")

    real_cli = cli_module.cli

    @click.group()
    def fake() -> None:
        pass

    fake.add_command(click.Command("boom", callback=boom))
    monkeypatch.setattr(cli_module, "cli", fake)
    with pytest.raises(SystemExit) as exited:
        cli_module.main(["boom"])
    assert exited.value.code == error.exit_code == 2
    err = capsys.readouterr().err
    assert err == "corescope: the store at /x is not a corescope store\n"
    assert "Traceback" not in err
    assert cli_module.cli is fake and real_cli is not fake


# ─── fail() ends the command ────────────────────────────────────────────────────────────────

SRC = Path(corescope.__file__).resolve().parent


def _callee(call: ast.Call) -> str | None:
    f = call.func
    return f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else None


def _functions() -> list[tuple[Path, ast.FunctionDef | ast.AsyncFunctionDef]]:
    out = []
    for path in sorted(SRC.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                out.append((path, node))
    return out


def _after_no_return(tree: ast.AST, no_return: set[str]) -> list[tuple[int, str]]:
    """Statements that follow a call of a NoReturn function in the same block (dead code that
    was only there while fail() was typed `-> None`)."""
    found = []
    for node in ast.walk(tree):
        for name in ("body", "orelse", "finalbody"):
            block = getattr(node, name, None)
            if not isinstance(block, list):
                continue
            for stmt, nxt in itertools.pairwise(block):
                if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call) \
                        and _callee(stmt.value) in no_return:
                    found.append((nxt.lineno, ast.unparse(nxt).splitlines()[0]))
    return found


def _asserted_after_non_optional(tree: ast.AST, returns: dict[str, set[str]]
                                 ) -> list[tuple[int, str]]:
    """`x = f(...)` then `assert x is not None` where f is declared to return no None."""
    found = []
    for node in ast.walk(tree):
        block = getattr(node, "body", None)
        if not isinstance(block, list):
            continue
        for stmt, nxt in itertools.pairwise(block):
            if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1
                    and isinstance(stmt.targets[0], ast.Name)
                    and isinstance(stmt.value, ast.Call)
                    and isinstance(nxt, ast.Assert) and isinstance(nxt.test, ast.Compare)
                    and isinstance(nxt.test.left, ast.Name)
                    and nxt.test.left.id == stmt.targets[0].id
                    and isinstance(nxt.test.ops[0], ast.IsNot)):
                continue
            declared = returns.get(_callee(stmt.value) or "", set())
            if len(declared) == 1 and not any(w in next(iter(declared))
                                              for w in ("None", "Optional", "Any")):
                found.append((nxt.lineno, ast.unparse(nxt)))
    return found


def test_fail_is_typed_no_return() -> None:
    from corescope.views.clitypes import fail

    assert inspect.signature(fail).return_annotation in ("NoReturn", NoReturn)


def test_nothing_follows_fail() -> None:
    no_return: set[str] = set()
    returns: dict[str, set[str]] = {}
    for _path, fn in _functions():
        if fn.returns is not None:
            declared = ast.unparse(fn.returns)
            returns.setdefault(fn.name, set()).add(declared)
            if declared in ("NoReturn", "Never"):
                no_return.add(fn.name)
    assert "fail" in no_return
    dead = []
    for path in sorted(SRC.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        rel = path.relative_to(SRC)
        dead += [f"{rel}:{n}: {s} (after a NoReturn call)"
                 for n, s in _after_no_return(tree, no_return)]
        dead += [f"{rel}:{n}: {s} (the function never returns None)"
                 for n, s in _asserted_after_non_optional(tree, returns)]
    assert not dead, "\n".join(dead)


def test_the_dead_code_checks_see_what_they_look_for() -> None:
    tree = ast.parse("def f():\n    fail('x')\n    raise SystemExit(2)\n"
                     "def g():\n    s = open_store()\n    assert s is not None\n")
    assert _after_no_return(tree, {"fail"}) == [(3, "raise SystemExit(2)")]
    assert _asserted_after_non_optional(tree, {"open_store": {"Store"}}) == [
        (6, "assert s is not None")]
    assert _asserted_after_non_optional(tree, {"open_store": {"Store | None"}}) == []
