"""What `report --html` and `serve` share: the page data of one window of some evidence
(the Investigation, laid out by render.report_model), and the serve backend's live answers
(a CPU's subsecond heatmap, a range's flame graph and its diff)."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from corescope.evidence.base import Evidence
from corescope.evidence.open import store_evidence
from corescope.evidence.profiles import profile_source
from corescope.investigate import Investigation, investigate
from corescope.investigate.build import Options
from corescope.investigate.flame import FlameFilters, heatmap_view, range_flame
from corescope.investigate.window import DEFAULT_LAST_S, resolve_window
from corescope.render import report_model
from corescope.render.report_model import Limits
from corescope.runner import Runner
from corescope.views.clitypes import CliContext, write_private
from corescope.views.investigation_cli import store_evidence_or_fail
from corescope.views.windows import window_or_fail

RANGE_NODES = 3000  # frames kept in a flame graph the UI asks for


def diagnosis_of(inv: Investigation) -> dict[str, Any] | None:
    """The diagnosis (`diagnose --json`'s contract) the investigation carries, if any."""
    from corescope.render.json_contract import diagnosis_json

    return diagnosis_json(inv.diagnosis)


def page_model(ev: Evidence, inv: Investigation, limits: Limits | None = None,
               title: str = "corescope incident report") -> dict[str, Any]:
    w = inv.window
    return report_model.build(inv, profiles=profile_source(ev),
                              censuses=ev.censuses(w.start, w.end),
                              diagnosis=diagnosis_of(inv), title=title,
                              generated=time.time(), limits=limits or Limits())


def write_html_report(ev: Evidence, inv: Investigation, output: Path) -> int:
    """The page as one HTML file, 0600 and never through a link (it carries process names,
    stacks and kernel lines); returns its size."""
    from corescope.render.html_report import render

    return write_private(output, render(page_model(ev, inv)).encode())


def store_html_report(obj: CliContext, since: float | None, until: float | None,
                      last: float | None, options: Options, output: Path) -> Investigation:
    """`report --html -o FILE` over the store (recorded or analyzed): the whole
    investigation of the window, laid out, with the flame graphs read from the same store."""
    ev = store_evidence_or_fail(obj)
    try:
        inv = investigate(ev, window_or_fail(ev.coverage(), since, until, last), options)
        size = write_html_report(ev, inv, output)
    finally:
        ev.close()
    click.echo(f"corescope: wrote {output} ({size / 1e6:.2f} MB)", err=True)
    return inv


class EvidenceBackend:
    """serve's answers, each from a fresh Evidence (a recorder may be writing the store)."""

    # the live page skips the per-minute flames (each is a perf script pass over the ring);
    # a cell click asks /api/flame for exactly that minute instead
    LIMITS = Limits(hot_cpus=0)

    def __init__(self, open_evidence: Callable[[], Evidence]) -> None:
        self._open = open_evidence

    def _evidence(self) -> Evidence:
        return self._open()

    def page_model(self, since: float | None, until: float | None,
                   last: float | None) -> dict[str, Any]:
        ev = self._evidence()
        try:
            window = resolve_window(time.time() + 1.0, since=since, until=until, last=last,
                                    default_last=DEFAULT_LAST_S, coverage=ev.coverage())
            inv = investigate(ev, window)
            return page_model(ev, inv, self.LIMITS, "corescope")
        finally:
            ev.close()

    def heatmap(self, cpu: int | None, start: float, end: float,
                rows_ms: int) -> dict[str, Any]:
        ev = self._evidence()
        try:
            # on a store, a histogram of the ring's time column
            data = heatmap_view(profile_source(ev), start, end, FlameFilters(cpu),
                                rows_ms).to_json()
            data["cpu"] = cpu
            return data
        finally:
            ev.close()

    def flame(self, cpu: int | None, start: float, end: float, diff: bool) -> dict[str, Any]:
        ev = self._evidence()
        try:
            # on a store, only the range's chunks, counted by stack id
            prof, base = range_flame(profile_source(ev), start, end, cpu,
                                     baseline_gap=Limits().baseline_gap_s if diff else None)
            note = "" if not diff else base.window.note if base is not None else \
                report_model.NO_BASELINE
            return report_model.flame_entry("range", "range", cpu, start, end, prof,
                                            RANGE_NODES, base.profile if base else None,
                                            note, baseline_note=note)
        finally:
            ev.close()


def store_backend(store_dir: Path, runner: Runner | None = None) -> EvidenceBackend:
    return EvidenceBackend(
        lambda: store_evidence(store_dir, runner or Runner()))
