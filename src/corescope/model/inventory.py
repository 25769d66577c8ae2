"""A node's inventory: what should be the same on every node of a fleet, and often is not.
No I/O; `to_json`/`from_json` are the `inventory --json` contract (schema 1)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from corescope.errors import InvalidInput
from corescope.model.common import JSON_SCHEMA
from corescope.model.text import valid_text

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


# an inventory file is someone else's input: every value is checked for its type, strings are
# capped and made valid Unicode, so one hostile file is skipped with a reason or read, never a
# traceback
MAX_STR = 4096
MAX_ITEMS = 100_000
EPOCH_MAX = 4102444800.0  # 2100-01-01: a later inventory time is garbage


def _str(v: Any) -> str | None:
    """A string field: a JSON string (lone surrogates escaped, capped), a small number, or
    None for anything else."""
    if isinstance(v, str):
        return valid_text(v[:MAX_STR])
    if isinstance(v, int | float) and not isinstance(v, bool) and abs(v) < 1e15:
        return str(v)
    return None


def _strs(v: Any) -> tuple[str, ...]:
    if not isinstance(v, list):
        return ()
    return tuple(s for s in (_str(x) for x in v[:MAX_ITEMS]) if s is not None)


def _opt(v: Any) -> str | None:
    return _str(v)


def _map(v: Any) -> dict[str, str]:
    if not isinstance(v, dict):
        return {}
    out = {}
    for k, x in list(v.items())[:MAX_ITEMS]:
        key, val = _str(k), _str(x)
        if key is not None and val is not None:
            out[key] = val
    return out


def _scalar(v: Any, nested: bool = True) -> bool:
    """A value fit to pass through: null, a bool, a bounded number, a short valid string, or
    (one level) a list of those."""
    if v is None or isinstance(v, bool):
        return True
    if isinstance(v, float):
        return math.isfinite(v)
    if isinstance(v, int):
        return abs(v) < 1 << 63
    if isinstance(v, str):
        return len(v) <= MAX_STR and valid_text(v) == v
    if nested and isinstance(v, list):
        return len(v) <= MAX_ITEMS and all(_scalar(x, False) for x in v)
    return False


def _time(v: Any) -> float:
    if isinstance(v, bool) or not isinstance(v, int | float):
        return 0.0
    try:
        t = float(v)
    except OverflowError:  # a 400-digit integer
        return 0.0
    return t if math.isfinite(t) and 0.0 <= t < EPOCH_MAX else 0.0


def from_json(data: Any) -> Inventory:
    """An inventory from its JSON; InventoryError (with what is wrong) for anything else."""
    if not isinstance(data, dict):
        raise InventoryError("not a JSON object")
    if data.get("schema") != SCHEMA:
        schema = data.get("schema")
        raise InventoryError(f"unknown schema {_str(schema) or type(schema).__name__!r} "
                             f"(want {SCHEMA})")
    node = _str(data.get("node")) if isinstance(data.get("node"), str) else None
    if not node:
        raise InventoryError("no node name")

    def sub(key: str) -> dict[str, Any]:
        v = data.get(key)
        return v if isinstance(v, dict) else {}

    kernel, boot, cg, units, irq = sub("kernel"), sub("boot"), sub("cgroup"), sub("units"), \
        sub("irq")
    nics = []
    raw_nics = data.get("nics")
    for n in raw_nics[:MAX_ITEMS] if isinstance(raw_nics, list) else ():
        if isinstance(n, dict) and isinstance(n.get("iface"), str):
            nics.append(NicInfo(valid_text(n["iface"][:MAX_STR]), _opt(n.get("driver")),
                                _opt(n.get("version")), _opt(n.get("firmware"))))
    return Inventory(
        node=node, time=_time(data.get("time")), labels=_map(data.get("labels")),
        kernel_release=_opt(kernel.get("release")), kernel_version=_opt(kernel.get("version")),
        boot_id=_opt(boot.get("boot_id")), boot_image=_opt(boot.get("boot_image")),
        image_id=_opt(boot.get("image_id")), os_release=_map(boot.get("os_release")),
        cgroup_layout=_opt(cg.get("layout")), cgroup_memory=_opt(cg.get("memory")),
        units_enabled=_strs(units.get("enabled")), units_failed=_strs(units.get("failed")),
        units_restarting=_strs(units.get("restarting")),
        units_measured=units.get("measured") is True,
        nics=tuple(nics), irq_policy=_opt(irq.get("policy")),
        # only scalars: the detail is passed through to --json, never compared
        irq_detail={k: v for k, v in irq.items() if k != "policy" and _scalar(v)},
        notes=_strs(data.get("notes")),
    )
