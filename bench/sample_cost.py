"""Per-sample cost of the /proc/stat sensor (read + parse + delta) as a ratio to the floor:
opening, reading and splitting /proc/stat. Goal ≤ 1.5×. Live, and on 96/192-CPU fixtures."""

from __future__ import annotations

from _common import REPO, median_ns
from corescope.rootfs import Root
from corescope.sources.procstat import ProcStatReader, delta

FIX = REPO / "tests" / "fixtures" / "procstat"


def floor(path: str) -> None:
    with open(path, "rb") as f:
        data = f.read()
    for line in data.split(b"\n"):
        line.split()


def measure(label: str, root: Root, path: str) -> None:
    reader = ProcStatReader(root)
    prev = reader.read()

    def ours() -> None:
        delta(prev, reader.read(), 0.0, 1.0)

    f = median_ns(lambda: floor(path))
    o = median_ns(ours)
    print(f"{label:<22} floor {f / 1000:8.1f} µs   ours {o / 1000:8.1f} µs   ratio {o / f:5.2f}×")
    reader.close()


def main() -> None:
    print("per-sample cost, median of 15 × 200 (ratio = ours / floor; goal ≤ 1.5)")
    measure("live /proc/stat", Root(), "/proc/stat")
    for n in (96, 192):
        import shutil
        import tempfile
        from pathlib import Path

        with tempfile.TemporaryDirectory() as d:
            (Path(d) / "proc").mkdir()
            shutil.copy(FIX / f"synth-{n}cpu.stat", Path(d) / "proc" / "stat")
            measure(f"{n}-CPU fixture", Root(Path(d)), str(Path(d) / "proc" / "stat"))


if __name__ == "__main__":
    main()
