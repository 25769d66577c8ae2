"""One writer for every file corescope writes on the user's behalf (corescope.outfile): as
root, in a directory another user can write, a planted symlink, hard link, FIFO or device
must not redirect the write, and the file is 0600 whatever existed and whatever the umask
(issue 23 item 3). Then the commands that once wrote through a link: report --html -o,
analyze --html."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from corescope.outfile import OutputError, write_output
from support import cli_env, run_cli


def _victim(tmp_path: Path) -> Path:
    v = tmp_path / "secret"
    v.write_text("root only\n")
    v.chmod(0o600)
    return v


def test_writes_a_new_file_0600_whatever_the_umask(tmp_path: Path) -> None:
    old = os.umask(0)
    try:
        out = tmp_path / "page.html"
        assert write_output(out, b"<p>x</p>") == 8
    finally:
        os.umask(old)
    assert out.read_bytes() == b"<p>x</p>"
    assert stat.S_IMODE(out.stat().st_mode) == 0o600
    assert [p.name for p in tmp_path.iterdir()] == ["page.html"]  # no temporary left


def test_an_existing_file_is_replaced_whole_and_made_private(tmp_path: Path) -> None:
    out = tmp_path / "old.html"
    out.write_text("a much longer old content than the new one\n")
    out.chmod(0o644)
    write_output(out, b"new")
    assert out.read_bytes() == b"new" and stat.S_IMODE(out.stat().st_mode) == 0o600


@pytest.mark.parametrize("relative", [False, True])
def test_a_symlink_is_refused_and_its_target_untouched(tmp_path: Path, relative: bool) -> None:
    victim = _victim(tmp_path)
    link = tmp_path / "report.html"
    link.symlink_to("secret" if relative else victim)
    with pytest.raises(OutputError, match="symlink"):
        write_output(link, b"page")
    assert victim.read_text() == "root only\n" and stat.S_IMODE(victim.stat().st_mode) == 0o600
    dangling = tmp_path / "new.html"
    dangling.symlink_to(tmp_path / "would-be-created")
    with pytest.raises(OutputError, match="symlink"):
        write_output(dangling, b"page")
    assert not (tmp_path / "would-be-created").exists()


def test_a_hard_link_is_replaced_not_written_through(tmp_path: Path) -> None:
    victim = _victim(tmp_path)
    link = tmp_path / "hard.html"
    os.link(victim, link)
    write_output(link, b"page")
    assert victim.read_text() == "root only\n"
    assert link.read_bytes() == b"page" and link.stat().st_nlink == 1


def test_fifos_devices_and_directories_are_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.html"
    os.mkfifo(fifo)
    done: list[BaseException] = []

    def attempt() -> None:
        try:
            write_output(fifo, b"page")
        except BaseException as exc:
            done.append(exc)

    th = threading.Thread(target=attempt, daemon=True)
    th.start()
    th.join(30)
    assert not th.is_alive() and isinstance(done[0], OutputError)
    assert "regular file" in str(done[0])
    with pytest.raises(OutputError, match="regular file"):
        write_output("/dev/null", b"x")
    (tmp_path / "dir.html").mkdir()
    with pytest.raises(OutputError):
        write_output(tmp_path / "dir.html", b"x")
    with pytest.raises(OutputError, match="No such file"):
        write_output(tmp_path / "missing" / "x.html", b"x")


def test_report_and_analyze_html_refuse_a_planted_link(tmp_path: Path) -> None:
    from corescope.lab.scenarios import generate

    exp = generate("zombie_chain", tmp_path / "scn", cpus=2, seed=3)
    w = [str(exp["window"]["start"]), str(exp["window"]["end"])]
    victim = _victim(tmp_path)
    link = tmp_path / "analyze.html"
    link.symlink_to(victim)
    store = tmp_path / "store"
    proc = run_cli("analyze", str(tmp_path / "scn"), "--store", str(store), "--html",
                   str(link), timeout=600)
    assert proc.returncode == 2 and "symlink (not followed)" in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr
    proc = run_cli("report", "--store", str(store), "--since", w[0], "--until", w[1],
                   "--html", "-o", str(link), timeout=600)
    assert proc.returncode == 2 and "symlink (not followed)" in proc.stderr, proc.stderr
    assert victim.read_text() == "root only\n" and stat.S_IMODE(victim.stat().st_mode) == 0o600
    out = tmp_path / "ok.html"
    proc = run_cli("report", "--store", str(store), "--since", w[0], "--until", w[1],
                   "--html", "-o", str(out), timeout=600)
    assert proc.returncode in (0, 1), proc.stderr
    assert stat.S_IMODE(out.stat().st_mode) == 0o600 and out.read_text().startswith("<!")


@pytest.mark.skipif(shutil.which("strace") is None, reason="needs strace")
def test_the_rename_is_made_durable_by_a_directory_fsync(tmp_path: Path) -> None:
    # without the directory's fsync a power cut after the rename can leave the old file: the
    # system calls are the only witness short of cutting the power
    out = tmp_path / "page.html"
    log = tmp_path / "strace.log"
    code = ("import sys; from corescope.outfile import write_output; "
            "write_output(sys.argv[1], b'<p>x</p>')")
    subprocess.run(["strace", "-f", "-o", str(log), "-e", "trace=openat,fsync,rename,renameat",
                    sys.executable, "-c", code, str(out)], check=True, env=cli_env(),
                   capture_output=True, timeout=60)
    calls = log.read_text().splitlines()
    opened = [ln for ln in calls if "O_DIRECTORY" in ln and f'"{tmp_path}"' in ln]
    dir_fd = opened[-1].rsplit("=", 1)[1].strip()
    renamed = next(i for i, ln in enumerate(calls) if "rename" in ln and "page.html" in ln)
    assert any(f"fsync({dir_fd})" in ln for ln in calls[renamed:]), calls[renamed:]
