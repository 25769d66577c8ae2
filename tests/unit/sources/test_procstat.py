from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from corescope.analysis.usage import machine_usage, sample_usage
from corescope.model.cores import FIELDS
from corescope.sources.procstat import delta, parse_proc_stat
from support import FIXTURES

D = FIXTURES / "procstat"


def read(name: str):
    return parse_proc_stat((D / name).read_bytes(), name)


def test_real_capture_from_this_machine():
    p = read("vm-2cpu-6.18.stat")
    assert sorted(p.cpus) == [0, 1]
    assert p.diagnostics == ()
    assert p.btime is not None and p.btime > 1_700_000_000
    # the cpu sum line is the per-CPU sum (what mpstat's `all` is built from)
    for i in range(len(FIELDS)):
        assert p.total is not None
        assert abs(p.total[i] - sum(v[i] for v in p.cpus.values())) <= 2


def test_many_cpu_fixtures_parse_completely():
    for n in (96, 192):
        a, b = read(f"synth-{n}cpu.stat"), read(f"synth-{n}cpu.stat.next")
        assert sorted(a.cpus) == list(range(n)) and a.diagnostics == ()
        s = delta(a, b, t=1.0, interval_s=1.0)
        usage = sample_usage(s)
        assert len(usage) == n
        for u in usage.values():
            assert abs(sum(u.pct[m] for m in ("usr", "nice", "sys", "iowait", "irq", "soft",
                                              "steal", "idle")) - 100) < 1e-6


def test_offline_cpu_is_hidden_and_returning_cpu_skipped_one_interval():
    a, b, c = read("hotplug-1.stat"), read("hotplug-2.stat"), read("hotplug-3.stat")
    s1 = delta(a, b, 2.0, 1.0)
    assert sorted(s1.deltas) == [0, 1, 3]  # cpu2 offline: hidden, not shown as idle
    s2 = delta(b, c, 3.0, 1.0)
    # cpu2 back: no honest delta for this interval yet; cpu3's idle went 20 ticks back while
    # user and system went on (a glitch, not a restart): no sample rather than ~100 % idle
    assert sorted(s2.deltas) == [0, 1]
    # machine row sums only online CPUs: an offline CPU does not count as idle
    all_ = machine_usage(s1)
    assert all_.ticks == sum(sample_usage(s1)[c].ticks for c in (0, 1, 3))


def test_backwards_counters_clamp_to_zero():
    a, b = read("hotplug-1.stat"), read("hotplug-2.stat")
    d = delta(a, b, 2.0, 1.0).deltas[1]
    assert d[FIELDS.index("iowait")] == 0  # 300 -> 250
    assert all(v >= 0 for v in d)


def test_extra_columns_tolerated():
    c = read("hotplug-3.stat")
    assert c.diagnostics == ()
    assert c.cpus[0] == (4100, 10, 2020, 100080, 200, 0, 80, 5, 0, 0)


def test_old_kernel_with_four_columns_is_padded():
    p = parse_proc_stat("cpu0 1 2 3 4\n")
    assert p.cpus[0] == (1, 2, 3, 4, 0, 0, 0, 0, 0, 0)


def test_truncated_and_garbage_give_diagnostics_not_exceptions():
    t = read("garbage-truncated.stat")
    assert sorted(t.cpus) in ([0], [0, 1])  # the last line may be cut mid-number
    g = read("garbage-mixed.stat")
    assert 2 in g.cpus  # the good line survives
    msgs = " ".join(d.message for d in g.diagnostics)
    assert "unreadable cpu line" in msgs and "duplicate" in msgs and "unknown cpu name" in msgs
    empty = parse_proc_stat(b"")
    assert empty.cpus == {} and "no per-cpu lines" in empty.diagnostics[0].message


@settings(max_examples=400, deadline=None)
@given(st.binary(max_size=2000))
def test_no_bytes_crash_the_parser(data: bytes):
    p = parse_proc_stat(data)
    assert all(len(v) == len(FIELDS) and min(v) >= 0 for v in p.cpus.values())


_line = st.one_of(
    st.builds(lambda n, vals: f"cpu{n} " + " ".join(vals), st.integers(0, 300),
              st.lists(st.one_of(st.integers(0, 2**64).map(str), st.text(max_size=4)),
                       max_size=14)),
    st.text(max_size=40),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_line, max_size=30), st.lists(_line, max_size=30))
def test_no_structured_garbage_crashes_parse_or_delta(a: list[str], b: list[str]):
    pa, pb = parse_proc_stat("\n".join(a)), parse_proc_stat("\n".join(b))
    s = delta(pa, pb, 1.0, 1.0)
    for u in sample_usage(s).values():
        assert all(0.0 <= v <= 100.0 + 1e-9 for k, v in u.pct.items() if k not in ("usr",))
