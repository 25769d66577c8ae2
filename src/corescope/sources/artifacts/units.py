"""Restart evidence and the journal: `systemctl show` dumps, `journalctl -o json`,
`-o export` or `-o verbose` (restart entries and kernel entries), `crictl ps -a -o json` or
its table, `docker ps -a` (table or `--format '{{json .}}'`), `docker inspect`, `kubectl get
pods` (table or `-o json`) and `kubectl describe pod`. Parsing is sources.units' and
sources.kubectl's (and sources.kmsg_saved's for the journal's kernel entries); this module
recognises the content and turns what it finds into stored records.

Snapshots (`systemctl show`, `crictl`, `docker`) carry no time of their own: they are undated
and the importer places them. Journal entries carry journald's wall clock; a journal with
`__REALTIME_TIMESTAMP` and `__MONOTONIC_TIMESTAMP` also gives the boot time (realtime −
monotonic of its boot)."""

from __future__ import annotations

import re
import statistics

from corescope.model.cgroups import RestartRecord
from corescope.sources.artifacts.base import BootTime, Parsed
from corescope.sources.artifacts.dates import EPOCH_MAX
from corescope.sources.journal_text import text_form as journal_text_form
from corescope.sources.kmsg_saved import journal_objects, kernel_entries, parse_journal_json
from corescope.sources.kubectl import (
    kubectl_table_header,
    looks_like_describe_pod,
    looks_like_pod_json,
    parse_kubectl_describe,
    parse_kubectl_json,
    parse_kubectl_table,
)
from corescope.sources.units import (
    RESTART_MESSAGE_ID,
    crictl_table_header,
    docker_table_header,
    parse_crictl_ps,
    parse_crictl_table,
    parse_docker_inspect,
    parse_docker_ps,
    parse_journal_restarts,
    parse_systemctl_show,
)

# journal_export and journal_verbose (`journalctl -o export`, `-o verbose`) are read as the
# entries `-o json` gives (sources.journal_text)
JOURNAL_KINDS = ("journal_json", "journal_export", "journal_verbose")
KINDS = ("systemctl_show", *JOURNAL_KINDS, "crictl_json", "crictl_table", "docker_ps",
         "docker_inspect", "kubectl_pods", "kubectl_json", "kubectl_describe")

_KV = re.compile(r"^[A-Za-z][A-Za-z0-9_]*=")
_SYSTEMD_KEYS = re.compile(r"^(?:Id|Names|NRestarts|SubState|ActiveState|ControlGroup|"
                           r"MainPID|ExecMainStatus|LoadState)=", re.MULTILINE)
_DOCKER_HEADER = re.compile(r"^CONTAINER ID\s+IMAGE\s+COMMAND\s+CREATED\s+STATUS", re.MULTILINE)


def sniff(head: str) -> str | None:
    s = head.lstrip()
    form = journal_text_form(s.encode("utf-8", errors="replace"))
    if form is not None:
        return f"journal_{form}"
    if s.startswith("data: {"):  # journalctl -o json-sse
        s = s[len("data: "):]
    if s.startswith("{") or s.startswith("\x1e"):
        if "__REALTIME_TIMESTAMP" in head or "__CURSOR" in head:
            return "journal_json"
        if looks_like_pod_json(head):  # before crictl's: a Pod's spec lists "containers"
            return "kubectl_json"
        if '"containers"' in head and ('"podSandboxId"' in head or '"metadata"' in head):
            return "crictl_json"
        if '"ID"' in head and '"Names"' in head and '"Status"' in head:
            return "docker_ps"
        return None
    if s.startswith("["):
        if '"RestartCount"' in head or ('"HostConfig"' in head and '"State"' in head):
            return "docker_inspect"
        if "__REALTIME_TIMESTAMP" in head:
            return "journal_json"
        return None
    first = next((ln for ln in head[:4000].splitlines() if ln.strip()), "")
    if looks_like_describe_pod(head):
        return "kubectl_describe"
    if crictl_table_header(first):  # before docker's: old crictl also says `CONTAINER ID`
        return "crictl_table"
    if _DOCKER_HEADER.search(head[:2000]) or docker_table_header(first):
        return "docker_ps"
    if kubectl_table_header(first):
        return "kubectl_pods"
    lines = [ln for ln in head.splitlines()[:300] if ln.strip()]
    if lines and _SYSTEMD_KEYS.search(head):
        kv = sum(1 for ln in lines if _KV.match(ln))
        if kv / len(lines) >= 0.9:
            return "systemctl_show"
    return None


def parse(data: bytes, kind: str, source: str) -> Parsed:
    p = Parsed(kind, source)
    if kind in JOURNAL_KINDS:
        _journal(data, p)
        return p
    p.undated = True
    if kind == "systemctl_show":
        recs, diags = parse_systemctl_show(data, 0.0, source)
    elif kind == "crictl_json":
        recs, diags = parse_crictl_ps(data, 0.0, source)
    elif kind == "crictl_table":
        recs, diags = parse_crictl_table(data, 0.0, source)
    elif kind == "docker_inspect":
        recs, diags = parse_docker_inspect(data, 0.0, source)
    elif kind == "kubectl_pods":
        recs, diags = parse_kubectl_table(data, 0.0, source)
    elif kind == "kubectl_json":
        recs, diags = parse_kubectl_json(data, 0.0, source)
    elif kind == "kubectl_describe":
        recs, diags = parse_kubectl_describe(data, 0.0, source)
    else:
        rows, diags = parse_docker_ps(data, source)
        recs = [RestartRecord(t=0.0, kind="docker-container", name=r.name, restarts=None,
                              state=r.state, cgroup=r.id,
                              detail={"status": r.status, "exit_code": r.exit_code,
                                      "id": r.id[:12], "image": r.image})
                for r in rows]
    p.restarts = recs
    for d in diags[:50]:
        p.diag(d.message, d.line)
    if not recs:
        p.diag(f"no units or containers found in the {kind} output")
    return p


def _journal(data: bytes, p: Parsed) -> None:
    records, diags = parse_journal_json(data, p.source)
    p.kernel = kernel_entries(records)
    for d in diags[:20]:
        p.diag(d.message, d.line)
    if RESTART_MESSAGE_ID in data.decode("utf-8", errors="replace"):
        restarts, rdiags = parse_journal_restarts(data, p.source)
        p.restarts = [RestartRecord(t=j.t, kind="systemd-unit", name=j.unit,
                                    restarts=j.n_restarts, state="auto-restart",
                                    detail={"source": "journal", "message": j.message[:200]})
                      for j in restarts if j.t > 0]
        for d in rdiags[:20]:
            p.diag(d.message, d.line)
    bt = _boot_time(data)
    if bt is not None:
        p.boot_times.append(bt)


def _boot_time(data: bytes, max_entries: int = 5000) -> BootTime | None:
    """realtime − monotonic of the entries of the log's latest boot (journald stamps both when
    it receives an entry, so the difference is that boot's start on the wall clock)."""
    by_boot: dict[str, list[float]] = {}
    last_seen: dict[str, int] = {}
    for obj in journal_objects(data, limit=max_entries):
        if not isinstance(obj, dict):
            continue
        try:
            rt = int(obj["__REALTIME_TIMESTAMP"])
            mono = int(obj["__MONOTONIC_TIMESTAMP"])
            boot = obj.get("_BOOT_ID")
        except (KeyError, TypeError, ValueError):
            continue
        # a wall clock past any incident's years (10**30) is not journald's
        if not isinstance(boot, str) or not 0 <= mono <= rt <= EPOCH_MAX * 1e6:
            continue
        by_boot.setdefault(boot, []).append((rt - mono) / 1e6)
        last_seen[boot] = max(last_seen.get(boot, 0), rt)
    if not by_boot:
        return None
    # the latest boot: a dmesg saved with the journal is that boot's
    boot = max(last_seen, key=lambda b: last_seen[b])
    return BootTime(statistics.median(by_boot[boot]),
                    f"journal realtime - monotonic (boot {boot[:8]})", 0.1)
