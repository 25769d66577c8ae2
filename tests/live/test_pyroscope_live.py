"""`record --pyroscope-url` on the real perf ring: each finished chunk reaches a local
Pyroscope-compatible sink as pprof at the chunk's real --profile-hz, with node/cpu/comm
series labels; the burner on cpu 1 is there. `flame --format pprof` on the same ring carries
the same period and the cpu/thread labels."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from live.conftest import MACHINE, burner, need_tool
from support import cli_env, pprof_proto, run_cli
from support.pyroscope_sink import Sink

pytestmark = MACHINE

HZ = 97


def test_finished_chunks_are_pushed_with_the_real_rate(tmp_path: Path) -> None:
    need_tool("perf")
    sink = Sink()
    store = tmp_path / "store"
    proc = subprocess.Popen(
        [sys.executable, "-m", "corescope", "record", "--store", str(store), "--no-census",
         "--no-netdev", "--no-kmsg", "--profile-hz", str(HZ), "--profile-chunk", "5s",
         "--duration", "14s", "--pyroscope-url", sink.url],
        env=cli_env(NODE_NAME="lab-node"), text=True, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE)
    try:
        time.sleep(3)
        burn = burner(1, 6)
        assert burn.wait(timeout=30) == 0, burn.communicate()
        _out, err = proc.communicate(timeout=90)
    finally:
        sink.close()
    assert proc.returncode == 0, err
    assert "profiles pushed to" in err and "pyroscope:" not in err.split("profiles pushed")[1]
    assert sink.got, err
    names = [q["name"] for q, _ in sink.got]
    assert all(n.startswith("corescope.cpu{node=lab-node,cpu=") for n in names), names
    assert all(q["sampleRate"] == str(HZ) and q["format"] == "pprof" for q, _ in sink.got)
    burner_push = [(q, b) for q, b in sink.got if "cpu=1,comm=corescope-burn" in q["name"]]
    assert burner_push, names
    prof = pprof_proto.decode(burner_push[0][1])
    assert prof.period == int(1e9 / HZ)
    labels = pprof_proto.sample_labels(prof, prof.sample[0])
    assert labels["cpu"] == "1" and labels["comm"] == "corescope-burn"
    st = prof.string_table
    funcs = {st[f.name] for f in prof.function}
    assert any("read_iter_zero" in f or "iov_iter_zero" in f for f in funcs), sorted(funcs)[:40]
    # the same ring through flame --format pprof: same period, cpu and thread labels
    out = tmp_path / "w.pb.gz"
    res = run_cli("flame", "--store", str(store), "--at", "now", "--before", "60s",
                  "--cpu", "1", "--format", "pprof", "-o", str(out))
    assert res.returncode == 0, res.stderr
    whole = pprof_proto.decode(out.read_bytes())
    assert whole.period == int(1e9 / HZ)
    lab = pprof_proto.sample_labels(whole, whole.sample[0])
    assert lab["cpu"] == "1" and "thread" in lab
