"""Folded stacks → the flat flame-graph data every page draws (flame.js).

The tree travels as parallel arrays in depth-first order (name index, depth, samples,
baseline), not as nested objects: nothing on either side recurses, so a 500-frame stack
neither hits Python's recursion limit nor JSON's, and repeated names are stored once."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# Deeper stacks keep their root-side frames and end in one marked frame saying how many
# were cut (perf's own default cap is 127; kernel.perf_event_max_stack can raise it).
MAX_DEPTH = 1024
CUT_MARK = "[{n} more frames cut]"


def _frames(stack: str) -> list[str]:
    parts = stack.split(";")
    if len(parts) > MAX_DEPTH:
        cut = len(parts) - (MAX_DEPTH - 1)
        parts = [*parts[: MAX_DEPTH - 1], CUT_MARK.format(n=cut)]
    return parts


def flame_data(folded: Mapping[str, int | tuple[int, float]], diff: bool = False,
               max_nodes: int | None = None) -> dict[str, Any]:
    """{"names": [...], "name": [i...], "depth": [...], "v": [...], "b": [...] (diff only),
    "diff": bool}; node 0 is the root "all". Children are ordered by name (flame graphs
    are alphabetical, not temporal). With `max_nodes`, the lightest frames go first:
    a node is dropped with its subtree when the tree is larger (for embedding many graphs
    in one page); its samples stay counted in its parent."""
    # trie node: [v, b, {name: child}]
    root: list[Any] = [0, 0.0, {}]
    for stack, value in folded.items():
        after, before = value if isinstance(value, tuple) else (value, 0.0)
        node = root
        node[0] += after
        node[1] += before
        for name in _frames(stack):
            kids = node[2]
            child = kids.get(name)
            if child is None:
                child = kids[name] = [0, 0.0, {}]
            child[0] += after
            child[1] += before
            node = child
    min_v = _threshold(root, max_nodes) if max_nodes else 0
    names: dict[str, int] = {}
    out_name: list[int] = []
    out_depth: list[int] = []
    out_v: list[int] = []
    out_b: list[float] = []
    todo: list[tuple[str, list[Any], int]] = [("all", root, 0)]
    while todo:
        name, node, depth = todo.pop()
        idx = names.setdefault(name, len(names))
        out_name.append(idx)
        out_depth.append(depth)
        out_v.append(node[0])
        out_b.append(round(node[1], 3))
        kids = [(k, c) for k, c in node[2].items() if c[0] >= min_v or (diff and c[1] >= min_v)]
        kids.sort(key=lambda kc: kc[0], reverse=True)  # popped in name order
        todo.extend((k, c, depth + 1) for k, c in kids)
    data: dict[str, Any] = {"names": list(names), "name": out_name, "depth": out_depth,
                            "v": out_v, "diff": diff}
    if diff:
        data["b"] = out_b
    return data


def _threshold(root: list[Any], max_nodes: int) -> float:
    """The smallest sample count a node may have so that at most `max_nodes` are kept."""
    weights: list[float] = []
    todo = [root]
    while todo:
        node = todo.pop()
        for c in node[2].values():
            weights.append(max(c[0], c[1]))
            todo.append(c)
    if len(weights) < max_nodes:
        return 0
    weights.sort(reverse=True)
    return weights[max_nodes - 1] + 1e-9 if weights[max_nodes - 1] == weights[max_nodes] \
        else weights[max_nodes - 1]
