"""`perf script` chunks and folded stacks through `analyze --store`: the importer stores them
as ring text chunks, and `flame`/`heatmap` (windows, --diff) read the analyzed store as they
read a recording. Both perf clocks; counts checked against the fixtures parsed directly."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
import zstandard

from corescope.sources.perf_script import parse_text
from corescope.store import profiles as ring
from corescope.store.db import Store
from support import FIXTURES, run_cli, run_cli_json

FIX = FIXTURES / "profiles"
BOOT_TIME = 1796052546.158  # see tests/fixtures/profiles/README.md
TARGET = "corescope_spin_target"


def times(path: Path, cpu: int | None = None) -> list[float]:
    samples, _d = parse_text(path.read_text())
    return sorted(s.time for s in samples
                  if s.time is not None and (cpu is None or s.cpu == cpu))


def _folder(tmp_path: Path) -> Path:
    d = tmp_path / "incident"
    (d / "perf").mkdir(parents=True)
    recs = [r + "\n\n" for r in (FIX / "spin_boot_ring.txt").read_text().split("\n\n")
            if r.strip()]
    half = len(recs) // 2
    z = zstandard.ZstdCompressor()
    # a folder of boot-clock chunks (zst), the wall-clock capture (gz), folded stacks
    (d / "perf" / "chunk-1.txt.zst").write_bytes(z.compress("".join(recs[:half]).encode()))
    (d / "perf" / "chunk-2.txt.zst").write_bytes(z.compress("".join(recs[half:]).encode()))
    (d / "rt.gz").write_bytes(gzip.compress((FIX / "spin_realtime_default.txt").read_bytes()))
    (d / "stacks.folded").write_text((FIX / "spin.folded").read_text())
    return d


def _analyze(tmp_path: Path, *extra: str) -> tuple[Path, dict]:
    store = tmp_path / "s"
    p = run_cli("analyze", str(_folder(tmp_path)), "--store", str(store), "--json", *extra,
                timeout=300)
    assert p.returncode in (0, 1, 2), p.stderr
    return store, json.loads(p.stdout)


def test_analyzed_perf_chunks_read_like_a_recording(tmp_path: Path) -> None:
    store, out = _analyze(tmp_path, "--boot-time", repr(BOOT_TIME))
    files = {Path(f["path"]).name: f for f in out["import"]["files"]}
    boot_n = len(times(FIX / "spin_boot_ring.txt"))
    assert files["chunk-1.txt.zst"]["kind"] == "perf_script"
    assert files["chunk-1.txt.zst"]["status"] == "imported"
    assert files["chunk-1.txt.zst"]["records"] + files["chunk-2.txt.zst"]["records"] == boot_n
    assert files["rt.gz"]["cpus"] == [0, 1]
    assert files["stacks.folded"]["kind"] == "folded"
    with Store.open(store, create=False) as s:
        chunks = ring.all_chunks(s)
    # text as imported, or columns once a query read it (see store/profile_columns)
    assert sorted(c.format.replace("columns", "text") for c in chunks) == \
        ["folded", "text", "text", "text"]
    # the boot-clock chunks, placed by --boot-time: a window over them on the wall clock
    bt = times(FIX / "spin_boot_ring.txt", cpu=1)
    lo, hi = BOOT_TIME + bt[5], BOOT_TIME + bt[-5]
    j = run_cli_json("--store", str(store), "flame", "--at", repr(hi), "--before",
                     f"{hi - lo:.6f}s", "--cpu", "1", "--format", "json")
    assert j["window"]["clock"] == "wall"
    assert j["samples"] == sum(1 for t in bt if lo - 1e-6 <= BOOT_TIME + t < hi)
    assert j["chunks"] == 2 and TARGET in {f["name"] for f in j["top_functions"]}
    # --diff auto over the analyzed ring: the wall-clock capture after it, the boot one as
    # the baseline just before
    rt = times(FIX / "spin_realtime_ring.txt")
    at = rt[-1] + 1e-6
    d = run_cli_json("--store", str(store), "flame", "--at", repr(at), "--before", "500ms",
                     "--diff", "auto", "--baseline-gap", "0s", "--format", "json")
    folded = sum(int(ln.rsplit(" ", 1)[1]) for ln in (FIX / "spin.folded").open())
    # the folded profile has no times: it sits at the end of the import, inside this window
    assert d["samples"] == sum(1 for t in rt if at - 0.5 <= t < at) + folded
    assert d["diff"]["baseline_samples"] >= 0
    h = run_cli_json("--store", str(store), "heatmap", "--at", repr(at), "--before", "2s",
                     "--cpu", "1", "--json")
    assert h["clock"] == "wall" and sum(map(sum, h["values"])) > 0


def test_boot_clock_without_a_boot_time_is_unanchored(tmp_path: Path) -> None:
    store, out = _analyze(tmp_path)
    files = {Path(f["path"]).name: f for f in out["import"]["files"]}
    assert files["chunk-1.txt.zst"]["status"] == "unanchored"
    assert "--boot-time" in files["chunk-1.txt.zst"]["reason"]
    assert files["rt.gz"]["status"] == "imported"
    bt = times(FIX / "spin_boot_ring.txt")
    # stored on perf's clock: asked for in perf seconds, the window says so
    j = run_cli_json("--store", str(store), "flame", "--at", repr(bt[-1] + 1e-6), "--before",
                     "10s", "--format", "json")
    assert j["window"]["clock"] == "perf" and j["samples"] == len(bt)


@pytest.mark.parametrize("junk", [b"", b"\x00\x01\x02 not text", b"sys 1 [000] 1.0: x:\n\t"])
def test_broken_perf_files_are_skipped_not_fatal(tmp_path: Path, junk: bytes) -> None:
    d = _folder(tmp_path)
    (d / "perf" / "broken.txt").write_bytes(junk)
    (d / "perf" / "cut.zst").write_bytes(
        zstandard.ZstdCompressor().compress((FIX / "spin_boot_ring.txt").read_bytes())[:-30])
    p = run_cli("analyze", str(d), "--store", str(tmp_path / "s"), "--json", timeout=300)
    assert p.returncode in (0, 1), p.stderr
    assert "Traceback" not in p.stderr
    files = {Path(f["path"]).name: f for f in json.loads(p.stdout)["import"]["files"]}
    assert files["chunk-2.txt.zst"]["status"] == "unanchored"
    assert files["broken.txt"]["status"] == "skipped"
