"""Every /proc and /sys path is read under a root, so a captured tree replays through the
same code as the live system."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Root:
    """A filesystem root; `Root("/")` is the live system."""

    base: Path = Path("/")

    @classmethod
    def of(cls, path: str | Path | None) -> Root:
        return cls(Path(path) if path else Path("/"))

    @property
    def is_live(self) -> bool:
        return self.base == Path("/")

    def path(self, absolute: str) -> Path:
        """`/proc/stat` → `<base>/proc/stat`."""
        return self.base / absolute.lstrip("/")

    def read_text(self, absolute: str) -> str:
        return self.path(absolute).read_text(errors="replace")
