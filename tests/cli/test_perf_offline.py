"""Offline flame windows over saved `perf script` text (issue 8 item 5) and the ring's text
chunks (issue 12 item 4): both clocks, stdin, folders, folded stacks, --at/--before/--event/
--diff, through the real CLI, against counts taken independently from the fixtures."""

from __future__ import annotations

import dataclasses
import gzip
import json
import os
import stat
from pathlib import Path

import pytest
import zstandard

from corescope.evidence.profile_query import ring_samples
from corescope.ingest.perf_write import import_input
from corescope.model.events import KernelEvent
from corescope.model.profiles import UNANCHORED
from corescope.runner import Runner
from corescope.sources.perf_script import parse_text
from corescope.store import events as store_events
from corescope.store import profiles as ring
from corescope.store.db import Store
from support import FIXTURES, run_cli, run_cli_json

FIX = FIXTURES / "profiles"
BOOT_RING = FIX / "spin_boot_ring.txt"
BOOT_DEFAULT = FIX / "spin_boot_default.txt"
RT_RING = FIX / "spin_realtime_ring.txt"
RT_DEFAULT = FIX / "spin_realtime_default.txt"
FOLDED = FIX / "spin.folded"
BOOT_TIME = 1796052546.158  # wall − CLOCK_MONOTONIC when BOOT_* were captured (README)
TARGET = "corescope_spin_target"


def times(path: Path, cpu: int | None = None) -> list[float]:
    samples, _d = parse_text(path.read_text())
    return sorted(s.time for s in samples
                  if s.time is not None and (cpu is None or s.cpu == cpu))


def flame(*args: str, **kw) -> dict:
    return run_cli_json("flame", *args, "--format", "json", **kw)


def names(j: dict) -> set[str]:
    return {f["name"] for f in j["top_functions"]}


@pytest.mark.parametrize("ring_f,default_f", [(BOOT_RING, BOOT_DEFAULT), (RT_RING, RT_DEFAULT)])
def test_ring_fields_and_default_fields_give_the_same_profile(ring_f: Path, default_f: Path):
    # counted by samples: the ring's -F prints no period, the default fields do
    a, b = (flame("--perf-script", str(f), "--weight", "samples") for f in (ring_f, default_f))
    assert a["samples"] == b["samples"] == len(times(ring_f)) > 0
    assert a["top_processes"] == b["top_processes"]
    # by period (the default), the shares are the same: cpu-clock's period is constant
    c = flame("--perf-script", str(default_f))
    assert c["weight"] == "period" and c["total_weight"] > c["samples"]
    assert [(p["comm"], p["pct"]) for p in c["top_processes"]] == \
        [(p["comm"], p["pct"]) for p in a["top_processes"]]
    assert TARGET in names(a) and names(a) == names(b)


def test_clocks_detected_and_anchored():
    rt = flame("--perf-script", str(RT_RING))
    assert rt["window"]["clock"] == "wall"
    assert rt["window"]["start"] == pytest.approx(times(RT_RING)[0], abs=1e-6)
    boot = flame("--perf-script", str(BOOT_RING))
    assert boot["window"]["clock"] == "perf"
    assert boot["window"]["start"] == pytest.approx(times(BOOT_RING)[0], abs=1e-6)
    anchored = flame("--perf-script", str(BOOT_RING), "--boot-time", repr(BOOT_TIME))
    assert anchored["window"]["clock"] == "wall"
    assert anchored["window"]["start"] == pytest.approx(times(BOOT_RING)[0] + BOOT_TIME,
                                                        abs=1e-6)
    # the boot-clock capture ran just before the CLOCK_REALTIME one: anchored, it lands
    # in the seconds before it
    gap = rt["window"]["start"] - anchored["window"]["end"]
    assert 0 < gap < 5


def test_window_at_before_counts_exactly_the_samples_inside():
    ts = times(RT_RING)
    at = ts[len(ts) // 2] + 1e-7
    j = flame("--perf-script", str(RT_RING), "--at", repr(at), "--before", "300ms")
    want = [t for t in ts if at - 0.3 <= t < at]
    assert j["samples"] == len(want) > 0
    assert j["window"] == {"start": round(at - 0.3, 6), "end": round(at, 6), "clock": "wall"}
    # --before alone counts back from the input's end
    end = flame("--perf-script", str(RT_RING), "--before", "200ms", "--cpu", "1")
    t1 = times(RT_RING, cpu=1)
    last = ts[-1] + 1e-6
    assert end["samples"] == sum(1 for t in t1 if last - 0.2 <= t < last) > 0
    # a window the input does not cover is a clear error naming what it holds
    p = run_cli("flame", "--perf-script", str(BOOT_RING), "--at", "100", "--before", "1s")
    assert p.returncode == 2 and "perf clock" in p.stderr and "--boot-time" in p.stderr


def test_stdin_streams(tmp_path: Path):
    text = RT_RING.read_text()
    p = run_cli("flame", "--perf-script", "-", "--format", "json", input=text, check=True)
    assert json.loads(p.stdout)["samples"] == len(times(RT_RING))
    p = run_cli("flame", "--perf-script", "/dev/stdin", "--format", "json", input=text)
    assert p.returncode == 0 and f'"samples": {len(times(RT_RING))}' in p.stdout
    empty = run_cli("flame", "--perf-script", "-", input="")
    assert empty.returncode == 2 and "no samples" in empty.stderr


def _split(path: Path, parts: int) -> list[str]:
    recs = path.read_text().split("\n\n")
    recs = [r + "\n\n" for r in recs if r.strip()]
    step = -(-len(recs) // parts)
    return ["".join(recs[i:i + step]) for i in range(0, len(recs), step)]


def test_folder_of_chunks_plain_gz_zst_equals_the_whole(tmp_path: Path):
    d = tmp_path / "chunks"
    d.mkdir()
    a, b, c = _split(RT_RING, 3)
    (d / "a.txt").write_text(a)
    (d / "b.txt.gz").write_bytes(gzip.compress(b.encode()))
    (d / "c.zst").write_bytes(zstandard.ZstdCompressor().compress(c.encode()))
    (d / "notes.md").write_text("# not a profile\nhello\n")
    whole = flame("--perf-script", str(RT_RING), "--cpu", "1")
    folder = flame("--perf-script", str(d), "--cpu", "1")
    assert folder["samples"] == whole["samples"] and folder["chunks"] == 3
    assert folder["top_functions"] == whole["top_functions"]
    assert any("notes.md: skipped" in n for n in folder["diagnostics"])
    # a shell glob after one --perf-script
    files = sorted(str(p) for p in d.iterdir() if p.suffix != ".md")
    glob = flame("--perf-script", *files, "--cpu", "1")
    assert glob["samples"] == whole["samples"]
    # and windows work across the chunk files
    ts = times(RT_RING)
    at = ts[-1] - 0.05
    w1 = flame("--perf-script", str(d), "--at", repr(at), "--before", "400ms")
    assert w1["samples"] == sum(1 for t in ts if at - 0.4 <= t < at)


def test_stray_argument_without_perf_script_is_a_usage_error():
    p = run_cli("flame", str(RT_RING))
    assert p.returncode == 2 and "follow --perf-script" in p.stderr


def test_folded_files_are_whole_file_only():
    j = flame("--perf-script", str(FOLDED))
    total = sum(int(ln.rsplit(" ", 1)[1]) for ln in FOLDED.read_text().splitlines())
    assert j["samples"] == total and TARGET in names(j)
    assert j["window"] == {"start": None, "end": None, "clock": "perf"}
    # what we read is what we write back
    out = run_cli("flame", "--perf-script", str(FOLDED), "--format", "folded", check=True)
    assert out.stdout == FOLDED.read_text()
    p = run_cli("flame", "--perf-script", str(FOLDED), "--before", "1s")
    assert p.returncode == 2 and "folded stacks carry no times" in p.stderr


def test_diff_auto_offline():
    ts = times(RT_RING)
    at = ts[-1] + 1e-6
    j = flame("--perf-script", str(RT_RING), "--at", repr(at), "--before", "250ms",
              "--diff", "auto", "--baseline-gap", "0s")
    d = j["diff"]
    assert d["baseline"]["end"] == pytest.approx(at - 0.25, abs=1e-6)
    assert d["baseline_samples"] == sum(1 for t in ts if at - 0.5 <= t < at - 0.25) > 0
    assert "same length" in d["baseline"]["note"]


def test_event_from_the_store_sets_the_offline_window(tmp_path: Path):
    ts = times(RT_RING)
    t_event = ts[len(ts) // 2] + 1e-7
    with Store.open(tmp_path / "s") as store:
        store_events.insert_events(store, [KernelEvent(
            time=t_event, kind="nic_tx_stall", raw="ena 0000:00:05.0 eth0: TX q 5 stall",
            driver="ena", device="0000:00:05.0", fields={}, lab=True, seq=1, mono_usec=1)])
        (ev,) = store_events.read_events(store, 0, 2e9)
    j = run_cli_json("--store", str(tmp_path / "s"), "flame", "--perf-script", str(RT_RING),
                     "--event", str(ev.id), "--before", "200ms", "--format", "json")
    assert j["window"]["end"] == pytest.approx(t_event, abs=1e-6)
    assert j["samples"] == sum(1 for t in ts if t_event - 0.2 <= t < t_event)
    # on perf's boot clock without --boot-time an event cannot be placed
    p = run_cli("--store", str(tmp_path / "s"), "flame", "--perf-script", str(BOOT_RING),
                "--event", str(ev.id))
    assert p.returncode == 2 and "--boot-time" in p.stderr


def test_heatmap_offline_window():
    ts = times(RT_RING, cpu=1)
    at = ts[-1] + 1e-6
    j = run_cli_json("heatmap", "--perf-script", str(RT_RING), "--cpu", "1", "--at", repr(at),
                     "--before", "300ms", "--json")
    assert j["clock"] == "wall"
    busy_in = sum(map(sum, j["values"]))
    assert 0 < busy_in <= sum(1 for t in ts if at - 0.3 <= t < at)


def test_parser_notes_name_the_users_file_and_line(tmp_path: Path):
    """Issue 12: notes gave line numbers counted from the record, not the file."""
    good = RT_RING.read_text()
    bad = tmp_path / "bad.txt"
    bad.write_text(good + "not a perf line\n\n" + good)
    j = flame("--perf-script", str(bad))
    assert j["diagnostics"] == [f"{bad}:{good.count(chr(10)) + 1}: unreadable line: "
                                "'not a perf line'"]


# --- the store API: text chunks added by callers other than the recorder ---------------


def test_store_api_text_chunk_reads_like_a_recorded_one(tmp_path: Path):
    ts = times(BOOT_RING)
    with Store.open(tmp_path / "s") as store:
        got = import_input(store, BOOT_RING, boot_time=BOOT_TIME)
        assert got.kind == "perf_script" and got.clock == "boot" and got.cpus == (0, 1)
        assert got.samples == len(ts) and got.chunk is not None
        c = got.chunk
        # timed perf script text is imported as columns, parsed in the pass that counts it
        assert c.format == "columns" and c.wall_start == pytest.approx(ts[0] + BOOT_TIME)
        path = tmp_path / "s" / c.path
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        lo = BOOT_TIME + ts[10]
        hi = BOOT_TIME + ts[40]
        out = list(ring_samples(store, Runner(), lo, hi, cpu=1))
        want = [t for t in times(BOOT_RING, cpu=1) if ts[10] <= t < ts[40]]
        assert [s.time for s, _w in out] == want
        assert all(w == pytest.approx(s.time + BOOT_TIME) for s, w in out)
        # explicit span, no boot time: kept on perf's clock
        text = RT_RING.read_text()
        c2 = ring.add_text_chunk(store, text, clockid=UNANCHORED, perf_start=1.0,
                                 perf_end=2.0, clock_offset=0.0, samples=3)
        assert c2.id > c.id and not c2.anchored
        with pytest.raises(ValueError):
            ring.add_text_chunk(store, text, clockid="x", perf_start=float("nan"),
                                perf_end=2.0, clock_offset=0.0, samples=1)
        # a failed or abandoned writer leaves no file behind
        names = {p.name for p in (tmp_path / "s" / "profiles").iterdir()}
        now = ring.all_chunks(store)
        assert sorted(x.format for x in now) == ["columns", "text"]
        assert names == {x.path.split("/")[-1] for x in now}
        with ring.ChunkWriter(store) as w:
            w.write("x")
        assert len(os.listdir(tmp_path / "s" / "profiles")) == 2


def test_import_skips_what_is_not_a_profile(tmp_path: Path):
    with Store.open(tmp_path / "s") as store:
        assert import_input(store, "/dev/null").skipped == \
            "not a regular file or a pipe"
        junk = tmp_path / "j"
        junk.write_bytes(os.urandom(3000))
        assert import_input(store, junk).skipped
        trunc = tmp_path / "t.zst"
        # two frames, the second cut short: the first one's samples are kept
        z = zstandard.ZstdCompressor()
        cut = z.compress(BOOT_RING.read_bytes())[:-40]
        trunc.write_bytes(z.compress(RT_RING.read_bytes()) + cut)
        diags: list = []
        got = import_input(store, trunc, diags=diags)
        assert got.samples == len(times(RT_RING))
        assert any("ends early" in d.message for d in diags)
        trunc.write_bytes(zstandard.ZstdCompressor().compress(RT_RING.read_bytes())[:-40])
        assert "ends early" in (import_input(store, trunc).skipped or "")


def test_ring_status_needs_perf_only_for_raw_perf_data_chunks(tmp_path: Path):
    from corescope.evidence.store import StoreEvidence

    class NoPerf(Runner):
        def which(self, program: str) -> str | None:
            return None

    with Store.open(tmp_path / "s") as store:
        import_input(store, RT_RING)
        ev = StoreEvidence(store, NoPerf())
        st = ev._ring_status()
        assert st.ok and "perf not found" not in st.detail, st.detail
        ring.add_chunk(store, dataclasses.replace(ring.all_chunks(store)[0], id=0,
                                                  path="profiles/chunk-1.perf.zst"))
        st = ev._ring_status()
        assert not st.ok and "perf.data chunks need perf script" in st.detail


@pytest.mark.parametrize("name", ["spin_boot_ring.txt", "spin_realtime_default.txt",
                                  "two_events_default.txt", "inlined.txt", "garbage.txt",
                                  "task_events.txt", "fields_tid_time.txt",
                                  "variant_symoff.txt", "nocpu_default.txt"])
def test_imported_columns_count_as_the_text_does(tmp_path: Path, name: str):
    """Timed perf script text is imported as a column chunk, parsed once; every count of a
    flame over it (stacks with pids and tids, weights, events, idle, times) is what reading
    the same text from a text chunk gives."""
    from corescope.evidence.ring_profile import ring_profile

    path = FIX / name
    with Store.open(tmp_path / "s") as store:
        got = import_input(store, path)
        assert got.chunk is not None and got.chunk.format == "columns"
        c = got.chunk
        text = ring.add_text_chunk(store, path.read_text(errors="replace"),
                                   clockid=c.clockid, perf_start=c.perf_start,
                                   perf_end=c.perf_end, clock_offset=c.clock_offset,
                                   samples=c.samples, hz=c.hz)
        for weight in ("period", "samples"):
            profs = [ring_profile(store, Runner(), 0.0, 0.0, chunks=[chunk], whole=True,
                                  migrate=False, include_idle=True, weight=weight,
                                  by_thread=True) for chunk in (c, text)]
            a, b = ({"stacks": p.folded(with_pid=True), "threads": p.folded(with_tid=True),
                     "plain": p.folded(), "samples": p.samples, "idle": p.idle_samples,
                     "weight": p.total_weight, "events": dict(p.events),
                     "span": (p.first_time, p.last_time)} for p in profs)
            assert a == b


def test_untimed_text_is_imported_as_text(tmp_path: Path):
    """perf script -F without `time`: no column chunk (those are placed in time), the text
    kept whole."""
    path = FIX / "fields_comm_tid.txt"
    with Store.open(tmp_path / "s") as store:
        got = import_input(store, path)
        assert got.chunk is not None and got.chunk.format == "text" and got.chunk.untimed
        with zstandard.open(tmp_path / "s" / got.chunk.path, "rt") as f:
            assert f.read() == path.read_text()
        assert len(os.listdir(tmp_path / "s" / "profiles")) == 1
