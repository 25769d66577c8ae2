"""`analyze`'s import in bounded memory (issue 23, item 4): a big kernel log is read block by
block and written to the store as it is read, never held whole, so the import of a 40 MB
dmesg (400,000 lines) takes a fraction of the memory the log takes on disk, in a real import
process, and stores every line. Before: every file parsed whole and kept until all were
parsed, about 12 bytes of memory per byte of log (500 MB for this one, 2.2 GB for 216 MB).
bench/analyze_memory.py measures the 216 MB case and `analyze` end to end."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from big_dmesg import write_big_dmesg
from conftest import cli_env
from corescope.store.db import Store

LOG_BYTES = 40_000_000
# Python, numpy, zstandard and SQLite take ~60-90 MB before the first line; a block of the
# log in flight ~60 MB more. The whole log parsed at once takes ~500 MB.
RSS_LIMIT_MB = 260

CHILD = r"""
import json, resource, sys
from pathlib import Path
from corescope.ingest import import_paths
from corescope.store.db import Store
with Store.open(Path(sys.argv[2]), create=True) as st:
    rep = import_paths(sys.argv[4:], st, boot_time=float(sys.argv[3]))
print(json.dumps({"rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "files": [f.to_json() for f in rep.files]}))
"""


def _import(store: Path, boot: float, *paths: Path) -> dict:
    out = subprocess.run([sys.executable, "-c", CHILD, "import", str(store), str(boot),
                          *map(str, paths)], capture_output=True, text=True, env=cli_env(),
                         timeout=600, check=False)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout)


def test_a_big_dmesg_is_imported_in_bounded_memory(tmp_path: Path) -> None:
    log = tmp_path / "dmesg.txt"
    made = write_big_dmesg(log, LOG_BYTES)
    res = _import(tmp_path / "store", made["boot_time"], log)
    (f,) = res["files"]
    assert (f["kind"], f["status"], f["records"]) == ("kernel_log", "imported", made["lines"])
    assert res["rss_mb"] < RSS_LIMIT_MB, res["rss_mb"]
    with Store.open(tmp_path / "store") as st:
        kinds = dict(st.query("SELECT kind, COUNT(*) FROM kernel_events GROUP BY kind"))
    assert kinds["nic_tx_stall"] == made["stalls"] and kinds["nic_reset"] == made["stalls"]
