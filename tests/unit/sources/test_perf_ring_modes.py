"""The perf ring starts each chunk's perf with its output and stderr born 0600 without
narrowing the recorder's umask, which its other threads share: a file one of them creates
while a chunk starts keeps the mode it asked for. (The chunks' perf here is `true`: what is
tested is the start, a real fork and exec; perf itself is run in tests/live.)"""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

from corescope.runner import Runner
from corescope.sources.perf import PerfRing
from support.thread_modes import modes_beside


def test_a_file_another_thread_creates_while_a_chunk_starts_keeps_its_mode(
        tmp_path: Path) -> None:
    out = tmp_path / "ring"
    out.mkdir(mode=0o700)
    ring = PerfRing(Runner(), out, "profiles", perf="true")
    errfiles: list[Path] = []

    def start_one() -> None:
        cur = ring._spawn()
        cur.proc.wait(30)
        errfiles.append(cur.errfile)

    assert modes_beside(start_one, tmp_path / "other") == {0o644}
    assert {stat.S_IMODE(p.stat().st_mode) for p in errfiles} == {0o600}


def test_a_started_program_gets_its_own_umask_and_ours_is_left_be() -> None:
    ours = os.umask(0o022)
    try:
        proc = Runner().start(["sh", "-c", "umask"], stdout=subprocess.PIPE, umask=0o077)
        out, _ = proc.communicate(timeout=30)
        assert out.decode().strip() == "0077"
        assert os.umask(0o022) == 0o022  # unchanged meanwhile
    finally:
        os.umask(ours)
