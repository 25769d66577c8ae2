"""The series codec from many threads at once (serve's request threads decode blocks side by
side): zstandard's contexts are not thread-safe, and a shared decompressor crashed the
process with SIGSEGV. Run in a child so a crash is a failed test, not a dead test run."""

from __future__ import annotations

import subprocess
import sys

from support import cli_env

_STRESS = r"""
import threading
import numpy as np
from corescope.model.cores import CoreSample
from corescope.model.packed import PackedRows
from corescope.store import series_codec as series

rng = np.random.default_rng(1)
samples = [CoreSample(1e9 + k, 1.0, PackedRows(list(range(96)), rng.integers(0, 100, (96, 10))))
           for k in range(60)]
blob = series.encode_block(samples)
want = [s.t for s in series.decode_block(blob)]
wrong = []

def work():
    for _ in range(60):
        if [s.t for s in series.decode_block(blob)] != want:
            wrong.append(1)
        series.encode_block(samples[:30])

threads = [threading.Thread(target=work) for _ in range(8)]
for t in threads:
    t.start()
for t in threads:
    t.join()
print("decoded", len(wrong))
"""


def test_codec_is_safe_from_many_threads() -> None:
    proc = subprocess.run([sys.executable, "-c", _STRESS], capture_output=True, text=True,
                          env=cli_env(), timeout=300, check=False)
    assert proc.returncode == 0, f"exit {proc.returncode}: {proc.stderr[-500:]}"
    assert proc.stdout.strip() == "decoded 0"
