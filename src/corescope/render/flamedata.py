"""Folded stacks → the flat flame-graph data every page draws (flame.js).

The tree travels as parallel arrays in depth-first order (name index, depth, samples,
baseline), not as nested objects: nothing on either side recurses, so a 500-frame stack
neither hits Python's recursion limit nor JSON's, and repeated names are stored once.

It is built without a trie walk per frame: the stacks, sorted root first, are the tree's
depth-first order with children by name, so each stack adds only the nodes below the
prefix it shares with the one before it; a node's count is its own plus its children's,
summed once, leaves up."""

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
    import numpy as np  # the pages that draw no flame graph never load it

    # every stack as name ids; names ranked in sorted order, so sorting the stacks' rank
    # rows sorts them as their names would
    ids = _Ids()
    flat: list[int] = []
    lens: list[int] = []
    after: list[int] = []
    before: list[float] = []
    for stack, value in folded.items():
        parts = _frames(stack)
        flat.extend(map(ids.__getitem__, parts))
        lens.append(len(parts))
        got, had = value if isinstance(value, tuple) else (value, 0.0)
        after.append(got)
        before.append(had)
    names = list(ids)
    n = len(lens)
    if not n:
        return _out(["all"], [0], [0], [0.0], diff)
    rank = np.empty(len(names), dtype=np.int32)
    rank[np.asarray(sorted(range(len(names)), key=names.__getitem__), dtype=np.int64)] = \
        np.arange(1, len(names) + 1, dtype=np.int32)
    ln = np.asarray(lens, dtype=np.int64)
    width = int(ln.max())
    starts = np.cumsum(ln) - ln
    row = np.repeat(np.arange(n), ln)
    col = np.arange(row.size) - np.repeat(starts, ln)
    name_m = np.zeros((n, width), dtype=np.int32)  # name id per (stack, depth)
    name_m[row, col] = np.asarray(flat, dtype=np.int32)
    rank_m = np.zeros((n, width), dtype=np.int32)  # 0 past a stack's end: shorter first
    rank_m[row, col] = rank[name_m[row, col]]
    # sorted as byte strings of big-endian ranks (a memcmp per pair; np.lexsort would make
    # a pass per depth): 0 past the end sorts a stack before the stacks it is a prefix of
    big = np.dtype(">u2") if len(names) < 1 << 16 else np.dtype(">u4")
    keys = np.ascontiguousarray(rank_m.astype(big)).view(f"S{big.itemsize * width}")
    order = np.argsort(keys.ravel(), kind="stable")
    rank_m, name_m, ln = rank_m[order], name_m[order], ln[order]
    # the frames each stack shares with the one before it: the nodes it does not add
    shared = np.zeros(n, dtype=np.int64)
    if n > 1:
        differ = rank_m[1:] != rank_m[:-1]
        first_diff = np.where(differ.any(axis=1), differ.argmax(axis=1), width)
        shared[1:] = np.minimum(first_diff, np.minimum(ln[1:], ln[:-1]))
    depth_ix = np.arange(width)
    new = (depth_ix >= shared[:, None]) & (depth_ix < ln[:, None])
    # row-major order of the new (stack, depth) cells is the tree's depth-first order
    node_name = name_m[new]
    node_col = np.nonzero(new)[1]
    total = node_name.size + 1  # node 0 is the root
    node_ix = np.arange(1, total)
    made_by = np.cumsum(new.sum(axis=1))  # nodes made up to each stack, root excluded
    parent = np.zeros(total, dtype=np.int64)
    by_col = np.argsort(node_col, kind="stable")
    by_depth = np.split(node_ix[by_col], np.searchsorted(node_col[by_col], np.arange(1, width)))
    for d in range(1, width):
        # a node's parent: the last node one level up made before it
        up = by_depth[d - 1]
        parent[by_depth[d]] = up[np.searchsorted(up, by_depth[d]) - 1]
    # each stack's count goes to its deepest node: the last node at that depth made so far
    leaf = np.empty(n, dtype=np.int64)
    for d in range(width):
        at = np.flatnonzero(ln == d + 1)
        if at.size:
            nodes = by_depth[d]
            leaf[at] = nodes[np.searchsorted(nodes, made_by[at], side="right") - 1]
    v = np.zeros(total, dtype=np.int64)
    b = np.zeros(total, dtype=np.float64)
    np.add.at(v, leaf, np.asarray(after, dtype=np.int64)[order])
    np.add.at(b, leaf, np.asarray(before, dtype=np.float64)[order])
    for d in range(width - 1, 0, -1):  # totals, leaves up
        nodes = by_depth[d]
        np.add.at(v, parent[nodes], v[nodes])
        np.add.at(b, parent[nodes], b[nodes])
    v[0] = v[by_depth[0]].sum()
    b[0] = b[by_depth[0]].sum()
    keep = np.ones(total, dtype=bool)
    if max_nodes:
        w = np.maximum(v[1:].astype(np.float64), b[1:])
        if w.size >= max_nodes:
            ws = np.sort(w)[::-1]
            min_v = ws[max_nodes - 1] + 1e-9 if ws[max_nodes - 1] == ws[max_nodes] \
                else ws[max_nodes - 1]
            # a child never outweighs its parent, so a node kept has its parent kept
            keep[1:] = (v[1:] >= min_v) | ((b[1:] >= min_v) if diff else False)
    kept = np.flatnonzero(keep[1:]) + 1
    node_names = [names[i] for i in node_name[kept - 1].tolist()]
    depths = [0, *(node_col[kept - 1] + 1).tolist()]
    return _out(["all", *node_names], depths, [int(v[0]), *v[kept].tolist()],
                [float(b[0]), *b[kept].tolist()], diff)


class _Ids(dict[str, int]):
    """A name's id, numbered in order of first sight."""

    def __missing__(self, name: str) -> int:
        i = self[name] = len(self)
        return i


def _out(node_names: list[str], depths: list[int], v: list[int], b: list[float],
         diff: bool) -> dict[str, Any]:
    names: dict[str, int] = {}
    data: dict[str, Any] = {"names": [], "name": [names.setdefault(x, len(names))
                                                 for x in node_names],
                            "depth": depths, "v": v, "diff": diff}
    data["names"] = list(names)
    if diff:
        data["b"] = [round(x, 3) for x in b]
    return data
