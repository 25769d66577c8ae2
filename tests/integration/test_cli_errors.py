"""Bad input gets a clear message and exit 2, never a traceback."""

from __future__ import annotations

import pytest

from support import run_cli


@pytest.mark.parametrize("args,needle", [
    (["record", "--interval", "banana"], "not a duration"),
    (["record", "--interval", "0.01"], "between 0.1s and 60s"),
    (["cores", "--last", "-5"], "duration"),
    (["record", "--max-bytes", "lots"], "not a size"),
    (["lab", "hotcore", "--cpu", "1", "--seconds", "1"], "--yes"),
    (["doctor", "--seconds", "0"], "at least 1"),
])
def test_usage_errors_exit_2(args: list[str], needle: str, tmp_path):
    proc = run_cli("--store", str(tmp_path / "s"), *args)
    assert proc.returncode == 2, proc
    assert needle in proc.stderr
    assert "Traceback" not in proc.stderr


def test_cores_without_store_says_what_to_do(tmp_path):
    proc = run_cli("cores", "--store", str(tmp_path / "nothing"))
    assert proc.returncode == 2
    assert "corescope record" in proc.stderr


def test_corrupt_store_is_an_environment_error(tmp_path):
    d = tmp_path / "s"
    d.mkdir()
    (d / "corescope.db").write_bytes(b"garbage" * 1000)
    proc = run_cli("cores", "--store", str(d))
    assert proc.returncode == 2 and "not a database" in proc.stderr, proc.stderr


def test_bad_replay_root_is_clear(tmp_path):
    (tmp_path / "root" / "frames" / "000000").mkdir(parents=True)
    proc = run_cli("--root", str(tmp_path / "root"), "--store", str(tmp_path / "s"), "record")
    assert proc.returncode == 2 and "cannot replay" in proc.stderr


def test_version_and_help():
    assert run_cli("--version").stdout.startswith("corescope, version")
    out = run_cli("--help").stdout
    for cmd in ("record", "cores", "doctor", "lab"):
        assert cmd in out
