"""Saved files in the encodings Windows tools write read as their UTF-8 originals: a UTF-8
byte order mark (Notepad, PowerShell 7's `Out-File -Encoding utf8BOM`), UTF-16 LE with a BOM
(Windows PowerShell 5's `>` and `Out-File`), UTF-16 BE, UTF-16 without a BOM, and any of them
compressed. The files are the captured fixtures re-encoded byte for byte (the re-encoding is
exactly what those tools do to a file copied off a node)."""

from __future__ import annotations

import codecs
import gzip
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from corescope.ingest import import_paths
from corescope.sources.artifacts import content
from corescope.store.db import Store
from corescope.store.events import read_events
from support import FIXTURES, run_cli_json

ART = FIXTURES / "artifacts"

ENCODINGS: dict[str, Callable[[bytes], bytes]] = {
    "utf8-bom": lambda b: codecs.BOM_UTF8 + b,
    "utf16le-bom": lambda b: codecs.BOM_UTF16_LE + b.decode().encode("utf-16-le"),
    "utf16be-bom": lambda b: codecs.BOM_UTF16_BE + b.decode().encode("utf-16-be"),
    "utf16le": lambda b: b.decode().encode("utf-16-le"),
    "utf32le-bom": lambda b: codecs.BOM_UTF32_LE + b.decode().encode("utf-32-le"),
    "utf16le-bom.gz": lambda b: gzip.compress(codecs.BOM_UTF16_LE
                                              + b.decode().encode("utf-16-le")),
}
FILES = ["mpstat12.json", "mpstat11_de_midnight.json", "mpstat_24h.txt", "sadf.json",
         "dmesg.txt", "dmesg_T.txt", "procstat_loop_date.txt", "interrupts_loop.txt"]


def _import(tmp: Path, name: str, data: bytes) -> tuple[list, list]:
    d = tmp / "in"
    d.mkdir(parents=True)
    (d / name).write_bytes(data)
    # dmesg's boot time from /proc/stat's btime, as a node's bundle gives it
    if name.startswith("dmesg"):
        shutil.copy(ART / "procstat_loop_date.txt", d / "procstat_loop_date.txt")
    with Store.open(tmp / "s") as st:
        rep = import_paths([d], st)
        events = [(e.time, e.kind, e.raw) for e in read_events(st, 0, 4e9)]
    files = sorted((f.path.rsplit("/", 1)[-1], f.kind, f.status, f.records, f.span)
                   for f in rep.files)
    return files, events


@pytest.mark.parametrize("enc", list(ENCODINGS))
@pytest.mark.parametrize("name", FILES)
def test_an_encoded_file_imports_as_its_original(tmp_path: Path, name: str, enc: str) -> None:
    raw = (ART / name).read_bytes()
    want = _import(tmp_path / "plain", name, raw)
    got = _import(tmp_path / enc, name, ENCODINGS[enc](raw))
    assert got == want
    assert want[0][0][2] in ("imported", "partial")


@pytest.mark.parametrize("enc", list(ENCODINGS)[:5])
def test_events_file_reads_an_encoded_dmesg_from_its_first_line(tmp_path: Path,
                                                               enc: str) -> None:
    raw = (ART / "dmesg_T.txt").read_bytes()
    (tmp_path / "plain.txt").write_bytes(raw)
    (tmp_path / "enc.txt").write_bytes(ENCODINGS[enc](raw))
    want = run_cli_json("events", "--file", str(tmp_path / "plain.txt"), "--all", "--json")
    got = run_cli_json("events", "--file", str(tmp_path / "enc.txt"), "--all", "--json")
    assert got["events"] == want["events"] and want["events"]


def test_binary_that_begins_like_a_bom_is_left_alone() -> None:
    blob = codecs.BOM_UTF16_LE + bytes(range(256)) * 8
    assert content.decompress(blob, 1 << 30).data == blob
    sar = (ART / "sar_sa.bin").read_bytes()
    assert content.decompress(sar, 1 << 30).data == sar
