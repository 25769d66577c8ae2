"""A self-contained interactive flame graph: one HTML file with inline SVG drawing code and
the stacks embedded as JSON. Click to zoom, search (regex) to highlight, hover for samples and
%. No external URL, so it renders offline and from an air-gapped node. Differential graphs
are drawn from the window's stacks and coloured red (grew) / blue (shrank) against the
baseline, normalised by total samples."""

from __future__ import annotations

import html
import json
import re
from collections.abc import Mapping
from importlib import resources
from typing import Any


def build_tree(folded: Mapping[str, int | tuple[int, float]]) -> dict[str, Any]:
    """Nested {"n": name, "v": samples, "b": baseline samples, "c": [children]}."""
    root: dict[str, Any] = {"n": "all", "v": 0, "b": 0.0, "c": {}}
    for stack, value in folded.items():
        if isinstance(value, tuple):
            after, before = value
        else:
            after, before = value, 0.0
        node = root
        node["v"] += after
        node["b"] += before
        for name in stack.split(";"):
            child = node["c"].get(name)
            if child is None:
                child = node["c"][name] = {"n": name, "v": 0, "b": 0.0, "c": {}}
            child["v"] += after
            child["b"] += before
            node = child

    def finish(node: dict[str, Any]) -> dict[str, Any]:
        kids = sorted(node["c"].values(), key=lambda k: k["n"])
        out: dict[str, Any] = {"n": node["n"], "v": node["v"]}
        if node["b"]:
            out["b"] = round(node["b"], 3)
        if kids:
            out["c"] = [finish(k) for k in kids]
        return out

    return finish(root)


def _page() -> str:
    return (resources.files("corescope.views") / "assets" / "flame.html").read_text("utf-8")




def render_html(tree: dict[str, Any], title: str, subtitle: str = "",
                diff: bool = False) -> str:
    data = json.dumps({"tree": tree, "diff": diff}, separators=(",", ":"))
    data = data.replace("</", "<\\/")  # keep "</script>" inside names from closing the tag
    legend = ("<span style='background:#f88'>grew</span><span style='background:#88f'>"
              "shrank</span>") if diff else ""
    fills = {"__TITLE__": html.escape(title), "__SUBTITLE__": html.escape(subtitle),
             "__LEGEND__": legend, "__DATA__": data}
    # one pass, so a placeholder-looking name inside the data is left alone
    return re.sub(r"__(TITLE|SUBTITLE|LEGEND|DATA)__", lambda m: fills[m.group(0)], _page())
