"""corescope: a per-core flight recorder and investigator for one Linux node."""

__version__ = "0.1.0"
