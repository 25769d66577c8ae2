"""Per-core samples over a few seconds, for one-shot checks (`doctor`): from the kernel, or
from the frames of a replay root."""

from __future__ import annotations

import time

from corescope.model.cores import CoreSample
from corescope.rootfs import Root
from corescope.sources.frames import has_frames, load_frames
from corescope.sources.procstat import ProcStatReader, delta
from corescope.sources.replay import replay_samples


def sample_cores(root: Root, seconds: float, interval: float = 1.0) -> list[CoreSample]:
    """Per-core samples for `seconds`: from the kernel, or from the frames of a replay root."""
    if has_frames(root):
        return list(replay_samples(load_frames(root)))
    out: list[CoreSample] = []
    with ProcStatReader(root) as reader:
        prev, prev_mono = reader.read(), time.monotonic()
        deadline = prev_mono + seconds
        while True:
            wait = min(interval, deadline - time.monotonic())
            if wait <= 0:
                break
            time.sleep(wait)
            cur, mono = reader.read(), time.monotonic()
            out.append(delta(prev, cur, time.time(), mono - prev_mono))
            prev, prev_mono = cur, mono
    return out
