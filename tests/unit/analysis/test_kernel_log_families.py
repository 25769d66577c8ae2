"""Kernel log breadth and saved-log forms, as `events --file` reads them: a table of excerpts
-> the incident events expected (kind and the fields a reader sees), one row per family and
driver wording and per saved form.

Every excerpt is written here, in the exact form the kernel or the tool prints it; each row
names where that wording comes from (the driver source file and function whose format string
prints it, or the tool and option that writes the form). Stamps, addresses and numbers are
made up. Rows check the events that are incidents (kind other than "other" and "link_up"
when `links` is not asked for), in order, and only the fields they name (new fields are
additive).
"""

from __future__ import annotations

from typing import Any

import pytest

from support.kernel_logs import incidents

# a containerd container id
_CID = "4c2ab0f9e0c1d2e3f4a5b6c7d8e9f0a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d6e7"

# (id, origin, excerpt, [(kind, {field: value})])
Row = tuple[str, str, str, list[tuple[str, dict[str, Any]]]]

NIC: list[Row] = [
    ("ena-missing-tx-old", "amazon/ena/ena_netdev.c check_missing_comp_in_tx_queue (2.x)",
     "[ 5012.123456] ena 0000:00:05.0 eth0: Found a Tx that wasn't completed on time, qid 3, "
     "index 212.\n",
     [("nic_tx_stall", {"queue": 3, "iface": "eth0"})]),
    ("ena-tx-hasnt-completed", "amazon/ena/ena_netdev.c (6.x)",
     "[ 5012.123456] ena 0000:00:05.0 eth0: TX hasn't completed, qid 3, index 212. 2612000 "
     "usecs from last napi execution, napi scheduled: 1\n",
     [("nic_tx_stall", {"queue": 3, "usecs_since_napi": 2612000, "napi_scheduled": 1})]),
    ("ena-lost-threshold", "amazon/ena/ena_netdev.c check_missing_comp_in_tx_queue",
     "[ 5013.0] ena 0000:00:05.0 eth0: The number of lost tx completions is above the "
     "threshold (129 > 128). Reset the device\n",
     [("nic_tx_stall", {"missed_tx": 129, "threshold": 128})]),
    ("ena-keepalive", "amazon/ena/ena_netdev.c check_for_missing_keep_alive",
     "[ 6000.000001] ena 0000:00:05.0 eth0: Keep alive watchdog timeout.\n",
     [("nic_keepalive_timeout", {"iface": "eth0"})]),
    ("e1000e-hw-hang-indented", "intel/e1000e/netdev.c e1000_print_hw_hang (dmesg: one record)",
     "[  386.040283] e1000e 0000:00:19.0 enp0s25: Detected Hardware Unit Hang:\n"
     "                  TDH                  <b>\n"
     "                  TDT                  <e>\n"
     "                  next_to_use          <e>\n"
     "                  next_to_clean        <9>\n"
     "                buffer_info[next_to_clean]:\n"
     "                  time_stamp           <10000a3b1>\n"
     "                  next_to_watch        <b>\n"
     "                  jiffies              <10000a5c0>\n"
     "                  next_to_watch.status <0>\n"
     "                MAC Status             <40080083>\n"
     "                PHY Status             <796d>\n"
     "                PHY 1000BASE-T Status  <3800>\n"
     "                PHY Extended Status    <3000>\n"
     "                PCI Status             <10>\n",
     [("nic_tx_stall", {"signal": "tx_unit_hang", "iface": "enp0s25"})]),
    ("e1000e-hw-hang-stamped", "intel/e1000e/netdev.c e1000_print_hw_hang (console/syslog: "
     "each line stamped)",
     "[  386.040283] e1000e 0000:00:19.0 enp0s25: Detected Hardware Unit Hang:\n"
     "[  386.040283]   TDH                  <b>\n"
     "[  386.040283]   TDT                  <e>\n"
     "[  386.040283]   next_to_use          <e>\n"
     "[  386.040283]   next_to_clean        <9>\n"
     "[  386.040283] buffer_info[next_to_clean]:\n"
     "[  386.040283]   time_stamp           <10000a3b1>\n"
     "[  386.040283] MAC Status             <40080083>\n"
     "[  386.040283] PCI Status             <10>\n"
     "[  388.040217] e1000e 0000:00:19.0 enp0s25: Reset adapter unexpectedly\n",
     [("nic_tx_stall", {"signal": "tx_unit_hang", "lines": 9}),
      ("nic_reset", {"stage": "resetting"})]),
    ("e1000-tx-hang-stamped", "intel/e1000/e1000_main.c e1000_clean_tx_irq",
     "[ 1234.5] e1000 0000:02:01.0 eth0: Detected Tx Unit Hang\n"
     "[ 1234.5]   Tx Queue             <0>\n"
     "[ 1234.5]   TDH                  <6b>\n"
     "[ 1234.5]   TDT                  <74>\n"
     "[ 1234.5]   next_to_use          <74>\n"
     "[ 1234.5]   next_to_clean        <6b>\n"
     "[ 1234.5] buffer_info[next_to_clean]\n"
     "[ 1234.5]   time_stamp           <fffd8be1>\n"
     "[ 1234.5]   next_to_watch        <6b>\n"
     "[ 1234.5]   jiffies              <fffd8d9c>\n"
     "[ 1234.5]   next_to_watch.status <0>\n"
     "[ 1236.6] e1000 0000:02:01.0 eth0: Reset adapter\n",
     [("nic_tx_stall", {"signal": "tx_unit_hang", "queue": 0}),
      ("nic_reset", {"stage": "resetting"})]),
    ("igb-tx-hang-syslog", "intel/igb/igb_main.c igb_clean_tx_irq (kern.log: each line stamped)",
     "Feb  8 12:57:41 node1 kernel: [ 8011.203811] igb 0000:01:00.0: Detected Tx Unit Hang\n"
     "Feb  8 12:57:41 node1 kernel: [ 8011.203811]   Tx Queue             <5>\n"
     "Feb  8 12:57:41 node1 kernel: [ 8011.203811]   TDH                  <c6>\n"
     "Feb  8 12:57:41 node1 kernel: [ 8011.203811]   TDT                  <c6>\n"
     "Feb  8 12:57:41 node1 kernel: [ 8011.203811]   next_to_use          <c6>\n"
     "Feb  8 12:57:41 node1 kernel: [ 8011.203811]   next_to_clean        <ba>\n"
     "Feb  8 12:57:41 node1 kernel: [ 8011.203811] buffer_info[next_to_clean]\n"
     "Feb  8 12:57:41 node1 kernel: [ 8011.203811]   time_stamp           <1001e4a1b>\n"
     "Feb  8 12:57:41 node1 kernel: [ 8011.203811]   next_to_watch        <ffff8800369ecba0>\n"
     "Feb  8 12:57:41 node1 kernel: [ 8011.203811]   jiffies              <1001e4dc8>\n"
     "Feb  8 12:57:41 node1 kernel: [ 8011.203811]   desc.status          <1c8210>\n",
     [("nic_tx_stall", {"signal": "tx_unit_hang", "queue": 5, "lines": 11})]),
    ("ixgbe-tx-hang", "intel/ixgbe/ixgbe_main.c ixgbe_clean_tx_irq + ixgbe_tx_timeout_reset",
     "[ 9001.000100] ixgbe 0000:03:00.0 eth2: Detected Tx Unit Hang\n"
     "[ 9001.000100]   Tx Queue             <2>\n"
     "[ 9001.000100]   TDH, TDT             <1a>, <3c>\n"
     "[ 9001.000100]   next_to_use          <3c>\n"
     "[ 9001.000100]   next_to_clean        <1a>\n"
     "[ 9001.000100] tx_buffer_info[next_to_clean]\n"
     "[ 9001.000100]   time_stamp           <10023f0a1>\n"
     "[ 9001.000100]   jiffies              <10023f4c3>\n"
     "[ 9001.000120] ixgbe 0000:03:00.0 eth2: tx hang 1 detected on queue 2, resetting adapter\n"
     "[ 9001.000200] ixgbe 0000:03:00.0 eth2: initiating reset due to tx timeout\n"
     "[ 9001.100000] ixgbe 0000:03:00.0 eth2: Reset adapter\n",
     [("nic_tx_stall", {"signal": "tx_unit_hang", "queue": 2, "iface": "eth2"}),
      ("nic_reset", {"queue": 2}),
      ("nic_reset", {}), ("nic_reset", {})]),
    ("igc-tx-hang", "intel/igc/igc_main.c igc_clean_tx_irq",
     "[  120.000001] igc 0000:03:00.0 enp3s0: Detected Tx Unit Hang\n"
     "                 Tx Queue             <1>\n"
     "                 TDH                  <40>\n"
     "                 TDT                  <45>\n",
     [("nic_tx_stall", {"queue": 1, "iface": "enp3s0"})]),
    ("i40e-tx-timeout", "intel/i40e/i40e_main.c i40e_tx_timeout (4.x-6.x)",
     "[73621.402910] i40e 0000:3b:00.0 eth0: tx_timeout: VSI_seid: 390, Q 6, NTC: 0x1a2, "
     "HWB: 0x1a2, NTU: 0x1a7, TAIL: 0x1a7, INT: 0x1\n"
     "[73621.402915] i40e 0000:3b:00.0 eth0: tx_timeout recovery level 1, txqueue 6\n",
     [("nic_tx_timeout", {"queue": 6, "iface": "eth0"}),
      ("nic_reset", {"recovery_level": 1, "queue": 6})]),
    ("i40e-recovery-old", "intel/i40e/i40e_main.c i40e_tx_timeout (3.x-4.x)",
     "[ 2201.1] i40e 0000:3b:00.1 eth1: tx_timeout recovery level 2, hung_queue 3\n"
     "[ 2210.1] i40e 0000:3b:00.1 eth1: tx_timeout recovery level 3\n"
     "[ 2250.1] i40e 0000:3b:00.1 eth1: tx_timeout recovery unsuccessful\n",
     [("nic_reset", {"recovery_level": 2, "queue": 3}), ("nic_reset", {"recovery_level": 3}),
      ("nic_reset", {"stage": "failed"})]),
    ("i40e-tx-driver-issue", "intel/i40e/i40e_main.c i40e_handle_mdd_event",
     "[ 300.5] i40e 0000:3b:00.0: TX driver issue detected, PF reset issued\n",
     [("nic_reset", {"stage": "trigger"})]),
    ("ice-tx-timeout", "intel/ice/ice_main.c ice_tx_timeout",
     "[ 5501.0] ice 0000:af:00.0 ens1f0: tx_timeout: VSI_num: 6, Q 13, NTC: 0x2d, HW_HEAD: "
     "0x2d, NTU: 0x33, INT: 0x1\n"
     "[ 5501.0] ice 0000:af:00.0 ens1f0: tx_timeout recovery level 1, txqueue 13\n",
     [("nic_tx_timeout", {"queue": 13}), ("nic_reset", {"recovery_level": 1, "queue": 13})]),
    ("mlx4-tx-timeout", "mellanox/mlx4/en_netdev.c mlx4_en_tx_timeout",
     "[ 800.0] mlx4_en: eth1: TX timeout on queue: 7, QP: 0x21f, CQ: 0x9c, Cons: 0x3b2d0, "
     "Prod: 0x3b2e4\n",
     [("nic_tx_timeout", {"queue": 7, "iface": "eth1"})]),
    ("mlx5-tx-timeout", "mellanox/mlx5/core/en_main.c mlx5e_tx_timeout_work + en/reporter_tx.c",
     "[ 900.0] mlx5_core 0000:08:00.0 eth2: TX timeout detected\n"
     "[ 900.0] mlx5_core 0000:08:00.0 eth2: TX timeout on queue: 3, SQ: 0x1a6, CQ: 0x4b3, "
     "SQ Cons: 0x12 SQ Prod: 0x1c, usecs since last trans: 18176000\n"
     "[ 900.1] mlx5_core 0000:08:00.0 eth2: EQ 0x12: Cons = 0x3d, irqn = 0x2f\n",
     # the driver's two lines for one timeout are one event
     [("nic_tx_timeout", {"queue": 3, "usecs_since_last_trans": 18176000, "lines": 2})]),
    ("mlx5-health", "mellanox/mlx5/core/health.c poll_health / mlx5_health_try_recover",
     "[ 100.0] mlx5_core 0000:08:00.0: poll_health:739:(pid 0): device's health compromised - "
     "reached miss count\n"
     "[ 101.0] mlx5_core 0000:08:00.0: mlx5_health_try_recover:327:(pid 512): handling bad "
     "device here\n"
     "[ 104.0] mlx5_core 0000:08:00.0: mlx5_health_try_recover:340:(pid 512): health recovery "
     "succeeded\n",
     [("nic_reset", {"stage": "trigger"}), ("nic_reset", {"stage": "resetting"}),
      ("nic_reset", {"stage": "completed"})]),
    ("bnxt-tx-timeout", "broadcom/bnxt/bnxt.c bnxt_tx_timeout",
     "[ 77.0] bnxt_en 0000:3b:00.0 ens2f0np0: TX timeout detected, starting reset task!\n",
     [("nic_tx_timeout", {"iface": "ens2f0np0"})]),
    ("virtio-tx-timeout", "virtio_net.c virtnet_tx_timeout",
     "[ 42.0] virtio_net virtio0 eth0: TX timeout on queue: 0, sq: output.0, vq: 0x1, name: "
     "output.0, 5376000 usecs ago\n",
     [("nic_tx_timeout", {"queue": 0, "usecs_ago": 5376000})]),
    ("vmxnet3-tx-hang", "vmxnet3/vmxnet3_drv.c vmxnet3_tx_timeout + vmxnet3_reset_work",
     "[ 50.0] vmxnet3 0000:0b:00.0 ens192: tx hang\n"
     "[ 50.1] vmxnet3 0000:0b:00.0 ens192: resetting\n",
     [("nic_tx_timeout", {"iface": "ens192"}), ("nic_reset", {"stage": "resetting"})]),
    ("gve-timeout", "google/gve/gve_main.c gve_tx_timeout / gve_reset",
     "[ 61.0] gve 0000:00:04.0 ens4: Timeout on tx queue, 3\n"
     "[ 61.0] gve 0000:00:04.0 ens4: Kicking queue 3\n"
     "[ 72.0] gve 0000:00:04.0: Performing reset\n",
     [("nic_tx_timeout", {"queue": 3, "lines": 2}), ("nic_reset", {"stage": "resetting"})]),
    ("tg3-timeout", "broadcom/tg3.c tg3_tx_timeout",
     "[ 33.0] tg3 0000:03:00.0 eth0: transmit timed out, resetting\n"
     "[ 33.0] tg3 0000:03:00.0 eth0: 0x00000000: 0x165f14e4, 0x00100406, 0x02000000\n",
     [("nic_tx_timeout", {"iface": "eth0"})]),
    ("netdev-watchdog-2.6.18", "net/sched/sch_generic.c dev_watchdog (2.6.18, EL5)",
     "NETDEV WATCHDOG: eth0: transmit timed out\n",
     [("nic_tx_timeout", {"iface": "eth0"})]),
    ("netdev-watchdog-noparen", "net/sched/sch_generic.c dev_watchdog (2.6.2x)",
     "[ 12.0] NETDEV WATCHDOG: eth0: transmit queue 0 timed out\n",
     [("nic_tx_timeout", {"iface": "eth0", "queue": 0})]),
    ("netdev-watchdog-splat-3.x", "net/sched/sch_generic.c dev_watchdog WARN_ONCE (3.x-5.x)",
     "[ 1000.1] ------------[ cut here ]------------\n"
     "[ 1000.1] WARNING: CPU: 7 PID: 0 at net/sched/sch_generic.c:447 dev_watchdog+0x221/0x230\n"
     "[ 1000.1] NETDEV WATCHDOG: ens3 (ena): transmit queue 2 timed out\n"
     "[ 1000.1] Modules linked in: nf_conntrack ena\n"
     "[ 1000.1] CPU: 7 PID: 0 Comm: swapper/7 Not tainted 5.4.0-1045-aws #47-Ubuntu\n",
     [("nic_tx_timeout", {"cpu": 7, "queue": 2, "iface": "ens3"})]),
    ("netdev-watchdog-splat-el6", "net/sched/sch_generic.c dev_watchdog WARN (2.6.32, EL6)",
     "[ 500.0] WARNING: at net/sched/sch_generic.c:261 dev_watchdog+0x26b/0x280() "
     "(Not tainted)\n"
     "[ 500.0] Hardware name: PowerEdge R710\n"
     "[ 500.0] NETDEV WATCHDOG: eth0 (bnx2): transmit queue 0 timed out\n"
     "[ 500.0] Modules linked in: bnx2\n"
     "[ 500.0] Pid: 0, comm: swapper Not tainted 2.6.32-431.el6.x86_64 #1\n",
     [("nic_tx_timeout", {"queue": 0, "iface": "eth0"})]),
    ("netdev-watchdog-6.x", "net/sched/sch_generic.c dev_watchdog (6.8+: netdev_crit)",
     "[ 77.1] virtio_net virtio1 enp1s0: NETDEV WATCHDOG: CPU: 1: transmit queue 0 timed out "
     "5120 ms\n",
     [("nic_tx_timeout", {"cpu": 1, "queue": 0, "timeout_ms": 5120})]),
    ("r8169-watchdog", "net/sched/sch_generic.c dev_watchdog (5.x) on r8169",
     "[ 77.1] NETDEV WATCHDOG: enp2s0 (r8169): transmit queue 0 timed out 5376 ms\n",
     [("nic_tx_timeout", {"iface": "enp2s0", "queue": 0})]),
    ("hv-netvsc-watchdog", "dev_watchdog on hv_netvsc (VMBus GUID device)",
     "[ 10.0] NETDEV WATCHDOG: eth0 (hv_netvsc): transmit queue 3 timed out\n",
     [("nic_tx_timeout", {"queue": 3, "iface": "eth0"})]),
    ("driver-tx-timeout-on-queue", "drivers' ndo_tx_timeout: `TX timeout on queue %u`",
     "[ 10.0] fbnic 0000:01:00.0 eth0: TX timeout on queue 4\n",
     [("nic_tx_timeout", {"queue": 4})]),
    ("sfc-watchdog-reset", "sfc/efx.c efx_watchdog + efx_common.c efx_reset",
     "[ 4100.100001] NETDEV WATCHDOG: ens1f0np0 (sfc): transmit queue 2 timed out 5120 ms\n"
     "[ 4100.100007] sfc 0000:03:00.0 ens1f0np0: TX stuck with port_enabled=1: resetting "
     "channels\n"
     "[ 4100.200011] sfc 0000:03:00.0 ens1f0np0: resetting (TX_WATCHDOG)\n"
     "[ 4101.000020] sfc 0000:03:00.0 ens1f0np0: failed to reset hardware\n",
     [("nic_tx_timeout", {"queue": 2, "lines": 2}),
      ("nic_reset", {"stage": "resetting", "reset_type": "TX_WATCHDOG"}),
      ("nic_reset", {"stage": "failed"})]),
    ("nfp-ring", "netronome/nfp/nfp_net_common.c nfp_net_tx_timeout",
     "[ 910.5] nfp 0000:04:00.0 enp4s0np0: TX watchdog timeout on ring: 3\n",
     [("nic_tx_timeout", {"queue": 3, "iface": "enp4s0np0"})]),
    ("stmmac-reset", "stmicro/stmmac/stmmac_main.c stmmac_reset_subtask (after dev_watchdog)",
     "[ 77.010] rk_gmac-dwmac ff540000.ethernet eth0: NETDEV WATCHDOG: CPU: 2: transmit queue 1 "
     "timed out 5012 ms\n"
     "[ 77.020] rk_gmac-dwmac ff540000.ethernet eth0: Reset adapter.\n",
     [("nic_tx_timeout", {"cpu": 2, "queue": 1}), ("nic_reset", {"stage": "resetting"})]),
    ("be2net-lancer", "emulex/benet/be_main.c be_tx_timeout (Lancer)",
     "[ 300.1] be2net 0000:04:00.0: TXQ Dump: 0 H: 12 T: 40 used: 28, qid: 0x2\n"
     "[ 300.2] be2net 0000:04:00.0: Initiating reset due to tx timeout\n"
     "[ 300.2] be2net 0000:04:00.0: Resetting adapter\n"
     "[ 310.2] be2net 0000:04:00.0: Reset failed .. Reboot server\n",
     [("nic_reset", {"stage": "trigger"}), ("nic_reset", {"stage": "resetting"}),
      ("nic_reset", {"stage": "failed"})]),
    ("hns3-timeout", "hisilicon/hns3/hns3_enet.c hns3_get_tx_timeo_queue_info + "
     "hns3pf/hclge_main.c hclge_reset_event",
     "[ 2600.1] hns3 0000:7d:00.0 eth2: NETDEV WATCHDOG: CPU: 0: transmit queue 3 timed out "
     "5120 ms\n"
     "[ 2600.1] hns3 0000:7d:00.0 eth2: queue state: 0x82, delta msecs: 5120\n"
     "[ 2600.1] hns3 0000:7d:00.0 eth2: tx_timeout count: 1, queue id: 3, SW_NTU: 0x1f, "
     "SW_NTC: 0x10, napi state: 16\n"
     "[ 2600.2] hns3 0000:7d:00.0: received reset event, reset type is 5\n"
     "[ 2600.2] hns3 0000:7d:00.0: PF reset requested\n",
     [("nic_tx_timeout", {"queue": 3, "timeout_count": 1, "lines": 2}),
      ("nic_reset", {"stage": "trigger", "reset_level": 5}),
      ("nic_reset", {"stage": "resetting"})]),
    ("qede-timeout", "qlogic/qede/qede_main.c qede_tx_timeout (DP_NOTICE `[func:line(name)]`)",
     "[ 500.0] [qede_tx_timeout:545(ens1f0)]TX timeout on queue 3!\n"
     "[ 500.0] [qede_tx_log_print:530(ens1f0)]Txq[3]: FW cons [host] 0a1c, SW cons 0a1c, "
     "SW prod 0a40 [Jiffies 4295120000]\n",
     [("nic_tx_timeout", {"queue": 3, "iface": "ens1f0"})]),
    ("bnx2x-crash-dump", "broadcom/bnx2x/bnx2x_main.c bnx2x_panic_dump (BNX2X_ERR prefix)",
     "Apr  8 17:53:48 h kernel: [ 1150.253698] bnx2x: [bnx2x_stats_update:1233(eth0)]driver "
     "assert\n"
     "Apr  8 17:53:48 h kernel: [ 1150.253768] bnx2x: [bnx2x_panic_dump:917(eth0)]begin crash "
     "dump -----------------\n"
     "Apr  8 17:53:48 h kernel: [ 1150.253854] bnx2x: [bnx2x_panic_dump:927(eth0)]def_idx(0x46f) "
     " def_att_idx(0x8)  attn_state(0x0)  spq_prod_idx(0x88) next_stats_cnt(0x457)\n"
     "Apr  8 17:53:48 h kernel: [ 1150.260000] bnx2x: [bnx2x_panic_dump:1180(eth0)]end crash "
     "dump -----------------\n",
     [("nic_reset", {"signal": "crash_dump", "iface": "eth0"})]),
    ("iavf-pf-reset", "intel/iavf/iavf_virtchnl.c + iavf_main.c iavf_watchdog_task, "
     "iavf_reset_task",
     "[ 220.265891] iavf 0000:ca:01.0: Reset indication received from the PF\n"
     "[ 220.272250] iavf 0000:ca:01.0: Scheduling reset task\n"
     "[ 220.277217] iavf 0000:ca:01.0: Hardware reset detected\n"
     "[ 230.300000] iavf 0000:ca:01.0: Reset never finished (0)\n"
     "[ 230.300100] iavf 0000:ca:01.0: Reset task did not complete, VF disabled\n",
     [("nic_reset", {"stage": "trigger", "signal": "pf_reset"}),
      ("nic_reset", {"stage": "resetting"}), ("nic_reset", {"stage": "failed"})]),
    ("i40evf-reset-warning", "intel/i40evf/i40evf_virtchnl.c (4.x)",
     "[ 10.0] i40evf 0000:00:05.0: Reset warning received from the PF\n",
     [("nic_reset", {"signal": "pf_reset"})]),
    ("i40e-mdd-vf", "intel/i40e/i40e_main.c i40e_handle_mdd_event (VF)",
     "[ 300.0] i40e 0000:18:00.1: Malicious Driver Detection event 0x02 on TX queue 65 PF "
     "number 0x01 VF number 0x40\n"
     "[ 300.0] i40e 0000:18:00.1: TX driver issue detected on VF 0\n"
     "[ 300.0] i40e 0000:18:00.1: Use PF Control I/F to re-enable the VF\n",
     [("nic_reset", {"signal": "mdd"})]),
    ("i40e-old-prefix", "intel/i40e/i40e_main.c (3.x dev_info: netdev name in the message)",
     "Jun  3 09:03:26 x kernel: i40e 0000:08:00.1: eth9: tx_timeout recovery level 1\n",
     [("nic_reset", {"recovery_level": 1, "iface": "eth9"})]),
    ("e1000e-old-prefix", "intel/e1000e/netdev.c (2.6.3x: `e1000e BUS: eth0: `)",
     "[ 900.0] e1000e 0000:00:19.0: eth0: Detected Hardware Unit Hang:\n"
     "  TDH                  <5c>\n"
     "  TDT                  <69>\n"
     "[ 902.0] e1000e 0000:00:19.0: eth0: Reset adapter\n",
     [("nic_tx_stall", {"iface": "eth0"}), ("nic_reset", {"iface": "eth0"})]),
    ("pcnet32-own-line", "amd/pcnet32.c pcnet32_tx_timeout after dev_watchdog",
     "[ 54.832000] NETDEV WATCHDOG: eth0 (pcnet32): transmit queue 0 timed out\n"
     "[ 54.832000] pcnet32: eth0: transmit timed out, status 07fb, resetting\n",
     [("nic_tx_timeout", {"queue": 0, "lines": 2})]),
    ("mtk-eth-timeout", "mediatek/mtk_eth_soc.c mtk_tx_timeout",
     "[ 10.0] mtk_soc_eth 1e100000.ethernet eth0: transmit timed out\n",
     [("nic_tx_timeout", {"iface": "eth0"})]),
]

CPU: list[Row] = [
    ("soft-lockup-6.x", "kernel/watchdog.c watchdog_timer_fn (pr_fmt watchdog:)",
     "[ 30.0] watchdog: BUG: soft lockup - CPU#3 stuck for 26s! [kworker/3:1:123]\n",
     [("soft_lockup", {"cpu": 3, "seconds": 26, "comm": "kworker/3:1", "pid": 123})]),
    ("soft-lockup-2.6.9", "kernel/softlockup.c (2.6.9-2.6.18)",
     "BUG: soft lockup detected on CPU#3!\n",
     [("soft_lockup", {"cpu": 3})]),
    ("hard-lockup-nmi", "kernel/watchdog_hld.c watchdog_overflow_callback (4.x)",
     "[ 40.0] NMI watchdog: Watchdog detected hard LOCKUP on cpu 5\n",
     [("hard_lockup", {"cpu": 5})]),
    ("hard-lockup-6.x", "kernel/watchdog.c watchdog_hardlockup_check (6.6+)",
     "[ 40.0] watchdog: CPU2: Watchdog detected hard LOCKUP on cpu 5\n",
     [("hard_lockup", {"cpu": 5})]),
    ("hard-lockup-watchdog-cpu", "arch watchdogs: `Watchdog CPU:%d Hard LOCKUP`",
     "[ 40.0] Watchdog CPU:4 Hard LOCKUP\n",
     [("hard_lockup", {"cpu": 4})]),
    ("hard-lockup-panic", "kernel/panic.c panic() after hardlockup_panic",
     "[ 40.0] Kernel panic - not syncing: Hard LOCKUP\n",
     [("hard_lockup", {"panic": True})]),
    ("hard-lockup-then-panic", "watchdog_hld.c + panic(msg)",
     "[ 40.0] NMI watchdog: Watchdog detected hard LOCKUP on cpu 5\n"
     "[ 40.0] Modules linked in: x\n"
     "[ 40.0] Kernel panic - not syncing: Watchdog detected hard LOCKUP on cpu 5\n",
     [("hard_lockup", {"cpu": 5, "panic": True})]),
    ("rcu-one-line-old", "kernel/rcutree.c print_other_cpu_stall (2.6.3x)",
     "[ 60.0] INFO: rcu_sched_state detected stall on CPU 3 (t=15000 jiffies)\n",
     [("rcu_stall", {"cpus": [3], "jiffies": 15000})]),
    ("rcu-braces-3.x", "kernel/rcutree.c print_other_cpu_stall (3.x)",
     "[ 60.0] INFO: rcu_sched detected stalls on CPUs/tasks: { 3 5} (detected by 1, t=60002 "
     "jiffies, g=1234, c=1233, q=0)\n",
     [("rcu_stall", {"cpus": [3, 5], "detected_by": 1})]),
    ("rcu-multiline-el7", "kernel/rcutree.c print_other_cpu_stall (3.10, EL7)",
     "[ 60.0] INFO: rcu_sched detected stalls on CPUs/tasks:\n"
     "[ 60.0] \t3: (1 GPs behind) idle=a1c/140000000000000/0 softirq=0/0 fqs=0\n"
     "[ 60.0] \t5: (0 ticks this GP) idle=b2d/140000000000000/0 softirq=0/0 fqs=0\n"
     "[ 60.0] \t(detected by 1, t=60002 jiffies, g=1234, c=1233, q=0)\n",
     [("rcu_stall", {"cpus": [3, 5], "detected_by": 1, "jiffies": 60002})]),
    ("rcu-multiline-5.x", "kernel/rcu/tree_stall.h print_other_cpu_stall (5.x-6.x)",
     "[ 60.0] rcu: INFO: rcu_preempt detected stalls on CPUs/tasks:\n"
     "[ 60.0] rcu: \t2-...0: (1 GPs behind) idle=86c/1/0x4000000000000000 softirq=99/100 fqs=2\n"
     "[ 60.0] rcu: \t7-....: (20999 ticks this GP) idle=b7e/1/0x4000000000000000 "
     "softirq=5/5 fqs=5250\n"
     "[ 60.0] \t(detected by 0, t=21002 jiffies, g=4577, q=330 ncpus=8)\n",
     [("rcu_stall", {"cpus": [2, 7], "detected_by": 0})]),
    ("rcu-self-detected-6.x", "kernel/rcu/tree_stall.h print_cpu_stall",
     "[ 60.0] rcu: INFO: rcu_sched self-detected stall on CPU\n"
     "[ 60.0] rcu: \t6-....: (21000 ticks this GP) idle=5b6/1/0x4000000000000002 "
     "softirq=1/1 fqs=5249\n"
     "[ 60.0] \t(t=21003 jiffies g=10781 q=1 ncpus=8)\n",
     [("rcu_stall", {"cpus": [6], "jiffies": 21003})]),
    ("rcu-rcu-detected-cpu-stall-2.6.32", "kernel/rcutree.c (2.6.32, EL6)",
     "[ 60.0] INFO: RCU detected CPU 2 stall (t=4295098340/10000 jiffies)\n",
     [("rcu_stall", {"cpus": [2]})]),
    ("nmi-lockup-2.6", "arch/x86/kernel/nmi.c die_nmi (2.6.x)",
     "[ 40.0] NMI Watchdog detected LOCKUP on CPU 3\n",
     [("hard_lockup", {"cpu": 3})]),
    ("rcu-tasks-stall", "kernel/rcu/tasks.h check_all_holdout_tasks (RCU Tasks)",
     "[ 60.0] INFO: rcu_tasks detected stalls on tasks:\n",
     [("rcu_stall", {"flavor": "rcu_tasks"})]),
    ("hung-task-then-panic", "kernel/hung_task.c check_hung_uninterruptible_tasks "
     "(hung_task_panic=1)",
     "[ 400.0] INFO: task java:1234 blocked for more than 120 seconds.\n"
     "[ 400.0] Kernel panic - not syncing: hung_task: blocked tasks\n",
     [("hung_task", {"pid": 1234, "panic": True, "lines": 2})]),
    ("hung-task", "kernel/hung_task.c check_hung_task",
     "[ 240.0] INFO: task jbd2/sda1-8:345 blocked for more than 120 seconds.\n",
     [("hung_task", {"comm": "jbd2/sda1-8", "pid": 345, "seconds": 120})]),
]

MEM: list[Row] = [
    ("oom-el6", "mm/oom_kill.c oom_kill_process (2.6.32, EL6)",
     "[ 100.0] Out of memory: Kill process 4711 (java) score 905 or sacrifice child\n"
     "[ 100.0] Killed process 4712, UID 500, (java) total-vm:2323012kB, anon-rss:1012044kB, "
     "file-rss:12kB\n",
     [("oom_kill", {"pid": 4712, "comm": "java", "uid": 500, "total_vm_kb": 2323012})]),
    ("oom-el5", "mm/oom_kill.c (2.6.18, EL5)",
     "Out of memory: Killed process 4712, UID 500, (java).\n",
     [("oom_kill", {"pid": 4712, "comm": "java", "uid": 500})]),
    ("oom-el7", "mm/oom_kill.c oom_kill_process (3.10, EL7)",
     "[ 100.0] Out of memory: Kill process 4711 (java) score 905 or sacrifice child\n"
     "[ 100.0] Killed process 4712 (java), UID 1000, total-vm:2323012kB, anon-rss:1012044kB, "
     "file-rss:0kB, shmem-rss:0kB\n",
     [("oom_kill", {"pid": 4712, "comm": "java", "uid": 1000, "anon_rss_kb": 1012044})]),
    ("oom-memcg-4.x", "mm/oom_kill.c + mm/memcontrol.c (4.x)",
     "[ 100.0] Task in /kubepods/burstable/pod6f1e/4c2ab killed as a result of limit of "
     "/kubepods/burstable/pod6f1e/4c2ab\n"
     "[ 100.0] Memory cgroup out of memory: Kill process 4711 (java) score 1990 or sacrifice "
     "child\n"
     "[ 100.0] Killed process 4711 (java) total-vm:2323012kB, anon-rss:1012044kB, "
     "file-rss:0kB, shmem-rss:0kB\n",
     [("oom_kill", {"pid": 4711, "comm": "java", "scope": "Memory cgroup out of memory",
                    "cgroup": "/kubepods/burstable/pod6f1e/4c2ab"})]),
    ("oom-5.x", "mm/oom_kill.c dump_oom_summary + __oom_kill_process (5.x-6.x)",
     "[ 100.0] oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=cri-containerd-"
     "4c2ab.scope,mems_allowed=0,oom_memcg=/kubepods.slice/kubepods-burstable.slice/"
     "kubepods-burstable-pod6f1e.slice,task_memcg=/kubepods.slice/kubepods-burstable.slice/"
     "kubepods-burstable-pod6f1e.slice/cri-containerd-"
     f"{_CID}.scope,task=java,pid=4711,"
     "uid=1000\n"
     "[ 100.0] Memory cgroup out of memory: Killed process 4711 (java) total-vm:2323012kB, "
     "anon-rss:1012044kB, file-rss:0kB, shmem-rss:0kB, UID:1000 pgtables:2200kB "
     "oom_score_adj:999\n"
     "[ 100.1] oom_reaper: reaped process 4711 (java), now anon-rss:0kB, file-rss:0kB, "
     "shmem-rss:0kB\n",
     [("oom_kill", {"pid": 4711, "comm": "java", "uid": 1000, "constraint": "CONSTRAINT_MEMCG",
                    "container_id": _CID})]),
    ("oom-kill-line-alone", "mm/oom_kill.c dump_oom_summary, grepped alone",
     "oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null),cpuset=/,mems_allowed=0,global_oom,"
     "task_memcg=/system.slice/app.service,task=app,pid=991,uid=0\n",
     [("oom_kill", {"pid": 991, "comm": "app", "cgroup": "/system.slice/app.service"})]),
]

HW: list[Row] = [
    ("mce-intel-one-report", "arch/x86/kernel/cpu/mce/core.c __print_mce + mce_notify_irq",
     "[ 900.0] mce: [Hardware Error]: Machine check events logged\n"
     "[ 900.0] mce: [Hardware Error]: CPU 0: Machine Check: 0 Bank 8: 8c00004000010091\n"
     "[ 900.0] mce: [Hardware Error]: TSC 0 ADDR 1a7e4e2c0 MISC 90868002800208c\n"
     "[ 900.0] mce: [Hardware Error]: PROCESSOR 0:50654 TIME 1644321461 SOCKET 0 APIC 0 "
     "microcode 2006b06\n"
     "[ 900.1] EDAC MC0: 1 CE memory read error on CPU_SrcID#0_MC#0_Chan#1_DIMM#0 "
     "(channel:1 slot:0 page:0x1a7e4e offset:0x2c0 grain:32 syndrome:0x0)\n",
     [("hw_error", {"lines": 5, "cpu": 0, "bank": 8})]),
    ("edac-sbridge-report", "drivers/edac/sb_edac.c sbridge_mce_check_error",
     "[ 10.0] EDAC sbridge MC0: HANDLING MCE MEMORY ERROR\n"
     "[ 10.0] EDAC sbridge MC0: CPU 0: Machine Check Event: 0 Bank 7: 8c00004000010091\n"
     "[ 10.0] EDAC sbridge MC0: TSC 0\n"
     "[ 10.0] EDAC sbridge MC0: ADDR 1234f000\n"
     "[ 10.0] EDAC sbridge MC0: MISC 140c4086\n"
     "[ 10.0] EDAC sbridge MC0: PROCESSOR 0:306e4 TIME 1432052345 SOCKET 0 APIC 0\n"
     "[ 10.0] EDAC MC0: 1 CE memory read error on CPU_SrcID#0_Ha#0_Chan#1_DIMM#0 (channel:1)\n"
     "[ 70.0] EDAC sbridge MC0: HANDLING MCE MEMORY ERROR\n"
     "[ 70.0] EDAC sbridge MC0: CPU 2: Machine Check Event: 0 Bank 7: 8c00004000010091\n"
     "[ 70.0] EDAC MC0: 1 CE memory read error on CPU_SrcID#0_Ha#0_Chan#1_DIMM#0 (channel:1)\n",
     [("hw_error", {"lines": 7}), ("hw_error", {"lines": 3})]),
    ("mce-amd", "arch/x86/kernel/cpu/mce/core.c + drivers/edac/mce_amd.c decode_smca_error",
     "[ 5.0] mce: [Hardware Error]: Machine check events logged\n"
     "[ 5.0] [Hardware Error]: Corrected error, no action required.\n"
     "[ 5.0] [Hardware Error]: CPU:0 (17:31:0) MC22_STATUS[Over|CE|MiscV|-|AddrV|-|-|SyndV|-"
     "|CECC|-|-|-]: 0xdc2040000000011b\n"
     "[ 5.0] [Hardware Error]: Error Addr: 0x00000001ab2c0000\n"
     "[ 5.0] [Hardware Error]: Unified Memory Controller Ext. Error Code: 0, DRAM ECC error.\n"
     "[ 5.0] EDAC MC0: 1 CE on mc#0csrow#3channel#0 (csrow:3 channel:0 page:0x1ab2c0 "
     "offset:0x0 grain:64 syndrome:0x2)\n",
     [("hw_error", {"lines": 6})]),
]

SYSLOG_NOISE: list[Row] = [
    ("netifd-is-userland", "OpenWrt logread: netifd (userland) beside the kernel",
     "Tue Feb  8 12:57:41 2022 daemon.notice netifd: Network device 'eth0' link is up\n"
     "Tue Feb  8 12:57:41 2022 daemon.notice netifd: Interface 'wan' has link connectivity\n"
     "Tue Feb  8 12:57:42 2022 kern.info kernel: [  123.456789] mtk_soc_eth 1e100000.ethernet "
     "eth0: Link is Down\n",
     [("link_down", {"iface": "eth0"})]),
    ("networkmanager-syslog", "NetworkManager and systemd-networkd in /var/log/syslog",
     "Feb  8 12:57:41 host NetworkManager[812]: <info>  [1644321461.1234] device (eth0): "
     "link disconnected\n"
     "Feb  8 12:57:41 host systemd-networkd[500]: eth0: Link DOWN\n"
     "Feb  8 12:57:41 host systemd-networkd[500]: eth0: Lost carrier\n",
     []),
]

ROWS = NIC + CPU + MEM + HW + SYSLOG_NOISE


@pytest.mark.parametrize("row", ROWS, ids=[r[0] for r in ROWS])
def test_table(row: Row) -> None:
    _id, _origin, text, expected = row
    got = incidents(text, links=False)
    assert [e.kind for e in got] == [k for k, _ in expected], [e.raw[:80] for e in got]
    for e, (_, fields) in zip(got, expected, strict=True):
        for name, value in fields.items():
            actual = e.iface if name == "iface" else e.fields.get(name)
            assert actual == value, (name, e.fields, e.raw[:80])


def test_a_daemon_line_pasted_without_its_stamp_is_not_a_link_event() -> None:
    from corescope.analysis.classify import classify

    for line in ("netifd: Network device 'eth0' link is up",
                 "NetworkManager[812]: <info>  device (eth0): link connected (Link is Up)",
                 "systemd-networkd[500]: eth0: Link UP"):
        assert classify(line).kind == "other", line
    assert classify("e1000e: eth0 NIC Link is Up 1000 Mbps Full Duplex").kind == "link_up"


def test_report_lines_stay_events_of_their_own_with_part_of() -> None:
    from support.kernel_logs import events_of

    evs, _, _ = events_of(HW[0][2])
    assert [e.kind for e in evs] == ["hw_error"] + ["other"] * 4
    assert all(e.fields == {"part_of": "hw_error"} for e in evs[1:])


def test_a_report_split_across_the_recorders_batches() -> None:
    """The recorder classifies what each read returns: a report's further lines in the next
    batch still join it (kept as "other", part_of), and do not count as reports."""
    from corescope.analysis.classify import classify_record
    from corescope.analysis.reports import ReportJoiner
    from corescope.model.events import KmsgRecord

    lines = ["mce: [Hardware Error]: CPU 0: Machine Check: 0 Bank 8: 8c00004000010091",
             "mce: [Hardware Error]: TSC 0 ADDR 1a7e4e2c0 MISC 90868002800208c",
             "mce: [Hardware Error]: PROCESSOR 0:50654 TIME 1644321461 SOCKET 0 APIC 0"]
    evs = [classify_record(KmsgRecord(m, usec=10, seq=i), 100.0) for i, m in enumerate(lines)]
    j = ReportJoiner()
    first, second = j.feed(evs[:1]), j.feed(evs[1:])
    assert [e.kind for e in first] == ["hw_error"]
    assert [(e.kind, e.fields) for e in second] == [("other", {"part_of": "hw_error"})] * 2
    assert [e.seq for e in first + second] == [0, 1, 2]


def test_two_oom_kills_in_one_second_are_two_events() -> None:
    text = ("[ 1.0] Out of memory: Killed process 10 (a) total-vm:1kB, anon-rss:1kB\n"
            "[ 1.1] Out of memory: Killed process 11 (b) total-vm:1kB, anon-rss:1kB\n")
    assert [e.fields["pid"] for e in incidents(text)] == [10, 11]


def test_separate_machine_checks_are_separate_events() -> None:
    one = ("[ {t}] mce: [Hardware Error]: CPU 1: Machine Check: 0 Bank 5: be00000000800400\n"
           "[ {t}] mce: [Hardware Error]: TSC 0\n")
    evs = incidents(one.format(t="5.0") + one.format(t="5.0") + one.format(t="99.0"))
    assert [e.fields["lines"] for e in evs] == [2, 2, 2]


@pytest.mark.parametrize(("line", "kind", "fields"), [
    # drivers/net/ethernet/marvell/sky2.c sky2_tx_timeout
    ("sky2 0000:02:00.0 eth0: tx timeout", "nic_tx_timeout", {}),
    # drivers/net/ethernet/intel/e100.c e100_tx_timeout_task
    ("e100 0000:00:08.0 eth0: e100_tx_timeout_task: scb.status=0x50", "nic_tx_timeout", {}),
    # amazon/ena/ena_com.c ena_com_dev_reset
    ("ena 0000:00:05.0: Reset indication didn't turn off", "nic_reset", {"stage": "failed"}),
    # realtek/r8169_main.c rtl_task (TX timeout on a dead chip) and rtl_loop_wait
    ("r8169 0000:02:00.0 enp2s0: Can't reset secondary PCI bus, detach NIC", "nic_reset",
     {"stage": "failed"}),
    ("r8169 0000:02:00.0 enp2s0: rtl_chipcmd_cond == 1 (loop: 100, delay: 100).", "nic_reset",
     {"stage": "failed"}),
    # a stats dump is no event
    ("ena 0000:00:05.0 eth0: tx_timeout: 0", "other", {}),
])
def test_more_driver_lines(line: str, kind: str, fields: dict[str, Any]) -> None:
    from corescope.analysis.classify import classify

    c = classify(line)
    assert c.kind == kind
    assert {k: c.fields.get(k) for k in fields} == fields


def test_rcu_3x_self_detected_braces_line() -> None:
    # kernel/rcutree.c print_cpu_stall (3.x): the CPU list and jiffies on the next line
    text = ("[ 60.0] INFO: rcu_sched self-detected stall on CPU\n"
            "[ 60.0] \t{ 3}  (t=60000 jiffies g=1234 c=1233 q=0)\n")
    (e,) = incidents(text)
    assert e.fields["cpus"] == [3] and e.fields["jiffies"] == 60000


def test_netdev_watchdog_cpu_from_a_splat_printed_after_its_message() -> None:
    # 4.19+: WARN's message (cut here, NETDEV WATCHDOG) comes before __warn's WARNING line;
    # a later watchdog line without a splat of its own gets no CPU from it
    text = ("[20200.100001] ------------[ cut here ]------------\n"
            "[20200.100002] NETDEV WATCHDOG: eth0 (ena): transmit queue 5 timed out\n"
            "[20200.100090] WARNING: CPU: 39 PID: 0 at net/sched/sch_generic.c:477 "
            "dev_watchdog+0x24a/0x250\n"
            "[20201.100002] NETDEV WATCHDOG: eth0 (ena): transmit queue 6 timed out 5376 ms\n")
    a, b = incidents(text)
    assert a.fields["cpu"] == 39 and "cpu" not in b.fields


def test_oom_victim_whose_comm_holds_parentheses() -> None:
    # systemd's `(resolved)` helper as mm/oom_kill.c prints it: `((resolved))`
    text = ("[ 518.061172] Out of memory: Killed process 15925 ((resolved)) total-vm:168424kB, "
            "anon-rss:4064kB, file-rss:3584kB, shmem-rss:0kB\n"
            "[ 518.064186] oom_reaper: reaped process 15925 ((resolved)), now anon-rss:0kB\n")
    (e,) = incidents(text)
    assert e.fields["comm"] == "(resolved)" and e.fields["anon_rss_kb"] == 4064
    assert e.fields["reaped"] is True


def test_el6_child_sacrificed_names_the_child() -> None:
    text = ("Out of memory: Kill process 16929 (beam.smp) score 580 or sacrifice child\n"
            "Killed process 28364, UID 0, (sh) total-vm:106064kB, anon-rss:180kB, file-rss:4kB\n")
    (e,) = incidents(text)
    assert (e.fields["pid"], e.fields["comm"], e.fields["selected_pid"]) == (28364, "sh", 16929)


def test_ena_wordings_across_releases() -> None:
    from corescope.analysis.classify import classify

    # amazon/ena/ena_netdev.c check_missing_comp_in_tx_queue (2.8+)
    c = classify("ena 0000:00:05.0 eth0: Found a Tx that wasn't completed on time, qid 4, index "
                 "787. 7356 msecs since last interrupt, 7360 msecs since last napi execution, "
                 "napi scheduled: 1")
    assert (c.kind, c.fields["queue"], c.fields["msecs_since_irq"],
            c.fields["msecs_since_napi"], c.fields["napi_scheduled"]) == \
        ("nic_tx_stall", 4, 7356, 7360, 1)
    # ena_restore_device, older releases: `ENA device reset completed successfully`
    c = classify("ena 0000:00:05.0: ENA device reset completed successfully")
    assert (c.kind, c.fields["stage"]) == ("nic_reset", "completed")


# Reset lines of other subsystems, each as its driver prints it: never a NIC event. The
# generic wordings (`Device reset failed`, `resetting`, `Reset adapter`, ...) are a NIC's only
# on a line from a network device (its interface, a NIC driver's prefix).
@pytest.mark.parametrize("line", [
    # drivers/iio/light/noa1305.c noa1305_probe: dev_err(&client->dev, "Device reset
    # failed\n") on an I2C client (`%d-%04x`)
    "noa1305 1-0039: Device reset failed",
    # drivers/nvme/host/pci.c nvme_warn_reset and nvme_timeout (5.x)
    "nvme nvme0: controller is down; will reset: CSTS=0xffffffff, PCI_STATUS=0x10",
    "nvme nvme0: I/O 123 QID 4 timeout, reset controller",
    # drivers/usb/core/hub.c hub_port_init: "%s %s USB device number %d using %s"
    "usb 1-1: reset high-speed USB device number 2 using xhci_hcd",
    # drivers/gpu/drm/amd/amdgpu/amdgpu_device.c amdgpu_device_gpu_recover
    "amdgpu 0000:03:00.0: amdgpu: GPU reset begin!",
    "amdgpu 0000:03:00.0: amdgpu: GPU reset(2) succeeded!",
    # drivers/scsi/mpt3sas/mpt3sas_scsih.c scsih_dev_reset: "device reset: %s scmd(0x%p)"
    "sd 0:0:0:0: device reset: FAILED scmd(0x00000000a1b2c3d4)",
])
def test_other_subsystems_resets_are_not_nic_events(line: str) -> None:
    from corescope.analysis.classify import classify

    assert not classify(line).kind.startswith("nic_")
    assert not [e for e in incidents(f"[  812.402113] {line}\n") if e.kind.startswith("nic_")]


@pytest.mark.parametrize(("line", "iface"), [
    # drivers/net/ethernet/renesas/sh_eth.c sh_eth_soft_reset: netdev_err(ndev, "Device reset
    # failed\n"): the same words from a network device
    ("sh-eth ee700000.ethernet eth0: Device reset failed", "eth0"),
    # amazon/ena/ena_netdev.c ena_restore_device: dev_err(&pdev->dev, ...), no interface
    ("ena 0000:00:05.0: Device reset completed successfully, Driver info: Elastic Network "
     "Adapter (ENA) v2.8.0g", None),
    # mellanox/mlx5/core/health.c: mlx5_core_err on the PCI device
    ("mlx5_core 0000:08:00.0: health recovery succeeded", None),
])
def test_generic_reset_wording_from_a_network_device_is_a_nic_reset(
        line: str, iface: str | None) -> None:
    from corescope.analysis.classify import classify

    c = classify(line)
    assert c.kind == "nic_reset" and c.fields.get("iface") == iface
