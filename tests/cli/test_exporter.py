"""`record --listen`: our exposition scraped over HTTP, checked by the real `promtool check
metrics` and byte for byte against prometheus-client's own renderers; the small HTTP server's
keep-alive and errors; and a plain `record` that never loads any of it."""

from __future__ import annotations

import http.client
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request

import numpy as np
import pytest
from prometheus_client.parser import text_string_to_metric_families

from corescope.metrics import exporter
from corescope.metrics.agent import ListenError, parse_listen
from corescope.metrics.live import LiveMetrics
from corescope.model.cgroups import MemcgCensus
from corescope.model.cores import CoreSample
from corescope.model.events import KernelEvent
from corescope.model.packed import PackedRows
from support import cli_env, popen_cli


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
    live.set_info("node_info", {"node": "n1", "kernel": "6.18", "cgroup_layout": "v2"})
    live.set_info("inventory", {"units": {"restarting": ["ecs.service"]},
                                "nics": [{"iface": "eth0", "driver": "ena", "version": "2.8"}],
                                "irq": {"policy": "irqbalance"}})
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


def test_plain_record_never_loads_the_exporter(tmp_path) -> None:
    """A plain `record` loads none of the metrics code; `--listen` loads ours and still not
    prometheus-client (a test-only reference now)."""
    code = ("import sys\nfrom corescope.views.cli import main\n"
            "try:\n    main(sys.argv[1:])\nexcept SystemExit:\n    pass\n"
            "print('EXPORTER' if 'corescope.metrics.exporter' in sys.modules else 'CLEAN',\n"
            "      'PROMCLIENT' if 'prometheus_client' in sys.modules else 'NOCLIENT')")
    args = ["record", "--store", str(tmp_path / "s"), "--duration", "1s", "--no-profile",
            "--no-census", "--no-kmsg", "--no-netdev"]
    plain = subprocess.run([sys.executable, "-c", code, *args], capture_output=True,
                           text=True, timeout=60, env=cli_env())
    assert plain.stdout.strip().endswith("CLEAN NOCLIENT"), plain.stdout + plain.stderr
    listening = subprocess.run([sys.executable, "-c", code, *args, "--listen", "127.0.0.1:0"],
                               capture_output=True, text=True, timeout=60, env=cli_env())
    assert listening.stdout.strip().endswith("EXPORTER NOCLIENT"), (listening.stdout
                                                                    + listening.stderr)


def test_record_listen_serves_and_warns_off_loopback(tmp_path) -> None:
    # a long duration, stopped by SIGTERM once scraped: a short one could end the recorder
    # (and its listener) while a slow, loaded machine was still polling for the first sample
    proc = popen_cli("record", "--store", str(tmp_path / "s"), "--duration", "120s",
                     "--no-profile", "--no-census", "--no-kmsg", "--no-netdev",
                     "--listen", "0.0.0.0:0")
    try:
        # the warning and the address come first, in either order, with any other start-up
        # line (a sensor that is off) between them
        line = ""
        for _ in range(20):
            line += proc.stderr.readline()
            if "is not loopback" in line and re.search(r"metrics on http://[^ ]+:\d+/", line):
                break
        assert "is not loopback" in line, line
        port = int(re.search(r"metrics on http://[^ ]+:(\d+)/metrics", line).group(1))
        deadline = time.monotonic() + 60
        text = ""
        while time.monotonic() < deadline and 'mode="kernel"' not in text:
            time.sleep(0.5)
            text = _scrape(port)
        assert 'corescope_cpu_mode_ratio_max{cpu="0",mode="kernel"}' in text
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
    assert proc.returncode == 0


PROMETHEUS_ACCEPT = ("application/openmetrics-text;version=1.0.0,application/openmetrics-text;"
                     "version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1")


def _rich_live() -> LiveMetrics:
    """Every family, big numbers (Go's exponent form), and label values needing escapes."""
    from corescope.model.cgroups import RestartRecord, StatReadCost

    live = _fed_live()
    live.census(MemcgCensus(1e9 + 5, "v2", "v2", 30_000, 40, 29_960, "test", uptime_s=600))
    live.stat_costs([StatReadCost(1e9, "memory.stat", 0.0144, 0.02, 3),
                     StatReadCost(1e9, "memory.numa_stat", 12.5, 13.0, 3)])
    live.restarts([RestartRecord(1e9, "systemd-unit", 'we"ird\\unit\nx', 3_000_000)])
    live.set_info("diagnosis", {"zombie_memcg_leak": 1.0, "undetermined": 0.0})
    return live


def test_exposition_is_prometheus_clients_byte_for_byte() -> None:
    """prometheus-client parses our OpenMetrics and renders the same families again, in both
    formats: its bytes must be ours (names, labels, HELP/TYPE lines, value formatting)."""
    from prometheus_client.exposition import generate_latest
    from prometheus_client.openmetrics.exposition import generate_latest as om_latest
    from prometheus_client.openmetrics.parser import (
        text_string_to_metric_families as om_families,
    )

    exp = exporter.Exposition(_rich_live())
    om_type, om = exp(PROMETHEUS_ACCEPT)
    text_type, text = exp("")
    assert om_type.startswith("application/openmetrics-text; version=1.0.0")
    assert text_type.startswith("text/plain; version=0.0.4")
    fams = list(om_families(om.decode()))
    assert {"corescope_unit_restarts", "corescope_memcg_dying_threshold_projected_timestamp_"
            "seconds", "corescope_stat_read_seconds", "corescope_diagnosis"} <= {
                f.name for f in fams}

    class Reference:
        def collect(self):
            return fams

    assert om_latest(Reference()).decode() == om.decode()
    assert generate_latest(Reference()).decode() == text.decode()
    assert b"e+06" in text and b'unit="we\\"ird\\\\unit\\nx"' in text


def test_format_follows_the_accept_header() -> None:
    from corescope.metrics.exposition import wants_openmetrics

    assert wants_openmetrics(PROMETHEUS_ACCEPT)
    assert wants_openmetrics("application/openmetrics-text")
    assert not wants_openmetrics("")
    assert not wants_openmetrics("text/plain;version=0.0.4")
    assert not wants_openmetrics("application/openmetrics-text;version=0.0.1")
    assert not wants_openmetrics("text/plain;version=1.0.0,application/openmetrics-text")


def test_unchanged_state_is_served_from_the_last_render() -> None:
    now = [1e9 + 10.2]
    live = LiveMetrics(window_s=60, clock=lambda: now[0])
    idle = (1, 0, 1, 98, 0, 0, 0, 0, 0, 0)
    live.cores(CoreSample(1e9 + 10, 1.0, PackedRows([0], np.array([idle]))))
    exp = exporter.Exposition(live)
    first = exp("")[1]
    assert exp("")[1] is first  # nothing changed: the same bytes, not re-rendered
    hot = (0, 0, 97, 0, 0, 1, 2, 0, 0, 0)
    live.cores(CoreSample(1e9 + 11, 1.0, PackedRows([0], np.array([hot]))))
    second = exp("")[1]
    assert second is not first
    # the per-CPU lines are rebuilt from the new arrays, the rest is unchanged
    assert b'corescope_cpu_mode_ratio_max{cpu="0",mode="kernel"} 1.0\n' in second
    assert b'corescope_cpu_mode_ratio_max{cpu="0",mode="kernel"} 0.01\n' in first
    assert b'corescope_cpu_saturated_seconds_total{cpu="0",mode="sys"} 1.0' in second
    assert b'corescope_hot_core_episodes_total{cpu="0"} 0.0' in second
    now[0] += 1.0  # a new second: the trailing window may have aged, render again
    assert exp("")[1] is not second
    live.set_info("diagnosis", {"healthy": 1.0})
    assert b'corescope_diagnosis{root_cause="healthy"} 1.0' in exp("")[1]


def _raw(port: int, data: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(data)
        out = b""
        while chunk := s.recv(65536):
            out += chunk
    return out


def test_http_keeps_alive_and_answers_garbage_with_errors() -> None:
    server, thread = exporter.start(_fed_live(), "127.0.0.1", 0)
    port = server.server_port
    try:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        bodies = []
        for _ in range(3):  # one connection, three scrapes (as Prometheus does)
            conn.request("GET", "/metrics", headers={"Accept": PROMETHEUS_ACCEPT})
            r = conn.getresponse()
            assert r.status == 200 and r.getheader("Connection") is None
            bodies.append(r.read())
        assert bodies[0].endswith(b"# EOF\n") and len(set(bodies)) == 1
        conn.request("HEAD", "/metrics")
        r = conn.getresponse()
        assert r.status == 200 and r.read() == b"" and int(r.getheader("Content-Length")) > 0
        conn.request("GET", "/other")
        r = conn.getresponse()
        assert r.status == 404
        r.read()
        conn.close()
        # two requests in one packet, the second closing: both answered, then closed
        two = _raw(port, b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"
                         b"GET /metrics?x=1 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        assert two.count(b"HTTP/1.1 200 OK") == 2
        assert b"HTTP/1.1 200 OK" in _raw(port, b"GET /metrics HTTP/1.0\r\n\r\n")
        assert _raw(port, b"POST /metrics HTTP/1.1\r\nContent-Length: 2\r\n\r\nhi"
                    ).startswith(b"HTTP/1.1 405")
        assert _raw(port, b"\x00\xff garbage\r\n\r\n").startswith(b"HTTP/1.1 400")
        assert _raw(port, b"GET /metrics HTTP/1.1\r\nno colon\r\n\r\n").startswith(
            b"HTTP/1.1 400")
        assert _raw(port, b"GET /metrics HTTP/1.1\r\nX: " + b"a" * 20000).startswith(
            b"HTTP/1.1 431")
        # more clients than the limit: the longest idle ones are closed, serving goes on
        idle = [socket.create_connection(("127.0.0.1", port)) for _ in range(80)]
        try:
            assert _scrape(port).startswith("# HELP")
        finally:
            for s in idle:
                s.close()
        assert _scrape(port).startswith("# HELP")
    finally:
        server.shutdown()
        server.server_close()
    thread.join(10)
    assert not thread.is_alive()


def test_every_help_says_what_its_series_counts() -> None:
    """A counter's HELP says what it counts and since when: kernel events include the ring's
    backlog on a new store's first start (the kmsg sensor imports it and the tap counts it),
    so it must not claim "since the recorder started"; the thresholds named are the code's."""
    from corescope.analysis.episodes import DEFAULT_MIN_DURATION, DEFAULT_THRESHOLD
    from corescope.model.cgroups import DEFAULT_THRESHOLDS as TH

    live = LiveMetrics()
    # a backlog event from long before this recorder started is counted, as read
    live.events([KernelEvent(time=time.time() - 86400, kind="nic_reset", raw="old reset",
                             fields={"iface": "eth0"})])
    body = exporter.Exposition(live)("")[1].decode()
    helps = {m.group(1): m.group(2) for m in re.finditer(r"^# HELP (\S+) (.*)$", body, re.M)}
    assert 'corescope_kernel_events_total{iface="eth0",kind="nic_reset"} 1.0' in body
    events = helps["corescope_kernel_events_total"]
    assert "since the recorder started" not in events and "backlog" in events
    for fam in (exporter.SATURATED, exporter.EPISODES):
        assert f"{DEFAULT_THRESHOLD:g} %" in fam.text_head
        assert "since this recorder started" in fam.text_head
    assert f"{DEFAULT_MIN_DURATION:g} s" in exporter.EPISODES.text_head
    head = exporter.THRESHOLD.text_head
    assert f"{TH.max_dying:,}" in head and f"{TH.ratio:g}x live" in head
    assert f"{TH.ratio_min_dying:,}" in head
