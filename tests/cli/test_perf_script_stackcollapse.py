"""perf script read as FlameGraph's stackcollapse-perf.pl reads it: sample periods, one event
per graph, unindented frame lines, `_[k]` on every kernel dso, dsos with blanks and
parentheses, `a->b` inlined frames, `comm-?` where no pid is printed, names tidied.

Fixtures: `stackcollapse_forms.txt` (records in builtin-script.c's format, written for these
forms; see the fixture README) and `two_events_default.txt` (a real capture: page-faults at
varying periods, then cpu-clock)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

from corescope.analysis.flame import Profile
from corescope.sources.perf_script import parse_blocks, parse_text
from support import FIXTURES, run_cli, run_cli_json

FIX = FIXTURES / "profiles"
FORMS = FIX / "stackcollapse_forms.txt"
TWO = FIX / "two_events_default.txt"
SRC = Path(__file__).resolve().parents[2] / "src"


def folded(*args: str) -> Counter[str]:
    p = run_cli("flame", "--format", "folded", "--include-idle", *args)
    assert p.returncode == 0, p.stderr
    out: Counter[str] = Counter()
    for line in p.stdout.splitlines():
        stack, _, n = line.rpartition(" ")
        out[stack] += int(n)
    return out


def by_comm(stacks: Counter[str]) -> dict[str, str]:
    return {k.split(";", 1)[0]: k for k in stacks}


def test_unindented_frame_lines_belong_to_their_record() -> None:
    text = FORMS.read_text()
    for samples in (parse_text(text)[0], list(parse_blocks([text]))):
        v8 = next(s for s in samples if s.comm == "V8 WorkerThread")
        assert [f.symbol for f in v8.frames] == ["native_write_msr_safe",
                                                "intel_pmu_enable_all", "main"]
    got = by_comm(folded("--perf-script", str(FORMS)))
    assert got["V8_WorkerThread"] == \
        "V8_WorkerThread;main;intel_pmu_enable_all_[k];native_write_msr_safe_[k]"


def test_every_kernel_dso_is_marked_and_the_vdso_is_not() -> None:
    got = by_comm(folded("--perf-script", str(FORMS)))
    # vmlinux paths (with and without a version), a module in brackets and a .ko file
    # a garbage address at the root of a user stack is no kernel frame; an [unknown] symbol
    # in the kernel's map is named after it as stackcollapse names it
    assert got["dd"] == ("dd;[[kernel.kallsyms]]_[k];[unknown];read;__vdso_clock_gettime;"
                         "xfs_file_read_iter_[k];ena_io_poll_[k];vfs_read_[k];fsnotify_[k]")


def test_dsos_with_blanks_and_parentheses_stay_out_of_names() -> None:
    samples, _ = parse_text(FORMS.read_text())
    node = next(s for s in samples if s.comm == "node")
    dsos = [f.dso for f in node.frames]
    assert dsos[0] == "/memfd:sealed-91173221a7ea (deleted)"
    assert "/opt/My App (x86)/lib/libapp.so" in dsos
    assert "/usr/lib/libapp (old).so (deleted)" in dsos
    got = by_comm(folded("--perf-script", str(FORMS)))
    assert got["node"] == ("node;main;mix_[i];churn_[i];RegExp:[&<>];(anonymous namespace)::run;"
                           "net/http.(*Client).Do;Foo::bar;[memfd:sealed-91173221a7ea]")


def test_inlined_arrow_frames_split_leafward() -> None:
    samples, _ = parse_text(FORMS.read_text())
    node = next(s for s in samples if s.comm == "node")
    leaf = [(f.symbol, f.inlined) for f in node.frames[-3:]]
    assert leaf == [("churn", True), ("mix", True), ("main", False)]


def test_java_names_tidied_for_the_process_java() -> None:
    got = by_comm(folded("--perf-script", str(FORMS)))
    assert got["java"] == \
        "java;sun/nio/ch/SocketChannelImpl:.write;sun/nio/ch/FileDispatcherImpl:.write0"


def test_samples_weigh_their_period_by_default() -> None:
    samples, _ = parse_text(TWO.read_text())
    faults = [s for s in samples if s.event == "page-faults"]
    assert {s.period for s in faults} >= {1, 3, 95, 301}
    by_period = folded("--perf-script", str(TWO))
    assert sum(by_period.values()) == sum(s.period or 1 for s in faults)
    by_samples = folded("--perf-script", str(TWO), "--weight", "samples")
    assert sum(by_samples.values()) == len(faults)
    prof = Profile(include_idle=True, weight="period").extend(faults)
    assert prof.samples == len(faults) and prof.total_weight == sum(by_period.values())


def test_one_event_per_graph_first_by_default_or_named() -> None:
    samples, _ = parse_text(TWO.read_text())
    n = Counter(s.event for s in samples)
    assert samples[0].event == "page-faults" and n["cpu-clock"] > 0
    first = run_cli_json("flame", "--perf-script", str(TWO), "--format", "json")
    assert first["event"] == "page-faults" and first["samples"] == n["page-faults"]
    assert first["events"] == dict(n)  # every event present, with its sample count
    clock = run_cli_json("flame", "--perf-script", str(TWO), "--format", "json",
                         "--event", "cpu-clock")
    assert clock["event"] == "cpu-clock" and clock["samples"] == n["cpu-clock"]
    p = run_cli("flame", "--perf-script", str(TWO), "--event", "cycles")
    assert p.returncode == 2 and "no sample of that perf event" in p.stderr
    assert "cpu-clock" in p.stderr and "Traceback" not in p.stderr
    p = run_cli("flame", "--perf-script", str(TWO), "--format", "folded")
    assert "drawing the first, page-faults" in p.stderr


def test_with_pid_shows_a_question_mark_where_only_the_tid_is_printed() -> None:
    got = folded("--perf-script", str(FORMS), "--with-pid")
    assert {k.split(";", 1)[0] for k in got} == {"dd-?", "node-?", "V8_WorkerThread-?",
                                                 "java-?"}
    tid = folded("--perf-script", str(FORMS), "--with-tid")
    assert "dd-?/29776" in {k.split(";", 1)[0] for k in tid}
    # pid/tid printed: both shown
    ring = FIX / "spin_boot_ring.txt"
    samples, _ = parse_text(ring.read_text())
    s = samples[0]
    heads = {k.split(";", 1)[0] for k in folded("--perf-script", str(ring), "--with-tid")}
    assert f"{s.comm}-{s.pid}/{s.tid}" in heads
    p = run_cli("flame", "--perf-script", str(ring), "--with-pid", "--with-tid")
    assert p.returncode == 2


def test_the_default_format_never_compiles_the_other_layouts() -> None:
    """The 192 patterns of the `-F` layouts cost more to compile than reading a file in the
    default format takes: they are built only when a file needs them."""
    code = ("from corescope.sources import perf_layout, perf_script\n"
            f"s, _ = perf_script.parse_text(open({str(TWO)!r}).read())\n"
            "assert s and perf_layout.all_layouts.cache_info().currsize == 0\n"
            "assert len(perf_layout.LAYOUTS) == 96 and perf_layout.EMPTY.empty\n")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       env=dict(os.environ, PYTHONPATH=str(SRC)), check=False)
    assert p.returncode == 0, p.stderr


def test_a_cut_or_spliced_frame_line_reads_as_stackcollapse_reads_it() -> None:
    """Hand-edited perf script files (FlameScope's synthetic examples are made so) hold frame
    lines cut short or joined to the end of another: `start_thread (/lib/x86_64-linux-gnu`
    (the dso never closed) is no frame, as stackcollapse-perf.pl skips a line its
    `addr sym (dso)` pattern does not match; `start_secondary ([kernel.kallsyms])/lib.so)`
    (parentheses that do not balance) is read with its dso after the last ` (`, a kernel one,
    not as a symbol `start_secondary ` of no dso. Records in builtin-script.c's format."""
    text = ("java  8192 [000]  5076.100000: cpu-clock: \n"
            "\t    7fa4b39f24f8 run (/tmp/perf-4771.map)\n"
            "\t    7fa4c73bc184 start_thread (/lib/x86_64-linux-gnu\n"
            "\t    7fa4c5ffe3dd clone (/lib/x86_64-linux-gnu/libc-2.19.so)\n"
            "\n"
            "swapper     0 [007]  5097.999999: cpu-clock: \n"
            "\tffffffff81051586 native_safe_halt ([kernel.kallsyms])\n"
            "\tffffffff810427cd start_secondary ([kernel.kallsyms])/libpthread-2.19.so)\n"
            "\n")
    for samples in (parse_text(text)[0], list(parse_blocks([text]))):
        java, swapper = samples
        assert [f.symbol for f in java.frames] == ["run", "clone"]
        assert [(f.symbol, f.kernel) for f in swapper.frames] == \
            [("native_safe_halt", True), ("start_secondary", True)]
