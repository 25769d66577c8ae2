"""A captured sequence of root trees ("frames") for replay through `--root`.

Layout: `<root>/frames/<NNNNNN>/proc/stat` ..., each frame directory holding a `.time` file
with the wall-clock epoch seconds at which it was captured. `corescope record --root <root>`
replays the frames into the store; `doctor --root <root>` samples them instead of the kernel.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from corescope.model.common import Diagnostic
from corescope.rootfs import Root, read_capped


@dataclass(frozen=True)
class Frame:
    time: float
    root: Root


def frame_dir(root: Root) -> Path:
    return root.path("/frames")


def has_frames(root: Root) -> bool:
    return frame_dir(root).is_dir()


# a frame time must be an epoch time the store can keep (before 2106, as store.series_codec)
MAX_FRAME_TIME = float(1 << 32)


def load_frames(root: Root, diagnostics: list[Diagnostic] | None = None) -> list[Frame]:
    """Frames in capture order. A frame whose .time is not a finite epoch time, or is not
    after the previous frame's, is skipped (and named in `diagnostics`): one bad stamp must
    not stop a replay or reach the store. Raises ValueError with a clear message on a
    capture that cannot be replayed at all."""
    frames: list[Frame] = []
    diags = diagnostics if diagnostics is not None else []
    for d in sorted(p for p in frame_dir(root).iterdir() if p.is_dir()):
        stamp = d / ".time"
        try:
            t = float(read_capped(stamp, 64).decode(errors="replace").strip())
        except (OSError, ValueError) as exc:
            raise ValueError(f"frame {d}: missing or unreadable .time ({exc})") from exc
        if not (math.isfinite(t) and 0 < t < MAX_FRAME_TIME):
            diags.append(Diagnostic(str(stamp), f"frame time {t!r} is not an epoch time "
                                    "before 2106; frame skipped"))
            continue
        if frames and t <= frames[-1].time:
            diags.append(Diagnostic(str(stamp), f"frame time {t!r} is not after the previous "
                                    f"frame's ({frames[-1].time!r}); frame skipped"))
            continue
        frames.append(Frame(time=t, root=Root(d)))
    if len(frames) < 2:
        raise ValueError(f"{frame_dir(root)}: a replay needs at least two frames with "
                         "increasing times" + (f" ({len(diags)} skipped)" if diags else ""))
    return frames


def write_frame(base: Path, index: int, t: float, files: dict[str, str]) -> Path:
    """Write one frame (used by capture and by fixture generators)."""
    d = base / "frames" / f"{index:06d}"
    for rel, text in files.items():
        p = d / rel.lstrip("/")
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    (d / ".time").write_text(f"{t:.6f}\n")
    return d
