"""The fast path for sysstat 12's `mpstat -o JSON` layout (every number of the file converted
at once; entries that list the same CPUs read as one block) must give the same matrix and the
same notes, in the same order, as reading the file entry by entry through the JSON decoder;
and hostile input must give notes, never a traceback."""

from __future__ import annotations

import numpy as np
import pytest

from corescope.sources.artifacts import sysstat

ROW = ('{{"cpu": "{cpu}", "usr": {v[0]}, "nice": {v[1]}, "sys": {v[2]}, "iowait": {v[3]}, '
       '"irq": {v[4]}, "soft": {v[5]}, "steal": {v[6]}, "guest": {v[7]}, "gnice": {v[8]}, '
       '"idle": {v[9]}}}')


def vals(i: int, cpu: int) -> list[str]:
    usr = (i * 7 + cpu * 13) % 60
    sys_ = (i * 3 + cpu) % 30
    return [f"{usr}.{i % 100:02d}", "0.00", f"{sys_}.50", "0.00", "0.00", "1.00", "0.00",
            "0.00", "0.00", f"{max(0.0, 99 - usr - sys_ - 1.5):.2f}"]


def entry(ts: str, rows: list[tuple[str, list[str]]]) -> str:
    body = ",\n".join("\t\t\t\t\t\t" + ROW.format(cpu=c, v=v) for c, v in rows)
    return ('\t\t\t\t{\n\t\t\t\t\t"timestamp": "' + ts + '",\n\t\t\t\t\t"cpu-load": [\n'
            + body + "\n\t\t\t\t\t]\n\t\t\t\t}")


def document(entries: list[str]) -> bytes:
    return ('{"sysstat": {\n\t"hosts": [\n\t\t{\n\t\t\t"nodename": "vm",\n'
            '\t\t\t"number-of-cpus": 4,\n\t\t\t"date": "11/30/26",\n\t\t\t"statistics": [\n'
            + ",\n".join(entries) + "\n\t\t\t]\n\t\t}\n\t]\n}}\n").encode()


def ts(i: int) -> str:
    return f"10:{i // 60:02d}:{i % 60:02d}"


def plain(n: int = 30, cpus: tuple[int, ...] = (0, 1, 2, 3)) -> list[str]:
    return [entry(ts(i), [("all", vals(i, 99))] + [(str(c), vals(i, c)) for c in cpus])
            for i in range(n)]


def careful(data: bytes, monkeypatch: pytest.MonkeyPatch) -> sysstat.Parsed:
    with monkeypatch.context() as m:
        m.setattr(sysstat, "_fast_mpstat", lambda *a: False)
        return sysstat.parse(data, "mpstat_json", "f")


def assert_same(a: sysstat.Parsed, b: sysstat.Parsed) -> None:
    assert [(d.message, d.line) for d in a.diagnostics] == \
        [(d.message, d.line) for d in b.diagnostics]
    if not len(b.samples):
        assert not len(a.samples)
        return
    for f in ("t", "interval_s", "cpus", "present", "fields"):
        assert np.array_equal(getattr(a.samples, f), getattr(b.samples, f), equal_nan=True), f


def test_uniform_entries_are_read_as_one_block(monkeypatch: pytest.MonkeyPatch):
    data = document(plain())
    calls = []
    real = sysstat.PctSamples.add
    monkeypatch.setattr(sysstat.PctSamples, "add",
                        lambda self, *a: calls.append(1) or real(self, *a))
    got = sysstat.parse(data, "mpstat_json", "f")
    assert calls == []  # no entry went one by one
    monkeypatch.undo()
    assert_same(got, careful(data, monkeypatch))
    assert got.samples.cpus.tolist() == [0, 1, 2, 3] and len(got.samples) == 30


def swap(e: list[str], at: int, *new: str) -> list[str]:
    """`e` with entries from `at` on replaced by `new`."""
    return [*e[:at], *new, *e[at + len(new):]]


def two(i: int, row0: list[str]) -> str:
    return entry(ts(i), [("0", row0), ("1", vals(i, 1))])


VARIANTS = {
    # a CPU goes offline for a while
    "cpu_offline": lambda e: swap(e, 10, *(entry(ts(i), [(str(c), vals(i, c)) for c in (0, 1, 3)])
                                           for i in range(10, 15))),
    "cpu_listed_twice": lambda e: swap(e, 5, entry(ts(5), [("0", vals(5, 0)), ("1", vals(5, 1)),
                                                           ("1", vals(5, 2))])),
    "percent_over_100": lambda e: swap(e, 3, two(3, ["150.00", *vals(3, 0)[1:]])),
    "all_zero_row": lambda e: swap(e, 3, two(3, ["0.00"] * 10)),
    # an unreadable timestamp and a clock step between entries with bad rows: notes in order
    "notes_interleaved": lambda e: swap(
        e, 2, entry("99:99:99", [("0", vals(2, 0))]), two(3, ["-1.00", *vals(3, 0)[1:]]),
        entry(ts(1), [("0", vals(4, 0)), ("1", vals(4, 1))]),
        two(5, ["100.60", *vals(5, 0)[1:]])),
    "only_all_rows": lambda e: swap(e, 4, entry(ts(4), [("all", vals(4, 0))])),
}


@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_irregular_files_read_entry_by_entry_with_the_same_result(
        name: str, monkeypatch: pytest.MonkeyPatch):
    data = document(VARIANTS[name](plain()))
    got = sysstat.parse(data, "mpstat_json", "f")
    assert_same(got, careful(data, monkeypatch))
    if name in ("cpu_listed_twice", "percent_over_100", "notes_interleaved"):
        assert got.diagnostics


@pytest.mark.parametrize("token", ["1.2.3", "-", ".", "--5", "1e5"])
def test_a_token_that_is_no_number_gives_notes_not_a_traceback(token: str):
    e = plain()
    e[7] = entry(ts(7), [("0", [token, *vals(7, 0)[1:]]), ("1", vals(7, 1))])
    got = sysstat.parse(document(e), "mpstat_json", "f")  # must not raise
    assert len(got.samples) >= 29
    if token != "1e5":  # 1e5 is a number, just not a percentage
        assert got.diagnostics


@pytest.mark.parametrize("cut", [0.3, 0.5, 0.97])
def test_truncated_file_is_read_up_to_the_cut(cut: float):
    data = document(plain())
    got = sysstat.parse(data[: int(len(data) * cut)], "mpstat_json", "f")
    assert 0 < len(got.samples) < 30
    assert any("cut short" in d.message for d in got.diagnostics)


def test_garbage_after_the_header_is_noted():
    data = document(plain(3))[:200] + b"\x00\xff garbage {{{ \"timestamp\": \"x\" ]]]"
    got = sysstat.parse(data, "mpstat_json", "f")
    assert got.diagnostics and not len(got.samples)
