"""A node's inventory for `corescope inventory` and fleet drift: units, kernel, boot image,
cgroup layout, NIC drivers and how NIC IRQs are placed. Parsers are pure and total; `collect`
reads under the root and runs systemctl/ethtool through the Runner, noting what it could not
ask rather than failing."""

from __future__ import annotations

import os
import re
import time

from corescope.model.inventory import Inventory, NicInfo
from corescope.rootfs import Root
from corescope.runner import Runner, ToolMissing
from corescope.sources import cgroups as cg
from corescope.sources import interrupts as irqs
from corescope.sources import netdev
from corescope.sources.boot import read_boot_id
from corescope.sources.identity import UNKNOWN, hostname_of, kernel_of
from corescope.sources.text import as_text
from corescope.sources.units import parse_systemctl_show

_KV = re.compile(r'^([A-Z0-9_]+)=(.*)$')


def parse_os_release(text: str | bytes) -> dict[str, str]:
    """/etc/os-release: KEY=value lines, values optionally quoted; anything else skipped."""
    out: dict[str, str] = {}
    for line in as_text(text).splitlines():
        m = _KV.match(line.strip())
        if not m:
            continue
        v = m.group(2).strip()
        if len(v) >= 2 and v[0] == v[-1] and v[0] in "\"'":
            v = v[1:-1]
        out[m.group(1)] = v.replace('\\"', '"')
    return out


def image_id_of(osr: dict[str, str]) -> str | None:
    """The most specific OS image id os-release gives."""
    if osr.get("IMAGE_ID"):
        return osr["IMAGE_ID"] + (f"@{osr['IMAGE_VERSION']}" if osr.get("IMAGE_VERSION") else "")
    if osr.get("BUILD_ID"):
        return f"{osr.get('ID', '?')}@{osr['BUILD_ID']}"
    if osr.get("ID"):
        return osr["ID"] + (f"-{osr['VERSION_ID']}" if osr.get("VERSION_ID") else "")
    return None


def parse_cmdline_boot_image(text: str | bytes) -> str | None:
    for tok in as_text(text).split():
        if tok.startswith("BOOT_IMAGE="):
            return tok.split("=", 1)[1] or None
    return None


def parse_unit_list(text: str | bytes) -> list[str]:
    """`systemctl list-unit-files|list-units --no-legend --plain`: the first column of lines
    that name a unit (a leading ● on failed units is dropped)."""
    out = []
    for line in as_text(text).splitlines():
        parts = line.replace("●", " ").split()
        if parts and "." in parts[0] and not parts[0].startswith("-"):
            out.append(parts[0])
    return sorted(set(out))


def parse_ethtool_driver(text: str | bytes) -> dict[str, str]:
    """`ethtool -i IFACE`: driver, version, firmware-version, ..."""
    out: dict[str, str] = {}
    for line in as_text(text).splitlines():
        k, sep, v = line.partition(":")
        if sep and k.strip():
            out[k.strip()] = v.strip()
    return out


def irq_policy(qmap: list[irqs.QueueIrq], irqbalance: bool, ncpus: int) -> tuple[str, dict]:
    """How NIC queue IRQs are placed: `irqbalance` (the daemon runs), `pinned` (each queue IRQ
    on one CPU), `all-cpus` (the kernel default mask), `mixed`, or `none` (no queue IRQs)."""
    spread = sorted({c for q in qmap for c in q.cpus})
    detail = {"irqbalance": irqbalance, "nic_queue_irqs": len(qmap), "nic_irq_cpus": spread}
    if irqbalance:
        return "irqbalance", detail
    if not qmap:
        return "none", detail
    if all(len(q.cpus) == 1 for q in qmap):
        return "pinned", detail
    if ncpus and all(len(q.cpus) >= ncpus for q in qmap):
        return "all-cpus", detail
    return "mixed", detail


def _read(root: Root, path: str) -> str | None:
    try:
        return root.read_text(path)
    except OSError:
        return None


def _irqbalance_running(root: Root) -> bool:
    try:
        pids = [p for p in os.listdir(root.path("/proc")) if p.isdigit()]
    except OSError:
        return False
    for pid in pids:
        comm = _read(root, f"/proc/{pid}/comm")
        if comm is not None and comm.strip() == "irqbalance":
            return True
    return False


def _units(root: Root, runner: Runner, notes: list[str]
           ) -> tuple[bool, list[str], list[str], list[str]]:
    pid1 = (_read(root, "/proc/1/comm") or "?").strip()
    if pid1 != "systemd":
        notes.append(f"systemd is not PID 1 (PID 1 is {pid1}): units not listed")
        return False, [], [], []
    base = ["systemctl", "--no-pager", "--no-legend", "--plain"]
    try:
        en = runner.run([*base, "list-unit-files", "--type=service", "--state=enabled"])
        fa = runner.run([*base, "list-units", "--all", "--type=service", "--state=failed"])
        sh = runner.run(["systemctl", "show", "--no-pager", "-p",
                         "Id,NRestarts,SubState,ActiveState", "--", "*.service"])
    except ToolMissing:
        notes.append("systemctl not found: units not listed")
        return False, [], [], []
    if not (en.ok and fa.ok and sh.ok):
        bad = next(r for r in (en, fa, sh) if not r.ok)
        notes.append(f"systemctl failed ({bad.returncode}): {bad.stderr.strip()[:160]}")
        return False, [], [], []
    recs, _ = parse_systemctl_show(sh.stdout)
    restarting = sorted({r.name for r in recs if r.state == "auto-restart" or (r.restarts or 0)})
    return True, parse_unit_list(en.stdout), parse_unit_list(fa.stdout), restarting


def _nics(root: Root, runner: Runner) -> list[NicInfo]:
    out = []
    have_ethtool = root.is_live and runner.which("ethtool") is not None
    for iface in netdev.list_ifaces(root):
        driver, dev = netdev.iface_driver_device(root, iface)
        if dev is None:
            continue  # virtual (bridges, veths): not a fleet difference worth listing
        version = (_read(root, f"/sys/module/{driver}/version") or "").strip() or None \
            if driver else None
        firmware = None
        if have_ethtool:
            res = runner.run(["ethtool", "-i", iface], timeout=5)
            if res.ok:
                info = parse_ethtool_driver(res.stdout)
                version = version or info.get("version") or None
                firmware = info.get("firmware-version") or None
        out.append(NicInfo(iface, driver, version, firmware))
    return out


def collect(root: Root, runner: Runner, labels: dict[str, str] | None = None,
            now: float | None = None) -> Inventory:
    notes: list[str] = []
    node = hostname_of(root)  # a --root tree's own name, never this machine's
    osr_text = _read(root, "/etc/os-release") or _read(root, "/usr/lib/os-release")
    if osr_text is None:
        notes.append("no /etc/os-release: image id not known")
    osr = parse_os_release(osr_text or "")
    layout, _ = cg.read_layout(root)
    measured, enabled, failed, restarting = _units(root, runner, notes)
    ifaces = set(netdev.list_ifaces(root))
    qmap: list[irqs.QueueIrq] = []
    text = _read(root, "/proc/interrupts")
    if text is not None:
        qmap = irqs.live_queue_map(root, irqs.parse_proc_interrupts(text), None, ifaces)
    ncpus = len(irqs.parse_cpulist(_read(root, "/sys/devices/system/cpu/online") or ""))
    policy, detail = irq_policy(qmap, _irqbalance_running(root), ncpus)
    cmdline = _read(root, "/proc/cmdline") or ""
    keep = ("ID", "VERSION_ID", "BUILD_ID", "IMAGE_ID", "IMAGE_VERSION", "PRETTY_NAME")
    return Inventory(
        node=node, time=time.time() if now is None else now, labels=dict(labels or {}),
        kernel_release=None if (release := kernel_of(root)) == UNKNOWN else release,
        kernel_version=(_read(root, "/proc/sys/kernel/version") or "").strip() or None,
        boot_id=read_boot_id(root), boot_image=parse_cmdline_boot_image(cmdline),
        image_id=image_id_of(osr), os_release={k: osr[k] for k in keep if k in osr},
        cgroup_layout=layout.kind, cgroup_memory=layout.memory,
        units_enabled=tuple(enabled), units_failed=tuple(failed),
        units_restarting=tuple(restarting), units_measured=measured,
        nics=tuple(_nics(root, runner)), irq_policy=policy, irq_detail=detail,
        notes=tuple(notes),
    )
