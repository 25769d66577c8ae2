"""Damaged compressed input (a real gzip, xz, bzip2 or zstd file with bytes flipped) is the
file's diagnostic, never a traceback: gathering for analyze, bundles, and flame's saved perf
script text. Damaged deflate data raises zlib.error, which is neither OSError nor EOFError."""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
import tarfile
import zlib
from collections.abc import Callable
from pathlib import Path

import pytest
import zstandard
from click.testing import CliRunner

from corescope.ingest.gather import gather
from corescope.model.common import Diagnostic
from corescope.sources.perf_import import BLOCK, open_binary, text_blocks
from corescope.views.cli import cli
from support import FIXTURES, run_cli_here

DMESG = (FIXTURES / "artifacts" / "dmesg.txt").read_bytes()
PERF_TEXT = (FIXTURES / "profiles" / "fields_default.txt").read_bytes()

CODECS: dict[str, Callable[[bytes], bytes]] = {
    "gzip": gzip.compress,
    "xz": lzma.compress,
    "bzip2": bz2.compress,
    # with its checksum, as zstd's command writes it by default: else a flipped literal byte
    # is wrong text, which no decoder can know
    "zstd": lambda b: zstandard.ZstdCompressor(write_checksum=True).compress(b),
}


def _flip(data: bytes, start: int, end: int) -> bytes:
    out = bytearray(data)
    for i in range(start, min(end, len(out))):
        out[i] ^= 0xFF
    return bytes(out)


def _gzip_damaged_after(good: bytes, rest: bytes) -> bytes:
    """A gzip file whose deflate data is sound for `good` and damaged where `rest` begins:
    its next block header says block type 3, which does not exist (zlib.error, always;
    a byte flipped at random is more often a CRC mismatch, an OSError)."""
    co = zlib.compressobj(6, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    head = co.compress(good) + co.flush(zlib.Z_FULL_FLUSH)  # byte-aligned: a block starts
    tail = co.compress(rest) + co.flush()
    return head + bytes([tail[0] | 0x07]) + tail[1:]


def _text(n: int) -> bytes:
    # enough varied lines that the deflate stream has real Huffman tables to damage
    return b"".join(b"[%6d.%06d] eth0: line %d of the kernel log, value %x\n"
                    % (i, i * 37 % 1000000, i, i * 2654435761 % 2**32) for i in range(n))


@pytest.mark.parametrize("codec", sorted(CODECS))
@pytest.mark.parametrize("where", ["head", "middle"])
def test_damaged_file_is_its_diagnostic_and_the_others_are_read(
        tmp_path: Path, codec: str, where: str) -> None:
    packed = CODECS[codec](_text(20000))
    start = 20 if where == "head" else len(packed) // 2
    (tmp_path / "a_bad.txt.z").write_bytes(_flip(packed, start, start + 20))
    (tmp_path / "b_dmesg.txt").write_bytes(DMESG)
    arts = {Path(a.label).name: a for a in gather([tmp_path])}
    bad = arts["a_bad.txt.z"]
    assert bad.data is None and bad.content is None
    assert codec in (bad.error or "")
    assert arts["b_dmesg.txt"].data == DMESG


def test_gzip_damaged_in_its_header_bytes_20_to_40(tmp_path: Path) -> None:
    # the reviewer's repro: the damage falls in the first deflate block's tables
    bad = tmp_path / "dmesg.txt.gz"
    bad.write_bytes(_flip(gzip.compress(_text(5000)), 20, 40))
    (arts,) = list(gather([bad]))
    assert arts.data is None and "corrupt" in (arts.error or "")


def test_gzip_damaged_past_its_first_block(tmp_path: Path) -> None:
    (tmp_path / "a.txt.gz").write_bytes(_gzip_damaged_after(_text(2000), _text(9000)))
    (tmp_path / "b.txt").write_bytes(DMESG)
    arts = list(gather([tmp_path]))
    assert arts[0].data is None and "invalid block type" in (arts[0].error or "")
    assert arts[1].data == DMESG


def test_bundle_damaged_after_its_first_member_keeps_it(tmp_path: Path) -> None:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tf:
        # the first member is past the 8 KiB gzip reads ahead when the tar header is looked at
    # (damage inside that makes the whole file unreadable, as a compressed text file)
        for name, data in (("first.txt", _text(3000)), ("big.txt", _text(40000))):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    raw = buf.getvalue()
    first = 512 + (len(_text(3000)) + 511) // 512 * 512  # the first member's header and data
    sound = first + 65536  # well past what tar and gzip read ahead of the first member
    (tmp_path / "b.tar.gz").write_bytes(_gzip_damaged_after(raw[:sound], raw[sound:]))
    (tmp_path / "c.txt").write_bytes(DMESG)
    arts = list(gather([tmp_path]))
    assert arts[0].label.endswith("!first.txt") and arts[0].data == _text(3000)
    assert "corrupt" in (arts[1].error or "") and "invalid block type" in (arts[1].error or "")
    assert arts[2].label.endswith("c.txt") and arts[2].data == DMESG


def test_analyze_says_which_file_is_damaged(tmp_path: Path) -> None:
    bad = tmp_path / "dmesg.txt.gz"
    bad.write_bytes(_flip(gzip.compress(_text(5000)), 20, 40))
    good = tmp_path / "dmesg.txt"
    good.write_bytes(DMESG)
    res = CliRunner().invoke(cli, ["--store", str(tmp_path / "s"), "analyze", str(bad),
                                   str(good)])
    assert res.exception is None or isinstance(res.exception, SystemExit), res.output
    assert f"{bad}: corrupt or truncated gzip data" in res.output
    assert res.exit_code in (0, 1), res.output


def test_perf_script_text_damaged_keeps_what_came_before(tmp_path: Path) -> None:
    # damaged past the first 1 MiB: the reads before the damage are kept
    good = PERF_TEXT * (BLOCK // len(PERF_TEXT) + 2)
    rest = PERF_TEXT * 50
    path = tmp_path / "chunk.txt.gz"
    path.write_bytes(_gzip_damaged_after(good, rest))
    diags: list[Diagnostic] = []
    with open_binary(path) as stream:
        got = "".join(text_blocks(stream, diags, "chunk"))
    assert 0 < len(got) <= len(good) and good.decode().startswith(got)
    assert len(diags) == 1 and "corrupt" in diags[0].message


def test_perf_script_zstd_damaged_is_a_diagnostic(tmp_path: Path) -> None:
    packed = CODECS["zstd"](PERF_TEXT * 200)
    path = tmp_path / "chunk.txt.zst"
    path.write_bytes(_flip(packed, len(packed) // 2, len(packed) // 2 + 20))
    diags: list[Diagnostic] = []
    with open_binary(path) as stream:
        got = "".join(text_blocks(stream, diags, "chunk"))
    assert len(got) < len(PERF_TEXT) * 200 and len(diags) == 1


def test_flame_on_a_damaged_perf_script_gzip_is_a_message(tmp_path: Path) -> None:
    path = tmp_path / "chunk.txt.gz"
    path.write_bytes(_flip(gzip.compress(PERF_TEXT * 50), 20, 40))
    # through the CLI's entry point, which turns every CorescopeError into its message
    res = run_cli_here("flame", "--perf-script", str(path), "-o", str(tmp_path / "f.svg"))
    assert res.returncode == 2 and "corrupt" in res.stderr, res
    assert "Traceback" not in res.stderr
