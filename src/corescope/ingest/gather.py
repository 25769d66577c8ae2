"""Files, directories and tar bundles → the artifacts in them, each as decompressed bytes or
a reason it was not read.

Nothing is extracted to disk: tar members are streamed from the archive in memory, so a
bundle's member names (absolute paths, `..`, links) can point nowhere. Only regular files are
read; links, devices and FIFOs inside bundles are listed as skipped. Every read is capped.
"""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
import os
import stat
import tarfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import zstandard

from corescope.sources.artifacts.content import (
    GZIP_MAGIC,
    XZ_MAGIC,
    ZSTD_MAGIC,
    decompress,
    is_tar,
)

MAX_FILE_BYTES = 256 * 1024 * 1024  # one artifact, decompressed
MAX_TOTAL_BYTES = 4 * 1024 * 1024 * 1024  # everything one import reads, decompressed
MAX_FILES = 100_000
MAX_TAR_DEPTH = 3


@dataclass(frozen=True)
class Limits:
    file_bytes: int = MAX_FILE_BYTES
    total_bytes: int = MAX_TOTAL_BYTES
    files: int = MAX_FILES


@dataclass
class Artifact:
    """One file's content, or why it was not read (`data` None)."""

    label: str  # the path as given, or "bundle.tar.zst!member/path"
    data: bytes | None
    mtime: float | None = None
    codecs: tuple[str, ...] = ()
    error: str | None = None


class _Budget:
    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self.bytes = 0
        self.files = 0

    def take(self, n: int) -> bool:
        self.bytes += n
        return self.bytes <= self.limits.total_bytes


def _clean(name: str) -> str:
    """A member name fit for a label: no control characters."""
    return "".join(ch if ch.isprintable() else "?" for ch in name)[:500]


def _stream_codec(head: bytes) -> str | None:
    if head.startswith(GZIP_MAGIC):
        return "gzip"
    if head.startswith(ZSTD_MAGIC):
        return "zstd"
    if head.startswith(XZ_MAGIC):
        return "xz"
    if head[:3] == b"BZh" and head[4:10] == b"1AY&SY":
        return "bzip2"
    return None


def _decoded(raw: BinaryIO, codec: str) -> BinaryIO:
    if codec == "gzip":
        return gzip.GzipFile(fileobj=raw, mode="rb")  # type: ignore[return-value]
    if codec == "zstd":
        return zstandard.ZstdDecompressor().stream_reader(raw, read_across_frames=True)  # type: ignore[return-value]
    if codec == "xz":
        return lzma.LZMAFile(raw)  # type: ignore[return-value]
    return bz2.BZ2File(raw)  # type: ignore[return-value]


def _read_exact(f: BinaryIO, n: int) -> bytes:
    out = bytearray()
    while len(out) < n:
        piece = f.read(n - len(out))
        if not piece:
            break
        out += piece
    return bytes(out)


def _is_tar_stream(f: BinaryIO) -> bool:
    """Whether a (seekable) file holds a tar, under at most one compression layer."""
    head = _read_exact(f, 16)
    codec = _stream_codec(head)
    f.seek(0)
    if codec is None:
        first = _read_exact(f, 512)
    else:
        try:
            first = _read_exact(_decoded(f, codec), 512)
        except (OSError, EOFError, lzma.LZMAError, zstandard.ZstdError, ValueError):
            first = b""
    f.seek(0)
    return is_tar(first)


def _open_tar_stream(f: BinaryIO) -> BinaryIO:
    codec = _stream_codec(_read_exact(f, 16))
    f.seek(0)
    return f if codec is None else _decoded(f, codec)


def _from_bytes(label: str, raw: bytes, mtime: float | None, budget: _Budget,
                depth: int) -> Iterator[Artifact]:
    """One file's bytes: peel compression in memory (within the cap); a tar inside is walked."""
    cap = budget.limits.file_bytes
    content = decompress(raw, cap)
    if content.error:
        yield Artifact(label, None, mtime, content.codecs, content.error)
        return
    if is_tar(content.data):
        if depth >= MAX_TAR_DEPTH:
            yield Artifact(label, None, mtime, content.codecs, f"tar nested more than "
                           f"{MAX_TAR_DEPTH} deep: not read")
            return
        yield from _tar(label, io.BytesIO(content.data), budget, depth + 1)
        return
    if len(content.data) > cap:
        yield Artifact(label, None, mtime, content.codecs, f"larger than the {cap} byte cap: "
                       "not read")
        return
    if not budget.take(len(content.data)):
        yield Artifact(label, None, mtime, content.codecs, "the import's total size cap "
                       f"({budget.limits.total_bytes} bytes) was reached: not read")
        return
    art = Artifact(label, content.data, mtime, content.codecs)
    if content.truncated:
        art.error = f"the {content.codecs[-1]} stream is truncated: read what it held"
    yield art


def _tar(label: str, stream: BinaryIO, budget: _Budget, depth: int) -> Iterator[Artifact]:
    try:
        tf = tarfile.open(fileobj=stream, mode="r|")  # noqa: SIM115 (closed below)
    except (tarfile.TarError, OSError, EOFError) as exc:
        yield Artifact(label, None, None, (), f"unreadable tar: {exc}")
        return
    try:
        for m in tf:
            name = f"{label}!{_clean(m.name)}"
            if m.isdir():
                continue
            budget.files += 1
            if budget.files > budget.limits.files:
                yield Artifact(name, None, None, (), f"more than {budget.limits.files} files: "
                               "the rest of the bundle was not read")
                return
            if not m.isreg():
                what = ("a symlink" if m.issym() else "a hard link" if m.islnk() else
                        "a device file" if m.isdev() else "not a regular file")
                yield Artifact(name, None, m.mtime, (), f"{what} in the bundle: not read")
                continue
            if m.size > budget.limits.file_bytes:
                yield Artifact(name, None, m.mtime, (), f"member of {m.size} bytes is over "
                               "the size cap: not read")
                continue
            f = tf.extractfile(m)
            if f is None:
                continue
            raw = f.read()
            if len(raw) < m.size:
                yield Artifact(name, None, m.mtime, (), "member cut short (truncated bundle)")
                return
            yield from _from_bytes(name, raw, float(m.mtime) if m.mtime else None, budget,
                                   depth)
    except (tarfile.TarError, OSError, EOFError, zstandard.ZstdError, lzma.LZMAError) as exc:
        yield Artifact(label, None, None, (), f"tar truncated or corrupt after the members "
                       f"above: {exc}")
    finally:
        tf.close()


def _file(path: Path, budget: _Budget, explicit: bool) -> Iterator[Artifact]:
    label = str(path)
    try:
        lst = path.lstat()
        st = path.stat()  # follows a symlink to a file
    except OSError as exc:
        yield Artifact(label, None, None, (), f"unreadable: {exc.strerror or exc}")
        return
    if stat.S_ISDIR(st.st_mode):
        if stat.S_ISLNK(lst.st_mode) and not explicit:
            yield Artifact(label, None, None, (), "symlink to a directory: not followed")
            return
        yield from _directory(path, budget)
        return
    if not stat.S_ISREG(st.st_mode):
        yield Artifact(label, None, None, (), "not a regular file (device, FIFO or socket): "
                       "not read")
        return
    budget.files += 1
    if budget.files > budget.limits.files:
        yield Artifact(label, None, None, (), f"more than {budget.limits.files} files: not read")
        return
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        yield Artifact(label, None, None, (), f"unreadable: {exc.strerror or exc}")
        return
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(fd).st_mode):  # swapped since the stat above
            yield Artifact(label, None, None, (), "not a regular file: not read")
            return
        try:
            if _is_tar_stream(f):  # a bundle: streamed member by member, never whole
                yield from _tar(label, _open_tar_stream(f), budget, 1)
                return
            raw = f.read(budget.limits.file_bytes + 1)
        except OSError as exc:
            yield Artifact(label, None, st.st_mtime, (), f"unreadable: {exc}")
            return
    if len(raw) > budget.limits.file_bytes:
        yield Artifact(label, None, st.st_mtime, (), f"larger than the "
                       f"{budget.limits.file_bytes} byte cap: not read")
        return
    yield from _from_bytes(label, raw, st.st_mtime, budget, 0)


def _directory(path: Path, budget: _Budget) -> Iterator[Artifact]:
    for dirpath, dirnames, filenames in os.walk(path, followlinks=False,
                                                onerror=lambda e: None):
        dirnames.sort()
        for d in list(dirnames):
            p = Path(dirpath) / d
            if p.is_symlink():
                yield Artifact(str(p), None, None, (), "symlink to a directory: not followed")
        for name in sorted(filenames):
            yield from _file(Path(dirpath) / name, budget, explicit=False)


def gather(paths: list[str | Path], limits: Limits | None = None) -> Iterator[Artifact]:
    """Every artifact under `paths`, in a stable order (directories sorted by name)."""
    budget = _Budget(limits or Limits())
    for p in paths:
        yield from _file(Path(p), budget, explicit=True)
