"""Memory-cgroup census: layout detection, /proc/cgroups, cgroup.stat, the live-tree walk.

Parsers are pure and total (text in → records + diagnostics out, never raise on content).
The live readers take a `Root`, so a captured tree replays through the same code.

The census stays cheap on a node with 70,000 zombies: dying cgroups have no directory, so the
walk only visits live ones (a few hundred), and it lists directory entries with their d_type,
never opening `memory.stat` across the tree (that is what makes kubelet expensive).
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from corescope.model.cgroups import (
    CgroupLayout,
    CgroupMount,
    CgroupStat,
    MemcgCensus,
    ProcCgroupsRow,
    StatReadCost,
)
from corescope.model.common import Diagnostic
from corescope.rootfs import KeptFile, Root, read_capped
from corescope.sources.boot import read_boot_id
from corescope.sources.text import as_text, count_of

# Mount flags that can appear among a cgroup v1 mount's options and are not controllers.
_GENERIC_OPTS = frozenset({
    "rw", "ro", "relatime", "noatime", "nodiratime", "strictatime", "lazytime", "nosuid",
    "nodev", "noexec", "sync", "async", "dirsync", "mand", "nomand", "silent", "loud",
    "clone_children", "noprefix", "xattr", "cpuset_v2_mode", "none", "all",
    "favordynmods", "nsdelegate", "memory_localevents", "memory_recursiveprot",
    "memory_hugetlb_accounting", "memory_pressure", "pids_localevents",
})
_OCTAL = re.compile(r"\\([0-7]{3})")


def _unescape(path: str) -> str:
    """Mount paths escape space, tab, newline and backslash as \\ooo."""
    return _OCTAL.sub(lambda m: chr(int(m.group(1), 8)), path)


def _controllers(options: Iterable[str]) -> tuple[str, ...]:
    out: list[str] = []
    for opt in options:
        if opt.startswith("name=") or (opt and "=" not in opt and opt not in _GENERIC_OPTS):
            out.append(opt)
    return tuple(out)


def parse_mountinfo(text: str | bytes, source: str = "/proc/self/mountinfo"
                    ) -> tuple[list[CgroupMount], list[Diagnostic]]:
    """The cgroup and cgroup2 mounts of a mountinfo file."""
    mounts: list[CgroupMount] = []
    diags: list[Diagnostic] = []
    for lineno, line in enumerate(as_text(text).splitlines(), 1):
        if not line.strip():
            continue
        fields = line.split()
        try:
            sep = fields.index("-", 6)
        except ValueError:
            diags.append(Diagnostic(source, f"no ' - ' separator: {line[:80]!r}", lineno))
            continue
        if len(fields) < sep + 3:
            diags.append(Diagnostic(source, f"truncated line: {line[:80]!r}", lineno))
            continue
        fstype = fields[sep + 1]
        if fstype not in ("cgroup", "cgroup2"):
            continue
        super_opts = fields[sep + 3].split(",") if len(fields) > sep + 3 else []
        mounts.append(CgroupMount(
            mountpoint=_unescape(fields[4]), fstype=fstype, root=_unescape(fields[3]),
            controllers=_controllers(super_opts) if fstype == "cgroup" else (),
        ))
    return mounts, diags


def parse_proc_mounts(text: str | bytes, source: str = "/proc/mounts"
                      ) -> tuple[list[CgroupMount], list[Diagnostic]]:
    """The cgroup mounts of /proc/mounts (fallback when mountinfo is unreadable)."""
    mounts: list[CgroupMount] = []
    diags: list[Diagnostic] = []
    for lineno, line in enumerate(as_text(text).splitlines(), 1):
        fields = line.split()
        if not fields:
            continue
        if len(fields) < 4:
            diags.append(Diagnostic(source, f"truncated line: {line[:80]!r}", lineno))
            continue
        fstype = fields[2]
        if fstype not in ("cgroup", "cgroup2"):
            continue
        mounts.append(CgroupMount(
            mountpoint=_unescape(fields[1]), fstype=fstype,
            controllers=_controllers(fields[3].split(",")) if fstype == "cgroup" else (),
        ))
    return mounts, diags


def _pick(mounts: list[CgroupMount]) -> CgroupMount | None:
    """Of several mounts of one hierarchy (bind mounts), prefer one showing its root."""
    if not mounts:
        return None
    return sorted(mounts, key=lambda m: (m.root != "/", len(m.mountpoint)))[0]


def detect_layout(mounts: list[CgroupMount], v2_controllers: str | None) -> CgroupLayout:
    """v1, v2 or hybrid, and where memory is. `v2_controllers` is the text of the v2 root's
    cgroup.controllers (None when there is no v2 mount or it could not be read)."""
    v1 = [m for m in mounts if m.fstype == "cgroup"]
    v2 = _pick([m for m in mounts if m.fstype == "cgroup2"])
    kind = "hybrid" if v1 and v2 else "v1" if v1 else "v2" if v2 else "none"
    v1_pairs: dict[str, str] = {}
    for m in sorted(v1, key=lambda m: (m.root != "/", len(m.mountpoint))):
        for c in m.controllers:
            v1_pairs.setdefault(c, m.mountpoint)
    mem_v1 = _pick([m for m in v1 if "memory" in m.controllers])
    if mem_v1 is not None:
        return CgroupLayout(kind, "v1", mem_v1.mountpoint, mem_v1.root,
                            v2.mountpoint if v2 else None, tuple(sorted(v1_pairs.items())))
    v2_has_memory = False
    if v2 is not None:
        if v2_controllers is not None:
            v2_has_memory = "memory" in v2_controllers.split()
        else:
            v2_has_memory = kind == "v2"  # unreadable controllers on a pure v2 host: assume
    if v2 is not None and v2_has_memory:
        return CgroupLayout(kind, "v2", v2.mountpoint, v2.root, v2.mountpoint,
                            tuple(sorted(v1_pairs.items())))
    return CgroupLayout(kind, None, None, "/", v2.mountpoint if v2 else None,
                        tuple(sorted(v1_pairs.items())))


def parse_proc_cgroups(text: str | bytes, source: str = "/proc/cgroups"
                       ) -> tuple[dict[str, ProcCgroupsRow], list[Diagnostic]]:
    """Rows of /proc/cgroups by controller. 6.12+ kernels without memcg v1 have no memory row;
    that is not an error here (the caller falls back to cgroup.stat)."""
    rows: dict[str, ProcCgroupsRow] = {}
    diags: list[Diagnostic] = []
    for lineno, line in enumerate(as_text(text).splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        parts = line.split()
        nums = [count_of(p) for p in parts[1:4]]
        if len(parts) < 4 or None in nums:  # not digits, or past what a store holds
            diags.append(Diagnostic(source, f"unreadable row: {line[:80]!r}", lineno))
            continue
        name = parts[0]
        if name in rows:
            diags.append(Diagnostic(source, f"duplicate row for {name!r}", lineno))
            continue
        rows[name] = ProcCgroupsRow(name, int(parts[1]), int(parts[2]), parts[3] != "0")
    return rows, diags


def parse_cgroup_stat(text: str | bytes, source: str = "cgroup.stat"
                      ) -> tuple[CgroupStat, list[Diagnostic]]:
    """A v2 cgroup.stat: nr_descendants, nr_dying_descendants, and (6.12+)
    nr_subsys_<ctrl> / nr_dying_subsys_<ctrl>. Unknown keys are ignored."""
    vals: dict[str, int] = {}
    sub: dict[str, int] = {}
    dying: dict[str, int] = {}
    unreadable: dict[str, int] = {}
    diags: list[Diagnostic] = []
    for lineno, line in enumerate(as_text(text).splitlines(), 1):
        parts = line.split()
        if not parts:
            continue
        value = count_of(parts[1]) if len(parts) == 2 else None
        if value is None:  # not digits, or past what a store holds
            diags.append(Diagnostic(source, f"unreadable line: {line[:80]!r}", lineno))
            unreadable.setdefault(parts[0], lineno)
            continue
        key = parts[0]
        if key.startswith("nr_dying_subsys_"):
            dying[key[len("nr_dying_subsys_"):]] = value
        elif key.startswith("nr_subsys_"):
            sub[key[len("nr_subsys_"):]] = value
        else:
            vals[key] = value
    return CgroupStat(vals.get("nr_descendants"), vals.get("nr_dying_descendants"), sub,
                      dying, unreadable), diags


# ---------------------------------------------------------------------------------------------
# live readers


def read_layout(root: Root) -> tuple[CgroupLayout, list[Diagnostic]]:
    diags: list[Diagnostic] = []
    try:
        mounts, d = parse_mountinfo(root.read_text("/proc/self/mountinfo"))
    except OSError as exc:
        diags.append(Diagnostic("/proc/self/mountinfo", f"unreadable ({exc}); using /proc/mounts"))
        try:
            mounts, d = parse_proc_mounts(root.read_text("/proc/mounts"))
        except OSError as exc2:
            diags.append(Diagnostic("/proc/mounts", f"unreadable: {exc2}"))
            mounts, d = [], []
    diags += d
    v2 = _pick([m for m in mounts if m.fstype == "cgroup2"])
    controllers = None
    if v2 is not None:
        try:
            controllers = root.read_text(v2.mountpoint + "/cgroup.controllers")
        except OSError:
            controllers = None
    return detect_layout(mounts, controllers), diags


@dataclass
class LiveTree:
    """The live directories of one hierarchy: how many, and each one's child names."""

    count: int = 0
    children: dict[str, tuple[str, ...]] = field(default_factory=dict)
    errors: int = 0


def _iter_dirs(top: Path) -> Iterator[tuple[str, str, tuple[str, ...]] | None]:
    """(path, path relative to `top`, child directory names) for every live directory under
    `top`, `top` included; None for one that could not be listed. Directories only, from
    d_type: no stat, no file opened."""
    stack: list[tuple[str, str]] = [(str(top), "/")]
    while stack:
        path, rel = stack.pop()
        kids: list[str] = []
        try:
            with os.scandir(path) as it:
                for e in it:
                    try:
                        if e.is_dir(follow_symlinks=False):
                            kids.append(e.name)
                    except OSError:
                        continue
        except FileNotFoundError:
            continue  # removed between being listed and being walked (rmdir race)
        except OSError:
            yield None
            continue
        yield path, rel, tuple(kids)
        base = "" if rel == "/" else rel
        for k in kids:
            stack.append((path + "/" + k, base + "/" + k))


def _add(tree: LiveTree, item: tuple[str, str, tuple[str, ...]] | None) -> None:
    if item is None:
        tree.errors += 1
    else:
        tree.count += 1
        tree.children[item[1]] = item[2]


def walk_live(top: Path) -> LiveTree:
    """Every live cgroup directory under `top`, `top` included (what `find -type d` counts)."""
    tree = LiveTree()
    for item in _iter_dirs(top):
        _add(tree, item)
    return tree


def uptime_s(root: Root) -> float | None:
    try:
        return float(root.read_text("/proc/uptime").split()[0])
    except (OSError, ValueError, IndexError):
        return None


def _memory_row(read: Callable[[], str]) -> tuple[ProcCgroupsRow | None, list[Diagnostic]]:
    """/proc/cgroups' memory row, `read` giving the file's text (raising OSError)."""
    try:
        rows, diags = parse_proc_cgroups(read())
    except OSError as exc:
        return None, [Diagnostic("/proc/cgroups", f"unreadable ({exc.strerror or exc})")]
    return rows.get("memory"), diags


# More memory cgroups than this cannot exist (each takes tens of KB of kernel memory): a
# larger count is a corrupt or hostile file, not a leak.
PLAUSIBLE_MAX = 1 << 32


def _implausible(kernel: int | None, live: int | None, dying: int | None) -> str | None:
    """Why these counts cannot be a real census, or None when they can."""
    if live is not None and live < 1:
        return f"{live} live memory cgroups (the root alone is one)"
    for name, v in (("kernel", kernel), ("live", live), ("dying", dying)):
        if v is not None and not 0 <= v <= PLAUSIBLE_MAX:
            return f"implausible {name} count {v}"
    if kernel is not None and live is not None and kernel < live:
        return (f"the kernel count {kernel} is below the {live} live directories: the count "
                "does not describe this hierarchy")
    return None


# the cgroup.stat keys a v2 census counts with (v2_memcg_counts)
_COUNT_KEYS = ("nr_subsys_memory", "nr_dying_subsys_memory", "nr_descendants",
               "nr_dying_descendants")


def unreadable_counts(stat: CgroupStat) -> list[str]:
    """The count keys whose cgroup.stat line could not be read (not digits, or past what a
    store holds): a census has no such count, never a count of 0 in its place."""
    return [k for k in stat.unreadable if k in _COUNT_KEYS]


def _off(diags: list[Diagnostic], why: str) -> CensusResult:
    """No census: the reason goes where doctor and zombies report an OFF sensor."""
    return CensusResult(None, None, [*diags, Diagnostic("census", why)])


@dataclass
class CensusResult:
    census: MemcgCensus | None
    tree: LiveTree | None = None
    diagnostics: list[Diagnostic] = field(default_factory=list)


def take_census(root: Root, layout: CgroupLayout, now: float | None = None) -> CensusResult:
    """Count memory cgroups now. None census when this host has no memory controller."""
    # "" when unknown: MemcgCensus.boot_id is a plain string
    return _take(root, layout, time.time() if now is None else now, read_boot_id(root) or "",
                 uptime_s(root), lambda: root.read_text("/proc/cgroups"))


class CensusReader:
    """`take_census` for a recorder that counts every few seconds, at less cost each time:
    the boot id is read once (it cannot change while the process runs), the live system's
    uptime is CLOCK_BOOTTIME (the clock /proc/uptime prints) rather than a file, and
    /proc/cgroups, read twice per v1 census, stays open (one pread each time). The census is
    the same as `take_census` gives."""

    def __init__(self, root: Root, layout: CgroupLayout) -> None:
        self.root, self.layout = root, layout
        self.boot_id = read_boot_id(root) or ""
        self._cgroups: KeptFile | None = None

    def _read_cgroups(self) -> str:
        if self._cgroups is None:
            self._cgroups = KeptFile(self.root.path("/proc/cgroups"))
        try:
            return self._cgroups.read().decode(errors="replace")
        except OSError:
            self.close()  # reopened next time
            raise

    def uptime(self) -> float | None:
        if self.root.is_live:
            # /proc/uptime prints this clock truncated to hundredths
            return int(time.clock_gettime(time.CLOCK_BOOTTIME) * 100) / 100
        return uptime_s(self.root)

    def take(self, now: float | None = None) -> CensusResult:
        return _take(self.root, self.layout, time.time() if now is None else now, self.boot_id,
                     self.uptime(), self._read_cgroups)

    def close(self) -> None:
        if self._cgroups is not None:
            self._cgroups.close()
            self._cgroups = None


def _take(root: Root, layout: CgroupLayout, now: float, bid: str, up: float | None,
          read_cgroups: Callable[[], str]) -> CensusResult:
    if layout.memory == "v1" and layout.memory_mount:
        return _census_v1(root, layout, now, bid, up, read_cgroups)
    if layout.memory == "v2" and layout.memory_mount:
        return _census_v2(root, layout, now, bid, up, read_cgroups)
    row, diags = _memory_row(read_cgroups)
    why = ("no memory controller mounted (no v1 memory hierarchy and none enabled in the v2 "
           "root's cgroup.controllers)")
    if row is not None and not row.enabled:
        why = "the memory controller is disabled (cgroup_disable=memory)"
    elif row is not None and (row.hierarchy > 0 or not root.is_live) and \
            _implausible(row.num_cgroups, None, None) is None:
        # the kernel counts memory cgroups whether or not this mount table shows their
        # hierarchy (a replayed tree without /sys/fs/cgroup, a container's view): the count
        # stands, the live directories cannot be walked
        hier = "v1" if row.hierarchy > 0 else "v2"
        where = f"hierarchy {row.hierarchy}" if row.hierarchy > 0 else "the v2 hierarchy"
        note = f"memory ({where}) is not mounted here: live and dying unknown"
        return CensusResult(MemcgCensus(
            t=now, layout=layout.kind, hierarchy=hier, kernel_count=row.num_cgroups, live=None,
            dying=None, source=f"/proc/cgroups memory num_cgroups; {note}", boot_id=bid,
            uptime_s=up, proc_cgroups_count=row.num_cgroups,
        ), None, [*diags, Diagnostic("census", note)])
    return CensusResult(None, None, [*diags, Diagnostic("census", why)])


def _census_v1(root: Root, layout: CgroupLayout, now: float, bid: str, up: float | None,
               read_cgroups: Callable[[], str]) -> CensusResult:
    assert layout.memory_mount is not None
    top = root.path(layout.memory_mount)
    diags: list[Diagnostic] = []
    try:  # the walk skips what it cannot list; the top itself must be listable
        with os.scandir(top):
            pass
    except OSError as exc:
        return _off(diags, f"cannot list the memory hierarchy at {layout.memory_mount}: "
                    f"{exc.strerror or exc}")
    # The kernel count can move while we walk; read it on both sides and retry so the
    # subtraction compares numbers from the same moment.
    row_before = row_after = None
    tree = LiveTree()
    stable = False
    walk_ms = 0.0
    for _ in range(3):
        row_before, d1 = _memory_row(read_cgroups)
        t0 = time.perf_counter()
        tree = walk_live(top)
        walk_ms = (time.perf_counter() - t0) * 1000.0
        row_after, d2 = _memory_row(read_cgroups)
        diags = d1 + d2
        if (row_before and row_after and row_before.num_cgroups == row_after.num_cgroups):
            stable = True
            break
    if tree.errors:
        diags.append(Diagnostic(str(top), f"{tree.errors} directories unreadable; live "
                                "count is a lower bound"))
    if layout.memory_mount_root != "/":
        diags.append(Diagnostic(str(top), f"the memory hierarchy is mounted from "
                                f"{layout.memory_mount_root!r}, not its root: live cgroups "
                                "outside this view count as dying"))
    if row_after is None:
        unreadable = [d.message for d in diags if d.source == "/proc/cgroups"]
        return _off(diags, f"/proc/cgroups {unreadable[0] if unreadable else 'has no memory row'}"
                    " although memory is mounted as v1: the kernel's count of memory cgroups "
                    "is unknown")
    kernel = row_after.num_cgroups
    live = tree.count
    why = _implausible(kernel, live, None)
    if why is not None:
        return _off(diags, f"/proc/cgroups or {layout.memory_mount}: {why}")
    dying = kernel - live
    census = MemcgCensus(
        t=now, layout=layout.kind, hierarchy="v1", kernel_count=kernel, live=live,
        dying=dying, source=f"/proc/cgroups memory num_cgroups - live dirs under "
        f"{layout.memory_mount}", walk_ms=walk_ms, boot_id=bid, uptime_s=up, stable=stable,
        proc_cgroups_count=kernel,
    )
    return CensusResult(census, tree, diags)


def v2_memcg_counts(stat: CgroupStat) -> tuple[int, int, str] | None:
    """(live, dying, how) memcgs at and below a v2 root from its cgroup.stat: the memory
    controller's own counts on 6.12+, else every controller's (an upper bound); None when the
    file holds neither."""
    if "memory" in stat.subsys:
        # "at and beneath": the root is included
        return (stat.subsys["memory"], stat.dying_subsys.get("memory", 0),
                "root cgroup.stat nr_subsys_memory + nr_dying_subsys_memory")
    if stat.nr_descendants is not None and stat.nr_dying_descendants is not None:
        return (stat.nr_descendants + 1, stat.nr_dying_descendants,
                "root cgroup.stat nr_descendants + nr_dying_descendants (cgroups of any "
                "controller: this kernel has no per-controller count before 6.12)")
    return None


def _census_v2(root: Root, layout: CgroupLayout, now: float, bid: str, up: float | None,
               read_cgroups: Callable[[], str]) -> CensusResult:
    assert layout.memory_mount is not None
    diags: list[Diagnostic] = []
    row, d = _memory_row(read_cgroups)
    diags += d
    t0 = time.perf_counter()
    try:
        stat, d = parse_cgroup_stat(root.read_text(layout.memory_mount + "/cgroup.stat"),
                                    layout.memory_mount + "/cgroup.stat")
        diags += d
    except OSError as exc:
        diags.append(Diagnostic(layout.memory_mount + "/cgroup.stat", f"unreadable: {exc}"))
        return CensusResult(None, None, diags)
    bad = unreadable_counts(stat)
    if bad:
        return _off(diags, f"{layout.memory_mount}/cgroup.stat:{stat.unreadable[bad[0]]}: "
                           f"unreadable line for {bad[0]}, a count the census needs")
    walk_ms = (time.perf_counter() - t0) * 1000.0
    counts = v2_memcg_counts(stat)
    if counts is None:
        diags.append(Diagnostic("cgroup.stat", "no nr_descendants/nr_dying_descendants"))
        return CensusResult(None, None, diags)
    live, dying, source = counts
    if layout.memory_mount_root != "/":
        source += f" (subtree {layout.memory_mount_root} only)"
    why = _implausible(None, live, dying)
    if why is not None:
        return _off(diags, f"{layout.memory_mount}/cgroup.stat: {why}")
    census = MemcgCensus(
        t=now, layout=layout.kind, hierarchy="v2", kernel_count=(live or 0) + dying,
        live=live, dying=dying, source=source, walk_ms=walk_ms, boot_id=bid, uptime_s=up,
        stable=True, proc_cgroups_count=row.num_cgroups if row else None,
    )
    return CensusResult(census, None, diags)


def walk_v2(top: Path) -> tuple[dict[str, CgroupStat], LiveTree]:
    """cgroup.stat of every live v2 cgroup (one small file each), keyed by relative path,
    and the live tree the same walk saw (for churn by snapshot where inotify is missing)."""
    out: dict[str, CgroupStat] = {}
    tree = LiveTree()
    for item in _iter_dirs(top):
        _add(tree, item)
        if item is None:
            continue
        try:
            out[item[1]], _ = parse_cgroup_stat(read_capped(item[0] + "/cgroup.stat", 1 << 16))
        except OSError:
            continue  # removed meanwhile, or not readable: its children are still walked
    return out, tree


def walk_cgroup_stats(top: Path) -> dict[str, CgroupStat]:
    """cgroup.stat of every live v2 cgroup, keyed by relative path."""
    return walk_v2(top)[0]


def stat_files(root: Root, layout: CgroupLayout) -> list[tuple[str, Path]]:
    """The root memory stat files a stats collector reads: memory.stat, and memory.numa_stat
    where present (v1 always; v2 root on recent kernels)."""
    if not layout.memory_mount:
        return []
    base = root.path(layout.memory_mount)
    return [(name, base / name) for name in ("memory.stat", "memory.numa_stat")
            if (base / name).exists()]


def probe_stat_read(root: Root, layout: CgroupLayout, reads: int = 5, now: float | None = None,
                    dying: int | None = None) -> tuple[list[StatReadCost], list[Diagnostic]]:
    """Median wall time of reading each root stat file in full, over `reads` reads."""
    now = time.time() if now is None else now
    out: list[StatReadCost] = []
    diags: list[Diagnostic] = []
    for name, path in stat_files(root, layout):
        times: list[float] = []
        for _ in range(max(1, reads)):
            t0 = time.perf_counter()
            try:
                read_capped(path)  # what a stats collector does: the whole file
            except OSError as exc:
                diags.append(Diagnostic(str(path), f"unreadable: {exc}"))
                break
            times.append((time.perf_counter() - t0) * 1000.0)
        if times:
            times.sort()
            out.append(StatReadCost(now, name, times[len(times) // 2], times[-1], len(times),
                                    dying))
    return out, diags
