"""Driver counters (what `ethtool -S IFACE` prints) read with the SIOCETHTOOL ioctl on one
datagram socket, so the recorder spawns no `ethtool` process per interface every tick.

Per interface: ETHTOOL_GSSET_INFO gives the number of counters, ETHTOOL_GSTRINGS their names
(cached until the count changes), ETHTOOL_GSTATS their values. The kernel writes as many
entries as the driver has *now*, whatever length we pass, so every buffer has slack beyond the
count we were told and a reply longer than the buffer is refused, never read."""

from __future__ import annotations

import ctypes
import errno
import fcntl
import os
import socket
import struct

from corescope.errors import MissingTool

SIOCETHTOOL = 0x8946
ETHTOOL_GSTRINGS = 0x1B
ETHTOOL_GSTATS = 0x1D
ETHTOOL_GSSET_INFO = 0x37
ETH_SS_STATS = 1
ETH_GSTRING_LEN = 32
IFNAMSIZ = 16
_IFREQ = struct.Struct(f"{IFNAMSIZ}sP")  # ifr_name, ifr_data (rest of the union unused)
_IFREQ_SIZE = 40  # sizeof(struct ifreq) on LP64
MAX_STATS = 1 << 16  # no driver has more; a larger count is treated as garbage


def _slack(n: int) -> int:
    """Room for a count that grew between asking and reading (queues added by `ethtool -L`)."""
    return 2 * n + 1024


class EthtoolError(MissingTool, OSError):
    pass


class EthtoolReader:
    """Reads `ethtool -S` counters of live interfaces. One socket for the recorder's life."""

    def __init__(self) -> None:
        self._sock: socket.socket | None = None
        self._names: dict[str, tuple[str, ...]] = {}  # stripped, in the driver's order
        self._bufs: dict[str, ctypes.Array] = {}

    def close(self) -> None:
        if self._sock is not None:
            self._sock.close()
            self._sock = None

    def _ioctl(self, iface: str, buf: ctypes.Array) -> None:
        if self._sock is None:
            self._sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        name = os.fsencode(iface)
        if not name or len(name) >= IFNAMSIZ or b"/" in name or b"\0" in name:
            raise EthtoolError(errno.ENODEV, f"not an interface name: {iface!r}")
        req = _IFREQ.pack(name, ctypes.addressof(buf)).ljust(_IFREQ_SIZE, b"\0")
        fcntl.ioctl(self._sock.fileno(), SIOCETHTOOL, req)

    def count(self, iface: str) -> int:
        """How many counters the driver has now (ETHTOOL_GSSET_INFO for ETH_SS_STATS)."""
        buf = ctypes.create_string_buffer(struct.pack("=IIQI", ETHTOOL_GSSET_INFO, 0,
                                                      1 << ETH_SS_STATS, 0))
        self._ioctl(iface, buf)
        _cmd, _res, mask, n = struct.unpack_from("=IIQI", buf.raw)
        if not mask & (1 << ETH_SS_STATS):
            return 0
        if n > MAX_STATS:
            raise EthtoolError(errno.EINVAL, f"{iface}: implausible counter count {n}")
        return n

    def names(self, iface: str, n: int) -> tuple[str, ...]:
        cap = _slack(n)
        buf = ctypes.create_string_buffer(12 + cap * ETH_GSTRING_LEN)
        struct.pack_into("=III", buf, 0, ETHTOOL_GSTRINGS, ETH_SS_STATS, n)
        self._ioctl(iface, buf)
        got = struct.unpack_from("=I", buf.raw, 8)[0]
        if got > cap:
            raise EthtoolError(errno.EOVERFLOW, f"{iface}: {got} counter names, room for {cap}")
        raw = buf.raw[12:12 + got * ETH_GSTRING_LEN]
        return tuple(raw[i:i + ETH_GSTRING_LEN].split(b"\0", 1)[0].decode("ascii", "replace")
                     for i in range(0, len(raw), ETH_GSTRING_LEN))

    def values(self, iface: str, n: int) -> tuple[int, ...]:
        cap = _slack(n)
        buf = self._bufs.get(iface)
        if buf is None or len(buf) != 8 + cap * 8:  # kept: the sensor reads every few seconds
            buf = self._bufs[iface] = ctypes.create_string_buffer(8 + cap * 8)
        struct.pack_into("=II", buf, 0, ETHTOOL_GSTATS, n)
        self._ioctl(iface, buf)
        got = struct.unpack_from("=I", buf, 4)[0]
        if got > cap:
            raise EthtoolError(errno.EOVERFLOW, f"{iface}: {got} counters, room for {cap}")
        return struct.unpack_from(f"={got}Q", buf, 8)

    def stats(self, iface: str) -> dict[str, int]:
        """{counter: value} as `ethtool -S` prints them (names stripped; a repeated name keeps
        its last value, as the text parser does). Raises OSError (EOPNOTSUPP: the driver has
        no statistics; ENODEV: no such interface).

        Once the names are known, a read is one ioctl (GSTATS): the kernel writes as many
        values as the driver has now, so a count other than the names' says the set changed,
        and the count and names are asked again. `forget` drops the names (the sensor does it
        whenever it re-lists interfaces: a driver swapped for one with as many counters)."""
        names = self._names.get(iface)
        if names is not None:
            vals = self.values(iface, len(names))
            if len(vals) == len(names):
                return dict(zip(names, vals, strict=True))
            self._names.pop(iface, None)
        n = self.count(iface)
        if n == 0:
            raise EthtoolError(errno.EOPNOTSUPP, f"{iface}: driver has no statistics")
        names = tuple(k.strip() for k in self.names(iface, n))
        vals = self.values(iface, n)
        if len(vals) != len(names):  # the driver changed between the two calls: next tick
            raise EthtoolError(errno.EAGAIN, f"{iface}: counter set changed while reading")
        self._names[iface] = names
        return dict(zip(names, vals, strict=True))

    def forget(self) -> None:
        """Drop the cached counter names and buffers: the next read asks for them again."""
        self._names.clear()
        self._bufs.clear()
