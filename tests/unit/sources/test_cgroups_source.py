"""Layout detection, /proc/cgroups, cgroup.stat, the live walk and the census, on fixture
trees (captured hybrid host, v2 nested, 6.12+ without a memory row)."""

from __future__ import annotations

import os
import shutil
from dataclasses import replace
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from corescope.analysis.zombies import rank_locations
from corescope.rootfs import Root
from corescope.sources import cgroups as cg
from corescope.sources.cgwatch import (
    IN_CREATE,
    IN_ISDIR,
    ChurnWatcher,
    parse_inotify_events,
    snapshot_churn,
)
from support import FIXTURES

Z = FIXTURES / "zombies"


def test_mountinfo_hybrid_finds_v1_memory_and_unified() -> None:
    mounts, diags = cg.parse_mountinfo((Z / "hybrid/proc/self/mountinfo").read_text())
    assert not diags
    kinds = {m.mountpoint: (m.fstype, m.controllers) for m in mounts}
    assert kinds["/sys/fs/cgroup/memory"] == ("cgroup", ("memory",))
    assert kinds["/sys/fs/cgroup/systemd"] == ("cgroup", ("name=systemd",))
    assert kinds["/sys/fs/cgroup/unified"] == ("cgroup2", ())
    assert "/proc" not in kinds  # not a cgroup mount


def test_mountinfo_escapes_and_optional_fields() -> None:
    text = ("40 31 0:37 /sub /mnt/cg\\040mem rw,relatime shared:5 master:2 - cgroup cgroup "
            "rw,nosuid,memory,clone_children\n")
    mounts, diags = cg.parse_mountinfo(text)
    assert not diags
    assert mounts[0].mountpoint == "/mnt/cg mem"
    assert mounts[0].root == "/sub"
    assert mounts[0].controllers == ("memory",)


def test_proc_mounts_fallback() -> None:
    text = ("cgroup /sys/fs/cgroup/memory cgroup rw,nosuid,nodev,noexec,relatime,memory 0 0\n"
            "cgroup2 /sys/fs/cgroup/unified cgroup2 rw,nosuid,nodev,noexec,relatime 0 0\n"
            "proc /proc proc rw 0 0\n")
    mounts, _ = cg.parse_proc_mounts(text)
    layout = cg.detect_layout(mounts, "")
    assert (layout.kind, layout.memory, layout.memory_mount) == (
        "hybrid", "v1", "/sys/fs/cgroup/memory")


def test_detect_layout_each_host() -> None:
    hybrid, _ = cg.read_layout(Root(Z / "hybrid"))
    assert (hybrid.kind, hybrid.memory, hybrid.memory_mount, hybrid.v2_mount) == (
        "hybrid", "v1", "/sys/fs/cgroup/memory", "/sys/fs/cgroup/unified")
    v2, _ = cg.read_layout(Root(Z / "v2nested"))
    assert (v2.kind, v2.memory, v2.memory_mount) == ("v2", "v2", "/sys/fs/cgroup")
    v612, _ = cg.read_layout(Root(Z / "v612"))
    assert (v612.kind, v612.memory) == ("v2", "v2")


def test_hybrid_with_memory_on_unified() -> None:
    # cgroup_no_v1=memory on a hybrid host: v1 mounts exist, memory is on v2
    mounts, _ = cg.parse_mountinfo(
        "32 31 0:29 / /sys/fs/cgroup/cpu rw - cgroup cgroup rw,cpu\n"
        "41 31 0:38 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw\n")
    layout = cg.detect_layout(mounts, "cpuset memory pids")
    assert (layout.kind, layout.memory, layout.memory_mount) == (
        "hybrid", "v2", "/sys/fs/cgroup/unified")
    none = cg.detect_layout(mounts, "pids")
    assert none.memory is None


def test_proc_cgroups_rows_and_missing_memory_row() -> None:
    rows, diags = cg.parse_proc_cgroups((Z / "hybrid/proc/cgroups").read_text())
    assert not diags
    assert rows["memory"].num_cgroups == 49 and rows["memory"].hierarchy == 4
    rows612, diags = cg.parse_proc_cgroups((Z / "v612/proc/cgroups").read_text())
    assert not diags and "memory" not in rows612 and "pids" in rows612


def test_proc_cgroups_bad_rows_are_diagnosed() -> None:
    rows, diags = cg.parse_proc_cgroups("#h\nmemory 4 x 1\ncpu 1 2 1\ncpu 1 3 1\n")
    assert list(rows) == ["cpu"] and rows["cpu"].num_cgroups == 2
    assert len(diags) == 2


def test_cgroup_stat_old_and_612() -> None:
    old, d = cg.parse_cgroup_stat("nr_descendants 8\nnr_dying_descendants 57\n")
    assert (old.nr_descendants, old.nr_dying_descendants, old.subsys) == (8, 57, {})
    assert old.dying_memory() == 57 and not d
    new, d = cg.parse_cgroup_stat(
        (Z / "v612/sys/fs/cgroup/system.slice/sshd.service/cgroup.stat").read_text())
    assert new.nr_dying_descendants == 3 and new.dying_memory() == 0 and not d


def test_census_hybrid_fixture() -> None:
    root = Root(Z / "hybrid")
    layout, _ = cg.read_layout(root)
    res = cg.take_census(root, layout, now=100.0)
    c = res.census
    assert c is not None
    assert (c.kernel_count, c.live, c.dying, c.hierarchy, c.layout) == (49, 6, 43, "v1",
                                                                        "hybrid")
    assert c.stable and c.uptime_s == 324.81
    assert c.boot_id == "ce99e544-b9d9-455d-a5b1-83790e1aa6ff"
    assert res.tree is not None and set(res.tree.children["/process_api"]) == {
        "deb5b41d7193497e8929892aec42aefb", "baf717bfbf4028256200b4cad6966d48",
        "997020bb5aada6fbc78f8fe82d40a27c", "826d2935f52848610fb4e97967ed6b01"}


def test_census_v2_without_subsys_keys() -> None:
    root = Root(Z / "v2nested")
    layout, _ = cg.read_layout(root)
    c = cg.take_census(root, layout).census
    assert c is not None
    assert (c.live, c.dying, c.kernel_count) == (9, 57, 66)
    assert "nr_dying_descendants" in c.source
    assert c.proc_cgroups_count == 119  # /proc/cgroups kept as a cross-check


def test_census_612_no_memory_row_uses_subsys_memory() -> None:
    root = Root(Z / "v612")
    layout, _ = cg.read_layout(root)
    res = cg.take_census(root, layout)
    c = res.census
    assert c is not None
    assert (c.live, c.dying, c.kernel_count) == (5, 1838, 1843)
    assert "nr_subsys_memory" in c.source and c.proc_cgroups_count is None


def test_census_without_memory_controller(tmp_path: Path) -> None:
    (tmp_path / "proc/self").mkdir(parents=True)
    (tmp_path / "proc/self/mountinfo").write_text(
        "41 31 0:38 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n")
    (tmp_path / "sys/fs/cgroup").mkdir(parents=True)
    (tmp_path / "sys/fs/cgroup/cgroup.controllers").write_text("cpu pids\n")
    root = Root(tmp_path)
    layout, _ = cg.read_layout(root)
    res = cg.take_census(root, layout)
    assert res.census is None
    assert any("no memory controller" in d.message for d in res.diagnostics)


def test_locator_ranks_deepest_own_excess_first_v2nested() -> None:
    stats = cg.walk_cgroup_stats(Z / "v2nested/sys/fs/cgroup")
    assert len(stats) == 10
    locs = rank_locations(stats)
    assert locs[0].path.endswith("pod1b2c3d4e_5f60_4a7b_8c9d_0e1f2a3b4c5d.slice")
    assert locs[0].dying == 45 and locs[0].subtree_dying == 45
    assert [(loc.path, loc.dying) for loc in locs[1:]] == [
        ("/system.slice", 7), ("/kubepods.slice/kubepods-burstable.slice", 3),
        ("/kubepods.slice", 2)]
    assert sum(loc.dying for loc in locs) == 57  # every dying cgroup is placed once


def test_locator_uses_memory_specific_counts_612() -> None:
    locs = rank_locations(cg.walk_cgroup_stats(Z / "v612/sys/fs/cgroup"))
    assert [(loc.path, loc.dying) for loc in locs] == [
        ("/system.slice/ecs.service", 1830), ("/user.slice", 5), ("/system.slice", 3)]


def test_walk_live_counts_dirs_like_find(tmp_path: Path) -> None:
    for p in ("a/b/c", "a/d", "e"):
        (tmp_path / p).mkdir(parents=True)
    (tmp_path / "a/file").write_text("x")
    os.symlink(tmp_path / "a", tmp_path / "link")  # find -type d does not follow it
    tree = cg.walk_live(tmp_path)
    expected = sum(1 for _ in os.walk(tmp_path))
    assert tree.count == expected == 6
    assert set(tree.children["/a"]) == {"b", "d"}


def test_stat_probe_reads_root_files() -> None:
    root = Root(Z / "hybrid")
    layout, _ = cg.read_layout(root)
    costs, diags = cg.probe_stat_read(root, layout, reads=3)
    assert [c.file for c in costs] == ["memory.stat", "memory.numa_stat"]
    assert all(c.reads == 3 and c.median_ms <= c.max_ms for c in costs) and not diags


def test_snapshot_churn_lower_bound() -> None:
    prev = {"/": ("a", "b"), "/a": ("x1",), "/b": ()}
    cur = {"/": ("a", "b"), "/a": ("x2",), "/b": ("y",), "/b/y": ()}
    ch = snapshot_churn(prev, cur)
    assert (ch["/a"].created, ch["/a"].removed) == (1, 1)
    assert (ch["/b"].created, ch["/b"].removed) == (1, 0)
    assert "/" not in ch


def test_inotify_watcher_counts_mkdir_rmdir_per_parent(tmp_path: Path) -> None:
    (tmp_path / "agent").mkdir()
    (tmp_path / "quiet").mkdir()
    w = ChurnWatcher(tmp_path)
    assert w.start() is None
    try:
        for i in range(5):
            (tmp_path / "agent" / f"run-{i}").mkdir()
            (tmp_path / "agent" / f"run-{i}").rmdir()
        (tmp_path / "new").mkdir()
        import time

        deadline = time.monotonic() + 5
        got: dict = {}
        while time.monotonic() < deadline:
            for k, v in w.drain().items():
                c = got.setdefault(k, [0, 0])
                c[0] += v.created
                c[1] += v.removed
            if got.get("/agent") == [5, 5] and got.get("/") == [1, 0]:
                break
            time.sleep(0.05)
        assert got.get("/agent") == [5, 5]
        assert got.get("/") == [1, 0]
        assert "/quiet" not in got
    finally:
        w.stop()
    shutil.rmtree(tmp_path / "new")


def test_inotify_events_parse() -> None:
    import struct

    name = b"run-1\0\0\0"
    buf = struct.pack("iIII", 3, IN_CREATE | IN_ISDIR, 0, len(name)) + name
    evs, rest = parse_inotify_events(buf + buf[:7])
    assert rest == 7 and len(evs) == 1
    assert (evs[0].wd, evs[0].name, evs[0].mask & IN_ISDIR) == (3, "run-1", IN_ISDIR)


# --- properties: no input crashes a parser -----------------------------------------------

TEXT = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=600)
LINES = st.lists(st.one_of(
    st.sampled_from([
        "35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory",
        "41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw",
        "memory\t4\t49\t1", "#subsys_name\thierarchy\tnum_cgroups\tenabled",
        "nr_descendants 8", "nr_dying_subsys_memory 12", "cgroup /a cgroup rw,memory 0 0",
        " - ", "-", "",
    ]),
    TEXT), max_size=30).map("\n".join)


@settings(max_examples=300, deadline=None)
@given(st.one_of(TEXT, LINES, st.binary(max_size=400)))
def test_cgroup_parsers_never_raise(text: str | bytes) -> None:
    mounts, _ = cg.parse_mountinfo(text)
    cg.detect_layout(mounts, None)
    mounts2, _ = cg.parse_proc_mounts(text)
    cg.detect_layout(mounts2, "memory")
    rows, _ = cg.parse_proc_cgroups(text)
    assert all(r.num_cgroups >= 0 for r in rows.values())
    stat, _ = cg.parse_cgroup_stat(text)
    assert stat.nr_descendants is None or stat.nr_descendants >= 0


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=300))
def test_inotify_parser_never_raises(data: bytes) -> None:
    evs, rest = parse_inotify_events(data)
    assert sum(16 + len(e.name) for e in evs) <= len(data)
    assert 0 <= rest <= len(data)


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(
    st.lists(st.sampled_from("abc"), max_size=3).map(lambda p: "/" + "/".join(p)
                                                      if p else "/"),
    st.tuples(st.integers(0, 50), st.integers(0, 50)), max_size=12))
def test_locator_never_raises_and_places_at_most_the_root_total(
        tree: dict[str, tuple[int, int]]) -> None:
    from corescope.model.cgroups import CgroupStat

    stats = {p.replace("//", "/"): CgroupStat(a, b) for p, (a, b) in tree.items()}
    locs = rank_locations(stats, top=100)
    assert all(loc.dying > 0 for loc in locs)


def test_census_reader_gives_take_census(tmp_path: Path) -> None:
    """The recorder's reader (boot id once, /proc/cgroups kept open) gives the census
    take_census gives, on each fixture layout, and sees /proc/cgroups change."""
    for name in ("hybrid", "v2nested", "v612"):
        root = Root(Z / name)
        layout, _ = cg.read_layout(root)
        reader = cg.CensusReader(root, layout)
        try:
            got, want = reader.take(now=5.0).census, cg.take_census(root, layout, now=5.0).census
            assert got is not None and want is not None
            assert replace(got, walk_ms=0.0) == replace(want, walk_ms=0.0)  # walk_ms is timed
        finally:
            reader.close()
    shutil.copytree(Z / "hybrid", tmp_path / "r")
    root = Root(tmp_path / "r")
    layout, _ = cg.read_layout(root)
    reader = cg.CensusReader(root, layout)
    try:
        before = reader.take(now=1.0).census
        assert before is not None and (before.kernel_count, before.dying) == (49, 43)
        proc = tmp_path / "r/proc/cgroups"
        proc.write_text(proc.read_text().replace("memory\t4\t49\t1", "memory\t4\t52\t1"))
        after = reader.take(now=2.0).census
        assert after is not None and (after.kernel_count, after.live, after.dying) == (52, 6, 46)
        proc.write_text("not a cgroups table\n")  # no memory row now: no census, and why
        gone = reader.take(now=3.0)
        assert gone.census is None and any("/proc/cgroups" in d.message
                                           for d in gone.diagnostics)
    finally:
        reader.close()


def test_census_reader_live_uptime_is_proc_uptime() -> None:
    """On the live system the uptime is CLOCK_BOOTTIME, the clock /proc/uptime shows."""
    reader = cg.CensusReader(Root(), cg.CgroupLayout("none", None, None, "/", None, ()))
    try:
        a = float(Path("/proc/uptime").read_text().split()[0])
        up = reader.uptime()
        b = float(Path("/proc/uptime").read_text().split()[0])
        assert up is not None and a <= up <= b + 0.01
        assert reader.boot_id == Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    finally:
        reader.close()


def _v612_with(tmp: Path, old: str, new: str) -> Root:
    """The 6.12 host's tree with one line of its root cgroup.stat replaced."""
    shutil.copytree(Z / "v612", tmp / "v612", symlinks=True)
    stat = tmp / "v612/sys/fs/cgroup/cgroup.stat"
    text = stat.read_text()
    assert old in text
    stat.write_text(text.replace(old, new))
    return Root(tmp / "v612")


def test_census_off_when_a_count_line_is_unreadable_whatever_its_text(tmp_path: Path) -> None:
    """The dying count's line unreadable, printed after 80 blanks (the diagnostic quotes only
    the first 80 characters, so its text never names the key): no census, never 0 dying."""
    root = _v612_with(tmp_path, "nr_dying_subsys_memory 1838",
                      " " * 80 + "nr_dying_subsys_memory 1838x")
    stat, _ = cg.parse_cgroup_stat(root.read_text("/sys/fs/cgroup/cgroup.stat"))
    assert stat.unreadable == {"nr_dying_subsys_memory": 9}
    layout, _ = cg.read_layout(root)
    res = cg.take_census(root, layout)
    assert res.census is None
    assert any("nr_dying_subsys_memory" in d.message and "unreadable line" in d.message
               for d in res.diagnostics), res.diagnostics


def test_census_kept_when_an_uncounted_key_named_like_a_count_is_unreadable(
        tmp_path: Path) -> None:
    """An unreadable line of a key the census does not count, whose name begins with one it
    does (a later kernel's `nr_subsys_memory_peak 7 (max)`): the counts are all there."""
    root = _v612_with(tmp_path, "nr_subsys_pids 5", "nr_subsys_memory_peak 7 (max)")
    stat, _ = cg.parse_cgroup_stat(root.read_text("/sys/fs/cgroup/cgroup.stat"))
    assert stat.unreadable == {"nr_subsys_memory_peak": 5}
    layout, _ = cg.read_layout(root)
    c = cg.take_census(root, layout).census
    assert c is not None and (c.live, c.dying) == (5, 1838)
