"""sar -h and sadf -dh -P all,N (sysstat 12.6, captured from the repository's own sar binaries:
tests/fixtures/artifacts/README.md) read as the plain forms are."""

from __future__ import annotations

import pytest

from corescope.analysis.usage import usage_of
from corescope.sources.artifacts import sysstat
from support import FIXTURES

ART = FIXTURES / "artifacts"


def _pct(name: str, kind: str) -> dict[tuple[float, int], dict[str, float]]:
    p = sysstat.parse((ART / name).read_bytes(), kind, name)
    assert not p.diagnostics, p.diagnostics
    return {(s.t, c): usage_of(c, tuple(s.deltas[c])).pct for s in p.samples for c in s.deltas}


def test_sar_h_reads_as_sadf_d() -> None:
    got = _pct("sar_h_burn.txt", "mpstat_text")
    want = _pct("sadf_burn_d.csv", "sadf_csv")
    assert got.keys() == want.keys() and got
    for k, pct in got.items():
        for m in ("usr", "sys", "idle"):
            assert pct[m] == pytest.approx(want[k][m], abs=0.6)  # one decimal printed
    assert max(v["usr"] for (_, c), v in got.items() if c == 1) > 99  # the burned CPU


def test_sadf_dh_with_one_cpu_after_the_all_columns() -> None:
    got = _pct("sadf_dh_P_all1.csv", "sadf_csv")
    want = _pct("sadf_burn_d.csv", "sadf_csv")
    assert {c for _, c in got} == {1}
    for k, pct in got.items():
        assert pct["usr"] == pytest.approx(want[k]["usr"], abs=1e-9)


def test_sadf_dh_with_another_activity_after_the_cpu_columns() -> None:
    got = _pct("sadf_dh_Iu_P_all0.csv", "sadf_csv")
    assert len(got) == 3 and {c for _, c in got} == {0}


def test_sadf_dh_restart_rows_are_records_not_unreadable_lines() -> None:
    # sadf -dh prints a restart as `host;-1;timestamp;LINUX-RESTART\t(N CPU)` (sadf_misc.c)
    head = (ART / "sadf_dh_P_all1.csv").read_text().splitlines()
    text = "\n".join([head[0], head[1], "vm;-1;2026-12-01 10:27:55 UTC;LINUX-RESTART\t(2 CPU)",
                      *head[2:]]) + "\n"
    p = sysstat.parse(text.encode(), "sadf_csv", "t")
    assert not p.diagnostics and len(p.samples) == len(head) - 1


def test_sadf_standard_zone_names_follow_their_zones_summer_time() -> None:
    # sadf -d -T / -t rows as sysstat prints them (the zone's tzname[0] in summer too): New
    # York's and Paris's local times of 2019-04-18 13:20:19 UTC, and a winter one
    head = "# hostname;interval;timestamp;CPU;%user;%nice;%system;%iowait;%steal;%idle\n"
    for stamp in ("2019-04-18 09:20:19 EST", "2019-04-18 15:20:19 CET"):
        assert sysstat.sadf_time(stamp) == 1555593619.0
        row = f"node;10;{stamp};0;2.00;0.00;1.00;0.00;0.00;97.00\n"
        p = sysstat.parse((head + row).encode(), "sadf_csv", "t")
        assert [s.t for s in p.samples] == [1555593619.0]
    assert sysstat.sadf_time("2019-01-18 08:20:19 EST") == 1547817619.0  # 13:20:19 UTC
    assert sysstat.sadf_time("2019-04-18 13:20:19 UTC") == 1555593619.0
