"""A captured sequence of root trees ("frames") for replay through `--root`.

Layout: `<root>/frames/<NNNNNN>/proc/stat` ..., each frame directory holding a `.time` file
with the wall-clock epoch seconds at which it was captured. `corescope record --root <root>`
replays the frames into the store; `doctor --root <root>` samples them instead of the kernel.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from corescope.rootfs import Root, read_capped


@dataclass(frozen=True)
class Frame:
    time: float
    root: Root


def frame_dir(root: Root) -> Path:
    return root.path("/frames")


def has_frames(root: Root) -> bool:
    return frame_dir(root).is_dir()


def load_frames(root: Root) -> list[Frame]:
    """Frames in capture order. Raises ValueError with a clear message on a bad capture."""
    frames: list[Frame] = []
    for d in sorted(p for p in frame_dir(root).iterdir() if p.is_dir()):
        stamp = d / ".time"
        try:
            t = float(read_capped(stamp, 64).decode(errors="replace").strip())
        except (OSError, ValueError) as exc:
            raise ValueError(f"frame {d}: missing or unreadable .time ({exc})") from exc
        frames.append(Frame(time=t, root=Root(d)))
    if len(frames) < 2:
        raise ValueError(f"{frame_dir(root)}: a replay needs at least two frames")
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
