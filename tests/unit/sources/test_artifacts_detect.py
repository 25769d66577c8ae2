"""Content-based kind detection and transparent decompression of saved artifacts."""

from __future__ import annotations

import bz2
import gzip
import lzma

import pytest
import zstandard
from hypothesis import given, settings
from hypothesis import strategies as st

from corescope.sources.artifacts import KIND_MODULES
from corescope.sources.artifacts.content import decompress, module_for, sniff
from support import FIXTURES

ART = FIXTURES / "artifacts"

EXPECTED = {
    "mpstat12.json": "mpstat_json",
    "mpstat12_en.json": "mpstat_json",
    "mpstat11_de_midnight.json": "mpstat_json",
    "sadf.json": "sadf_json",
    "sadf_u.json": "sadf_json",
    "mpstat_12h.txt": "mpstat_text",
    "mpstat_24h.txt": "mpstat_text",
    "mpstat_iso.txt": "mpstat_text",
    "mpstat_de.txt": "mpstat_text",
    "procstat_loop_date.txt": "proc_stat",
    "procstat_loop_epoch.txt": "proc_stat",
    "procstat_loop_iso.txt": "proc_stat",
    "census_loop.txt": "census_loop",
    "interrupts_loop.txt": "proc_interrupts",
    "softirqs_loop.txt": "softirqs_loop",
    "dmesg.txt": "kernel_log",
    "dmesg_r.txt": "kernel_log",
    "dmesg_x.txt": "kernel_log",
    "dmesg_T.txt": "kernel_log",
    "dmesg_iso.txt": "kernel_log",
    "dmesg_notime.txt": None,  # no timestamps: cannot be placed, not claimed
    "sar_sa.bin": None,  # sar's binary data file: read it with sadf -j
    "sar_burn_sa.bin": None,
    "sadf_p.txt": "sadf_ppc",
    "sadf_p_u.txt": "sadf_ppc",
    "sadf_p_t.txt": "sadf_ppc",
    "sadf_p_A.txt": "sadf_ppc",
    "sadf_x.xml": "sadf_xml",
    "sadf_x_tu.xml": "sadf_xml",
    "mpstat_I_SCPU.txt": "mpstat_text",
    "mpstat_I_SCPU.json": "mpstat_json",
}

OTHER = {
    FIXTURES / "events" / "journal_k.json": "journal_json",
    FIXTURES / "events" / "kmsg_capture_virtio_vm.bin": "kernel_log",
    FIXTURES / "events" / "dmesg_incidents.txt": "kernel_log",
    FIXTURES / "events" / "proc_interrupts_ena_32q_96cpu.txt": "proc_interrupts",
    FIXTURES / "zombies" / "tools" / "systemctl_show.txt": "systemctl_show",
    FIXTURES / "zombies" / "tools" / "journal_restarts.json": "journal_json",
    FIXTURES / "zombies" / "tools" / "crictl_ps.json": "crictl_json",
    FIXTURES / "zombies" / "tools" / "crictl_ps_table.txt": "crictl_table",
    FIXTURES / "zombies" / "tools" / "crictl_ps_table_old.txt": "crictl_table",
    FIXTURES / "zombies" / "tools" / "docker_ps.txt": "docker_ps",
    FIXTURES / "zombies" / "tools" / "docker_ps.jsonl": "docker_ps",
    FIXTURES / "zombies" / "tools" / "docker_inspect.json": "docker_inspect",
    FIXTURES / "procstat" / "vm-2cpu-6.18.stat": "proc_stat",
    FIXTURES / "profiles" / "burner_idle.txt": "perf_script",
    FIXTURES / "profiles" / "two_events_default.txt": "perf_script",
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_fixture_kinds(name: str) -> None:
    assert sniff((ART / name).read_bytes()) == EXPECTED[name]


@pytest.mark.parametrize("path", sorted(OTHER), ids=lambda p: p.name)
def test_other_fixture_kinds(path) -> None:  # type: ignore[no-untyped-def]
    assert sniff(path.read_bytes()) == OTHER[path]


def test_folded_stacks() -> None:
    text = b"swapper;do_idle;default_idle 120\nburn;read;iov_iter_zero 42\n"
    assert sniff(text) == "folded"
    assert sniff(b"hello world\nthis is prose; not stacks 3\n") is None


def test_every_kind_has_one_parser() -> None:
    kinds = ("mpstat_json", "sadf_json", "mpstat_text", "proc_stat", "proc_interrupts",
             "census_loop", "proc_cgroups", "systemctl_show", "journal_json", "crictl_json",
             "crictl_table", "docker_ps", "docker_inspect", "perf_script", "folded", "kernel_log",
             "sadf_csv", "sadf_ppc", "sadf_xml")
    for k in kinds:
        assert module_for(k) is not None, k
    assert len(KIND_MODULES) == len(set(KIND_MODULES))


@pytest.mark.parametrize("codec", ["gzip", "zstd", "xz", "bzip2", "gzip+zstd"])
def test_decompression_by_magic(codec: str) -> None:
    raw = (ART / "mpstat12.json").read_bytes()
    data = raw
    for c in codec.split("+"):
        data = {"gzip": gzip.compress, "zstd": zstandard.ZstdCompressor().compress,
                "xz": lzma.compress, "bzip2": bz2.compress}[c](data)
    got = decompress(data, 1 << 20)
    assert got.error is None
    assert got.data == raw
    assert sniff(got.data) == "mpstat_json"


def test_decompression_cap_and_truncation() -> None:
    bomb = gzip.compress(b"\0" * (4 << 20))
    assert "cap" in (decompress(bomb, 1 << 20).error or "")
    text = b"".join(b"[%6d.%06d] line %x\n" % (i, i * 7919 % 10**6, i * 2654435761 % 2**32)
                    for i in range(20000))  # ~ 640 KB, several zstd blocks
    for comp in (zstandard.ZstdCompressor().compress, gzip.compress, lzma.compress):
        raw = comp(text)
        got = decompress(raw[: len(raw) // 2], 1 << 20)
        # what the stream held up to the cut is kept, and said to be cut
        assert got.truncated and got.error is None
        assert 0 < len(got.data) < len(text) and text.startswith(got.data)
    assert decompress(gzip.compress(text)[:30], 1 << 20).error is not None


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=3000))
def test_sniff_and_decompress_never_raise(data: bytes) -> None:
    decompress(data, 1 << 16)
    sniff(data)
    sniff(gzip.compress(data))
