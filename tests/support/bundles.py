"""Tar bundles as incident folders hold them (`tar -c`, plain or zstd-compressed), written in
memory for the importer's tests: regular files, and the entries a hostile bundle carries
(links, devices)."""

from __future__ import annotations

import io
import tarfile
from collections.abc import Mapping

import zstandard


def special(kind: bytes, linkname: str = "") -> tarfile.TarInfo:
    """An entry with no data (tarfile.SYMTYPE, BLKTYPE, ...); tar_bytes names it."""
    info = tarfile.TarInfo()
    info.type, info.linkname = kind, linkname
    return info


def tar_bytes(members: Mapping[str, bytes | tarfile.TarInfo]) -> bytes:
    """A tar of `members` in order: bytes as a regular file, a `special` as that entry."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tf:
        for name, data in members.items():
            if isinstance(data, tarfile.TarInfo):
                data.name = name
                tf.addfile(data)
                continue
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def tar_zst(members: Mapping[str, bytes | tarfile.TarInfo]) -> bytes:
    """tar_bytes compressed with zstd, as `tar --zstd` writes it."""
    return zstandard.ZstdCompressor().compress(tar_bytes(members))
