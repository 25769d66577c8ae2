"""Browser tests: the fixtures live in tests/chromium.py (shared with the live page test);
the generated 96-CPU hour is built once per session."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from support.chromium import ARTIFACTS, Visit  # noqa: F401  (the fixtures are in tests/conftest.py)


@dataclass
class Generated:
    """The public corpus's 96-CPU zombie-chain hour, imported, investigated, as a page."""

    hour: Any
    model: dict[str, Any]
    html: Path

    @property
    def expected(self) -> dict[str, Any]:
        return self.hour.expected


@pytest.fixture(scope="session")
def generated(tmp_path_factory: pytest.TempPathFactory) -> Generated:
    from corescope.render.html_report import render
    from support.scenario_pages import generated_hour, page_of

    tmp = tmp_path_factory.mktemp("generated")
    hour = generated_hour(tmp)
    model = page_of(hour)
    html = tmp / "report.html"
    html.write_text(render(model))
    return Generated(hour, model, html)
