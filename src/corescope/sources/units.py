"""Restart evidence: systemd units, the journal's restart records, CRI and docker containers.

Each restart of a unit or container makes fresh cgroups, and each cgroup it leaves behind
with page cache still charged is a zombie memcg. Parsers are pure and total; `collect`
runs the tools through the Runner and says which ones were absent.
"""

from __future__ import annotations

import bisect
import json
import os
import re
import time
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from corescope.model.cgroups import RestartRecord
from corescope.model.common import Diagnostic, SensorStatus
from corescope.rootfs import Root
from corescope.runner import Runner, RunResult, ToolMissing
from corescope.sources.artifacts.dates import EPOCH_MAX
from corescope.sources.kmsg_saved import journal_objects
from corescope.sources.text import as_text, count_of, int64, json_text

RESTART_MESSAGE_ID = "5eb03494b6584870a536b337290809b3"
SYSTEMCTL_PROPS = ("Id", "NRestarts", "SubState", "ActiveState", "Result", "ControlGroup",
                   "Restart")
RESTART_ANNOTATION = "io.kubernetes.container.restartCount"
DOCKER_SOCKET = "/var/run/docker.sock"  # the client's default engine endpoint


def _obj(d: dict[str, Any], key: str) -> dict[str, Any]:
    """d[key] when it is an object, else an empty one (a listing's optional sections)."""
    v = d.get(key)
    return v if isinstance(v, dict) else {}


def _str(d: dict[str, Any], key: str, default: str = "") -> str:
    """d[key] when it is a string, else `default`."""
    v = d.get(key)
    return v if isinstance(v, str) else default


def _int(value: Any) -> int | None:
    """A count (a JSON number or a string of digits) a store can hold, else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return int64(value) if value >= 0 else None
    if isinstance(value, str):
        return count_of(value.strip())
    return None


def _unreadable(raw: Any, parsed: int | None) -> bool:
    """A value was given but is no count (a word, a negative or out-of-range number)."""
    return parsed is None and raw not in (None, "", "[not set]")


# --- systemctl show ------------------------------------------------------------------------


def parse_systemctl_show(text: str | bytes, t: float = 0.0, source: str = "systemctl show"
                         ) -> tuple[list[RestartRecord], list[Diagnostic]]:
    """`systemctl show -p Id,NRestarts,SubState,... '*.service'`: blank-line separated
    blocks of Key=Value. One record per block with an Id."""
    records: list[RestartRecord] = []
    diags: list[Diagnostic] = []
    block: dict[str, str] = {}
    start = 1

    def flush() -> None:
        if not block:
            return
        unit = block.get("Id") or block.get("Names", "").split(" ")[0]
        if not unit:
            diags.append(Diagnostic(source, "block without Id", start))
            return
        n = _int(block.get("NRestarts", ""))
        if _unreadable(block.get("NRestarts"), n):
            diags.append(Diagnostic(source, f"{unit}: unreadable NRestarts "
                                    f"{block['NRestarts'][:30]!r}", start))
        cg = block.get("ControlGroup") or None
        records.append(RestartRecord(
            t=t, kind="systemd-unit", name=unit, restarts=n,
            state=block.get("SubState", ""), cgroup=cg,
            detail={k: block[k] for k in ("ActiveState", "Result", "Restart") if k in block},
        ))

    for lineno, line in enumerate(as_text(text).splitlines(), 1):
        if not line.strip():
            flush()
            block = {}
            start = lineno + 1
            continue
        key, sep, value = line.partition("=")
        if not sep or not key or " " in key:
            diags.append(Diagnostic(source, f"not Key=Value: {line[:80]!r}", lineno))
            continue
        if key == "Id" and "Id" in block:
            # no blank line between units (some versions with -p): a new block starts here
            flush()
            block = {}
            start = lineno
        block[key] = value
    flush()
    return records, diags


# --- journal --------------------------------------------------------------------------------


@dataclass(frozen=True)
class JournalRestart:
    """One "Scheduled restart job, restart counter is at N." journal entry."""

    t: float
    unit: str
    n_restarts: int | None
    message: str = ""


def _field(entry: dict[str, Any], key: str) -> str | None:
    """journalctl -o json gives a string, a list (repeated field) or bytes as ints."""
    v = entry.get(key)
    if isinstance(v, str):
        return v
    if isinstance(v, list) and v:
        if all(isinstance(x, int) and 0 <= x < 256 for x in v):
            return bytes(v).decode("utf-8", errors="replace")
        first = v[-1]
        return first if isinstance(first, str) else None
    if isinstance(v, int) and not isinstance(v, bool):
        return str(v)
    return None


_COUNTER = re.compile(r"restart counter is at (\d+)")


def parse_journal_restarts(text: str | bytes, source: str = "journalctl -o json"
                           ) -> tuple[list[JournalRestart], list[Diagnostic]]:
    """JSON lines from `journalctl -o json MESSAGE_ID=5eb03494...`; other entries skipped."""
    out: list[JournalRestart] = []
    diags: list[Diagnostic] = []
    # any of journalctl's JSON forms (json, json-pretty, json-seq, json-sse)
    for k, entry in enumerate(journal_objects(as_text(text), diags, source), 1):
        if not isinstance(entry, dict):
            diags.append(Diagnostic(source, f"entry {k} is not an object"))
            continue
        if _field(entry, "MESSAGE_ID") != RESTART_MESSAGE_ID:
            continue
        unit = _field(entry, "UNIT") or _field(entry, "USER_UNIT")
        if not unit:
            diags.append(Diagnostic(source, f"restart entry {k} without UNIT"))
            continue
        msg = _field(entry, "MESSAGE") or ""
        n = _int(_field(entry, "N_RESTARTS"))
        if n is None:
            m = _COUNTER.search(msg)
            n = count_of(m.group(1)) if m else None
        if n is None and (_field(entry, "N_RESTARTS") or _COUNTER.search(msg)):
            diags.append(Diagnostic(source, f"restart entry {k} of {unit}: unreadable restart "
                                    "counter (not a count a store can hold)"))
        raw_ts = _field(entry, "__REALTIME_TIMESTAMP")
        ts = _int(raw_ts)
        if _unreadable(raw_ts, ts) or (ts is not None and not 0 < ts <= EPOCH_MAX * 1e6):
            diags.append(Diagnostic(source, f"restart entry of {unit} has no readable time "
                                    f"(__REALTIME_TIMESTAMP {str(raw_ts)[:24]})"))
            ts = None
        out.append(JournalRestart(ts / 1e6 if ts is not None else 0.0, unit, n, msg))
    return out, diags


# --- crictl ---------------------------------------------------------------------------------


def parse_crictl_ps(text: str | bytes, t: float = 0.0, source: str = "crictl ps -a -o json"
                    ) -> tuple[list[RestartRecord], list[Diagnostic]]:
    """`crictl ps -a -o json`. Every attempt of a container is its own entry; one record per
    (pod, container name) with the highest attempt / restartCount annotation seen."""
    diags: list[Diagnostic] = []
    try:
        doc = json.loads(json_text(text, diags, source))
    except (ValueError, RecursionError):
        return [], [Diagnostic(source, "not JSON")]
    items = doc.get("containers") if isinstance(doc, dict) else None
    if not isinstance(items, list):
        return [], [Diagnostic(source, "no 'containers' list")]
    return _crictl_records(items, t, source, diags), diags


def _crictl_records(items: list[Any], t: float, source: str, diags: list[Diagnostic],
                    scale: float = 1e-9) -> list[RestartRecord]:
    """One record per (pod, container name) of crictl's containers (JSON objects, or table
    rows put in their shape)."""
    best: dict[tuple[str, str], dict[str, Any]] = {}
    for i, c in enumerate(items):
        if not isinstance(c, dict):
            diags.append(Diagnostic(source, f"containers[{i}] is not an object"))
            continue
        meta = _obj(c, "metadata")
        labels = _obj(c, "labels")
        ann = _obj(c, "annotations")
        name = meta.get("name") or labels.get("io.kubernetes.container.name")
        if not isinstance(name, str) or not name:
            diags.append(Diagnostic(source, f"containers[{i}] has no name"))
            continue
        pod = labels.get("io.kubernetes.pod.name")
        ns = labels.get("io.kubernetes.pod.namespace")
        uid = labels.get("io.kubernetes.pod.uid")
        attempt = _int(meta.get("attempt"))
        rc = _int(ann.get(RESTART_ANNOTATION))
        for what, raw, got in (("attempt", meta.get("attempt"), attempt),
                               (RESTART_ANNOTATION, ann.get(RESTART_ANNOTATION), rc)):
            if _unreadable(raw, got):
                diags.append(Diagnostic(source, f"containers[{i}] ({name}): unreadable "
                                        f"{what} {str(raw)[:30]!r}"))
        count = max((x for x in (attempt, rc) if x is not None), default=None)
        key = (str(uid or c.get("podSandboxId") or ""), name)
        entry = best.setdefault(key, {
            "name": f"{ns}/{pod}/{name}" if isinstance(pod, str) and isinstance(ns, str)
            else name,
            "restarts": None, "state": "", "instances": 0, "exited": 0, "uid": uid,
            "attempt": None, "annotation": None, "created": None, "ids": [], "times": [],
            "attempts": set(),
        })
        entry["instances"] += 1
        cid = c.get("id")
        if isinstance(cid, str) and cid and len(entry["ids"]) < 32:
            entry["ids"].append(cid[:64])  # an OOM line or a cgroup path names it
        state = _str(c, "state")
        if state == "CONTAINER_EXITED":
            entry["exited"] += 1
        created = _int(c.get("createdAt"))
        if created is not None and not c.get("_ordinal") and len(entry["times"]) < 64:
            entry["times"].append(created)
        newest = entry["created"] is None or (created is not None and created > entry["created"])
        if newest:
            entry["created"] = created
            entry["state"] = state
        if count is not None and (entry["restarts"] is None or count > entry["restarts"]):
            entry["restarts"] = count
        if attempt is not None:
            entry["attempts"].add(attempt)
        if attempt is not None and (entry["attempt"] is None or attempt > entry["attempt"]):
            entry["attempt"] = attempt
        if rc is not None and (entry["annotation"] is None or rc > entry["annotation"]):
            entry["annotation"] = rc
    records = [
        RestartRecord(
            t=t, kind="container", name=e["name"], restarts=e["restarts"], state=e["state"],
            cgroup=f"pod{e['uid']}" if isinstance(e["uid"], str) and e["uid"] else None,
            detail={"attempt": e["attempt"], RESTART_ANNOTATION: e["annotation"],
                    "instances": e["instances"], "exited_instances": e["exited"],
                    "ids": e["ids"], **attempt_spacing(e["times"], e["attempts"], scale)},
        )
        for e in best.values()
    ]
    return records


def attempt_spacing(times: list[int], attempts: set[int], scale: float
                    ) -> dict[str, Any]:
    """How fast the listed attempts of one container followed each other: `crictl ps -a`
    keeps the exited attempts beside the running one, and their creation times seconds
    apart are a crash loop even when the count is small and the newest attempt runs.
    `scale` turns the listing's times into seconds (createdAt is in nanoseconds; the table's
    CREATED is `N seconds ago`, already seconds). Nothing when fewer than two attempts
    with distinct times are listed."""
    ts = sorted(set(times))
    if len(ts) < 2:
        return {}
    span = (ts[-1] - ts[0]) * scale
    # the attempt numbers when listed (an attempt 7 beside attempt 3 is 4 restarts apart,
    # the ones between were removed by the kubelet's garbage collection), else the rows
    gaps = (max(attempts) - min(attempts)) if len(attempts) >= 2 else len(ts) - 1
    if span <= 0 or gaps <= 0:
        return {}
    out: dict[str, Any] = {"attempts_listed": len(ts), "attempt_span_s": round(span, 3),
                           "attempt_gaps": gaps}
    # when the newest attempt began: a pair of crashes days ago is no loop now
    if scale == 1.0:
        out["last_attempt_ago_s"] = AGO_BASE - ts[-1]
    else:
        out["last_attempt_at"] = round(ts[-1] * scale, 3)
    return out


# `crictl ps -a` as a table (cri-tools cmd/crictl/container.go; Go's tabwriter, minwidth 20,
# padding 3): CONTAINER IMAGE CREATED STATE NAME ATTEMPT POD ID POD NAMESPACE; releases
# before 1.20 or so print `CONTAINER ID` and stop at `POD ID`. ATTEMPT is the restart count.
CRICTL_HEADERS = {"CONTAINER": "id", "CONTAINER ID": "id", "IMAGE": "image",
                  "CREATED": "created", "STATE": "state", "NAME": "name", "ATTEMPT": "attempt",
                  "POD ID": "pod_id", "POD": "pod", "NAMESPACE": "namespace"}


def crictl_table_header(line: str) -> bool:
    names = {n for n, _ in table_columns(line)}
    return {"STATE", "NAME", "ATTEMPT"} <= names and bool({"CONTAINER", "CONTAINER ID"} & names)


def parse_crictl_table(text: str | bytes, t: float = 0.0, source: str = "crictl ps -a"
                       ) -> tuple[list[RestartRecord], list[Diagnostic]]:
    """`crictl ps -a` (the table): the same records as its `-o json`, from what the table
    shows (no pod UID, no restartCount annotation: ATTEMPT is the count)."""
    lines = [ln for ln in as_text(text).splitlines() if ln.strip()]
    if not lines or not crictl_table_header(lines[0]):
        return [], [Diagnostic(source, "no crictl ps header (CONTAINER ... STATE NAME ATTEMPT)",
                               1)]
    cols = table_columns(lines[0])
    at = {CRICTL_HEADERS[n]: i for i, (n, _) in enumerate(cols) if n in CRICTL_HEADERS}
    starts = [s for _, s in cols]
    diags: list[Diagnostic] = []
    items: list[Any] = []
    for lineno, line in enumerate(lines[1:], 2):
        cells = display_cells(line, starts)

        def cell(f: str, cells: list[str] = cells) -> str:
            return cells[at[f]] if f in at else ""

        name, attempt = cell("name"), count_of(cell("attempt"))
        if not name or attempt is None:
            diags.append(Diagnostic(source, f"unreadable row: {line[:80]!r}", lineno))
            continue
        state = cell("state").upper()
        labels = {k: v for k, v in (("io.kubernetes.pod.name", cell("pod")),
                                     ("io.kubernetes.pod.namespace", cell("namespace")))
                  if v and v != "unknown"}  # crictl prints `unknown` for a missing label
        items.append({
            "id": cell("id"), "podSandboxId": cell("pod_id"),
            "metadata": {"name": name, "attempt": attempt}, "labels": labels,
            "state": state if state.startswith("CONTAINER_") else f"CONTAINER_{state}",
            # crictl lists the newest first: the first row of a container is its state now
            # (rows created in the same second keep that order: the first wins a tie)
            **({"createdAt": AGO_BASE - ago} if (ago := ago_s(cell("created"))) is not None else
               {"createdAt": len(lines) - lineno, "_ordinal": True}),
        })
    return _crictl_records(items, t, source, diags, scale=1.0), diags


# the table's CREATED (`N seconds ago`) as a time: AGO_BASE − N, newer is larger
AGO_BASE = 10**12
# go-units HumanDuration, as crictl's CREATED prints it with " ago"
_AGO = re.compile(r"^(?:(less than a second)|(about a minute)|(about an hour)|"
                  r"(\d{1,12}) (second|minute|hour|day|week|month|year)s?) ago$", re.IGNORECASE)
_AGO_S = {"second": 1, "minute": 60, "hour": 3600, "day": 86400, "week": 7 * 86400,
          "month": 30 * 86400, "year": 365 * 86400}


def ago_s(text: str) -> int | None:
    """Seconds before the listing that `10 seconds ago`, `About a minute ago`, `3 hours
    ago` mean (whole seconds; coarser past a minute, as the tool prints it)."""
    m = _AGO.match(text.strip())
    if m is None:
        return None
    if m.group(1):
        return 0
    if m.group(2):
        return 60
    if m.group(3):
        return 3600
    n = int(m.group(4))
    return n * _AGO_S[m.group(5).lower()] if n < 10**6 else None


# --- docker ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class DockerPs:
    id: str
    name: str
    image: str
    state: str  # running | restarting | exited | created | paused | dead
    status: str  # "Restarting (1) 4 seconds ago"
    exit_code: int | None = None


_STATUS_CODE = re.compile(r"^(?:Exited|Restarting) \((-?\d{1,10})\)")


def _state_of(status: str) -> str:
    s = status.strip().lower()
    for word in ("restarting", "exited", "created", "dead", "removal"):
        if s.startswith(word):
            return word
    if s.startswith("up") and "paused" in s:
        return "paused"
    return "running" if s.startswith("up") else ""


def _ps_row(idv: str, name: str, image: str, status: str, state: str = "") -> DockerPs:
    m = _STATUS_CODE.match(status.strip())
    return DockerPs(idv, name.split(",")[0], image, state or _state_of(status), status,
                    int(m.group(1)) if m else None)


def parse_docker_ps(text: str | bytes, source: str = "docker ps -a"
                    ) -> tuple[list[DockerPs], list[Diagnostic]]:
    """`docker ps -a` as JSON lines (--format '{{json .}}') or as a table (the default, or
    any `--format 'table ...'` columns)."""
    lines = [ln for ln in as_text(text).splitlines() if ln.strip()]
    if not lines:
        return [], []
    if lines[0].lstrip().startswith("{"):
        return _docker_json_lines(lines, source)
    return _docker_table(lines, source)


def _docker_json_lines(lines: list[str], source: str) -> tuple[list[DockerPs], list[Diagnostic]]:
    out: list[DockerPs] = []
    diags: list[Diagnostic] = []
    for lineno, line in enumerate(lines, 1):
        try:
            d = json.loads(json_text(line, diags, source))
        except (ValueError, RecursionError):
            diags.append(Diagnostic(source, f"not JSON: {line[:60]!r}", lineno))
            continue
        if not isinstance(d, dict) or not isinstance(d.get("ID"), str):
            diags.append(Diagnostic(source, "entry without ID", lineno))
            continue
        vals = {k: _str(d, k) for k in ("ID", "Names", "Image", "Status", "State")}
        out.append(_ps_row(vals["ID"], vals["Names"], vals["Image"], vals["Status"],
                           vals["State"]))
    return out, diags


# `docker ps` table headers (docker/cli formatter/container.go: the header of each template
# placeholder), by placeholder; `podman ps` and `nerdctl ps` print the same names
DOCKER_HEADERS = {
    "CONTAINER ID": "ID", "NAMES": "Names", "IMAGE": "Image", "COMMAND": "Command",
    "CREATED AT": "CreatedAt", "CREATED": "RunningFor", "PORTS": "Ports", "STATE": "State",
    "STATUS": "Status", "SIZE": "Size", "LABELS": "Labels", "MOUNTS": "Mounts",
    "LOCAL VOLUMES": "LocalVolumes", "NETWORKS": "Networks", "PLATFORM": "Platform",
    "HEALTH STATUS": "HealthStatus", "IP ADDRESSES": "IPAddresses",
}
# header names are words one space apart; columns at least two spaces apart (docker's
# tabwriter pads 3, podman's 2)
_HEADER_NAME = re.compile(r"\S+(?: \S+)*")


def table_columns(header: str) -> list[tuple[str, int]]:
    """(name, start column) of each header of a tabwriter table."""
    return [(m.group(), m.start()) for m in _HEADER_NAME.finditer(header.rstrip())]


def docker_table_header(line: str) -> bool:
    """Whether `line` is the header of a `docker ps` table: the default one or any
    `--format 'table ...'` set of placeholders, naming a container (ID or NAMES)."""
    names = [n for n, _ in table_columns(line)]
    known = [n for n in names if n in DOCKER_HEADERS]
    return (len(known) >= 2 and 2 * len(known) > len(names)
            and bool({"CONTAINER ID", "NAMES"} & set(known)))


def display_cells(line: str, starts: list[int]) -> list[str]:
    """The cells of a row cut at the header's columns. docker's tabwriter aligns by display
    width (an East Asian wide character takes two columns), Python indexes characters."""
    if not line.isascii():
        col, idx = 0, []
        for ch in line:
            idx.append(col)
            col += 2 if unicodedata.east_asian_width(ch) in "WF" else 1
        idx.append(col)
        # idx never decreases: a binary search per column (a scan each was quadratic, minutes
        # for a long row under a header of thousands of columns)
        pos = [min(bisect.bisect_left(idx, s), len(line)) for s in starts]
    else:
        pos = starts
    return [line[a:b].strip() for a, b in zip(pos, [*pos[1:], None], strict=True)]


def _docker_table(lines: list[str], source: str) -> tuple[list[DockerPs], list[Diagnostic]]:
    """`docker ps` as a table: the default columns or any `--format 'table {{.Names}}\t...'`
    set, in any order, read by header name (their starts are the columns: tabwriter pads every
    cell of a column to one width)."""
    header = lines[0]
    cols = table_columns(header)
    fields = [DOCKER_HEADERS.get(n) for n, _ in cols]
    if not docker_table_header(header):
        return [], [Diagnostic(source, f"unknown header: {header[:80]!r}", 1)]
    at = {f: i for i, f in enumerate(fields) if f is not None}
    diags: list[Diagnostic] = []
    if "Status" not in at and "State" not in at:
        diags.append(Diagnostic(source, "no STATUS or STATE column: the containers are listed "
                                "but whether they restart or exited cannot be told", 1))
    starts = [s for _, s in cols]
    out: list[DockerPs] = []
    for lineno, line in enumerate(lines[1:], 2):
        cells = display_cells(line, starts)

        def cell(f: str, cells: list[str] = cells) -> str:
            return cells[at[f]] if f in at else ""

        idv, name = cell("ID").split(" ")[0], cell("Names")
        if not (idv or name):
            diags.append(Diagnostic(source, f"short row: {line[:80]!r}", lineno))
            continue
        out.append(_ps_row(idv, name or idv[:12], cell("Image"), cell("Status"),
                           cell("State").lower()))
    return out, diags


def parse_docker_inspect(text: str | bytes, t: float = 0.0, source: str = "docker inspect"
                         ) -> tuple[list[RestartRecord], list[Diagnostic]]:
    """`docker inspect ID...`: a JSON array with RestartCount and State per container."""
    try:
        doc = json.loads(json_text(text))
    except (ValueError, RecursionError):
        return [], [Diagnostic(source, "not JSON")]
    if not isinstance(doc, list):
        return [], [Diagnostic(source, "not a JSON array")]
    out: list[RestartRecord] = []
    diags: list[Diagnostic] = []
    for i, c in enumerate(doc):
        if not isinstance(c, dict) or not isinstance(c.get("Id"), str):
            diags.append(Diagnostic(source, f"[{i}] has no Id"))
            continue
        st = _obj(c, "State")
        hc = _obj(c, "HostConfig")
        pol = _obj(hc, "RestartPolicy")
        name = _str(c, "Name", c["Id"][:12])
        detail: dict[str, Any] = {"restart_policy": pol.get("Name"),
                                  "exit_code": st.get("ExitCode"), "id": c["Id"][:12]}
        created = rfc3339(c.get("Created"))
        if created is not None:
            detail["counted_since"] = created  # RestartCount counts from the creation
        restarts = _int(c.get("RestartCount"))
        if _unreadable(c.get("RestartCount"), restarts):
            diags.append(Diagnostic(source, f"[{i}] ({name}): unreadable RestartCount "
                                    f"{str(c.get('RestartCount'))[:30]!r}"))
        out.append(RestartRecord(
            t=t, kind="docker-container", name=name.lstrip("/") or c["Id"][:12],
            restarts=restarts,
            state=_str(st, "Status"),
            cgroup=c["Id"],
            detail=detail,
        ))
    return out, diags


_FRACTION = re.compile(r"(\.\d{6})\d+")


def rfc3339(stamp: Any) -> float | None:
    """An RFC 3339 time as Go prints it (`2026-11-02T10:00:00.123456789Z`: nanoseconds,
    which Python reads to microseconds), as epoch seconds; None when unreadable or zero
    (`0001-01-01T00:00:00Z`, Go's zero time)."""
    if not isinstance(stamp, str) or not stamp:
        return None
    from datetime import datetime

    try:
        t = datetime.fromisoformat(_FRACTION.sub(r"\1", stamp).replace("Z", "+00:00"))
    except ValueError:
        return None
    if t.tzinfo is None:
        return None
    v = t.timestamp()
    return v if 0 < v <= EPOCH_MAX else None


# --- live collection ------------------------------------------------------------------------


@dataclass
class RestartEvidence:
    records: list[RestartRecord] = field(default_factory=list)
    journal: list[JournalRestart] = field(default_factory=list)
    statuses: list[SensorStatus] = field(default_factory=list)
    diagnostics: list[Diagnostic] = field(default_factory=list)


def _pid1(root: Root) -> str:
    try:
        return root.read_text("/proc/1/comm").strip()
    except OSError:
        return "?"


def collect(root: Root, runner: Runner, now: float | None = None,
            journal_since: float | None = None, timeout: float = 10.0) -> RestartEvidence:
    """Ask systemd, the journal, crictl and docker; each absent tool is said so, not hidden."""
    now = time.time() if now is None else now
    ev = RestartEvidence()
    _collect_systemd(root, runner, now, journal_since, timeout, ev)
    _collect_crictl(runner, now, timeout, ev)
    _collect_docker(root, runner, now, timeout, ev)
    return ev


def _collect_systemd(root: Root, runner: Runner, now: float, since: float | None,
                     timeout: float, ev: RestartEvidence) -> None:
    pid1 = _pid1(root)
    if pid1 != "systemd":
        ev.statuses.append(SensorStatus("systemd", False, f"systemd is not PID 1 (PID 1 is "
                                        f"{pid1}): unit restarts (NRestarts, journal) not "
                                        "measured"))
        return
    argv = ["systemctl", "show", "--no-pager", "-p", ",".join(SYSTEMCTL_PROPS), "--",
            "*.service"]
    res = _run_tool(runner, argv, timeout, ev, "systemd", "unit restarts")
    if res is None:
        return
    recs, d = parse_systemctl_show(res.stdout, now)
    ev.records += recs
    ev.diagnostics += d
    detail = f"{len(recs)} services"
    jargv = ["journalctl", "-o", "json", "--no-pager", "-b",
             f"--since=@{int(since if since is not None else now - 3600)}",
             f"MESSAGE_ID={RESTART_MESSAGE_ID}"]
    try:
        jres = runner.run(jargv, timeout=timeout)
        if jres.ok:
            ev.journal, d = parse_journal_restarts(jres.stdout)
            ev.diagnostics += d
            detail += f"; {len(ev.journal)} journal restart entries"
        else:
            detail += f"; journalctl failed: {jres.stderr.strip()[:120]}"
    except ToolMissing:
        detail += "; journalctl not found (restart times from the journal not measured)"
    ev.statuses.append(SensorStatus("systemd", True, detail))


def _run_tool(runner: Runner, argv: list[str], timeout: float, ev: RestartEvidence,
              sensor: str, what: str) -> RunResult | None:
    """Run one evidence tool; on a missing tool or a failure, say what was not measured."""
    try:
        res = runner.run(argv, timeout=timeout)
    except ToolMissing:
        ev.statuses.append(SensorStatus(sensor, False, f"{argv[0]} not found: {what} not "
                                        "measured"))
        return None
    if not res.ok:
        ev.statuses.append(SensorStatus(sensor, False, f"{argv[0]} {argv[1]} failed "
                                        f"({res.returncode}): {res.stderr.strip()[:200]}"))
        return None
    return res


def _collect_crictl(runner: Runner, now: float, timeout: float, ev: RestartEvidence) -> None:
    res = _run_tool(runner, ["crictl", "ps", "-a", "-o", "json"], timeout, ev, "crictl",
                    "CRI container restarts")
    if res is None:
        return
    recs, d = parse_crictl_ps(res.stdout, now)
    ev.records += recs
    ev.diagnostics += d
    ev.statuses.append(SensorStatus("crictl", True, f"{len(recs)} containers"))


def docker_engine_missing(root: Root, environ: Mapping[str, str] | None = None) -> str | None:
    """Why `docker ps` cannot reach an engine, known without running it, or None when it may.
    The client (a Go program) spends ~15 ms of CPU just to fail, on every doctor run and
    every restart check of the recorder, on the many nodes that keep the CLI without an
    engine. It talks to $DOCKER_HOST, else the current context ($DOCKER_CONTEXT, else the
    config's currentContext), else the default socket: only the last is checked here."""
    env = os.environ if environ is None else environ
    if env.get("DOCKER_HOST") or env.get("DOCKER_CONTEXT", "default") not in ("", "default"):
        return None
    if _docker_config_context(env) not in ("", "default"):
        return None
    if os.path.exists(root.path(DOCKER_SOCKET)):
        return None
    return f"no docker engine: {DOCKER_SOCKET} does not exist and DOCKER_HOST is unset"


def _docker_config_context(env: Mapping[str, str]) -> str | None:
    """The client config's currentContext ("" when none is set); None when the config
    cannot be read as JSON (then the client is asked, and says what is wrong)."""
    base = env.get("DOCKER_CONFIG") or os.path.join(env.get("HOME") or "/root", ".docker")
    try:
        with open(os.path.join(base, "config.json"), "rb") as f:
            data = json.loads(f.read(1 << 20))
    except FileNotFoundError:
        return ""
    except (OSError, ValueError):
        return None
    ctx = data.get("currentContext") if isinstance(data, dict) else None
    return ctx if isinstance(ctx, str) else ""


def _collect_docker(root: Root, runner: Runner, now: float, timeout: float,
                    ev: RestartEvidence) -> None:
    why = docker_engine_missing(root) if runner.which("docker") is not None else None
    if why is not None:
        ev.statuses.append(SensorStatus("docker", False,
                                        f"{why}: docker container restarts not measured"))
        return
    res = _run_tool(runner, ["docker", "ps", "-a", "--no-trunc", "--format", "{{json .}}"],
                    timeout, ev, "docker", "docker container restarts")
    if res is None:
        return
    rows, d = parse_docker_ps(res.stdout)
    ev.diagnostics += d
    ids = [r.id for r in rows][:50]
    if ids:
        try:
            ires = runner.run(["docker", "inspect", *ids], timeout=timeout)
            recs, d = parse_docker_inspect(ires.stdout, now) if ires.ok else ([], [])
            ev.records += recs
            ev.diagnostics += d
        except ToolMissing:
            pass
    ev.statuses.append(SensorStatus("docker", True, f"{len(rows)} containers"))
