"""Every artifact parser is total: garbage, truncation and mixed content give diagnostics,
never an exception."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import FIXTURES
from corescope.sources.artifacts.content import module_for

ART = FIXTURES / "artifacts"

SAMPLES = {
    "mpstat_json": ART / "mpstat12.json",
    "sadf_json": ART / "sadf.json",
    "mpstat_text": ART / "mpstat_12h.txt",
    "sadf_ppc": ART / "sadf_p.txt",
    "sadf_xml": ART / "sadf_x.xml",
    "proc_stat": ART / "procstat_loop_date.txt",
    "proc_interrupts": ART / "interrupts_loop.txt",
    "softirqs_loop": ART / "softirqs_loop.txt",
    "census_loop": ART / "census_loop.txt",
    "proc_cgroups": ART / "census_loop.txt",
    "kernel_log": ART / "dmesg_x.txt",
    "journal_json": FIXTURES / "events" / "journal_k.json",
    "systemctl_show": FIXTURES / "zombies" / "tools" / "systemctl_show.txt",
    "crictl_json": FIXTURES / "zombies" / "tools" / "crictl_ps.json",
    "crictl_table": FIXTURES / "zombies" / "tools" / "crictl_ps_table.txt",
    "docker_ps": FIXTURES / "zombies" / "tools" / "docker_ps.txt",
    "docker_inspect": FIXTURES / "zombies" / "tools" / "docker_inspect.json",
    "perf_script": FIXTURES / "profiles" / "burner_idle.txt",
    "folded": FIXTURES / "profiles" / "burner_idle.txt",
}
KINDS = sorted(SAMPLES)


def _parse(kind: str, data: bytes) -> None:
    mod = module_for(kind)
    assert mod is not None
    p = mod.parse(data, kind, "t")
    assert p.kind == kind
    p.span()
    p.cpus()
    assert p.records >= 0


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(kind=st.sampled_from(KINDS), data=st.binary(max_size=2000))
def test_random_bytes(kind: str, data: bytes) -> None:
    _parse(kind, data)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(kind=st.sampled_from(KINDS), cut=st.floats(0, 1), flip=st.integers(0, 10**9),
       junk=st.binary(max_size=40))
def test_truncated_and_corrupted_real_files(kind: str, cut: float, flip: int,
                                            junk: bytes) -> None:
    data = SAMPLES[kind].read_bytes()
    n = int(len(data) * cut)
    _parse(kind, data[:n])
    if data:
        i = flip % len(data)
        _parse(kind, data[:i] + junk + data[i + 1:])


@pytest.mark.parametrize("kind", KINDS)
def test_mixed_content(kind: str) -> None:
    """Two different artifacts glued together: what one kind can read of it."""
    for other in ("census_loop", "kernel_log", "mpstat_json"):
        _parse(kind, SAMPLES[kind].read_bytes() + b"\n" + SAMPLES[other].read_bytes())
