"""The incident page's data: the heatmap packs what the samples say, the flames a click
opens hold the walker, size stays bounded, and the page keeps every name inert."""

from __future__ import annotations

import base64
import json

import numpy as np
import pytest

from corescope.render import report_model
from corescope.render.html_report import render
from support.synth_incident import HOSTILE, T0, page_model_of, zombie_chain_hour


@pytest.fixture(scope="module")
def small() -> tuple:
    sc = zombie_chain_hour(cpus=8, hot_cpu=3, seconds=900, resets_at=(400, 700), hz=19)
    return sc, page_model_of(sc)


def grid(model: dict) -> np.ndarray:
    hm = model["heatmap"]
    raw = np.frombuffer(base64.b64decode(hm["cells"]), dtype=np.uint8)
    return raw.reshape(len(hm["cpus"]), hm["columns"])


def test_heatmap_cells_are_the_samples_kernel_percent(small: tuple) -> None:
    sc, model = small
    hm, g = model["heatmap"], grid(small[1])
    assert hm["cpus"] == list(range(8)) and hm["start"] == T0 and hm["step_s"] == 1.0
    for a, b in sc.episodes:
        col = int(a - T0) + 1
        if b - a >= 3 and b <= sc.end:
            assert g[3, col] >= 97, (a, g[3, col - 2: col + 3])
    # away from the episodes the hot CPU is at its background few %
    assert g[3, 100] <= 7
    # every second of every CPU has a value (the scenario has no gaps)
    assert (g != report_model.NO_DATA).all()
    machine = np.frombuffer(base64.b64decode(hm["machine"]), dtype=np.uint8)
    col = int(sc.episodes[0][0] - T0) + 1
    assert machine[col] < 20  # one CPU of eight at 99% is ~12% of the machine


def test_hot_core_and_incident_flames_hold_the_walker(small: tuple) -> None:
    sc, model = small
    assert model["hot_core"]["cpu"] == 3
    assert model["summary"]["top_cpu"] == 3
    inc = [f for f in model["flames"] if f["kind"] == "incident"]
    assert inc and inc[0]["cpu"] == 3
    names = inc[0]["data"]["names"]
    assert f"{sc.walker_function}_[k]" in names and sc.walker_comm in names
    assert inc[0]["diff"] is not None and inc[0]["diff"]["diff"] is True
    cols = [f for f in model["flames"] if f["kind"] == "column" and f["cpu"] == 3]
    # one per epoch-aligned minute the 15 minutes touch
    minutes = {int(t // 60) for t in np.arange(sc.start, sc.end, 1.0)}
    assert len(cols) == len(minutes) == 16
    assert all(f["start"] % 60 == 0 and f["end"] - f["start"] == 60 for f in cols)
    # 30 s / 60 s views of the hot core average the spike away
    hot = model["hot_core"]
    assert hot["peak_1s_pct"] >= 97
    assert max(v for _t, v in hot["series_60s"]) < 40
    # the investigation's diagnosis travels with the page (issue 9's contract)
    dx = model["diagnosis"]
    assert dx["verdict"]["root_cause"] == "zombie_memcg_leak" and dx["verdict"]["hot_cpu"] == 3
    assert dx["hypotheses"] and dx["chain"]


def test_flame_node_bound_keeps_the_heaviest() -> None:
    folded = {f"p;f{i};g{j}": 1 + i for i in range(50) for j in range(50)}
    data = report_model.flame_data(folded, max_nodes=200)
    assert len(data["name"]) <= 201
    assert data["v"][0] == sum(folded.values())


def test_hostile_names_stay_data() -> None:
    sc = zombie_chain_hour(cpus=4, hot_cpu=2, seconds=600, resets_at=(300,), hz=9,
                           hostile=True)
    model = page_model_of(sc)
    text = render(model)
    assert text.count("<script") == 4  # the data block and our three scripts
    assert "<img" not in text and "<!--" not in text
    data = json.loads(text.split('<script id="report-data" type="application/json">')[1]
                      .split("</script>")[0])
    blob = json.dumps(data)
    for h in HOSTILE:
        assert json.dumps(h)[1:-1] in blob


def test_a_hot_core_with_no_incident_gets_its_stacks_on_the_page() -> None:
    """Saturations with no reset after them: the page carries each one's flame (kind
    `episode`) and its top stacks and walker (`hot_core_stacks`, analyze --json's shape)."""
    sc = zombie_chain_hour(cpus=8, hot_cpu=3, seconds=900, resets_at=(), hz=19)
    model = page_model_of(sc)
    assert model["incidents"] == []
    eps = [f for f in model["flames"] if f["kind"] == "episode"]
    assert eps and all(f["cpu"] == 3 and f["basis"] == "episode" for f in eps)
    stacks = model["hot_core_stacks"]
    assert stacks and stacks[0]["cpu"] == 3 and stacks[0]["event_id"] is None
    assert stacks[0]["walker"]["comm"] == sc.walker_comm
    assert stacks[0]["walker"]["function"] == sc.walker_function
    assert stacks[0]["top_stacks"][0]["frames"][0]["name"] in (sc.walker_function,
                                                                "css_next_descendant_pre")
    json.dumps(model)  # the page data stays JSON
