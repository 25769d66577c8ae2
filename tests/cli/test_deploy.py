"""deploy/: the alert rules under promtool, the manifests under offline schema validators, the
NPD plugin against real `corescope doctor` exit codes, the systemd unit under
systemd-analyze, the Grafana dashboard's structure against what the exporter really emits."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from support import REPO, run_cli

DEPLOY = REPO / "deploy"


def _docs(path: Path) -> list[dict]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


# --- Prometheus rules ---------------------------------------------------------------------


def test_every_alert_has_a_promtool_unit_test() -> None:
    rules = yaml.safe_load((DEPLOY / "prometheus" / "rules.yaml").read_text())
    alerts = {r["alert"] for g in rules["groups"] for r in g["rules"] if "alert" in r}
    tests = yaml.safe_load((DEPLOY / "prometheus" / "rules_test.yaml").read_text())
    fired = {c["alertname"] for t in tests["tests"] for c in t.get("alert_rule_test", [])
             if c.get("exp_alerts")}
    assert alerts and alerts == fired, alerts ^ fired
    # hot-core alerts read the max gauge, never an average of node_cpu_seconds_total
    for g in rules["groups"]:
        for r in g["rules"]:
            assert "node_cpu_seconds_total" not in r["expr"]


def test_promtool_rules() -> None:
    promtool = shutil.which("promtool")
    if promtool is None:
        pytest.skip("promtool (Debian prometheus) not installed")
    check = subprocess.run([promtool, "check", "rules", "rules.yaml"], cwd=DEPLOY / "prometheus",
                           capture_output=True, text=True, timeout=60)
    assert check.returncode == 0, check.stdout + check.stderr
    res = subprocess.run([promtool, "test", "rules", "rules_test.yaml"],
                         cwd=DEPLOY / "prometheus", capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "SUCCESS" in res.stdout


# --- Kubernetes -----------------------------------------------------------------------------


def test_manifests_validate_offline() -> None:
    import kubernetes_validate

    kinds = []
    for f in ("namespace.yaml", "daemonset.yaml", "service.yaml"):
        for doc in _docs(DEPLOY / "kubernetes" / f):
            # strict: unknown fields (a typo) fail too
            kubernetes_validate.validate(doc, "1.29.0", strict=True)
            kinds.append(doc["kind"])
    assert sorted(kinds) == ["DaemonSet", "Namespace", "Service", "ServiceAccount"]


def test_a_broken_manifest_is_caught() -> None:
    import kubernetes_validate

    ds = _docs(DEPLOY / "kubernetes" / "daemonset.yaml")[0]
    ds["spec"]["template"]["spec"]["hostPid"] = True  # wrong case
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(ds, "1.29.0", strict=True)


def test_podmonitor_structure() -> None:
    """A structural test: the prometheus-operator CRD schema is not in kubernetes-validate
    (or any validator package installable here without side effects), so check the fields
    the operator requires and the ones we use, with the CRD's own duration pattern, and that
    it selects the DaemonSet's pods and names a port they expose."""
    doc = _docs(DEPLOY / "kubernetes" / "podmonitor.yaml")[0]
    assert doc["apiVersion"] == "monitoring.coreos.com/v1" and doc["kind"] == "PodMonitor"
    assert doc["metadata"]["name"] and doc["metadata"]["namespace"] == "corescope"
    spec = doc["spec"]
    assert set(spec) <= {"selector", "podMetricsEndpoints", "namespaceSelector", "jobLabel"}
    duration = re.compile(r"^(0|(([0-9]+)y)?(([0-9]+)w)?(([0-9]+)d)?(([0-9]+)h)?(([0-9]+)m)?"
                          r"(([0-9]+)s)?(([0-9]+)ms)?)$")
    allowed = {"port", "path", "interval", "scrapeTimeout", "relabelings", "scheme"}
    for ep in spec["podMetricsEndpoints"]:
        assert set(ep) <= allowed, set(ep) - allowed
        for k in ("interval", "scrapeTimeout"):
            assert duration.match(ep[k]), ep[k]
        for r in ep.get("relabelings", []):
            assert set(r) <= {"sourceLabels", "targetLabel", "action", "regex", "replacement"}
    ds = _docs(DEPLOY / "kubernetes" / "daemonset.yaml")[0]
    pod = ds["spec"]["template"]
    assert spec["selector"]["matchLabels"].items() <= pod["metadata"]["labels"].items()
    ports = {p["name"] for c in pod["spec"]["containers"] for p in c.get("ports", [])}
    assert spec["podMetricsEndpoints"][0]["port"] in ports


def test_daemonset_shape() -> None:
    ds = _docs(DEPLOY / "kubernetes" / "daemonset.yaml")[0]
    spec = ds["spec"]["template"]["spec"]
    assert spec["hostPID"] is True
    assert {"operator": "Exists"} in spec["tolerations"]  # every node, any taint
    c = spec["containers"][0]
    assert c["args"][:2] == ["record", "--root=/host"]
    mounts = {m["mountPath"] for m in c["volumeMounts"]}
    assert {"/host/proc", "/host/sys", "/host/dev/kmsg", "/var/lib/corescope"} <= mounts
    sc = c["securityContext"]
    assert sc["privileged"] is False and sc["capabilities"]["drop"] == ["ALL"]
    assert "PERFMON" in sc["capabilities"]["add"] and "SYSLOG" in sc["capabilities"]["add"]
    assert "SYS_ADMIN" not in sc["capabilities"]["add"]
    assert c["resources"]["limits"]["memory"] and c["resources"]["limits"]["cpu"]
    # every added capability is justified by a comment right above it
    text = (DEPLOY / "kubernetes" / "daemonset.yaml").read_text().splitlines()
    for cap in sc["capabilities"]["add"]:
        i = next(k for k, ln in enumerate(text) if ln.strip() == f"- {cap}")
        assert text[i - 1].strip().startswith("#"), cap


# --- node-problem-detector ------------------------------------------------------------------


def test_npd_plugin_runs_doctor_and_maps_its_exit_codes(tmp_path: Path) -> None:
    cfg = json.loads((DEPLOY / "node-problem-detector" / "corescope-plugin.json").read_text())
    assert cfg["plugin"] == "custom"
    conds = {c["type"] for c in cfg["conditions"]}
    permanent = [r for r in cfg["rules"] if r["type"] == "permanent"]
    assert permanent and all(r["condition"] in conds for r in permanent)

    def seconds(s: str) -> float:
        return float(s.rstrip("s")) * (60 if s.endswith("m") else 1) if s[-1] in "sm" else 0

    for rule in cfg["rules"]:
        assert rule["path"].endswith("/corescope") and rule["args"][0] == "doctor"
        doc_secs = float(rule["args"][rule["args"].index("--seconds") + 1])
        assert seconds(rule["timeout"]) > doc_secs + 10
    # NPD's custom plugin protocol: exit 0 OK, 1 NonOK, anything else Unknown; doctor's
    # contract is 0 healthy, 1 findings, 2 usage/environment: run the real command
    args = cfg["rules"][0]["args"]
    live = [a for a in args]
    live[live.index("--root") + 1] = "/"
    live[live.index("--store") + 1] = str(tmp_path / "store")
    live[live.index("--seconds") + 1] = "2"
    res = run_cli(*live)
    assert res.returncode in (0, 1), res.stderr
    assert res.stdout.strip()  # NPD shows the output as the condition message
    bad = run_cli("doctor", "--seconds", "2", "--root", str(tmp_path / "nothing"),
                  "--store", str(tmp_path / "s2"))
    assert bad.returncode == 2  # no /proc/stat under that root: Unknown, not OK


# --- systemd --------------------------------------------------------------------------------


def test_systemd_unit_verifies(tmp_path: Path) -> None:
    unit = (DEPLOY / "systemd" / "corescope.service").read_text()
    keys = dict(ln.split("=", 1) for ln in unit.splitlines() if "=" in ln and
                not ln.startswith("#"))
    assert keys["Type"] == "notify" and keys["WatchdogSec"]
    assert int(keys["CPUWeight"]) > 100 and int(keys["Nice"]) < 0
    for k in ("NoNewPrivileges", "ProtectSystem", "ProtectHome", "PrivateTmp",
              "CapabilityBoundingSet", "RestrictAddressFamilies"):
        assert k in keys
    sa = shutil.which("systemd-analyze")
    if sa is None:
        pytest.skip("systemd-analyze not installed")
    # the unit as installed, with ExecStart pointing at this checkout's corescope
    f = tmp_path / "corescope.service"
    f.write_text(unit.replace("/usr/local/bin/corescope", f"{sys.executable} -m corescope"))
    res = subprocess.run([sa, "verify", str(f)], capture_output=True, text=True, timeout=60)
    assert res.returncode == 0 and not res.stderr.strip() and not res.stdout.strip(), \
        res.stdout + res.stderr


# --- Grafana --------------------------------------------------------------------------------


def _exported_metric_names() -> set[str]:
    from prometheus_client.parser import text_string_to_metric_families
    from test_exporter import _fed_live

    from corescope.metrics import exporter

    server, _t = exporter.start(_fed_live(), "127.0.0.1", 0)
    try:
        import urllib.request

        with urllib.request.urlopen(f"http://127.0.0.1:{server.server_port}/metrics") as r:
            text = r.read().decode()
    finally:
        server.shutdown()
        server.server_close()
    names = {s.name for f in text_string_to_metric_families(text) for s in f.samples}
    # families whose values the fed state does not hold (but the exporter defines)
    return names | {"corescope_diagnosis", "corescope_unit_restarts_total",
                    "corescope_stat_read_seconds"}


_PROMQL_WORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "and", "or",
                 "unless", "bool", "offset", "max", "min", "sum", "count", "avg", "rate",
                 "increase", "changes", "max_over_time", "label_values", "time"}


def test_dashboard_structure() -> None:
    d = json.loads((DEPLOY / "grafana" / "dashboard.json").read_text())
    assert d["uid"] and d["title"] and isinstance(d["panels"], list)
    ids = [p["id"] for p in d["panels"]]
    assert len(ids) == len(set(ids))
    variables = {v["name"] for v in d["templating"]["list"]}
    cells = set()
    for p in d["panels"]:
        g = p["gridPos"]
        assert g["x"] >= 0 and g["x"] + g["w"] <= 24
        for x in range(g["x"], g["x"] + g["w"]):
            for y in range(g["y"], g["y"] + g["h"]):
                assert (x, y) not in cells, f"panel {p['title']} overlaps"
                cells.add((x, y))
        assert p["datasource"]["uid"] == "${datasource}"
    known = _exported_metric_names()
    exprs = [t["expr"] for p in d["panels"] for t in p["targets"]]
    exprs += [a["expr"] for a in d["annotations"]["list"]]
    for e in exprs:
        for var in re.findall(r"\$(\w+)", e):
            assert var in variables or var.startswith("__"), (var, e)
        for name in re.findall(r"\b(corescope_\w+)", e):
            assert name in known, f"{name} is not something the exporter emits"
    kinds = {p["type"] for p in d["panels"]}
    assert "heatmap" in kinds  # the per-core max heatmap
    titles = " ".join(p["title"].lower() for p in d["panels"])
    for want in ("per-core", "zombie", "events", "verdict"):
        assert want in titles
    heat = next(p for p in d["panels"] if p["type"] == "heatmap")
    assert "corescope_cpu_mode_ratio_max" in heat["targets"][0]["expr"]
