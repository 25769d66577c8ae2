#!/usr/bin/env python3
"""Conformance of corescope's /proc/stat arithmetic and --root reading against peers' data.

    python3 scripts/conformance_sysstat.py --sysstat DIR [--tree DIR ...]

--sysstat DIR: a copy of sysstat's test corpus laid out as roots/rootN/ (sysstat's tests/rootN
trees) and expected/ (its tests/expected.* outputs). For each expected mpstat/sar/sadf output
that prints per-CPU percentages, the same roots are read the way corescope reads them (the
recorder's parser and delta rules, usage's percentage rule) and each printed CPU row is compared:
agreement within 0.05 points on every column, rows the peer prints and corescope does not (and
the reverse), and any CPU corescope shows 100 % busy while the peer shows it below 90 %.

--tree DIR: a /proc + /sys fixture tree (prometheus/procfs's or node_exporter's fixtures): it is
read as `--root DIR` is, and the script prints whether that raised, the CPUs found, the host
identity taken from the tree, the memory controller's census and the NICs found.

Not run by `make test` (the corpora are not part of this repository). Exit status 1 when any
row disagrees or a tree raised."""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
import traceback
from collections.abc import Callable, Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))  # this checkout's code

from corescope.analysis.usage import interval_of, sum_deltas, usage_of
from corescope.model.cores import FIELDS, MODES
from corescope.sources.procstat import ProcStat, carry, delta, parse_proc_stat

TOL = 0.05
HOT, PEER_COOL = 99.995, 90.0

# Which roots each expected output was made from (sysstat's tests/ scripts: mpstat moves to
# the next root at each interval from 12:53:20; sadc took root1..5 at 13:20:09 + 10 s, then a
# restart, root6 at 13:54:15 and root7 at 13:54:35). None: since boot, from root1.
MPSTAT_T0 = 12 * 3600 + 53 * 60 + 20
SADC_TIMES = {"13:20:09": 1, "13:20:19": 2, "13:20:29": 3, "13:20:39": 4, "13:20:49": 5,
              "13:54:15": 6, "13:54:35": 7}

# a printed column → how corescope's modes make it
MPSTAT_COLS = {f"%{m}": (m,) for m in MODES}
SAR_U_COLS = {"%user": ("usr", "guest"), "%nice": ("nice", "gnice"),
              "%system": ("sys", "irq", "soft"), "%iowait": ("iowait",),
              "%steal": ("steal",), "%idle": ("idle",)}
SAR_UALL_COLS = {"%usr": ("usr",), "%nice": ("nice",), "%sys": ("sys",), "%iowait": ("iowait",),
                 "%steal": ("steal",), "%irq": ("irq",), "%soft": ("soft",),
                 "%guest": ("guest",), "%gnice": ("gnice",), "%idle": ("idle",)}


def _hms(s: str) -> int:
    h, m, sec = (int(x) for x in s.split(":"))
    return h * 3600 + m * 60 + sec


class Roots:
    def __init__(self, base: Path) -> None:
        self.base = base
        self._cache: dict[int, ProcStat] = {}
        self.restarted: set[tuple[int, int]] = set()  # (end root, cpu): user/nice/sys went back

    def stat(self, n: int) -> ProcStat:
        if n not in self._cache:
            self._cache[n] = parse_proc_stat((self.base / f"root{n}/proc/stat").read_bytes())
        return self._cache[n]

    def deltas(self, seq: list[int]) -> dict[tuple[int, int], tuple[int, ...]]:
        """corescope's per-CPU deltas for each interval seq[k] → seq[k+1], as the recorder
        and replay take them (delta, then carry); keyed (interval end root, cpu), with the
        machine row (the sum over CPUs, as mpstat's `all`) as cpu -1."""
        out: dict[tuple[int, int], tuple[int, ...]] = {}
        prev = self.stat(seq[0])
        for n in seq[1:]:
            cur = self.stat(n)
            s = delta(prev, cur, 0.0, 1.0)
            for cpu, d in s.deltas.items():
                out[(n, cpu)] = tuple(int(x) for x in d)
            for cpu, now in cur.cpus.items():
                before = prev.cpus.get(cpu, prev.gone.get(cpu))
                if before is not None and any(int(now[i]) < int(before[i]) for i in (0, 1, 2)):
                    self.restarted.add((n, cpu))
            if s.deltas:
                out[(n, -1)] = sum_deltas(v for (e, c), v in out.items() if e == n and c >= 0)
            prev = carry(prev, cur)
        return out

    def since_boot(self, n: int) -> dict[tuple[int, int], tuple[int, ...]]:
        out = {(n, c): tuple(int(x) for x in d) for c, d in self.stat(n).cpus.items()}
        out[(n, -1)] = sum_deltas(out.values())
        return out


Row = tuple[int, int, dict[str, float]]  # (interval end root, cpu, column → peer value)


def mpstat_text(text: str) -> Iterator[tuple[bool, Row]]:
    """Per-CPU rows of mpstat's CPU tables; (since boot?, row)."""
    header: list[str] | None = None
    start = ""
    for line in text.splitlines():
        f = line.split()
        if len(f) > 2 and f[1] == "CPU" and any(c.startswith("%") for c in f):
            header, start = f, f[0]
            continue
        if not f:
            header = None
            continue
        if header is None or f[0] == "Average:":
            continue
        named = [h for h in header if h.startswith("%")]  # `all` leaves CORE SOCK NODE blank
        cols = {h: float(v) for h, v in zip(named, f[-len(named):], strict=True)
                if h in MPSTAT_COLS}
        boot = f[0] == start
        end = 1 if boot else _hms(f[0]) - MPSTAT_T0 + 1
        yield boot, (end, -1 if f[1] == "all" else int(f[1]), cols)


def mpstat_json(text: str) -> Iterator[tuple[bool, Row]]:
    doc = json.loads(text)
    for host in doc["sysstat"]["hosts"]:
        stats = host["statistics"]
        boot = len(stats) == 1 and stats[0]["timestamp"] == "12:53:20"
        for st in stats:
            end = 1 if boot else _hms(st["timestamp"]) - MPSTAT_T0 + 1
            for row in st.get("cpu-load", []):
                yield boot, (end, -1 if row["cpu"] == "all" else int(row["cpu"]),
                             {f"%{k}": float(v) for k, v in row.items() if f"%{k}" in
                              MPSTAT_COLS})


def sar_text(text: str) -> Iterator[tuple[bool, Row]]:
    header: list[str] | None = None
    for line in text.splitlines():
        f = line.split()
        if len(f) > 2 and f[1] == "CPU" and f[2].startswith("%"):
            header = f
            continue
        if not f or header is None or f[0] == "Average:" or f[1] in ("LINUX", "COM"):
            if not f:
                header = None
            continue
        if f[0] not in SADC_TIMES or not (f[1].isdigit() or f[1] == "all"):
            continue
        cols = {h: float(v) for h, v in zip(header[2:], f[2:], strict=True)}
        yield False, (SADC_TIMES[f[0]], -1 if f[1] == "all" else int(f[1]), cols)


def sadf_d(text: str) -> Iterator[tuple[bool, Row]]:
    header: list[str] = []
    for line in text.splitlines():
        if line.startswith("#"):
            header = line[1:].strip().split(";")
            continue
        f = line.split(";")
        if len(f) < 5 or "CPU" not in header or not any(h.startswith("%idle") for h in header):
            continue
        at = re.search(r"(\d\d:\d\d:\d\d)", f[2])
        if not at or at.group(1) not in SADC_TIMES:
            continue
        end = SADC_TIMES[at.group(1)]
        i = header.index("CPU")
        # -P all,N: the per-CPU columns follow the all-CPU ones, after the CPU number
        width = next((k for k, h in enumerate(header[i + 1:], i + 1) if not h.startswith("%")),
                     len(header)) - i - 1
        names = header[i + 1:i + 1 + width]
        groups = [(f[i], f[i + 1:i + 1 + width])]
        j = i + 1 + width
        if len(f) > j + width and f[j].lstrip("-").isdigit():
            groups.append((f[j], f[j + 1:j + 1 + width]))
        for cpu, vals in groups:
            if cpu.lstrip("-").isdigit():
                yield False, (end, int(cpu), {h: float(v) for h, v in
                                              zip(names, vals, strict=True)})


# expected file → (reader, root sequences its intervals were taken over)
CASES: dict[str, tuple[Callable[[str], Iterator[tuple[bool, Row]]], list[list[int]]]] = {
    "expected.mpstat": (mpstat_text, [[1]]),
    "expected.mpstat-A": (mpstat_text, [[1, 2, 3, 4, 5]]),
    "expected.mpstat-T": (mpstat_text, [[1, 2, 3]]),
    "expected.mpstat-APN": (mpstat_text, [[1, 2]]),
    "expected.mpstat-H": (mpstat_text, [[1, 2, 3, 4, 5, 6, 7]]),
    "expected.mpstat-A-JSON": (mpstat_json, [[1, 2]]),
    "expected.mpstat-T-JSON": (mpstat_json, [[1]]),
    "expected.sar-u": (sar_text, [[1, 2, 3, 4, 5]]),
    "expected2.sar-u": (sar_text, [[1, 2, 3, 4, 5], [6, 7]]),
    "expected.sar-CPUoffon": (sar_text, [[2, 3, 4, 5]]),
    "expected.sadf-d": (sadf_d, [[1, 2, 3, 4, 5], [6, 7]]),
    "expected.sadf-dh": (sadf_d, [[1, 2, 3, 4, 5], [6, 7]]),
}


def _ours(cols: dict[str, float], d: tuple[int, ...]) -> dict[str, float]:
    pct = usage_of(0, d).pct
    if "%user" not in cols:
        table = {**MPSTAT_COLS, **SAR_UALL_COLS}
        return {c: sum(pct[m] for m in table[c]) for c in cols if c in table}
    # sar -u: %user and %nice are the raw counters' deltas (guest inside)
    got = {c: sum(pct[m] for m in SAR_U_COLS[c]) for c in cols if c in SAR_U_COLS}
    itv = interval_of(d)
    for c, f in (("%user", "user"), ("%nice", "nice")):
        got[c] = 100.0 * d[FIELDS.index(f)] / itv if itv else 0.0
    return got


def check_sysstat(base: Path) -> bool:
    roots = Roots(base / "roots")
    ok = True
    print(f"{'expected output':24} {'cpu rows':>8} {'agree':>6} {'max Δ':>6} {'peer only':>9} "
          f"{'ours only':>9} {'restarted':>9} {'false 100%':>10} {'all Δ':>6}")
    for name, (reader, seqs) in CASES.items():
        path = base / "expected" / name
        if not path.exists():
            print(f"{name:24} (missing)")
            continue
        rows = list(reader(path.read_text()))
        ours: dict[tuple[int, int], tuple[int, ...]] = {}
        boot = any(b for b, _ in rows)
        for seq in seqs:
            ours.update(roots.since_boot(seq[0]) if boot else roots.deltas(seq))
        n = agree = peer_only = restarted = hot = 0
        worst = all_worst = 0.0
        seen = set()
        notes = []
        for _, (end, cpu, cols) in rows:
            mine = ours.get((end, cpu))
            seen.add((end, cpu))
            if mine is None:
                if cpu < 0:
                    continue
                if (end, cpu) in roots.restarted:
                    restarted += 1  # deliberate: no interval across a restarted line
                elif any(cols.values()):  # sar prints an offline CPU as all 0.00: hidden here
                    peer_only += 1
                    notes.append(f"  root{end} cpu{cpu}: printed by the peer, not by corescope")
                continue
            got = _ours(cols, mine)
            diff = max((abs(got[c] - v) for c, v in cols.items() if c in got), default=0.0)
            if cpu < 0:
                all_worst = max(all_worst, diff)
                continue
            n += 1
            worst = max(worst, diff)
            if diff <= TOL + 1e-9:
                agree += 1
            else:
                notes.append(f"  root{end} cpu{cpu}: Δ {diff:.2f} ({cols} vs "
                             f"{ {c: round(v, 2) for c, v in got.items()} })")
            pct = usage_of(cpu, mine).pct
            busy = 100.0 - pct["idle"]
            peer_busy = 100.0 - cols.get("%idle", 0.0)
            if busy >= HOT and peer_busy < PEER_COOL:
                hot += 1
                notes.append(f"  root{end} cpu{cpu}: corescope 100 % busy, peer {peer_busy:.2f}")
        ends = {e for _, (e, _, _) in rows}
        cpus_shown = {c for _, (_, c, _) in rows}
        ours_only = sum(1 for k in ours if k not in seen and k[0] in ends and k[1] in cpus_shown)
        print(f"{name:24} {n:8} {agree:6} {worst:6.3f} {peer_only:9} {ours_only:9} "
              f"{restarted:9} {hot:10} {all_worst:6.3f}")
        for line in notes[:8]:
            print(line)
        ok &= agree == n and not peer_only and not ours_only and not hot
    print("restarted: rows the peer prints across a restarted line (user/nice/system went "
          "back: a reboot between the two reads); corescope takes no interval there.\n"
          "all Δ: the all-CPU row (corescope sums the counters, sysstat sums per-CPU "
          "intervals: they differ where a CPU's guest ran ahead of user).")
    return ok


def check_readers(base: Path) -> bool:
    """The peer's own outputs and the derived /proc/stat loop, read by `analyze`'s readers:
    each CPU row they give back against the row the peer printed."""
    from corescope.sources.artifacts.content import module_for, sniff

    ok = True
    print(f"\n{'read by analyze':34} {'kind':13} {'cpu rows':>8} {'max Δ':>6} {'false 100%':>10}")
    sar = {(e, c): cols for _, (e, c, cols) in sar_text(
        (base / "expected" / "expected.sar-u").read_text())}
    inputs = [("derived/procstat-loop-root1-5.txt", sar)]
    for name, (reader, _) in CASES.items():
        path = base / "expected" / name
        if path.exists():
            inputs.append((f"expected/{name}", {(e, c): cols for _, (e, c, cols) in
                                                reader(path.read_text())}))
    for rel, peer in inputs:
        path = base / rel
        if not path.exists():
            continue
        data = path.read_bytes()
        kind = sniff(data)
        if kind is None:
            print(f"{rel:34} {'(not read)':13}")
            continue
        parsed = module_for(kind).parse(data, kind, str(path))
        times = sorted({s.t for s in parsed.samples})
        n = hot = 0
        worst = 0.0
        for s in parsed.samples:
            # a sample's end time → the root it ends at: sadc's clock, or mpstat's 1 s steps
            hms = time.strftime("%H:%M:%S", time.gmtime(s.t))
            end = SADC_TIMES.get(hms) if hms in SADC_TIMES else \
                _hms(hms) - MPSTAT_T0 + 1 if 0 <= _hms(hms) - MPSTAT_T0 < 10 else None
            for cpu, d in s.deltas.items():
                cols = peer.get((end, cpu)) if end is not None else None
                if cols is None:
                    continue
                got = _ours(cols, tuple(int(x) for x in d))
                diff = max((abs(got[c] - v) for c, v in cols.items() if c in got), default=0.0)
                n += 1
                worst = max(worst, diff)
                pct = usage_of(cpu, tuple(int(x) for x in d)).pct
                if 100.0 - pct["idle"] >= HOT and 100.0 - cols.get("%idle", 0.0) < PEER_COOL:
                    hot += 1
        print(f"{rel:34} {kind:13} {n:8} {worst:6.3f} {hot:10}"
              + ("" if times else "  (no samples: " + "; ".join(
                  d.message[:60] for d in parsed.diagnostics[:1]) + ")"))
        ok &= not hot
    print("Δ here includes the percentages-to-ticks rounding of the printed forms "
          "(one tick of the interval).")
    return ok


def check_tree(tree: Path) -> bool:
    from corescope.rootfs import Root
    from corescope.sources import cgroups, netdev
    from corescope.sources.identity import cpu_count, host_identity

    print(f"\n{tree}")
    try:
        root = Root(tree)
        print(f"  CPUs: {cpu_count(root)}")
        ident = host_identity(root)
        print(f"  host: {ident.hostname}  boot id: {ident.boot_id}  kernel: {ident.kernel}")
        layout, _ = cgroups.read_layout(root)
        res = cgroups.take_census(root, layout)
        c = res.census
        print("  memory census: " + (f"kernel {c.kernel_count}, live {c.live}, dying {c.dying}"
                                     if c else f"none ({res.diagnostics[-1].message})"))
        nics = [(i, *netdev.iface_driver_device(root, i)) for i in netdev.list_ifaces(root)]
        print("  interfaces: " + (", ".join(f"{i} ({d or 'no driver'} @ {b})" if b else
                                            f"{i} (virtual)" for i, d, b in nics) or "none"))
    except Exception:  # the point is to report any traceback
        traceback.print_exc()
        return False
    return True


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sysstat", type=Path, help="sysstat test corpus (roots/, expected/)")
    ap.add_argument("--tree", type=Path, action="append", default=[],
                    help="a procfs/node_exporter fixture tree (repeatable)")
    args = ap.parse_args()
    ok = True
    if args.sysstat:
        ok &= check_sysstat(args.sysstat)
        ok &= check_readers(args.sysstat)
    for t in args.tree:
        ok &= check_tree(t)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
