"""Reading files, directories and bundles: caps, nesting, links and truncation are reported
per file, nothing is extracted, nothing raises."""

from __future__ import annotations

import gzip
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from corescope.ingest.gather import MAX_TAR_DEPTH, Limits, gather
from support import FIXTURES
from support.bundles import tar_bytes, tar_zst

ART = FIXTURES / "artifacts"


def test_bundle_members_are_labelled_and_read(tmp_path: Path) -> None:
    dmesg = (ART / "dmesg.txt").read_bytes()
    (tmp_path / "b.tar.gz").write_bytes(gzip.compress(tar_bytes({"a/dmesg.txt": dmesg,
                                                                 "/abs/x.txt": b"hello\n"})))
    arts = list(gather([tmp_path / "b.tar.gz"]))
    assert [a.label.split("!")[1] for a in arts] == ["a/dmesg.txt", "/abs/x.txt"]
    assert arts[0].data == dmesg
    assert not (Path("/abs") / "x.txt").exists()


def test_nesting_is_bounded(tmp_path: Path) -> None:
    data = (ART / "census_loop.txt").read_bytes()
    for i in range(MAX_TAR_DEPTH + 1):
        data = tar_zst({f"level{i}.tar.zst": data})
    (tmp_path / "deep.tar.zst").write_bytes(data)
    arts = list(gather([tmp_path / "deep.tar.zst"]))
    assert len(arts) == 1 and arts[0].data is None and "nested" in (arts[0].error or "")


def test_size_caps(tmp_path: Path) -> None:
    (tmp_path / "big.txt").write_bytes(b"x" * 5000)
    (tmp_path / "bomb.gz").write_bytes(gzip.compress(b"\0" * 100_000))
    (tmp_path / "ok.txt").write_bytes(b"y" * 100)
    arts = {Path(a.label).name: a for a in gather([tmp_path], Limits(file_bytes=4096))}
    assert arts["big.txt"].data is None and "cap" in (arts["big.txt"].error or "")
    assert arts["bomb.gz"].data is None and "cap" in (arts["bomb.gz"].error or "")
    assert arts["ok.txt"].data == b"y" * 100
    total = list(gather([tmp_path], Limits(file_bytes=10_000, total_bytes=5_050)))
    assert sum(a.data is not None for a in total) == 1  # the second read passes the total


def test_truncated_bundle_keeps_the_members_before_the_cut(tmp_path: Path) -> None:
    a, b = (ART / "dmesg.txt").read_bytes(), (ART / "mpstat12.json").read_bytes()
    raw = tar_bytes({"one.txt": a, "two.json": b})
    (tmp_path / "cut.tar").write_bytes(raw[: 512 + len(a) + 512 + 700])  # inside member two
    arts = list(gather([tmp_path / "cut.tar"]))
    assert arts[0].data == a
    assert any(x.data is None and x.error for x in arts[1:])


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(cut=st.integers(0, 4000), junk=st.binary(max_size=64))
def test_hostile_bundles_never_raise(tmp_path: Path, cut: int, junk: bytes) -> None:
    raw = tar_zst({"x": (ART / "dmesg.txt").read_bytes(), "y": junk})
    p = tmp_path / "h.tar.zst"
    p.write_bytes(raw[:cut] + junk)
    for art in gather([p]):
        assert art.data is not None or art.error
