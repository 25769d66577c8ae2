"""Latency from a write to /dev/kmsg to the event being classified and committed to the store,
against the floor: a bare reader blocked on /dev/kmsg seeing the same record.

Needs root (writes /dev/kmsg). Prints median and p99 of both and their ratio.
Run: python bench/kmsg_latency.py [N]
"""

from __future__ import annotations

import os
import select
import statistics
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

from _common import REPO  # noqa: F401  (puts src/ on sys.path)
from corescope.rootfs import Root
from corescope.runner import Runner
from corescope.sensors import kmsg as kmsg_sensor
from corescope.sensors.base import RecordOptions, SensorEnv
from corescope.sensors.kmsg import KmsgSensor
from corescope.sources.kmsg_reader import KmsgReader, open_kmsg
from corescope.store.db import Store


def p99(xs: list[float]) -> float:
    return sorted(xs)[min(len(xs) - 1, round(0.99 * (len(xs) - 1)))]


def main(n: int = 300) -> None:
    if os.geteuid() != 0:
        sys.exit("kmsg_latency needs root (it writes /dev/kmsg)")
    tag = uuid.uuid4().hex[:8]
    floor_seen: dict[str, float] = {}
    stop = threading.Event()
    fd = open_kmsg(Root(), from_end=True)

    def floor_reader() -> None:
        reader = KmsgReader(lambda k: os.read(fd, k))
        while not stop.is_set():
            select.select([fd], [], [], 0.1)
            for rec in reader.read_available():
                seen = time.time()
                if tag in rec.message:
                    floor_seen[rec.message.rsplit(" ", 1)[-1]] = seen

    # when each line's transaction has committed (the sensor's own insert, timed on return)
    committed: dict[str, float] = {}
    real_insert = kmsg_sensor.store_events.insert_events

    def timed_insert(store, events, *a, **kw):  # type: ignore[no-untyped-def]
        n = real_insert(store, events, *a, **kw)
        done = time.time()
        for e in events:
            if tag in e.raw and e.kind == "nic_tx_stall":
                committed[e.raw.rsplit(" ", 1)[-1]] = done
        return n

    kmsg_sensor.store_events.insert_events = timed_insert  # type: ignore[assignment]
    th = threading.Thread(target=floor_reader, daemon=True)
    th.start()
    with tempfile.TemporaryDirectory() as tmp:
        store = Store.open(Path(tmp) / "s")
        env = SensorEnv(Root(), Runner(), Path(tmp), RecordOptions())
        sensor = KmsgSensor(env)
        status = sensor.open(store)
        assert status.ok, status.detail
        written: dict[str, float] = {}
        try:
            for i in range(n):
                key = f"{tag}-{i}"
                line = (f"<3>ena 0000:00:05.0 eth0: TX q {i % 32} is paused for too long "
                        f"(threshold 5000000) [corescope-lab] bench {key}\n")
                w = os.open("/dev/kmsg", os.O_WRONLY)  # fresh file: per-open rate limit
                try:
                    written[key] = time.time()
                    os.write(w, line.encode())
                finally:
                    os.close(w)
                time.sleep(0.01)
            time.sleep(0.5)
        finally:
            sensor.close()
            stop.set()
            th.join()
            os.close(fd)
        rows = store.query("SELECT raw, stored_at, kind FROM kernel_events WHERE raw LIKE ?",
                           (f"%bench {tag}-%",))
        store.close()
    stored = {raw.rsplit(" ", 1)[-1]: kind for raw, _at, kind in rows}
    assert all(kind == "nic_tx_stall" for kind in stored.values())
    lat = [(committed[k] - t) * 1e3 for k, t in written.items() if k in stored]
    flo = [(floor_seen[k] - t) * 1e3 for k, t in written.items() if k in floor_seen]
    print(f"kmsg latency, {len(lat)}/{n} lines stored and classified")
    print(f"  write → classified and committed: median {statistics.median(lat):.3f} ms, "
          f"p99 {p99(lat):.3f} ms")
    print(f"  write → bare reader (floor): median {statistics.median(flo):.3f} ms, "
          f"p99 {p99(flo):.3f} ms")
    print(f"  ratio to floor (median): {statistics.median(lat) / statistics.median(flo):.1f}x")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 300)
