"""`corescope fleet diff`: what differs between groups of nodes, from their inventories."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from corescope.analysis.drift import Difference, DriftReport, diff
from corescope.model.common import JSON_SCHEMA
from corescope.model.inventory import Inventory, InventoryError, from_json
from corescope.model.text import valid_text
from corescope.render.term import echo
from corescope.rootfs import read_capped
from corescope.sources.artifacts.content import as_utf8
from corescope.views.clitypes import EXIT_FINDINGS, emit_json, fail, json_option

KIND_WORDS = {
    "unit_restarting": "{} restarting", "unit_failed": "{} failed", "unit_enabled": "{} enabled",
    "kernel": "kernel {}", "image": "image {}", "boot_image": "boot image {}",
    "cgroup_layout": "cgroup layout {}", "irq_policy": "IRQ policy {}",
    "nic_driver": "NIC {}", "nic_firmware": "NIC firmware {}",
}


def _pct(frac: float) -> str:
    return f"{frac * 100:.0f} %"


def _group_name(key: str | None, group: str) -> str:
    if key is None:
        return "the fleet"
    return f"group {group}" if key == "group" else f"{key} {group}"


def sentence(d: Difference, key: str | None) -> str:
    """"ecs.service restarting on 100 % of nodes of group A and on none of group B"."""
    what = KIND_WORDS.get(d.kind, d.kind + " {}").format(d.subject)
    parts = []
    for s in d.shares:
        if not s.nodes:
            parts.append(f"not measured on {_group_name(key, s.group)}")
        elif s.having == 0:
            parts.append(f"on none of {_group_name(key, s.group)}")
        else:
            part = f"on {_pct(s.fraction)} of nodes of {_group_name(key, s.group)}"
            parts.append(part if s.having == s.nodes else f"{part} ({s.having}/{s.nodes})")
    body = parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]
    return f"{what} {body}"


def to_json(r: DriftReport, skipped: list[dict[str, str]]) -> dict[str, Any]:
    return {
        "schema": JSON_SCHEMA, "nodes": r.nodes, "group_by": r.group_by, "groups": r.groups,
        "differences": [{"kind": d.kind, "subject": d.subject, "spread": d.spread,
                         "summary": sentence(d, r.group_by),
                         "groups": [{"group": s.group, "nodes": s.nodes, "having": s.having,
                                     "fraction": s.fraction} for s in d.shares]}
                        for d in r.differences],
        "uniform_facts": r.uniform, "skipped": skipped,
    }


MAX_INVENTORY_BYTES = 16 * 1024 * 1024  # a node's inventory is a few kB; 10,000 units < 1 MB


def _read_inventory(f: Path, named: bool) -> Inventory:
    """One inventory file, read capped and only if it is a regular file (a FIFO named x.json
    in the directory would hang the read, a /dev/zero link fill memory); a file named on the
    command line may also be a pipe (`<(ssh node corescope inventory --json)`)."""
    data = as_utf8(read_capped(f, MAX_INVENTORY_BYTES, allow_pipe=named))
    try:
        doc = json.loads(data)
    except RecursionError:
        raise InventoryError("JSON nested too deeply") from None
    except UnicodeDecodeError as exc:
        raise InventoryError(f"not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    return from_json(doc)


def load(paths: tuple[Path, ...]) -> tuple[list[Inventory], list[dict[str, str]]]:
    files: list[tuple[Path, bool]] = []
    for p in paths:
        files += [(f, False) for f in sorted(p.glob("*.json"))] if p.is_dir() else [(p, True)]
    invs: list[Inventory] = []
    skipped: list[dict[str, str]] = []
    for f, named in files:
        try:
            invs.append(_read_inventory(f, named))
        except OSError as exc:
            skipped.append({"file": valid_text(str(f)),
                            "error": valid_text(exc.strerror or str(exc))[:200]})
        except (ValueError, InventoryError) as exc:
            skipped.append({"file": valid_text(str(f)), "error": valid_text(str(exc))[:200]})
    return invs, skipped


@click.group()
def fleet() -> None:
    """Compare nodes: inventories from `corescope inventory --json`, one file per node."""


@fleet.command("diff")
@click.argument("paths", nargs=-1, required=True,
                type=click.Path(exists=True, path_type=Path))
@click.option("--group-by", default=None, metavar="LABEL",
              help="Label to group nodes by [default: group, zone or "
              "topology.kubernetes.io/zone when every node has it].")
@click.option("--top", type=click.IntRange(min=0), default=20, show_default=True,
              help="Differences to list (text).")
@json_option()
def fleet_diff(paths: tuple[Path, ...], group_by: str | None, top: int, as_json: bool) -> None:
    """What differs between groups of nodes (FILE... or a DIR of *.json inventories)."""
    invs, skipped = load(paths)
    if not invs:
        fail("no readable inventory: " + "; ".join(f"{s['file']}: {s['error']}"
                                                    for s in skipped[:5]))
    report = diff(invs, group_by)
    if as_json:
        emit_json(to_json(report, skipped))
    else:
        groups = ", ".join(f"{g} ({n})" for g, n in report.groups.items())
        # names, units and drivers are the nodes' own text: every line through term.echo
        echo(f"{report.nodes} nodes" + (f" by {report.group_by}: {groups}"
                                        if report.group_by else "") +
             f"; {report.uniform} facts the same everywhere, {len(report.differences)} differ")
        for d in report.differences[:top]:
            echo("  " + sentence(d, report.group_by))
        for s in skipped:
            echo(f"  skipped {s['file']}: {s['error']}", err=True)
    if report.differences:
        raise SystemExit(EXIT_FINDINGS)


def register(cli: click.Group, lab: click.Group) -> None:
    cli.add_command(fleet)
