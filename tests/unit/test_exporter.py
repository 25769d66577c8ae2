"""`record --listen`: the real prometheus-client server, scraped over HTTP, checked by the
real `promtool check metrics`; and a plain `record` that never imports prometheus-client."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import time
import urllib.request

import numpy as np
import pytest
from prometheus_client.parser import text_string_to_metric_families

from conftest import cli_env, popen_cli
from corescope.metrics import exporter
from corescope.metrics.agent import ListenError, parse_listen
from corescope.metrics.live import LiveMetrics
from corescope.model.cgroups import MemcgCensus
from corescope.model.cores import CoreSample
from corescope.model.events import KernelEvent
from corescope.model.packed import PackedRows


def _scrape(port: int) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
        return r.read().decode()


def _fed_live() -> LiveMetrics:
    live = LiveMetrics(window_s=60, clock=lambda: 1e9 + 10)
    idle = (1, 0, 1, 98, 0, 0, 0, 0, 0, 0)
    hot = (0, 0, 97, 0, 0, 1, 2, 0, 0, 0)
    for k in range(8):
        rows = np.array([idle, hot if 2 <= k < 6 else idle])
        live.cores(CoreSample(1e9 + k + 1, 1.0, PackedRows([0, 1], rows)))
    live.census(MemcgCensus(1e9, "v2", "v2", 700, 40, 660, "test", uptime_s=3600))
    live.events([KernelEvent(1e9, "nic_reset", "x", fields={"iface": "eth0"})])
    live.sensor_health = lambda: {"cores": True, "profile": False}
    live.info["node_info"] = {"node": "n1", "kernel": "6.18", "cgroup_layout": "v2"}
    live.info["inventory"] = {"units": {"restarting": ["ecs.service"]},
                              "nics": [{"iface": "eth0", "driver": "ena", "version": "2.8"}],
                              "irq": {"policy": "irqbalance"}}
    return live


def test_scrape_is_valid_and_keeps_the_spike() -> None:
    server, _t = exporter.start(_fed_live(), "127.0.0.1", 0)
    try:
        text = _scrape(server.server_port)
    finally:
        server.shutdown()
        server.server_close()
    fams = {f.name: f for f in text_string_to_metric_families(text)}
    ratio = {(s.labels["cpu"], s.labels["mode"]): s.value
             for s in fams["corescope_cpu_mode_ratio_max"].samples}
    assert ratio[("1", "kernel")] == pytest.approx(1.0)
    assert ratio[("0", "kernel")] == pytest.approx(0.01)
    eps = {s.labels["cpu"]: s.value for s in fams["corescope_hot_core_episodes"].samples
           if s.name.endswith("_total")}
    assert eps == {"0": 0.0, "1": 1.0}
    assert fams["corescope_memcg_dying"].samples[0].value == 660
    assert fams["corescope_memcg_dying_growth_per_hour"].samples[0].value == pytest.approx(660)
    up = {s.labels["sensor"]: s.value for s in fams["corescope_sensor_up"].samples}
    assert up == {"cores": 1.0, "profile": 0.0}
    assert fams["corescope_node_info"].samples[0].labels["kernel"] == "6.18"
    assert any(s.labels == {"unit": "ecs.service", "state": "restarting"}
               for s in fams["corescope_unit_state"].samples)
    promtool = shutil.which("promtool")
    if promtool is None:
        pytest.skip("promtool (Debian prometheus) not installed")
    res = subprocess.run([promtool, "check", "metrics"], input=text, capture_output=True,
                         text=True, timeout=60)
    assert res.returncode == 0, res.stdout + res.stderr


def test_parse_listen() -> None:
    assert parse_listen("127.0.0.1:9723") == ("127.0.0.1", 9723, True)
    assert parse_listen(":9100") == ("127.0.0.1", 9100, True)
    assert parse_listen("[::1]:9723") == ("::1", 9723, True)
    assert parse_listen("0.0.0.0:9723") == ("0.0.0.0", 9723, False)
    for bad in ("9723", "host:x", "127.0.0.1:65536", "example.com:80"):
        with pytest.raises(ListenError):
            parse_listen(bad)


def test_plain_record_never_imports_prometheus_client(tmp_path) -> None:
    code = ("import sys\nfrom corescope.views.cli import main\n"
            "try:\n    main(sys.argv[1:])\nexcept SystemExit:\n    pass\n"
            "print('LOADED' if 'prometheus_client' in sys.modules else 'CLEAN')")
    args = ["record", "--store", str(tmp_path / "s"), "--duration", "1s", "--no-profile",
            "--no-census", "--no-kmsg", "--no-netdev"]
    plain = subprocess.run([sys.executable, "-c", code, *args], capture_output=True,
                           text=True, timeout=60, env=cli_env())
    assert plain.stdout.strip().endswith("CLEAN"), plain.stdout + plain.stderr
    listening = subprocess.run([sys.executable, "-c", code, *args, "--listen", "127.0.0.1:0"],
                               capture_output=True, text=True, timeout=60, env=cli_env())
    assert listening.stdout.strip().endswith("LOADED"), listening.stdout + listening.stderr


def test_record_listen_serves_and_warns_off_loopback(tmp_path) -> None:
    proc = popen_cli("record", "--store", str(tmp_path / "s"), "--duration", "6s",
                     "--no-profile", "--no-census", "--no-kmsg", "--no-netdev",
                     "--listen", "0.0.0.0:0")
    try:
        line = proc.stderr.readline() + proc.stderr.readline()
        assert "is not loopback" in line
        port = int(re.search(r"metrics on http://[^ ]+:(\d+)/metrics", line).group(1))
        deadline = time.monotonic() + 20
        text = ""
        while time.monotonic() < deadline and 'mode="kernel"' not in text:
            time.sleep(0.5)
            text = _scrape(port)
        assert 'corescope_cpu_mode_ratio_max{cpu="0",mode="kernel"}' in text
    finally:
        proc.wait(timeout=30)
    assert proc.returncode == 0
