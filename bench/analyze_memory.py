"""`corescope analyze` on big kernel logs: peak RSS and wall time as the log grows (issue 23,
item 4), each run in its own process (peak RSS is per process), the import alone
(`import_paths`) and the whole command (`analyze --json` and text).

The logs are generated (tests/big_dmesg.py: a Kubernetes node's chatter in plain `dmesg`
form with OOM reports and ENA stall → reset pairs), 25, 50, 100 and 216 MB by default; the
216 MB one is also bundled three times into a .tar.zst (the issue's probe: three 216 MB
dmesg files, 6.6 GB RSS before; the copies are twins, deduplicated across files). Time grows
linearly with the size; the import's RSS stays flat (111 MB for 216 MB, was 2.2 GB); the
investigation still holds every kernel event of its window (about 430 bytes a line), which
is what grows: analyze of 216 MB peaked at 1.28 GB (was 3.05 GB) on the development VM.

Run: python bench/analyze_memory.py [MB ...]
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

import zstandard

from _common import REPO
from support.big_dmesg import write_big_dmesg

IMPORT = r"""
import json, sys, time
from pathlib import Path
def hwm_mb():
    return int(open("/proc/self/status").read().split("VmHWM:")[1].split()[0]) / 1024
from corescope.ingest import import_paths
from corescope.store.db import Store
t0 = time.perf_counter()
with Store.open(Path(sys.argv[1]), create=True) as st:
    rep = import_paths(sys.argv[3:], st, boot_time=float(sys.argv[2]))
print(json.dumps({"wall": time.perf_counter() - t0,
                  "rss_mb": hwm_mb(),
                  "records": sum(f.records for f in rep.files)}))
"""

# a fresh wrapper per run: RUSAGE_CHILDREN's max is over the wrapper's waited-for children
ANALYZE = r"""
import json, resource, subprocess, sys, time
t0 = time.perf_counter()
p = subprocess.run([sys.executable, "-m", "corescope", "analyze", *sys.argv[1:]],
                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
print(json.dumps({"wall": time.perf_counter() - t0, "rc": p.returncode,
                  "rss_mb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024,
                  "err": p.stderr[-500:]}))
"""


def _child(code: str, *args: str) -> dict:
    env = {"PYTHONPATH": str(REPO / "src"), "PATH": "/usr/bin:/bin"}
    out = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                         check=True, env=env)
    return json.loads(out.stdout)


def main() -> None:
    sizes = [int(a) for a in sys.argv[1:]] or [25, 50, 100, 216]
    print("machine shared with other sessions: read the ratios, not the seconds")
    print(f"{'log':>14} {'import s':>9} {'import MB':>10} {'analyze s':>10} "
          f"{'analyze MB':>11} {'--json MB':>10}")
    with tempfile.TemporaryDirectory(prefix="corescope-bench-") as tmp:
        t = Path(tmp)
        for mb in sizes:
            log = t / f"dmesg-{mb}.txt"
            made = write_big_dmesg(log, mb * 1_000_000)
            boot = str(made["boot_time"])
            imp = _child(IMPORT, str(t / f"s-{mb}"), boot, str(log))
            txt = _child(ANALYZE, str(log), "--boot-time", boot)
            js = _child(ANALYZE, str(log), "--boot-time", boot, "--json")
            print(f"{mb:>11} MB {imp['wall']:>9.1f} {imp['rss_mb']:>10.0f} "
                  f"{txt['wall']:>10.1f} {txt['rss_mb']:>11.0f} {js['rss_mb']:>10.0f}")
            last = (log, boot)
        log, boot = last
        bundle = t / "three.tar.zst"
        with bundle.open("wb") as out:
            z = zstandard.ZstdCompressor(level=3).stream_writer(out)
            with tarfile.open(fileobj=z, mode="w|") as tf:  # type: ignore[arg-type]
                for i in range(3):
                    data = log.read_bytes() + f"[99999.00000{i}] copy {i}\n".encode()
                    info = tarfile.TarInfo(f"node/dmesg-{i}.txt")
                    info.size = len(data)
                    tf.addfile(info, io.BytesIO(data))
                    del data
            z.close()
        imp = _child(IMPORT, str(t / "s-bundle"), boot, str(bundle))
        txt = _child(ANALYZE, str(bundle), "--boot-time", boot)
        print(f"three copies in a {bundle.stat().st_size / 1e6:.0f} MB .tar.zst: import "
              f"{imp['wall']:.1f} s, {imp['rss_mb']:.0f} MB; analyze {txt['wall']:.1f} s, "
              f"{txt['rss_mb']:.0f} MB (rc {txt['rc']})")


if __name__ == "__main__":
    main()
