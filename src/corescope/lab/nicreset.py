"""`lab nicreset`: write a realistic driver stall-and-reset sequence to /dev/kmsg.

Every line ends with the `corescope-lab` marker (and a tag per run) so a real node's log never
misleads anyone later; the classifier flags those events lab=True and otherwise treats them
like real ones. The texts are the drivers' own format strings (ENA ena_netdev.c, mlx5 en_main.c, the
kernel's dev_watchdog in sch_generic.c and virtio_net's virtnet_tx_timeout)."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass

from corescope.model.events import LAB_MARKER

DRIVERS = ("ena", "mlx5_core", "virtio_net")
DEFAULT_DEVICE = {"ena": "0000:00:05.0", "mlx5_core": "0000:08:00.0", "virtio_net": "virtio2"}


@dataclass(frozen=True)
class Written:
    level: int
    text: str
    wall_before: float
    wall_after: float


def sequence(driver: str, queue: int, device: str, iface: str, cpu: int = 0
             ) -> list[tuple[int, str]]:
    """(syslog level, message) lines in the order the driver prints them."""
    p = f"{driver} {device} {iface}: "
    if driver == "ena":
        return [
            (3, p + f"TX q {queue} is paused for too long (threshold 5000000). "
                    "Time since last napi 6120000 usec. napi scheduled: 1"),
            (3, p + "napi handler hasn't been called for a long time but is scheduled"),
            (3, p + "Trigger reset is on"),
            (6, p + "Device reset completed successfully, Driver info: Elastic Network "
                    "Adapter (ENA) v2.13.0g"),
        ]
    if driver == "mlx5_core":
        return [
            (2, p + f"NETDEV WATCHDOG: CPU: {cpu}: transmit queue {queue} timed out 8192 ms"),
            (3, p + f"TX timeout on queue: {queue}, SQ: 0x1c5, CQ: 0x40a, SQ Cons: 0x5b1 "
                    "SQ Prod: 0x5b5, usecs since last trans: 8192000"),
        ]
    return [
        (2, p + f"NETDEV WATCHDOG: CPU: {cpu}: transmit queue {queue} timed out 5120 ms"),
        (3, p + f"TX timeout on queue: {queue}, sq: output.{queue}, vq: 0x1, "
                f"name: output.{queue}, 5120000 usecs ago"),
    ]


def write_lines(lines: list[tuple[int, str]], path: str = "/dev/kmsg") -> list[Written]:
    """Write each line as one record (`<level>text [corescope-lab RUN]`). RUN is one random
    tag per call, so each lab run's lines can be told from another's in the same log. One open
    file: the kernel rate-limits writes per open file at 10 lines per 5 s, and a sequence is
    shorter than that."""
    out: list[Written] = []
    import secrets  # hashlib and hmac: only when lines are written, not at start-up

    run = secrets.token_hex(4)
    fd = os.open(path, os.O_WRONLY | os.O_CLOEXEC)
    try:
        for level, text in lines:
            line = f"{text} [{LAB_MARKER} {run}]"
            before = time.time()
            os.write(fd, f"<{level}>{line}\n".encode())
            out.append(Written(level, line, before, time.time()))
    finally:
        os.close(fd)
    return out
