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
from corescope.store.db import Store, StoreError, move_aside
from corescope.store.series import InvalidSample, SeriesWriter
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
    if rec.store_corrupt is not None:
        _restart_on_a_fresh_store(obj)
    if rec.losses:
        # the details were logged as they happened; exit 1 so a supervisor or script sees it
        click.echo(f"corescope record: stopped; data was lost ({len(rec.losses)} "
                   "problems above)", err=True)
        raise SystemExit(EXIT_FINDINGS)
    click.echo("corescope record: stopped", err=True)


def _restart_on_a_fresh_store(obj: CliContext) -> None:
    """The store went bad under us: move it aside and run this same command again (a new
    process: every sensor, listener and writer starts clean on the fresh store)."""
    aside = move_aside(obj.store_dir)
    restarts = int(os.environ.get(_RESTARTS_ENV, "0"))
    if restarts >= 3:
        fail(f"the store kept getting corrupted (last one moved to {aside}); stopping: "
             "check the disk under " + str(obj.store_dir))
    click.echo(f"corescope record: moved the corrupt store to {aside}; restarting on a fresh "
               "store", err=True)
    sys.stderr.flush()
    os.environ[_RESTARTS_ENV] = str(restarts + 1)
    os.execv(sys.executable, [sys.executable, "-m", "corescope", *sys.argv[1:]])


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
