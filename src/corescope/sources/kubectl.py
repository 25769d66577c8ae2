"""Restart evidence from Kubernetes' own view: `kubectl get pods` (its table, with or without
`-A` and `-o wide`) and `kubectl get pods -o json` (a `List` of `Pod` objects, or one Pod).

The JSON gives one record per container, named `namespace/pod/container` as the CRI readers
name theirs (so a `crictl ps` of the same node adds to the same record), with the pod's UID
as the key its cgroups carry (`pod<uid>`). The table only shows a pod's restarts summed over
its containers: one record per pod, `namespace/pod`. `kubectl` lists the pods of every node
it is asked for; only the node under investigation matters, so pods of several nodes are
read with a diagnostic saying how to narrow them (`--field-selector spec.nodeName=NODE`)."""

from __future__ import annotations

import json
import re
from datetime import datetime
from typing import Any

from corescope.model.cgroups import RestartRecord
from corescope.model.common import Diagnostic
from corescope.sources.text import as_text, count_of, int64, json_text
from corescope.sources.units import display_cells, table_columns

# kubectl's pod table (pkg/printers/internalversion printPod): NAME READY STATUS RESTARTS AGE,
# after NAMESPACE with -A; -o wide adds IP NODE NOMINATED NODE READINESS GATES
KUBECTL_HEADERS = {"NAMESPACE": "namespace", "NAME": "name", "READY": "ready",
                   "STATUS": "status", "RESTARTS": "restarts", "AGE": "age", "NODE": "node"}
# RESTARTS is `5`, or `5 (3m12s ago)` since Kubernetes 1.22 when a container has terminated
_RESTARTS = re.compile(r"^(\d+)(?: \((?P<ago>[0-9a-z]+) ago\))?$")
_CONTAINER_ID = re.compile(r"^[a-z0-9-]+://([0-9a-f]{12,64})$")


def kubectl_table_header(line: str) -> bool:
    names = [n for n, _ in table_columns(line)]
    return names[:1] in (["NAME"], ["NAMESPACE"]) and {"NAME", "READY", "STATUS",
                                                         "RESTARTS"} <= set(names)


def looks_like_pod_json(head: str) -> bool:
    """`kubectl get pods -o json` (a List of Pods) or one Pod, from the first bytes."""
    return ('"kind": "Pod"' in head or '"kind":"Pod"' in head) and '"apiVersion"' in head


def parse_kubectl_table(text: str | bytes, t: float = 0.0, source: str = "kubectl get pods"
                        ) -> tuple[list[RestartRecord], list[Diagnostic]]:
    lines = [ln for ln in as_text(text).splitlines() if ln.strip()]
    if not lines or not kubectl_table_header(lines[0]):
        return [], [Diagnostic(source, "no kubectl get pods header (NAME READY STATUS "
                               "RESTARTS AGE)", 1)]
    cols = table_columns(lines[0])
    at = {KUBECTL_HEADERS[n]: i for i, (n, _) in enumerate(cols) if n in KUBECTL_HEADERS}
    starts = [s for _, s in cols]
    records: list[RestartRecord] = []
    diags: list[Diagnostic] = []
    nodes: set[str] = set()
    for lineno, line in enumerate(lines[1:], 2):
        if kubectl_table_header(line):
            continue  # `kubectl get pods -w` and concatenated outputs repeat the header
        cells = display_cells(line, starts)

        def cell(f: str, cells: list[str] = cells) -> str:
            return cells[at[f]] if f in at and at[f] < len(cells) else ""

        name, m = cell("name"), _RESTARTS.match(cell("restarts"))
        if not name or m is None:
            diags.append(Diagnostic(source, f"unreadable row: {line[:80]!r}", lineno))
            continue
        ns = cell("namespace")
        detail: dict[str, Any] = {"source": "kubectl", "ready": cell("ready"),
                                  "age": cell("age")}
        if m["ago"]:
            detail["last_restart_ago"] = m["ago"]
        age = duration_s(cell("age"))
        if age is not None:
            detail["counted_s"] = age  # restarts count from the pod's start
        if cell("node") and cell("node") != "<none>":
            detail["node"] = cell("node")
            nodes.add(cell("node"))
        restarts = count_of(m.group(1))
        if restarts is None:
            diags.append(Diagnostic(source, f"{name}: RESTARTS {m.group(1)[:30]!r} is not a "
                                    "count a store can hold: not counted", lineno))
        records.append(RestartRecord(t=t, kind="pod", name=f"{ns}/{name}" if ns else name,
                                     restarts=restarts, state=cell("status"),
                                     detail=detail))
    _several_nodes(nodes, diags, source)
    return records, diags


def parse_kubectl_json(text: str | bytes, t: float = 0.0, source: str = "kubectl get pods"
                       ) -> tuple[list[RestartRecord], list[Diagnostic]]:
    diags: list[Diagnostic] = []
    try:
        doc = json.loads(json_text(text, diags, source))
    except (ValueError, RecursionError) as exc:
        return [], [Diagnostic(source, f"not JSON: {exc}")]
    pods = doc.get("items") if isinstance(doc, dict) and doc.get("kind") != "Pod" else [doc]
    if not isinstance(pods, list):
        return [], [Diagnostic(source, "no `items` list of pods")]
    records: list[RestartRecord] = []
    nodes: set[str] = set()
    for i, pod in enumerate(pods):
        got = _pod_records(pod, t, i, diags)
        records += got
        node = got[0].detail.get("node") if got else None
        if isinstance(node, str):
            nodes.add(node)
    _several_nodes(nodes, diags, source)
    return records, diags


def _pod_records(pod: Any, t: float, i: int, diags: list[Diagnostic]) -> list[RestartRecord]:
    meta = pod.get("metadata") if isinstance(pod, dict) else None
    if not isinstance(meta, dict) or not isinstance(meta.get("name"), str):
        diags.append(Diagnostic("kubectl get pods", f"items[{i}] is not a named Pod"))
        return []
    status = pod.get("status") if isinstance(pod.get("status"), dict) else {}
    spec = pod.get("spec") if isinstance(pod.get("spec"), dict) else {}
    ns = meta.get("namespace") if isinstance(meta.get("namespace"), str) else ""
    uid = meta.get("uid") if isinstance(meta.get("uid"), str) else None
    base = f"{ns}/{meta['name']}" if ns else meta["name"]
    started = _epoch(status.get("startTime"))
    out = []
    for key in ("initContainerStatuses", "containerStatuses"):
        listed = status.get(key)
        if listed is None:
            continue
        if not isinstance(listed, list):
            diags.append(Diagnostic("kubectl get pods", f"items[{i}] ({base}): {key} is not "
                                    "a list: its containers are not read"))
            continue
        for cs in listed:
            if not isinstance(cs, dict) or not isinstance(cs.get("name"), str):
                continue
            n = cs.get("restartCount")
            if isinstance(n, bool) or not isinstance(n, int) or n < 0:
                n = None
            elif int64(n) is None:
                diags.append(Diagnostic("kubectl get pods", f"items[{i}] ({base}/{cs['name']}):"
                                        " restartCount is not a count a store can hold: not "
                                        "counted"))
                n = None
            detail: dict[str, Any] = {"source": "kubectl", "phase": status.get("phase")}
            if started is not None:
                detail["counted_since"] = started  # restartCount counts from the pod's start
            if isinstance(spec.get("nodeName"), str):
                detail["node"] = spec["nodeName"]
            cid = _CONTAINER_ID.match(str(cs.get("containerID") or ""))
            if cid:
                detail["ids"] = [cid.group(1)]  # an OOM line or a cgroup path names it
            last = (cs.get("lastState") or {}).get("terminated") if isinstance(
                cs.get("lastState"), dict) else None
            if isinstance(last, dict):
                detail |= {k: last[k] for k in ("exitCode", "reason", "finishedAt")
                           if isinstance(last.get(k), str | int)}
            out.append(RestartRecord(
                t=t, kind="container", name=f"{base}/{cs['name']}",
                restarts=n,
                state=_state(cs.get("state")), cgroup=f"pod{uid}" if uid else None,
                detail=detail))
    return out


_MAX_AGE_S = 200 * 365 * 86400
_DURATION = re.compile(r"^(?:(\d+)y)?(?:(\d+)d)?(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?$")


def duration_s(text: str) -> float | None:
    """kubectl's AGE (apimachinery's HumanDuration: `45s`, `2m59s`, `5d22h`, `3y`)."""
    m = _DURATION.match(text)
    if m is None or not text:
        return None
    y, d, h, mi, s = (int(g) if g else 0 for g in m.groups())
    total = (((y * 365 + d) * 24 + h) * 60 + mi) * 60 + s
    # no pod is older than the clock's years: `99999999999999999999d` is no age (nor a float)
    return float(total) if total <= _MAX_AGE_S else None


def _epoch(stamp: Any) -> float | None:
    """An RFC 3339 time of the Kubernetes API (`2026-11-24T15:02:11Z`)."""
    if not isinstance(stamp, str):
        return None
    try:
        return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def _state(state: Any) -> str:
    """The kubelet's reason (CrashLoopBackOff, Error, ...) or the state's name."""
    if not isinstance(state, dict) or not state:
        return ""
    name, body = next(iter(state.items()))
    reason = body.get("reason") if isinstance(body, dict) else None
    return reason if isinstance(reason, str) and reason else str(name)


def _several_nodes(nodes: set[str], diags: list[Diagnostic], source: str) -> None:
    if len(nodes) > 1:
        diags.append(Diagnostic(source, f"pods of {len(nodes)} nodes: all are read; list one "
                                "node's with `kubectl get pods -A -o json --field-selector "
                                "spec.nodeName=NODE`"))


# --- kubectl describe pod --------------------------------------------------------------------
# k8s.io/kubectl/pkg/describe (describePod / describeContainerState): `Key:  value` lines,
# a section's entries indented two spaces more than its title; times as RFC 1123 with a
# numeric zone (`Mon, 30 Nov 2026 10:10:05 +0000`)
_DESCRIBE_LINE = re.compile(r"^(?P<indent> *)(?P<key>[A-Za-z0-9][\w .-]{0,62}?):"
                            r"(?:\s+(?P<value>.*))?$")


def looks_like_describe_pod(head: str) -> bool:
    return head.lstrip().startswith("Name:") and all(
        k in head for k in ("\nNamespace:", "Containers:", "Restart Count:"))


def _rfc1123(text: str) -> float | None:
    from email.utils import parsedate_to_datetime

    try:
        t = parsedate_to_datetime(text.strip())
    except (TypeError, ValueError, IndexError, OverflowError):  # a 20-digit day or hour
        return None
    return t.timestamp() if t.tzinfo is not None and 0 < t.timestamp() < 4.1e9 else None


def parse_kubectl_describe(text: str | bytes, t: float = 0.0,
                           source: str = "kubectl describe pod"
                           ) -> tuple[list[RestartRecord], list[Diagnostic]]:
    """One record per container of each pod `kubectl describe pod` prints, named and keyed
    as `kubectl get pods -o json` names its own (restartCount, the waiting reason, the last
    termination, the node, the pod's start)."""
    records: list[RestartRecord] = []
    diags: list[Diagnostic] = []
    nodes: set[str] = set()
    pod: dict[str, str] = {}
    section = ""  # the top-level section: "Containers", "Init Containers", ...
    cont: dict[str, Any] | None = None
    sub = ""  # inside a container: "State" or "Last State"

    def flush() -> None:
        nonlocal cont
        if cont is not None and pod.get("Name"):
            records.append(_describe_record(pod, cont, t))
        cont = None

    for line in as_text(text).splitlines():
        m = _DESCRIBE_LINE.match(line.rstrip())
        if m is None:
            continue
        depth, key, value = len(m["indent"]), m["key"].strip(), (m["value"] or "").strip()
        if depth == 0:
            if key == "Name":
                flush()
                pod, section = {}, ""
            if key in ("Containers", "Init Containers", "Ephemeral Containers") and not value:
                flush()
                section = key
                continue
            if section:
                flush()
                section = ""
            pod.setdefault(key, value)
            continue
        if section not in ("Containers", "Init Containers"):
            continue
        if depth == 2 and not value:
            flush()
            cont, sub = {"name": key}, ""
            continue
        if cont is None:
            continue
        if depth == 4:
            sub = key if key in ("State", "Last State") else ""
            cont[key] = value
        elif depth >= 6 and sub:
            cont[f"{sub}/{key}"] = value
    flush()
    for r in records:
        node = r.detail.get("node")
        if isinstance(node, str):
            nodes.add(node)
    if not records:
        diags.append(Diagnostic(source, "no pod with containers found"))
    _several_nodes(nodes, diags, source)
    return records, diags


def _describe_record(pod: dict[str, str], c: dict[str, Any], t: float) -> RestartRecord:
    ns = pod.get("Namespace", "")
    base = f"{ns}/{pod['Name']}" if ns else pod["Name"]
    detail: dict[str, Any] = {"source": "kubectl", "phase": pod.get("Status")}
    node = pod.get("Node", "").split("/", 1)[0]
    if node and node != "<none>":
        detail["node"] = node
    started = _rfc1123(pod.get("Start Time", ""))
    if started is not None:
        detail["counted_since"] = started
    cid = _CONTAINER_ID.match(str(c.get("Container ID") or ""))
    if cid:
        detail["ids"] = [cid.group(1)]
    if c.get("Last State") == "Terminated":
        code = c.get("Last State/Exit Code", "")
        if code.lstrip("-").isdigit() and len(code) < 12:
            detail["exitCode"] = int(code)
        for k, out in (("Reason", "reason"), ("Finished", "finishedAt")):
            if c.get(f"Last State/{k}"):
                detail[out] = c[f"Last State/{k}"]
    state = c.get("State/Reason") or c.get("State", "")
    n = c.get("Restart Count", "")
    return RestartRecord(t=t, kind="container", name=f"{base}/{c['name']}",
                         restarts=int(n) if n.isdigit() and len(n) < 10 else None,
                         state=state, detail=detail)
