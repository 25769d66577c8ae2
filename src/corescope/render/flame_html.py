"""A self-contained interactive flame graph: one offline HTML file (no external URL, so it
renders from an air-gapped node) with the stacks embedded as flat JSON and drawn by the
shared flame.js. Click to zoom, regex search, one tooltip with samples and %, an icicle
toggle (tall stacks open root-on-top). Differential graphs are coloured red (grew) / blue
(shrank) against the baseline, normalised by total samples."""

from __future__ import annotations

import html
from collections.abc import Mapping

from corescope.render.flamedata import flame_data
from corescope.render.page import asset, page

_STYLE = ("body{font:12px Verdana,sans-serif;margin:0;background:#fff;color:#000}"
          "#head{padding:6px 10px;background:#eee}#head h1{font-size:15px;margin:0 0 4px}"
          ".cf-bar{padding:4px 10px;display:flex;gap:10px;align-items:center;flex-wrap:wrap}"
          ".cf-search{width:18em}#legend span{padding:0 6px}")

_BOOT = ("\"use strict\";CoreFlame.mount(document.getElementById(\"graph\"),"
         "JSON.parse(document.getElementById(\"flame-data\").textContent));")


def render_html(folded: Mapping[str, int | tuple[int, float]], title: str,
                subtitle: str = "", diff: bool = False) -> str:
    legend = ("<span style='background:#f88'>grew</span><span style='background:#88f'>"
              "shrank</span>") if diff else ""
    body = (f"<div id=\"head\"><h1>{html.escape(title)}</h1><span id=\"subtitle\">"
            f"{html.escape(subtitle)}</span> <span id=\"legend\">{legend}</span></div>"
            "<div id=\"graph\"></div>")
    return page(title, body, [asset("flame.js"), _BOOT],
                {"flame-data": flame_data(folded, diff=diff)}, _STYLE)
