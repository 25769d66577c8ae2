"""The per-core samples' journal (store/journal.py) across a real kill -9: a child process
appends rows and is killed before its fold, or between the fold's commit and the journal's
reset; the next start stores every row exactly once (a process each: not in tests/unit)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from corescope.store.db import Store
from corescope.store.series import read_samples
from corescope.store.series_writer import SeriesWriter
from support import REPO, SRC
from support.synth_samples import rand_samples, same

NCPU = 3


def _blocks(store: Store) -> int:
    return int(store.query("SELECT COALESCE(SUM(n), 0) FROM core_blocks")[0][0])


_CRASH = textwrap.dedent("""
    import os, signal, sys
    sys.path[:0] = sys.argv[3:]
    from corescope.store.db import Store
    from corescope.store.series_writer import SeriesWriter
    from support.synth_samples import rand_samples
    store = Store.open(sys.argv[1])
    w = SeriesWriter(store, journal_cpus=3)
    for x in rand_samples(12, 3):
        w.append(x)
    if sys.argv[2] == "after-commit":
        j = w._journal
        w._fold(j.rows, (j.epoch, len(j.rows)))  # the fold's commit, then killed before reset
    os.kill(os.getpid(), signal.SIGKILL)
""")


@pytest.mark.parametrize("when", ["before-fold", "after-commit"])
def test_kill_9_then_restart_stores_every_row_once(tmp_path: Path, when: str) -> None:
    d = tmp_path / "s"
    proc = subprocess.run([sys.executable, "-c", _CRASH, str(d), when, str(SRC),
                           str(REPO / "tests")], check=False)
    assert proc.returncode == -9
    samples = rand_samples(12, NCPU)
    with Store.open(d, create=False) as store:
        # readers: every row once, whether it sits in the journal, a block, or both
        same(read_samples(store, 0, 2e9), samples)
        assert _blocks(store) == (12 if when == "after-commit" else 0)
        w = SeriesWriter(store, journal_cpus=NCPU)  # the next start folds what is left
        assert _blocks(store) == 12
        same(read_samples(store, 0, 2e9), samples)
        more = rand_samples(3, NCPU, t0=samples[-1].t + 1)
        for x in more:
            w.append(x)
        w.close()
        assert _blocks(store) == 15
        same(read_samples(store, 0, 2e9), samples + more)
