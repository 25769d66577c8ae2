"""The one way corescope writes a file the user named (`-o`, `--html`, capture bundles, flame
graphs, exports).

corescope often runs as root, and an output path is often in a directory another user can
write (their home, /tmp with fs.protected_symlinks=0). A plain open() there follows a link
that user planted and overwrites whatever it points at (a root-only 0600 file), and keeps an
existing file's mode. So: the target must be absent or a regular file (a symlink, FIFO or
device is refused); the data goes to a new temporary file in the target's directory
(O_EXCL|O_NOFOLLOW, 0600, opened relative to the directory's descriptor so a swapped path
component cannot redirect it), is flushed, and is renamed over the target. rename replaces
a link or hard link planted in the meantime instead of writing through it, and a failed
write leaves the old file whole. Stacks and logs name other users' processes: 0600."""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
from pathlib import Path

from corescope.errors import NotPermitted


class OutputError(NotPermitted, OSError):
    """An output file that could not be written: strerror says why, str() all of it."""

    def __str__(self) -> str:
        return f"cannot write {self.filename}: {self.strerror}"


def write_output(path: str | os.PathLike[str], data: bytes) -> int:
    """Write `data` to `path` as described above; returns the bytes written."""
    target = Path(path)
    name = target.name
    if name in ("", ".", ".."):
        raise OutputError(errno.EISDIR, "not a file name", str(target))
    parent = target.parent
    try:
        dfd = os.open(parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as exc:
        raise OutputError(exc.errno, exc.strerror, str(target)) from exc
    try:
        _check_target(dfd, name, target)
        # the name's first 200 bytes (not characters: "é" is two): with the dot, the token
        # and ".tmp" the temporary name stays within NAME_MAX (255 bytes) for any legal name
        tmp = f".{os.fsdecode(os.fsencode(name)[:200])}.{secrets.token_hex(6)}.tmp"
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
                         | os.O_CLOEXEC, 0o600, dir_fd=dfd)
        except OSError as exc:
            raise OutputError(exc.errno, exc.strerror, str(target)) from exc
        try:
            os.fchmod(fd, 0o600)  # the umask cannot widen it, nor narrow it past the owner
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            os.fsync(fd)
            os.close(fd)
            fd = -1
            _check_target(dfd, name, target)
            os.rename(tmp, name, src_dir_fd=dfd, dst_dir_fd=dfd)
            _sync_dir(dfd)
        except BaseException as exc:
            if fd >= 0:
                os.close(fd)
            with contextlib.suppress(OSError):  # gone already if the rename was done
                os.unlink(tmp, dir_fd=dfd)
            if isinstance(exc, OSError) and not isinstance(exc, OutputError):
                raise OutputError(exc.errno, exc.strerror or str(exc), str(target)) from exc
            raise
    finally:
        os.close(dfd)
    return len(data)


def _sync_dir(dfd: int) -> None:
    """The rename made durable: without the directory's fsync a power cut can leave the old
    name (or none) although the data was synced. A file system that cannot sync a directory
    (EINVAL) has nothing to sync."""
    try:
        os.fsync(dfd)
    except OSError as exc:
        if exc.errno not in (errno.EINVAL, errno.ENOTSUP):
            raise


def _check_target(dfd: int, name: str, target: Path) -> None:
    try:
        st = os.stat(name, dir_fd=dfd, follow_symlinks=False)
    except FileNotFoundError:
        return
    except OSError as exc:
        raise OutputError(exc.errno, exc.strerror, str(target)) from exc
    if stat.S_ISLNK(st.st_mode):
        raise OutputError(errno.ELOOP, "it is a symlink (not followed)", str(target))
    if not stat.S_ISREG(st.st_mode):
        raise OutputError(errno.EINVAL, "not a regular file", str(target))
