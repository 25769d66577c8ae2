"""Shared test helpers: run the real CLI in a subprocess, the fixture tree, the live-test gate.
Tests import them from here (`from support import run_cli`); tests/conftest.py keeps
only pytest's hooks and fixtures."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
SRC = REPO / "src"
FIXTURES = REPO / "tests" / "fixtures"


def parse_artifact(data: bytes, name: str = "t") -> Any:
    """A saved artifact parsed as `analyze` reads it: its kind told from its content, then
    that kind's parser (the result is the parser's `Parsed`)."""
    from corescope.sources.artifacts.content import module_for, sniff

    kind = sniff(data)
    assert kind is not None, name
    mod = module_for(kind)
    assert mod is not None
    return mod.parse(data, kind, name)

def sample_tuples(parsed: Any) -> list[tuple[float, float, dict[int, tuple[int, ...]]]]:
    """A parsed artifact's per-core samples as plain (t, interval, {cpu: deltas}) tuples, to
    compare two readings of the same data."""
    return [(s.t, s.interval_s, {c: tuple(d) for c, d in s.deltas.items()})
            for s in parsed.samples]


def cli_env(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(SRC) + os.pathsep + env.get("PYTHONPATH", "")
    env.update(extra)
    return env


def run_cli(*args: str, timeout: float = 120, check: bool = False,
            input: str | None = None) -> subprocess.CompletedProcess[str]:
    """`corescope ARGS...` as a user runs it (python -m corescope, this work tree's code)."""
    proc = subprocess.run(
        [sys.executable, "-m", "corescope", *args], capture_output=True, text=True,
        timeout=timeout, env=cli_env(), input=input, check=False,
    )
    if check and proc.returncode != 0:
        raise AssertionError(
            f"corescope {' '.join(args)} exited {proc.returncode}\n"
            f"stdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
        )
    return proc


def run_cli_here(*args: str, check: bool = False) -> subprocess.CompletedProcess[str]:
    """`corescope ARGS...` through the same entry point (views.cli.main: its error mapping and
    exit codes), in this process: for the integration tests that run the CLI dozens of times
    on saved files, where a fresh interpreter's start-up was a sixth of their CPU. Output is
    captured as a subprocess's would be (text, not a terminal)."""
    import gc

    from click.testing import CliRunner

    from corescope.views.cli import main

    code = 0
    with CliRunner().isolation() as (out, err, _both):
        try:
            main(list(args))
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        finally:
            gc.unfreeze()  # main() freezes what start-up made: in a long-lived process, let
            gc.enable()    # what this command left be collected again
        proc = subprocess.CompletedProcess(["corescope", *args], code,
                                           out.getvalue().decode("utf-8", "replace"),
                                           err.getvalue().decode("utf-8", "replace"))
    if check and proc.returncode != 0:
        raise AssertionError(f"corescope {' '.join(args)} exited {proc.returncode}\n"
                             f"stdout:\n{proc.stdout}\nstderr:\n{proc.stderr}")
    return proc


def run_cli_json(*args: str, timeout: float = 120, ok_codes: tuple[int, ...] = (0, 1)) -> Any:
    proc = run_cli(*args, timeout=timeout)
    assert proc.returncode in ok_codes, (proc.returncode, proc.stdout, proc.stderr)
    return json.loads(proc.stdout)


def popen_cli(*args: str, **kw: Any) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "corescope", *args], text=True, env=cli_env(),
        stdout=kw.pop("stdout", subprocess.PIPE), stderr=kw.pop("stderr", subprocess.PIPE), **kw,
    )


def served_port(proc: subprocess.Popen[str]) -> int:
    """The port a `corescope serve --listen 127.0.0.1:0` process says it listens on; its
    stderr is then drained in the background so the pipe never fills."""
    import re
    import threading

    assert proc.stderr is not None
    port = 0
    for line in proc.stderr:
        m = re.search(r"http://127\.0\.0\.1:(\d+)/", line)
        if m:
            port = int(m.group(1))
            break
    assert port, "serve did not start"
    threading.Thread(target=proc.stderr.read, daemon=True).start()
    return port


def live_required() -> bool:
    return os.environ.get("CORESCOPE_REQUIRE_LIVE") == "1"
