"""The zombie evidence a user saves: the census loop log
(`while sleep 10; do date; cat /proc/cgroups; find /sys/fs/cgroup/memory -type d | wc -l; done`,
on a v2 node `find /sys/fs/cgroup -type d`),
`systemctl show -p Id,NRestarts,SubState,ActiveState,Result,ControlGroup,Restart '*.service'`
and `crictl ps -a -o json`, all on a cgroup v1 node."""

from __future__ import annotations

import json
import time
from pathlib import Path

from corescope.lab.scenarios.dmesg import container_id
from corescope.lab.scenarios.out import write_text
from corescope.lab.scenarios.plan import Plan, rng_for, uuid_from

CENSUS_EVERY_S = 10
# (controller, hierarchy): the v1 layout of an Ubuntu 20.04 / Amazon Linux 2 node
_CONTROLLERS = (("cpuset", 9), ("cpu", 4), ("cpuacct", 4), ("blkio", 6), ("memory", 11),
                ("devices", 3), ("freezer", 5), ("net_cls", 2), ("perf_event", 7),
                ("net_prio", 2), ("hugetlb", 10), ("pids", 8), ("rdma", 12))


def date_line(t: float) -> str:
    """coreutils `date` in the C locale with TZ=UTC: `Mon Nov  2 15:32:49 UTC 2026`."""
    g = time.gmtime(int(t))
    return time.strftime("%a %b ", g) + f"{g.tm_mday:2d}" + time.strftime(" %H:%M:%S UTC %Y", g)


def dying_at(p: Plan, t: float) -> int:
    """Dying memcgs at time t: the start count plus the restarts' leak so far (restarts
    happen every 10 s, so the count climbs in steps)."""
    if p.dying_per_hour <= 0:
        return p.dying_start
    step = 3600.0 / p.restarts_per_hour if p.restarts_per_hour else 10.0
    n = int((t - p.start) // step)
    return p.dying_start + int(n * p.dying_per_hour * step / 3600.0)


def census_log(p: Plan) -> str:
    r = rng_for(p.kind, p.seed, "census")
    out = []
    live = p.live_memcgs
    for k in range(p.duration_s // CENSUS_EVERY_S + 1):
        t = p.start + k * CENSUS_EVERY_S + r.uniform(0.0, 0.05)
        live = max(60, live + r.choice((-2, -1, 0, 0, 0, 1, 2)))
        memory = live + dying_at(p, t)
        out.append(date_line(t) + "\n#subsys_name\thierarchy\tnum_cgroups\tenabled\n")
        for name, h in _CONTROLLERS:
            if p.census_format == "v2":
                h = 0  # one unified hierarchy: /proc/cgroups prints 0 for every controller
            n = memory if name == "memory" else 1 if name == "rdma" else (
                live if name in ("cpuset", "freezer", "net_cls", "perf_event", "net_prio",
                                 "hugetlb") else live + live // 2)
            out.append(f"{name}\t{h}\t{n}\t1\n")
        out.append(f"{live}\n")
    return "".join(out)


def restarts_so_far(p: Plan) -> int:
    """The culprit's restart count at the end of the hour (one restart per 10 s since it
    started looping, days ago)."""
    if p.loop_attempts:
        return p.loop_attempts  # a loop that began minutes ago
    if not p.restarts_per_hour:
        return 0
    return int((p.end - p.boot_time - 120) * p.restarts_per_hour / 3600)


def systemctl_show(p: Plan) -> str:
    r = rng_for(p.kind, p.seed, "units")
    units = [
        ("containerd.service", "no", 0, "active", "running", "success"),
        ("kubelet.service", "always", r.randrange(0, 3), "active", "running", "success"),
        ("ssh.service", "on-failure", 0, "active", "running", "success"),
        ("systemd-journald.service", "always", 0, "active", "running", "success"),
        ("amazon-ssm-agent.service", "always", r.randrange(0, 2), "active", "running",
         "success"),
        ("systemd-tmpfiles-clean.service", "no", 0, "inactive", "dead", "success"),
    ]
    culprit_unit = p.culprit_kind == "systemd-unit" and p.looping
    if culprit_unit:
        units.insert(2, (p.unit, "on-failure", restarts_so_far(p), "activating",
                         "auto-restart", "exit-code"))
    else:
        units.insert(2, (p.unit, "on-failure", 0, "active", "running", "success"))
    blocks = []
    for uid, restart, n, active, sub, result in units:
        cg = "" if sub == "dead" else f"/system.slice/{uid}"
        blocks.append(f"Restart={restart}\nNRestarts={n}\nResult={result}\n"
                      f"ControlGroup={cg}\nId={uid}\nActiveState={active}\nSubState={sub}\n")
    return "\n".join(blocks)


def pod_of(p: Plan, name: str) -> tuple[str, str, str, str]:
    """(namespace, pod name, pod uid, sandbox id) of the pod running container `name`."""
    r = rng_for(p.kind, p.seed, f"pod/{name}")
    ns = "kube-system" if "agent" in name or name in ("node-exporter",) else "default"
    uid = uuid_from(r)
    return ns, f"{name}-{r.getrandbits(20):05x}", uid, f"{r.getrandbits(256):064x}"


def crictl_ps(p: Plan) -> str:
    r = rng_for(p.kind, p.seed, "crictl")
    created = int((p.end - 30) * 1e9)
    looping = p.culprit_kind == "container" and (p.looping or p.kind == "memory_pressure")
    attempts = (restarts_so_far(p) if p.kind != "memory_pressure"
                else r.randrange(4, 12))

    def entry(name: str, attempt: int, state: str, cid: str, t_ns: int, image: str) -> dict:
        ns, pod, uid, sandbox = pod_of(p, name)
        return {
            "id": cid, "podSandboxId": sandbox,
            "metadata": {"name": name, "attempt": attempt},
            "image": {"image": f"sha256:{r.getrandbits(256):064x}", "annotations": {},
                      "userSpecifiedImage": "", "runtimeHandler": ""},
            "imageRef": f"{image}@sha256:{r.getrandbits(256):064x}",
            "state": state, "createdAt": str(t_ns),
            "labels": {"io.kubernetes.container.name": name,
                       "io.kubernetes.pod.name": pod,
                       "io.kubernetes.pod.namespace": ns,
                       "io.kubernetes.pod.uid": uid},
            "annotations": {"io.kubernetes.container.hash": f"{r.getrandbits(32):08x}",
                            "io.kubernetes.container.restartCount": str(attempt),
                            "io.kubernetes.container.terminationMessagePath":
                                "/dev/termination-log",
                            "io.kubernetes.container.terminationMessagePolicy": "File",
                            "io.kubernetes.pod.terminationGracePeriod": "30"},
        }

    image = f"public.ecr.aws/example/{p.container}"
    out = []
    if looping and p.loop_attempts:
        # the newest attempt runs; the kubelet keeps a few exited ones, seconds apart
        step = int(p.loop_spacing_s * 1e9)
        t0 = int((p.end - 3) * 1e9)
        out.append(entry(p.container, attempts, "CONTAINER_RUNNING", container_id(p), t0,
                         image))
        for k in range(1, min(3, attempts) + 1):
            out.append(entry(p.container, attempts - k, "CONTAINER_EXITED",
                             f"{r.getrandbits(256):064x}", t0 - k * step, image))
    elif looping:
        # a crash loop's attempts are 10 s apart; an OOM-killed container's, hours
        before = 10_000_000_000 if p.kind != "memory_pressure" else 3 * 3600 * 10**9
        out.append(entry(p.container, attempts, "CONTAINER_RUNNING", container_id(p),
                         created, image))
        out.append(entry(p.container, attempts - 1, "CONTAINER_EXITED",
                         f"{r.getrandbits(256):064x}", created - before, image))
    else:
        out.append(entry(p.container, 0, "CONTAINER_RUNNING", container_id(p),
                         int((p.boot_time + 300) * 1e9), image))
    trainer = "trainer" if p.kind != "healthy_bursty" else "batch-worker"
    out.append(entry(trainer, 0, "CONTAINER_RUNNING", f"{r.getrandbits(256):064x}",
                     int((p.start - 7200) * 1e9), "example.com/ml/trainer"))
    out.append(entry("node-exporter", 1, "CONTAINER_RUNNING", f"{r.getrandbits(256):064x}",
                     int((p.boot_time + 200) * 1e9), "quay.io/prometheus/node-exporter"))
    return json.dumps({"containers": out}, indent=2) + "\n"


def kubectl_pods(p: Plan) -> str:
    """`kubectl get pods -A -o json` of the whole cluster: this node's pods (the same names
    and UIDs crictl lists, and the culprit's restartCount) and other nodes' pods, one of
    them crash-looping harder than anything here."""
    r = rng_for(p.kind, p.seed, "kubectl")

    def stamp(t: float) -> str:
        return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(int(t)))

    def pod(name: str, node: str, restarts: int, state: dict, started: float,
            key: str | None = None) -> dict:
        ns, pname, uid, _sandbox = pod_of(p, key or name)
        pname = f"{name}-{pname.rsplit('-', 1)[-1]}"  # another node's copy: its own suffix
        cid = container_id(p) if name == p.container and node == p.node_name \
            else f"{r.getrandbits(256):064x}"
        cs = {"name": name, "restartCount": restarts, "state": state, "ready": "running"
              in state, "containerID": f"containerd://{cid}",
              "image": f"example.com/{name}:1", "imageID": "", "started": "running" in state}
        if restarts:
            cs["lastState"] = {"terminated": {"exitCode": 1, "reason": "Error",
                                              "finishedAt": stamp(p.end - 40)}}
        return {"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": pname, "namespace": ns, "uid": uid},
                "spec": {"nodeName": node, "containers": [{"name": name}]},
                "status": {"phase": "Running", "startTime": stamp(started),
                           "containerStatuses": [cs]}}

    running = {"running": {"startedAt": stamp(p.end - 3)}}
    mine = p.culprit_kind == "container" and p.looping
    n = restarts_so_far(p) if mine else 0
    items = [pod(p.container, p.node_name, n,
                 running if not mine or p.loop_attempts else
                 {"waiting": {"reason": "CrashLoopBackOff"}},
                 p.end - 3 * p.loop_spacing_s * max(1, n) if p.loop_attempts
                 else p.boot_time + 300),
             pod("trainer" if p.kind != "healthy_bursty" else "batch-worker", p.node_name, 0,
                 running, p.start - 7200),
             pod("node-exporter", p.node_name, 1, running, p.boot_time + 200)]
    for i, other in enumerate(p.other_nodes):
        # a pod of another node restarting every few seconds, far more than anything here
        items.append(pod("payments-api", other, r.randrange(800, 3000),
                         {"waiting": {"reason": "CrashLoopBackOff"}}, p.end - 86400,
                         key=f"payments-api/{i}") if i == 0 else
                     pod("node-exporter", other, r.randrange(0, 3), running,
                         p.boot_time + 200, key=f"node-exporter/{i}"))
    return json.dumps({"apiVersion": "v1", "kind": "List", "items": items,
                       "metadata": {"resourceVersion": ""}}, indent=4) + "\n"


def write(p: Plan, directory: Path) -> list[Path]:
    out = []
    if "cluster_pods" in p.also:
        out.append(write_text(directory / "kubectl_pods.json", kubectl_pods(p), mtime=p.end))
    if "census" not in p.omit:
        out.append(write_text(directory / "census.log", census_log(p), mtime=p.end))
    if "restarts" not in p.omit:
        out += [write_text(directory / "systemctl_show.txt", systemctl_show(p), mtime=p.end),
                write_text(directory / "crictl_ps.json", crictl_ps(p), mtime=p.end)]
    return out
