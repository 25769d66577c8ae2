"""`record`'s options are declared once (sensors/options.py): every RecordOptions field has
exactly one declaration, the click options are the declarations, and the range check refuses
what each declaration's range refuses, with the option's name."""

from __future__ import annotations

import dataclasses

import click
import pytest

from corescope.sensors import options
from corescope.sensors.base import RecordOptions
from corescope.views.cli import load_module
from corescope.views.cli_record import record

NOT_OPTIONS = {"extra"}  # knobs with no flag (tests set profile_rss_limit)


def test_every_field_has_exactly_one_declaration() -> None:
    fields = [f.name for f in dataclasses.fields(RecordOptions) if f.name not in NOT_OPTIONS]
    declared = [o.field for o in options.ALL]
    assert sorted(declared) == sorted(fields)
    assert len(set(declared)) == len(declared)
    flags = [o.flag for o in options.ALL]
    assert len(set(flags)) == len(flags)


def test_the_fields_default_is_the_declared_one() -> None:
    defaults = RecordOptions()
    for o in options.ALL:
        assert getattr(defaults, o.field) == o.default, o.field


def _params() -> dict[str, click.Option]:
    load_module("corescope.views.cli_record")  # as the CLI loads it (written defaults)
    return {p.name: p for p in record.params if isinstance(p, click.Option)}


def test_the_click_options_are_the_declarations() -> None:
    params = _params()
    assert [p for p in params if p != "help"] == [o.field for o in options.ALL]
    ctx = click.Context(record, info_name="record")
    for o in options.ALL:
        p = params[o.field]
        assert p.opts == [o.flag], o.field
        assert p.help == o.help_text, o.field
        # the default click parses is the declared value (shown as written: 2m, 1G)
        assert p.type_cast_value(ctx, p.get_default(ctx)) == o.default, o.field
        if o.kind in ("switch", "flag"):
            assert p.is_flag and p.flag_value is (o.kind == "flag"), o.field
        if o.kind == "int" and o.low is not None:
            assert isinstance(p.type, click.IntRange)
            assert (p.type.min, p.type.max) == (o.low, o.high), o.field


def test_parsing_the_command_line_fills_the_fields() -> None:
    ctx = record.make_context("record", ["--no-census", "--interval", "2s", "--max-bytes",
                                         "5M", "--kmsg-clock-check", "--listen",
                                         "--no-lock-memory"])
    opts = RecordOptions(**{k: v for k, v in ctx.params.items()})
    assert opts == RecordOptions(census=False, interval_s=2.0, max_bytes=5_000_000,
                                 kmsg_clock_check=True, listen="127.0.0.1:9723",
                                 lock_memory=False)
    assert options.out_of_range(opts) is None


RANGES = [
    ({"interval_s": 0.1}, None),
    ({"interval_s": 60.0}, None),
    ({"interval_s": 0.05}, "--interval must be between 0.1s and 60s (got 0.05s)"),
    ({"interval_s": 61.0}, "--interval must be between 0.1s and 60s (got 61s)"),
    ({"profile_chunk_s": 5.0}, None),
    ({"profile_chunk_s": 4.0}, "--profile-chunk must be between 5s and 1h (got 4s)"),
    ({"profile_chunk_s": 3601.0}, "--profile-chunk must be between 5s and 1h (got 3601s)"),
    ({"census_interval_s": 0.0}, "--census-interval must be positive (got 0s)"),
    ({"netdev_interval_s": 0.0}, "--netdev-interval must be positive (got 0s)"),
    ({"pressure_interval_s": 0.0}, "--pressure-interval must be positive (got 0s)"),
    ({"pressure_interval_s": 0.01}, None),
    ({"metrics_max_window_s": 0.5},
     "--metrics-max-window must be between 1s and 1h (got 0.5s)"),
    ({"profile_hz": 0}, "--profile-hz must be between 1 and 10000 (got 0)"),
    ({"nice": 20}, "--nice must be between -20 and 19 (got 20)"),
    ({"duration_s": None, "listen": "x", "census": False}, None),
]


@pytest.mark.parametrize(("change", "message"), RANGES, ids=[str(c) for c, _ in RANGES])
def test_range_check(change: dict, message: str | None) -> None:
    assert options.out_of_range(RecordOptions(**change)) == message


def test_help_says_the_declared_range() -> None:
    assert options.INTERVAL.help_text == "Per-core sampling interval (0.1s to 60s)."
    assert options.PROFILE_CHUNK.help_text == "Length of each profile chunk (5s to 1h)."
    assert options.CENSUS.help_text == options.CENSUS.help
