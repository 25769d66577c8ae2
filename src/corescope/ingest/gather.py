"""Files, directories and tar bundles → the artifacts in them, each as decompressed bytes, or
(content over STREAM_BYTES) as a seekable file of them, or a reason it was not read.

Nothing is extracted under a member's name: tar members are streamed from the archive, so a
bundle's member names (absolute paths, `..`, links) can point nowhere. Big content is read
from the file itself, or (a compressed file, a bundle's member) from an unnamed temporary
file, so the importer reads it block by block and memory does not grow with it. Only regular
files are read; links, devices and FIFOs inside bundles are listed as skipped. Every read is
capped.
"""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
import os
import shutil
import stat
import tarfile
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import zstandard

from corescope.sources.artifacts.content import (
    DECODE_ERRORS,
    GZIP_MAGIC,
    XZ_MAGIC,
    ZSTD_MAGIC,
    as_utf8,
    decompress,
    is_tar,
)

MAX_FILE_BYTES = 256 * 1024 * 1024  # one artifact, decompressed
MAX_TOTAL_BYTES = 4 * 1024 * 1024 * 1024  # everything one import reads, decompressed
MAX_FILES = 100_000
MAX_TAR_DEPTH = 3
# content larger than this is not held in memory: the artifact is a file to read in blocks
STREAM_BYTES = 8 * 1024 * 1024
_COPY = 1024 * 1024
_TAR_ERRORS: tuple[type[Exception], ...] = (tarfile.TarError, *DECODE_ERRORS)


@dataclass(frozen=True)
class Limits:
    file_bytes: int = MAX_FILE_BYTES
    total_bytes: int = MAX_TOTAL_BYTES
    files: int = MAX_FILES


@dataclass
class Artifact:
    """One file's content, or why it was not read (`data` and `content` None). Big content
    is `content`, a seekable file of the decompressed bytes (`size` of them), `data` None."""

    label: str  # the path as given, or "bundle.tar.zst!member/path"
    data: bytes | None
    mtime: float | None = None
    codecs: tuple[str, ...] = ()
    error: str | None = None
    content: BinaryIO | None = None
    size: int = 0

    def head(self, n: int) -> bytes:
        """The first `n` bytes of the content."""
        if self.content is None:
            return (self.data or b"")[:n]
        self.content.seek(0)
        return _read_exact(self.content, n)

    def read_all(self) -> bytes:
        """The whole content (for a parser that reads only whole files)."""
        if self.content is None:
            return self.data or b""
        self.content.seek(0)
        return self.content.read()

    def close(self) -> None:
        self.data = None
        if self.content is not None:
            self.content.close()
            self.content = None


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


def _spool() -> BinaryIO:
    """An unnamed temporary file (0600, gone when closed): memory while small."""
    return tempfile.SpooledTemporaryFile(max_size=STREAM_BYTES)  # type: ignore[return-value]


def _zstd_into(f: BinaryIO, out: BinaryIO, cap: int) -> int | None:
    # small input steps bound the overshoot past the cap (an RLE block of 4 bytes stands for
    # 128 KiB); concatenated frames are read on; None: truncated
    n = 0
    d = zstandard.ZstdDecompressor().decompressobj()
    pending = b""
    while True:
        chunk = pending or f.read(256)
        pending = b""
        if not chunk:
            return n if d.eof else None
        if d.eof:
            if not chunk.startswith(ZSTD_MAGIC):
                return n  # trailing bytes after the last frame, as the in-memory path reads
            d = zstandard.ZstdDecompressor().decompressobj()
        piece = d.decompress(chunk)
        out.write(piece)
        n += len(piece)
        if n > cap:
            return n
        if d.eof and d.unused_data:
            pending = d.unused_data


def _decode_into(f: BinaryIO, codec: str, out: BinaryIO, cap: int) -> int | None:
    """One compression layer of `f` into `out`, up to cap + 1 bytes; None when the stream is
    truncated or corrupt (the in-memory path then says how)."""
    try:
        if codec == "zstd":
            return _zstd_into(f, out, cap)
        n = 0
        src = _decoded(f, codec)
        while n <= cap:
            piece = src.read(min(_COPY, cap + 1 - n))
            if not piece:
                break
            out.write(piece)
            n += len(piece)
        return n
    except DECODE_ERRORS:
        return None


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
        except DECODE_ERRORS:
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
    except _TAR_ERRORS as exc:
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
            mtime = float(m.mtime) if m.mtime else None
            if m.size > STREAM_BYTES:
                # a big member: copied to an unnamed temporary file, read from there
                tmp: BinaryIO = tempfile.TemporaryFile()  # type: ignore[assignment]  # noqa: SIM115
                shutil.copyfileobj(f, tmp, _COPY)
                if tmp.tell() < m.size:
                    tmp.close()
                    yield Artifact(name, None, m.mtime, (), "member cut short (truncated "
                                   "bundle)")
                    return
                kept = False
                try:
                    for art in _from_file(name, tmp, m.size, mtime, budget, depth):
                        kept = kept or art.content is tmp
                        yield art
                finally:
                    if not kept:
                        tmp.close()
                continue
            raw = f.read()
            if len(raw) < m.size:
                yield Artifact(name, None, m.mtime, (), "member cut short (truncated bundle)")
                return
            yield from _from_bytes(name, raw, mtime, budget, depth)
    except _TAR_ERRORS as exc:
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
    f = os.fdopen(fd, "rb")
    kept = False  # the artifact reads its content from `f`: the importer closes it
    try:
        fst = os.fstat(fd)
        if not stat.S_ISREG(fst.st_mode):  # swapped since the stat above
            yield Artifact(label, None, None, (), "not a regular file: not read")
            return
        try:
            if _is_tar_stream(f):  # a bundle: streamed member by member, never whole
                yield from _tar(label, _open_tar_stream(f), budget, 1)
                return
            for art in _from_file(label, f, fst.st_size, st.st_mtime, budget, 0):
                kept = kept or art.content is f
                yield art
        except OSError as exc:
            yield Artifact(label, None, st.st_mtime, (), f"unreadable: {exc}")
    finally:
        if not kept:
            f.close()


def _content(label: str, f: BinaryIO, n: int, mtime: float | None, codecs: tuple[str, ...],
             budget: _Budget) -> Artifact:
    """`n` bytes of plain content in the seekable `f`: in memory when small, else `f`."""
    if not budget.take(n):
        return Artifact(label, None, mtime, codecs, "the import's total size cap "
                        f"({budget.limits.total_bytes} bytes) was reached: not read")
    f.seek(0)
    if n <= STREAM_BYTES:
        return Artifact(label, f.read(), mtime, codecs)
    return Artifact(label, None, mtime, codecs, content=f, size=n)


def _plain(head: bytes) -> bool:
    """Content the in-memory path would leave as it is (no further compression, no tar, no
    UTF-16/32 or BOM to re-encode): only such content is streamed."""
    return _stream_codec(head) is None and not is_tar(head) and as_utf8(head) == head


def _from_file(label: str, f: BinaryIO, size: int, mtime: float | None, budget: _Budget,
               depth: int) -> Iterator[Artifact]:
    """A seekable file's raw bytes (`size` of them): plain or one compression layer over
    plain text is streamed (read from `f`, or decoded into an unnamed temporary file);
    anything else (layers, a tar inside, a truncated or corrupt stream) is read in memory
    within the cap, as ever, so its reason is the same."""
    cap = budget.limits.file_bytes
    f.seek(0)
    head = _read_exact(f, 512)
    codec = _stream_codec(head)
    if codec is not None:
        out = _spool()
        f.seek(0)
        n = _decode_into(f, codec, out, cap)
        if n is not None and n > cap:
            out.close()
            yield Artifact(label, None, mtime, (codec,), f"{codec} content is larger than "
                           f"the {cap} byte cap")
            return
        if n is not None:
            out.seek(0)
            inner = _read_exact(out, 512)
            if _plain(inner):
                art = _content(label, out, n, mtime, (codec,), budget)
                if art.content is not out:
                    out.close()
                yield art
                return
        out.close()
    elif size > cap:
        yield Artifact(label, None, mtime, (), f"larger than the {cap} byte cap: not read")
        return
    elif size > STREAM_BYTES and _plain(head):
        yield _content(label, f, size, mtime, (), budget)
        return
    f.seek(0)
    raw = f.read(cap + 1)
    if len(raw) > cap:
        yield Artifact(label, None, mtime, (), f"larger than the {cap} byte cap: not read")
        return
    yield from _from_bytes(label, raw, mtime, budget, depth)


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
