"""Records every layer shares: diagnostics from parsers, sensor status, findings."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

# The version of the JSON contract every `--json` output carries as "schema" (docs/json.md):
# documented keys never disappear within a version; new keys may be added.
JSON_SCHEMA = 1


@dataclass(frozen=True)
class Diagnostic:
    """Something a parser could not read; it read what it could and says what it skipped."""

    source: str
    message: str
    line: int | None = None

    def __str__(self) -> str:
        where = f":{self.line}" if self.line is not None else ""
        return f"{self.source}{where}: {self.message}"


@dataclass(frozen=True)
class SensorStatus:
    """Whether a sensor measured, and if not, what was not measured and why."""

    name: str
    ok: bool
    detail: str


@dataclass(frozen=True)
class Finding:
    kind: str
    severity: str  # "info" | "warning" | "critical"
    summary: str
    evidence: dict[str, Any] = field(default_factory=dict)
