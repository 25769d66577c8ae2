"""Fleet drift: which facts about nodes (units, kernel, image, cgroup layout, NIC driver, IRQ
placement) differ between groups of nodes, ranked by how cleanly they split the groups.

The seeds' availability-zone red herring is the case to get right: "ecs.service restarting
on 100 % of nodes of group A and on none of group B" says both what differs and where.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from corescope.model.inventory import Inventory

DEFAULT_GROUP_KEYS = ("group", "zone", "topology.kubernetes.io/zone")
NO_GROUP = "(no label)"

# fact kinds, as (kind, subject) pairs; unit facts only count on nodes where units were listed
UNIT_KINDS = ("unit_restarting", "unit_failed", "unit_enabled")


@dataclass(frozen=True)
class GroupShare:
    group: str
    nodes: int  # nodes of the group where the fact could be measured
    having: int

    @property
    def fraction(self) -> float:
        return self.having / self.nodes if self.nodes else 0.0


@dataclass(frozen=True)
class Difference:
    kind: str
    subject: str
    shares: tuple[GroupShare, ...]
    spread: float  # max − min fraction across groups (one group: how far from uniform)


@dataclass(frozen=True)
class DriftReport:
    group_by: str | None
    groups: dict[str, int]
    nodes: int
    differences: tuple[Difference, ...]
    uniform: int  # facts the same on every node


def facts(inv: Inventory) -> set[tuple[str, str]]:
    out: set[tuple[str, str]] = set()
    if inv.units_measured:
        out |= {("unit_restarting", u) for u in inv.units_restarting}
        out |= {("unit_failed", u) for u in inv.units_failed}
        out |= {("unit_enabled", u) for u in inv.units_enabled}
    for kind, v in (("kernel", inv.kernel_release), ("image", inv.image_id),
                    ("boot_image", inv.boot_image), ("cgroup_layout", inv.cgroup_layout),
                    ("irq_policy", inv.irq_policy)):
        if v:
            out.add((kind, v))
    for n in inv.nics:
        out.add(("nic_driver", f"{n.iface}: {n.driver or '?'} {n.version or ''}".strip()))
        if n.firmware:
            out.add(("nic_firmware", f"{n.iface}: {n.firmware}"))
    return out


def pick_group_key(invs: Sequence[Inventory], requested: str | None) -> str | None:
    if requested:
        return requested
    for key in DEFAULT_GROUP_KEYS:
        if invs and all(key in i.labels for i in invs):
            return key
    return None


def diff(invs: Sequence[Inventory], group_by: str | None = None) -> DriftReport:
    key = pick_group_key(invs, group_by)
    members: dict[str, list[Inventory]] = defaultdict(list)
    for inv in invs:
        members[inv.labels.get(key, NO_GROUP) if key else "fleet"].append(inv)
    groups = dict(sorted(members.items()))
    node_facts = {id(i): facts(i) for i in invs}
    every = set().union(*node_facts.values()) if invs else set()
    diffs: list[Difference] = []
    uniform = 0
    for kind, subject in every:
        shares = []
        for g, nodes in groups.items():
            eligible = [i for i in nodes if kind not in UNIT_KINDS or i.units_measured]
            having = sum(1 for i in eligible if (kind, subject) in node_facts[id(i)])
            shares.append(GroupShare(g, len(eligible), having))
        measured = [s for s in shares if s.nodes]
        fr = [s.fraction for s in measured]
        if not fr or all(f == 1.0 for f in fr) or all(f == 0.0 for f in fr):
            uniform += 1
            continue
        spread = (max(fr) - min(fr)) if len(fr) > 1 else min(fr[0], 1 - fr[0])
        diffs.append(Difference(kind, subject, tuple(shares), spread))
    # the cleanest split first; then the facts on more nodes; then by name for stable output
    diffs.sort(key=lambda d: (-d.spread, -sum(s.having for s in d.shares), d.kind, d.subject))
    return DriftReport(key, {g: len(n) for g, n in groups.items()}, len(invs), tuple(diffs),
                       uniform)
