"""The node's kernel log for the hour: the story's driver, OOM and hardware lines among the
ordinary chatter of a Kubernetes node, rendered as `dmesg` (boot-relative `[ sec.usec]`) or
`dmesg --time-format iso`.

Message texts are the kernel's and drivers' own format strings (ENA ena_netdev.c, mm/oom_kill.c
and memcontrol.c, x86 mce, EDAC skx/ghes, APEI, the bridge, veth and IPv6 addrconf code).
"""

from __future__ import annotations

import random
import time
from pathlib import Path

from corescope.lab.scenarios.out import write_text
from corescope.lab.scenarios.plan import Plan, rng_for, uuid_from

ENA_INFO = "Elastic Network Adapter (ENA) v2.8.0g"
Line = tuple[float, str, str]  # (epoch, message, the kind corescope must classify it as)


def story_lines(p: Plan) -> list[Line]:
    """The lines that carry the scenario's evidence (epoch, message)."""
    r = rng_for(p.kind, p.seed, "dmesg-story")
    pre = f"ena {p.bus} {p.iface}: "
    out: list[Line] = []
    if p.kind in ("zombie_chain", "softirq_storm", "hypervisor_steal"):
        for e in p.episodes:
            if e.duration < 5.0 or e.who:
                # under ENA's 5 s threshold: no stall, no reset; a neighbour's kernel work
                # on a core that serves no NIC queue starves none either
                continue
            t = e.end + r.uniform(0.8, 1.9)
            if p.kind != "softirq_storm":
                since = int((t - e.start) * 1e6) // 1000 * 1000  # jiffies: whole ms
            else:
                since = r.randrange(20, 900)  # NAPI ran a moment ago: not starved
            out += [
                (t, pre + f"TX q {p.hot_queue} is paused for too long (threshold 5000000). "
                          f"Time since last napi {since} usec. napi scheduled: 1",
                 "nic_tx_stall"),
                (t + 0.000021, pre + "Trigger reset is on", "nic_reset"),
            ]
            out += _reset_tail(p, t + r.uniform(0.05, 0.2), r)
    elif p.kind == "hardware_fault":
        n = max(2, round(r.randrange(3, 5) * p.duration_s / 3600))
        for k in range(n):
            t = p.start + r.uniform(90, p.duration_s - 120)
            out += _hw_error(p, t, r, k)
            # the NIC's device side fails without any core being busy
            t2 = t + r.uniform(20, 110)
            out += [(t2, pre + "Keep alive watchdog timeout.", "nic_keepalive_timeout"),
                    (t2 + 0.015, pre + "Trigger reset is on", "nic_reset")]
            out += _reset_tail(p, t2 + r.uniform(0.05, 0.3), r)
    elif p.kind == "memory_pressure":
        n = max(2, round(r.randrange(3, 8) * p.duration_s / 3600))
        for k in range(n):
            t = p.start + r.uniform(60, p.duration_s - 30)
            out += _oom_legacy(p, t, r, k) if "oom_legacy" in p.also else _oom(p, t, r, k)
    return out + _joined_lines(p, rng_for(p.kind, p.seed, "dmesg-joined"))


def _joined_lines(p: Plan, r: random.Random) -> list[Line]:
    """The knobs' lines: a soft lockup under memory pressure before a TX timeout, and one
    keep-alive timeout with its self-healed reset after a host pause."""
    pre = f"ena {p.bus} {p.iface}: "
    out: list[Line] = []
    if p.lockup_at is not None and p.hot_cpu is not None:
        t = p.lockup_at
        q = r.randrange(0, p.queues)
        out += [(t, f"watchdog: BUG: soft lockup - CPU#{p.hot_cpu} stuck for "
                    f"{r.randrange(21, 27)}s! [java:{r.randrange(100000, 4000000)}]", "other"),
                (t + r.uniform(4.0, 9.0), f"NETDEV WATCHDOG: {p.iface} ({p.nic_driver}): "
                 f"transmit queue {q} timed out", "nic_tx_timeout")]
    if p.pause_at is not None:
        t = p.pause_at + 1.0 + r.uniform(0.5, 2.5)
        out += [(t, pre + "Keep alive watchdog timeout.", "nic_keepalive_timeout"),
                (t + 0.015, pre + "Trigger reset is on", "nic_reset")]
        out += _reset_tail(p, t + r.uniform(0.05, 0.3), r)
    return out


def _oom_legacy(p: Plan, t: float, r: random.Random, k: int) -> list[Line]:
    """The OOM report of a 4.14 kernel (mm/memcontrol.c mem_cgroup_print_oom_info, then
    mm/oom_kill.c): `Task in CGROUP killed as a result of limit of CGROUP`, no `oom-kill:`
    summary line; the path as the kubelet's cgroup driver names it."""
    from corescope.lab.scenarios.census import pod_of

    pid = r.randrange(100000, 4000000)
    comm = ("java", "python3", "node")[k % 3]
    _ns, _pod, uid, _sandbox = pod_of(p, p.container)
    cid = container_id(p)
    if p.cgroup_driver == "systemd":
        u = uid.replace("-", "_")
        cg = (f"/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod{u}.slice/"
              f"cri-containerd-{cid}.scope")
    else:
        cg = f"/kubepods/burstable/pod{uid}/{cid}"
    limit = 4194304
    rss = limit - r.randrange(100, 3000)
    lines = [
        f"{comm} invoked oom-killer: gfp_mask=0x14000c0(GFP_KERNEL), nodemask=(null), "
        "order=0, oom_score_adj=985",
        f"{comm} cpuset={cid[:12]} mems_allowed=0",
        f"CPU: {r.randrange(p.cpus)} PID: {pid} Comm: {comm} Not tainted {p.kernel} #1",
        "Call Trace:",
        " dump_stack+0x5c/0x82",
        " dump_header+0x94/0x229",
        " oom_kill_process+0x213/0x410",
        " out_of_memory+0x2ab/0x4b0",
        " mem_cgroup_out_of_memory+0x49/0x80",
        f"Task in {cg} killed as a result of limit of {cg}",
        f"memory: usage {limit}kB, limit {limit}kB, failcnt {r.randrange(100, 9000)}",
        f"memory+swap: usage {limit}kB, limit 9007199254740988kB, failcnt 0",
        f"Memory cgroup stats for {cg}: cache:{r.randrange(100, 9000)}KB rss:{rss}KB "
        "rss_huge:0KB shmem:0KB mapped_file:0KB dirty:0KB writeback:0KB",
        "[ pid ]   uid  tgid total_vm      rss nr_ptes nr_pmds swapents oom_score_adj name",
        f"[{pid:>5}]  1000 {pid:>5}  1310720 {rss // 4:>8}    2113       7        0"
        f"           985 {comm}",
        f"Memory cgroup out of memory: Kill process {pid} ({comm}) score 1985 or sacrifice "
        "child",
        f"Killed process {pid} ({comm}) total-vm:5242880kB, anon-rss:{rss - 20000}kB, "
        f"file-rss:{r.randrange(1000, 30000)}kB, shmem-rss:0kB",
    ]
    return [(t + j * 0.000013, text, "oom_kill" if "out of memory: Kill" in text else "other")
            for j, text in enumerate(lines)]


def _reset_tail(p: Plan, t: float, r: random.Random) -> list[Line]:
    dev = f"ena {p.bus}: "
    return [
        (t, dev + "ENA device version: 0.10", "other"),
        (t + 0.000012, dev + "ENA controller version: 0.0.1 implementation version 1", "other"),
        (t + r.uniform(0.3, 0.9),
         f"ena {p.bus} {p.iface}: Device reset completed successfully, Driver info: {ENA_INFO}",
         "nic_reset"),
    ]


def _hw_error(p: Plan, t: float, r: random.Random, k: int) -> list[Line]:
    # one report, one event: its first line; the further lines are part of it
    return [(t, m, "other" if j else "hw_error")
            for j, (t, m) in enumerate(_hw_lines(p, t, r, k))]


def _hw_lines(p: Plan, t: float, r: random.Random, k: int) -> list[tuple[float, str]]:
    cpu = r.randrange(p.cpus)
    page = r.randrange(0x100000, 0x3fffff)
    variant = k % 3
    if variant == 0:
        return [
            (t, f"mce: [Hardware Error]: CPU {cpu}: Machine Check: 0 Bank 7: "
                f"cc00008000010091"),
            (t + 0.00001, f"mce: [Hardware Error]: TSC 0 ADDR {page:x}000 MISC 90840000086"),
            (t + 0.00002, f"mce: [Hardware Error]: PROCESSOR 0:50657 TIME {int(t)} SOCKET 0 "
                          f"APIC {cpu * 2} microcode 5003302"),
            (t + 0.00003, "EDAC skx MC0: HANDLING MCE MEMORY ERROR"),
            (t + 0.00004, f"EDAC MC0: 1 CE memory read error on CPU_SrcID#0_MC#0_Chan#1_DIMM#0 "
                          f"(channel:1 slot:0 page:0x{page:x} offset:0x4c0 grain:32 "
                          f"syndrome:0x0 - err_code:0x0000:0x0091 socket:0 imc:0 rank:0 "
                          f"bg:1 ba:2 row:0x1a2b col:0x3c8)"),
        ]
    if variant == 1:
        return [
            (t, "{1}[Hardware Error]: Hardware error from APEI Generic Hardware Error "
                "Source: 1"),
            (t + 0.00001, "{1}[Hardware Error]: It has been corrected by h/w and requires no "
                          "further action"),
            (t + 0.00002, "{1}[Hardware Error]: event severity: corrected"),
            (t + 0.00003, "{1}[Hardware Error]:  Error 0, type: corrected"),
            (t + 0.00004, "{1}[Hardware Error]:   section_type: memory error"),
            (t + 0.00005, f"{{1}}[Hardware Error]:   physical_address: 0x0000{page:x}0c0"),
        ]
    return [
        (t, "mce: [Hardware Error]: Machine check events logged"),
        (t + 0.0001, f"EDAC MC0: 1 CE memory scrubbing error on CPU_SrcID#0_MC#1_Chan#0_DIMM#0 "
                     f"(channel:0 slot:0 page:0x{page:x} offset:0x0 grain:32 syndrome:0x0 - "
                     f"err_code:0x0008:0x00c0 socket:0 imc:1 rank:1 bg:0 ba:3 row:0x2c1 "
                     f"col:0x0)"),
    ]


def _oom(p: Plan, t: float, r: random.Random, k: int) -> list[Line]:
    pid = r.randrange(100000, 4000000)
    comm = ("java", "python3", "node")[k % 3]
    pod = uuid_from(r)
    cid = container_id(p)
    cg = f"/kubepods/burstable/pod{pod}/{cid}"
    limit = 4194304
    rss = limit - r.randrange(100, 3000)
    cpu = r.randrange(p.cpus)
    lines = [
        f"{comm} invoked oom-killer: gfp_mask=0xcc0(GFP_KERNEL), order=0, oom_score_adj=985",
        f"CPU: {cpu} PID: {pid} Comm: {comm} Not tainted {p.kernel} #1",
        "Hardware name: Amazon EC2 r5.24xlarge/, BIOS 1.0 10/16/2017",
        "Call Trace:",
        " dump_stack+0x6d/0x8b",
        " dump_header+0x4f/0x200",
        " oom_kill_process.cold+0xb/0x10",
        " out_of_memory+0x1cf/0x500",
        " mem_cgroup_out_of_memory+0xbd/0xe0",
        " try_charge+0x74a/0x7b0",
        " mem_cgroup_try_charge+0x71/0x190",
        " __add_to_page_cache_locked+0x265/0x340",
        " add_to_page_cache_lru+0x4d/0xd0",
        " filemap_fault+0x4dd/0xaa0",
        " __do_fault+0x3c/0x130",
        " do_fault+0x24b/0x640",
        " __handle_mm_fault+0x4c5/0x7a0",
        " handle_mm_fault+0xca/0x200",
        " do_user_addr_fault+0x1f9/0x450",
        " page_fault+0x34/0x40",
        f"memory: usage {limit}kB, limit {limit}kB, failcnt {r.randrange(100, 9000)}",
        f"memory+swap: usage {limit}kB, limit 9007199254740988kB, failcnt 0",
        f"kmem: usage {r.randrange(8000, 60000)}kB, limit 9007199254740988kB, failcnt 0",
        f"Memory cgroup stats for {cg}: cache:{r.randrange(100, 9000)}KB "
        f"rss:{rss}KB rss_huge:0KB shmem:0KB mapped_file:132KB dirty:0KB writeback:0KB "
        f"inactive_anon:0KB active_anon:{rss}KB inactive_file:12KB active_file:0KB "
        f"unevictable:0KB",
        "Tasks state (memory values in pages):",
        "[  pid  ]   uid  tgid total_vm      rss pgtables_bytes swapents oom_score_adj name",
        f"[{pid:>7}]  1000 {pid:>5} {1310720:>8} {rss // 4:>8} {8650752:>14} "
        f"{0:>8} {985:>13} {comm}",
        f"oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset={cid},mems_allowed=0,"
        f"oom_memcg={cg},task_memcg={cg},task={comm},pid={pid},uid=1000",
        f"Memory cgroup out of memory: Killed process {pid} ({comm}) total-vm:5242880kB, "
        f"anon-rss:{rss - 20000}kB, file-rss:{r.randrange(1000, 30000)}kB, shmem-rss:0kB, "
        f"UID:1000 pgtables:8448kB oom_score_adj:985",
        f"oom_reaper: reaped process {pid} ({comm}), now anon-rss:0kB, file-rss:0kB, "
        f"shmem-rss:0kB",
    ]
    return [(t + j * 0.000013, text, "oom_kill" if "out of memory: Killed" in text else "other")
            for j, text in enumerate(lines)]


def container_id(p: Plan) -> str:
    """The culprit container's 64-hex id (shared with the crictl writer)."""
    r = rng_for(p.kind, p.seed, "container-id")
    return f"{r.getrandbits(256):064x}"


# --- ordinary chatter ---------------------------------------------------------------------


def _veth(r: random.Random) -> str:
    return f"veth{r.getrandbits(32):08x}"


def _noise_block(p: Plan, t: float, r: random.Random) -> list[Line]:
    x = r.random()
    if x < 0.45:  # a pod starts: the CNI plugs a veth into the bridge
        port, v = r.randrange(1, 60), _veth(r)
        texts = [f"cni0: port {port}({v}) entered blocking state",
                 f"cni0: port {port}({v}) entered disabled state",
                 f"device {v} entered promiscuous mode",
                 f"IPv6: ADDRCONF(NETDEV_CHANGE): {v}: link becomes ready",
                 f"cni0: port {port}({v}) entered blocking state",
                 f"cni0: port {port}({v}) entered forwarding state"]
    elif x < 0.7:  # a pod goes away
        port, v = r.randrange(1, 60), _veth(r)
        texts = [f"cni0: port {port}({v}) entered disabled state",
                 f"device {v} left promiscuous mode",
                 f"cni0: port {port}({v}) entered disabled state"]
    elif x < 0.85:
        texts = [f'audit: type=1400 audit({t:.3f}:{r.randrange(1000, 99999)}): '
                 f'apparmor="DENIED" operation="open" profile="cri-containerd.apparmor.d" '
                 f'name="/proc/{r.randrange(1000, 99999)}/mounts" pid={r.randrange(1000, 99999)} '
                 f'comm="{r.choice(("node", "fluent-bit", "python3"))}" requested_mask="r" '
                 f'denied_mask="r" fsuid=0 ouid=0']
    elif x < 0.9:
        texts = [f"kauditd_printk_skb: {r.randrange(2, 40)} callbacks suppressed"]
    elif x < 0.94:
        texts = [f"IPVS: rr: TCP 10.100.{r.randrange(0, 255)}.{r.randrange(1, 255)}:443 - "
                 "no destination available"]
    elif x < 0.97:
        texts = ["TCP: request_sock_TCP: Possible SYN flooding on port 10250. Sending cookies."
                 "  Check SNMP counters."]
    else:
        texts = [f"xfs filesystem being mounted at /var/lib/kubelet/pods/"
                 f"{r.getrandbits(64):016x}/volumes supports timestamps until 2038 "
                 "(0x7fffffff)"]
    return [(t + j * 0.000007 * (1 + r.random()), s,
             "link_up" if s.endswith("link becomes ready") else "other")
            for j, s in enumerate(texts)]


def noise_lines(p: Plan, target: int) -> list[Line]:
    r = rng_for(p.kind, p.seed, "dmesg-noise")
    out: list[Line] = []
    while len(out) < target:
        out += _noise_block(p, p.start + r.uniform(0, p.duration_s), r)
    return out[:target]


def render(p: Plan, lines: list[Line]) -> str:
    parts = []
    if "dmesg_time" in p.omit:  # `dmesg -t`: no timestamps at all
        return "".join(f"{msg}\n" for _t, msg, _ in lines)
    if p.dmesg_format == "iso":
        for t, msg, _ in lines:
            us = round(t * 1e6)
            sec, frac = divmod(us, 1_000_000)
            stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(sec))
            parts.append(f"{stamp},{frac:06d}+00:00 {msg}\n")
    else:
        for t, msg, _ in lines:
            us = round((t - p.boot_time) * 1e6)
            parts.append(f"[{us // 1_000_000:5d}.{us % 1_000_000:06d}] {msg}\n")
    return "".join(parts)


def all_lines(p: Plan) -> list[Line]:
    story = story_lines(p)
    return sorted(story + noise_lines(p, max(0, p.dmesg_lines - len(story))),
                  key=lambda x: x[0])


def write(p: Plan, directory: Path) -> Path:
    return write_text(directory / "dmesg.txt", render(p, all_lines(p)), mtime=p.end)
