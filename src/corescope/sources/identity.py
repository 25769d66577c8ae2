"""Which machine a root is: host name, boot id and kernel, from the root itself.

A `--root` tree is someone else's machine: its identity comes from its own files
(proc/sys/kernel/hostname, etc/hostname; proc/sys/kernel/random/boot_id; proc/sys/kernel/
osrelease, proc/version) or is "unknown", never from the machine corescope runs on. Only the
live root (`/`) falls back to this process's uname."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

from corescope.rootfs import Root
from corescope.sources.boot import read_boot_id

UNKNOWN = "unknown"
# /proc/version: "Linux version 5.15.0-91-generic (buildd@...) (gcc ...) #101-Ubuntu SMP ..."
_VERSION = re.compile(r"^Linux version (\S+)")
_HOSTNAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9.\-_]{0,252}$")


@dataclass(frozen=True)
class HostIdentity:
    hostname: str
    boot_id: str
    kernel: str  # the release, as `uname -r` prints it


def _first_line(root: Root, path: str) -> str | None:
    try:
        text = root.read_text(path, limit=4096)
    except OSError:
        return None
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            return line
    return None


def hostname_of(root: Root) -> str:
    for path in ("/proc/sys/kernel/hostname", "/etc/hostname"):
        name = _first_line(root, path)
        if name and _HOSTNAME.match(name) and name != "(none)":
            return name
    return os.uname().nodename if root.is_live else UNKNOWN


def kernel_of(root: Root) -> str:
    release = _first_line(root, "/proc/sys/kernel/osrelease")
    if not release:
        m = _VERSION.match(_first_line(root, "/proc/version") or "")
        release = m.group(1) if m else None
    if release:
        return release
    return os.uname().release if root.is_live else UNKNOWN


def host_identity(root: Root) -> HostIdentity:
    return HostIdentity(hostname_of(root), read_boot_id(root) or UNKNOWN, kernel_of(root))


def cpu_count(root: Root) -> int | None:
    """CPUs of the root: its /proc/stat cpuN lines; the live root: os.cpu_count()."""
    if root.is_live:
        return os.cpu_count()
    try:
        head = root.read_bytes("/proc/stat").partition(b"\nintr ")[0]
    except OSError:
        return None
    n = len(re.findall(rb"^cpu\d+ ", head, re.MULTILINE))
    return n or None
