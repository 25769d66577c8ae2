"""`corescope record`: the agent."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from typing import Any

import click

from corescope import sdnotify
from corescope.evidence.open import recording_store
from corescope.model.common import Diagnostic
from corescope.protect import MemoryGuard, protect
from corescope.recorder import Recorder, build_sensors
from corescope.sensors import options
from corescope.sensors.base import RecordOptions, SensorEnv, Tap, Taps
from corescope.sensors.options import SensorOption
from corescope.sources.frames import has_frames, load_frames
from corescope.sources.replay import replay_samples
from corescope.store import retention
from corescope.store.db import Store, ensure_private_dir, move_aside
from corescope.store.series_writer import InvalidSample, SeriesWriter
from corescope.store.watch import GONE, REPLACED, StoreProblem
from corescope.textsafe import echo
from corescope.timeparse import format_duration
from corescope.views.clitypes import (
    BYTES,
    DURATION,
    EXIT_FINDINGS,
    POSITIVE_DURATION,
    CliContext,
    fail,
)

_RESTARTS_ENV = "CORESCOPE_RECORD_STORE_RESTARTS"
# carried into a `record` started again on a fresh store: the problems the earlier process
# reported (so the run still ends in exit 1), and the wall time a --duration run ends at
_EARLIER_ENV = "CORESCOPE_RECORD_EARLIER_PROBLEMS"
_UNTIL_ENV = "CORESCOPE_RECORD_UNTIL"


def _click_option(o: SensorOption[Any]) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """One declared record option as a click option whose parameter is the RecordOptions
    field, so the command builds RecordOptions from its parameters as they come."""
    if o.kind == "switch":  # on by default; the flag turns it off
        return click.option(o.flag, o.field, is_flag=True, flag_value=False, default=True,
                            help=o.help_text)
    if o.kind == "flag":
        return click.option(o.flag, o.field, is_flag=True, help=o.help_text)
    kw: dict[str, Any] = {}
    if o.flag_value is not None:
        kw.update(is_flag=False, flag_value=o.flag_value)
    if o.metavar is not None:
        kw["metavar"] = o.metavar
    types: dict[str, Any] = {"duration": DURATION, "positive_duration": POSITIVE_DURATION,
                             "bytes": BYTES, "text": None}
    if o.kind == "int":
        kind: Any = click.IntRange(None if o.low is None else int(o.low),
                                   None if o.high is None else int(o.high))
    else:
        kind = types[o.kind]
    # a duration's default is shown as written (cli.written_durations), a size's here
    default = BYTES.written(o.default) if o.kind == "bytes" else o.default
    return click.option(o.flag, o.field, type=kind, default=default,
                        show_default=o.default is not None, help=o.help_text, **kw)


def record_options(f: Callable[..., Any]) -> Callable[..., Any]:
    """Every declared option, in declaration order (click lists the last decorator first)."""
    for o in reversed(options.ALL):
        f = _click_option(o)(f)
    return f


@click.command()
@record_options
@click.pass_obj
def record(obj: CliContext, **values: Any) -> None:
    """Record every core every second (plus the other sensors) into the store."""
    opts = RecordOptions(**values)
    problem = options.out_of_range(opts)
    if problem is not None:
        fail(problem)
    listen_at = _check_fleet_options(opts.listen, opts.pyroscope_url, opts.profile)
    duration = _remaining(opts.duration_s)
    # a corrupt store is moved aside (kept, 0600) and recording starts on a fresh one; one
    # that cannot be opened at all is a StoreError, said by the CLI (views/cli.py main)
    store = recording_store(obj.store_dir, lambda msg: echo(f"corescope record: {msg}",
                                                            err=True))
    if has_frames(obj.root):
        _replay(obj, store, opts)
        return
    # before any sensor starts, so its threads and allocations are covered
    prot = protect(opts.nice, lock=opts.lock_memory)
    fleet = None
    taps: list[Tap] = []
    if listen_at is not None or opts.pyroscope_url:
        # only now: a recorder without these options never loads the exporter
        from corescope.metrics.agent import FleetOutputs

        fleet = FleetOutputs(obj.root, obj.runner, store, opts.metrics_max_window_s,
                             opts.interval_s, listen_at, opts.pyroscope_url)
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
            echo(f"corescope record: {s.name}: {s.detail}", err=True)
        sdnotify.notify("STATUS=no sensor could start")
        fail("no sensor could start")
    extra: list[str] = []
    if fleet is not None:
        try:
            extra = fleet.start(rec.sensor_health)
        except OSError as exc:
            rec.close()
            fail(f"cannot listen on {opts.listen}: {exc.strerror or exc}")
    off = "; ".join([f"{s.name} off: {s.detail}" for s in statuses if not s.ok]
                    # a sensor that runs but measures less than it could says what it misses
                    + [f"{s.name}: {part}" for s in statuses if s.ok
                       for part in s.detail.split("; ") if "not measured" in part])
    echo(
        f"corescope record: {', '.join(running) or 'no sensor yet'}"
        f" (cores every {opts.interval_s:g}s)"
        f" into {obj.store_dir}"
        f" (retain {format_duration(opts.retain_s)}, max {opts.max_bytes // 1_000_000} MB"
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
        echo(f"corescope record: {store.abandoned}; the database was left without a "
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
        echo(f"corescope record: stopped; data was lost ({problems} problems above"
             f"{before})", err=True)
    elif problems or earlier:
        echo(f"corescope record: stopped after faults ({problems} problems above"
             f"{before})", err=True)
    else:
        echo("corescope record: stopped", err=True)
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
    echo(f"corescope record: {why}; restarting on a fresh store", err=True)
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
        echo(f"corescope record: stopped: {problem.message}; not recording into a "
             f"directory this recorder did not make ({carried[1]} problems above)",
             err=True)
        raise SystemExit(EXIT_FINDINGS)
    try:
        ensure_private_dir(obj.store_dir)
    except OSError as exc:
        echo(f"corescope record: stopped: cannot make a new store at {obj.store_dir}: "
             f"{exc} ({carried[1]} problems above)", err=True)
        raise SystemExit(EXIT_FINDINGS) from None
    what = ("made the store directory again (0700)" if problem.kind == GONE
            else "the store directory is still there")
    _restart_on_a_fresh_store(obj, carried, why=what)


def _check_fleet_options(listen: str | None, pyroscope_url: str | None,
                         profile: bool) -> tuple[str, int] | None:
    if pyroscope_url is not None:
        if not pyroscope_url.startswith(("http://", "https://")):
            fail(f"--pyroscope-url must be an http:// or https:// URL, got {pyroscope_url!r}")
        if not profile:
            fail("--pyroscope-url pushes the profile ring's chunks: drop --no-profile")
    if listen is None:
        return None
    from corescope.metrics.agent import ListenError, parse_listen

    try:
        host, port, loopback = parse_listen(listen)
    except ListenError as exc:
        fail(str(exc))
    if not loopback:
        echo(f"corescope record: warning: --listen {listen} is not loopback: /metrics "
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
        echo(f"corescope record: warning: {d}", err=True)
    retention.enforce(store, frames[-1].time, opts.retain_s, opts.max_bytes)
    store.close()
    echo(f"corescope record: replayed {n} samples from {len(frames)} frames "
         f"({time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime(frames[0].time))} on)",
         err=True)
    sys.stdout.flush()


def register(cli: click.Group, lab: click.Group) -> None:
    cli.add_command(record)
