"""Saved incident artifacts → the store: `import_paths(paths, store)` (see ingest.importer).

The package imports nothing until one of its names is used: `flame --perf-script` reads its
files through ingest.perf_write alone, and the importer's readers and writers (the kernel log
classifier, the series and census writers) would add a tenth of a second to its start-up.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from corescope.ingest.importer import FileReport, IngestReport, Limits, import_paths

__all__ = ["FileReport", "IngestReport", "Limits", "import_paths"]


def __getattr__(name: str) -> object:
    if name in __all__:
        from corescope.ingest import importer

        return getattr(importer, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
