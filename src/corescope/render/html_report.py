"""`report --html`: the incident page as one self-contained offline HTML file. Layout only:
the page data comes from report_model.build (the Investigation, rounded and packed) and
report.js draws it (canvas heatmap and charts, flame graphs by flame.js)."""

from __future__ import annotations

from typing import Any

from corescope.render.page import asset, page

_BOOT = ("\"use strict\";CoreReport.render(JSON.parse(document.getElementById(\"report-data\")"
         ".textContent),document.getElementById(\"app\"));")


def render(model: dict[str, Any]) -> str:
    """The page for `model` (report_model.build's dict, or the same JSON read back)."""
    return page(model.get("title") or "corescope incident report", '<div id="app"></div>',
                [asset("flame.js"), asset("report.js"), _BOOT], {"report-data": model},
                asset("report.css"))
