"""The lazy command table as a user meets it, each probe in a fresh interpreter: the fast paths
(`--version`, `--help`, `events --file`) import neither numpy nor the other commands, and what
loads on first use (the cgroup records' JSON forms) loads right, in threads too. The table's
rows against their modules, in-process: tests/unit/views/test_command_table.py."""

from __future__ import annotations

import json
import subprocess
import sys

from corescope.views.cli import COMMAND_MODULES
from support import FIXTURES, cli_env, run_cli


def _imported(*args: str) -> set[str]:
    proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "corescope", *args],
                          capture_output=True, text=True, env=cli_env(), timeout=60)
    assert proc.returncode in (0, 1), proc.stderr[-2000:]
    return {line.split("|")[-1].strip() for line in proc.stderr.splitlines()
            if line.startswith("import time:")}


def test_fast_paths_import_little() -> None:
    for args in (("--version",), ("--help",), ("lab", "--help"),
                 ("events", "--file", str(FIXTURES / "events" / "dmesg_incidents.txt"))):
        mods = _imported(*args)
        assert "click" in mods  # the probe works
        assert "numpy" not in mods, args
        assert "sqlite3" not in mods, args
        others = {m for m in mods if m.startswith("corescope.views.cli_")}
        assert others <= {"corescope.views.cli_events"}, (args, others)


# What an events-only investigation never builds: the zombie, profile and diagnosis parts, the
# interrupt map, the store, the lab's writer, subprocesses and the statistics of incidents.
NOT_FOR_A_LOG = ("corescope.model.cgroups", "corescope.analysis.zombies",
                 "corescope.investigate.zombies", "corescope.analysis.flame",
                 "corescope.model.profiles", "corescope.investigate.diagnosis",
                 "corescope.investigate.diagnose", "corescope.sources.interrupts",
                 "corescope.store.db", "corescope.lab.nicreset", "subprocess", "statistics")


def test_events_file_loads_only_the_log_part_of_the_pipeline() -> None:
    log = str(FIXTURES / "events" / "dmesg_incidents.txt")
    for args in (("events", "--file", log), ("events", "--file", log, "--json")):
        mods = _imported(*args)
        assert "corescope.investigate.build" in mods  # the one Investigation renders it
        assert not set(NOT_FOR_A_LOG) & mods, (args, sorted(set(NOT_FOR_A_LOG) & mods))


# What reading the store's per-core record does not need: `cores` shows no cgroup, stack or
# pressure record, `report` parses no saved log (the store holds classified events).
NOT_FOR_CORES = ("corescope.model.cgroups", "corescope.model.pressure",
                 "corescope.model.profiles", "corescope.analysis.classify",
                 "corescope.sources.kmsg_reader", "corescope.sources.kmsg_saved",
                 "corescope.sources.kmsg_records")
NOT_FOR_REPORT = ("corescope.model.profiles", "corescope.analysis.classify",
                  "corescope.sources.kmsg_reader", "corescope.sources.kmsg_saved",
                  "corescope.sources.kmsg_records", "corescope.evidence.memory")


def test_store_commands_load_only_what_they_read(tmp_path) -> None:
    import time

    from corescope.store.db import Store
    from corescope.store.series_writer import SeriesWriter
    from support.synth_samples import random_record

    with Store.open(tmp_path) as store:
        SeriesWriter(store).append_many(random_record(3, 300, 4, 0.0, 0.0, 0.3,
                                                      t0=time.time() - 400))
    cores = _imported("--store", str(tmp_path), "cores", "--last", "1h", "--json")
    assert "corescope.store.series" in cores  # the probe read the store
    assert not set(NOT_FOR_CORES) & cores, sorted(set(NOT_FOR_CORES) & cores)
    report = _imported("--store", str(tmp_path), "report", "--last", "1h", "--json")
    assert "corescope.investigate.diagnose" in report
    assert not set(NOT_FOR_REPORT) & report, sorted(set(NOT_FOR_REPORT) & report)


def test_start_up_runs_without_collection_but_every_command_with_it() -> None:
    # main() turns the cyclic collector off while the command's modules load; the command
    # itself (record runs for days) must find it on, with start-up's objects frozen
    probe = ("import gc\n"
             "from corescope.views.cli import cli, main\n"
             "@cli.command('probe')\n"
             "def probe():\n"
             "    print(gc.isenabled(), gc.get_freeze_count() > 0)\n"
             "main(['probe'])\n")
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          env=cli_env(), timeout=60)
    assert proc.stdout.split() == ["True", "True"], proc.stderr[-2000:]
    # --help exits before any command: collection is back on afterwards all the same
    probe = ("import gc\n"
             "from corescope.views.cli import main\n"
             "try:\n"
             "    main(['--help'])\n"
             "except SystemExit:\n"
             "    pass\n"
             "print(gc.isenabled())\n")
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          env=cli_env(), timeout=60)
    assert proc.stdout.split()[-1] == "True", proc.stderr[-2000:]


def test_help_lists_every_command_and_unknown_is_a_usage_error() -> None:
    out = run_cli("--help").stdout
    for name, _m, _h in COMMAND_MODULES:
        if not name.startswith("lab "):
            assert f"  {name} " in out, name
    lab_out = run_cli("lab", "--help").stdout
    for name, _m, _h in COMMAND_MODULES:
        if name.startswith("lab "):
            assert f"  {name[4:]} " in lab_out, name
    bad = run_cli("nosuchcommand")
    assert bad.returncode == 2 and "No such command" in bad.stderr
    # a command registered by its module runs through the table
    assert run_cli("cores", "--help").returncode == 0
    assert run_cli("lab", "hotcore", "--help").returncode == 0


def test_cgroup_records_render_without_their_forms_imported_first() -> None:
    # their JSON forms register on first use (render/records_cgroups.py): a fresh process
    probe = ("import json, sys\n"
             "from corescope.model.cgroups import Location\n"
             "from corescope.render.records import as_json\n"
             "assert 'corescope.render.records_cgroups' not in sys.modules\n"
             "print(json.dumps(as_json({'locations': [Location('/a', 3, 5, 1)]})))\n")
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          env=cli_env(), timeout=60)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert json.loads(proc.stdout) == {"locations": [
        {"path": "/a", "dying": 3, "subtree_dying": 5, "live_descendants": 1}]}


def test_cgroup_records_render_in_threads_racing_to_load_their_forms() -> None:
    # serve builds pages in threads: the second thread to meet a cgroup record while the
    # first is still importing its forms got the record back unconverted (a 500 under load).
    # The import is slowed so that the two threads overlap on every run.
    probe = ("import importlib.util, json, sys, threading, time\n"
             "from corescope.model.cgroups import Location\n"
             "from corescope.render.records import as_json\n"
             "NAME = 'corescope.render.records_cgroups'\n"
             "class Slow:\n"
             "    def find_spec(self, name, path, target=None):\n"
             "        if name != NAME:\n"
             "            return None\n"
             "        sys.meta_path.remove(self)\n"
             "        spec = importlib.util.find_spec(name)\n"
             "        real = spec.loader.exec_module\n"
             "        def slow(module):\n"
             "            time.sleep(0.4)\n"
             "            real(module)\n"
             "        spec.loader.exec_module = slow\n"
             "        return spec\n"
             "sys.meta_path.insert(0, Slow())\n"
             "out = [None, None]\n"
             "def run(i):\n"
             "    out[i] = as_json({'locations': [Location('/a', 3, 5, 1)]})\n"
             "ts = [threading.Thread(target=run, args=(i,)) for i in range(2)]\n"
             "ts[0].start(); time.sleep(0.15); ts[1].start()\n"
             "[t.join() for t in ts]\n"
             "print(json.dumps(out))\n")
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          env=cli_env(), timeout=60)
    assert proc.returncode == 0, proc.stderr[-2000:]
    want = {"locations": [{"path": "/a", "dying": 3, "subtree_dying": 5, "live_descendants": 1}]}
    assert json.loads(proc.stdout) == [want, want]


def test_joining_store_and_live_samples_does_not_load_numpy_ma() -> None:
    # np.unique imports numpy.ma (5-8 ms) to ask whether an array is masked; doctor joins
    # the stored matrix with the live samples, and the episode search merges windows
    probe = ("import sys\n"
             "from corescope.model.cores import CoreSample\n"
             "from corescope.model.matrix import CoreMatrix\n"
             "from corescope.analysis.episodes import find_episodes\n"
             "hot = (0, 0, 95, 5, 0, 0, 0, 0, 0, 0)\n"
             "a = CoreMatrix.from_samples([CoreSample(t=1e9 + i, interval_s=1.0,\n"
             "    deltas={0: hot, 2: hot}) for i in range(400)])\n"
             "both = a + [CoreSample(t=1e9 + 400, interval_s=1.0, deltas={1: hot})]\n"
             "eps = find_episodes(both, 90.0, 2.0)\n"
             "print(both.cpus.tolist(), len(eps), 'numpy.ma' in sys.modules)\n")
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          env=cli_env(), timeout=60)
    assert proc.stdout.split("]")[0] == "[0, 1, 2", proc.stderr[-2000:]
    assert proc.stdout.split()[-2:] == ["2", "False"], proc.stdout


# What a flame graph of a saved `perf script` file never needs: the artifact importer's
# readers and writers (`analyze`'s), which the ingest package loaded as a whole.
NOT_FOR_A_PERF_SCRIPT_FILE = ("corescope.ingest.importer", "corescope.ingest.write",
                              "corescope.ingest.gather", "corescope.analysis.classify",
                              "corescope.store.series_writer")


def test_flame_of_a_perf_script_file_loads_no_artifact_importer() -> None:
    path = str(FIXTURES / "profiles" / "spin_boot_default.txt")
    mods = _imported("flame", "--perf-script", path, "--format", "top")
    assert "corescope.ingest.perf_write" in mods  # the probe imported the file
    assert not set(NOT_FOR_A_PERF_SCRIPT_FILE) & mods, \
        sorted(set(NOT_FOR_A_PERF_SCRIPT_FILE) & mods)
    # folded stacks of the whole file are folded as it is parsed: no ring, store or numpy
    mods = _imported("flame", "--perf-script", path, "--format", "folded")
    assert "corescope.evidence.perf_fold" in mods
    gone = {"corescope.ingest.perf_write", "corescope.store.db", "numpy",
            "corescope.evidence.ring_profile"} & mods
    assert not gone, sorted(gone)


# Each `flame --format` loads its own renderer and no other's (issue 22's start-up cost).
FLAME_RENDERERS = {"html": ("corescope.render.flame_html", "corescope.render.flamedata",
                            "corescope.render.page"),
                   "pprof": ("corescope.render.pprof",),
                   "speedscope": ("corescope.render.speedscope",)}


def test_flame_loads_only_the_renderer_of_its_format(tmp_path) -> None:
    cap = str(FIXTURES / "profiles" / "burner_idle.txt")
    every = {m for mods in FLAME_RENDERERS.values() for m in mods}
    for fmt in ("top", "folded", "json", *FLAME_RENDERERS):
        out = ("-o", str(tmp_path / f"out.{fmt}")) if fmt in FLAME_RENDERERS else ()
        mods = _imported("flame", "--perf-script", cap, "--format", fmt, *out)
        assert "corescope.investigate.flame" in mods  # the probe ran the query
        own = set(FLAME_RENDERERS.get(fmt, ()))
        assert own <= mods, (fmt, sorted(own - mods))
        assert not (every - own) & mods, (fmt, sorted((every - own) & mods))
        # nor the investigation's builder: the flame view needs only its window
        assert "corescope.investigate.build" not in mods, fmt
    # the terminal heatmap needs none of them either
    mods = _imported("heatmap", "--perf-script", cap)
    assert "corescope.render.heatmap_text" in mods and not every & mods
