"""`mpstat -I SCPU` (softirqs per second on each CPU), as text and JSON, alone or inside
`mpstat -I ALL` / `mpstat -A`: NET_RX and NET_TX per CPU per interval, the evidence a
`/proc/softirqs` loop gives (`softirqs_loop`), beside the CPU load of the same file."""

from __future__ import annotations

import time

import pytest

from corescope.ingest import import_paths
from corescope.model.events import SoftirqSample
from corescope.sources.artifacts import sysstat
from corescope.sources.artifacts.content import sniff
from corescope.store import events as store_events
from corescope.store.db import Store
from support import FIXTURES, parse_artifact

ART = FIXTURES / "artifacts"


def _bytes(name: str) -> bytes:
    return (ART / name).read_bytes()


_read = parse_artifact


def _soft(p) -> list[SoftirqSample]:  # type: ignore[no-untyped-def]
    rows = p.extra if isinstance(p.extra, list) else []
    assert all(isinstance(r, SoftirqSample) for r in rows)
    return rows


def _at(hms: str, ymd: tuple[int, int, int] = (2026, 12, 1)) -> float:
    h, m, s = (int(x) for x in hms.split(":"))
    return time.mktime((*ymd, h, m, s, 0, 0, -1))


def _samples(p) -> list[tuple[float, float, dict[int, tuple[int, ...]]]]:  # type: ignore[no-untyped-def]
    return [(s.t, s.interval_s, {c: tuple(d) for c, d in s.deltas.items()}) for s in p.samples]


@pytest.mark.parametrize("name,kind", [
    ("mpstat_I_SCPU.txt", "mpstat_text"), ("mpstat_I_SCPU_12h.txt", "mpstat_text"),
    ("mpstat_I_ALL.txt", "mpstat_text"), ("mpstat_A_net.txt", "mpstat_text"),
    ("mpstat_I_SCPU_since_boot.txt", "mpstat_text"),
    ("mpstat_I_SCPU.json", "mpstat_json"), ("mpstat_I_ALL.json", "mpstat_json"),
    ("mpstat_A_net.json", "mpstat_json"),
])
def test_scpu_files_are_recognised(name: str, kind: str) -> None:
    assert sniff(_bytes(name)) == kind


def test_scpu_text_counts_per_cpu(utc) -> None:  # type: ignore[no-untyped-def]
    """mpstat -I SCPU -P ALL 1 3: NET_RX/s × 1 s per CPU, as printed."""
    p = _read(_bytes("mpstat_I_SCPU.txt"))
    assert p.kind == "mpstat_text" and not p.diagnostics
    assert len(p.samples) == 0  # no CPU table in it
    assert [(r.t, r.interval_s, dict(r.net_rx), dict(r.net_tx)) for r in _soft(p)] == [
        (_at("10:28:19"), 1.0, {0: 0, 1: 57600}, {0: 0, 1: 0}),
        (_at("10:28:20"), 1.0, {0: 41000, 1: 16800}, {0: 0, 1: 0}),
        (_at("10:28:21"), 1.0, {0: 800, 1: 53800}, {0: 0, 1: 0}),
    ]
    assert p.records == 3 and p.cpus() == (0, 1)
    assert p.span() == (_at("10:28:18"), _at("10:28:21"))


@pytest.mark.parametrize("name", ["mpstat_I_SCPU.txt", "mpstat_I_SCPU_12h.txt",
                                  "mpstat_I_ALL.txt", "mpstat_A_net.txt", "mpstat_A.txt"])
def test_scpu_counts_add_up_to_mpstat_average(utc, name: str) -> None:  # type: ignore[no-untyped-def]
    """mpstat's own `Average:` rows are the total count over the total time: the counts read
    from the interval rows must add up to them (each rate × its interval). mpstat divides by
    the interval the kernel's clock measured (1.01 s at times), the rows print whole
    seconds: a count is within that jitter (1 %)."""
    text = _bytes(name).decode()
    avg: dict[int, float] = {}
    cols: list[str] = []
    for line in text.splitlines():
        toks = line.split()
        if toks[:1] == ["Average:"] and "NET_RX/s" in toks:
            cols = toks[2:]
        elif toks[:1] == ["Average:"] and cols and len(toks) == 2 + len(cols):
            avg[int(toks[1])] = float(toks[2 + cols.index("NET_RX/s")])
            if len(avg) == 2:
                cols = []
    rows = _soft(_read(_bytes(name)))
    total_s = sum(r.interval_s for r in rows)
    assert avg and len(rows) >= 2
    for cpu, rate in avg.items():
        assert sum(r.net_rx[cpu] for r in rows) == pytest.approx(rate * total_s, rel=0.015,
                                                                 abs=0.5 * len(rows) + 0.01)


def test_scpu_text_12h_clock(utc) -> None:  # type: ignore[no-untyped-def]
    rows = _soft(_read(_bytes("mpstat_I_SCPU_12h.txt")))
    assert [(r.t, dict(r.net_rx)) for r in rows] == [
        (_at("10:28:53"), {0: 198, 1: 54653}), (_at("10:28:54"), {0: 0, 1: 56600})]


def test_scpu_text_across_midnight(utc) -> None:  # type: ignore[no-untyped-def]
    text = _bytes("mpstat_I_SCPU.txt").decode()
    for a, b in (("10:28:18", "23:59:58"), ("10:28:19", "23:59:59"), ("10:28:20", "00:00:00"),
                 ("10:28:21", "00:00:01")):
        text = text.replace(a, b)
    rows = _soft(_read(text.encode()))
    assert [r.t for r in rows] == [_at("23:59:59"), _at("00:00:00", (2026, 12, 2)),
                                   _at("00:00:01", (2026, 12, 2))]
    assert [r.interval_s for r in rows] == [1.0, 1.0, 1.0]


@pytest.mark.parametrize("text,json_", [("mpstat_A_net.txt", "mpstat_A_net.json")])
def test_cpu_and_scpu_tables_in_one_file_give_both(utc, text: str, json_: str  # type: ignore[no-untyped-def]
                                                    ) -> None:
    """`mpstat -A`: the CPU table's load and the SCPU table's softirqs, each as the file
    holding only that table gives it."""
    whole = _bytes(text).decode()
    blocks = whole.split("\n\n")
    cpu_only = "\n\n".join(b for b in blocks if "HI/s" not in b)
    scpu_only = "\n\n".join(b for b in blocks if b.startswith("Linux ") or "HI/s" in b)
    p, c, s = _read(whole.encode()), _read(cpu_only.encode()), _read(scpu_only.encode())
    assert not p.diagnostics and len(p.samples) == 2 and len(_soft(p)) == 2
    assert _samples(p) == _samples(c) and not _soft(c)
    assert _soft(p) == _soft(s) and len(s.samples) == 0
    assert p.records == 4
    j = _read(_bytes(json_))
    assert j.kind == "mpstat_json" and not j.diagnostics
    assert len(j.samples) == 2 and len(_soft(j)) == 2


def test_scpu_json_counts(utc) -> None:  # type: ignore[no-untyped-def]
    """JSON states no interval: each is the step from the entry before (the first takes
    the usual step), as for mpstat's CPU load."""
    p = _read(_bytes("mpstat_I_SCPU.json"))
    assert p.kind == "mpstat_json" and not p.diagnostics
    assert [(r.t, r.interval_s, dict(r.net_rx)) for r in _soft(p)] == [
        (_at("10:28:22"), 1.0, {0: 0, 1: 57588}), (_at("10:28:23"), 1.0, {0: 0, 1: 57212}),
        (_at("10:28:24"), 1.0, {0: 0, 1: 54800})]


def test_scpu_since_boot_is_no_interval() -> None:
    p = _read(_bytes("mpstat_I_SCPU_since_boot.txt"))
    assert p.records == 0
    (d,) = p.diagnostics
    assert "without an interval" in d.message and "skipped" in d.message
    one = _bytes("mpstat_I_SCPU.json").decode()
    cut = one[: one.index('{\n\t\t\t\t\t"timestamp": "10:28:23"')].rstrip().rstrip(",")
    j = sysstat.parse((cut + "\n\t\t\t]\n\t\t}\n\t]\n}}").encode(), "mpstat_json", "t")
    assert j.records == 0 and any("without an interval" in x.message for x in j.diagnostics)


@pytest.mark.parametrize("name", ["mpstat_I_SCPU.txt", "mpstat_I_SCPU.json",
                                  "mpstat_I_ALL.json", "mpstat_A_net.txt"])
def test_scpu_truncated_and_garbage(utc, name: str) -> None:  # type: ignore[no-untyped-def]
    data = _bytes(name)
    whole = {r.t: r for r in _soft(_read(data))}
    kind = sniff(data)
    for cut in range(0, len(data), max(1, len(data) // 97)):
        p = sysstat.parse(data[:cut], kind or "mpstat_text", "t")
        for r in _soft(p):  # what is read of a cut file is what the whole file says
            ref = whole[r.t]
            assert all(r.net_rx[c] == ref.net_rx[c] for c in r.net_rx)
            assert r.interval_s == ref.interval_s
        if not p.records:
            assert p.diagnostics
    bad = data.replace(b"57600.00", b"5x600.00").replace(b"57588.00", b'"x"')
    if bad != data:
        p = sysstat.parse(bad, kind or "mpstat_text", "t")
        assert p.diagnostics and len(_soft(p)) == len(whole)


def test_import_writes_what_the_softirq_loop_writes(tmp_path, utc) -> None:  # type: ignore[no-untyped-def]
    """Imported, the rates land in the softirq table the investigation reads."""
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "node.log").write_bytes(_bytes("mpstat_A_net.txt"))
    with Store.open(tmp_path / "s") as store:
        rep = import_paths([tmp_path / "in"], store)
        rows = store_events.read_softirqs(store, 0, 2e9)
    (f,) = rep.files
    assert (f.kind, f.status, f.records, f.cpus) == ("mpstat_text", "imported", 4, (0, 1))
    assert [(t, itv, rx) for t, itv, rx, _ in rows] == [
        (_at("10:28:38"), 1.0, {0: 34257, 1: 20792}), (_at("10:28:39"), 1.0, {0: 37200, 1: 16800})]


@pytest.mark.parametrize("order", [("loop", "mpstat"), ("mpstat", "loop")])
def test_a_softirq_loop_and_mpstat_of_the_same_seconds_count_once(  # type: ignore[no-untyped-def]
        tmp_path, utc, order: tuple[str, str]) -> None:
    """Both saved over the same seconds (fixtures captured side by side under loopback UDP
    traffic): the exact /proc/softirqs counters are kept, whichever file comes first, and
    mpstat's readings of those seconds are dropped and said, not added on top."""
    names = {"loop": "overlap_softirqs_loop.txt", "mpstat": "overlap_mpstat_scpu.txt"}
    (tmp_path / "in").mkdir()
    for k, which in enumerate(order):  # files are read in name order
        (tmp_path / "in" / f"{k}.log").write_bytes(_bytes(names[which]))
    with Store.open(tmp_path / "s") as store:
        rep = import_paths([tmp_path / "in"], store)
        rows = store_events.read_softirqs(store, 0, 2e9)
    by = {f.kind: f for f in rep.files}
    loop = _soft(_read(_bytes(names["loop"])))
    assert [(t, itv, rx) for t, itv, rx, _ in rows] == [
        (r.t, r.interval_s, dict(r.net_rx)) for r in loop]
    assert by["softirqs_loop"].records == len(loop)
    assert by["mpstat_text"].records == 0
    assert "overlap those of another source" in (by["mpstat_text"].reason or "")
    # alone, the mpstat file gives the same seconds' counts (within mpstat's rounding)
    alone = _soft(_read(_bytes(names["mpstat"])))
    assert len(alone) >= 5
    assert all(loop[0].t - loop[0].interval_s <= r.t <= loop[-1].t + 1 for r in alone)
