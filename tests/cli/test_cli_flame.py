"""`corescope flame/heatmap --perf-script` offline, through the real CLI."""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

from support import FIXTURES, run_cli, run_cli_json

CAPTURE = FIXTURES / "profiles" / "burner_idle.txt"


def gz(tmp_path: Path) -> Path:
    p = tmp_path / "cap.txt.gz"
    p.write_bytes(gzip.compress(CAPTURE.read_bytes()))
    return p


def test_offline_json_gzipped_per_cpu(tmp_path: Path) -> None:
    j = run_cli_json("flame", "--perf-script", str(gz(tmp_path)), "--cpu", "1",
                     "--format", "json")
    assert j["cpu"] == 1 and j["samples"] == 137 and j["idle_samples"] == 0
    assert j["top_processes"][0]["comm"] == "python3" and j["top_processes"][0]["pct"] == 100
    names = [f["name"] for f in j["top_functions"]]
    assert "iov_iter_zero" in names and "read_iter_zero" in names
    assert j["diff"] is None and j["window"]["clock"] == "perf"
    j0 = run_cli_json("flame", "--perf-script", str(CAPTURE), "--cpu", "0", "--format", "json")
    assert j0["samples"] == 137 and j0["idle_samples"] == 137 and j0["top_processes"] == []


def test_offline_two_files_and_folded(tmp_path: Path) -> None:
    proc = run_cli("flame", "--perf-script", str(CAPTURE), "--perf-script", str(gz(tmp_path)),
                   "--format", "folded", check=True)
    lines = proc.stdout.splitlines()
    total = sum(int(ln.rsplit(" ", 1)[1]) for ln in lines)
    assert total == 2 * 137
    assert all(re.match(r"^python3;\S.* \d+$", ln) for ln in lines)
    pid = run_cli("flame", "--perf-script", str(CAPTURE), "--format", "folded", "--with-pid",
                  check=True).stdout
    assert pid.startswith("python3-6831;")


def test_offline_top_and_comm_filter() -> None:
    out = run_cli("flame", "--perf-script", str(CAPTURE), "--comm", "python3",
                  check=True).stdout
    assert "python3" in out and "iov_iter_zero_[k]" in out and "SELF%" in out
    j = run_cli_json("flame", "--perf-script", str(CAPTURE), "--comm", "nosuch",
                     "--format", "json")
    assert j["samples"] == 0


def test_html_is_self_contained(tmp_path: Path) -> None:
    out = tmp_path / "f.html"
    run_cli("flame", "--perf-script", str(CAPTURE), "--format", "html", "-o", str(out),
            check=True)
    page = out.read_text()
    assert "<svg" in page and "iov_iter_zero_[k]" in page
    # no external fetches: the only URL is the SVG namespace
    urls = set(re.findall(r"https?://[^\s\"'<>)]+", page))
    assert urls <= {"http://www.w3.org/2000/svg"}, urls
    data = page.split('<script id="flame-data" type="application/json">')[1]
    flat = json.loads(data.split("</script>")[0])
    assert flat["v"][0] == 137 and flat["names"][flat["name"][1]] == "python3"
    assert flat["depth"][:2] == [0, 1]


def test_heatmap_json_contract() -> None:
    j = run_cli_json("heatmap", "--perf-script", str(CAPTURE), "--cpu", "1", "--json")
    for key in ("start", "rows_ms", "columns", "values", "max"):
        assert key in j
    assert j["rows_ms"] == 20 and len(j["values"]) == j["columns"]
    assert sum(map(sum, j["values"])) == 137
    txt = run_cli("heatmap", "--perf-script", str(CAPTURE), check=True).stdout
    assert "subsecond heatmap" in txt and "980ms" in txt


def test_usage_errors(tmp_path: Path) -> None:
    p = run_cli("--store", str(tmp_path / "none"), "flame", "--at", "now")
    assert p.returncode == 2 and "no store" in p.stderr
    p = run_cli("flame", "--perf-script", str(CAPTURE), "--pid", "1", "--comm", "x")
    assert p.returncode == 2
    p = run_cli("flame", "--perf-script", str(tmp_path / "missing"))
    assert p.returncode == 2 and "does not exist" in p.stderr
    p = run_cli("flame", "--at", "yesterday-ish")
    assert p.returncode == 2 and "not a time" in p.stderr


def test_event_without_events_store_is_a_clear_error(tmp_path: Path) -> None:
    from corescope.store.db import Store
    Store.open(tmp_path / "s").close()
    p = run_cli("--store", str(tmp_path / "s"), "flame", "--event", "3")
    assert p.returncode == 2
    assert "--at" in p.stderr or "no event 3" in p.stderr


def test_flame_cpu_not_in_the_input_is_a_usage_error() -> None:
    # the capture is from a 2-CPU VM: CPU 7 does not exist there (it used to print an empty
    # table and exit 0)
    src = str(FIXTURES / "profiles" / "burner_idle.txt")
    ok = run_cli("flame", "--perf-script", src, "--cpu", "1")
    assert ok.returncode == 0, ok.stderr
    bad = run_cli("flame", "--perf-script", src, "--cpu", "7")
    assert bad.returncode == 2 and "--cpu 7" in bad.stderr, (bad.returncode, bad.stderr)


def test_flame_output_is_private_and_never_follows_a_symlink(tmp_path: Path) -> None:
    src = str(FIXTURES / "profiles" / "burner_idle.txt")
    out = tmp_path / "stacks.folded"
    out.write_text("old")
    out.chmod(0o644)
    proc = run_cli("flame", "--perf-script", src, "--format", "folded", "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    assert out.stat().st_mode & 0o777 == 0o600  # an existing 0644 file becomes private
    assert out.read_text() != "old" and ";" in out.read_text()
    target = tmp_path / "victim"
    target.write_text("keep")
    link = tmp_path / "link"
    link.symlink_to(target)
    proc = run_cli("flame", "--perf-script", src, "--format", "folded", "-o", str(link))
    assert proc.returncode == 2 and "symlink" in proc.stderr, proc.stderr
    assert target.read_text() == "keep"
