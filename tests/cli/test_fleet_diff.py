"""Fleet drift on 50 generated inventories: the seeds' case (the ECS agent crash-looping in
one availability zone only) must come out first and read as the incident team would say it."""

from __future__ import annotations

import contextlib
import json
import random
from pathlib import Path

from corescope.analysis.drift import diff
from corescope.model.inventory import Inventory, NicInfo, from_json
from support import run_cli, run_cli_json

COMMON_UNITS = ("kubelet.service", "containerd.service", "ssh.service", "chrony.service")


def generate(n: int = 50, seed: int = 3) -> list[Inventory]:
    """Half the nodes in group A with ecs.service restarting, half in B where it never
    started; noise on both sides alike (a kernel rollout at 30 %, one failed unit)."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        group = "A" if i < n // 2 else "B"
        restarting = ("ecs.service",) if group == "A" else ()
        kernel = "5.15.0-1051-aws" if rng.random() < 0.3 else "5.15.0-1049-aws"
        failed = ("amazon-ssm-agent.service",) if i in (3, 40) else ()
        out.append(Inventory(
            node=f"ip-10-0-{i // 250}-{i % 250}", time=1.8e9, labels={"group": group},
            kernel_release=kernel, boot_id=f"{rng.getrandbits(64):016x}",
            image_id="ubuntu@dlami-20240101", cgroup_layout="v1", cgroup_memory="v1",
            units_enabled=(*COMMON_UNITS, "ecs.service"), units_failed=failed,
            units_restarting=restarting, units_measured=True,
            nics=(NicInfo("eth0", "ena", "2.8.1g"),), irq_policy="irqbalance"))
    return out


def test_the_seeds_case_comes_first() -> None:
    report = diff(generate())
    assert report.group_by == "group" and report.groups == {"A": 25, "B": 25}
    top = report.differences[0]
    assert (top.kind, top.subject, top.spread) == ("unit_restarting", "ecs.service", 1.0)
    # noise that is the same on both sides never outranks it
    assert all(d.spread < 1.0 for d in report.differences[1:])


def test_cli_reads_a_directory_and_says_it(tmp_path: Path) -> None:
    for inv in generate():
        (tmp_path / f"{inv.node}.json").write_text(json.dumps(inv.to_json()))
    (tmp_path / "garbage.json").write_text("{not json")
    res = run_cli("fleet", "diff", str(tmp_path))
    assert res.returncode == 1, res.stderr
    lines = res.stdout.splitlines()
    assert lines[0].startswith("50 nodes by group: A (25), B (25)")
    assert lines[1].strip() == ("ecs.service restarting on 100 % of nodes of group A and on "
                                "none of group B")
    assert "garbage.json" in res.stderr
    data = run_cli_json("fleet", "diff", str(tmp_path), "--json")
    first = data["differences"][0]
    assert first["subject"] == "ecs.service" and first["kind"] == "unit_restarting"
    assert [g["having"] for g in first["groups"]] == [25, 0]
    assert data["skipped"][0]["file"].endswith("garbage.json")


def test_same_fleet_exits_0_and_nothing_readable_exits_2(tmp_path: Path) -> None:
    same = [i for i in generate() if i.labels["group"] == "B"][:5]
    for k, inv in enumerate(same):
        d = inv.to_json()
        d["kernel"]["release"] = "5.15.0-1049-aws"
        (tmp_path / f"n{k}.json").write_text(json.dumps(d))
    assert run_cli("fleet", "diff", str(tmp_path)).returncode == 0
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "x.json").write_text(json.dumps({"schema": 99}))
    res = run_cli("fleet", "diff", str(bad))
    assert res.returncode == 2 and "unknown schema" in res.stderr


def test_live_inventory_round_trips() -> None:
    data = run_cli_json("inventory", "--json", "--label", "zone=lab", ok_codes=(0,))
    inv = from_json(data)
    assert inv.labels == {"zone": "lab"} and inv.kernel_release
    assert inv.to_json() == data
    assert data["cgroup"]["layout"] in ("v1", "v2", "hybrid", "none")


def test_inventory_parsers_never_raise() -> None:
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from corescope.model.inventory import InventoryError
    from corescope.sources import inventory as src

    @settings(max_examples=200, deadline=None)
    @given(st.text(), st.binary())
    def check(text: str, raw: bytes) -> None:
        for data in (text, raw):
            src.parse_os_release(data)
            src.parse_unit_list(data)
            src.parse_ethtool_driver(data)
            src.parse_cmdline_boot_image(data)
        with contextlib.suppress(ValueError, InventoryError):
            from_json(json.loads(text))

    check()
