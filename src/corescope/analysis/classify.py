"""Kernel log line → kind, driver, device and structured fields.

Covers every variant in INCIDENT.md, matched loosely because driver versions differ. Lines it
does not know are kept as kind "other" with their driver/device prefix, never dropped. A line
with the `corescope-lab` marker is flagged lab=True and otherwise treated exactly alike.
The classifier is total: no input makes it raise.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple, Protocol

from corescope.model.events import LAB_MARKER, KernelEvent, KmsgRecord


class WallOfKernel(Protocol):
    """A kernel-clock anchor (sources.kmsg_clock.ClockAnchor): kernel usec since boot → wall."""

    def wall_of(self, usec: int) -> float: ...


class Classification(NamedTuple):
    kind: str
    driver: str | None
    device: str | None
    fields: dict[str, Any]
    lab: bool


def _int(text: str | None) -> int | None:
    if text is None:
        return None
    try:
        return int(text, 0) if text.startswith("0x") else int(text)
    except ValueError:  # e.g. more digits than int() accepts
        return None


# dev_printk / netdev_printk prefix: `DRIVER BUSID[ IFNAME]: message`, e.g.
# `ena 0000:00:05.0 eth0: `, `mlx5_core 0000:08:00.0 eth2: `, `virtio_net virtio2 eth0: `.
# The bus id must hold a digit, which keeps prose ("Out of memory: ...") out.
_PREFIX = re.compile(
    r"(?P<driver>[A-Za-z][\w.-]{0,40}) "
    r"(?P<bus>(?:[0-9a-fA-F]{4}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]"
    r"|(?=[\w.+-]{0,60}\d)[\w.+-]{1,60}(?::[\w.+-]{1,20}){0,4}?)"
    r"(?: (?P<iface>[A-Za-z][\w.@-]{0,30}))?: "
)
# `e1000e: eth0 NIC Link is Up`, and bare `eth0: ...`
_DRIVER_IFACE = re.compile(r"(?P<driver>[a-z][\w-]{0,30}): (?P<iface>[a-z][\w.@-]{0,30}) ")

# `mlx4_en: eth1: ...` (en_warn's prefix)
_DRIVER_IFACE_COLON = re.compile(
    r"(?P<driver>[a-z][\w-]{0,30}): (?P<iface>(?:eth|en|wl|ib|bond|veth|br|em|p\d)[\w.@-]{0,28}): ")

# 2.6/3.x Intel (and others') dev_printk with the netdev name in the message: `igb 0000:04:00.0:
# eth3: ...`, `e1000e 0000:00:19.0: eth0: Detected Hardware Unit Hang:`
_IFACE_AFTER = re.compile(
    r"(?P<iface>(?:eth|en|em|wl|ib|bond|vlan|br|veth|p\d|nic|lan|wan|cap|ens|enp|eno)"
    r"[\w.@-]{0,28}): ")
# bnx2x's BNX2X_ERR and qed/qede's DP_NOTICE: `bnx2x: [bnx2x_panic_dump:917(eth0)]...`,
# `[qede_tx_timeout:545(ens1f0)]TX timeout on queue 3!` (the function names the driver)
_FUNC_PREFIX = re.compile(
    r"(?:(?P<driver>[a-z][\w-]{0,30}): )?\[(?P<func>[a-z][a-z0-9]{1,15})_\w{1,60}:\d{1,6}"
    r"\((?P<iface>[\w.@-]{1,30})\)\]")

_Handler = Callable[[re.Match[str], dict[str, Any]], str | None]

# A rule whose wording any driver may print (`Device reset failed`, `resetting`, `Reset
# adapter`, `Fatal error 2 detected`, ...): its line is a NIC's only when it says it comes
# from a network device (an interface name, a NIC driver's prefix, SUBSYSTEM=net), else it
# stays "other". Storage, USB, GPU and sensor drivers print the same words (iio/light/noa1305.c
# `noa1305 1-0039: Device reset failed`), and a reset named on a healthy node is an accusation.
_ANY = "_any_driver"
# Network drivers whose reset lines are printed on the PCI (or platform) device, without the
# interface's name (dev_err(&pdev->dev, ...), mlx5_core_err, hclge's dev_info, ...)
_NIC_DRIVERS = frozenset({
    "ena", "e100", "e1000", "e1000e", "igb", "igbvf", "igc", "ixgb", "ixgbe", "ixgbevf",
    "i40e", "i40evf", "iavf", "ice", "idpf", "fm10k", "mlx4_core", "mlx4_en", "mlx5_core",
    "mlxsw_spectrum", "bnxt_en", "bnx2", "bnx2x", "tg3", "qed", "qede", "qlcnic",
    "netxen_nic", "qla3xxx", "be2net", "cxgb3", "cxgb4", "cxgb4vf", "enic", "sfc",
    "sfc_ef100", "sfc_falcon", "sfc_siena", "nfp", "hns3", "hclge", "hclgevf", "hns",
    "hibmcge", "gve", "vmxnet3", "virtio_net", "hv_netvsc", "mana", "ionic", "liquidio",
    "r8169", "r8125", "r8152", "8139too", "8139cp", "atlantic", "alx", "atl1c", "atl1e",
    "stmmaceth", "stmmac", "sh_eth", "ravb", "fec", "mvneta", "mvpp2", "macb", "bcmgenet",
    "lan743x", "sky2", "skge", "forcedeth", "pcnet32", "tulip", "natsemi", "ngbe", "txgbe",
    "wx", "mtk_soc_eth", "xen_netfront", "ibmveth", "ibmvnic", "enetc", "fsl_dpaa2_eth",
    "octeon_ep", "rvu_nicpf", "rvu_nicvf", "tsnep", "ax88179_178a", "cdc_ether", "asix",
    "smsc95xx", "lan78xx",
})


def _from_network(driver: str | None, fields: Mapping[str, Any], head: str,
                  meta: Mapping[str, str] | None) -> bool:
    if "iface" in fields or _DRIVER_IFACE_COLON.match(head):
        return True
    if meta and meta.get("SUBSYSTEM") == "net":
        return True
    return driver is not None and driver.lower() in _NIC_DRIVERS


def _g(m: re.Match[str], name: str) -> str | None:
    try:
        return m.group(name)
    except IndexError:
        return None



# Each rule: kind, pattern, extra fields. Order matters: the first match wins. Patterns follow
# the drivers' format strings (each names its source), loosely where releases differ.
_RULES: list[tuple[str, re.Pattern[str], dict[str, Any]]] = [
    # --- ENA TX completion stalls (amazon/ena/ena_netdev.c) -------------------------------
    ("nic_tx_stall", re.compile(
        r"TX q (?P<queue>\d+) is paused for too long \(threshold (?P<threshold_usec>\d+)\)"
        r"(?:\. Time since last napi (?P<usecs_since_napi>\d+) usec)?"
        r"(?:\. napi scheduled: (?P<napi_scheduled>\d+))?"
        r"(?:.{0,40}?\bcpu:? ?(?P<napi_cpu>\d+))?", re.I), {"signal": "tx_queue_paused"}),
    ("nic_tx_stall", re.compile(
        r"Found a Tx that wasn't completed on time, qid (?P<queue>\d+), index (?P<index>\d+)"
        r"(?:\. (?P<usecs_since_napi>\d+) usecs have passed since last napi execution)?"
        r"(?:\. (?P<msecs_since_napi>\d+) msecs have passed since last napi execution)?"
        r"(?:.{0,20}?(?P<msecs_since_irq>\d+) msecs since last interrupt)?"
        r"(?:.{0,20}?(?P<msecs_since_napi2>\d+) msecs since last napi execution)?"
        r"(?:.{0,20}?Napi scheduled: (?P<napi_scheduled>\d+))?"
        r"(?:.{0,20}?Missing Tx timeout value (?P<missing_tx_timeout_ms>\d+) msecs)?"
        r"(?:.{0,20}?Missing Tx outstanding for (?P<outstanding_ms>\d+) msecs)?", re.I),
     {"signal": "missing_tx_cmpl"}),
    ("nic_tx_stall", re.compile(
        r"TX hasn't completed, qid (?P<queue>\d+), index (?P<index>\d+)"
        r"(?:\. (?P<usecs_since_napi>\d+) usecs from last napi execution)?"
        r"(?:.{0,20}?(?P<msecs_since_irq>\d+) msecs since last interrupt)?"
        r"(?:.{0,20}?(?P<msecs_since_napi>\d+) msecs since last napi execution)?"
        r"(?:, napi scheduled: (?P<napi_scheduled>\d+))?", re.I), {"signal": "missing_tx_cmpl"}),
    ("nic_tx_stall", re.compile(
        r"(?:The number of lost tx completions? is above the threshold"
        r"|Lost TX completions are above (?:the )?threshold) "
        r"\((?P<missed_tx>\d+) > (?P<threshold>\d+)\)"
        r"(?:\. Completion transmission timeout: (?P<completion_timeout_ms>\d+))?", re.I),
     {"signal": "lost_tx_cmpl_threshold"}),
    ("nic_tx_stall",
     re.compile(r"napi handler hasn't been called for a long time but is scheduled"),
     {"signal": "suspected_poll_starvation"}),
    # Intel: e1000/igb/igc/ixgbe `Detected Tx Unit Hang`, e1000e `Detected Hardware Unit
    # Hang:`; the queue is in a further line of the same message (or of the report)
    ("nic_tx_stall", re.compile(
        r"Detected (?:Tx|Hardware) Unit Hang(?: \(XDP\))?:?"
        r"(?:.{0,40}?Tx Queue\s+<(?P<queue>\d+)>)?", re.S | re.I), {"signal": "tx_unit_hang"}),
    # --- resets ---------------------------------------------------------------------------
    ("nic_reset", re.compile(r"Trigger reset is on(?: with reason: (?P<reason>\d+))?"),
     {"stage": "trigger"}),
    # ixgbe_tx_timeout_reset / ixgbe_check_tx_hang
    ("nic_reset", re.compile(
        r"tx hang (?P<hang_count>\d+) detected on queue (?P<queue>\d+), resetting adapter"),
     {"stage": "trigger"}),
    ("nic_reset", re.compile(r"initiating reset (?:due to|to clear) (?:tx timeout|Tx work after "
                             r"link loss)", re.I), {"stage": "trigger"}),
    # i40e/ice i40e_tx_timeout: the recovery level decides the reset (PF, core, global)
    ("nic_reset", re.compile(
        r"tx_timeout recovery level (?P<recovery_level>\d+)"
        r"(?:, (?:txqueue|hung_queue) (?P<queue>\d+))?"), {"stage": "trigger"}),
    ("nic_reset", re.compile(r"tx_timeout recovery unsuccessful"), {"stage": "failed"}),
    # i40e/ice i40e_handle_mdd_event: malicious driver detection, the PF or the VF is reset
    # (`TX driver issue detected, PF reset issued`, `... on PF`, `... on VF 3`)
    ("nic_reset", re.compile(r"TX driver issue detected\b"), {"stage": "trigger", "signal": "mdd"}),
    # iavf/i40evf: the PF resets the VF (iavf_virtchnl.c, iavf_main.c iavf_watchdog_task /
    # iavf_reset_task)
    ("nic_reset", re.compile(r"Reset (?:indication|warning) received from the PF"),
     {"stage": "trigger", "signal": "pf_reset"}),
    ("nic_reset", re.compile(r"Hardware reset detected$"), {"stage": "resetting", _ANY: True}),
    ("nic_reset", re.compile(r"Reset never finished"),
     {"stage": "failed", _ANY: True}),
    # hns3 hclge_reset_event: `received reset event, reset type is 5`, then `PF reset requested`
    ("nic_reset", re.compile(r"received reset event, reset type is (?P<reset_level>\d+)"),
     {"stage": "trigger"}),
    ("nic_reset", re.compile(r"^(?:\S+ \S+: )?(?:PF|VF|FLR|global|IMP|FUNC|core) reset requested$"),
     {"stage": "resetting"}),
    # bnx2x bnx2x_panic_dump (after a TX timeout or a driver assert): recovery follows
    ("nic_reset", re.compile(r"\]begin crash dump -{4,}"),
     {"stage": "trigger", "signal": "crash_dump"}),
    # mlx5 health.c / mlx4 catas.c: a fatal device state and its recovery
    ("nic_reset", re.compile(
        r"device's health compromised|Fatal error (?P<fatal_error>\d+) detected"
        r"|Internal error detected|Firmware (?:non-)?fatal reset event received"
        r"|Detected firmware fatal condition"),
     {"stage": "trigger", "signal": "health", _ANY: True}),
    ("nic_reset", re.compile(
        r"handling bad device here|starting health recovery flow|device is going to be reset"
        r"|Performing reset\b"), {"stage": "resetting", _ANY: True}),
    ("nic_reset", re.compile(r"health recovery succeeded|device was reset successfully"),
     {"stage": "completed", _ANY: True}),
    ("nic_reset", re.compile(r"health recovery (?:flow aborted|failed)|Reset failed!"),
     {"stage": "failed", _ANY: True}),
    ("nic_reset", re.compile(r"Resetting the device"), {"stage": "resetting", _ANY: True}),
    # e1000/e1000e/igb/igc/ixgbe *_reset_task: `Reset adapter` (e1000e: `... unexpectedly`);
    # stmmac/wx stmmac_reset_subtask: `Reset adapter.`; vmxnet3_reset_work: `resetting`;
    # sfc efx_reset: `resetting (TX_WATCHDOG)`; be2net be_tx_timeout: `Resetting adapter`
    ("nic_reset", re.compile(
        r"(?:^|: )(?:Reset adapter(?: unexpectedly)?\.?|Resetting adapter"
        r"|resetting(?: \((?P<reset_type>[A-Z][A-Z0-9_ ]{0,30})\))?)\s*$"),
     {"stage": "resetting", _ANY: True}),
    ("nic_reset", re.compile(
        r"Device reset completed successfully(?:, Driver info: (?P<driver_info>[^\n\[]{0,120}))?",
        re.I), {"stage": "completed", _ANY: True}),
    ("nic_reset",
     re.compile(r"(?:Reset attempt failed|Device reset failed|Can not reset the device"
                r"|Reset indication didn't turn off|Can't reset secondary PCI bus"
                r"|rtl_chipcmd_cond == 1 \(loop"
                # sfc efx_reset, be2net be_tx_timeout, cxgb4 t4_fatal_err
                r"|(?:^|: )failed to reset hardware|Reset failed \.\. Reboot server"
                r"|encountered fatal error, adapter stopped)"),
     {"stage": "failed", _ANY: True}),
    # --- keep-alive -----------------------------------------------------------------------
    ("nic_keepalive_timeout", re.compile(r"Keep alive watchdog timeout"), {}),
    # --- TX watchdog (net/sched/sch_generic.c dev_watchdog, 2.6.18 to 6.x) ----------------
    ("nic_tx_timeout", re.compile(
        r"NETDEV WATCHDOG: CPU: (?P<cpu>\d+): transmit queue (?P<queue>\d+) timed out"
        r"(?: (?P<timeout_ms>\d+) ms)?"), {"format": "netdev_watchdog_v3"}),
    ("nic_tx_timeout", re.compile(
        r"NETDEV WATCHDOG: (?P<wd_iface>[^\s(:]{1,40})(?: \((?P<wd_driver>[^)\s]{0,40})\))?: "
        r"transmit (?:queue (?P<queue>\d+) )?timed out(?: (?P<timeout_ms>\d+) ms)?"),
     {"format": "netdev_watchdog"}),
    # drivers' ndo_tx_timeout: mlx4/mlx5/virtio_net `TX timeout on queue: N, ...`
    ("nic_tx_timeout", re.compile(
        r"TX timeout on queue:? (?P<queue>\d+)"
        r"(?:, SQ: (?P<sq>0x[0-9a-fA-F]+))?(?:, CQ: (?P<cq>0x[0-9a-fA-F]+))?"
        r"(?:, SQ Cons: (?P<sq_cons>0x[0-9a-fA-F]+))?(?: SQ Prod: (?P<sq_prod>0x[0-9a-fA-F]+))?"
        r"(?:, usecs since last trans: (?P<usecs_since_last_trans>\d+))?"
        r"(?:.{0,80}?(?P<usecs_ago>\d+) usecs ago)?", re.I), {"format": "driver_tx_timeout"}),
    ("nic_tx_timeout", re.compile(r"TX timeout on invalid queue (?P<queue>\d+)"),
     {"format": "driver_tx_timeout"}),
    # i40e/ice i40e_tx_timeout: `tx_timeout: VSI_seid: 390, Q 6, ...` (`VSI_num` in ice)
    ("nic_tx_timeout", re.compile(
        r"tx_timeout: VSI_(?:seid|num): (?P<vsi>\d+), Q (?P<queue>\d+)"),
     {"format": "driver_tx_timeout"}),
    # gve_tx_timeout: `Timeout on tx queue, N` then `Kicking queue N`
    ("nic_tx_timeout", re.compile(r"Timeout on tx queue, (?P<queue>\d+)|Kicking queue (?P<kq>\d+)"),
     {"format": "driver_tx_timeout"}),
    # nfp_net_tx_timeout (`TX watchdog timeout on ring: 3`; 4.x: `TX timeout on ring: 3`),
    # hns3_get_tx_timeo_queue_info, sfc efx_watchdog
    ("nic_tx_timeout", re.compile(
        r"TX (?:watchdog )?timeout on ring: (?P<queue>\d+)"
        r"|tx_timeout count: (?P<timeout_count>\d+), queue id: (?P<kq>\d+)"
        r"|TX stuck with port_enabled=\d: resetting channels"), {"format": "driver_tx_timeout"}),
    # bnxt `TX timeout detected, starting reset task!`, mlx5 `TX timeout detected`, ENA
    # `Transmit time out`, tg3 `transmit timed out, resetting`, vmxnet3 `tx hang`, ixgbe's
    # `Fake Tx hang detected`
    ("nic_tx_timeout", re.compile(
        # old drivers' own `transmit timed out, status 07fb, resetting` (pcnet32, tulip,
        # natsemi, mtk_eth_soc ...)
        r"TX timeout detected|Transmit time ?out\b|\btransmit timed out\b"
        r"|(?:^|: )tx hang\s*$|Fake Tx hang detected(?: with timeout of (?P<timeout_s>\d+))?"
        # sky2/atl1c/8139too/... `tx timeout`, e100's `e100_tx_timeout: scb.status=...`
        r"|(?:^|: |\])tx timeout\b(?!:? ?\d)|\b[a-z]\w{0,20}?_tx_timeout(?:_task)?\b(?!: \d+\s*$)",
        re.I), {"format": "driver_tx_timeout"}),
    # --- CPU stalls -----------------------------------------------------------------------
    ("soft_lockup", re.compile(
        r"BUG: soft lockup - CPU#(?P<cpu>\d+) stuck for (?P<seconds>\d+)s! "
        r"\[(?P<comm>[^\]\n]{0,64}):(?P<pid>\d+)\]"), {}),
    ("soft_lockup", re.compile(r"BUG: soft lockup - CPU#(?P<cpu>\d+) stuck for (?P<seconds>\d+)s"),
     {}),
    ("soft_lockup", re.compile(r"BUG: soft lockup detected on CPU#(?P<cpu>\d+)"), {}),
    ("soft_lockup", re.compile(r"Kernel panic - not syncing: softlockup: hung tasks"),
     {"panic": True}),
    ("hard_lockup", re.compile(
        r"Kernel panic - not syncing: (?:Hard LOCKUP|Watchdog detected hard LOCKUP on cpu "
        r"(?P<cpu>\d+))", re.I), {"panic": True}),
    ("hard_lockup", re.compile(r"Watchdog detected hard LOCKUP on cpu (?P<cpu>\d+)", re.I), {}),
    ("hard_lockup", re.compile(r"Watchdog CPU:\s?(?P<cpu>\d+) Hard LOCKUP", re.I), {}),
    # 2.6.x arch/x86/kernel/nmi.c die_nmi: `NMI Watchdog detected LOCKUP on CPU 3`
    ("hard_lockup", re.compile(r"NMI Watchdog detected LOCKUP on CPU ?(?P<cpu>\d+)"), {}),
    # powerpc's watchdog
    ("hard_lockup", re.compile(r"CPU (?P<cpu>\d+) self-detected hard LOCKUP"), {}),
    ("hard_lockup", re.compile(r"CPU (?P<by>\d+) detected hard LOCKUP on other CPUs "
                               r"(?P<cpus>[\d,-]{1,200})"), {}),
    ("rcu_stall", re.compile(
        r"INFO: (?P<flavor>rcu_\w{1,20}|rcu) (?P<variant>self-detected stall on CPU"
        r"|detected expedited stalls on CPUs/tasks|detected stalls on CPUs/tasks"
        r"|detected stalls on tasks)"
        r"(?::?\s*\{(?P<cpus>[^}]{0,200})\})?"
        r"(?:.{0,40}?detected by (?P<detected_by>\d+))?(?:.{0,40}?t=(?P<jiffies>\d+) jiffies)?"),
     {}),
    # 2.6.3x-3.x: `INFO: rcu_sched_state detected stall on CPU 3 (t=15000 jiffies)`,
    # 2.6.32: `INFO: RCU detected CPU 2 stall (t=4295098340/10000 jiffies)`
    ("rcu_stall", re.compile(
        r"INFO: (?P<flavor>rcu_\w{1,20}|rcu) (?P<variant>detected stall) on CPU (?P<cpus>\d+)"
        r"(?:.{0,10}?t=(?P<jiffies>\d+) jiffies)?"), {}),
    ("rcu_stall", re.compile(
        r"INFO: (?P<flavor>RCU) detected CPU (?P<cpus>\d+) stall"
        r"(?: \(t=\d+/(?P<jiffies>\d+) jiffies\))?"), {}),
    ("rcu_stall", re.compile(r"(?P<flavor>rcu_\w{1,20}) kthread starved for "
                             r"(?P<starved_jiffies>\d+) jiffies"), {"variant": "kthread starved"}),
    ("hung_task", re.compile(r"Kernel panic - not syncing: hung_task: blocked tasks"),
     {"panic": True}),
    ("hung_task", re.compile(
        r"INFO: task (?P<comm>[^\n]{0,64}?):(?P<pid>\d+) blocked for more than "
        r"(?P<seconds>\d+) seconds"), {}),
    # --- memory (mm/oom_kill.c: EL5's `Killed process N, UID U, (comm)`, EL6's `Killed
    # process N, UID U, (comm) total-vm:...`, EL7's `Killed process N (comm), UID U, ...`, 4.x
    # `Kill process N (comm) score S or sacrifice child`, 5.x+ `Killed process N (comm) ...,
    # UID:U pgtables:...`, and dump_oom_summary's `oom-kill:constraint=...` line) ----------
    ("oom_kill", re.compile(
        r"(?:(?P<scope>Memory cgroup out of memory|Out of memory(?: \(oom_kill_allocating_task\))?)"
        r": )?(?P<verb>Kill(?:ed)?) process (?P<pid>\d+)(?:, UID (?P<uid>\d+),)? "
        # a comm may hold parentheses: `((resolved))`
        r"\((?P<comm>(?:[^()\n]|\([^()\n]{0,60}\)){0,64})\)"
        r"(?:,? UID (?P<uid2>\d+),?)?"
        r"(?:.{0,40}?score (?P<score>\d+))?"
        r"(?: or (?:sacrifice child|a child))?"
        r"(?:.{0,20}?total-vm:(?P<total_vm_kb>\d+)kB)?(?:, anon-rss:(?P<anon_rss_kb>\d+)kB)?"
        r"(?:, file-rss:(?P<file_rss_kb>\d+)kB)?(?:, shmem-rss:(?P<shmem_rss_kb>\d+)kB)?"
        r"(?:,? UID:(?P<uid3>\d+))?(?: pgtables:(?P<pgtables_kb>\d+)kB)?"
        r"(?: oom_score_adj:(?P<oom_score_adj>-?\d+))?", re.I), {}),
    ("oom_kill", re.compile(r"oom-kill:(?P<oom_summary>constraint=\S{0,2000})"), {}),
    # --- hardware -------------------------------------------------------------------------
    ("hw_error", re.compile(
        r"EDAC (?:(?P<edac_driver>\w{1,20}) )?MC(?P<mc>\d+): (?P<count>\d+) (?P<severity>CE|UE)\b"),
     {"source": "edac"}),
    ("hw_error", re.compile(r"EDAC (?:\w{1,20} )?MC(?P<mc>\d+): HANDLING MCE MEMORY ERROR"),
     {"source": "edac"}),
    ("hw_error", re.compile(
        r"EDAC (?:\w{1,20} )?MC(?P<mc>\d+): CPU (?P<cpu>\d+): Machine Check (?:Event|Exception):"
        r" (?P<mcg_status>[0-9a-fA-F]+) Bank (?P<bank>\d+): (?P<status>[0-9a-fA-F]+)"),
     {"source": "edac"}),
    ("hw_error", re.compile(
        r"mce: \[Hardware Error\]:(?: CPU (?P<cpu>\d+): Machine Check(?: Exception| Event)?: "
        r"(?P<mcg_status>[0-9a-fA-F]+) Bank (?P<bank>\d+): (?P<status>[0-9a-fA-F]+))?"),
     {"source": "mce"}),
    ("hw_error", re.compile(r"Kernel panic - not syncing: Fatal [Mm]achine check"),
     {"source": "mce", "panic": True}),
    ("hw_error", re.compile(r"\[Hardware Error\]:(?: CPU:(?P<cpu>\d+) \()?"), {"source": "apei"}),
    # --- link -----------------------------------------------------------------------------
    ("link_up", re.compile(
        r"ADDRCONF\(NETDEV_(?:UP|CHANGE)\): (?P<iface>[\w.@-]{1,30}): link becomes ready"), {}),
    ("link_down", re.compile(r"\b(?:NIC )?Link is Down\b|\bLink down\b", re.I), {}),
    ("link_up", re.compile(r"\b(?:NIC )?Link is Up\b|\bLink up\b|link becomes ready", re.I), {}),
    ("link_down", re.compile(r"link status definitely down for interface (?P<iface>[\w.@-]+)"), {}),
    ("link_up", re.compile(r"link status definitely up for interface (?P<iface>[\w.@-]+)"), {}),
]

# A cheap first pass over the lower-cased line: plain substring tests, several times faster
# than one regex alternation in Python's engine. Almost every real log line fails all of them.
_KEYWORDS: tuple[str, ...] = (
    "paused for too long", "completed", "lost tx", "napi handler", "unit hang", "reset",
    "keep alive", "watchdog", "tx timeout", "transmit time", "lockup", "info: ",
    "out of memory", "hardware error", "edac", "link", "tx_timeout", "tx hang", "health",
    "internal error", "tx queue", "kicking queue", "killed process", "kill process", "oom-kill:",
    "kthread starved", "machine check", "performing reset", "transmit timed out", "resetting",
    "reset indication", "chipcmd", "driver issue", "crash dump", "tx stuck", "fatal error",
    "reset warning", "reset never", "reset requested", "not syncing",
)

# userland daemons whose lines may stand in a pasted log without their syslog stamp: never
# kernel events (`netifd: Network device 'eth0' link is up`)
_USERLAND = re.compile(
    r"^(?:netifd|NetworkManager|systemd(?:-[\w-]+)?|dhclient|dhcpcd|wpa_supplicant|hostapd"
    r"|avahi-daemon|ModemManager|udhcpc|odhcpd|dnsmasq|connmand|networkd-dispatcher|ifplugd"
    r"|kubelet|containerd|dockerd|procd|ubusd)(?:\[\d+\])?: ")


def _prefilter(message: str) -> bool:
    low = message.lower()
    for k in _KEYWORDS:  # noqa: SIM110 - a generator in any() costs more than the tests
        if k in low:
            return True
    return False


_STRINGY = {"comm", "reason_text", "driver_info", "flavor", "variant", "scope", "severity",
            "sq", "cq", "sq_cons", "sq_prod", "mcg_status", "status", "edac_driver",
            "wd_iface", "wd_driver", "iface", "cpus", "verb", "oom_summary", "reset_type"}


def classify(message: str, meta: Mapping[str, str] | None = None) -> Classification:
    """Classify one kernel log message (continuation KEY=value pairs in `meta`)."""
    if not isinstance(message, str):
        message = str(message)
    lab = LAB_MARKER in message
    head = message[:300]
    driver: str | None = None
    device: str | None = None
    fields: dict[str, Any] = {}
    pm = _PREFIX.match(head)
    if pm:
        driver, device = pm.group("driver"), pm.group("bus")
        if pm.group("iface"):
            fields["iface"] = pm.group("iface")
        elif (im := _IFACE_AFTER.match(head, pm.end())) is not None:
            fields["iface"] = im.group("iface")
    elif (fm := _FUNC_PREFIX.match(head)) is not None:
        driver = fm.group("driver") or fm.group("func")
        fields["iface"] = fm.group("iface")
    kind = "other"
    if _prefilter(message) and not _USERLAND.match(message):
        for rule_kind, pattern, extra in _RULES:
            m = pattern.search(message)
            if m is None:
                continue
            if extra.get(_ANY) and not _from_network(driver, fields, head, meta):
                break  # another subsystem's reset: "other"
            kind = rule_kind
            fields.update({k: v for k, v in extra.items() if k != _ANY})
            for name, value in m.groupdict().items():
                if value is None:
                    continue
                if name in _STRINGY:
                    fields[name] = value.strip()
                else:
                    v = _int(value)
                    if v is not None:
                        fields[name] = v
            break
    # NETDEV WATCHDOG's old format names the interface and driver in the text itself
    wd_iface = fields.pop("wd_iface", None)
    wd_driver = fields.pop("wd_driver", None)
    if wd_iface:
        fields.setdefault("iface", wd_iface)
    if wd_driver and driver is None:
        driver = wd_driver
    if isinstance(fields.get("cpus"), str):
        fields["cpus"] = cpu_list(fields["cpus"])
    _tidy(kind, fields)
    if kind != "other" and "iface" not in fields:
        # `mlx4_en: eth1: TX timeout ...`, `e1000e: eth0 NIC Link is Up`
        dm = _DRIVER_IFACE_COLON.match(head) or (
            _DRIVER_IFACE.match(head) if kind in ("link_up", "link_down") else None)
        if dm:
            driver = driver or dm.group("driver")
            fields["iface"] = dm.group("iface")
    if device is None and meta:
        dev = meta.get("DEVICE")
        if dev:
            # `+pci:0000:00:05.0` → 0000:00:05.0; `n2` (netdev ifindex) is kept as is
            device = dev.split(":", 1)[1] if dev.startswith("+") and ":" in dev else dev
    return Classification(kind, driver, device, fields, lab)


def cpu_list(text: str) -> list[int]:
    """`{ 3 5}`, `3-5,7`, `{ 3-... 5-.... }` → [3, 5], [3, 4, 5, 7], [3, 5] (at most 64)."""
    out: list[int] = []
    for m in re.finditer(r"(\d{1,5})(?:-(\d{1,5})\b(?!\.))?", text):
        lo = int(m.group(1))
        hi = int(m.group(2)) if m.group(2) else lo
        out.extend(range(lo, min(hi, lo + 63) + 1))
        if len(out) >= 64:
            break
    return out[:64]


# dump_oom_summary's `key=value` list (values hold no `,KEY=`; mems_allowed may hold commas)
_OOM_KV = re.compile(r"(?:^|,)(\w{1,20})=(.*?)(?=,\w{1,20}=|,global_oom\b|,\w{1,20}$|$)")
# a container's id in a cgroup path: `docker-<id>.scope`, `cri-containerd-<id>.scope`,
# `crio-<id>`, `libpod-<id>`, or a bare 64-hex path element (cgroupfs driver)
_CONTAINER = re.compile(r"(?:^|[/-])(?:docker|cri-containerd|crio|containerd|libpod)?-?"
                        r"([0-9a-f]{64})(?:\.scope)?/?$")


def container_of(cgroup: str) -> str | None:
    m = _CONTAINER.search(cgroup)
    return m.group(1) if m else None


def _tidy(kind: str, fields: dict[str, Any]) -> None:
    """Fields named once whatever the release's wording: one `uid`, one `queue`, the OOM
    summary's keys, the container a cgroup path names."""
    for alt, name in (("uid2", "uid"), ("uid3", "uid"), ("kq", "queue"),
                      ("msecs_since_napi2", "msecs_since_napi")):
        if alt in fields:
            fields.setdefault(name, fields.pop(alt))
    if kind != "oom_kill":
        return
    summary = fields.pop("oom_summary", None)
    if summary:
        kv = {k: v for k, v in _OOM_KV.findall(summary)}
        for key, name in (("constraint", "constraint"), ("cpuset", "cpuset"),
                          ("oom_memcg", "oom_memcg"), ("task_memcg", "cgroup"),
                          ("task", "comm")):
            if kv.get(key):
                fields[name] = kv[key]
        for key in ("pid", "uid"):
            v = _int(kv.get(key))
            if v is not None:
                fields[key] = v
    verb = fields.pop("verb", None)
    if isinstance(verb, str) and verb.lower() == "kill":
        fields["selected_pid"] = fields.get("pid")  # chosen; `Killed process` names the victim
    cg = fields.get("cgroup")
    if isinstance(cg, str) and (cid := container_of(cg)):
        fields["container_id"] = cid


def classify_record(rec: KmsgRecord, wall: float) -> KernelEvent:
    c = classify(rec.message, rec.dict_)
    if rec.dict_ and (n := _int(rec.dict_.get("REPEATED"))) is not None:
        c.fields["repeated"] = n  # a syslog daemon's repeat line: N more of this message
    return KernelEvent(
        time=wall, kind=c.kind, raw=rec.message, driver=c.driver, device=c.device,
        fields=c.fields, lab=c.lab, mono_usec=rec.usec, seq=rec.seq, level=rec.level,
        source=rec.source,
    )


def grep_patterns() -> list[str]:
    """The rule patterns as POSIX ERE (GNU grep -E), for the `grep -E` peer in
    bench/classify_throughput.py: same alternatives, groups unnamed, lazy quantifiers greedy
    (same lines match), case-insensitive rules spelled out as [xX]."""
    return [_to_ere(p.pattern, bool(p.flags & re.I)) for _, p, _ in _RULES]


_CLASS = {"d": ("[0-9]", "0-9"), "w": ("[[:alnum:]_]", "[:alnum:]_"),
          "s": ("[[:space:]]", "[:space:]"), "n": ("", "")}


def _to_ere(pat: str, icase: bool) -> str:
    out: list[str] = []
    i = 0
    while i < len(pat):
        ch = pat[i]
        if ch == "\\" and i + 1 < len(pat):
            nxt = pat[i + 1]
            out.append(_CLASS[nxt][0] if nxt in _CLASS else ch + nxt)
            i += 2
            continue
        if ch == "[":
            i, text = _bracket(pat, i)
            out.append(text)
            continue
        if ch == "(" and pat.startswith("(?P<", i):
            out.append("(")
            i = pat.index(">", i) + 1
            continue
        if ch == "(" and pat.startswith("(?:", i):
            out.append("(")
            i += 3
            continue
        if ch == "?" and out and out[-1] and out[-1][-1] in "*+?}":
            i += 1  # lazy → greedy: the same lines match
            continue
        out.append(f"[{ch.lower()}{ch.upper()}]" if icase and ch.isalpha() else ch)
        i += 1
    return "".join(out)


def _bracket(pat: str, i: int) -> tuple[int, str]:
    """A Python character class → POSIX: `]` literal first, `\\n` dropped (grep is per line),
    `\\d`/`\\w`/`\\s` as named classes."""
    i += 1
    neg = pat[i:i + 1] == "^"
    if neg:
        i += 1
    items: list[str] = []
    close = False
    while i < len(pat):
        ch = pat[i]
        if ch == "]":
            i += 1
            break
        if ch == "\\" and i + 1 < len(pat):
            nxt = pat[i + 1]
            if nxt == "]":
                close = True
            elif nxt in _CLASS:
                items.append(_CLASS[nxt][1])
            else:
                items.append(nxt)
            i += 2
            continue
        items.append(ch)
        i += 1
    body = ("]" if close else "") + "".join(items)
    if not body:
        return i, "." if neg else ""
    return i, "[" + ("^" if neg else "") + body + "]"


def classify_saved_log(records: Sequence[KmsgRecord], anchor: WallOfKernel
                       ) -> tuple[list[KernelEvent], str]:
    """Classified events of a saved log on the wall clock, numbered from 1, and how their
    times were set. Each line keeps the wall clock it prints; one with only the kernel's
    since-boot stamp is placed by the log's own lines that print both (kern.log), else as
    this machine's boot. A log of several boots (the since-boot stamps start again,
    analysis.boots) places only its last boot so; an earlier boot's since-boot lines are
    placed by that boot's own lines (its kern.log stamps, its RTC line), and left out, and
    said, when it has none. The one rule for a record without a clock of its own: it happened
    after the record before it, so it takes that record's time (or the next one's, at the
    top); in a log with no timestamps at all, every line is placed at boot time, and said so.
    The lines of one multi-line report (a machine check, an Intel TX hang's register dump,
    an RCU stall's CPU lines, an OOM kill) become one event (analysis.reports)."""
    from corescope.analysis.boots import Boots

    walls: list[float | None] = []
    clock = "the log's own wall clock"
    boots = Boots()
    boot_of = [boots.feed(r) for r in records]
    last = boots.count - 1
    own = boots.offset(last, rtc=False)  # the last boot's, by its own lines (kern.log)
    earlier: list[float | None] = [boots.offset(b) for b in range(last)]
    keep: list[bool] = []
    lost = 0
    for r, b in zip(records, boot_of, strict=True):
        keep.append(True)
        if r.wall is not None:
            walls.append(r.wall)
        elif r.usec is not None and b < last:
            off = earlier[b]
            walls.append(None if off is None else off + r.usec / 1e6)
            if off is None:
                keep[-1] = False
                lost += 1
        elif r.usec is not None:
            if own is not None:
                walls.append(own + r.usec / 1e6)
                clock = "the log's own wall clock (its since-boot stamps by its syslog stamps)"
            else:
                # a dmesg log carries only time since boot: read it as this boot's
                walls.append(anchor.wall_of(r.usec))
                clock = "kernel time since boot, anchored to this machine's current boot"
        else:
            walls.append(None)
    known = [w for w in walls if w is not None]
    if not known and walls:
        clock = "none in the log: every line is placed at this machine's boot time"
    if last:
        placed = sum(1 for off in earlier if off is not None)
        clock += (f"; the log holds {last + 1} boots (its since-boot stamps start again "
                  f"{last} times): the last is placed so")
        if placed:
            clock += (f", {placed} earlier by their own lines (kern.log stamps, the RTC's "
                      "`setting system clock to`)")
        if lost:
            n = last - placed
            clock += (f"; {lost} lines of {n} earlier boot{'s' if n > 1 else ''} print only "
                      "since-boot stamps and nothing places their boot: left out")
    prev = known[0] if known else anchor.wall_of(0)
    out = []
    for r, w, k in zip(records, walls, keep, strict=True):
        prev = w if w is not None else prev
        if k:
            out.append(classify_record(r, prev))
    from corescope.analysis.reports import join_reports

    joined = join_reports(out)
    return [dataclasses.replace(e, id=i) for i, e in enumerate(joined, 1)], clock
