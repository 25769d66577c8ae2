"""A memcg OOM kill written to the real /dev/kmsg while `record` runs: the stored event names the
process actually killed and its container, and `diagnose` on that store names the victim's
container and pod as the culprit of memory pressure (the live form of the joined culprit).

The lines are those the kernel prints for a memcg OOM on cgroup v2 with the systemd driver
(mm/oom_kill.c: dump_header, mem_cgroup_print_oom_context, __oom_kill_process), with a pod UID
and container id made up per run, so the test sees only what it wrote."""

from __future__ import annotations

import os
import secrets
import time
import uuid
from pathlib import Path

from live.conftest import MACHINE, recording_process, wait_for
from support import run_cli_json

pytestmark = MACHINE


def _oom_lines(pod_uid: str, container: str, pid: int) -> list[str]:
    slice_uid = pod_uid.replace("-", "_")  # the systemd driver's spelling of the pod UID
    pod = f"/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod{slice_uid}.slice"
    task = f"{pod}/cri-containerd-{container}.scope"
    return [
        "<4>java invoked oom-killer: gfp_mask=0xcc0(GFP_KERNEL), order=0, oom_score_adj=936",
        f"<4>CPU: 1 PID: {pid} Comm: java Not tainted 6.1.0 #1",
        "<6>memory: usage 524288kB, limit 524288kB, failcnt 512",
        (f"<6>oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),"
         f"cpuset=cri-containerd-{container}.scope,mems_allowed=0,oom_memcg={pod},"
         f"task_memcg={task},task=java,pid={pid},uid=1000"),
        (f"<3>Memory cgroup out of memory: Killed process {pid} (java) total-vm:5000000kB, "
         "anon-rss:500000kB, file-rss:0kB, shmem-rss:0kB, UID:1000 pgtables:1200kB "
         "oom_score_adj:936"),
    ]


def _write_kmsg(lines: list[str]) -> None:
    fd = os.open("/dev/kmsg", os.O_WRONLY)
    try:
        for line in lines:
            os.write(fd, (line + "\n").encode())
    finally:
        os.close(fd)


def test_record_then_diagnose_names_the_oom_victims_container_and_pod(tmp_path: Path) -> None:
    pod_uid, container = str(uuid.uuid4()), secrets.token_hex(32)
    pid = 40000 + secrets.randbelow(20000)
    store = tmp_path / "store"
    with recording_process(store, "--no-profile", "--no-netdev"):
        t0 = time.time()
        _write_kmsg(_oom_lines(pod_uid, container, pid))

        def ours() -> list[dict]:  # type: ignore[type-arg]
            got = run_cli_json("events", "--store", str(store), "--since", str(t0 - 1),
                               "--json")["events"]
            return [e for e in got if e["kind"] == "oom_kill"
                    and e["fields"].get("container_id") == container]

        assert wait_for(lambda: bool(ours()), 30), "the OOM kill was not stored"
        time.sleep(2)  # a few more core samples after it
    (event,) = ours()
    assert event["fields"]["pid"] == pid and event["fields"]["comm"] == "java"
    assert pod_uid.replace("-", "_") in event["fields"]["cgroup"]

    verdict = run_cli_json("diagnose", "--store", str(store), "--since", str(t0 - 1),
                           "--json")["verdict"]
    assert verdict["root_cause"] == "memory_pressure", verdict
    assert container[:12] in verdict["culprit"] and pod_uid in verdict["culprit"], verdict
    assert "java" not in verdict["culprit"]  # the container, not the process name
