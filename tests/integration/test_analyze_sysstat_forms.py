"""`corescope analyze` on sadf's and mpstat's other saved forms, through the CLI as a user
runs it: each file's kind from its content (the names here say nothing)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from support import FIXTURES, run_cli_json

ART = FIXTURES / "artifacts"


def _analyze(tmp_path: Path, files: dict[str, str]) -> dict[str, Any]:
    folder = tmp_path / "incident"
    folder.mkdir()
    for fixture, name in files.items():
        shutil.copy(ART / fixture, folder / name)  # an absolute path is taken as it is
    out = run_cli_json("analyze", "--store", str(tmp_path / "store"), str(folder), "--json",
                       timeout=600)
    return {Path(f["path"]).name: f for f in out["import"]["files"]}


def test_analyze_reads_sadf_ppc(tmp_path: Path) -> None:
    by = _analyze(tmp_path, {"sadf_p.txt": "capture-01.log", "sadf_p_A.txt": "all.dat"})
    one, every = by["capture-01.log"], by["all.dat"]
    assert one["kind"] == every["kind"] == "sadf_ppc"
    assert one["status"] == every["status"] == "imported"
    assert (one["records"], every["records"]) == (5, 3)
    assert one["cpus"] == every["cpus"] == [0, 1]
    # 10:27:53–10:27:58 UTC on 2026-12-01
    assert one["span"] == [1796120873.0, 1796120878.0]


def test_analyze_reads_sadf_xml_and_refuses_entities(tmp_path: Path) -> None:
    bomb = tmp_path / "bomb.xml"
    bomb.write_text('<?xml version="1.0"?>\n<!DOCTYPE sysstat [<!ENTITY a "aaaa">'
                    '<!ENTITY b "&a;&a;&a;&a;">]>\n<sysstat><host>&b;</host></sysstat>\n')
    by = _analyze(tmp_path, {"sadf_x.xml": "sar-day.txt", str(bomb): "b.dat"})
    x, b = by["sar-day.txt"], by["b.dat"]
    assert (x["kind"], x["status"], x["records"], x["cpus"]) == ("sadf_xml", "imported", 5, [0, 1])
    assert x["span"] == [1796120873.0, 1796120878.0]
    assert (b["kind"], b["status"], b["records"]) == ("sadf_xml", "skipped", 0)
    assert "declares entities" in b["reason"] and "refused" in b["reason"]


def test_analyze_reads_mpstat_softirq_tables(tmp_path: Path) -> None:
    """`mpstat -A` text and `mpstat -I SCPU` JSON: CPU load where there is a CPU table, and
    NET_RX/NET_TX per CPU from the SCPU tables, stored where the softirqs loop's go."""
    from corescope.store import events as store_events
    from corescope.store.db import Store

    by = _analyze(tmp_path, {"mpstat_A_net.txt": "a.out", "mpstat_I_SCPU.json": "b.out",
                             "mpstat_I_SCPU_since_boot.txt": "c.out"})
    a, b, c = by["a.out"], by["b.out"], by["c.out"]
    assert (a["kind"], a["status"], a["records"], a["cpus"]) == ("mpstat_text", "imported", 4,
                                                                 [0, 1])
    assert (b["kind"], b["status"], b["records"], b["cpus"]) == ("mpstat_json", "imported", 3,
                                                                 [0, 1])
    assert c["status"] == "skipped" and "without an interval" in c["reason"]
    with Store.open(tmp_path / "store") as store:
        rows = store_events.read_softirqs(store, 0, 2e9)
    assert len(rows) == 5
    assert sum(rx[1] for _, _, rx, _ in rows) == 20792 + 16800 + 57588 + 57212 + 54800
