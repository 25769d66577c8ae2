"""Per-core samples over a few seconds, for one-shot checks (`doctor`): from the kernel, or
from the frames of a replay root."""

from __future__ import annotations

import time

from corescope.model.cores import CoreSample
from corescope.rootfs import Root
from corescope.sources.frames import has_frames, load_frames
from corescope.sources.procstat import ProcStatReader, carry, delta
from corescope.sources.replay import replay_samples


def sample_cores(root: Root, seconds: float, interval: float = 1.0) -> list[CoreSample]:
    """Per-core samples for `seconds`: from the kernel, or from the frames of a replay root.
    ValueError when /proc/stat has no CPU to sample (0 CPUs is not a healthy machine)."""
    if has_frames(root):
        out = list(replay_samples(load_frames(root)))
        if not any(s.deltas for s in out):
            raise ValueError("no per-CPU lines in the frames' /proc/stat")
        return out
    out = []
    with ProcStatReader(root) as reader:
        prev, prev_mono = reader.read(), time.monotonic()
        if not prev.cpus:
            why = "; ".join(str(d) for d in prev.diagnostics[:3])
            raise ValueError(f"no per-CPU lines in {reader.root.path('/proc/stat')}"
                             + (f" ({why})" if why else ""))
        deadline = prev_mono + seconds
        while True:
            wait = min(interval, deadline - time.monotonic())
            if wait <= 0:
                break
            time.sleep(wait)
            cur, mono = reader.read(), time.monotonic()
            out.append(delta(prev, cur, time.time(), mono - prev_mono))
            prev, prev_mono = carry(prev, cur), mono
    return out
