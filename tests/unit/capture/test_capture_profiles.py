"""A bundle's perf script copy of the ring (capture/profiles.script_text) reads back through
corescope's own perf script reader: comm, pid/tid, CPU, wall time and frames."""

from __future__ import annotations

from corescope.capture.profiles import script_text
from corescope.model.profiles import Frame, StackSample
from corescope.sources.perf_script import parse_text


def test_ring_copy_reads_back() -> None:
    frames = (Frame("mem_cgroup_nr_lru_pages", "[kernel.kallsyms]", kernel=True),
              Frame("read", "/usr/lib/libc.so.6"))
    rows = [(StackSample("kubelet", 2201, 2207, cpu, None, "cpu-clock", frames), t)
            for cpu, t in ((1, 1793470000.25), (0, 1793470000.5))]
    samples, diags = parse_text(script_text(rows))
    assert not diags
    assert [(s.comm, s.pid, s.tid, s.cpu, s.time) for s in samples] == [
        ("kubelet", 2201, 2207, 1, 1793470000.25), ("kubelet", 2201, 2207, 0, 1793470000.5)]
    for s in samples:
        assert [f.symbol for f in s.frames] == ["mem_cgroup_nr_lru_pages", "read"]
        assert s.frames[0].kernel and not s.frames[1].kernel


def test_page_columns_and_profiles_take_folded_stacks_without_times() -> None:
    # a ring chunk imported from folded stacks yields (sample, None): the per-minute columns
    # cannot place it (left out), the window's profile counts it
    from corescope.evidence.profiles import StackProfiles
    from corescope.render import report_model

    frames = (Frame("mem_cgroup_nr_lru_pages", "[kernel.kallsyms]", kernel=True),)
    timed = StackSample("kubelet", 2201, 2207, 1, None, "cpu-clock", frames)
    folded = StackSample("kubelet", 2201, 2207, None, None, "cpu-clock", frames, count=5)

    def stacks(lo: float, hi: float, cpu: int | None):
        return [(timed, 1793470010.0), (folded, None)]

    cols = report_model._column_flames(stacks, 1, 1793470000.0, 1793470120.0, 60.0, 100)
    assert [c["samples"] for c in cols] == [1]

    class Ring:  # an Evidence's stacks: a folded chunk's samples come without a time
        def stacks(self, lo: float, hi: float, cpu: int | None = None, diags=None):
            return stacks(lo, hi, cpu)

    assert StackProfiles(Ring()).profile(1793470000.0, 1793470120.0, 1).samples == 6
