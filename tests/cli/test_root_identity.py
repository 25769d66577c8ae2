"""A --root tree is someone else's machine: its host name, boot id and kernel come from the
tree or are "unknown"; a memory controller /proc/cgroups lists but no mount holds gives the
kernel's count; NICs are found in sys/class/net as node_exporter finds them.

The trees are written here in the kernel's formats: proc/sys/kernel/{hostname,osrelease},
random/boot_id (a UUID line), proc/version (`Linux version R (builder) ...`, init/version.c),
proc/cgroups (kernel/cgroup/cgroup-v1.c proc_cgroupstats_show), sysfs class links
(`sys/class/net/eth0 -> ../../devices/pci0000:00/0000:00:05.0/net/eth0`, drivers/base/core.c)."""

from __future__ import annotations

import os
import socket
from pathlib import Path

from corescope.rootfs import Root
from corescope.sources import cgroups as cg
from corescope.sources import netdev
from corescope.sources.identity import UNKNOWN, cpu_count, host_identity


def _w(base: Path, rel: str, text: str) -> None:
    p = base / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text)


def test_identity_comes_from_the_tree(tmp_path: Path) -> None:
    _w(tmp_path, "proc/sys/kernel/hostname", "ip-10-0-3-7\n")
    _w(tmp_path, "proc/sys/kernel/random/boot_id", "2f1c7a52-9c1e-4b55-8a3e-3f0c1d2e4b6a\n")
    _w(tmp_path, "proc/version", "Linux version 5.10.215-203.850.amzn2.x86_64 (mockbuild@ip-10-0"
       "-39-185) (gcc10-gcc (GCC) 10.5.0, GNU ld version 2.35.2-9.amzn2.0.1) #1 SMP Tue Apr 23 "
       "20:32:19 UTC 2024\n")
    ident = host_identity(Root(tmp_path))
    assert ident.hostname == "ip-10-0-3-7"
    assert ident.boot_id == "2f1c7a52-9c1e-4b55-8a3e-3f0c1d2e4b6a"
    assert ident.kernel == "5.10.215-203.850.amzn2.x86_64"


def test_etc_hostname_when_proc_has_none(tmp_path: Path) -> None:
    _w(tmp_path, "etc/hostname", "# set by cloud-init\nnode-a17\n")
    assert host_identity(Root(tmp_path)).hostname == "node-a17"


def test_a_tree_without_identity_is_unknown_never_this_machine(tmp_path: Path) -> None:
    _w(tmp_path, "proc/stat", "cpu  1 0 1 10 0 0 0 0 0 0\ncpu0 1 0 1 10 0 0 0 0 0 0\n")
    ident = host_identity(Root(tmp_path))
    assert ident.hostname == ident.boot_id == ident.kernel == UNKNOWN
    assert socket.gethostname() not in (ident.hostname,)
    assert cpu_count(Root(tmp_path)) == 1


def test_the_live_root_is_this_machine() -> None:
    ident = host_identity(Root())
    assert ident.hostname == os.uname().nodename and ident.kernel == os.uname().release


def _census(tmp_path: Path, rows: str) -> cg.CensusResult:
    _w(tmp_path, "proc/cgroups", "#subsys_name\thierarchy\tnum_cgroups\tenabled\n" + rows)
    root = Root(tmp_path)
    layout, _ = cg.read_layout(root)
    return cg.take_census(root, layout, now=1.7e9)


def test_memory_listed_but_not_mounted_gives_the_kernel_count(tmp_path: Path) -> None:
    c = _census(tmp_path, "cpuset\t5\t47\t1\ncpu\t3\t172\t1\nmemory\t7\t234\t1\n"
                "pids\t10\t170\t1\n").census
    assert c is not None and c.kernel_count == 234 and c.live is None and c.dying is None
    assert c.hierarchy == "v1" and "not mounted" in c.source


def test_a_disabled_memory_controller_is_still_no_census(tmp_path: Path) -> None:
    res = _census(tmp_path, "memory\t0\t1\t0\n")
    assert res.census is None and "disabled" in res.diagnostics[-1].message


def _sysfs_nic(base: Path, iface: str, bus: str, driver: str | None, link: bool) -> None:
    dev = base / "sys/devices/pci0000:00" / bus
    (dev / "net" / iface / "statistics").mkdir(parents=True)
    _w(dev / "net" / iface, "statistics/tx_packets", "12\n")
    (base / "sys/class/net").mkdir(parents=True, exist_ok=True)
    target = f"../../devices/pci0000:00/{bus}/net/{iface}"
    if link:
        os.symlink(target, base / "sys/class/net" / iface)
        os.symlink(f"../../../{bus}", dev / "net" / iface / "device")
        if driver:
            (base / "sys/bus/pci/drivers" / driver).mkdir(parents=True)
            os.symlink(f"../../../bus/pci/drivers/{driver}", dev / "driver")
    else:  # a fixture archive's unpacking: the link is a file holding its target
        _w(base, f"sys/class/net/{iface}", target + "/")
        if driver:
            _w(dev, "uevent", f"DRIVER={driver}\nPCI_CLASS=20000\n")


def test_nics_are_found_as_node_exporter_finds_them(tmp_path: Path) -> None:
    _sysfs_nic(tmp_path, "eth0", "0000:00:05.0", "ena", link=True)
    _sysfs_nic(tmp_path, "eth1", "0000:00:06.0", "e1000e", link=False)
    _w(tmp_path, "sys/class/net/bonding_masters", "bond0\n")  # a plain file: no interface
    (tmp_path / "sys/class/net/bond0/bonding").mkdir(parents=True)  # virtual: a directory
    (tmp_path / "sys/devices/virtual/net/veth1").mkdir(parents=True)
    os.symlink("../../devices/virtual/net/veth1", tmp_path / "sys/class/net/veth1")
    root = Root(tmp_path)
    assert netdev.list_ifaces(root) == ["bond0", "eth0", "eth1", "veth1"]
    assert netdev.list_ifaces(root, with_device=True) == ["eth0", "eth1"]
    assert netdev.iface_driver_device(root, "eth0") == ("ena", "0000:00:05.0")
    assert netdev.iface_driver_device(root, "eth1") == ("e1000e", "0000:00:06.0")
    assert netdev.iface_driver_device(root, "veth1") == (None, None)
    assert netdev.read_sys(root, "eth1", ["tx_packets"])[0] == {"tx_packets": 12}


def test_doctor_inventory_and_zombies_name_the_tree(tmp_path: Path) -> None:
    from support import run_cli

    tree = tmp_path / "tree"
    _w(tree, "proc/stat", "cpu  8 0 4 40 0 0 0 0 0 0\ncpu0 4 0 2 20 0 0 0 0 0 0\n"
       "cpu1 4 0 2 20 0 0 0 0 0 0\nintr 1 0\nbtime 1700000000\n")
    _w(tree, "proc/cgroups", "#subsys_name\thierarchy\tnum_cgroups\tenabled\n"
       "memory\t7\t234\t1\n")
    _w(tree, "etc/hostname", "replayed-node\n")
    store = str(tmp_path / "store")
    doc = run_cli("--root", str(tree), "--store", store, "doctor", "--seconds", "1")
    assert "corescope doctor on replayed-node (2 CPUs" in doc.stdout, doc.stdout + doc.stderr
    inv = run_cli("--root", str(tree), "inventory")
    assert "node replayed-node" in inv.stdout and socket.gethostname() not in inv.stdout
    zom = run_cli("--root", str(tree), "--store", store, "zombies")
    assert "234 held by the kernel, live unknown" in zom.stdout, zom.stdout + zom.stderr
    assert "no v1 memory hierarchy" not in zom.stdout
