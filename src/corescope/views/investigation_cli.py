"""What every investigating command shares: choosing the evidence once and building the
Investigation (the window options live in clitypes)."""

from __future__ import annotations

from collections.abc import Collection

from corescope.evidence import open as open_evidence
from corescope.evidence.base import Evidence
from corescope.evidence.store import StoreEvidence
from corescope.investigate import Investigation, investigate
from corescope.investigate.build import ALL_PARTS, Options
from corescope.model.common import SensorStatus
from corescope.render.term import echo
from corescope.views.clitypes import CliContext, open_store_or_fail
from corescope.views.windows import window_or_fail


def store_evidence_or_fail(obj: CliContext, hint: str = "") -> StoreEvidence:
    """The store's evidence for a command that needs one, or exit 2 saying what to do."""
    return StoreEvidence(open_store_or_fail(obj, hint), obj.runner)


def store_investigation(obj: CliContext, since: float | None, until: float | None,
                        last: float | None, default_last: float, *,
                        options: Options | None = None, parts: Collection[str] = ALL_PARTS,
                        hint: str = "") -> Investigation:
    """The investigation of a window of the store (recorded or analyzed)."""
    ev = store_evidence_or_fail(obj, hint)
    try:
        window = window_or_fail(ev.coverage(), since, until, last, default_last)
        inv = investigate(ev, window, options, parts)
        for d in inv.diagnostics:
            if d.source.startswith("store "):  # stored data it had to skip: never silent
                echo(f"corescope: warning: {d}", err=True)
        return inv
    finally:
        ev.close()


def node_evidence(obj: CliContext, *, sample_seconds: float = 0.0, kernel_ring: bool = False,
                  history_s: float = 24 * 3600.0, now: bool = True
                  ) -> tuple[Evidence, list[SensorStatus]]:
    """This node's evidence (evidence.open.node_evidence) and the store's own status line;
    its warnings said on stderr."""
    got = open_evidence.node_evidence(obj.store_dir, obj.root, obj.runner,
                                      sample_seconds=sample_seconds, kernel_ring=kernel_ring,
                                      history_s=history_s, now=now)
    for w in got.warnings:
        echo(f"corescope: warning: {w}", err=True)
    return got.evidence, got.statuses
