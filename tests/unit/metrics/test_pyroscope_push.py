"""The Pyroscope push against a real HTTP server on loopback that decodes what it receives
(multipart form, gzip, protobuf with a real decoder); `go tool pprof` reads the same body in
tests/integration/test_pprof_go.py."""

from __future__ import annotations

from typing import Any

import pytest

from corescope.metrics.pyroscope import build_pushes, send
from corescope.sources.perf_script import parse_text
from support import FIXTURES, pprof_proto
from support.pyroscope_sink import Sink


@pytest.fixture
def sink() -> Any:
    s = Sink()
    yield s
    s.close()


def test_push_is_decoded_with_labels_and_the_real_period(sink: Sink) -> None:
    samples, _ = parse_text((FIXTURES / "profiles" / "burner_idle.txt").read_text())
    pushes = build_pushes(samples, "node-7", 99, 1_800_000_000.0, 1_800_000_003.0)
    for p in pushes:
        assert send(sink.url, p) == 200
    assert len(sink.got) == len(pushes) > 0
    by_name = {q["name"]: (q, body) for q, body in sink.got}
    name = "corescope.cpu{node=node-7,cpu=1,comm=python3}"
    assert name in by_name, list(by_name)
    query, body = by_name[name]
    assert query["format"] == "pprof" and query["sampleRate"] == "99"
    assert (query["from"], query["until"]) == ("1800000000", "1800000003")
    prof = pprof_proto.decode(body)
    st = prof.string_table
    assert prof.period == int(1e9 / 99)  # the chunk's rate, not 49 Hz
    assert (st[prof.period_type.type], st[prof.period_type.unit]) == ("cpu", "nanoseconds")
    assert [st[v.type] for v in prof.sample_type] == ["samples", "cpu"]
    total = 0
    for s in prof.sample:
        labels = pprof_proto.sample_labels(prof, s)
        assert labels["cpu"] == "1" and labels["comm"] == "python3"
        assert str(labels["thread"]).isdigit() and labels["pid"] > 0
        assert s.value[1] == s.value[0] * prof.period
        total += s.value[0]
    fixture_busy = sum(1 for x in samples if x.cpu == 1 and x.comm == "python3")
    assert total == fixture_busy


def test_idle_cpu_is_not_pushed_and_comms_are_bounded() -> None:
    samples, _ = parse_text((FIXTURES / "profiles" / "burner_idle.txt").read_text())
    pushes = build_pushes(samples, "n", 49, 0.0, 3.0, top=1)
    cpus = {p.labels["cpu"] for p in pushes}
    assert "0" not in cpus or all(p.labels["comm"] != "swapper" for p in pushes)
    per_cpu: dict[str, list[str]] = {}
    for p in pushes:
        per_cpu.setdefault(p.labels["cpu"], []).append(p.labels["comm"])
    assert all(len(c) <= 2 for c in per_cpu.values())  # the top one and "other"


def test_a_down_server_is_an_error_not_a_hang() -> None:
    samples, _ = parse_text((FIXTURES / "profiles" / "burner_idle.txt").read_text())
    p = build_pushes(samples, "n", 49, 0.0, 3.0)[0]
    with pytest.raises(OSError):
        send("http://127.0.0.1:9/ingest", p, timeout=5)
