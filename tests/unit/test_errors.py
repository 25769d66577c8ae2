"""One error hierarchy: every error class corescope defines is a CorescopeError of a kind, and
the CLI turns any of them into its message and exit code, never a traceback."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

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
