"""mpstat's times: it prints the node's local time of day with the date only in its header
(and in JSON's "date"). Times are read in the local zone of the machine running corescope
(set TZ to the node's zone), and a time of day that jumps back by more than 12 h is the next
day (midnight rollover)."""

from __future__ import annotations

from datetime import date as _date
from datetime import datetime as _datetime
from datetime import timedelta as _timedelta

from corescope.sources.artifacts.base import Parsed
from corescope.sources.artifacts.dates import zoned_epoch


class DayClock:
    """Turns times of day into epochs from a start date, rolling over at midnight. Without a
    zone of its own the file is read in the local zone, DST rules included: a day after the
    rollover is read with its own date's offset (not the start date's plus 24 h), and at the
    autumn change the repeated hour, which the file prints again after the step back, is read
    as standard time (its second pass), not as the summer hour already seen."""

    def __init__(self, ymd: tuple[int, int, int], zone: str | None = None) -> None:
        self.ymd = ymd
        self.zone = zone
        self.days = 0
        self.fold = 0  # 1 after the autumn step back: ambiguous local times are the second
        self.prev: int | None = None
        self.prev_t: float | None = None

    def _at(self, hms: tuple[int, int, int], fold: int) -> float | None:
        try:
            day = _date(*self.ymd) + _timedelta(days=self.days)
        except (ValueError, OverflowError):
            return None
        if self.zone is not None:
            return zoned_epoch(day.year, day.month, day.day, *hms, self.zone)
        try:
            return _datetime(day.year, day.month, day.day, *hms, fold=fold).timestamp()
        except (ValueError, OverflowError, OSError):
            return None

    def epoch(self, hms: tuple[int, int, int], p: Parsed) -> float | None:
        secs = hms[0] * 3600 + hms[1] * 60 + hms[2]
        if secs == self.prev and self.prev_t is not None:
            return self.prev_t  # the other CPUs' rows of the same report
        if self.prev is not None and secs < self.prev:
            if self.prev - secs > 12 * 3600:
                self.days += 1  # midnight
                self.fold = 0
            elif self._dst_fold(hms):
                self.fold = 1
                p.diag("the time of day went back an hour at the DST change: the repeated "
                       "hour is read as standard time")
            else:
                p.diag(f"time of day went back from {self.prev}s to {secs}s (a clock or DST "
                       "step?): read as the same day")
        self.prev = secs
        t = self._at(hms, self.fold)
        self.prev_t = t
        return t

    def _dst_fold(self, hms: tuple[int, int, int]) -> bool:
        """Whether a step back to `hms` is the local zone's autumn change: the time is
        ambiguous today, and its second (standard-time) reading follows the last one."""
        if self.zone is not None or self.fold or self.prev_t is None:
            return False
        first, second = self._at(hms, 0), self._at(hms, 1)
        return first is not None and second is not None and first != second and \
            second > self.prev_t
