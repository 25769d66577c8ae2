"""scripts/installed.py, which lets `make test` skip re-running `pip install -e` when the
checkout is already installed as its pyproject.toml declares: it must say "installed" for
this checkout as set up, and "not installed" as soon as pyproject asks for anything the
installed metadata lacks (a requirement, a tighter bound, a command, a version)."""

from __future__ import annotations

import importlib.util
import sys

import pytest

from support import REPO

SCRIPT = REPO / "scripts" / "installed.py"


@pytest.fixture(scope="module")
def installed():
    spec = importlib.util.spec_from_file_location("installed_check", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    sys.modules["installed_check"] = mod
    spec.loader.exec_module(mod)
    return mod


def test_this_checkout_as_set_up_is_installed(installed):
    assert installed.up_to_date("test")
    assert installed.up_to_date(None)


@pytest.mark.parametrize("old,new", [
    ('"click>=8.1,<9",', '"click>=8.1,<9",\n  "rich>=13",'),         # a new requirement
    ('"numpy>=1.24,<3"', '"numpy>=99"'),                            # a bound the install breaks
    ('"pytest>=8,<10",', '"pytest>=8,<10",\n  "no-such-package-xyz>=1",'),  # new test tool
    ('corescope = "corescope.views.cli:main"',
     'corescope = "corescope.views.cli:main"\ncs = "corescope.views.cli:main"'),  # a command
    ('version = "0.1.0"', 'version = "0.1.1"'),
])
def test_any_change_pyproject_asks_for_means_install(installed, old, new):
    text = (REPO / "pyproject.toml").read_text()
    assert old in text
    assert not installed.up_to_date("test", text.replace(old, new, 1))
