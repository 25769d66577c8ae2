"""One investigation, built once from one Evidence, that every view renders:
`investigate(evidence, window)` → `Investigation`."""

from corescope.investigate.build import investigate
from corescope.investigate.model import Investigation, Window

__all__ = ["Investigation", "Window", "investigate"]
