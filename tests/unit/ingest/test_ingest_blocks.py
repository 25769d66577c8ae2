"""Big artifacts are read from a file block by block (ingest.gather, ingest.blocks) and must be
imported exactly as the same content read whole: every captured kernel-log form, twins of
one log deduplicated across files, compressed files and bundle members. Here "big" is made
small (a few hundred bytes) so the real fixtures cross many block boundaries."""

from __future__ import annotations

import gzip
import importlib
import io
from pathlib import Path
from typing import Any

import pytest
import zstandard

from corescope.ingest import blocks, import_paths
from corescope.store.db import Store
from support import FIXTURES
from support.big_dmesg import write_big_dmesg
from support.bundles import tar_zst

# the module (the package exports its `gather` function under the same name)
gather = importlib.import_module("corescope.ingest.gather")

FIX = FIXTURES / "artifacts"
KERNEL_LOGS = sorted(p.name for p in FIX.iterdir()
                     if p.name.startswith(("dmesg", "kern_log", "syslog", "journal_k")))
BOOT = 1796052546.0  # btime of the VM the fixtures were captured on (fixtures README)


def _import(tmp: Path, name: str, paths: list[Path], **kw: Any) -> tuple[list, list]:
    with Store.open(tmp / name, create=True) as st:
        rep = import_paths(paths, st, boot_time=BOOT, **kw)
        rows = st.query("SELECT round(time, 6), kind, raw FROM kernel_events "
                        "ORDER BY time, raw, kind")
    files = [(f.kind, f.status, f.records, f.span, f.reason, f.diagnostics[:3])
             for f in rep.files]
    return [tuple(r) for r in rows], files


@pytest.fixture
def tiny_blocks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(gather, "STREAM_BYTES", 300)
    monkeypatch.setattr(blocks, "BLOCK_BYTES", 512)


def _whole_then_blocks(tmp: Path, paths: list[Path], monkeypatch: pytest.MonkeyPatch
                       ) -> tuple[Any, Any]:
    whole = _import(tmp, "whole", paths)
    with monkeypatch.context() as m:
        m.setattr(gather, "STREAM_BYTES", 300)
        m.setattr(blocks, "BLOCK_BYTES", 512)
        streamed = _import(tmp, "blocks", paths)
    return whole, streamed


@pytest.mark.parametrize("name", KERNEL_LOGS)
def test_every_kernel_log_form_reads_the_same_in_blocks(name: str, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch
                                                        ) -> None:
    (rows_w, files_w), (rows_b, files_b) = _whole_then_blocks(tmp_path, [FIX / name],
                                                              monkeypatch)
    assert rows_b == rows_w
    assert [f[:4] for f in files_b] == [f[:4] for f in files_w]


def test_twin_logs_are_deduplicated_across_big_files(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """dmesg and dmesg -T of the same lines: the second file's lines are duplicates."""
    paths = [FIX / "dmesg.txt", FIX / "dmesg_T.txt", FIX / "dmesg_iso.txt"]
    (rows_w, files_w), (rows_b, files_b) = _whole_then_blocks(tmp_path, paths, monkeypatch)
    assert rows_b == rows_w
    assert files_b == files_w
    assert any("already imported from another file" in (f[4] or "") for f in files_b)


def test_compressed_and_bundled_big_files(tmp_path: Path, tiny_blocks: None) -> None:
    text = (FIX / "dmesg.txt").read_bytes()
    (tmp_path / "d.gz").write_bytes(gzip.compress(text))
    (tmp_path / "d.zst").write_bytes(zstandard.ZstdCompressor().compress(text))
    (tmp_path / "b.tar.zst").write_bytes(tar_zst({"node/dmesg.txt": text}))
    (tmp_path / "plain.txt").write_bytes(text)
    for name in ("d.gz", "d.zst", "b.tar.zst"):
        rows, files = _import(tmp_path, f"s-{name}", [tmp_path / name])
        ref_rows, ref_files = _import(tmp_path, f"r-{name}", [tmp_path / "plain.txt"])
        assert rows == ref_rows and len(rows) > 40
        assert [f[:4] for f in files] == [f[:4] for f in ref_files]


def test_a_truncated_big_zstd_file_is_read_as_far_as_it_goes(tmp_path: Path,
                                                             tiny_blocks: None) -> None:
    made = write_big_dmesg(tmp_path / "d.txt", 600_000)  # zstd blocks of 128 KiB: several
    z = zstandard.ZstdCompressor().compress((tmp_path / "d.txt").read_bytes())
    (tmp_path / "cut.zst").write_bytes(z[: len(z) * 2 // 3])
    with Store.open(tmp_path / "s", create=True) as st:
        (f,) = import_paths([tmp_path / "cut.zst"], st, boot_time=BOOT).files
    assert f.kind == "kernel_log" and 0 < f.records < made["lines"]
    assert any("truncated" in d for d in f.diagnostics), f


def test_blocks_end_before_a_line_that_starts_a_record() -> None:
    text = b"[ 1.0] a\n  more of a\n[ 2.0] b\n\n  still b\n[ 3.0] c\n" * 50
    parts = list(blocks.blocks(io.BytesIO(text), 64))
    assert b"".join(p for _, p in parts) == text
    line = 1
    for first, p in parts:
        assert first == line
        line += p.count(b"\n")
        assert p[:1] == b"["  # never an indented or blank line first
