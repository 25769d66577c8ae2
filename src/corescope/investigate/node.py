"""The node's own pods: a `kubectl get pods -A` listing covers every node of a cluster, and a
pod of another node must never be blamed for this one's incidents.

The node is, in this order: the one the user names (`--node`); this machine's hostname when
the evidence is its own and the listing has it; the node that the listing
gives to the pods this node's own evidence shows (a `crictl ps` / `docker` listing is
node-local, and so are the container ids and pod UIDs the kernel log's OOM lines and cgroup
paths carry); the only node of the listing. Otherwise corescope says it could not tell, and
no record tagged with a node is kept."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace

from corescope.evidence.base import RestartEvidence
from corescope.model.cgroups import RestartRecord

_POD_UID = re.compile(r"pod([0-9a-f]{8}[-_][0-9a-f]{4}[-_][0-9a-f]{4}[-_][0-9a-f]{4}[-_]"
                      r"[0-9a-f]{12})")
_HEX_ID = re.compile(r"(?<![0-9a-f])([0-9a-f]{64})(?![0-9a-f])")


@dataclass(frozen=True)
class NodeChoice:
    """Which node's pods the investigation kept, and how it knew."""

    name: str | None  # None: not a multi-node listing, or could not tell
    # "option" | "hostname" | "local evidence" | "only node listed" | "unknown" | "" (no
    # record names a node)
    basis: str
    nodes_listed: tuple[str, ...] = ()
    dropped: tuple[str, ...] = field(default_factory=tuple)  # records of other nodes

    @property
    def narrowed(self) -> bool:
        return len(self.nodes_listed) > 1 or bool(self.dropped)


def same_node(a: str, b: str) -> bool:
    """`ip-10-0-1-2.ec2.internal` (the node's name) is the host `ip-10-0-1-2`."""
    a, b = a.strip().lower(), b.strip().lower()
    return a == b or a.split(".", 1)[0] == b.split(".", 1)[0]


def node_of(r: RestartRecord) -> str | None:
    n = r.detail.get("node")
    return n if isinstance(n, str) and n else None


def local_keys(records: Sequence[RestartRecord], texts: Iterable[str]) -> set[str]:
    """Pod UIDs, container ids and names this node's own evidence shows: runtime listings
    (crictl, docker: they list only this node's containers) and kernel lines (OOM kills and
    cgroup paths name pod UIDs and container ids)."""
    keys: set[str] = set()
    for r in records:
        if node_of(r) is None and r.detail.get("source") != "kubectl":
            keys |= _keys(r)
    for text in texts:
        keys.update("pod" + m.group(1).replace("_", "-") for m in _POD_UID.finditer(text))
        keys.update(m.group(1)[:12] for m in _HEX_ID.finditer(text))
    return keys


def _keys(r: RestartRecord) -> set[str]:
    out = {r.name}
    if r.cgroup:
        out.add(r.cgroup.replace("_", "-"))
    out.update(str(i)[:12] for i in r.detail.get("ids") or [] if isinstance(i, str))
    return out


def _matches(r: RestartRecord, keys: set[str]) -> bool:
    if _keys(r) & keys:
        return True
    # `kubectl get pods` (the table) names the pod, crictl its containers: ns/pod/container
    return r.kind == "pod" and any(k.startswith(r.name + "/") for k in keys)


def choose(records: Sequence[RestartRecord], option: str | None,
           texts: Iterable[str] = (), host: str | None = None) -> NodeChoice:
    nodes = sorted({n for r in records if (n := node_of(r)) is not None})
    if option:
        listed = next((n for n in nodes if same_node(n, option)), option)
        return NodeChoice(listed, "option", tuple(nodes))
    if not nodes:
        return NodeChoice(None, "", ())
    # this machine's hostname, when the evidence is its own: only if the listing has it
    mine = next((n for n in nodes if host and same_node(n, host)), None)
    if mine is not None:
        return NodeChoice(mine, "hostname", tuple(nodes))
    keys = local_keys(records, texts)
    votes = Counter(n for r in records if (n := node_of(r)) is not None and _matches(r, keys))
    if votes:
        top = votes.most_common()
        if len(top) == 1 or top[0][1] > top[1][1]:
            return NodeChoice(top[0][0], "local evidence", tuple(nodes))
    if len(nodes) == 1:
        return NodeChoice(nodes[0], "only node listed", tuple(nodes))
    return NodeChoice(None, "unknown", tuple(nodes))


def narrow(restarts: RestartEvidence, option: str | None, texts: Iterable[str] = (),
           host: str | None = None) -> tuple[RestartEvidence, NodeChoice]:
    """The restart evidence of this node only: records of another node dropped, and with no
    way to tell the node, every record tagged with a node dropped (blaming none is better
    than blaming another node's pod)."""
    choice = choose(restarts.records, option, texts, host)
    if choice.basis == "":
        return restarts, choice
    kept, dropped = [], []
    for r in restarts.records:
        n = node_of(r)
        if n is None or (choice.name is not None and same_node(n, choice.name)):
            kept.append(r)
        else:
            dropped.append(r.name)
    if not dropped:
        return restarts, choice
    return (RestartEvidence(kept, list(restarts.journal)),
            replace(choice, dropped=tuple(dropped[:200])))
