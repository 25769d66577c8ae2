"""A node's inventory: what should be the same on every node of a fleet, and often is not.
No I/O; `to_json`/`from_json` are the `inventory --json` contract (schema 1)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from corescope.errors import InvalidInput
from corescope.model.common import JSON_SCHEMA

SCHEMA = JSON_SCHEMA  # an inventory file is a --json output: its version is the contract's


@dataclass(frozen=True)
class NicInfo:
    iface: str
    driver: str | None
    version: str | None = None
    firmware: str | None = None


@dataclass(frozen=True)
class Inventory:
    node: str
    time: float
    labels: dict[str, str] = field(default_factory=dict)
    kernel_release: str | None = None
    kernel_version: str | None = None
    boot_id: str | None = None
    boot_image: str | None = None  # BOOT_IMAGE= on the kernel command line
    image_id: str | None = None  # the OS image: IMAGE_ID/IMAGE_VERSION, BUILD_ID, or ID+VERSION_ID
    os_release: dict[str, str] = field(default_factory=dict)
    cgroup_layout: str | None = None
    cgroup_memory: str | None = None
    units_enabled: tuple[str, ...] = ()
    units_failed: tuple[str, ...] = ()
    units_restarting: tuple[str, ...] = ()
    units_measured: bool = False  # False: systemd was not asked (not PID 1, a replay)
    nics: tuple[NicInfo, ...] = ()
    irq_policy: str | None = None
    irq_detail: dict[str, Any] = field(default_factory=dict)
    notes: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA, "node": self.node, "time": self.time, "labels": self.labels,
            "kernel": {"release": self.kernel_release, "version": self.kernel_version},
            "boot": {"boot_id": self.boot_id, "boot_image": self.boot_image,
                     "image_id": self.image_id, "os_release": self.os_release},
            "cgroup": {"layout": self.cgroup_layout, "memory": self.cgroup_memory},
            "units": {"measured": self.units_measured, "enabled": list(self.units_enabled),
                      "failed": list(self.units_failed),
                      "restarting": list(self.units_restarting)},
            "nics": [{"iface": n.iface, "driver": n.driver, "version": n.version,
                      "firmware": n.firmware} for n in self.nics],
            "irq": {"policy": self.irq_policy, **self.irq_detail},
            "notes": list(self.notes),
        }


class InventoryError(InvalidInput, ValueError):
    pass


def _strs(v: Any) -> tuple[str, ...]:
    return tuple(str(x) for x in v) if isinstance(v, list) else ()


def _opt(v: Any) -> str | None:
    return None if v is None else str(v)


def from_json(data: Any) -> Inventory:
    """An inventory from its JSON; InventoryError (with what is wrong) for anything else."""
    if not isinstance(data, dict):
        raise InventoryError("not a JSON object")
    if data.get("schema") != SCHEMA:
        raise InventoryError(f"unknown schema {data.get('schema')!r} (want {SCHEMA})")
    node = data.get("node")
    if not isinstance(node, str) or not node:
        raise InventoryError("no node name")

    def sub(key: str) -> dict[str, Any]:
        v = data.get(key)
        return v if isinstance(v, dict) else {}

    kernel, boot, cg, units, irq = sub("kernel"), sub("boot"), sub("cgroup"), sub("units"), \
        sub("irq")
    nics = []
    for n in data.get("nics") or []:
        if isinstance(n, dict) and isinstance(n.get("iface"), str):
            nics.append(NicInfo(n["iface"], _opt(n.get("driver")), _opt(n.get("version")),
                                _opt(n.get("firmware"))))
    labels = data.get("labels")
    t = data.get("time")
    return Inventory(
        node=node, time=float(t) if isinstance(t, int | float) else 0.0,
        labels={str(k): str(v) for k, v in labels.items()} if isinstance(labels, dict) else {},
        kernel_release=_opt(kernel.get("release")), kernel_version=_opt(kernel.get("version")),
        boot_id=_opt(boot.get("boot_id")), boot_image=_opt(boot.get("boot_image")),
        image_id=_opt(boot.get("image_id")),
        os_release={str(k): str(v) for k, v in (boot.get("os_release") or {}).items()}
        if isinstance(boot.get("os_release"), dict) else {},
        cgroup_layout=_opt(cg.get("layout")), cgroup_memory=_opt(cg.get("memory")),
        units_enabled=_strs(units.get("enabled")), units_failed=_strs(units.get("failed")),
        units_restarting=_strs(units.get("restarting")),
        units_measured=bool(units.get("measured")),
        nics=tuple(nics), irq_policy=_opt(irq.get("policy")),
        irq_detail={k: v for k, v in irq.items() if k != "policy"},
        notes=_strs(data.get("notes")),
    )
