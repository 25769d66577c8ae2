"""`corescope zombies` and the zombie labs: `lab zombies`, `lab crashloop`, `lab clean`."""

from __future__ import annotations

import json
import time
from dataclasses import replace
from typing import Any

import click

from corescope.analysis.zombies import ZombieReport, stat_cost_finding, zombie_finding
from corescope.checks.zombies import DEFAULT_WINDOW_S, build_report
from corescope.lab import zombies as labz
from corescope.model.cgroups import ChurnCount, MemcgCensus, Thresholds
from corescope.sources import cgroups as cg
from corescope.sources.cgwatch import ChurnWatcher
from corescope.store.db import DB_NAME, Store, StoreError
from corescope.timeparse import format_duration, iso
from corescope.views.clitypes import (
    DURATION,
    EXIT_FINDINGS,
    EXIT_OK,
    EXIT_USAGE,
    CliContext,
    emit_json,
    fail,
    require_lab_consent,
)


def _open_store(obj: CliContext) -> Store | None:
    if not (obj.store_dir / DB_NAME).exists():
        return None
    try:
        return Store.open(obj.store_dir, create=False)
    except StoreError:
        return None


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output (one JSON "
              "object; with --watch one per line).")
@click.option("--watch", is_flag=True, help="Take a census every --interval until stopped, "
              "counting churn live with inotify.")
@click.option("--interval", type=DURATION, default="10s", show_default=True,
              help="Census interval for --watch.")
@click.option("--count", type=click.IntRange(0), default=0,
              help="With --watch: stop after this many censuses (0: until Ctrl-C).")
@click.option("--window", type=DURATION, default=f"{int(DEFAULT_WINDOW_S)}s",
              show_default=True, help="How much stored census history to use.")
@click.option("--max-dying", type=click.IntRange(1), default=Thresholds.max_dying,
              show_default=True, help="Threshold: this many dying memcgs.")
@click.option("--ratio", type=click.FloatRange(1.0), default=Thresholds.ratio,
              show_default=True, help="Threshold: dying >= RATIO x live (once dying >= "
              "--ratio-min-dying).")
@click.option("--ratio-min-dying", type=click.IntRange(0), default=Thresholds.ratio_min_dying,
              show_default=True, help="The ratio rule applies from this many dying.")
@click.pass_obj
def zombies(obj: CliContext, as_json: bool, watch: bool, interval: float, count: int,
            window: float, max_dying: int, ratio: float, ratio_min_dying: int) -> None:
    """Zombie (dying) memory cgroups: how many the kernel holds against the live ones, where
    they sit, how fast they grow, when they will hurt, and which source leaks them.

    Exit 0 when healthy, 1 with a zombie_memcg_leak finding, 2 when no memory controller
    can be read."""
    thr = Thresholds(max_dying=max_dying, ratio=ratio, ratio_min_dying=ratio_min_dying)
    store = _open_store(obj)
    try:
        if watch:
            _watch(obj, store, thr, interval, count, window, as_json)
            return
        report = build_report(obj.root, obj.runner, store, thresholds=thr, window_s=window)
    finally:
        if store is not None:
            store.close()
    findings = [f for f in (zombie_finding(report, thr), stat_cost_finding(report)) if f]
    if as_json:
        data = report.to_json()
        data["findings"] = [f.to_json() for f in findings]
        emit_json(data)
    else:
        _print(report, findings)
    if report.census is None:
        raise SystemExit(EXIT_USAGE)
    raise SystemExit(EXIT_FINDINGS if findings else EXIT_OK)


def _print(r: ZombieReport, findings: list[Any]) -> None:
    lay = r.layout
    where = f"memory on {lay.memory} at {lay.memory_mount}" if lay.memory else "no memory"
    click.echo(f"layout: {lay.kind} ({where})")
    c = r.census
    if c is None or c.dying is None:
        for s in r.statuses:
            if not s.ok:
                click.echo(f"not measured: {s.name}: {s.detail}")
        return
    ratio = f", {c.dying / c.live:.1f}x live" if c.live else ""
    click.echo(f"memory cgroups: {c.kernel_count} held by the kernel, {c.live} live, "
               f"{c.dying} dying{ratio}")
    click.echo(f"  source: {c.source}")
    g = r.growth
    if g.per_hour is None:
        click.echo("growth: unknown")
    else:
        how = (f"Theil-Sen over {g.points} censuses in {format_duration(g.span_s)}"
               if g.method == "theil-sen" else "since boot: dying / uptime, no stored history")
        click.echo(f"growth: {g.per_hour:+.1f} dying/hour ({how})")
    if g.crossed:
        click.echo(f"threshold: CROSSED ({g.threshold_rule})")
    elif g.projected_threshold_at is not None:
        eta = format_duration(max(0.0, g.projected_threshold_at - c.t))
        click.echo(f"threshold: {g.threshold_rule} in about {eta} "
                   f"({iso(g.projected_threshold_at)})")
    else:
        click.echo(f"threshold: {g.threshold_rule}; not growing")
    click.echo(f"where ({r.location_basis}):")
    for loc in r.locations[:10]:
        click.echo(f"  {loc.path}: {loc.dying}")
    if not r.locations:
        click.echo("  -")
    click.echo("suspects:")
    for i, s in enumerate(r.suspects[:10], 1):
        ev = s.evidence
        bits = [f"{k}={ev[k]}" for k in ("removed_per_hour", "restarts", "restarts_per_hour",
                                          "state", "explains_pct_of_growth") if k in ev]
        click.echo(f"  {i}. {s.name} ({s.kind}) score {s.score:.2f}: {', '.join(bits)}")
    if not r.suspects:
        click.echo("  - (no churn stored and no restarting unit or container found)")
    if r.stat_read:
        parts = [f"{f} {v['median']:.3f} ms" + (f" [{v['flag']}]" if v["flag"] else "")
                 for f, v in r.stat_read.items()]
        click.echo("root stat read (median): " + ", ".join(parts))
    off = [s for s in r.statuses if not s.ok]
    for s in off:
        click.echo(f"not measured: {s.name}: {s.detail}")
    for f in findings:
        click.echo(f"[{f.severity}] {f.kind}: {f.summary}")
        for line in f.evidence.get("advice", []):
            click.echo(f"  - {line}")


def _watch(obj: CliContext, store: Store | None, thr: Thresholds, interval: float,
           count: int, window: float, as_json: bool) -> None:
    layout, _ = cg.read_layout(obj.root)
    if layout.memory_mount is None:
        fail(f"no memory controller mounted (layout {layout.kind}): nothing to watch")
    watcher = ChurnWatcher(obj.root.path(layout.memory_mount))
    err = watcher.start()
    if err is not None:
        click.echo(f"corescope zombies: {err}; churn not counted live", err=True)
    history: list[MemcgCensus] = []
    churn: list[ChurnCount] = []
    prev_mono = time.monotonic()
    n = 0
    try:
        while True:
            now, mono = time.time(), time.monotonic()
            drained = watcher.drain() if err is None else {}
            churn += [ChurnCount(now, p, c.created, c.removed, 0, mono - prev_mono, "inotify")
                      for p, c in drained.items() if c.created or c.removed]
            report = build_report(obj.root, obj.runner, store, now=now, thresholds=thr,
                                  window_s=window, extra_history=history, extra_churn=churn,
                                  probe_reads=3)
            if report.census is not None:
                history.append(replace(report.census, churn_interval_s=(
                    mono - prev_mono if n and err is None else 0.0)))
            prev_mono = mono
            _watch_line(report, as_json)
            n += 1
            if count and n >= count:
                break
            time.sleep(max(0.0, interval - (time.monotonic() - mono)))
    except KeyboardInterrupt:
        pass
    finally:
        watcher.stop()


def _watch_line(r: ZombieReport, as_json: bool) -> None:
    if as_json:
        click.echo(json.dumps(r.to_json(), default=str), nl=True)
        return
    c = r.census
    if c is None:
        click.echo("census: not measured")
        return
    g = r.growth
    rate = "?" if g.per_hour is None else f"{g.per_hour:+.0f}/h"
    top = r.suspects[0].name if r.suspects and r.suspects[0].score > 0 else "-"
    click.echo(f"{iso(c.t)} kernel={c.kernel_count} live={c.live} dying={c.dying} "
               f"growth={rate} top={top}")


# --- lab --------------------------------------------------------------------------------------


def _lab_os_error(what: str, exc: OSError) -> str:
    """One line for an OSError from the lab (mkdir/rmdir/write on cgroupfs or /var/tmp),
    instead of a traceback."""
    where = f" ({exc.filename})" if exc.filename else ""
    return f"{what} failed: {exc.strerror or exc}{where}"


def _lab_root_check(obj: CliContext) -> None:
    if not obj.root.is_live:
        fail("lab commands act on the live kernel; they do not take --root")


@click.command("zombies")
@click.option("--count", type=click.IntRange(1, 200_000), required=True,
              help="How many dying memory cgroups to create.")
@click.option("--yes", is_flag=True, help="Consent: this leaves dying memcgs in the kernel "
              "until `corescope lab clean`.")
@click.pass_obj
def lab_zombies(obj: CliContext, count: int, yes: bool) -> None:
    """Create COUNT real dying memory cgroups under corescope-lab/zombies: a process in each
    writes one page to a file under /var/tmp/corescope-lab and exits, then the cgroup is
    removed. The page cache keeps each memcg alive in the kernel. Undo: `lab clean`."""
    require_lab_consent(yes, f"lab zombies would create {count} cgroups under corescope-lab "
                        "and leave them dying (pinned by page cache) until `lab clean`.")
    _lab_root_check(obj)
    try:
        paths = labz.lab_paths()
        before = _dying()
        t0 = time.monotonic()
        made = labz.make_zombies(count, paths, progress=lambda n: click.echo(
            f"corescope lab zombies: {n}/{count}", err=True))
    except labz.LabError as exc:
        fail(str(exc))
    except KeyboardInterrupt:
        fail("interrupted; partial zombies remain until `corescope lab clean --yes`")
    except OSError as exc:
        # the lab's finally blocks have already run; e.g. a read-only cgroupfs (EROFS)
        fail(_lab_os_error("lab zombies", exc) + "; partial zombies (if any) remain until "
             "`corescope lab clean --yes`")
    after = _dying()
    click.echo(f"corescope lab zombies: made {made} dying memcgs under {paths.base}/zombies "
               f"in {time.monotonic() - t0:.1f}s (dying {before} -> {after}); undo with "
               "`corescope lab clean --yes --drop-caches`", err=True)


def _dying() -> int | None:
    from corescope.rootfs import Root

    root = Root()
    layout, _ = cg.read_layout(root)
    res = cg.take_census(root, layout)
    return res.census.dying if res.census else None


@click.command()
@click.option("--interval", type=DURATION, default="0.2s", show_default=True,
              help="Time between restarts (the agent lives half of it).")
@click.option("--duration", type=DURATION, default="60s", show_default=True,
              help="How long to keep crash-looping.")
@click.option("--yes", is_flag=True, help="Consent: each restart leaves a dying memcg.")
@click.pass_obj
def crashloop(obj: CliContext, interval: float, duration: float, yes: bool) -> None:
    """An "agent" that crashes and is restarted every INTERVAL, each time in a fresh child
    cgroup under corescope-lab/agent, the way a container runtime restarts a container.
    Each attempt leaves a dying memcg behind. Undo: `lab clean`."""
    require_lab_consent(yes, f"lab crashloop would restart an agent every {interval:g}s for "
                        f"{duration:g}s, leaving a dying memcg per restart until `lab clean`.")
    _lab_root_check(obj)
    if not 0.01 <= interval <= 3600:
        fail("--interval must be between 0.01s and 1h")
    if not 0 < duration <= 7 * 86400:
        fail("--duration must be positive and at most 7 days")
    try:
        paths = labz.lab_paths()
        click.echo(f"corescope lab crashloop: agent restarting every {interval:g}s for "
                   f"{duration:g}s under {paths.base}/agent", err=True)
        res = labz.crashloop(interval, duration, paths)
    except labz.LabError as exc:
        fail(str(exc))
    except KeyboardInterrupt:
        click.echo("corescope lab crashloop: stopped", err=True)
        return
    except OSError as exc:  # after the lab's own cleanup (its finally blocks) ran
        fail(_lab_os_error("lab crashloop", exc))
    click.echo(f"corescope lab crashloop: {res.restarts} restarts in {res.seconds:.1f}s; "
               "undo with `corescope lab clean --yes --drop-caches`", err=True)


@click.command()
@click.option("--yes", is_flag=True, help="Consent: removes the lab's cgroups and files.")
@click.option("--drop-caches", is_flag=True, help="Also `sync; echo 3 > "
              "/proc/sys/vm/drop_caches` (machine-wide) to free the last pinned memcgs.")
@click.option("--json", "as_json", is_flag=True)
@click.pass_obj
def clean(obj: CliContext, yes: bool, drop_caches: bool, as_json: bool) -> None:
    """Stop a running crashloop, remove every cgroup under corescope-lab, and delete the
    files under /var/tmp/corescope-lab that pin the dying memcgs."""
    require_lab_consent(yes, "lab clean would remove corescope-lab cgroups and files"
                        + (" and drop the machine's caches." if drop_caches else "."))
    _lab_root_check(obj)
    before = _dying()
    try:
        res = labz.clean(drop_caches)
    except OSError as exc:  # e.g. drop_caches or a cgroup rmdir refused
        fail(_lab_os_error("lab clean", exc))
    after = labz.settle(_dying)
    out = {"cgroups_removed": res.cgroups_removed, "processes_killed": res.processes_killed,
           "files_removed": res.files_removed, "dropped_caches": res.dropped_caches,
           "stopped_crashloop": res.stopped_crashloop, "dying_before": before,
           "dying_after": after, "files_refused": res.files_refused}
    if as_json:
        emit_json(out)
    else:
        click.echo(f"corescope lab clean: removed {res.cgroups_removed} cgroups and "
                   f"{res.files_removed} files"
                   + (", dropped caches" if drop_caches else "")
                   + f"; dying {before} -> {after}", err=True)
    if res.files_refused is not None:  # cgroups were cleaned; the files were left alone
        fail(f"lab clean left the lab's files alone: {res.files_refused}")


def register(cli: click.Group, lab: click.Group) -> None:
    cli.add_command(zombies)
    lab.add_command(lab_zombies)
    lab.add_command(crashloop)
    lab.add_command(clean)
