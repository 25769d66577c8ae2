"""The original per-sample implementations (main at 06fd138), kept verbatim as the oracle the
vectorised store decoder and matrix episode finder are proved equal to."""

from __future__ import annotations

import math
import struct
from array import array
from collections.abc import Sequence

import zstandard

from corescope.analysis.usage import machine_usage, sample_usage, sum_deltas, usage_of
from corescope.model.cores import FIELDS, CoreSample, CpuUsage, Episode

_NF = len(FIELDS)
_MAGIC = b"CS1"
_HEADER = struct.Struct("<3sBHHd")
_ZC = zstandard.ZstdCompressor(level=12)
_ZD = zstandard.ZstdDecompressor()
_REPORT_MODES = ("usr", "sys", "irq", "soft", "iowait", "steal", "idle")


class SeriesFormatError(ValueError):
    pass


# --- columnar blocks -------------------------------------------------------------------------

def encode_block(samples: list[CoreSample]) -> bytes:
    """Columnar, zstd-compressed encoding of consecutive samples."""
    if not samples:
        raise ValueError("empty block")
    cpus = sorted({c for s in samples for c in s.deltas})
    t0 = samples[0].t
    biggest = max((max(d) for s in samples for d in s.deltas.values()), default=0)
    width, code = (1, "B") if biggest < 256 else (2, "H") if biggest < 65536 else (4, "I")
    out = bytearray(_HEADER.pack(_MAGIC, width, len(samples), len(cpus), t0))
    out += array("H", cpus).tobytes()
    # sample times as ms offsets from t0, intervals in µs: exact enough, small numbers
    out += array("I", [round((s.t - t0) * 1000) for s in samples]).tobytes()
    out += array("I", [round(s.interval_s * 1e6) for s in samples]).tobytes()
    # presence bitmap per sample (CPUs go offline); all-ones is cheap after compression
    nbytes = (len(cpus) + 7) // 8
    for s in samples:
        bits = bytearray(nbytes)
        for i, c in enumerate(cpus):
            if c in s.deltas:
                bits[i >> 3] |= 1 << (i & 7)
        out += bits
    col = array(code)
    for f in range(_NF):
        for c in cpus:
            col.extend(s.deltas[c][f] for s in samples if c in s.deltas)
    out += col.tobytes()
    return _ZC.compress(bytes(out))


def decode_block(payload: bytes) -> list[CoreSample]:
    try:
        raw = _ZD.decompress(payload)
        magic, width, n, ncpu, t0 = _HEADER.unpack_from(raw, 0)
    except (zstandard.ZstdError, struct.error) as exc:
        raise SeriesFormatError(f"corrupt series block: {exc}") from exc
    if magic != _MAGIC:
        raise SeriesFormatError("not a series block")
    pos = _HEADER.size
    cpus = array("H")
    cpus.frombytes(raw[pos : pos + 2 * ncpu])
    pos += 2 * ncpu
    offs = array("I")
    offs.frombytes(raw[pos : pos + 4 * n])
    pos += 4 * n
    ivs = array("I")
    ivs.frombytes(raw[pos : pos + 4 * n])
    pos += 4 * n
    nbytes = (ncpu + 7) // 8
    present: list[set[int]] = []
    for k in range(n):
        bits = raw[pos + k * nbytes : pos + (k + 1) * nbytes]
        present.append({i for i in range(ncpu) if bits[i >> 3] >> (i & 7) & 1})
    pos += n * nbytes
    col = array({1: "B", 2: "H", 4: "I"}[width])
    col.frombytes(raw[pos:])
    # rebuild per-sample, per-cpu rows from the columns
    rows: list[dict[int, list[int]]] = [{} for _ in range(n)]
    holders = [[k for k in range(n) if i in present[k]] for i in range(ncpu)]
    idx = 0
    for _f in range(_NF):
        for i, c in enumerate(cpus):
            for k in holders[i]:
                rows[k].setdefault(c, []).append(col[idx])
                idx += 1
    if idx != len(col):
        raise SeriesFormatError("series block length mismatch")
    return [
        CoreSample(
            t=t0 + offs[k] / 1000.0,
            interval_s=ivs[k] / 1e6,
            deltas={c: tuple(v) for c, v in rows[k].items()},
        )
        for k in range(n)
    ]



def _gap(prev: CoreSample, cur: CoreSample) -> bool:
    """Samples are not consecutive when more time passed than ~2 intervals."""
    return cur.t - prev.t > 2.5 * max(cur.interval_s, prev.interval_s, 1e-3)


def _floor(u: CpuUsage, threshold: float, mode: str) -> float:
    """The hot rule written out: `threshold` % of the time not stolen, while less than half
    was stolen; steal and idle on wall time."""
    steal = u.pct["steal"]
    if mode in ("steal", "idle") or steal >= 50.0:
        return threshold
    return threshold * (100.0 - steal) / 100.0


def find_episodes(
    samples: Sequence[CoreSample],
    threshold: float = 90.0,
    min_duration: float = 2.0,
    mode: str = "kernel",
) -> list[Episode]:
    samples = sorted(samples, key=lambda s: s.t)
    usages = [sample_usage(s) for s in samples]
    cpus = sorted({c for s in samples for c in s.deltas})
    episodes: list[Episode] = []
    for cpu in cpus:
        run: list[int] = []
        for k, s in enumerate(samples):
            u = usages[k].get(cpu)
            hot = u is not None and u.ticks > 0 and u.mode_pct(mode) >= _floor(u, threshold,
                                                                                mode)
            if hot and run and _gap(samples[run[-1]], s):
                episodes.extend(_close(run, cpu, samples, usages, threshold, min_duration, mode))
                run = []
            if hot:
                run.append(k)
            elif run:
                episodes.extend(_close(run, cpu, samples, usages, threshold, min_duration, mode))
                run = []
        if run:
            episodes.extend(_close(run, cpu, samples, usages, threshold, min_duration, mode))
    episodes.sort(key=lambda e: (e.start, e.cpu))
    return episodes


def _close(
    run: list[int], cpu: int, samples: Sequence[CoreSample],
    usages: list[dict[int, CpuUsage]], threshold: float, min_duration: float, mode: str,
) -> list[Episode]:
    first, last = samples[run[0]], samples[run[-1]]
    start, end = first.t - first.interval_s, last.t
    if end - start < min_duration - 1e-6:
        return []
    values = [usages[k][cpu].mode_pct(mode) for k in run]
    by_mode = {}
    for m in _REPORT_MODES:
        vals = [usages[k][cpu].pct[m] for k in run]
        by_mode[m] = {"peak": max(vals), "mean": sum(vals) / len(vals)}
    machine = [machine_usage(samples[k]).mode_pct(mode) for k in run]
    seen30, mseen30 = coarse_view(samples, cpu, start, end, 30.0, mode)
    seen60, mseen60 = coarse_view(samples, cpu, start, end, 60.0, mode)
    return [
        Episode(
            cpu=cpu, start=start, end=end, mode=mode, threshold_pct=threshold,
            peak_pct=max(values), mean_pct=sum(values) / len(values),
            machine_avg_pct=sum(machine) / len(machine),
            seen_at_30s_pct=seen30, seen_at_60s_pct=seen60,
            machine_seen_at_30s_pct=mseen30, machine_seen_at_60s_pct=mseen60,
            samples=len(run), by_mode=by_mode,
        )
    ]


def coarse_view(
    samples: Sequence[CoreSample], cpu: int, start: float, end: float, window: float, mode: str
) -> tuple[float, float]:
    """(core %, machine %) that a monitor taking one counter delta per aligned `window` would
    have reported, over the recorded part of each window touching [start, end]; the highest."""
    best_core = best_machine = 0.0
    first = math.floor(start / window)
    last = math.floor(max(start, end - 1e-9) / window)
    for b in range(first, last + 1):
        lo, hi = b * window, (b + 1) * window
        # a sample belongs to the window holding its midpoint
        inside = [s for s in samples if lo <= s.t - s.interval_s / 2 < hi]
        core_rows = [s.deltas[cpu] for s in inside if cpu in s.deltas]
        if core_rows:
            best_core = max(best_core, usage_of(cpu, sum_deltas(core_rows)).mode_pct(mode))
        all_rows = [d for s in inside for d in s.deltas.values()]
        if all_rows:
            best_machine = max(best_machine, usage_of(-1, sum_deltas(all_rows)).mode_pct(mode))
    return best_core, best_machine


def covered_spans(samples: Sequence[CoreSample]) -> list[tuple[float, float]]:
    """The stretches of time the record covers: runs of consecutive samples."""
    spans: list[tuple[float, float]] = []
    prev: CoreSample | None = None
    for s in sorted(samples, key=lambda x: x.t):
        if prev is None or _gap(prev, s):
            spans.append((s.t - s.interval_s, s.t))
        else:
            spans[-1] = (spans[-1][0], s.t)
        prev = s
    return spans


def _decode_row(t: float, interval_s: float, payload: bytes) -> CoreSample:
    values = array("I")
    values.frombytes(payload)
    n = values[0]
    cpus = values[1 : 1 + n]
    return CoreSample(t=t, interval_s=interval_s,
                      deltas={c: tuple(values[1 + n + i * _NF : 1 + n + (i + 1) * _NF])
                              for i, c in enumerate(cpus)})


def read_samples(store, t0: float, t1: float) -> list[CoreSample]:
    out: list[CoreSample] = []
    for (payload,) in store.query(
        "SELECT payload FROM core_blocks WHERE t1 >= ? AND t0 <= ? ORDER BY t0", (t0, t1)
    ):
        out.extend(s for s in decode_block(payload) if t0 <= s.t <= t1)
    out.extend(
        _decode_row(*r)
        for r in store.query(
            "SELECT t, interval_s, payload FROM core_recent WHERE t BETWEEN ? AND ? ORDER BY t",
            (t0, t1),
        )
    )
    out.sort(key=lambda s: s.t)
    return out


def resolution(samples, cpu: int, t: float, window_s: float):
    """investigate.build.resolution as the per-sample code computed it."""
    from corescope.investigate.model import Resolution, ResolutionPoint

    series = tuple(
        ResolutionPoint(s.t, usage_of(-1, s.deltas[cpu]).mode_pct("kernel"),
                        machine_usage(s).mode_pct("kernel"))
        for s in samples if t - window_s < s.t <= t + 0.5 and cpu in s.deltas)
    c30, m30 = coarse_view(samples, cpu, t - window_s, t, 30.0, "kernel")
    c60, m60 = coarse_view(samples, cpu, t - window_s, t, 60.0, "kernel")
    if not series:
        return Resolution(cpu, series, None, None, None, None)
    return Resolution(cpu, series, c30, c60, m30, m60)


# --- the base rate (main at 41b21ae), scanning every episode per instant ----------------------

def base_rate(episodes, span, window_s, samples, seed, covered=None):
    import random

    t0, t1 = span
    if not (math.isfinite(t0) and math.isfinite(t1)) or t1 <= t0 or samples <= 0:
        return None
    parts = [(a + window_s if b - a > window_s else a, b)
             for a, b in (covered if covered else [span]) if b > a]
    total = sum(b - a for a, b in parts)
    if total <= 0:
        return None
    rng = random.Random(seed)
    eps = sorted(episodes, key=lambda e: e.start)
    hits = 0
    for _ in range(samples):
        x = rng.uniform(0, total)
        for a, b in parts:  # map x onto the covered stretches, in order
            if x <= b - a:
                t = a + x
                break
            x -= b - a
        else:
            t = parts[-1][1]
        if any(e.start <= t and e.end >= t - window_s for e in eps):
            hits += 1
    return hits / samples
