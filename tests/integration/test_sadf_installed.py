"""The installed sadf (Debian's sysstat) against its forms as corescope reads them: one sar
binary rendered every way by the real tool reads into the same samples, and the fixtures in
tests/fixtures/artifacts are what that sadf printed (a subprocess each: not a unit test)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from corescope.sources.artifacts import sysstat
from support import FIXTURES, parse_artifact, sample_tuples

ART = FIXTURES / "artifacts"
SA_BIN = ART / "sar_burn_sa.bin"  # `sar -o sa.bin -P ALL 1 5` while one CPU burned

def _bytes(name: str) -> bytes:
    return (ART / name).read_bytes()


_read = parse_artifact
_samples = sample_tuples


# --- the same binary rendered every way by the installed sadf ----------------------------------

def _sadf(*args: str) -> bytes:
    return subprocess.run(["sadf", *args], capture_output=True, check=True, timeout=60,
                          env={"LC_ALL": "C", "TZ": "UTC", "PATH": "/usr/bin:/bin"}).stdout


@pytest.mark.skipif(shutil.which("sadf") is None, reason="sysstat's sadf is not installed")
@pytest.mark.parametrize("opts", [("-u", "ALL"), ("-u",)])
@pytest.mark.parametrize("form", [("-p",), ("-p", "-t"), ("-p", "-U"), ("-x",), ("-x", "-t")])
def test_installed_sadf_forms_agree(utc, opts: tuple[str, ...], form: tuple[str, ...]  # type: ignore[no-untyped-def]
                                    ) -> None:
    ref = _read(_sadf("-d", str(SA_BIN), "--", "-P", "ALL", *opts))
    assert ref.kind == "sadf_csv" and len(ref.samples) == 5
    p = _read(_sadf(*form, str(SA_BIN), "--", "-P", "ALL", *opts))
    assert p.kind == ("sadf_xml" if "-x" in form else "sadf_ppc") and not p.diagnostics
    assert _samples(p) == _samples(ref)


def test_fixtures_are_what_sadf_printed() -> None:
    """The ppc fixture is the same binary's `sadf -p` (kept byte for byte)."""
    if shutil.which("sadf") is None:
        pytest.skip("sysstat's sadf is not installed")
    assert _sadf("-p", str(SA_BIN), "--", "-P", "ALL", "-u", "ALL") == _bytes("sadf_p.txt")
    assert _sadf("-x", str(SA_BIN), "--", "-P", "ALL", "-u", "ALL") == _bytes("sadf_x.xml")
    assert Path(SA_BIN).stat().st_size < 64 * 1024
    assert sysstat.sadf_time("2026-12-01 10:27:54 UTC") == 1796120874.0
