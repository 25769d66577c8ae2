"""Where the store lives by default. Its own module: every command computes it at start-up,
and most need neither sqlite3 nor the store's code to do so."""

from __future__ import annotations

import os
from pathlib import Path


def default_store_dir() -> Path:
    if os.geteuid() == 0:
        return Path("/var/lib/corescope")
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "corescope"
