"""`fleet diff` and `inventory` on someone else's files and trees: a FIFO, a /dev/zero link or
a directory named *.json is skipped with the reason, never a hang or a MemoryError; one hostile
inventory (deep nesting, wrong types, a 400-digit time, a lone surrogate) is skipped or read,
never a traceback; control characters and newlines in os-release, NIC, driver and unit names
never reach the terminal raw. Real FIFOs, real device links, real --root trees."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any

import pytest

from corescope.model.inventory import Inventory, NicInfo
from support import run_cli

EVIL = "\x1b]0;pwned\x07\x1b[2J\x9b31m\u202e"


def _good(i: int, group: str, restarting: tuple[str, ...] = ()) -> dict[str, Any]:
    return Inventory(node=f"node-{i}", time=1.8e9, labels={"group": group},
                     kernel_release="6.1.0", units_enabled=("a.service",),
                     units_restarting=restarting, units_measured=True,
                     nics=(NicInfo("eth0", "ena", "2.8"),)).to_json()


def _fleet(d: Path) -> None:
    for i in range(4):
        g = "A" if i < 2 else "B"
        (d / f"n{i}.json").write_text(json.dumps(_good(i, g, ("x.service",) if g == "A"
                                                          else ())))


def _no_controls(text: str) -> None:
    bad = [c for c in text if (ord(c) < 32 and c != "\n") or 0x7F <= ord(c) < 0xA0
           or 0xD800 <= ord(c) < 0xE000 or c == "\u202e"]
    assert not bad, repr(text)


def test_fifo_device_link_and_directory_named_json_are_skipped(tmp_path: Path) -> None:
    _fleet(tmp_path)
    os.mkfifo(tmp_path / "x.json")
    os.symlink("/dev/zero", tmp_path / "z.json")
    os.symlink("/dev/urandom", tmp_path / "u.json")
    (tmp_path / "d.json").mkdir()
    with open(tmp_path / "big.json", "wb") as f:  # sparse: 64 MiB of zeros, no disk used
        f.truncate(64 << 20)
    # a writer keeps the FIFO open and never writes: a read would wait for ever
    holder = os.open(tmp_path / "x.json", os.O_RDWR)
    try:
        res = run_cli("fleet", "diff", str(tmp_path), timeout=60)
    finally:
        os.close(holder)
    assert res.returncode == 1 and "Traceback" not in res.stderr, res.stderr
    assert res.stdout.startswith("4 nodes by group: A (2), B (2)")
    for name, why in (("x.json", "FIFO"), ("z.json", "character device"),
                      ("u.json", "character device"), ("d.json", "directory"),
                      ("big.json", "larger than")):
        [line] = [ln for ln in res.stderr.splitlines() if f"/{name}:" in ln]
        assert why in line, line


def test_a_pipe_named_on_the_command_line_is_read(tmp_path: Path) -> None:
    fifo = tmp_path / "inv.json"
    os.mkfifo(fifo)
    data = json.dumps(_good(9, "A")).encode()

    def writer() -> None:
        with open(fifo, "wb") as f:
            f.write(data)

    t = threading.Thread(target=writer)
    t.start()
    res = run_cli("fleet", "diff", str(fifo), "--json", timeout=60)
    t.join(10)
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["nodes"] == 1


HOSTILE: dict[str, str] = {
    "deep_list": "[" * 200_000 + "]" * 200_000,
    "deep_in_labels": '{"schema": 1, "node": "n", "labels": {"a": '
                      + "[" * 50_000 + "]" * 50_000 + "}}",
    "deep_object": '{"a":' * 100_000 + "1" + "}" * 100_000,
    "nics_int": '{"schema": 1, "node": "n", "nics": 5}',
    "nics_str": '{"schema": 1, "node": "n", "nics": "eth0"}',
    "nics_items": '{"schema": 1, "node": "n", "nics": [5, null, {"iface": 5}, '
                  '{"iface": "eth0", "driver": {"x": 1}, "version": [1]}]}',
    "time_400_digits": '{"schema": 1, "node": "n", "time": ' + "9" * 400 + "}",
    "time_5000_digits": '{"schema": 1, "node": "n", "time": ' + "9" * 5000 + "}",
    "time_inf": '{"schema": 1, "node": "n", "time": Infinity}',
    "time_nan": '{"schema": 1, "node": "n", "time": NaN}',
    "time_str": '{"schema": 1, "node": "n", "time": "yesterday"}',
    "lone_surrogate_node": '{"schema": 1, "node": "n\\ud800", "kernel": {"release": "\\udcff"}}',
    "lone_surrogate_unit": '{"schema": 1, "node": "n", "units": {"measured": true, '
                           '"restarting": ["x\\ud800.service"], "enabled": "abc"}}',
    "surrogate_key": '{"schema": 1, "node": "n", "labels": {"\\udc80": "\\ud800"}}',
    "labels_list": '{"schema": 1, "node": "n", "labels": [1, 2]}',
    "labels_nested": '{"schema": 1, "node": "n", "labels": {"group": {"x": [1]}}}',
    "os_release_nested": '{"schema": 1, "node": "n", "boot": {"os_release": {"ID": [1, {}]}}}',
    "units_wrong": '{"schema": 1, "node": "n", "units": [1], "kernel": "6.1", "irq": 3}',
    "irq_detail": '{"schema": 1, "node": "n", "irq": {"policy": "x", "a": {"b": [1]}, '
                  '"n": ' + "9" * 300 + "}}",
    "schema_deep": '{"schema": ' + "[" * 500 + "]" * 500 + ', "node": "n"}',
    "schema_huge_str": '{"schema": "' + "x" * 100_000 + '", "node": "n"}',
    "node_int": '{"schema": 1, "node": 5}',
    "huge_int_label": '{"schema": 1, "node": "n", "labels": {"a": ' + "9" * 4000 + "}}",
    "not_utf8": '{"schema": 1, "node": "n\xff"}',
    "top_level_string": '"hello"',
    "empty": "",
}


@pytest.mark.parametrize("case", list(HOSTILE))
def test_one_hostile_inventory_is_skipped_or_read_never_a_traceback(tmp_path: Path,
                                                                    case: str) -> None:
    _fleet(tmp_path)
    raw = HOSTILE[case].encode("latin-1" if case == "not_utf8" else "utf-8")
    (tmp_path / "hostile.json").write_bytes(raw)
    for extra in ((), ("--json",)):
        res = run_cli("fleet", "diff", str(tmp_path), *extra, timeout=60)
        assert res.returncode == 1 and "Traceback" not in res.stderr, (case, res.stderr[-2000:])
        _no_controls(res.stdout)
        _no_controls(res.stderr)
        res.stdout.encode("utf-8")
        if extra:
            doc = json.loads(res.stdout)
            json.dumps(doc, ensure_ascii=False).encode("utf-8")  # valid Unicode throughout
            skipped = [s["file"] for s in doc["skipped"]]
            assert doc["nodes"] + len(skipped) == 5
            assert doc["differences"][0]["subject"] == "x.service"


def test_hostile_names_in_fleet_diff_text_are_escaped(tmp_path: Path) -> None:
    _fleet(tmp_path)
    doc = _good(7, "A", (f"evil{EVIL}\nforged line.service",))
    doc["kernel"]["release"] = f"6.1{EVIL}"
    doc["nics"] = [{"iface": f"eth{EVIL}", "driver": f"drv\n{EVIL}", "version": None,
                    "firmware": f"fw{EVIL}"}]
    (tmp_path / "evil.json").write_text(json.dumps(doc))
    (tmp_path / f"bad\x1b[2Jname{EVIL}.json").write_text("{")
    res = run_cli("fleet", "diff", str(tmp_path), timeout=60)
    assert res.returncode == 1, res.stderr
    _no_controls(res.stdout)
    _no_controls(res.stderr)
    assert not any(line.lstrip().startswith("forged") for line in res.stdout.splitlines())
    assert "evil\\x1b]0;pwned\\x07" in res.stdout and "\\nforged line.service" in res.stdout
    assert "bad\\x1b[2Jname" in res.stderr


def _evil_root(tmp: Path) -> Path:
    """A node's tree whose os-release, NIC name and driver name carry escape sequences."""
    root = tmp / "root"
    (root / "etc").mkdir(parents=True)
    (root / "etc/os-release").write_text(f'ID=ubuntu\nVERSION_ID="22.04{EVIL}"\n'
                                         f'PRETTY_NAME="x{EVIL}"\n')
    (root / "proc/sys/kernel").mkdir(parents=True)
    (root / "proc/sys/kernel/hostname").write_text("node-evil\n")
    (root / "proc/sys/kernel/osrelease").write_text("6.1.0\n")
    dev = root / "sys/devices/pci0000:00/0000:00:05.0"
    dev.mkdir(parents=True)
    drv = root / f"sys/bus/pci/drivers/ena{EVIL}\nforged: driver"
    drv.mkdir(parents=True)
    os.symlink(os.path.relpath(drv, dev), dev / "driver")
    for name in (f"eth{EVIL}\nforged: nic", os.fsdecode(b"eth\xff\xfe")):
        net = root / "sys/class/net" / name
        net.mkdir(parents=True)
        os.symlink(os.path.relpath(dev, net), net / "device")
    return root


def test_inventory_text_escapes_the_trees_names(tmp_path: Path) -> None:
    root = _evil_root(tmp_path)
    res = run_cli("--root", str(root), "inventory", timeout=60)
    assert res.returncode == 0 and "Traceback" not in res.stderr, res.stderr
    _no_controls(res.stdout)
    lines = res.stdout.splitlines()
    assert not any(ln.startswith("forged") for ln in lines), res.stdout
    assert any("eth\\x1b]0;pwned" in ln and "\\nforged: nic" in ln for ln in lines)
    assert any("eth\\udcff\\udcfe" in ln for ln in lines)
    assert "22.04\\x1b]0;pwned" in res.stdout
    js = run_cli("--root", str(root), "inventory", "--json", timeout=60)
    assert js.returncode == 0, js.stderr
    doc = json.loads(js.stdout)
    json.dumps(doc, ensure_ascii=False).encode("utf-8")  # no lone surrogate left in it
    assert "eth\\udcff\\udcfe" in {n["iface"] for n in doc["nics"]}
