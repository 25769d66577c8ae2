"""Restart evidence from the runtime listings as one model (issue 19): the spacing of the
attempts `crictl ps -a` lists (JSON `createdAt` in ns, the table's `N seconds ago`), the rate
basis said, and a cluster-wide pod listing narrowed to the node under investigation.
The listings are written here in the tools' own formats (cri-tools `crictl ps -a -o json` and
its tabwriter table, `kubectl get pods -A -o json`)."""

from __future__ import annotations

import json

from corescope.analysis.zombies import restart_rates
from corescope.evidence.base import RestartEvidence
from corescope.investigate.node import choose, narrow
from corescope.model.cgroups import RestartRecord
from corescope.sources import kubectl, units

T = 1_794_000_000.0  # the listing's moment
UPTIME = 5 * 86400.0
CID = "6465e970762be7332e7d2bf2a7ec70b2d443907ee71a33140b04b8a9ab59abd6"
UID = "a51b21f8-bcd4-446a-80de-3a85bd53df80"


def _attempt(attempt: int, state: str, created: float, cid: str = CID) -> dict:
    return {"id": cid if attempt == 4 else f"{attempt:064x}", "podSandboxId": "f" * 64,
            "metadata": {"name": "log-shipper", "attempt": attempt},
            "state": state, "createdAt": str(int(created * 1e9)),
            "labels": {"io.kubernetes.container.name": "log-shipper",
                       "io.kubernetes.pod.name": "log-shipper-7f9c2",
                       "io.kubernetes.pod.namespace": "logging",
                       "io.kubernetes.pod.uid": UID},
            "annotations": {"io.kubernetes.container.restartCount": str(attempt)}}


def _crictl(newest_age_s: float = 3.0) -> str:
    t0 = T - newest_age_s
    return json.dumps({"containers": [
        _attempt(4, "CONTAINER_RUNNING", t0), _attempt(3, "CONTAINER_EXITED", t0 - 20),
        _attempt(2, "CONTAINER_EXITED", t0 - 40)]})


def test_a_loop_whose_newest_attempt_runs_is_rated_by_its_attempts_spacing() -> None:
    recs, diags = units.parse_crictl_ps(_crictl(), T)
    assert not diags and len(recs) == 1
    (r,) = recs
    assert (r.restarts, r.state) == (4, "CONTAINER_RUNNING")
    assert (r.detail["attempts_listed"], r.detail["attempt_gaps"]) == (3, 2)
    (rate,) = restart_rates(recs, UPTIME)
    # 2 restarts in the 40 s between the attempts and the 3 s the newest has run, not 4
    # over five days of uptime (0.03/h: "not looping")
    assert rate.basis == "attempt-spacing"
    assert abs(rate.per_hour - 2 / 43 * 3600) < 0.5


def test_attempts_long_past_are_no_loop_now() -> None:
    recs, _ = units.parse_crictl_ps(_crictl(newest_age_s=3 * 86400), T)
    (rate,) = restart_rates(recs, UPTIME)
    assert rate.basis == "since-boot"  # the pair of crashes three days ago says nothing now


def test_the_table_reads_created_ago_as_the_spacing() -> None:
    head = ("CONTAINER           IMAGE               CREATED             STATE"
            "               NAME                ATTEMPT             POD ID              POD"
            "                      NAMESPACE")
    cols = [0, 20, 40, 60, 80, 100, 120, 140, 165]

    def row(*cells: str) -> str:
        out = ""
        for c, text in zip(cols, cells, strict=True):
            out = out.ljust(c) + text
        return out

    text = "\n".join([head,
                      row("7d3f0a1b2c3d4", "5b7d1f0e9c8a7", "4 seconds ago", "Running",
                          "log-shipper", "6", "c0ffee0011223", "log-shipper-7f9c2", "logging"),
                      row("8e4a1b2c3d4e5", "5b7d1f0e9c8a7", "34 seconds ago", "Exited",
                          "log-shipper", "5", "c0ffee0011223", "log-shipper-7f9c2", "logging"),
                      row("3a9c8b7d6e5f4", "9f8e7d6c5b4a3", "3 hours ago", "Running",
                          "ray-worker", "0", "d1d2d3d4d5d6d", "ray-job-0", "ml")]) + "\n"
    recs, diags = units.parse_crictl_table(text, T)
    assert not diags
    loop = next(r for r in recs if r.name.endswith("/log-shipper"))
    assert loop.state == "CONTAINER_RUNNING"
    assert (loop.detail["attempt_span_s"], loop.detail["last_attempt_ago_s"]) == (30, 4)
    rates = {r.name: r for r in restart_rates(recs, UPTIME)}
    assert rates[loop.name].basis == "attempt-spacing"
    assert abs(rates[loop.name].per_hour - 3600 / 34) < 0.5


def test_go_units_human_durations() -> None:
    assert units.ago_s("Less than a second ago") == 0
    assert units.ago_s("About a minute ago") == 60
    assert units.ago_s("About an hour ago") == 3600
    assert units.ago_s("2 days ago") == 2 * 86400
    assert units.ago_s("yesterday") is None


def _pods(*pods: tuple[str, str, str, int]) -> str:
    items = [{"apiVersion": "v1", "kind": "Pod",
              "metadata": {"name": name, "namespace": "default", "uid": uid},
              "spec": {"nodeName": node},
              "status": {"phase": "Running", "startTime": "2026-11-28T00:00:00Z",
                         "containerStatuses": [{"name": name.rsplit("-", 1)[0],
                                                "restartCount": n, "state": {
                                                    "waiting": {"reason": "CrashLoopBackOff"}},
                                                "containerID": f"containerd://{uid[:8] * 8}"}]}}
             for name, uid, node, n in pods]
    return json.dumps({"apiVersion": "v1", "kind": "List", "items": items})


OTHER = "0badc0de-0000-4000-8000-000000000001"


def _cluster() -> list[RestartRecord]:
    recs, _ = kubectl.parse_kubectl_json(_pods(
        ("log-shipper-7f9c2", UID, "ip-10-0-1-2.ec2.internal", 4),
        ("payments-api-x1", OTHER, "ip-10-3-9-9.ec2.internal", 2400)), T)
    return recs


def test_the_node_is_the_one_the_runtime_listing_ties_the_pods_to() -> None:
    local, _ = units.parse_crictl_ps(_crictl(), T)
    kept, choice = narrow(RestartEvidence([*_cluster(), *local]), None)
    assert (choice.name, choice.basis) == ("ip-10-0-1-2.ec2.internal", "local evidence")
    assert all("payments-api" not in r.name for r in kept.records)
    assert choice.dropped == ("default/payments-api-x1/payments-api",)


def test_the_kernel_log_alone_can_tie_the_node() -> None:
    line = f"Task in /kubepods/burstable/pod{UID}/{CID} killed as a result of limit of ..."
    assert choose(_cluster(), None, [line]).name == "ip-10-0-1-2.ec2.internal"


def test_an_option_or_the_hostname_names_the_node() -> None:
    assert choose(_cluster(), "ip-10-3-9-9", ()).name == "ip-10-3-9-9.ec2.internal"
    assert choose(_cluster(), None, (), host="ip-10-3-9-9").basis == "hostname"
    # a hostname the listing does not have decides nothing
    assert choose(_cluster(), None, (), host="build-box").basis == "unknown"


def test_with_no_way_to_tell_no_pod_of_any_node_is_blamed() -> None:
    kept, choice = narrow(RestartEvidence(_cluster()), None)
    assert choice.name is None and choice.basis == "unknown"
    assert kept.records == []
    # a listing of one node is that node's
    one = [r for r in _cluster() if "payments" not in r.name]
    kept, choice = narrow(RestartEvidence(one), None)
    assert choice.basis == "only node listed" and len(kept.records) == 1


# `kubectl describe pod` as k8s.io/kubectl/pkg/describe prints it (describePod,
# describeContainerState; tabwriter-aligned `Key:  value`, sections indented by two)
DESCRIBE = f"""Name:             log-shipper-7f9c2
Namespace:        logging
Priority:         0
Service Account:  default
Node:             ip-10-0-1-2.ec2.internal/10.0.1.2
Start Time:       Mon, 30 Nov 2026 10:00:00 +0000
Labels:           app=log-shipper
                  pod-template-hash=7f9c
Annotations:      kubernetes.io/psp: eks.privileged
Status:           Running
IP:               10.0.1.50
IPs:
  IP:           10.0.1.50
Controlled By:  ReplicaSet/log-shipper-7f9c
Containers:
  log-shipper:
    Container ID:   containerd://{CID}
    Image:          example.com/log-shipper:1
    Image ID:       example.com/log-shipper@sha256:{"0" * 64}
    Port:           <none>
    Host Port:      <none>
    State:          Waiting
      Reason:       CrashLoopBackOff
    Last State:     Terminated
      Reason:       Error
      Exit Code:    1
      Started:      Mon, 30 Nov 2026 11:58:40 +0000
      Finished:     Mon, 30 Nov 2026 11:58:45 +0000
    Ready:          False
    Restart Count:  42
    Limits:
      memory:  512Mi
    Environment:    <none>
    Mounts:
      /var/run/secrets/kubernetes.io/serviceaccount from kube-api-access-x (ro)
  sidecar:
    Container ID:   containerd://{"ab" * 32}
    Image:          example.com/sidecar:2
    State:          Running
      Started:      Mon, 30 Nov 2026 10:00:05 +0000
    Ready:          True
    Restart Count:  0
Conditions:
  Type              Status
  Ready             False
Events:
  Type     Reason   Age                  From     Message
  ----     ------   ----                 ----     -------
  Warning  BackOff  2m (x480 over 2h)    kubelet  Back-off restarting failed container
"""


def test_describe_pod_gives_the_json_records() -> None:
    from corescope.sources.artifacts import units as art_units
    from corescope.sources.artifacts.content import sniff

    data = DESCRIBE.encode()
    assert sniff(data) == "kubectl_describe"
    p = art_units.parse(data, "kubectl_describe", "describe.txt")
    assert not p.diagnostics, p.diagnostics
    loop, side = p.restarts
    assert (loop.name, loop.restarts, loop.state) == (
        "logging/log-shipper-7f9c2/log-shipper", 42, "CrashLoopBackOff")
    assert loop.detail["node"] == "ip-10-0-1-2.ec2.internal"
    assert (loop.detail["exitCode"], loop.detail["reason"]) == (1, "Error")
    assert loop.detail["ids"] == [CID]
    assert (side.name, side.restarts, side.state) == ("logging/log-shipper-7f9c2/sidecar", 0,
                                                      "Running")
    # restartCount over the pod's age (two hours): the rate and its basis
    start = 1_796_032_800.0  # Mon, 30 Nov 2026 10:00:00 UTC
    assert loop.detail["counted_since"] == start
    recs = [RestartRecord(start + 7200, r.kind, r.name, r.restarts, r.state, r.cgroup,
                          r.detail) for r in p.restarts]
    (rate,) = restart_rates(recs, UPTIME)
    assert rate.basis == "since-start" and abs(rate.per_hour - 21.0) < 0.01


def test_docker_inspect_counts_from_the_container_creation() -> None:
    doc = [{"Id": "c" * 64, "Name": "/agent", "Created": "2026-11-30T10:00:00.123456789Z",
            "RestartCount": 12, "State": {"Status": "restarting", "ExitCode": 1},
            "HostConfig": {"RestartPolicy": {"Name": "always"}}}]
    (r,), diags = units.parse_docker_inspect(json.dumps(doc), 0.0)
    assert not diags
    since = r.detail["counted_since"]
    r2 = RestartRecord(since + 3600, r.kind, r.name, r.restarts, r.state, r.cgroup, r.detail)
    (rate,) = restart_rates([r2], UPTIME)
    assert rate.basis == "since-start" and abs(rate.per_hour - 12) < 0.01


def test_a_restarting_container_without_a_count_is_still_a_suspect() -> None:
    rows, _ = units.parse_docker_ps('{"ID":"abc","Names":"agent","Image":"x",'
                                    '"Status":"Restarting (1) 4 seconds ago"}\n')
    r = RestartRecord(T, "docker-container", rows[0].name, None, rows[0].state)
    (rate,) = restart_rates([r], UPTIME)
    assert rate.state == "restarting" and rate.per_hour is None
