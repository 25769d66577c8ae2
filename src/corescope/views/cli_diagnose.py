"""`corescope diagnose`: the hypothesis sweep, the causal chain and a verdict."""

from __future__ import annotations

import time
from pathlib import Path

import click

from corescope.investigate import Investigation, investigate
from corescope.investigate.build import Options
from corescope.investigate.window import DEFAULT_LAST_S, reaches_now
from corescope.render.json_contract import diagnosis_json
from corescope.render.text import print_diagnosis
from corescope.views.clitypes import (
    EXIT_FINDINGS,
    EXIT_OK,
    CliContext,
    emit_json,
    fail,
    json_option,
)
from corescope.views.windows import UNTIL, window_options, window_or_fail


def exit_code(inv: Investigation) -> int:
    d = inv.diagnosis
    return EXIT_OK if d is None or d.verdict.root_cause == "healthy" else EXIT_FINDINGS


@click.command()
@click.argument("paths", nargs=-1, type=click.Path(exists=True, path_type=Path))
@click.option("--boot-time", type=UNTIL, default=None,
              help="With PATH: when the node booted, for boot-relative timestamps.")
@window_options(DEFAULT_LAST_S, "How much to diagnose.")
@click.option("--node", "node", default=None, metavar="NAME",
              help="The node under investigation, for pod listings of several nodes "
                   "(`kubectl get pods -A`). Default: the node this node's own evidence "
                   "(crictl, docker, the kernel's OOM lines) ties the listing to, else its "
                   "only node; otherwise no pod tagged with a node is blamed.")
@json_option()
@click.pass_obj
def diagnose(obj: CliContext, paths: tuple[Path, ...], boot_time: float | None,
             since: float | None, until: float | None, last: float | None,
             node: str | None, as_json: bool) -> None:
    """Name the root cause: every hypothesis (zombie memcg leak, softirq storm, hardware,
    contention, memory pressure, steal, crash loop, healthy) checked against the evidence,
    with the causal chain of the winner. Reads the store (this node's, or an analyzed one
    with --store), or artifacts given as PATH (as `analyze` reads them).

    Exit 0 when healthy, 1 when there is a root cause, 2 on a usage or environment error."""
    if paths:
        from corescope.views.cli_analyze import analysis_store, import_and_investigate

        with analysis_store(obj) as store:
            _report, inv = import_and_investigate(obj, paths, boot_time, since, until, last,
                                                  store, Options(node=node))
        if inv is None:
            fail("nothing with a time could be imported from the given paths")
    else:
        from corescope.views.investigation_cli import node_evidence

        ev, extra = node_evidence(obj, kernel_ring=True, now=reaches_now(until, time.time()))
        inv = investigate(ev, window_or_fail(ev.coverage(), since, until, last),
                          Options(node=node, host=_this_host(ev.name)))
        ev.close()
        inv.statuses[:0] = extra
    if as_json:
        emit_json(diagnosis_json(inv.diagnosis))
    else:
        print_diagnosis(inv.diagnosis, hypotheses=True)
    raise SystemExit(exit_code(inv))


def _this_host(source: str) -> str | None:
    """This machine's name, for the evidence read without PATHs (this node's store or live
    state); used only when a pod listing names that node."""
    if source not in ("store", "live", "store+live"):
        return None
    import socket

    return socket.gethostname() or None


def register(cli: click.Group, lab: click.Group) -> None:
    cli.add_command(diagnose)
