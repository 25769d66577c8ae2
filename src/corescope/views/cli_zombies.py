"""`corescope zombies` and the zombie labs: `lab zombies`, `lab crashloop`, `lab clean`."""

from __future__ import annotations

import json
import time

import click

from corescope.errors import CorescopeError
from corescope.evidence.watch import ZombieWatch
from corescope.investigate import Investigation, Window, investigate
from corescope.investigate.build import Options
from corescope.investigate.window import reaches_now
from corescope.lab import zombies as labz
from corescope.model.cgroups import Thresholds
from corescope.model.common import JSON_SCHEMA
from corescope.render import term
from corescope.render.json_contract import ZOMBIE_FINDINGS, ZOMBIE_SENSORS, zombies_json
from corescope.render.text import print_zombies
from corescope.timeparse import iso
from corescope.views.clitypes import (
    EXIT_FINDINGS,
    EXIT_OK,
    EXIT_USAGE,
    POSITIVE_DURATION,
    CliContext,
    FiniteFloatRange,
    emit_json,
    fail,
    json_option,
    require_lab_consent,
)
from corescope.views.investigation_cli import node_evidence
from corescope.views.windows import window_options, window_or_fail

DEFAULT_WINDOW_S = 24 * 3600.0


@click.command()
@json_option("Machine-readable output (one JSON "
              "object; with --watch one per line).")
@click.option("--watch", is_flag=True, help="Take a census every --interval until stopped, "
              "counting churn live with inotify.")
@click.option("--interval", type=POSITIVE_DURATION, default="10s", show_default=True,
              help="Census interval for --watch.")
@click.option("--count", type=click.IntRange(0), default=0,
              help="With --watch: stop after this many censuses (0: until Ctrl-C).")
@window_options(DEFAULT_WINDOW_S, "How much census history to use.")
@click.option("--window", "window_", type=POSITIVE_DURATION, default=None, hidden=True,
              help="The older name of --last.")
@click.option("--max-dying", type=click.IntRange(1), default=Thresholds.max_dying,
              show_default=True, help="Threshold: this many dying memcgs.")
@click.option("--ratio", type=FiniteFloatRange(1.0), default=Thresholds.ratio,
              show_default=True, help="Threshold: dying >= RATIO x live (once dying >= "
              "--ratio-min-dying).")
@click.option("--ratio-min-dying", type=click.IntRange(0), default=Thresholds.ratio_min_dying,
              show_default=True, help="The ratio rule applies from this many dying.")
@click.pass_obj
def zombies(obj: CliContext, as_json: bool, watch: bool, interval: float, count: int,
            since: float | None, until: float | None, last: float | None,
            window_: float | None, max_dying: int, ratio: float, ratio_min_dying: int) -> None:
    """Zombie (dying) memory cgroups: how many the kernel holds against the live ones, where
    they sit, how fast they grow, when they will hurt, and which source leaks them.

    Exit 0 when healthy, 1 with a zombie_memcg_leak finding, 2 when no memory controller
    can be read."""
    thr = Thresholds(max_dying=max_dying, ratio=ratio, ratio_min_dying=ratio_min_dying)
    last = last if last is not None else window_
    opts = Options(thresholds=thr)
    if watch:
        _watch(obj, opts, interval, count, last or DEFAULT_WINDOW_S, as_json)
        return
    ev, _ = node_evidence(obj, history_s=last or DEFAULT_WINDOW_S,
                          now=reaches_now(until, time.time()))
    window = window_or_fail(ev.coverage(), since, until, last, DEFAULT_WINDOW_S)
    inv = investigate(ev, window, opts, parts=("zombies",))
    ev.close()
    assert inv.zombies is not None
    data = zombies_json(inv)
    if as_json:
        emit_json(data)
    else:
        print_zombies(inv.zombies, [s for s in inv.statuses if s.name in ZOMBIE_SENSORS],
                      [f for f in inv.findings if f.kind in ZOMBIE_FINDINGS])
    if inv.zombies.census is None:
        raise SystemExit(EXIT_USAGE)
    raise SystemExit(EXIT_FINDINGS if data["findings"] else EXIT_OK)


def _watch(obj: CliContext, opts: Options, interval: float, count: int, history_s: float,
           as_json: bool) -> None:
    """One census per interval: the live read merged with the stored history and with the
    censuses and churn this watch has seen itself (evidence/watch.py)."""
    watch = ZombieWatch(obj.root, obj.runner, obj.store_dir, history_s)
    try:
        err = watch.start()
    except CorescopeError as exc:
        watch.close()
        fail(str(exc))
    if err is not None:
        click.echo(f"corescope zombies: {err}; churn not counted live", err=True)
    n = 0
    try:
        while True:
            now, mono = time.time(), time.monotonic()
            inv = investigate(watch.tick(now), Window(now - history_s, now + 1), opts,
                              parts=("zombies",))
            assert inv.zombies is not None
            watch.saw(inv.zombies.census)
            _watch_line(inv, as_json)
            n += 1
            if count and n >= count:
                break
            time.sleep(max(0.0, interval - (time.monotonic() - mono)))
    except KeyboardInterrupt:
        pass
    finally:
        watch.close()


def _watch_line(inv: Investigation, as_json: bool) -> None:
    r = inv.zombies
    assert r is not None
    if as_json:
        click.echo(json.dumps(zombies_json(inv), default=str), nl=True)
        return
    c = r.census
    if c is None:
        click.echo("census: not measured")
        return
    g = r.growth
    rate = "?" if g.per_hour is None else f"{g.per_hour:+.0f}/h"
    top = r.suspects[0].name if r.suspects and r.suspects[0].score > 0 else "-"
    term.echo(f"{iso(c.t)} kernel={c.kernel_count} live={c.live} dying={c.dying} "
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
        before = labz.dying_now()
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
    after = labz.dying_now()
    click.echo(f"corescope lab zombies: made {made} dying memcgs under {paths.base}/zombies "
               f"in {time.monotonic() - t0:.1f}s (dying {before} -> {after}); undo with "
               "`corescope lab clean --yes --drop-caches`", err=True)


@click.command()
@click.option("--interval", type=POSITIVE_DURATION, default="0.2s", show_default=True,
              help="Time between restarts (the agent lives half of it).")
@click.option("--duration", type=POSITIVE_DURATION, default="60s", show_default=True,
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
@json_option()
@click.pass_obj
def clean(obj: CliContext, yes: bool, drop_caches: bool, as_json: bool) -> None:
    """Stop a running crashloop, remove every cgroup under corescope-lab, and delete the
    files under /var/tmp/corescope-lab that pin the dying memcgs."""
    require_lab_consent(yes, "lab clean would remove corescope-lab cgroups and files"
                        + (" and drop the machine's caches." if drop_caches else "."))
    _lab_root_check(obj)
    before = labz.dying_now()
    try:
        res = labz.clean(drop_caches)
    except OSError as exc:  # e.g. drop_caches or a cgroup rmdir refused
        fail(_lab_os_error("lab clean", exc))
    after = labz.settle(labz.dying_now)
    out = {"schema": JSON_SCHEMA,
           "cgroups_removed": res.cgroups_removed, "processes_killed": res.processes_killed,
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
