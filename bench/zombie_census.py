"""Census time with 20,000 real zombie memcgs, against the article's manual commands.

The peer is what the engineers typed: `cat /proc/cgroups | grep memory | awk '{print $3}'`
and `find /sys/fs/cgroup/memory/ -type d | wc -l`, run as the same pipelines (no shell).
corescope's census reads /proc/cgroups on both sides of a directory-only walk of the live
tree, in the recorder's process. Medians of many runs; the ratio is census / manual
(goal <= 1.0x). Needs root and memcg v1; removes every zombie it made, also on Ctrl-C.

    python bench/zombie_census.py [--zombies 20000] [--runs 21]
"""

from __future__ import annotations

import argparse
import subprocess
import sys

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


def pipeline(*stages: list[str]) -> str:
    procs: list[subprocess.Popen[bytes]] = []
    prev = None
    for argv in stages:
        p = subprocess.Popen(argv, stdin=prev, stdout=subprocess.PIPE)
        if prev is not None:
            prev.close()
        prev = p.stdout
        procs.append(p)
    out = procs[-1].communicate()[0]
    for p in procs[:-1]:
        p.wait()
    return out.decode().strip()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--zombies", type=int, default=20_000)
    ap.add_argument("--runs", type=int, default=21)
    args = ap.parse_args()
    paths = require_lab()
    install_sigterm()
    root = Root()
    layout, _ = cg.read_layout(root)
    if layout.memory != "v1" or layout.memory_mount is None:
        sys.exit("the article's commands are for memcg v1; this host has memory on "
                 f"{layout.memory}")
    mount = layout.memory_mount
    try:
        print(f"creating {args.zombies} dying memcgs ...", file=sys.stderr, flush=True)
        grow_to(paths, 0, args.zombies)

        def manual() -> tuple[str, str]:
            kernel = pipeline(["cat", "/proc/cgroups"], ["grep", "memory"],
                              ["awk", "{print $3}"])
            live = pipeline(["find", mount + "/", "-type", "d"], ["wc", "-l"])
            return kernel, live

        def census() -> object:
            return cg.take_census(root, layout)

        def find_only() -> object:
            return pipeline(["find", mount + "/", "-type", "d"], ["wc", "-l"])

        kernel, live = manual()
        c = cg.take_census(root, layout).census
        assert c is not None
        t_manual = median_ms(manual, args.runs)
        t_census = median_ms(census, args.runs)
        t_find = median_ms(find_only, args.runs)
        print(f"host: {layout.kind}, memory v1 at {mount}")
        print(f"manual commands say: kernel {kernel}, live {live}; census says: kernel "
              f"{c.kernel_count}, live {c.live}, dying {c.dying} (walk {c.walk_ms:.2f} ms)")
        print(f"{'method':<44} {'median ms':>10} {'ratio':>7}")
        print(f"{'corescope census (in the recorder process)':<44} {t_census:>10.3f} "
              f"{t_census / t_manual:>6.3f}x")
        print(f"{'manual: cat|grep|awk + find|wc (the peer)':<44} {t_manual:>10.3f} "
              f"{1.0:>6.3f}x")
        print(f"{'find|wc alone':<44} {t_find:>10.3f} {t_find / t_manual:>6.3f}x")
        print(f"ratio census/manual = {t_census / t_manual:.3f}x (goal <= 1.0x), "
              f"{args.runs} runs each, dying {dying_now()}")
    finally:
        cleanup()


if __name__ == "__main__":
    main()
