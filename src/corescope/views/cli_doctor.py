"""`corescope doctor`: a one-shot check of this node."""

from __future__ import annotations

import importlib
import os
import socket
import time

import click

from corescope.checks import CHECK_MODULES
from corescope.checks.base import DoctorContext
from corescope.model.common import Finding, SensorStatus
from corescope.sources.frames import has_frames
from corescope.sources.sampling import sample_cores
from corescope.store.db import DB_NAME, Store, StoreError
from corescope.views.clitypes import (
    DURATION,
    EXIT_FINDINGS,
    EXIT_OK,
    CliContext,
    emit_json,
    fail,
)

_SEVERITY_ORDER = {"critical": 0, "warning": 1, "info": 2}


@click.command()
@click.option("--seconds", type=DURATION, default="10", show_default=True,
              help="How long to sample live.")
@click.option("--since", type=DURATION, default="1h", show_default=True,
              help="How far back to read the store, when one exists.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.pass_obj
def doctor(obj: CliContext, seconds: float, since: float, as_json: bool) -> None:
    """Check this node now: sample every core live, read the store, report findings.

    Exit 0 when healthy, 1 with findings, 2 on a usage or environment error."""
    if seconds < 1:
        fail("--seconds must be at least 1")
    start = time.time()
    try:
        live = sample_cores(obj.root, seconds)
    except (OSError, ValueError) as exc:
        fail(f"cannot sample per-core CPU time: {exc}")
    end = time.time()
    sensors: dict[str, SensorStatus] = {}
    store = None
    if (obj.store_dir / DB_NAME).exists():
        try:
            store = Store.open(obj.store_dir, create=False)
            sensors["store"] = SensorStatus("store", True, f"reading {obj.store_dir}")
        except StoreError as exc:
            sensors["store"] = SensorStatus("store", False, f"{exc}; live sample only")
    else:
        sensors["store"] = SensorStatus(
            "store", False, f"no store at {obj.store_dir} (start `corescope record` to keep "
            "history); only the live sample was examined")
    if live and has_frames(obj.root):
        start, end = live[0].t - live[0].interval_s, live[-1].t
    ctx = DoctorContext(root=obj.root, runner=obj.runner, store_dir=obj.store_dir, store=store,
                        seconds=seconds, start=start, end=end, since=end - since,
                        live_samples=live)
    findings: list[Finding] = []
    for name in CHECK_MODULES:
        try:
            result = importlib.import_module(name).check(ctx)
        except Exception as exc:  # one broken check must not hide the others
            short = name.rsplit(".", 1)[-1]
            sensors[short] = SensorStatus(short, False, f"check failed: {exc}")
            continue
        sensors.update({s.name: s for s in result.sensors})
        findings.extend(result.findings)
    if store is not None:
        store.close()
    findings.sort(key=lambda f: _SEVERITY_ORDER.get(f.severity, 3))
    verdict = "findings" if findings else "healthy"
    if as_json:
        emit_json({
            "verdict": verdict,
            "host": socket.gethostname(),
            "window": {"start": round(start, 3), "end": round(end, 3),
                       "since": round(end - since, 3)},
            "sensors": {k: v.to_json() for k, v in sensors.items()},
            "findings": [f.to_json() for f in findings],
        })
    else:
        _print_report(sensors, findings, seconds)
    raise SystemExit(EXIT_FINDINGS if findings else EXIT_OK)


def _print_report(
    sensors: dict[str, SensorStatus], findings: list[Finding], seconds: float
) -> None:
    click.echo(f"corescope doctor on {socket.gethostname()} ({os.cpu_count()} CPUs, "
               f"{seconds:g}s live sample)")
    click.echo("sensors:")
    for name, s in sensors.items():
        mark = "ok " if s.ok else "OFF"
        click.echo(f"  [{mark}] {name}: {s.detail}")
    if findings:
        click.echo(f"findings ({len(findings)}):")
        for f in findings:
            click.echo(f"  [{f.severity}] {f.kind}: {f.summary}")
        click.echo("verdict: FINDINGS (exit 1)")
    else:
        click.echo("findings: none")
        click.echo("verdict: healthy (exit 0)")


def register(cli: click.Group, lab: click.Group) -> None:
    cli.add_command(doctor)
