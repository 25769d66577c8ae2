# ruff: noqa: RUF005 - stacks read best as kernel part + syscall part + user part
"""Call stacks the node's processes would show in `perf record -g`, leaf first.

Kernel paths are the ones real kernels of the era take (5.4/5.10 names): the memcg walk
under memory.stat / memory.numa_stat reads, NAPI polling in softirq and in ksoftirqd,
page-cache reclaim under a memcg limit, scheduler work, page faults, idle. User frames are
those of kubelet (a static Go binary), a PyTorch trainer and a JVM.
"""

from __future__ import annotations

K = "[kernel.kallsyms]"
ENA = "[ena]"
KUBELET = "/usr/bin/kubelet"
LIBC = "/usr/lib/x86_64-linux-gnu/libc-2.31.so"
PY = "/opt/conda/bin/python3.10"
TORCH = "/opt/conda/lib/python3.10/site-packages/torch/lib/libtorch_cpu.so"
CUDA = "/usr/lib/x86_64-linux-gnu/libcuda.so.535.104.12"
JVM = "/usr/lib/jvm/java-17-amazon-corretto/lib/server/libjvm.so"

Stack = tuple[tuple[str, str], ...]  # ((symbol, dso), ...), leaf first


def _k(*syms: str) -> Stack:
    return tuple((s, ENA if s.startswith("ena_") else K) for s in syms)


_SYSCALL = _k("do_syscall_64", "entry_SYSCALL_64_after_hwframe")
_KUBELET_READ_USER: Stack = (
    ("syscall.Syscall", KUBELET), ("syscall.read", KUBELET),
    ("internal/poll.(*FD).Read", KUBELET), ("os.(*File).Read", KUBELET),
    ("io.ReadAll", KUBELET), ("os.ReadFile", KUBELET),
    ("github.com/opencontainers/runc/libcontainer/cgroups/fs.getMemoryData", KUBELET),
    ("github.com/opencontainers/runc/libcontainer/cgroups/fs.(*MemoryGroup).GetStats",
     KUBELET),
    ("github.com/opencontainers/runc/libcontainer/cgroups/fs.(*manager).GetStats", KUBELET),
    ("github.com/google/cadvisor/container/libcontainer.(*Handler).GetStats", KUBELET),
    ("github.com/google/cadvisor/manager.(*containerData).updateStats", KUBELET),
    ("github.com/google/cadvisor/manager.(*containerData).housekeepingTick", KUBELET),
    ("runtime.goexit", KUBELET),
)
_READ = _k("seq_read", "__vfs_read", "vfs_read", "ksys_read", "__x64_sys_read")


# kubelet's stats read walking every memcg, dying ones included (weights: share of samples)
WALKER: list[tuple[float, Stack]] = [
    (0.40, _k("mem_cgroup_nr_lru_pages", "memcg_numa_stat_show") + _READ + _SYSCALL
     + _KUBELET_READ_USER),
    (0.12, _k("mem_cgroup_node_nr_lru_pages", "memcg_numa_stat_show") + _READ + _SYSCALL
     + _KUBELET_READ_USER),
    (0.14, _k("mem_cgroup_iter", "memcg_stat_show") + _READ + _SYSCALL + _KUBELET_READ_USER),
    (0.09, _k("css_next_descendant_pre", "mem_cgroup_iter", "memcg_stat_show") + _READ
     + _SYSCALL + _KUBELET_READ_USER),
    (0.10, _k("mem_cgroup_nr_lru_pages", "memcg_stat_show") + _READ + _SYSCALL
     + _KUBELET_READ_USER),
    (0.08, _k("cgroup_rstat_flush_locked", "cgroup_rstat_flush", "memcg_stat_show") + _READ
     + _SYSCALL + _KUBELET_READ_USER),
    (0.04, _k("_raw_spin_lock_irqsave", "mem_cgroup_iter", "memcg_numa_stat_show") + _READ
     + _SYSCALL + _KUBELET_READ_USER),
    (0.03, _k("memcg_numa_stat_show") + _READ + _SYSCALL + _KUBELET_READ_USER),
]
WALKER_FUNCTION = "mem_cgroup_nr_lru_pages"  # the walk's top self function (≈50% above)
WALKER_FAMILY = frozenset({"mem_cgroup_nr_lru_pages", "mem_cgroup_node_nr_lru_pages",
                           "mem_cgroup_iter", "css_next_descendant_pre", "memcg_stat_show",
                           "memcg_numa_stat_show", "cgroup_rstat_flush_locked",
                           "cgroup_rstat_flush"})

KUBELET_USER: list[tuple[float, Stack]] = [
    (0.5, (("runtime.scanobject", KUBELET), ("runtime.gcDrain", KUBELET),
           ("runtime.gcBgMarkWorker.func2", KUBELET), ("runtime.systemstack", KUBELET))),
    (0.3, (("runtime.mallocgc", KUBELET), ("encoding/json.(*encodeState).marshal", KUBELET),
           ("k8s.io/kubernetes/pkg/kubelet/server/stats.(*resourceAnalyzer).Get", KUBELET),
           ("runtime.goexit", KUBELET))),
    (0.2, _k("mem_cgroup_iter", "memcg_stat_show") + _READ + _SYSCALL + _KUBELET_READ_USER),
]


def trainer_user() -> list[tuple[float, Stack]]:
    py = (("_PyEval_EvalFrameDefault", PY), ("_PyFunction_Vectorcall", PY),
          ("_PyEval_EvalFrameDefault", PY), ("pymain_run_python", PY),
          ("Py_RunMain", PY), ("__libc_start_main", LIBC), ("_start", PY))
    return [
        (0.35, (("at::native::(anonymous namespace)::copy_kernel(at::TensorIterator&, bool)",
                 TORCH), ("at::native::copy_impl(at::Tensor&, at::Tensor const&, bool)",
                          TORCH), ("at::native::copy_(at::Tensor&, at::Tensor const&, bool)",
                                   TORCH)) + py),
        (0.25, (("__memmove_avx_unaligned_erms", LIBC),
                ("at::native::cat_serial_kernel(at::Tensor const&, c10::ArrayRef<at::Tensor>, "
                 "long)", TORCH)) + py),
        (0.25, (("[unknown]", CUDA), ("[unknown]", CUDA), ("cuStreamSynchronize", CUDA)) + py),
        (0.15, (("_PyObject_GenericGetAttrWithDict", PY),) + py),
    ]


def trainer_kernel() -> list[tuple[float, Stack]]:
    return [
        (0.45, _k("clear_page_erms", "clear_huge_page", "do_huge_pmd_anonymous_page",
                  "__handle_mm_fault", "handle_mm_fault", "do_user_addr_fault",
                  "page_fault") + (("__memmove_avx_unaligned_erms", LIBC),)),
        (0.30, _k("futex_wake", "do_futex", "__x64_sys_futex") + _SYSCALL
         + (("__lll_unlock_wake", LIBC),)),
        (0.25, _k("copy_user_enhanced_fast_string", "copyout", "_copy_to_iter",
                  "ioctl") + _SYSCALL + (("ioctl", LIBC), ("[unknown]", CUDA))),
    ]


IDLE: Stack = _k("native_safe_halt", "default_idle", "arch_cpu_idle", "default_idle_call",
                 "do_idle", "cpu_startup_entry", "start_secondary", "secondary_startup_64")

_NAPI = _k("ena_clean_rx_irq", "ena_io_poll", "net_rx_action", "__do_softirq")
_GRO = _k("napi_gro_receive", "ena_clean_rx_irq", "ena_io_poll", "net_rx_action",
          "__do_softirq")
_TX = _k("ena_clean_tx_irq", "ena_io_poll", "net_rx_action", "__do_softirq")
_IRQ_EXIT = _k("irq_exit", "do_IRQ", "ret_from_intr")
_KSOFTIRQD = _k("run_ksoftirqd", "smpboot_thread_fn", "kthread", "ret_from_fork")

# NAPI work inside an interrupt, on top of whatever ran (idle or the trainer)
SOFTIRQ: list[tuple[float, Stack]] = [
    (0.4, _NAPI + _IRQ_EXIT),
    (0.35, _GRO + _IRQ_EXIT),
    (0.25, _TX + _IRQ_EXIT),
]
KSOFTIRQD: list[tuple[float, Stack]] = [
    (0.45, _NAPI + _KSOFTIRQD),
    (0.3, _k("skb_release_data", "napi_consume_skb", "ena_clean_tx_irq", "ena_io_poll",
             "net_rx_action", "__do_softirq") + _KSOFTIRQD),
    (0.25, _k("ip_rcv", "__netif_receive_skb_one_core", "process_backlog", "net_rx_action",
              "__do_softirq") + _KSOFTIRQD),
]
HARDIRQ: list[tuple[float, Stack]] = [
    (1.0, _k("ena_intr_msix_io", "__handle_irq_event_percpu", "handle_irq_event_percpu",
             "handle_irq_event", "handle_edge_irq", "do_IRQ", "ret_from_intr")),
]

RECLAIM: list[tuple[float, Stack]] = [
    (0.4, _k("shrink_page_list", "shrink_inactive_list", "shrink_node_memcg", "shrink_node",
             "do_try_to_free_pages", "try_to_free_mem_cgroup_pages", "try_charge",
             "mem_cgroup_try_charge", "__add_to_page_cache_locked", "add_to_page_cache_lru",
             "filemap_fault", "__do_fault", "__handle_mm_fault", "handle_mm_fault",
             "do_user_addr_fault", "page_fault")),
    (0.35, _k("_raw_spin_lock_irq", "shrink_inactive_list", "shrink_node_memcg", "shrink_node",
              "do_try_to_free_pages", "try_to_free_mem_cgroup_pages", "try_charge",
              "mem_cgroup_try_charge", "do_anonymous_page", "__handle_mm_fault",
              "handle_mm_fault", "do_user_addr_fault", "page_fault")),
    (0.25, _k("compaction_alloc", "migrate_pages", "compact_zone", "try_to_compact_pages",
              "__alloc_pages_direct_compact", "__alloc_pages_slowpath", "__alloc_pages_nodemask",
              "alloc_pages_vma", "do_huge_pmd_anonymous_page", "__handle_mm_fault",
              "handle_mm_fault", "do_user_addr_fault", "page_fault")),
]

JAVA_USER: list[tuple[float, Stack]] = [
    (0.6, (("Interpreter", "[unknown]"), ("[unknown]", "[unknown]"),
           ("JavaCalls::call_helper(JavaValue*, methodHandle const&, JavaCallArguments*, "
            "JavaThread*)", JVM), ("thread_native_entry(Thread*)", JVM),
           ("start_thread", LIBC))),
    (0.4, (("G1ParScanThreadState::trim_queue_partially()", JVM),
           ("G1ParEvacuateFollowersClosure::do_void()", JVM),
           ("GangWorker::loop()", JVM), ("Thread::call_run()", JVM),
           ("thread_native_entry(Thread*)", JVM), ("start_thread", LIBC))),
]

SCHED: list[tuple[float, Stack]] = [
    (0.5, _k("finish_task_switch", "__schedule", "schedule", "exit_to_usermode_loop",
             "prepare_exit_to_usermode", "swapgs_restore_regs_and_return_to_usermode")),
    (0.5, _k("pick_next_task_fair", "__schedule", "schedule", "futex_wait_queue_me",
             "futex_wait", "do_futex", "__x64_sys_futex") + _SYSCALL),
]


# Other processes that read memory.stat and so walk the memcgs: cAdvisor standalone and
# node_exporter (static Go binaries), systemd (its memory accounting), and a site's own agent
# (a Python script). Each reads through read(2) from its own user frames.
_GO_READ = (("syscall.Syscall", "{bin}"), ("syscall.read", "{bin}"),
            ("internal/poll.(*FD).Read", "{bin}"), ("os.(*File).Read", "{bin}"),
            ("io.ReadAll", "{bin}"), ("os.ReadFile", "{bin}"))
_WALKER_USER: dict[str, Stack] = {
    "cadvisor": tuple((s, "/usr/bin/cadvisor") for s, _ in _GO_READ) + (
        ("github.com/opencontainers/runc/libcontainer/cgroups/fs.getMemoryData",
         "/usr/bin/cadvisor"),
        ("github.com/google/cadvisor/container/libcontainer.(*Handler).GetStats",
         "/usr/bin/cadvisor"),
        ("github.com/google/cadvisor/manager.(*containerData).housekeepingTick",
         "/usr/bin/cadvisor"), ("runtime.goexit", "/usr/bin/cadvisor")),
    "node_exporter": tuple((s, "/bin/node_exporter") for s, _ in _GO_READ) + (
        ("github.com/prometheus/procfs/internal/util.ReadFileNoStat", "/bin/node_exporter"),
        ("github.com/prometheus/node_exporter/collector.(*cgroupsCollector).Update",
         "/bin/node_exporter"), ("runtime.goexit", "/bin/node_exporter")),
    "systemd": (("__libc_read", LIBC),
                ("read_full_virtual_file", "/lib/systemd/libsystemd-shared-245.so"),
                ("cg_get_keyed_attribute_full", "/lib/systemd/libsystemd-shared-245.so"),
                ("unit_get_memory_current", "/lib/systemd/systemd"),
                ("manager_dispatch_cgroup_realize_queue", "/lib/systemd/systemd"),
                ("main", "/lib/systemd/systemd")),
}
_AGENT_USER: Stack = (("__libc_read", LIBC), ("_Py_read", PY), ("_io_FileIO_readall", PY),
                      ("_PyEval_EvalFrameDefault", PY), ("pymain_run_python", PY),
                      ("Py_RunMain", PY), ("__libc_start_main", LIBC))

# the memory.stat read on a cgroup v2 node: rstat flushing over every memcg with updates,
# dying ones included (5.10's memory_stat_show → memory_stat_format)
_V2_KERNEL: list[tuple[float, Stack]] = [
    (0.55, _k("mem_cgroup_css_rstat_flush", "cgroup_rstat_flush_locked", "cgroup_rstat_flush",
              "mem_cgroup_flush_stats", "memory_stat_format", "memory_stat_show")),
    (0.15, _k("cgroup_rstat_flush_locked", "cgroup_rstat_flush", "mem_cgroup_flush_stats",
              "memory_stat_format", "memory_stat_show")),
    (0.15, _k("_raw_spin_lock_irqsave", "cgroup_rstat_flush_locked", "cgroup_rstat_flush",
              "mem_cgroup_flush_stats", "memory_stat_format", "memory_stat_show")),
    (0.15, _k("memcg_page_state", "memory_stat_format", "memory_stat_show")),
]
WALKER_FUNCTION_V2 = "mem_cgroup_css_rstat_flush"


def walker_stacks(comm: str, v2: bool) -> list[tuple[float, Stack]]:
    """The walk as `comm` shows it: kubelet on v1 is WALKER itself; others swap the user
    frames (and, on v2, the kernel path)."""
    if comm == "kubelet" and not v2:
        return WALKER
    user = _KUBELET_READ_USER if comm == "kubelet" else _WALKER_USER.get(comm, _AGENT_USER)
    kern = [(w, st[: len(st) - len(_READ) - len(_SYSCALL) - len(_KUBELET_READ_USER)])
            for w, st in WALKER] if not v2 else _V2_KERNEL
    return [(w, k + _READ + _SYSCALL + user) for w, k in kern]


# a neighbour's kernel work: a backup copying files through the page cache
NEIGHBOUR: list[tuple[float, Stack]] = [
    (0.5, _k("copy_user_enhanced_fast_string", "copyout", "copy_page_to_iter",
             "generic_file_buffered_read", "xfs_file_buffered_aio_read", "xfs_file_read_iter",
             "new_sync_read", "vfs_read", "ksys_read", "__x64_sys_read") + _SYSCALL
     + (("__libc_read", LIBC), ("main", "/usr/bin/restic"))),
    (0.3, _k("find_get_entry", "pagecache_get_page", "generic_file_buffered_read",
             "xfs_file_buffered_aio_read", "xfs_file_read_iter", "new_sync_read", "vfs_read",
             "ksys_read", "__x64_sys_read") + _SYSCALL
     + (("__libc_read", LIBC), ("main", "/usr/bin/restic"))),
    (0.2, _k("xas_load", "find_get_entry", "pagecache_get_page", "generic_file_buffered_read",
             "xfs_file_buffered_aio_read", "xfs_file_read_iter", "new_sync_read", "vfs_read",
             "ksys_read", "__x64_sys_read") + _SYSCALL
     + (("__libc_read", LIBC), ("main", "/usr/bin/restic"))),
]
