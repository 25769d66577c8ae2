"""Parsers take text or bytes: one decoding rule for all of them (never raises)."""

from __future__ import annotations


def as_text(data: str | bytes) -> str:
    return data.decode("utf-8", errors="replace") if isinstance(data, bytes) else data
