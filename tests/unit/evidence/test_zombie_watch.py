"""`zombies --watch`'s evidence (evidence/watch.py) on a copy of the captured hybrid host's
tree: each tick reads the census now, counts the memcg churn inotify saw since the last
tick, and keeps the censuses it took so growth can be read from them."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import pytest

from corescope.errors import InvalidInput
from corescope.evidence.watch import ZombieWatch
from corescope.investigate import Window, investigate
from corescope.investigate.build import Options
from corescope.rootfs import Root
from corescope.runner import Runner
from support import FIXTURES


def _host(tmp_path: Path) -> Path:
    root = tmp_path / "host"
    shutil.copytree(FIXTURES / "zombies" / "hybrid", root)
    return root


def _kernel_count(root: Path, n: int) -> None:
    p = root / "proc/cgroups"
    lines = p.read_text().splitlines()
    out = []
    for line in lines:
        f = line.split("\t")
        if f[0] == "memory":
            f[2] = str(n)
        out.append("\t".join(f))
    p.write_text("\n".join(out) + "\n")


def _census(watch: ZombieWatch, now: float):  # type: ignore[no-untyped-def]
    inv = investigate(watch.tick(now), Window(now - 3600, now + 1), Options(),
                      parts=("zombies",))
    assert inv.zombies is not None
    watch.saw(inv.zombies.census)
    return inv.zombies


def test_ticks_read_the_census_now_and_count_churn_between_them(tmp_path: Path) -> None:
    root = _host(tmp_path)
    watch = ZombieWatch(Root(root), Runner(), tmp_path / "no-store", 3600.0)
    try:
        assert watch.start() is None  # inotify counts churn on the fixture tree
        first = _census(watch, 1_000_000.0)
        assert first.census is not None and first.census.kernel_count == 49
        # an agent's cgroup made and removed between ticks, and the kernel's count grown
        mem = root / "sys/fs/cgroup/memory"
        for i in range(3):
            (mem / f"agent-{i}").mkdir()
            (mem / f"agent-{i}").rmdir()
        _kernel_count(root, 149)
        # inotify's reader thread hands the churn over when it has read it: tick until then
        ticks, deadline = [_census(watch, 1_000_060.0)], time.monotonic() + 10
        while _churn(watch) != (3, 3) and time.monotonic() < deadline:
            time.sleep(0.05)
            ticks.append(_census(watch, 1_000_060.0 + len(ticks)))
    finally:
        watch.close()
    assert _churn(watch) == (3, 3)
    for z in ticks:
        assert z.census is not None and z.census.kernel_count == 149
        assert z.census.dying == first.census.dying + 100
    # the census history the watch keeps: every tick, each later one with its churn interval
    kept = watch.seen.census_rows
    assert [c.kernel_count for c in kept] == [49] + [149] * len(ticks)
    assert kept[0].churn_interval_s == 0.0 and all(c.churn_interval_s > 0.0 for c in kept[1:])


def _churn(watch: ZombieWatch) -> tuple[int, int]:
    rows = [c for c in watch.seen.churn_rows if c.method == "inotify"]
    return sum(c.created for c in rows), sum(c.removed for c in rows)


def test_no_memory_controller_is_an_input_error(tmp_path: Path) -> None:
    root = _host(tmp_path)
    (root / "proc/self/mountinfo").write_text("")
    (root / "proc/cgroups").write_text("#subsys_name\thierarchy\tnum_cgroups\tenabled\n")
    watch = ZombieWatch(Root(root), Runner(), tmp_path / "no-store", 3600.0)
    with pytest.raises(InvalidInput, match="no memory controller mounted"):
        watch.start()
    watch.close()
