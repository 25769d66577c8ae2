"""Review fixes in the zombie lab: its files directory under world-writable /var/tmp is only
used when it is ours (no symlink, our uid, no group/other write), predictable files are
never written through links, lab OSErrors end in a clear exit 2, one prctl helper."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from corescope.lab import hotcore
from corescope.lab import zombies as labz
from corescope.views import cli_zombies
from corescope.views.cli import cli

NOBODY = 65534
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="chown to another uid needs root")


def _no_cgroups(tmp_path: Path) -> labz.LabPaths:
    """LabPaths whose base does not exist: nothing on the real cgroupfs is touched."""
    return labz.LabPaths(tmp_path / "no-cgroupfs", "v2")


# --- the files directory ----------------------------------------------------------------------


def test_private_dir_is_created_0700(tmp_path: Path) -> None:
    d = labz._private_dir(tmp_path / "lab")
    st = os.lstat(d)
    assert st.st_uid == os.geteuid() and st.st_mode & 0o777 == 0o700
    assert labz._private_dir(d) == d  # an existing one of ours is reused


@needs_root
def test_precreated_dir_of_another_user_is_refused(tmp_path: Path) -> None:
    d = tmp_path / "lab"
    d.mkdir(mode=0o700)
    os.chown(d, NOBODY, NOBODY)
    with pytest.raises(labz.LabError, match="owned by uid 65534"):
        labz._private_dir(d)


def test_symlinked_dir_is_refused(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir(mode=0o700)
    (tmp_path / "lab").symlink_to(real)
    with pytest.raises(labz.LabError, match="not a plain directory"):
        labz._private_dir(tmp_path / "lab")


def test_group_or_world_writable_dir_is_refused(tmp_path: Path) -> None:
    d = tmp_path / "lab"
    d.mkdir()
    d.chmod(0o777)
    with pytest.raises(labz.LabError, match="writable by group or others"):
        labz._private_dir(d)


def test_make_zombies_and_crashloop_refuse_before_any_cgroup(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir(mode=0o700)
    (tmp_path / "lab").symlink_to(real)
    paths = _no_cgroups(tmp_path)
    with pytest.raises(labz.LabError):
        labz.make_zombies(1, paths, files_dir=tmp_path / "lab")
    with pytest.raises(labz.LabError):
        labz.crashloop(0.1, 0.1, paths, files_dir=tmp_path / "lab")
    assert not paths.base.exists() and list(real.iterdir()) == []


def test_create_file_does_not_follow_or_reuse(tmp_path: Path) -> None:
    target = tmp_path / "victim"
    target.write_text("keep")
    link = tmp_path / "z-1"
    link.symlink_to(target)
    with pytest.raises(FileExistsError):
        labz._create_file(link, b"page")
    assert target.read_text() == "keep"
    labz._create_file(tmp_path / "new", b"page")
    assert (tmp_path / "new").read_bytes() == b"page"
    assert os.lstat(tmp_path / "new").st_mode & 0o777 == 0o600


def test_pidfile_replaces_a_planted_link_without_writing_through_it(tmp_path: Path) -> None:
    target = tmp_path / "victim"
    target.write_text("keep")
    pidfile = tmp_path / labz.PIDFILE_NAME
    pidfile.symlink_to(target)
    labz._write_pidfile(pidfile)
    assert target.read_text() == "keep"
    assert not pidfile.is_symlink() and pidfile.read_text() == str(os.getpid())


@needs_root
def test_clean_leaves_a_foreign_files_dir_alone(tmp_path: Path) -> None:
    d = tmp_path / "lab"
    (d / "zombies").mkdir(parents=True, mode=0o700)
    (d / "zombies" / "z-1").write_bytes(b"x")
    (d / labz.PIDFILE_NAME).write_text("1")  # pid 1: must never be signalled
    os.chown(d, NOBODY, NOBODY)
    res = labz.clean(paths=_no_cgroups(tmp_path), files_dir=d)
    assert res.files_refused is not None and "owned by uid 65534" in res.files_refused
    assert res.files_removed == 0 and res.stopped_crashloop is None
    assert (d / "zombies" / "z-1").exists()


def test_clean_refuses_a_symlinked_subdir_and_removes_ours(tmp_path: Path) -> None:
    d = labz._private_dir(tmp_path / "lab")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "precious").write_text("keep")
    (d / "agent").symlink_to(outside)
    z = labz._private_dir(d / "zombies")
    (z / "z-1").write_bytes(b"x")
    res = labz.clean(paths=_no_cgroups(tmp_path), files_dir=d)
    assert res.files_removed == 1 and not z.exists()
    assert res.files_refused is not None and "not a plain directory" in res.files_refused
    assert (outside / "precious").read_text() == "keep"


def test_clean_without_files_dir_is_quiet(tmp_path: Path) -> None:
    res = labz.clean(paths=_no_cgroups(tmp_path), files_dir=tmp_path / "absent")
    assert res.files_refused is None and res.files_removed == 0


# --- OSError from a lab command: exit 2, no traceback -----------------------------------------


@pytest.fixture
def lab_cli(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> CliRunner:
    """The lab commands without root or a live kernel: consent passes, counts are None."""
    monkeypatch.setattr(cli_zombies, "require_lab_consent", lambda yes, what: None)
    monkeypatch.setattr(labz, "dying_now", lambda: None)
    monkeypatch.setattr(labz, "lab_paths", lambda root=None: _no_cgroups(tmp_path))
    monkeypatch.setattr(labz, "settle", lambda read, **kw: None)
    return CliRunner()


def _erofs(*args: object, **kw: object) -> object:
    raise OSError(errno.EROFS, "Read-only file system", "/sys/fs/cgroup/corescope-lab")


@pytest.mark.parametrize("fn,args", [
    ("make_zombies", ["lab", "zombies", "--count", "1", "--yes"]),
    ("crashloop", ["lab", "crashloop", "--duration", "1s", "--yes"]),
    ("clean", ["lab", "clean", "--yes"]),
])
def test_lab_oserror_exits_2_without_traceback(lab_cli: CliRunner, tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch, fn: str,
                                               args: list[str]) -> None:
    monkeypatch.setattr(labz, fn, _erofs)
    res = lab_cli.invoke(cli, ["--store", str(tmp_path / "store"), *args])
    assert res.exit_code == 2, res.output
    assert isinstance(res.exception, SystemExit)  # fail()'s exit, not an escaped OSError
    assert "Traceback" not in res.output
    assert "Read-only file system" in res.output and "/sys/fs/cgroup/corescope-lab" in res.output


def test_lab_clean_reports_refused_files(lab_cli: CliRunner, tmp_path: Path,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(labz, "clean", lambda drop_caches: labz.CleanResult(
        0, 0, 0, False, None, files_refused="/var/tmp/corescope-lab is owned by uid 65534"))
    res = lab_cli.invoke(cli, ["--store", str(tmp_path / "store"), "lab", "clean", "--yes"])
    assert res.exit_code == 2 and "owned by uid 65534" in res.output


# --- one prctl helper -------------------------------------------------------------------------


def test_zombies_lab_uses_hotcore_set_process_name() -> None:
    assert labz.set_process_name is hotcore.set_process_name
    assert not hasattr(labz, "_set_comm")
