"""Bytes → the content a parser sees: transparent decompression by magic bytes (gzip, zstd,
xz, bzip2) with a size cap, text in UTF-16 or behind a byte order mark made plain UTF-8
(`as_utf8`), binary detection, and kind detection through the registry.
Pure: bytes in, bytes or a reason out; nothing raises on content."""

from __future__ import annotations

import bz2
import importlib
import lzma
import zlib
from codecs import BOM_UTF8, BOM_UTF16_BE, BOM_UTF16_LE, BOM_UTF32_BE, BOM_UTF32_LE
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from types import ModuleType
from typing import Any

import zstandard

from corescope.errors import InvalidInput
from corescope.sources.artifacts import KIND_MODULES, SNIFF_BYTES

GZIP_MAGIC = b"\x1f\x8b"
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
XZ_MAGIC = b"\xfd7zXZ\x00"
BZ2_MAGIC = b"BZh"
MAX_LAYERS = 3  # compressed inside compressed: more is a decompression bomb or garbage
# what decoding damaged gzip, zstd, xz or bzip2 data raises (gzip's bad header and bzip2's bad
# stream are OSError, gzip's bad deflate data zlib.error): the file's problem, not a bug
DECODE_ERRORS: tuple[type[Exception], ...] = (OSError, EOFError, ValueError, zlib.error,
                                              lzma.LZMAError, zstandard.ZstdError)


class TooBig(InvalidInput, ValueError):
    """Decompressed content over the cap."""


class Truncated(InvalidInput, EOFError):
    """The compressed stream ends early; `data` is what it held up to there."""

    def __init__(self, data: bytes) -> None:
        super().__init__("truncated")
        self.data = data


@dataclass(frozen=True)
class Content:
    data: bytes
    codecs: tuple[str, ...]  # outermost first, e.g. ("zstd",)
    error: str | None = None  # why the content could not be read (data is then b"")
    truncated: bool = False  # the compressed stream ended early: data is what it held


def _stream(make: Callable[[], Any], data: bytes, cap: int) -> bytes:
    """bzip2/xz with a hard cap on output (a small bomb must not fill memory)."""
    d = make()
    out = bytearray()
    buf = data
    while True:
        out += d.decompress(buf, cap + 1 - len(out))
        buf = b""
        if len(out) > cap:
            raise TooBig
        if d.eof:
            return bytes(out)
        if d.needs_input:
            raise Truncated(bytes(out))


def _gzip(data: bytes, cap: int) -> bytes:
    out = bytearray()
    while data:
        d = zlib.decompressobj(16 + zlib.MAX_WBITS)
        piece = d.decompress(data, cap + 1 - len(out))
        out += piece
        while d.unconsumed_tail and len(out) <= cap:
            piece = d.decompress(d.unconsumed_tail, cap + 1 - len(out))
            if not piece:
                break
            out += piece
        if len(out) > cap:
            raise TooBig
        if not d.eof:
            raise Truncated(bytes(out))
        data = d.unused_data  # concatenated members (gzip -c a b > c)
        if data and not data.startswith(GZIP_MAGIC):
            break
    return bytes(out)


def _zstd(data: bytes, cap: int) -> bytes:
    # small input steps bound the overshoot past the cap (an RLE block of 4 bytes can stand
    # for 128 KiB), and the object says whether the last frame was complete
    out = bytearray()
    d = zstandard.ZstdDecompressor().decompressobj()
    pos = 0
    while pos < len(data):
        chunk = data[pos : pos + 256]
        pos += len(chunk)
        out += d.decompress(chunk)
        if len(out) > cap:
            raise TooBig
        if d.eof:
            rest = d.unused_data + data[pos:]
            if not rest.startswith(ZSTD_MAGIC):
                return bytes(out)
            d = zstandard.ZstdDecompressor().decompressobj()  # concatenated frames
            data, pos = rest, 0
    if not d.eof:
        raise Truncated(bytes(out))
    return bytes(out)


def _bz2(data: bytes, cap: int) -> bytes:
    return _stream(bz2.BZ2Decompressor, data, cap)


def _xz(data: bytes, cap: int) -> bytes:
    return _stream(lzma.LZMADecompressor, data, cap)


_CODECS: tuple[tuple[bytes, str, Callable[[bytes, int], bytes]], ...] = (
    (GZIP_MAGIC, "gzip", _gzip),
    (ZSTD_MAGIC, "zstd", _zstd),
    (XZ_MAGIC, "xz", _xz),
    (BZ2_MAGIC + b"9", "bzip2", _bz2),  # "BZh" + block size digit 1-9
)


def _codec(data: bytes) -> tuple[str, Callable[[bytes, int], bytes]] | None:
    for magic, name, fn in _CODECS:
        if name == "bzip2":
            if data[:3] == BZ2_MAGIC and data[3:4].isdigit() and data[4:10] == b"1AY&SY":
                return name, fn
            continue
        if data.startswith(magic):
            return name, fn
    return None


_BOMS = ((BOM_UTF32_LE, "utf-32-le"), (BOM_UTF32_BE, "utf-32-be"),
         (BOM_UTF16_LE, "utf-16-le"), (BOM_UTF16_BE, "utf-16-be"))


def _utf16_without_bom(head: bytes) -> str | None:
    """UTF-16 text with no byte order mark (some Windows tools write it): in its first bytes
    every other byte is NUL, the others printable ASCII (a log's or a JSON document's head)."""
    head = head[: len(head) & ~1]
    if len(head) < 8:
        return None
    even, odd = head[0::2], head[1::2]
    if not odd.strip(b"\0") and _ascii_text(even):
        return "utf-16-le"
    if not even.strip(b"\0") and _ascii_text(odd):
        return "utf-16-be"
    return None


def _ascii_text(data: bytes) -> bool:
    return all(0x20 <= b < 0x7F or b in (9, 10, 13) for b in data)


def _mostly_ascii(head: str) -> bool:
    """Text a node writes (logs, mpstat, JSON) is mostly ASCII in any language; binary read as
    UTF-16 is mostly CJK and control characters."""
    ascii_text = sum(1 for ch in head if " " <= ch < "\x7f" or ch in "\t\n\r")
    return ascii_text * 2 >= len(head)


def as_utf8(data: bytes) -> bytes:
    """Saved text as the parsers read it, UTF-8 with no byte order mark: a UTF-8 BOM is
    dropped (it would hide a JSON document's first brace or a log line's time), UTF-16 and
    UTF-32 (as PowerShell's `>` and Out-File save them) are decoded by their BOM, or, without
    one, UTF-16 when every other byte of the head is NUL. Anything else is returned as is."""
    if data.startswith(BOM_UTF8):
        return data[len(BOM_UTF8):]
    encoding, skip = None, 0
    for bom, name in _BOMS:
        if data.startswith(bom):
            encoding, skip = name, len(bom)
            break
    else:
        encoding = _utf16_without_bom(data[:32])
    if encoding is None:
        return data
    width = 4 if "32" in encoding else 2
    body = data[skip:]
    body = body[: len(body) - len(body) % width]  # a truncated last character
    text = body.decode(encoding, errors="replace")
    if not _mostly_ascii(text[:4096]):
        return data  # binary that happens to begin like a BOM: left to the binary check
    return text.encode("utf-8", errors="replace")


def decompress(data: bytes, cap: int) -> Content:
    """Peel compression layers (by magic bytes) until plain content, within `cap` bytes;
    text content comes out as UTF-8 (`as_utf8`)."""
    codecs: list[str] = []
    for _ in range(MAX_LAYERS + 1):
        c = _codec(data)
        if c is None:
            return Content(as_utf8(data), tuple(codecs))
        name, fn = c
        if len(codecs) == MAX_LAYERS:
            return Content(b"", tuple(codecs), f"more than {MAX_LAYERS} compression layers")
        try:
            data = fn(data, cap)
        except Truncated as exc:
            if not exc.data:
                return Content(b"", (*codecs, name), f"truncated {name} data: nothing in it "
                               "could be read")
            return Content(exc.data, (*codecs, name), None, truncated=True)
        except TooBig:
            return Content(b"", (*codecs, name), f"{name} content is larger than the "
                           f"{cap} byte cap")
        except DECODE_ERRORS as exc:
            return Content(b"", (*codecs, name), f"corrupt or truncated {name} data: {exc}")
        codecs.append(name)
    return Content(data, tuple(codecs))


def is_tar(data: bytes) -> bool:
    """A POSIX/GNU tar archive: `ustar` at offset 257."""
    return len(data) >= 512 and data[257:262] == b"ustar"


def looks_binary(head: bytes) -> bool:
    """NUL bytes, or mostly non-text bytes, in the first block."""
    if not head:
        return False
    if b"\x00" in head:
        return True
    text = sum(1 for b in head if b >= 0x20 or b in (9, 10, 13, 12, 27))
    return text / len(head) < 0.85


@cache
def _modules() -> tuple[ModuleType, ...]:
    return tuple(importlib.import_module(name) for name in KIND_MODULES)


def module_for(kind: str) -> ModuleType | None:
    """The first registered module that parses `kind`."""
    for mod in _modules():
        if kind in getattr(mod, "KINDS", ()):
            return mod
    return None


def sniff(data: bytes) -> str | None:
    """The kind of this (decompressed) content, or None when no registered parser knows it."""
    head = data[:SNIFF_BYTES].decode("utf-8", errors="replace")
    for mod in _modules():
        try:
            kind = mod.sniff(head)
        except Exception:  # a plug-in's sniffer must not fail the import of other files
            continue
        if kind:
            return kind
    return None
