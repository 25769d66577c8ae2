"""The classifier's rules as POSIX ERE (`grep_patterns`, the `grep -E` peer of
bench/classify_throughput.py), run by the real GNU grep (a subprocess: not in tests/unit): they
are valid extended regular expressions and match the same lines of a saved kernel log as the
classifier does."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from corescope.analysis.classify import classify, grep_patterns
from corescope.sources.kmsg_text import parse_dmesg
from support import FIXTURES

FIX = FIXTURES / "events"


def test_grep_patterns_are_valid_ere() -> None:
    if shutil.which("grep") is None:
        pytest.skip("no grep")
    text = (FIX / "dmesg_incidents.txt").read_text()
    args = ["grep", "-c", "-E"]
    for p in grep_patterns():
        args += ["-e", p]
    proc = subprocess.run(args, input=text, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    n_grep = int(proc.stdout)
    recs, _ = parse_dmesg(text)
    n_ours = sum(1 for r in recs if classify(r.message).kind != "other")
    assert n_grep == n_ours
