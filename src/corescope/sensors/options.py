"""`corescope record`'s options, each declared once, grouped by the sensor (or part of the
recorder) that reads it: the RecordOptions field it fills, its flag, its type, its default, its
range and its help. `record`'s click options (views/cli_record.py), its range check
(`out_of_range`) and the docs table (generated from the click options) all come from here, so
a new option is one declaration plus its RecordOptions field
(tests/unit/sensors/test_record_options.py checks the two agree).

Pure data: no click here (the command line is views/' business), so the recorder and its tests
read the same declarations without loading the CLI."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, Literal, TypeVar

from corescope.protect import DEFAULT_NICE
from corescope.timeparse import format_duration

if TYPE_CHECKING:
    from corescope.sensors.base import RecordOptions

T = TypeVar("T")

# duration: seconds (0 allowed by the type; a range may refuse it); positive_duration: seconds
# above zero; bytes: a size budget; int: a whole number; text: a string; flag: off unless
# given; switch: on unless `--no-...` is given (the flag names what turns it off)
Kind = Literal["duration", "positive_duration", "bytes", "int", "text", "flag", "switch"]


@dataclass(frozen=True)
class SensorOption(Generic[T]):
    field: str  # the RecordOptions field (and the click parameter's name)
    flag: str
    kind: Kind
    default: T
    help: str
    low: float | None = None
    high: float | None = None
    # the low bound itself is refused (an interval of 0 s would spin)
    above_low: bool = False
    metavar: str | None = None
    # what a value-taking option holds when given without a value (`--listen` alone)
    flag_value: str | None = None

    @property
    def help_text(self) -> str:
        """The help as --help shows it: a duration with both bounds says them, so the words
        cannot drift from the check (an int range is shown by click itself)."""
        if self.kind in ("duration", "positive_duration") and self.low is not None \
                and self.high is not None:
            return (f"{self.help.removesuffix('.')} "
                    f"({_bound(self.low)} to {_bound(self.high)}).")
        return self.help

    def problem(self, value: Any) -> str | None:
        """Why `value` is out of this option's range (None when it is in range or unset)."""
        if value is None or isinstance(value, bool) or (self.low is None and self.high is None):
            return None
        low_ok = self.low is None or (value > self.low if self.above_low else value >= self.low)
        high_ok = self.high is None or value <= self.high
        if low_ok and high_ok:
            return None
        unit = "s" if self.kind in ("duration", "positive_duration") else ""
        got = f"(got {value:g}{unit})"
        if self.high is None and self.low == 0 and self.above_low:
            return f"{self.flag} must be positive {got}"
        if self.high is None:
            return f"{self.flag} must be {'above' if self.above_low else 'at least'} " \
                   f"{_shown(self.low, unit)} {got}"
        if self.low is None:
            return f"{self.flag} must be at most {_shown(self.high, unit)} {got}"
        return f"{self.flag} must be between {_shown(self.low, unit)} and " \
               f"{_shown(self.high, unit)} {got}"


def _bound(seconds: float) -> str:
    """A duration bound as the help and messages write it: 0.1s, 5s, 60s, 1h."""
    return f"{seconds:g}s" if seconds < 60 else format_duration(seconds)


def _shown(value: float | None, unit: str) -> str:
    assert value is not None
    return _bound(value) if unit == "s" else f"{value:g}"


# ─── the declarations, in the order --help lists them ───────────────────────────────────────

# per-core CPU (sensors/cores.py); the recorder's schedule ticks at this interval too
INTERVAL = SensorOption("interval_s", "--interval", "duration", 1.0,
                        "Per-core sampling interval.", low=0.1, high=60)

# the recorder and the store (recorder.py, store/retention.py)
RETAIN = SensorOption("retain_s", "--retain", "positive_duration", 24 * 3600.0,
                      "Keep data this long.")
MAX_BYTES = SensorOption("max_bytes", "--max-bytes", "bytes", 1000**3,
                         "Keep the store under this size (oldest data goes first).")
DURATION: SensorOption[float | None] = SensorOption(
    "duration_s", "--duration", "positive_duration", None,
    "Stop after this long (tests, one-off captures). Default: run until stopped.")

# zombie memcg census and restart evidence (sensors/census.py)
CENSUS_INTERVAL = SensorOption("census_interval_s", "--census-interval", "duration", 10.0,
                               "Zombie memcg census interval.", low=0, above_low=True)
CENSUS = SensorOption("census", "--no-census", "switch", True,
                      "No zombie memcg census or restart evidence.")

# the kernel log (sensors/kmsg.py)
KMSG = SensorOption("kmsg", "--no-kmsg", "switch", True, "Do not stream the kernel log.")
KMSG_CLOCK_CHECK = SensorOption(
    "kmsg_clock_check", "--kmsg-clock-check", "flag", False,
    "Write one marker record into the kernel log at start to measure its clock (root). "
    "Off by default: record never writes to the kernel log.")

# NIC counters and the interrupt map (sensors/netdev.py)
NETDEV = SensorOption("netdev", "--no-netdev", "switch", True,
                      "No NIC counters or interrupt map.")
NETDEV_INTERVAL = SensorOption("netdev_interval_s", "--netdev-interval", "duration", 5.0,
                               "NIC counters and interrupt map interval.", low=0,
                               above_low=True)

# the perf profile ring (sensors/profile.py)
PROFILE = SensorOption("profile", "--no-profile", "switch", True,
                       "Do not run the perf profile ring.")
PROFILE_HZ = SensorOption("profile_hz", "--profile-hz", "int", 49, "perf sampling frequency.",
                          low=1, high=10000)
PROFILE_CHUNK = SensorOption("profile_chunk_s", "--profile-chunk", "duration", 120.0,
                             "Length of each profile chunk.", low=5, high=3600)
PROFILE_RETAIN = SensorOption("profile_retain_s", "--profile-retain", "positive_duration",
                              12 * 3600.0, "Keep profile chunks this long.")
PROFILE_MAX_BYTES = SensorOption("profile_max_bytes", "--profile-max-bytes", "bytes",
                                 2 * 1000**3, "Keep the profile ring under this size.")

# fleet outputs (metrics/agent.py, loaded only when one is asked for)
LISTEN: SensorOption[str | None] = SensorOption(
    "listen", "--listen", "text", None,
    "Serve Prometheus /metrics here (alone: 127.0.0.1:9723). Off by default.",
    metavar="[HOST:PORT]", flag_value="127.0.0.1:9723")
METRICS_MAX_WINDOW = SensorOption(
    "metrics_max_window_s", "--metrics-max-window", "duration", 60.0,
    "Window of the corescope_cpu_mode_ratio_max gauge, at least the scrape interval.",
    low=1, high=3600)
PYROSCOPE_URL: SensorOption[str | None] = SensorOption(
    "pyroscope_url", "--pyroscope-url", "text", None,
    "Push each finished profile chunk as pprof to this Pyroscope /ingest URL.", metavar="URL")

# how the recorder protects itself (protect.py)
NICE = SensorOption("nice", "--nice", "int", DEFAULT_NICE,
                    "Run at this nice level, so the recorder still runs on a saturated node "
                    "(lowering it needs root).", low=-20, high=19)
LOCK_MEMORY = SensorOption("lock_memory", "--no-lock-memory", "switch", True,
                           "Do not lock the recorder's memory (mlockall, on fault; root only).")

# PSI, run-queue wait and reclaim counters (sensors/pressure.py)
PRESSURE = SensorOption("pressure", "--no-pressure", "switch", True,
                        "No PSI, run-queue wait or reclaim counters.")
PRESSURE_INTERVAL = SensorOption("pressure_interval_s", "--pressure-interval", "duration", 5.0,
                                 "PSI interval (vmstat every 2nd, schedstat every 6th reading).",
                                 low=0, above_low=True)

SENSOR_OPTIONS: tuple[tuple[str, tuple[SensorOption[Any], ...]], ...] = (
    ("cores", (INTERVAL,)),
    ("recorder", (RETAIN, MAX_BYTES, DURATION)),
    ("census", (CENSUS_INTERVAL, CENSUS)),
    ("kmsg", (KMSG, KMSG_CLOCK_CHECK)),
    ("netdev", (NETDEV, NETDEV_INTERVAL)),
    ("profile", (PROFILE, PROFILE_HZ, PROFILE_CHUNK, PROFILE_RETAIN, PROFILE_MAX_BYTES)),
    ("fleet", (LISTEN, METRICS_MAX_WINDOW, PYROSCOPE_URL)),
    ("protection", (NICE, LOCK_MEMORY)),
    ("pressure", (PRESSURE, PRESSURE_INTERVAL)),
)

ALL: tuple[SensorOption[Any], ...] = tuple(o for _, group in SENSOR_OPTIONS for o in group)


def out_of_range(opts: RecordOptions) -> str | None:
    """The first option outside its declared range, said as the usage error (None: all in
    range). click refuses an out-of-range int itself; this covers the durations and any
    RecordOptions built in code."""
    for o in ALL:
        why = o.problem(getattr(opts, o.field))
        if why is not None:
            return why
    return None
