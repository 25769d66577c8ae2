"""The kernel's boot id: one reader shared by the cgroup census and the kmsg sensor."""

from __future__ import annotations

from corescope.rootfs import Root

BOOT_ID_PATH = "/proc/sys/kernel/random/boot_id"


def read_boot_id(root: Root) -> str | None:
    """This boot's id (a UUID), or None when it cannot be read (old kernel, --root replay
    without it). Stored rows carry it so history from another boot is not mixed in."""
    try:
        return root.read_text(BOOT_ID_PATH).strip() or None
    except OSError:
        return None
