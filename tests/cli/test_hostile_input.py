"""Hostile input under --root and --file: reads are capped and refuse devices and FIFOs,
paths stay inside the root, and a census that cannot be read or makes no sense is reported
OFF with its reason, never as a healthy "0 dying". Each case reproduces a failure of the code
before the fix (a hang, a MemoryError, a walk outside the root, "ok" on garbage)."""

from __future__ import annotations

import errno
import os
import shutil
import threading
from pathlib import Path

import pytest

from corescope.rootfs import Root, read_capped
from corescope.sources.procstat import ProcStatReader
from support import FIXTURES, run_cli, run_cli_json

HYBRID = FIXTURES / "zombies" / "hybrid"
STAT = FIXTURES / "procstat" / "vm-2cpu-6.18.stat"


def _tree(tmp: Path, name: str = "root") -> Path:
    root = tmp / name
    shutil.copytree(HYBRID, root, symlinks=True)
    shutil.copy(STAT, root / "proc/stat")
    return root


# --- rootfs: capped reads, regular files only, paths confined -------------------------------

def test_read_refuses_devices_and_fifos_without_hanging(tmp_path: Path) -> None:
    with pytest.raises(OSError) as exc:
        Root().read_bytes("/dev/zero")
    assert "character device" in str(exc.value)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(OSError) as exc:
        read_capped(fifo)  # opening waits for no writer; the FIFO is refused
    assert "FIFO" in str(exc.value)
    (tmp_path / "proc").mkdir()
    os.mkfifo(tmp_path / "proc/stat")
    with pytest.raises(OSError) as exc:
        ProcStatReader(Root(tmp_path))
    assert "FIFO" in str(exc.value)


def test_read_is_capped(tmp_path: Path) -> None:
    big = tmp_path / "big"
    big.write_bytes(b"x" * 5000)
    assert read_capped(big, 5000) == b"x" * 5000
    with pytest.raises(OSError) as exc:
        read_capped(big, 4999)
    assert exc.value.errno == errno.EFBIG


def test_pipe_is_read_to_its_end_when_allowed() -> None:
    r, w = os.pipe()

    def writer() -> None:
        with os.fdopen(w, "wb") as f:
            f.write(b"a" * 100_000)

    t = threading.Thread(target=writer)
    t.start()
    try:
        assert read_capped(f"/proc/self/fd/{r}", allow_pipe=True) == b"a" * 100_000
    finally:
        t.join()
        os.close(r)


def test_paths_stay_inside_the_root(tmp_path: Path) -> None:
    base = tmp_path / "r"
    (base / "sys/fs/cgroup").mkdir(parents=True)
    (base / "etc").mkdir()
    root = Root(base)
    real = os.path.realpath(base)
    assert str(root.path("/sys/fs/cgroup/../../../../../etc")) == f"{real}/etc"
    (base / "sys/fs/cgroup/abs").symlink_to("/etc")  # absolute: starts again at the root
    (base / "sys/fs/cgroup/rel").symlink_to("../../../../../../etc")  # `..` stops at the root
    assert str(root.path("/sys/fs/cgroup/abs")) == f"{real}/etc"
    assert str(root.path("/sys/fs/cgroup/rel")) == f"{real}/etc"
    (base / "sys/fs/cgroup/loop").symlink_to("loop")
    with pytest.raises(OSError) as exc:
        os.listdir(root.path("/sys/fs/cgroup/loop"))
    assert exc.value.errno == errno.ELOOP
    # the live root is the host: nothing to confine
    assert str(Root().path("/proc/stat")) == "/proc/stat"


# --- the census: unreadable or absurd is OFF with the reason --------------------------------

def _zombies(root: Path) -> tuple[int, str]:
    proc = run_cli("zombies", "--root", str(root), timeout=60)
    return proc.returncode, proc.stdout + proc.stderr


def _doctor_census(root: Path, tmp: Path) -> dict:
    data = run_cli_json("doctor", "--root", str(root), "--seconds", "1", "--json",
                        "--store", str(tmp / "nostore"), timeout=120)
    return data["sensors"]["memcg_census"]


CASES = {
    "empty /proc/cgroups": ("proc/cgroups", "empty", "no memory row"),
    "/proc/cgroups is a FIFO": ("proc/cgroups", "fifo", "FIFO"),
    "/proc/cgroups links to /dev/zero": ("proc/cgroups", "zero", "No such file"),
    "memory mount links to itself": ("sys/fs/cgroup/memory", "selflink", "symbolic links"),
    # past what a store holds: the row is unreadable (sources.text.count_of), the census off
    "num_cgroups 10^32": ("proc/cgroups", "1" + "0" * 32, "unreadable row"),
    "num_cgroups 2^40": ("proc/cgroups", str(1 << 40), "implausible kernel count"),
    "num_cgroups 0": ("proc/cgroups", "0", "below the 6 live directories"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_unreadable_or_absurd_census_is_off_with_the_reason(tmp_path: Path, case: str) -> None:
    rel, how, reason = CASES[case]
    root = _tree(tmp_path)
    target = root / rel
    if how == "empty":
        target.write_text("")
    elif how == "fifo":
        target.unlink()
        os.mkfifo(target)
    elif how == "zero":
        target.unlink()
        target.symlink_to("/dev/zero")
    elif how == "selflink":
        shutil.rmtree(target)
        target.symlink_to("memory")
    else:  # a count on the memory row
        text = target.read_text().replace("memory\t4\t49\t", f"memory\t4\t{how}\t")
        target.write_text(text)
    code, out = _zombies(root)
    assert code == 2, out
    assert "memcg_census" in out and reason in out, out
    assert "dying" not in out.split("not measured")[0], out  # no "-6 dying", no "1e31x live"
    census = _doctor_census(root, tmp_path)
    assert census["ok"] is False and reason in census["detail"], census


def test_walk_never_counts_directories_outside_the_root(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    for i in range(50):
        (outside / f"d{i}").mkdir(parents=True)
    # a mount point with `..`, then a memory mount that is an absolute symlink out of the tree
    dotdot = _tree(tmp_path, "dotdot")
    mi = dotdot / "proc/self/mountinfo"
    mi.write_text(mi.read_text().replace(" /sys/fs/cgroup/memory rw",
                                         " /sys/fs/cgroup/../../../../../outside rw"))
    link = _tree(tmp_path, "link")
    shutil.rmtree(link / "sys/fs/cgroup/memory")
    (link / "sys/fs/cgroup/memory").symlink_to(outside)
    for root in (dotdot, link):
        code, out = _zombies(root)
        assert " live" not in out.split("not measured")[0], out  # before: "51 live, -2 dying"
        assert code == 2 and "cannot list the memory hierarchy" in out, out


# --- /proc/stat and --file ------------------------------------------------------------------

def test_doctor_with_an_empty_proc_stat_is_an_error_not_healthy(tmp_path: Path) -> None:
    root = _tree(tmp_path)
    (root / "proc/stat").write_text("")
    proc = run_cli("doctor", "--root", str(root), "--seconds", "1", "--store",
                   str(tmp_path / "nostore"), timeout=60)
    assert proc.returncode == 2, proc.stdout
    assert "no per-CPU lines" in proc.stderr and "healthy" not in proc.stdout


def test_events_file_refuses_devices_and_reads_pipes(tmp_path: Path) -> None:
    proc = run_cli("events", "--file", "/dev/zero", timeout=60)
    assert proc.returncode == 2 and "character device" in proc.stderr, proc.stderr
    assert "MemoryError" not in proc.stderr
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    text = (FIXTURES / "events" / "dmesg_incidents.txt").read_bytes()

    def writer() -> None:
        with open(fifo, "wb") as f:
            f.write(text)

    t = threading.Thread(target=writer)
    t.start()
    proc = run_cli("events", "--file", str(fifo), timeout=60)
    t.join(timeout=30)
    assert proc.returncode in (0, 1) and "nic_reset" in proc.stdout, proc.stderr


@pytest.mark.parametrize("line,reason", [
    ("nr_dying_subsys_memory 1" + "0" * 32, "unreadable line"),
    (f"nr_dying_subsys_memory {1 << 40}", "implausible dying count"),
    ("nr_subsys_memory 0", "0 live memory cgroups"),
])
def test_absurd_v2_counts_are_off_with_the_reason(tmp_path: Path, line: str,
                                                  reason: str) -> None:
    root = tmp_path / "v612"
    shutil.copytree(FIXTURES / "zombies" / "v612", root, symlinks=True)
    stat = root / "sys/fs/cgroup/cgroup.stat"
    key = line.split()[0]
    stat.write_text("".join(f"{line}\n" if ln.split()[0] == key else f"{ln}\n"
                            for ln in stat.read_text().splitlines()))
    code, out = _zombies(root)
    assert code == 2 and reason in out, out
    assert "dying" not in out.split("not measured")[0], out
