"""The boots of one saved kernel log. A saved log may hold several boots (a persistent log, or
dmesg files saved one after another): the kernel's since-boot stamps start again from ~0 at
each, so a stamp read with one boot time places every earlier boot's lines wrongly (at times of
the boot the log ends in, out of order). `Boots` numbers the boots as the records come (a big
log block by block) and keeps what places each boot on the wall clock by itself."""

from __future__ import annotations

import re

from corescope.model.events import KmsgRecord

# A since-boot stamp this far below the last one is a new boot (lines of one boot printed on
# several CPUs may step back by a few microseconds, never by a second)
_BACK_USEC = 1_000_000
# init/version.c linux_banner: the first line of every boot (a boot that ended within a
# second of its start still ends there)
_BANNER = "Linux version "
# drivers/rtc/class.c rtc_hctosys (and 2.6-4.x's hctosys.c): `rtc_cmos 00:00: setting system
# clock to 2023-10-05T12:34:56 UTC (1696509296)`: the wall clock at this since-boot stamp
_RTC = re.compile(r"setting system clock to [^()\n]{10,40} UTC \((?P<epoch>\d{9,11})\)")


class Boots:
    """Feed a log's records in order; `feed` says which boot (0, 1, ...) each belongs to."""

    def __init__(self) -> None:
        self.count = 1
        self._last: int | None = None
        self._pairs: dict[int, list[float]] = {}  # boot → wall − since-boot of its lines
        self._rtc: dict[int, float] = {}  # boot → the same, from its RTC line

    def feed(self, r: KmsgRecord) -> int:
        u = r.usec
        if u is None:
            return self.count - 1
        last = self._last
        if last is not None and (u < last - _BACK_USEC
                                 or (u < last and r.message.startswith(_BANNER))):
            self.count += 1
        self._last = u
        boot = self.count - 1
        if r.wall is not None:
            self._pairs.setdefault(boot, []).append(r.wall - u / 1e6)
        elif boot not in self._rtc and "setting system clock" in r.message:
            m = _RTC.search(r.message)
            if m is not None:
                self._rtc[boot] = int(m.group("epoch")) - u / 1e6
        return boot

    def offset(self, boot: int, rtc: bool = True) -> float | None:
        """wall − since-boot for this boot's lines, from its own lines that print both (a
        kern.log's), else (with `rtc`) from its RTC line; None when it has neither."""
        pairs = self._pairs.get(boot)
        if pairs:
            return sorted(pairs)[len(pairs) // 2]
        return self._rtc.get(boot) if rtc else None

    def offsets(self) -> list[float | None]:
        return [self.offset(b) for b in range(self.count)]
