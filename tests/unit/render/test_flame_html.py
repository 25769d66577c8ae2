"""The HTML flame graph's data and page: flat data (no recursion anywhere), stack cuts,
hostile names kept inert in the page source, scripts allowed only by hash."""

from __future__ import annotations

import base64
import hashlib
import json
import re

from corescope.render.flame_html import render_html
from corescope.render.flamedata import MAX_DEPTH, flame_data
from corescope.render.page import page, script_json

HOSTILE = ["<!--<script>", "</script><script>alert(1)</script>",
           "<img src=x onerror=alert(1)>", "\x1b[31mred\x1b[0m", "a\u2028b\u2029c", "&amp;"]


def embedded(page_text: str, block: str) -> object:
    part = page_text.split(f'<script id="{block}" type="application/json">')[1]
    return json.loads(part.split("</script>")[0])


def children(data: dict, i: int) -> list[int]:
    d = data["depth"][i]
    out = []
    for j in range(i + 1, len(data["depth"])):
        if data["depth"][j] <= d:
            break
        if data["depth"][j] == d + 1:
            out.append(j)
    return out


def test_flat_tree_counts_and_order() -> None:
    data = flame_data({"a;x;y": 3, "a;x": 1, "b;z": 2})
    names = [data["names"][i] for i in data["name"]]
    assert names == ["all", "a", "x", "y", "b", "z"]
    assert data["depth"] == [0, 1, 2, 3, 1, 2]
    assert data["v"] == [6, 4, 4, 3, 2, 2]
    assert "b" not in data
    diff = flame_data({"a;x": (4, 1.5), "b": (0, 2.0)}, diff=True)
    assert diff["v"] == [4, 4, 4, 0] and diff["b"] == [3.5, 1.5, 1.5, 2.0]


def test_500_frame_stack_renders_and_deeper_ones_are_cut_with_a_mark() -> None:
    deep = ";".join(["proc"] + [f"f{i}" for i in range(500)])
    html_text = render_html({deep: 7}, "t")
    data = embedded(html_text, "flame-data")
    assert max(data["depth"]) == 501 and data["v"][-1] == 7
    huge = ";".join(["proc"] + [f"f{i}" for i in range(5000)])
    data = flame_data({huge: 2, "proc;f0": 1})
    assert max(data["depth"]) == MAX_DEPTH
    leaf = data["names"][data["name"][data["depth"].index(MAX_DEPTH)]]
    assert leaf == f"[{5001 - (MAX_DEPTH - 1)} more frames cut]"
    assert data["v"][0] == 3


def test_max_nodes_drops_the_lightest_subtrees_first() -> None:
    folded = {f"p;f{i}": i + 1 for i in range(100)}
    data = flame_data(folded, max_nodes=11)
    kept = [data["names"][data["name"][j]] for j in children(data, 1)]
    assert len(kept) == 10 and "f99" in kept and "f0" not in kept
    assert data["v"][0] == sum(folded.values())  # the root still counts everything


def test_script_json_is_inert_in_html_and_round_trips() -> None:
    text = script_json({"names": HOSTILE})
    for bad in ("<", ">", "&", "\u2028", "\u2029"):
        assert bad not in text
    assert json.loads(text) == {"names": HOSTILE}


def test_page_source_holds_no_live_markup_from_names_and_scripts_match_their_hashes() -> None:
    folded = {f"{HOSTILE[2]};{HOSTILE[1]};{HOSTILE[0]}": 5, f"{HOSTILE[3]};{HOSTILE[4]}": 1}
    text = render_html(folded, HOSTILE[1], subtitle=HOSTILE[2])
    # every "<script" in the file is one we wrote: the 1 data block and the 2 code blocks
    assert text.count("<script") == 3 and text.count("</script>") == 3
    assert "<!--" not in text and "<img" not in text
    data = embedded(text, "flame-data")
    assert set(HOSTILE[:5]) <= set(data["names"])
    csp = re.search(r'content="([^"]*script-src[^"]*)"', text).group(1)
    assert "unsafe-inline" not in csp.split("script-src")[1]
    codes = re.findall(r"<script>(.*?)</script>", text, re.S)
    assert len(codes) == 2
    for code in codes:
        digest = base64.b64encode(hashlib.sha256(code.encode()).digest()).decode()
        assert f"'sha256-{digest}'" in csp
    assert "connect-src 'none'" in csp


def test_page_without_scripts_allows_none() -> None:
    text = page("t", "<p>x</p>", [])
    assert "script-src 'none'" in text
