"""Every artifact parser is total: garbage, truncation and mixed content give diagnostics,
never an exception."""

from __future__ import annotations

from importlib import import_module
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from corescope.sources.artifacts import KIND_MODULES
from corescope.sources.artifacts.content import decompress, module_for, sniff
from support import FIXTURES

ART = FIXTURES / "artifacts"
TOOLS = FIXTURES / "zombies" / "tools"
PROFILES = FIXTURES / "profiles"

# A real (or faithful) file of every kind the registry knows; the kinds come from the registry
# itself, so a kind added without a sample here fails test_every_kind_has_a_sample.
SAMPLES: dict[str, Path] = {
    "corescope_native": ART / "native" / "events.ndjson",
    "corescope_manifest": ART / "native" / "manifest.json",
    "psi_loop": FIXTURES / "pressure" / "psi_cpu_6.18.txt",
    "schedstat_loop": FIXTURES / "pressure" / "schedstat_v17_4cpu.txt",
    "vmstat_loop": FIXTURES / "pressure" / "vmstat_6.18.txt",
    "mpstat_json": ART / "mpstat12.json",
    "sadf_json": ART / "sadf.json",
    "mpstat_text": ART / "mpstat_A.txt",
    "sadf_csv": ART / "sadf_d_A.csv",
    "sadf_ppc": ART / "sadf_p.txt",
    "sadf_xml": ART / "sadf_x.xml",
    "census_loop": ART / "census_loop.txt",
    "proc_cgroups": FIXTURES / "zombies" / "v612" / "proc" / "cgroups",
    "cgroup_stat": FIXTURES / "zombies" / "v612" / "sys" / "fs" / "cgroup" / "cgroup.stat",
    "softirqs_loop": ART / "softirqs_loop.txt",
    "proc_interrupts": ART / "interrupts_loop.txt",
    "proc_stat": ART / "procstat_loop_date.txt",
    "systemctl_show": TOOLS / "systemctl_show.txt",
    "journal_json": FIXTURES / "events" / "journal_k.json",
    "journal_export": ART / "journal_all_anon_export.txt",
    "journal_verbose": ART / "journal_binary_verbose.txt",
    "crictl_json": TOOLS / "crictl_ps.json",
    "crictl_table": TOOLS / "crictl_ps_table.txt",
    "docker_ps": TOOLS / "docker_ps.txt",
    "docker_inspect": TOOLS / "docker_inspect.json",
    "kubectl_pods": TOOLS / "kubectl_pods_wide.txt",
    "kubectl_json": TOOLS / "kubectl_pods.json",
    "kubectl_describe": TOOLS / "kubectl_describe_pod.txt",
    "perf_script": PROFILES / "fields_tid_period_event.txt",
    "folded": PROFILES / "spin.folded",
    "uptime_since": ART / "uptime_s.txt",
    "uptime_pair": ART / "uptime_pair.txt",
    "kernel_log": ART / "kern_log_rfc3339.txt",
}
# more real layouts of the kinds with many, fuzzed too (the truncation test)
MORE: dict[str, tuple[Path, ...]] = {
    "corescope_native": (ART / "native" / "cores.ndjson", ART / "native" / "irq-maps.ndjson",
                         ART / "native" / "censuses.ndjson",
                         ART / "native" / "restarts.ndjson"),
    "mpstat_text": (ART / "mpstat_12h.txt", ART / "mpstat_de.txt"),
    "mpstat_json": (ART / "mpstat11_de_midnight.json",),
    "sadf_csv": (ART / "sadf_dh.csv",),
    "perf_script": (PROFILES / "burner_idle.txt", PROFILES / "variant_header.txt"),
    "kernel_log": (ART / "dmesg_x.txt", ART / "kern_log_trad.txt", ART / "syslog_mixed.txt",
                   ART / "dmesg_T.txt"),
    "journal_json": (ART / "journal_k_sse.json",),
    "census_loop": (ART / "cgroup_stat_loop.txt",),
}


def registry_kinds() -> list[str]:
    return sorted({k for name in KIND_MODULES for k in import_module(name).KINDS})


KINDS = registry_kinds()
FILES = [(k, p) for k in KINDS for p in (SAMPLES[k], *MORE.get(k, ())) if k in SAMPLES]


def test_every_kind_has_a_sample() -> None:
    assert [k for k in KINDS if k not in SAMPLES] == []
    for kind, path in FILES:
        assert sniff(decompress(path.read_bytes(), 1 << 26).data) == kind, path


def _parse(kind: str, data: bytes) -> None:
    mod = module_for(kind)
    assert mod is not None
    p = mod.parse(data, kind, "t")
    assert p.kind == kind
    span = p.span()  # garbage never becomes a time before 1970 or past year 9999
    assert span is None or 0 < span[0] <= span[1] < 253402300800, span
    assert all(0 < b.epoch < 253402300800 for b in p.boot_times), p.boot_times
    assert all(c >= 0 for c in p.cpus())
    assert p.records >= 0


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(kind=st.sampled_from(KINDS), data=st.binary(max_size=2000))
def test_random_bytes(kind: str, data: bytes) -> None:
    _parse(kind, data)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(file=st.sampled_from(FILES), cut=st.floats(0, 1), flip=st.integers(0, 10**9),
       junk=st.binary(max_size=40))
def test_truncated_and_corrupted_real_files(file: tuple[str, Path], cut: float, flip: int,
                                            junk: bytes) -> None:
    kind, path = file
    data = path.read_bytes()
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
