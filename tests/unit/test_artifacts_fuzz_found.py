"""Inputs the artifact fuzz campaign (tests/tools/fuzz_artifacts.py) found to break a parser,
minimized: each must give a diagnostic, never a traceback or an invented value."""

from __future__ import annotations

import pytest

from conftest import FIXTURES
from corescope.sources.artifacts.base import Parsed
from corescope.sources.artifacts.content import module_for


def _parse(kind: str, text: str) -> Parsed:
    mod = module_for(kind)
    assert mod is not None
    p = mod.parse(text.encode(), kind, "f.txt")
    assert p.kind == kind
    return p


CORE = ('{"t":1796000100.25,"interval_s":1.0,"cpus":[0],'
        '"ticks":[[30,0,3,67,0,0,0,0,0,0]]}')


@pytest.mark.parametrize(("kind", "record"), [
    ("cores", CORE.replace('"cpus":[0]', '"cpus":[-1]')),
    ("cores", CORE.replace('"interval_s":1.0', '"interval_s":-1')),
    ("cores", CORE.replace('"t":1796000100.25', '"t":-1')),
    ("cores", CORE.replace("[30,", "[Infinity,")),  # int(inf): OverflowError
    ("cores", CORE.replace("[30,", "[30.5,")),
    ("events", '{"time":-7,"kind":"other","raw":"x"}'),
    ("events", '{"time":1796000100,"kind":"other","raw":"x","level":-7}'),
    ("events", '{"time":1796000100,"kind":"other","raw":"x","mono_usec":-1}'),
    ("irq_maps", '{"t":1796000100,"map":[1]}'),  # AttributeError on int.get
    ("irq_maps", '{"t":1796000100,"map":[{"irq":Infinity,"name":"q","direction":"tx",'
                 '"cpus":[1]}]}'),
    ("censuses", '{"t":1796000100,"layout":"v1","hierarchy":"v1","kernel_count":-1,'
                 '"live":1,"dying":1,"source":"s"}'),
    ("restarts", '{"t":1796000100,"kind":"systemd-unit","name":"a","restarts":-5}'),
    ("losses", '{"t":1796000100,"lost":-3}'),
])
def test_native_records_out_of_range_are_diagnosed(kind: str, record: str) -> None:
    p = _parse("corescope_native", f'{{"corescope":"{kind}","version":1}}\n{record}\n')
    assert p.records == 0 and p.extra_span is None and not len(p.samples)
    assert [(d.line, d.message.startswith(f"bad {kind} record")) for d in p.diagnostics] == [
        (2, True)]


def test_deeply_nested_json_is_diagnosed_not_a_recursion_error() -> None:
    deep = "[" * 100_000
    p = _parse("corescope_manifest", '{"format": "corescope-capture", "files": ' + deep)
    assert [d.message.startswith("unreadable manifest") for d in p.diagnostics] == [True]
    p = _parse("corescope_native", '{"corescope":"events","version":1}\n' + deep)
    assert [d.line for d in p.diagnostics] == [2]


def test_mpstat_json_percentage_too_large_for_a_float() -> None:
    text = (FIXTURES / "artifacts" / "mpstat_one_report.json").read_text()
    # 400 digits: a JSON int no float holds; the spacing change takes the careful path
    text = text.replace('"usr": 55.56', '"usr": ' + "9" * 400).replace('"cpu": "1", ',
                                                                     '"cpu":"1", ')
    p = _parse("mpstat_json", text)
    assert "1 CPU rows with unreadable percentages skipped" in [d.message
                                                                for d in p.diagnostics]


def test_mpstat_json_cpu_id_no_kernel_has() -> None:
    text = (FIXTURES / "artifacts" / "mpstat12.json").read_text()
    for bad in ("99999999999999999999999999", "70000"):
        p = _parse("mpstat_json", text.replace('"cpu": "1"', f'"cpu": "{bad}"', 1))
        assert min(p.cpus()) >= 0 and max(p.cpus()) < 65536
        assert f"unreadable cpu id {bad[:20]!r}" in [d.message for d in p.diagnostics]
