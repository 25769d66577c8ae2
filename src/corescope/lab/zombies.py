"""Real dying memory cgroups on the real kernel, all under a `corescope-lab` parent.

A dying memcg is one that was removed while something is still charged to it. Here that
something is one page of page cache: a process moved into the cgroup writes a small file
(the page is charged to the cgroup), exits, and the cgroup is removed. The kernel keeps the
memcg until the file is deleted (or the cache dropped). `clean` does that.

Only cgroups under `<memory mount>/corescope-lab` and files under
`/var/tmp/corescope-lab` are ever created or removed. Everything here needs root.

/var/tmp is world-writable, so the files directory is only used when it is a real directory
(no symlink) owned by us and writable by nobody else, and the files in it are created with
O_EXCL|O_NOFOLLOW: as root, following a link someone else planted there would let them
choose what gets written or deleted.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import signal
import stat
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from corescope.errors import CorescopeError
from corescope.lab.hotcore import set_process_name
from corescope.model.cgroups import LAB_NAME
from corescope.rootfs import Root
from corescope.sources.cgroups import read_layout

FILES = Path("/var/tmp") / LAB_NAME  # default; the lab functions take `files_dir` instead
PIDFILE_NAME = "crashloop.pid"
PAGE = b"corescope-lab: this page pins a memory cgroup\n".ljust(4096, b".")


class LabError(CorescopeError, RuntimeError):
    """The lab cannot run here; the message says why."""


@dataclass(frozen=True)
class LabPaths:
    mount: Path  # the memory hierarchy's mount
    version: str  # "v1" | "v2"

    @property
    def base(self) -> Path:
        return self.mount / LAB_NAME


def lab_paths(root: Root | None = None) -> LabPaths:
    root = root or Root()
    layout, _ = read_layout(root)
    if layout.memory is None or layout.memory_mount is None:
        raise LabError(f"no memory controller mounted (layout {layout.kind}): cannot create "
                       "memory cgroups")
    return LabPaths(root.path(layout.memory_mount), layout.memory)


def lab_parent(paths: LabPaths | None = None) -> Path:
    """The lab's own parent cgroup (corescope-lab), created if missing: the memcg walker
    reads its memory.stat, whose hierarchical totals walk every memcg under it, dying ones
    included."""
    paths = paths or lab_paths()
    paths.base.mkdir(exist_ok=True)
    return paths.base


def _ensure_parent(paths: LabPaths, sub: str) -> Path:
    """corescope-lab/<sub>, with memory delegated down on v2."""
    base = paths.base
    base.mkdir(exist_ok=True)
    parent = base / sub
    parent.mkdir(exist_ok=True)
    if paths.version == "v2":
        # children only get a memory controller if every ancestor enables it for them; the
        # root is not ours to change, so it must already delegate memory
        try:
            rootctl = (paths.mount / "cgroup.subtree_control").read_text().split()
        except OSError:
            rootctl = []
        if "memory" not in rootctl:
            raise LabError(f"{paths.mount} does not enable memory for its children "
                           "(cgroup.subtree_control); the lab will not change the root")
        for d in (base, parent):
            try:
                (d / "cgroup.subtree_control").write_text("+memory")
            except OSError as exc:
                raise LabError(f"cannot enable memory in {d}/cgroup.subtree_control: {exc}")\
                    from exc
    return parent


@contextmanager
def _signals_raise() -> Iterator[None]:
    """SIGTERM/SIGHUP raise like Ctrl-C, so `finally` blocks clean up."""
    def handler(signum: int, frame: object) -> None:
        raise KeyboardInterrupt(f"signal {signum}")

    old = {s: signal.signal(s, handler) for s in (signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, h)


def _rmdir(path: Path, tries: int = 50) -> bool:
    """rmdir a cgroup; EBUSY right after its last task exited is retried briefly."""
    for _ in range(tries):
        try:
            os.rmdir(path)
            return True
        except FileNotFoundError:
            return True
        except OSError as exc:
            if exc.errno != errno.EBUSY:
                raise
            time.sleep(0.01)
    return False


def _check_private_dir(path: Path) -> None:
    """Refuse `path` unless it is a real directory (lstat: not a symlink) owned by our euid
    that neither group nor others may write. With that (and /var/tmp's sticky bit) nobody
    else can add, swap or remove entries under it."""
    try:
        st = os.lstat(path)
    except OSError as exc:
        raise LabError(f"cannot stat the lab's file directory {path}: {exc.strerror}") from exc
    if not stat.S_ISDIR(st.st_mode):  # lstat: a symlink to a directory is refused too
        raise LabError(f"{path} is not a plain directory (a symlink or a file); refusing to "
                       "use it: remove it and rerun")
    if st.st_uid != os.geteuid():
        raise LabError(f"{path} is owned by uid {st.st_uid}, not by us (uid {os.geteuid()}); "
                       "refusing to use it (someone else may have planted it): remove it and "
                       "rerun")
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise LabError(f"{path} is writable by group or others (mode "
                       f"{stat.S_IMODE(st.st_mode):o}); refusing to use it: remove it and rerun")


def _private_dir(path: Path) -> Path:
    """Create `path` 0700 unless it exists, then check it is ours (_check_private_dir).
    Not mkdir(parents=True, exist_ok=True): that accepts a directory anyone pre-created."""
    with contextlib.suppress(FileExistsError):
        os.mkdir(path, 0o700)
    _check_private_dir(path)
    return path


def _existing_private_dir(path: Path) -> bool:
    """False when `path` does not exist; True when it is ours; LabError when it is not."""
    if not os.path.lexists(path):
        return False
    _check_private_dir(path)
    return True


def _create_file(path: Path, data: bytes) -> None:
    """Write a new file that must not exist yet and must not be a link: the names here are
    predictable, so O_EXCL|O_NOFOLLOW keeps a planted file or symlink from being used."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                 0o600)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)


def _spawn_in(cgroup: Path, file: Path, lifetime_s: float = 0.0, exit_code: int = 0,
              comm: str = "corescope-lab") -> int:
    """Fork a process that joins `cgroup`, writes one page to `file`, lives `lifetime_s`,
    and exits with `exit_code`. Returns its pid."""
    pid = os.fork()
    if pid:
        return pid
    code = 1
    try:  # the child: nothing here may return into the parent's code
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.signal(signal.SIGHUP, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        set_process_name(comm)
        with open(cgroup / "cgroup.procs", "w") as f:
            f.write(str(os.getpid()))
        _create_file(file, PAGE)
        if lifetime_s > 0:
            time.sleep(lifetime_s)
        code = exit_code
    except BaseException:
        code = 2
    finally:
        os._exit(code)


def _reap(pid: int) -> int:
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status)


def make_zombies(count: int, paths: LabPaths | None = None,
                 progress: Callable[[int], None] | None = None,
                 files_dir: Path | None = None) -> int:
    """Create `count` dying memcgs under corescope-lab/zombies. Returns how many."""
    paths = paths or lab_paths()
    # the files directory first: refused before any cgroup is made
    files = _private_dir(_private_dir(files_dir or FILES) / "zombies")
    parent = _ensure_parent(paths, "zombies")
    tag = f"{os.getpid()}-{int(time.time())}"
    made = 0
    pid: int | None = None
    cgroup: Path | None = None
    with _signals_raise():
        try:
            for i in range(count):
                cgroup = parent / f"z-{tag}-{i}"
                os.mkdir(cgroup)
                pid = _spawn_in(cgroup, files / f"z-{tag}-{i}")
                code = _reap(pid)
                pid = None
                if code != 0:
                    raise LabError(f"the process in {cgroup} failed (exit {code})")
                if not _rmdir(cgroup):
                    raise LabError(f"{cgroup} stayed busy after its process exited")
                cgroup = None
                made += 1
                if progress is not None and made % 1000 == 0:
                    progress(made)
        finally:
            if pid is not None:
                _kill_and_reap(pid)
            if cgroup is not None and cgroup.exists():
                _rmdir(cgroup)
    return made


def _kill_and_reap(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, 0)


@dataclass
class CrashloopResult:
    restarts: int
    seconds: float
    parent: str


def crashloop(interval_s: float, duration_s: float, paths: LabPaths | None = None,
              on_restart: Callable[[int], None] | None = None,
              files_dir: Path | None = None) -> CrashloopResult:
    """An "agent" that crashes and is restarted, each time in a fresh child cgroup under
    corescope-lab/agent, the way a runtime starts each container attempt. Each attempt writes
    its state file (one page), lives half the interval, then crashes (exit 1); the
    supervisor removes its cgroup and waits the other half before restarting it."""
    paths = paths or lab_paths()
    top = _private_dir(files_dir or FILES)
    files = _private_dir(top / "agent")
    pidfile = top / PIDFILE_NAME
    parent = _ensure_parent(paths, "agent")
    _write_pidfile(pidfile)
    tag = f"{os.getpid()}-{int(time.time())}"
    start = time.monotonic()
    n = 0
    pid: int | None = None
    cgroup: Path | None = None
    with _signals_raise():
        try:
            while time.monotonic() - start < duration_s:
                n += 1
                cgroup = parent / f"run-{tag}-{n}"
                os.mkdir(cgroup)
                pid = _spawn_in(cgroup, files / f"run-{tag}-{n}.state", interval_s / 2,
                                exit_code=1, comm="corescope-agent")
                _reap(pid)
                pid = None
                _rmdir(cgroup)
                cgroup = None
                if on_restart is not None:
                    on_restart(n)
                time.sleep(interval_s / 2)  # the runtime's restart delay
        finally:
            if pid is not None:
                _kill_and_reap(pid)
            if cgroup is not None and cgroup.exists():
                _rmdir(cgroup)
            try:
                if pidfile.read_text().strip() == str(os.getpid()):
                    pidfile.unlink()
            except OSError:
                pass
    return CrashloopResult(n, time.monotonic() - start, "/" + LAB_NAME + "/agent")


def _write_pidfile(pidfile: Path) -> None:
    """Our pid, in the checked directory. A stale pidfile (a crashloop killed with -9) is
    replaced: unlink then O_EXCL|O_NOFOLLOW, never writing through a link."""
    with contextlib.suppress(FileNotFoundError):
        os.unlink(pidfile)
    _create_file(pidfile, str(os.getpid()).encode())


@dataclass
class CleanResult:
    cgroups_removed: int
    processes_killed: int
    files_removed: int
    dropped_caches: bool
    stopped_crashloop: int | None
    files_refused: str | None = None  # why the files directory was left alone (not ours)


def _stop_crashloop(pidfile: Path) -> int | None:
    """SIGTERM a running `lab crashloop` (its pidfile), after checking it is one."""
    try:
        pid = int(pidfile.read_text().strip())
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except (OSError, ValueError):
        return None
    if b"corescope" not in cmdline or b"crashloop" not in cmdline:
        return None
    os.kill(pid, signal.SIGTERM)
    for _ in range(100):
        if not Path(f"/proc/{pid}").exists():
            break
        time.sleep(0.05)
    return pid


def clean(drop_caches: bool = False, paths: LabPaths | None = None,
          files_dir: Path | None = None) -> CleanResult:
    """Stop a running crashloop, kill anything left in lab cgroups, remove them bottom-up,
    delete the pinning files, and optionally drop the page/dentry/inode caches.

    A files directory that is not ours (see _check_private_dir) is neither read nor removed
    (its pidfile could name any process, rmtree could be steered): the cgroups are still
    cleaned and `files_refused` says why the files were not."""
    top = files_dir or FILES
    refused: str | None = None
    try:
        have_files = _existing_private_dir(top)
    except LabError as exc:
        have_files, refused = False, str(exc)
    stopped = _stop_crashloop(top / PIDFILE_NAME) if have_files else None
    try:
        paths = paths or lab_paths()
    except LabError:
        paths = None
    removed = killed = 0
    if paths is not None and paths.base.is_dir():
        dirs = [Path(d) for d, _, _ in os.walk(paths.base)]
        for d in sorted(dirs, key=lambda p: -len(p.parts)):  # children before parents
            killed += _kill_members(d)
            if _rmdir(d, tries=200):
                removed += 1
    nfiles = 0
    for sub in ("zombies", "agent") if have_files else ():
        p = top / sub
        try:
            if not _existing_private_dir(p):
                continue
        except LabError as exc:
            refused = refused or str(exc)
            continue
        nfiles += sum(len(f) for _, _, f in os.walk(p))
        shutil.rmtree(p, ignore_errors=True)
    if have_files:
        with contextlib.suppress(OSError):
            top.rmdir()  # only if nothing else of the lab's is left there
    if drop_caches:
        os.sync()
        # 3: page cache plus dentries and inodes; the latter pin the last few memcgs
        Path("/proc/sys/vm/drop_caches").write_text("3")
    return CleanResult(removed, killed, nfiles, drop_caches, stopped, refused)


def settle(read: Callable[[], int | None], timeout_s: float = 3.0, quiet_s: float = 0.3
           ) -> int | None:
    """Wait until a count stops falling: the kernel frees released memcgs asynchronously
    (RCU and a workqueue), so a count read right after deleting files is still high."""
    deadline = time.monotonic() + timeout_s
    last = read()
    still_since = time.monotonic()
    while time.monotonic() < deadline:
        time.sleep(0.05)
        cur = read()
        if cur != last:
            last, still_since = cur, time.monotonic()
        elif time.monotonic() - still_since >= quiet_s:
            break
    return last


def _kill_members(cgroup: Path) -> int:
    """Processes in a lab cgroup are the lab's by construction: SIGKILL them."""
    try:
        pids = [int(x) for x in (cgroup / "cgroup.procs").read_text().split()]
    except (OSError, ValueError):
        return 0
    n = 0
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
            n += 1
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + 2.0
    while pids and time.monotonic() < deadline:
        try:
            if not (cgroup / "cgroup.procs").read_text().split():
                break
        except OSError:
            break
        time.sleep(0.02)
    return n


def dying_now() -> int | None:
    """How many dying memcgs this node's kernel holds now (None: no memory controller)."""
    from corescope.sources.cgroups import take_census

    root = Root()
    layout, _ = read_layout(root)
    res = take_census(root, layout)
    return res.census.dying if res.census else None
