"""`corescope analyze` on sadf's and mpstat's other saved forms, through the CLI as a user
runs it: each file's kind from its content (the names here say nothing)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from conftest import FIXTURES, run_cli_json

ART = FIXTURES / "artifacts"


def _analyze(tmp_path: Path, files: dict[str, str]) -> dict[str, Any]:
    folder = tmp_path / "incident"
    folder.mkdir()
    for fixture, name in files.items():
        shutil.copy(ART / fixture, folder / name)
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
