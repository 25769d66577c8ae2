"""flame_data's tree, built from the sorted stacks (each adds only the nodes below the prefix
it shares with the one before), is the trie a walk frame by frame builds: the same nodes in
the same depth-first order, children by name, with the same counts, baselines and pruning.
The oracle below is that walk, as flame_data made it before."""

from __future__ import annotations

import random
from typing import Any

import pytest

from corescope.render.flamedata import CUT_MARK, MAX_DEPTH, flame_data


def trie_walk(folded: dict[str, Any], diff: bool = False,
              max_nodes: int | None = None) -> dict[str, Any]:
    def frames(stack: str) -> list[str]:
        parts = stack.split(";")
        if len(parts) > MAX_DEPTH:
            parts = [*parts[: MAX_DEPTH - 1], CUT_MARK.format(n=len(parts) - MAX_DEPTH + 1)]
        return parts

    root: list[Any] = [0, 0.0, {}]
    for stack, value in folded.items():
        after, before = value if isinstance(value, tuple) else (value, 0.0)
        node = root
        node[0] += after
        node[1] += before
        for name in frames(stack):
            child = node[2].setdefault(name, [0, 0.0, {}])
            child[0] += after
            child[1] += before
            node = child
    min_v: float = 0
    if max_nodes:
        weights, todo = [], [root]
        while todo:
            for c in todo.pop()[2].values():
                weights.append(max(c[0], c[1]))
                todo.append(c)
        if len(weights) >= max_nodes:
            weights.sort(reverse=True)
            w = weights[max_nodes - 1]
            min_v = w + 1e-9 if w == weights[max_nodes] else w
    names: dict[str, int] = {}
    out: dict[str, list[Any]] = {"name": [], "depth": [], "v": [], "b": []}
    stack_: list[tuple[str, list[Any], int]] = [("all", root, 0)]
    while stack_:
        name, node, depth = stack_.pop()
        out["name"].append(names.setdefault(name, len(names)))
        out["depth"].append(depth)
        out["v"].append(node[0])
        out["b"].append(round(node[1], 3))
        kids = sorted(((k, c) for k, c in node[2].items()
                       if c[0] >= min_v or (diff and c[1] >= min_v)), reverse=True)
        stack_.extend((k, c, depth + 1) for k, c in kids)
    data = {"names": list(names), "name": out["name"], "depth": out["depth"], "v": out["v"],
            "diff": diff}
    if diff:
        data["b"] = out["b"]
    return data


def random_folded(seed: int, n: int, diff: bool) -> dict[str, Any]:
    rnd = random.Random(seed)
    words = ["main", "run", "all", "a", "b", "do_idle", "x;y", "[unknown]", "zz", "ä"]
    out: dict[str, Any] = {}
    for _ in range(n):
        depth = rnd.choice([0, 1, 2, 3, 5, 8, 20])
        stack = ";".join(["proc" + str(rnd.randint(0, 2))] +
                         [rnd.choice(words) for _ in range(depth)])
        v = rnd.randint(1, 50)
        out[stack] = (v, rnd.randint(0, 40) * 0.5) if diff else v
    return out


@pytest.mark.parametrize("diff", [False, True])
@pytest.mark.parametrize("max_nodes", [None, 1, 7, 40, 10_000])
@pytest.mark.parametrize("seed", range(4))
def test_same_tree_as_the_trie_walk(diff: bool, max_nodes: int | None, seed: int) -> None:
    folded = random_folded(seed, 300, diff)
    assert flame_data(folded, diff, max_nodes) == trie_walk(folded, diff, max_nodes)


def test_stacks_that_are_prefixes_of_others_and_cut_ones() -> None:
    deep = ";".join(f"f{i}" for i in range(MAX_DEPTH + 5))
    folded = {"p": 3, "p;a": 2, "p;a;b": 1, "p;b": 4, "q;a": 1, deep: 2,
              deep + ";more": 5, "": 1}
    got = flame_data(folded)
    assert got == trie_walk(folded)
    assert got["v"][0] == sum(folded.values())
    assert CUT_MARK.format(n=6) in got["names"] and CUT_MARK.format(n=7) in got["names"]


def test_empty() -> None:
    assert flame_data({}) == trie_walk({}) == {"names": ["all"], "name": [0], "depth": [0],
                                               "v": [0], "diff": False}
