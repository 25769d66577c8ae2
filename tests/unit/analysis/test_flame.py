"""Flame arithmetic on real captures: idle detection, folded stacks, tables, the diff."""

from __future__ import annotations

from corescope.analysis.flame import Profile, diff, diff_folded, is_idle
from corescope.analysis.flame_report import FlameReport, top_functions
from corescope.model.profiles import Frame, StackSample
from corescope.sources.perf_script import parse_text
from support import FIXTURES

FIX = FIXTURES / "profiles"


def capture() -> list[StackSample]:
    return parse_text((FIX / "burner_idle.txt").read_text())[0]


def k(name: str) -> Frame:
    return Frame(name, "[kernel.kallsyms]", True)


def sample(comm: str, pid: int, *frames: Frame, cpu: int = 0, t: float = 1.0) -> StackSample:
    return StackSample(comm, pid, pid, cpu, t, "cpu-clock", tuple(frames))


def test_idle_is_swapper_in_the_idle_loop_but_not_irq_work() -> None:
    samples = capture()
    assert sum(is_idle(s) for s in samples) == 137
    assert not any(is_idle(s) for s in samples if s.comm == "python3")
    # softirq work (NAPI) taken on an idle CPU is busy time, not idle
    napi = sample("swapper/1", 0, k("ena_io_poll"), k("net_rx_action"), k("__do_softirq"),
                  k("irq_exit_rcu"), k("sysvec_apic_timer_interrupt"),
                  k("asm_sysvec_apic_timer_interrupt"), k("pv_native_safe_halt"),
                  k("default_idle"), k("do_idle"), k("cpu_startup_entry"))
    assert not is_idle(napi)
    assert is_idle(sample("swapper", 0))  # no stack at all
    assert is_idle(sample("swapper/3", 0, k("intel_idle"), k("cpuidle_enter_state")))
    # a process stuck in a function that happens to share a name is not idle
    assert not is_idle(sample("kubelet", 12, k("default_idle")))


def test_folded_stacks_root_first_with_kernel_suffix_and_pid() -> None:
    prof = Profile().extend(capture())
    folded = prof.folded()
    assert sum(folded.values()) == 137 == prof.busy_samples
    top, n = folded.most_common(1)[0]
    parts = top.split(";")
    assert parts[0] == "python3"
    assert parts[1] == "[unknown]" and parts[2] == "__GI___readv"
    assert parts[-2:] == ["read_iter_zero_[k]", "iov_iter_zero_[k]"]
    assert n > 100
    assert all(k.startswith("python3-6831;") for k in prof.folded(with_pid=True))
    with_idle = Profile(include_idle=True).extend(capture()).folded()
    assert sum(with_idle.values()) == 274
    assert any(k.startswith("swapper;") and k.endswith("pv_native_safe_halt_[k]")
               for k in with_idle)


def test_top_processes_and_functions() -> None:
    prof = Profile().extend(capture())
    procs = prof.top_processes()
    assert procs[0].comm == "python3" and procs[0].pct == 100.0
    funcs = {f.name: f for f in top_functions(prof)}
    assert "[unknown]" not in funcs
    leaf = funcs["iov_iter_zero"]
    assert leaf.kernel and leaf.self_pct > 80 and leaf.total_pct == leaf.self_pct
    path = funcs["read_iter_zero"]
    assert path.total_pct > leaf.total_pct and path.self_pct < 10
    assert funcs["__GI___readv"].kernel is False


def test_recursion_counts_once_in_total() -> None:
    prof = Profile()
    f = Frame("walk", "/bin/x")
    for _ in range(4):
        prof.add(sample("x", 5, f, f, f, Frame("main", "/bin/x")))
    selfc, total = prof.function_counts()
    assert total[("walk", False)] == 4 and selfc[("walk", False)] == 4


def test_diff_normalises_by_total_samples() -> None:
    before = Profile()
    after = Profile()
    # baseline: 1000 samples, kubelet 8 of them (0.8%); window: 200 samples, kubelet 13 (6.5%)
    for i in range(1000):
        before.add(sample("kubelet" if i < 8 else "swapper", 1 if i < 8 else 0,
                          k("mem_cgroup_nr_lru_pages") if i < 8 else k("pv_native_safe_halt")))
    for i in range(200):
        after.add(sample("kubelet" if i < 13 else "swapper", 1 if i < 13 else 0,
                         k("mem_cgroup_nr_lru_pages") if i < 13 else k("pv_native_safe_halt")))
    grew, shrank = diff(after, before)
    kub = next(c for c in grew if c.kind == "process")
    assert kub.name == "kubelet"
    assert round(kub.before_pct, 2) == 0.8 and round(kub.after_pct, 2) == 6.5
    assert any(c.name == "mem_cgroup_nr_lru_pages_[k]" for c in grew)
    assert shrank == []
    d = diff_folded(after, before)
    a, b = d["kubelet;mem_cgroup_nr_lru_pages_[k]"]
    assert a == 13 and abs(b - 8 * 200 / 1000) < 1e-9


def test_report_json_contract() -> None:
    prof = Profile().extend(capture())
    base = Profile().extend(s for s in capture() if s.comm == "swapper")
    rep = FlameReport(1.0, 2.0, "perf", 1, prof, base, 0.0, 1.0, "explicit")
    j = rep.to_json()
    for key in ("window", "cpu", "samples", "idle_samples", "top_processes",
                "top_functions", "diff"):
        assert key in j
    assert set(j["window"]) >= {"start", "end"}
    assert j["samples"] == 274 and j["idle_samples"] == 137 and j["cpu"] == 1
    assert set(j["top_processes"][0]) >= {"comm", "pct"}
    assert set(j["top_functions"][0]) >= {"name", "self_pct", "total_pct"}
    grew = j["diff"]["grew"]
    assert grew[0] == {**grew[0], "name": "python3", "before_pct": 0.0}
    assert set(grew[0]) >= {"name", "before_pct", "after_pct"}
    assert FlameReport(None, None, "perf", None, prof).to_json()["diff"] is None
