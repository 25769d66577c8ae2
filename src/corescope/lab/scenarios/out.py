"""Deterministic file output: the same text gives the same bytes, compressed or not."""

from __future__ import annotations

import gzip
import os
from pathlib import Path
from typing import IO


class TextOut:
    """A text sink that buffers and writes UTF-8, plain or gzip with no timestamp or name in
    the header (so the bytes depend only on the text)."""

    def __init__(self, path: Path, compress: str = "none", mtime: float | None = None) -> None:
        self.path = path.with_name(path.name + ".gz") if compress == "gz" else path
        self._raw: IO[bytes] = open(self.path, "wb")  # noqa: SIM115 - closed in close()
        self._gz = (gzip.GzipFile(filename="", mode="wb", fileobj=self._raw, mtime=0,
                                  compresslevel=6) if compress == "gz" else None)
        self._buf: list[str] = []
        self._size = 0
        self._mtime = mtime
        self.bytes_text = 0

    def write(self, text: str) -> None:
        self._buf.append(text)
        self._size += len(text)
        if self._size >= 1 << 20:
            self._flush()

    def _flush(self) -> None:
        data = "".join(self._buf).encode()
        self.bytes_text += len(data)
        (self._gz or self._raw).write(data)
        self._buf, self._size = [], 0

    def close(self) -> Path:
        self._flush()
        if self._gz is not None:
            self._gz.close()
        self._raw.close()
        if self._mtime is not None:
            # the file's time is when the tool finished writing it, as on the node
            os.utime(self.path, (self._mtime, self._mtime))
        return self.path

    def __enter__(self) -> TextOut:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def write_text(path: Path, text: str, mtime: float | None = None,
               compress: str = "none") -> Path:
    with TextOut(path, compress, mtime) as out:
        out.write(text)
    return out.path
