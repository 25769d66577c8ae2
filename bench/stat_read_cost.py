"""Root memory.stat / memory.numa_stat read cost against the number of zombie memcgs.

kubelet's cAdvisor (and runc) read these every 10-15 s. Before ~5.2 (memory.stat) and ~5.7
(memory.numa_stat) a read walked every memcg in the subtree, dying ones included; this
prints whether the cost still grows on this kernel. Zombie counts 0, 1k, 5k, 20k (real ones,
made by the lab); median of many reads each; ratio to the 0 row. Needs root; removes every
zombie it made, also on Ctrl-C.

    python bench/stat_read_cost.py [--levels 0,1000,5000,20000] [--reads 51]
"""

from __future__ import annotations

import argparse

from _zombielab import (
    cleanup,
    dying_now,
    grow_to,
    install_sigterm,
    median_ms,
    require_lab,
)
from corescope.rootfs import Root
from corescope.sources import cgroups as cg


def read_all(path: str) -> None:
    with open(path, "rb", buffering=0) as f:
        while f.read(65536):
            pass


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--levels", default="0,1000,5000,20000")
    ap.add_argument("--reads", type=int, default=51)
    args = ap.parse_args()
    levels = sorted(int(x) for x in args.levels.split(","))
    paths = require_lab()
    install_sigterm()
    root = Root()
    layout, _ = cg.read_layout(root)
    files = cg.stat_files(root, layout)
    rows: list[tuple[int, int | None, dict[str, float]]] = []
    made = 0
    try:
        for level in levels:
            made = grow_to(paths, made, level)
            cost = {name: median_ms(lambda p=str(path): read_all(p), args.reads)
                    for name, path in files}
            rows.append((level, dying_now(), cost))
    finally:
        cleanup()
    names = [n for n, _ in files]
    print(f"host: {layout.kind}, memory on {layout.memory} at {layout.memory_mount}; "
          f"median of {args.reads} reads")
    head = f"{'lab zombies':>11} {'dying':>7} " + " ".join(
        f"{n + ' ms':>18} {'x0':>6}" for n in names)
    print(head)
    base = rows[0][2]
    for level, dying, cost in rows:
        cells = " ".join(f"{cost[n]:>18.4f} {cost[n] / base[n]:>5.2f}x" for n in names)
        print(f"{level:>11} {dying if dying is not None else '?':>7} {cells}")


if __name__ == "__main__":
    main()
