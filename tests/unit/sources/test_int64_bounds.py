"""One number past what SQLite's INTEGER holds (2**63 - 1) in a saved artifact costs its
record (with a diagnostic), never the whole file: before, the store's write raised
OverflowError and every record of the file was lost ("could not be written"). And a JSON
field of the wrong type (`"containerStatuses": 5`) is a diagnostic, not a parser error."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path
from typing import Any

import pytest

from corescope.ingest import import_paths
from corescope.sources.artifacts.content import module_for, sniff
from corescope.sources.text import INT64_MAX, count_of
from corescope.store.db import Store
from support import FIXTURES

BIG = "99999999999999999999"  # 20 digits: past 2**63 - 1 (19 digits)


def _imported(tmp_path: Path, name: str, text: str) -> tuple[Any, Store]:
    f = tmp_path / name
    f.write_text(text)
    store = Store.open(tmp_path / "s")
    (rep,) = import_paths([f], store).files
    return rep, store


def _restarts(store: Store) -> dict[str, int | None]:
    rows = store.query("SELECT name, restarts FROM unit_restarts")
    return {r[0]: r[1] for r in rows}


# the reviewer's systemctl show dump: web's NRestarts is out of range, db beside it is sound
SYSTEMCTL = f"""Id=web.service
Names=web.service
NRestarts={BIG}
SubState=running
ActiveState=active
ControlGroup=/system.slice/web.service

Id=db.service
Names=db.service
NRestarts=4
SubState=running
ActiveState=active
"""


def test_systemctl_show_keeps_the_sound_unit(tmp_path: Path) -> None:
    rep, store = _imported(tmp_path, "systemctl_show.txt", SYSTEMCTL)
    with store:
        assert rep.records > 0, rep.reason
        got = _restarts(store)
    assert got["db.service"] == 4
    assert got["web.service"] is None  # the unit is kept, its count is not
    assert any("web.service" in d and "NRestarts" in d for d in rep.diagnostics)


def _pod(name: str, statuses: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"},
            "status": {"phase": "Running", "startTime": "2026-11-30T10:00:00Z",
                       "containerStatuses": statuses}}


def _pods(*pods: dict[str, Any]) -> str:
    # written with Python's json, whose integers have no bound, as a hostile file would be
    return json.dumps({"apiVersion": "v1", "kind": "List", "items": list(pods)})


def test_kubectl_json_restart_count_out_of_range(tmp_path: Path) -> None:
    text = _pods(_pod("web-1", [{"name": "web", "restartCount": int(BIG),
                                 "state": {"running": {}}},
                                {"name": "side", "restartCount": 3,
                                 "state": {"running": {}}}]),
                 _pod("db-1", [{"name": "db", "restartCount": 7, "state": {"running": {}}}]))
    rep, store = _imported(tmp_path, "pods.json", text)
    with store:
        assert rep.records > 0, rep.reason
        got = _restarts(store)
    assert got == {"default/web-1/web": None, "default/web-1/side": 3, "default/db-1/db": 7}
    assert any("web-1/web" in d and "restartCount" in d for d in rep.diagnostics)


@pytest.mark.parametrize("statuses", [5, {"name": "web"}, "web", True])
def test_kubectl_json_container_statuses_not_a_list(tmp_path: Path, statuses: Any) -> None:
    text = _pods(_pod("web-1", statuses),
                 _pod("db-1", [{"name": "db", "restartCount": 7, "state": {"running": {}}}]))
    rep, store = _imported(tmp_path, "pods.json", text)
    with store:
        assert "parser error" not in (rep.reason or ""), rep.reason
        got = _restarts(store)
    assert got == {"default/db-1/db": 7}
    assert any("web-1" in d and "containerStatuses is not a list" in d
               for d in rep.diagnostics)


def _proc_cgroups(memory: str) -> str:
    return ("#subsys_name\thierarchy\tnum_cgroups\tenabled\ncpuset\t3\t1\t1\n"
            f"memory\t4\t{memory}\t1\npids\t8\t1\t1\n")


def test_census_loop_keeps_the_sound_dumps(tmp_path: Path) -> None:
    text = ("Mon Nov 30 15:34:54 UTC 2026\n" + _proc_cgroups("50") + "11\n"
            "Mon Nov 30 15:35:04 UTC 2026\n" + _proc_cgroups(BIG) + "12\n"
            "Mon Nov 30 15:35:14 UTC 2026\n" + _proc_cgroups("77") + "13\n")
    rep, store = _imported(tmp_path, "census_loop.txt", text)
    with store:
        assert rep.records == 2, rep.reason
        kernel = [r[0] for r in store.query("SELECT kernel_count FROM memcg_census ORDER BY t")]
    assert kernel == [50, 77]
    assert any("unreadable row" in d and BIG in d for d in rep.diagnostics)


@pytest.mark.parametrize("text,ok", [
    ("0", 0), ("12", 12), (str(INT64_MAX), INT64_MAX), ("0" * 30 + "5", 5),
    (str(INT64_MAX + 1), None), (BIG, None), ("9" * 5000, None), ("²", None), ("٣", None),
    ("", None), ("-1", None), ("1.5", None), (" 1", None),
])
def test_count_of(text: str, ok: int | None) -> None:
    assert count_of(text) == ok


# every saved form with counts: a number past the bound anywhere in it never reaches a record
_FORMS = [
    "artifacts/census_loop.txt", "artifacts/cgroup_stat_loop.txt",
    "artifacts/journal_restarts_pretty.json", "events/proc_interrupts_virtio_2cpu.txt",
    "zombies/tools/systemctl_show.txt", "zombies/tools/kubectl_pods.json",
    "zombies/tools/kubectl_pods_all.txt", "zombies/tools/kubectl_pods_wide.txt",
    "zombies/tools/kubectl_describe_pod.txt", "zombies/tools/crictl_ps.json",
    "zombies/tools/crictl_ps_table.txt", "zombies/tools/crictl_ps_table_old.txt",
    "zombies/tools/journal_restarts.json", "zombies/tools/docker_inspect.json",
    "zombies/v612/sys/fs/cgroup/cgroup.stat",
]
_NUMBER = re.compile(r"(?<![\w.])\d{1,12}(?![\w.])")


def _ints(value: Any) -> list[int]:
    if isinstance(value, bool):
        return []
    if isinstance(value, int):
        return [value]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        # a restart's `detail` is stored as JSON text, which holds any integer
        return [i for f in dataclasses.fields(value) if f.name != "detail"
                for i in _ints(getattr(value, f.name))]
    if isinstance(value, dict):
        return [i for v in value.values() for i in _ints(v)]
    if isinstance(value, list | tuple | set):
        return [i for v in value for i in _ints(v)]
    return []


@pytest.mark.parametrize("form", _FORMS)
def test_no_record_holds_a_number_past_the_bound(form: str) -> None:
    raw = (FIXTURES / form).read_text()
    kind = sniff(raw.encode())
    mod = module_for(kind or "")
    assert mod is not None, form
    hits = list(_NUMBER.finditer(raw))
    assert hits
    for m in hits[:: max(1, len(hits) // 40)]:  # up to ~40 places of each file
        text = raw[: m.start()] + BIG + raw[m.end():]
        parsed = mod.parse(text.encode(), sniff(text.encode()) or kind, "t")
        records = [parsed.samples, parsed.kernel, parsed.censuses, parsed.restarts,
                   parsed.irq_maps]
        assert all(abs(i) <= INT64_MAX for i in _ints(records)), \
            (form, raw[max(0, m.start() - 40): m.end()])
