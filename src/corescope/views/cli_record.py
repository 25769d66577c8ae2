"""`corescope record`: the agent."""

from __future__ import annotations

import os
import sys
import time

import click

from corescope import sdnotify
from corescope.model.common import Diagnostic
from corescope.protect import DEFAULT_NICE, MemoryGuard, protect
from corescope.recorder import Recorder, build_sensors
from corescope.sensors.base import RecordOptions, SensorEnv, Tap, Taps
from corescope.sources.frames import has_frames, load_frames
from corescope.sources.replay import replay_samples
from corescope.store import retention
from corescope.store.db import Store, StoreError, ensure_private_dir, move_aside
from corescope.store.series import InvalidSample, SeriesWriter
from corescope.store.watch import GONE, REPLACED, StoreProblem
from corescope.timeparse import format_duration
from corescope.views.clitypes import (
    BYTES,
    DURATION,
    EXIT_FINDINGS,
    POSITIVE_DURATION,
    CliContext,
    fail,
)

MIN_INTERVAL_S = 0.1
_RESTARTS_ENV = "CORESCOPE_RECORD_STORE_RESTARTS"
# carried into a `record` started again on a fresh store: the problems the earlier process
# reported (so the run still ends in exit 1), and the wall time a --duration run ends at
_EARLIER_ENV = "CORESCOPE_RECORD_EARLIER_PROBLEMS"
_UNTIL_ENV = "CORESCOPE_RECORD_UNTIL"


@click.command()
@click.option("--interval", type=DURATION, default="1s", show_default=True,
              help="Per-core sampling interval (0.1s to 60s).")
@click.option("--retain", type=POSITIVE_DURATION, default="24h", show_default=True,
              help="Keep data this long.")
@click.option("--max-bytes", type=BYTES, default="1G", show_default=True,
              help="Keep the store under this size (oldest data goes first).")
@click.option("--duration", type=POSITIVE_DURATION, default=None,
              help="Stop after this long (tests, one-off captures). Default: run until stopped.")
@click.option("--census-interval", type=DURATION, default="10s", show_default=True,
              help="Zombie memcg census interval.")
@click.option("--no-census", is_flag=True, help="No zombie memcg census or restart evidence.")
@click.option("--no-kmsg", is_flag=True, help="Do not stream the kernel log.")
@click.option("--kmsg-clock-check", is_flag=True,
              help="Write one marker record into the kernel log at start to measure its clock "
                   "(root). Off by default: record never writes to the kernel log.")
@click.option("--no-netdev", is_flag=True, help="No NIC counters or interrupt map.")
@click.option("--netdev-interval", type=DURATION, default="5s", show_default=True,
              help="NIC counters and interrupt map interval.")
@click.option("--no-profile", is_flag=True, help="Do not run the perf profile ring.")
@click.option("--profile-hz", type=click.IntRange(1, 10000), default=49, show_default=True,
              help="perf sampling frequency.")
@click.option("--profile-chunk", type=DURATION, default="120s", show_default=True,
              help="Length of each profile chunk (5s to 1h).")
@click.option("--profile-retain", type=POSITIVE_DURATION, default="12h", show_default=True,
              help="Keep profile chunks this long.")
@click.option("--profile-max-bytes", type=BYTES, default="2G", show_default=True,
              help="Keep the profile ring under this size.")
@click.option("--listen", default=None, is_flag=False, flag_value="127.0.0.1:9723",
              metavar="[HOST:PORT]",
              help="Serve Prometheus /metrics here (alone: 127.0.0.1:9723). Off by default.")
@click.option("--metrics-max-window", type=DURATION, default="60s", show_default=True,
              help="Window of the corescope_cpu_mode_ratio_max gauge (>= the scrape interval).")
@click.option("--pyroscope-url", default=None, metavar="URL",
              help="Push each finished profile chunk as pprof to this Pyroscope /ingest URL.")
@click.option("--nice", "nice", type=click.IntRange(-20, 19), default=DEFAULT_NICE,
              show_default=True,
              help="Run at this nice level, so the recorder still runs on a saturated node "
                   "(lowering it needs root).")
@click.option("--no-lock-memory", is_flag=True,
              help="Do not lock the recorder's memory (mlockall, on fault; root only).")
@click.option("--no-pressure", is_flag=True,
              help="No PSI, run-queue wait or reclaim counters.")
@click.option("--pressure-interval", type=DURATION, default="5s", show_default=True,
              help="PSI interval (vmstat every 2nd, schedstat every 6th reading).")
@click.pass_obj
def record(obj: CliContext, interval: float, retain: float, max_bytes: int,
           duration: float | None, census_interval: float, no_census: bool, no_kmsg: bool,
           kmsg_clock_check: bool, no_netdev: bool, netdev_interval: float, no_profile: bool,
           profile_hz: int, profile_chunk: float, profile_retain: float,
           profile_max_bytes: int, listen: str | None, metrics_max_window: float,
           pyroscope_url: str | None, nice: int, no_lock_memory: bool,
           no_pressure: bool, pressure_interval: float) -> None:
    """Record every core every second (plus the other sensors) into the store."""
    if not MIN_INTERVAL_S <= interval <= 60:
        fail(f"--interval must be between {MIN_INTERVAL_S}s and 60s (got {interval:g}s)")
    if not 5 <= profile_chunk <= 3600:
        fail(f"--profile-chunk must be between 5s and 1h (got {profile_chunk:g}s)")
    if census_interval <= 0 or netdev_interval <= 0 or pressure_interval <= 0:
        fail("--census-interval, --netdev-interval and --pressure-interval must be positive")
    opts = RecordOptions(
        interval_s=interval, retain_s=retain, max_bytes=max_bytes, duration_s=duration,
        census=not no_census, census_interval_s=census_interval, kmsg=not no_kmsg,
        kmsg_clock_check=kmsg_clock_check,
        netdev=not no_netdev, netdev_interval_s=netdev_interval,
        profile=not no_profile, profile_hz=profile_hz, profile_chunk_s=profile_chunk,
        profile_retain_s=profile_retain, profile_max_bytes=profile_max_bytes,
        metrics_max_window_s=metrics_max_window, pyroscope_url=pyroscope_url,
        pressure=not no_pressure, pressure_interval_s=pressure_interval,
    )
    listen_at = _check_fleet_options(listen, metrics_max_window, pyroscope_url, no_profile)
    duration = _remaining(duration)
    try:
        # a corrupt store is moved aside (kept, 0600) and recording starts on a fresh one
        store = Store.open_or_replace(
            obj.store_dir, lambda msg: click.echo(f"corescope record: {msg}", err=True))
    except StoreError as exc:
        fail(str(exc))
    if has_frames(obj.root):
        _replay(obj, store, opts)
        return
    # before any sensor starts, so its threads and allocations are covered
    prot = protect(nice, lock=not no_lock_memory)
    fleet = None
    taps: list[Tap] = []
    if listen_at is not None or pyroscope_url:
        # only now: a recorder without these options never loads the exporter
        from corescope.metrics.agent import FleetOutputs

        fleet = FleetOutputs(obj.root, obj.runner, store, metrics_max_window, interval,
                             listen_at, pyroscope_url)
        taps = fleet.taps
    env = SensorEnv(root=obj.root, runner=obj.runner, store_dir=obj.store_dir, options=opts,
                    tap=taps[0] if len(taps) == 1 else Taps(taps) if taps else Tap())
    rec = Recorder(env, store, build_sensors(env) + sdnotify.watchdog_sensors(env),
                   guard=MemoryGuard(prot))
    rec.install_signal_handlers()
    statuses = rec.open()
    running = [s.name for s in statuses if s.ok]
    if not running and not rec.retrying:
        for s in statuses:
            click.echo(f"corescope record: {s.name}: {s.detail}", err=True)
        sdnotify.notify("STATUS=no sensor could start")
        fail("no sensor could start")
    extra: list[str] = []
    if fleet is not None:
        try:
            extra = fleet.start(rec.sensor_health)
        except OSError as exc:
            rec.close()
            fail(f"cannot listen on {listen}: {exc.strerror or exc}")
    off = "; ".join(f"{s.name} off: {s.detail}" for s in statuses if not s.ok)
    off = "; ".join([f"{s.name} off: {s.detail}" for s in statuses if not s.ok]
                    # a sensor that runs but measures less than it could says what it misses
                    + [f"{s.name}: {part}" for s in statuses if s.ok
                       for part in s.detail.split("; ") if "not measured" in part])
    click.echo(
        f"corescope record: {', '.join(running) or 'no sensor yet'} (cores every {interval:g}s)"
        f" into {obj.store_dir}"
        f" (retain {format_duration(retain)}, max {max_bytes // 1_000_000} MB"
        + (f", for {format_duration(duration)}" if duration else "") + ")"
        + f"; {prot.summary()}" + (f"; {off}" if off else "") + "".join(f"; {e}" for e in extra),
        err=True,
    )
    sdnotify.notify(f"READY=1\nSTATUS=recording: {', '.join(running)}")
    try:
        rec.run(duration)
    finally:
        sdnotify.notify("STOPPING=1")
        if fleet is not None:
            fleet.close()  # after the sensors: the last chunk is pushed before we go
    store.close()
    if store.abandoned is not None:
        click.echo(f"corescope record: {store.abandoned}; the database was left without a "
                   "checkpoint (its WAL keeps every commit, read on its next open)", err=True)
    problems = len(rec.losses) + len(rec.faults)
    lost_before, earlier = _earlier()
    carried = (len(rec.losses) + lost_before, problems + earlier)
    if rec.store_corrupt is not None:
        _restart_on_a_fresh_store(obj, carried)
    if rec.store_lost is not None:
        _after_store_lost(obj, rec.store_lost, carried)
    _end_report(len(rec.losses) + lost_before, problems, earlier)


def _earlier() -> tuple[int, int]:
    """(losses, problems) the processes this one replaced reported (see _EARLIER_ENV)."""
    try:
        lost, problems = (int(x) for x in os.environ.get(_EARLIER_ENV, "0 0").split())
    except ValueError:
        return 0, 0
    return lost, problems


def _end_report(losses: int, problems: int, earlier: int) -> None:
    """The last line; exit 1 when anything was lost or went wrong, here or in the process
    this one replaced (the details were logged as they happened), so a supervisor or script
    sees it."""
    before = (f"; {earlier} more before the store was started again" if earlier else "")
    if losses:
        click.echo(f"corescope record: stopped; data was lost ({problems} problems above"
                   f"{before})", err=True)
    elif problems or earlier:
        click.echo(f"corescope record: stopped after faults ({problems} problems above"
                   f"{before})", err=True)
    else:
        click.echo("corescope record: stopped", err=True)
        return
    raise SystemExit(EXIT_FINDINGS)


def _remaining(duration: float | None) -> float | None:
    """A --duration run started again on a fresh store ends when the first one would have
    (the first process notes when that is, for the ones that replace it)."""
    until = os.environ.get(_UNTIL_ENV)
    if duration is None:
        return None
    if not until:
        os.environ[_UNTIL_ENV] = repr(time.time() + duration)
        return duration
    try:
        return max(0.5, float(until) - time.time())
    except ValueError:
        return duration


def _restart_on_a_fresh_store(obj: CliContext, carried: tuple[int, int],
                              why: str = "") -> None:
    """The store went bad or away under us: run this same command again (a new process:
    every sensor, listener and writer starts clean on a fresh store). A corrupt store is
    moved aside first; `why` says what else happened."""
    restarts = int(os.environ.get(_RESTARTS_ENV, "0"))
    if not why:
        aside = move_aside(obj.store_dir)
        if restarts >= 3:
            fail(f"the store kept getting corrupted (last one moved to {aside}); stopping: "
                 "check the disk under " + str(obj.store_dir))
        why = f"moved the corrupt store to {aside}"
    elif restarts >= 3:
        fail(f"the store at {obj.store_dir} kept going away ({why}); stopping",
             EXIT_FINDINGS)
    click.echo(f"corescope record: {why}; restarting on a fresh store", err=True)
    sys.stderr.flush()
    os.environ[_RESTARTS_ENV] = str(restarts + 1)
    os.environ[_EARLIER_ENV] = f"{carried[0]} {carried[1]}"
    os.execv(sys.executable, [sys.executable, "-m", "corescope", *sys.argv[1:]])


def _after_store_lost(obj: CliContext, problem: StoreProblem,
                      carried: tuple[int, int]) -> None:
    """The store at the path is not the one we opened any more. Gone (deleted or moved
    away), or only its database deleted: a fresh store is made there (0700) and recording
    goes on. Replaced by another directory or file: stop; a recorder does not adopt a
    directory it did not open (`record` started again would, with its usual checks)."""
    if problem.kind == REPLACED:
        click.echo(f"corescope record: stopped: {problem.message}; not recording into a "
                   f"directory this recorder did not make ({carried[1]} problems above)",
                   err=True)
        raise SystemExit(EXIT_FINDINGS)
    try:
        ensure_private_dir(obj.store_dir)
    except OSError as exc:
        click.echo(f"corescope record: stopped: cannot make a new store at {obj.store_dir}: "
                   f"{exc} ({carried[1]} problems above)", err=True)
        raise SystemExit(EXIT_FINDINGS) from None
    what = ("made the store directory again (0700)" if problem.kind == GONE
            else "the store directory is still there")
    _restart_on_a_fresh_store(obj, carried, why=what)


def _check_fleet_options(listen: str | None, window: float, pyroscope_url: str | None,
                         no_profile: bool) -> tuple[str, int] | None:
    if not 1 <= window <= 3600:
        fail(f"--metrics-max-window must be between 1s and 1h (got {window:g}s)")
    if pyroscope_url is not None:
        if not pyroscope_url.startswith(("http://", "https://")):
            fail(f"--pyroscope-url must be an http:// or https:// URL, got {pyroscope_url!r}")
        if no_profile:
            fail("--pyroscope-url pushes the profile ring's chunks: drop --no-profile")
    if listen is None:
        return None
    from corescope.metrics.agent import ListenError, parse_listen

    try:
        host, port, loopback = parse_listen(listen)
    except ListenError as exc:
        fail(str(exc))
    if not loopback:
        click.echo(f"corescope record: warning: --listen {listen} is not loopback: /metrics "
                   "(CPU, units, kernel, NICs of this node) is reachable from the network",
                   err=True)
    return host, port


def _replay(obj: CliContext, store: Store, opts: RecordOptions) -> None:
    diags: list[Diagnostic] = []
    try:
        frames = load_frames(obj.root, diags)
    except (OSError, ValueError) as exc:
        fail(f"cannot replay {obj.root.base}: {exc}")
    writer = SeriesWriter(store)
    n = 0
    for sample in replay_samples(frames):
        try:
            writer.append(sample)
        except InvalidSample as exc:
            diags.append(Diagnostic(f"sample at {sample.t!r}", f"{exc}; not stored"))
            continue
        n += 1
    writer.flush()
    for d in diags:
        click.echo(f"corescope record: warning: {d}", err=True)
    retention.enforce(store, frames[-1].time, opts.retain_s, opts.max_bytes)
    store.close()
    click.echo(f"corescope record: replayed {n} samples from {len(frames)} frames "
               f"({time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime(frames[0].time))} on)",
               err=True)
    sys.stdout.flush()


def register(cli: click.Group, lab: click.Group) -> None:
    cli.add_command(record)
