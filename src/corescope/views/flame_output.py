"""`flame --format`: the window's FlameReport written as the one format asked for. Each
format's renderer is imported only when it is the one asked for (the HTML page, pprof's
encoder and speedscope's writer cost start-up that `top` and `folded` never use). And the
progress line a long query shows."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click

from corescope.analysis.flame_report import FlameReport, top_table
from corescope.investigate.flame import SampleSink
from corescope.model.common import JSON_SCHEMA
from corescope.render import term
from corescope.timeparse import iso
from corescope.views.clitypes import write_private


class Progress:
    """`chunk 3/40` on stderr, only when stderr is a terminal."""

    def __init__(self) -> None:
        self.on = sys.stderr.isatty()
        self.used = False

    def __call__(self, i: int, n: int, what: str) -> None:
        if self.on:
            self.used = True
            sys.stderr.write(f"\r\x1b[K{i}/{n} {term.clean(what[-60:])}")
            sys.stderr.flush()

    def done(self) -> None:
        if self.used:
            sys.stderr.write("\r\x1b[K")
            sys.stderr.flush()


DEFAULT_HZ = 49  # `record --profile-hz` default, when nothing says otherwise
FORMATS = ("top", "json", "folded", "html", "pprof", "speedscope")
# the modules of the formats that need more than the report's own text
RENDERERS = {"html": ("corescope.analysis.flame", "corescope.render.flame_html"),
             "pprof": ("corescope.render.pprof",),
             "speedscope": ("corescope.render.speedscope",)}


def sample_outputs(fmt: str, include_idle: bool) -> tuple[list[SampleSink], Any]:
    """The formats that keep every sample (speedscope: each CPU in time order; pprof: cpu
    and thread labels, which the flame Profile does not keep): the sinks the view hands
    each sample to, and what they fill."""
    if fmt == "speedscope":
        from corescope.render.speedscope import Speedscope

        scope = Speedscope(include_idle)
        return [lambda s, t, _idle: scope.add(s, t)], scope
    if fmt == "pprof":
        from corescope.render import pprof

        pp = pprof.Samples(include_idle)
        return [lambda s, _t, idle: pp.add(s, idle if not include_idle else None)], pp
    return [], None


def window_label(report: FlameReport) -> str:
    where = f"cpu {report.cpu}" if report.cpu is not None else "all CPUs"
    if report.clock == "wall" and report.start is not None and report.end is not None:
        return f"{where}, {iso(report.start)} .. {iso(report.end)}"
    return f"{where}, perf script input"


def _render(report: FlameReport, fmt: str, with_pid: bool, with_tid: bool,
            kept: Any, hz: int | None) -> bytes:
    if fmt == "speedscope":
        return json.dumps(kept.to_json(window_label(report)), separators=(",", ":")).encode()
    if fmt == "json":
        return (json.dumps({"schema": JSON_SCHEMA, **report.to_json()}, indent=2)
                + "\n").encode()
    if fmt == "top":
        # human text: comms and symbols come from other users' processes
        table = (term.clean_lines(top_table(report)) + "\n").encode()
        if report.diagnostics:
            click.echo(f"corescope: {len(report.diagnostics)} parser notes, first: "
                       f"{term.clean(report.diagnostics[0])}", err=True)
        return table
    if fmt == "folded":
        stacks = report.profile.folded(with_pid, with_tid)
        return "".join(f"{k} {v}\n" for k, v in sorted(stacks.items())).encode()
    if fmt == "pprof":
        return _pprof(report, kept, hz)
    return _html(report, with_pid, with_tid)


def _pprof(report: FlameReport, pp: Any, hz: int | None) -> bytes:
    from corescope.render import pprof

    dur = 0
    if report.start is not None and report.end is not None:
        dur = int((report.end - report.start) * 1e9)
    t0 = int(report.start * 1e9) if report.clock == "wall" and report.start else 0
    # the rate comes from the ring's index; perf script text does not say it, so there it
    # is read off the samples' spacing (cpu-clock ticks idle CPUs too)
    rate = hz or (pp.estimated_hz() if pp is not None else None) or DEFAULT_HZ
    return pprof.to_pprof(pp if pp is not None else report.profile, rate, time_nanos=t0,
                          duration_nanos=dur)


def _html(report: FlameReport, with_pid: bool, with_tid: bool) -> bytes:
    from corescope.analysis.flame import diff_folded
    from corescope.render import flame_html

    sub = f"{window_label(report)}, {report.profile.samples} samples " \
          f"({report.profile.idle_samples} idle)"
    folded: Any
    if report.baseline is not None:
        folded = diff_folded(report.profile, report.baseline, with_pid)
        title = "corescope differential flame graph"
        sub += f"; baseline {report.baseline_note}: red grew, blue shrank"
    else:
        folded = report.profile.folded(with_pid, with_tid)
        title = "corescope flame graph"
    return flame_html.render_html(folded, title, sub, diff=report.baseline is not None
                                  ).encode()


def emit_flame(report: FlameReport, fmt: str, output: Path | None, with_pid: bool,
               with_tid: bool = False, kept: Any = None, hz: int | None = None) -> None:
    """Write the report to `output` (0600) or stdout. `kept`: what `sample_outputs` filled."""
    data = _render(report, fmt, with_pid, with_tid, kept, hz)
    if output is not None:
        write_private(output, data)
        return
    if fmt in ("top", "folded") and sys.stdout.isatty():
        data = term.clean_lines(data.decode(errors="replace")).encode()
    sys.stdout.buffer.write(data)
    sys.stdout.buffer.flush()
