"""Per-CPU rows of ten counters packed in one flat numeric array, read as a mapping.

The sampling hot path parses /proc/stat into one array and subtracts arrays, instead of
building a tuple per CPU; analysis code still sees `{cpu: (user, nice, ...)}`."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from corescope.model.cores import FIELDS

NF = len(FIELDS)


class PackedRows(Mapping[int, tuple[int, ...]]):
    __slots__ = ("_index", "flat", "ids")

    def __init__(self, ids: Sequence[int], flat: Any) -> None:
        self.ids = tuple(ids)
        # len(ids) * NF values: a flat list/array, or a numpy array of shape (len(ids), NF)
        self.flat = flat
        self._index: dict[int, int] | None = None

    def _idx(self) -> dict[int, int]:
        if self._index is None:
            self._index = {c: i for i, c in enumerate(self.ids)}
        return self._index

    def __getitem__(self, cpu: int) -> tuple[int, ...]:
        i = self._idx()[cpu]
        flat = self.flat
        row = flat[i] if getattr(flat, "ndim", 1) == 2 else flat[i * NF : (i + 1) * NF]
        return tuple(row.tolist() if hasattr(row, "tolist") else row)

    def __contains__(self, cpu: object) -> bool:
        return cpu in self._idx()

    def __iter__(self) -> Iterator[int]:
        return iter(self.ids)

    def __len__(self) -> int:
        return len(self.ids)

    def __repr__(self) -> str:
        return f"PackedRows({dict(self.items())!r})"
