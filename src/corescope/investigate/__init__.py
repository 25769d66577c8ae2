"""One investigation, built once from one Evidence, that every view renders:
`investigate(evidence, window)` → `Investigation`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from corescope.investigate.model import Investigation, Window

if TYPE_CHECKING:
    from corescope.investigate.build import investigate

__all__ = ["Investigation", "Window", "investigate"]


def __getattr__(name: str) -> Any:
    # the builder loads every part of an investigation (episodes, correlation, findings): only
    # when one is built, not for the flame view or a window's resolution, which live here too
    if name == "investigate":
        from corescope.investigate.build import investigate

        return investigate
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
