"""`corescope events`, `corescope report` and `corescope lab nicreset`."""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path
from typing import TYPE_CHECKING

import click

from corescope.analysis.classify import classify_record
from corescope.analysis.correlate import DEFAULT_WINDOW_S, incident_json
from corescope.lab import nicreset
from corescope.model.events import KINDS, KernelEvent
from corescope.sources.kmsg import anchor_clock, parse_saved_log
from corescope.store import events as store_events
from corescope.store.db import Store
from corescope.timeparse import format_duration, iso
from corescope.views import term
from corescope.views.clitypes import (
    DURATION,
    EXIT_FINDINGS,
    EXIT_OK,
    CliContext,
    emit_json,
    fail,
    open_store_or_fail,
    require_lab_consent,
)

if TYPE_CHECKING:  # incidents reads the per-core series (numpy): imported by `report` only
    from corescope.incidents import Timeline


def _open_store(obj: CliContext, file_hint: bool = False) -> Store:
    """`file_hint`: the command has --file (events does, report does not)."""
    return open_store_or_fail(obj, "or use --file" if file_hint else "")


def events_from_file(path: Path) -> tuple[list[KernelEvent], list[str], str]:
    """Classified events of a saved log, with diagnostics and how times were set."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        fail(f"cannot read {path}: {exc.strerror}")
    records, diags = parse_saved_log(data, str(path))
    anchor = anchor_clock()
    clock = "the log's own wall clock"
    out = []
    for i, r in enumerate(records, 1):
        if r.wall is not None:
            wall = r.wall
        elif r.usec is not None:
            # a dmesg log carries only time since boot: read it as this boot's
            wall = anchor.wall_of(r.usec)
            clock = "kernel time since boot, anchored to this machine's current boot"
        else:
            wall = 0.0
        e = classify_record(r, wall)
        out.append(dataclasses.replace(e, id=i))
    return out, [str(d) for d in diags[:50]], clock


@click.command()
@click.option("--since", type=DURATION, default=None,
              help="How far back [default: 1h from the store; everything from --file].")
@click.option("--kind", "kinds", multiple=True, type=click.Choice(KINDS),
              help="Only these kinds (repeatable).")
@click.option("--all", "show_all", is_flag=True,
              help="Include unclassified lines (kind 'other'), which are kept, never dropped.")
@click.option("--file", "file_", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Read a saved `dmesg` log or `journalctl -k -o json` export instead of "
                   "the store.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.pass_obj
def events(obj: CliContext, since: float | None, kinds: tuple[str, ...], show_all: bool,
           file_: Path | None, as_json: bool) -> None:
    """Kernel events: NIC stalls and resets, lockups, RCU stalls, hung tasks, OOM kills,
    hardware errors, link changes."""
    now = time.time()
    extra: dict = {}
    if file_ is not None:
        evs, diags, clock = events_from_file(file_)
        if since is not None:
            evs = [e for e in evs if e.time >= now - since]
        lost = 0
        extra = {"source": str(file_), "clock": clock, "diagnostics": diags}
    else:
        store = _open_store(obj, file_hint=True)
        t0 = now - (since if since is not None else 3600.0)
        evs = store_events.read_events(store, t0, now + 1)
        lost = store_events.lost_records(store, t0, now + 1)
        store.close()
        extra = {"source": "store", "since": round(t0, 3)}
    if kinds:
        evs = [e for e in evs if e.kind in kinds]
    elif not show_all:
        evs = [e for e in evs if e.kind != "other"]
    if as_json:
        emit_json({"events": [e.to_json() for e in evs], "lost_records": lost, **extra})
        return
    if not evs:
        term.echo("no kernel events" + ("" if show_all or kinds else
                                         " (use --all to list unclassified lines)"))
    for e in evs:
        where = " ".join(x for x in (e.driver, e.device, e.iface) if x)
        q = f" q{e.queue}" if e.queue is not None else ""
        lab = " [lab]" if e.lab else ""
        term.echo(f"#{e.id}  {iso(e.time)}  {e.kind:<22} {where}{q}{lab}")
        term.echo(f"      {e.raw[:160]}")
    if lost:
        term.echo(f"warning: {lost} kernel log records were lost (overwritten before "
                   "corescope read them)")


def timeline_json(tl: Timeline, window_s: float) -> dict:
    from corescope.incidents import resolution_view

    incs = []
    for i, inc in enumerate(tl.incidents):
        d = incident_json(inc)
        d["interrupt_map"] = [q.to_json() for q in tl.irq_maps.get(i, [])]
        near = inc.nearest
        if near is not None:
            d["resolution"] = resolution_view(tl.samples, near.cpu, inc.event.time, window_s)
        incs.append(d)
    return {
        "incidents": incs,
        "summary": tl.summary.to_json(),
        "lost_records": tl.lost_records,
        "record_span": None if tl.span is None else [round(tl.span[0], 3), round(tl.span[1], 3)],
    }


@click.command()
@click.option("--event", "event_id", type=int, default=None, help="One event, by its id.")
@click.option("--last", type=DURATION, default="1h", show_default=True,
              help="All incidents in this much recent time.")
@click.option("--window", type=DURATION, default=f"{DEFAULT_WINDOW_S:g}s", show_default=True,
              help="How far before each event to look for hot-core episodes.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.pass_obj
def report(obj: CliContext, event_id: int | None, last: float, window: float,
           as_json: bool) -> None:
    """The incident timeline: each event, the hot-core episodes before it, the NIC interrupt
    map, and the same seconds at 1 s, 30 s and 60 s resolution.

    Exit 0 when no incident is found, 1 when there are incidents."""
    from corescope.incidents import build_timeline

    store = _open_store(obj)
    now = time.time()
    if event_id is not None:
        ev = store_events.get_event(store, event_id)
        if ev is None:
            fail(f"no event with id {event_id} in {obj.store_dir}")
        assert ev is not None
        tl = build_timeline(store, ev.time - window, ev.time + 1, root=obj.root,
                            window_s=window, events=[ev], only_incidents=False)
    else:
        tl = build_timeline(store, now - last, now + 1, root=obj.root, window_s=window)
    store.close()
    data = timeline_json(tl, window)
    if as_json:
        emit_json(data)
    else:
        _print_timeline(tl, data, window)
    raise SystemExit(EXIT_FINDINGS if tl.incidents else EXIT_OK)


def _spark(vals: list[float]) -> str:
    bars = " ▁▂▃▄▅▆▇█"
    return "".join(bars[min(8, round(max(0.0, v) / 100 * 8))] for v in vals)


def _print_timeline(tl: Timeline, data: dict, window: float) -> None:
    s = tl.summary
    if not tl.incidents:
        term.echo("no incidents in range" + (f" (record {iso(tl.span[0])} – {iso(tl.span[1])})"
                                              if tl.span else " (no per-core record)"))
    for inc, d in zip(tl.incidents, data["incidents"], strict=True):
        e = inc.event
        where = " ".join(x for x in (e.driver, e.device, e.iface) if x)
        q = f" queue {e.queue}" if e.queue is not None else ""
        term.echo(f"== #{e.id} {iso(e.time)}  {e.kind}  {where}{q}" + (" [lab]" if e.lab else ""))
        term.echo(f"   {e.raw[:160]}")
        for r in inc.related:
            term.echo(f"   +{r.time - e.time:5.1f}s {r.kind}: {r.raw[:120]}")
        if not inc.preceding:
            term.echo(f"   no hot-core episode in the {window:g}s before")
        for p in inc.preceding:
            serves = {True: "serves this queue's IRQ", False: "does not serve this queue's IRQ",
                      None: "queue IRQ mapping unknown"}[p.serves_queue]
            term.echo(f"   cpu{p.cpu}: saturated {iso(p.start)} for {p.end - p.start:.1f}s, "
                       f"ended {p.lead_s:.1f}s before the event; {serves}")
        if d["interrupt_map"]:
            mine = [m for m in d["interrupt_map"] if m["iface"] in (e.iface, None)] or \
                d["interrupt_map"]
            term.echo("   interrupt map: " + "; ".join(
                f"{m['name']}→cpu{','.join(map(str, m['cpus'])) or '?'}" for m in mine[:16]))
        res = d.get("resolution")
        if res:
            vals = [p["kernel_pct"] for p in res["series_1s"]]
            term.echo(f"   cpu{res['cpu']} kernel time, last {window:g}s at 1 s: "
                       f"|{_spark(vals)}| peak {res['peak_1s_pct']}%")
            term.echo(f"   the same seconds at 30 s: {res['at_30s_pct']}%, at 60 s: "
                       f"{res['at_60s_pct']}%; whole machine at 1 s peak "
                       f"{res['machine_peak_1s_pct']}%, at 60 s {res['machine_at_60s_pct']}%")
        term.echo("")
    if s.events:
        frac = f"{s.preceded}/{s.events} ({s.preceded_fraction:.0%})"
        base = f"{s.base_rate:.0%}" if s.base_rate is not None else "unknown (no record)"
        term.echo(f"summary: {frac} incidents followed a hot-core episode within "
                   f"{window:g}s; by chance (random instants): {base}")
        if s.median_lead_s is not None:
            term.echo(f"         median lead {format_duration(s.median_lead_s)}; most "
                       f"frequent core cpu{s.top_cpu} ({s.top_cpu_count}x)"
                       + (f"; p={s.p_value:.3g}" if s.p_value is not None else ""))
    if tl.lost_records:
        term.echo(f"warning: {tl.lost_records} kernel log records were lost in this range")


@click.command("nicreset")
@click.option("--driver", type=click.Choice(nicreset.DRIVERS), default="ena", show_default=True)
@click.option("--queue", type=click.IntRange(0, 4095), default=5, show_default=True)
@click.option("--device", default=None, help="Bus id in the lines [default: per driver].")
@click.option("--iface", default="eth0", show_default=True)
@click.option("--cpu", type=int, default=0, show_default=True,
              help="CPU named by the NETDEV WATCHDOG line (mlx5_core, virtio_net).")
@click.option("--yes", is_flag=True, help="Consent: this writes lines to the kernel log.")
@click.option("--json", "as_json", is_flag=True, help="Print the lines and their write times.")
def nicreset_cmd(driver: str, queue: int, device: str | None, iface: str, cpu: int, yes: bool,
                 as_json: bool) -> None:
    """Write a realistic NIC stall-and-reset sequence to /dev/kmsg, each line marked
    `corescope-lab`."""
    require_lab_consent(yes, "lab nicreset would write driver stall and reset lines "
                        "(marked corescope-lab) to the kernel log.")
    dev = device or nicreset.DEFAULT_DEVICE[driver]
    try:
        written = nicreset.write_lines(nicreset.sequence(driver, queue, dev, iface, cpu))
    except OSError as exc:
        fail(f"cannot write /dev/kmsg: {exc.strerror}")
    if as_json:
        emit_json({"lines": [{"level": w.level, "text": w.text, "written_before":
                              round(w.wall_before, 6), "written_after": round(w.wall_after, 6)}
                             for w in written]})
        return
    for w in written:
        term.echo(f"wrote <{w.level}> {w.text}")


def register(cli: click.Group, lab: click.Group) -> None:
    cli.add_command(events)
    cli.add_command(report)
    lab.add_command(nicreset_cmd)
