#!/usr/bin/env python3
"""How `corescope flame --format folded` agrees with FlameGraph's stackcollapse-perf.pl.

    scripts/conformance_flamegraph.py FLAMEGRAPH_TEST_DIR [--stackcollapse PATH] [EXTRA...]

FLAMEGRAPH_TEST_DIR is FlameGraph's `test/` directory: its `perf-*.txt` inputs and
`results/<name>-collapsed-{kernel,pid,tid}.txt`, what stackcollapse-perf.pl --kernel, --pid
and --tid printed for them. Each input is folded by corescope three ways (plain,
--with-pid, --with-tid, all with --include-idle: stackcollapse drops nothing), both sides
are sorted, and the table says per input and variant whether they are equal, how many
folded lines agree, and the share of the total weight on agreeing lines.

EXTRA inputs (other perf script files, e.g. speedscope's or FlameScope's samples) have no
expected results: with --stackcollapse PATH (FlameGraph's stackcollapse-perf.pl; perl runs
it) they are compared with what it prints for them. Nothing here is run by `make test`;
no peer file is kept in the repository.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
# corescope's option for each stackcollapse-perf.pl variant (--kernel: both mark kernel
# frames `_[k]`)
VARIANTS = {"kernel": [], "pid": ["--with-pid"], "tid": ["--with-tid"]}


def folded(text: str) -> Counter[str]:
    out: Counter[str] = Counter()
    for line in text.splitlines():
        stack, sep, n = line.rpartition(" ")
        if sep and n.isdigit():
            out[stack] += int(n)
    return out


def corescope(path: Path, extra: list[str]) -> tuple[Counter[str], str]:
    env = dict(os.environ, PYTHONPATH=str(REPO / "src"))
    got = subprocess.run(
        [sys.executable, "-m", "corescope", "flame", "--perf-script", str(path),
         "--format", "folded", "--include-idle", *extra],
        capture_output=True, text=True, env=env, check=False)
    if got.returncode != 0:
        return Counter(), got.stderr.strip().splitlines()[-1] if got.stderr else "failed"
    return folded(got.stdout), ""


def stackcollapse(script: Path, path: Path, variant: str) -> Counter[str]:
    got = subprocess.run(["perl", str(script), f"--{variant}", str(path)],
                         capture_output=True, text=True, check=False)
    return folded(got.stdout)


# The differences docs/perf-script.md lists as deliberate, as normalisations of the two
# sides' folded stacks (reference, ours) -> (reference, ours)
Pair = tuple[Counter[str], Counter[str]]


def _vdso_user(ref: Counter[str], ours: Counter[str]) -> Pair:
    """stackcollapse marks every `[...]` dso `_[k]`, the vDSO too; corescope leaves vDSO
    frames (user-mode code) unmarked."""
    out: Counter[str] = Counter()
    for k, n in ref.items():
        out[";".join(f[:-4] if f.endswith("_[k]") and (f.startswith("__vdso_") or
                     f == "[vdso]_[k]") else f for f in k.split(";"))] += n
    return out, ours


def _blank_symbol(ref: Counter[str], ours: Counter[str]) -> Pair:
    """perf prints `addr  (dso)` (no symbol) for some frames: stackcollapse names them ` `
    (a blank), corescope `[dso]` as an `[unknown]` symbol. Our stacks that match a
    reference stack but for `[...]` where it has ` ` take its name."""
    pats = [(re.compile(";".join(r"\[[^;]*\]" if f == " " else re.escape(f)
                                 for f in k.split(";")) + "$"), k)
            for k in ref if " " in k.split(";")]
    if not pats:
        return ref, ours
    out: Counter[str] = Counter()
    for k, n in ours.items():
        if k not in ref:
            k = next((rk for pat, rk in pats if pat.match(k)), k)
        out[k] += n
    return ref, out


DELIBERATE = {"vdso": _vdso_user, "blank-symbol": _blank_symbol}


def _no_kernel_marks(stacks: Counter[str]) -> Counter[str]:
    """stackcollapse's --pid and --tid results were made without --kernel: compare ours
    without its `_[k]` marks (not a difference, the reference's options)."""
    out: Counter[str] = Counter()
    for k, n in stacks.items():
        out[";".join(f.removesuffix("_[k]") for f in k.split(";"))] += n
    return out




def terminated(path: Path, tmp: Path) -> Path | None:
    """A copy of `path` without its last record when that record has no closing blank
    line (stackcollapse drops such a record; corescope keeps it), else None."""
    text = path.read_text(errors="replace")
    if text.endswith("\n\n") or "\n\n" not in text:
        return None
    cut = tmp / path.name
    cut.write_text(text[: text.rindex("\n\n") + 2])
    return cut


def agreement(ours: Counter[str], ref: Counter[str]) -> tuple[bool, int, int, float]:
    """(equal, lines that agree, reference lines, % of the reference weight agreeing)."""
    same = [k for k in ref if ours.get(k) == ref[k]]
    total = sum(ref.values()) or 1
    return ours == ref, len(same), len(ref), 100.0 * sum(ref[k] for k in same) / total


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("testdir", type=Path, help="FlameGraph's test/ directory")
    ap.add_argument("extra", nargs="*", type=Path, help="more perf script files")
    ap.add_argument("--stackcollapse", type=Path, default=None,
                    help="stackcollapse-perf.pl, to compare the extra inputs with")
    ap.add_argument("--show", type=int, default=0, metavar="N",
                    help="print up to N differing lines per disagreeing input")
    args = ap.parse_args()
    inputs = sorted(args.testdir.glob("perf-*.txt"))
    if not inputs:
        print(f"{args.testdir}: no perf-*.txt inputs", file=sys.stderr)
        return 2
    rows = []
    equal_all = True
    todo = [(p, v, (args.testdir / "results" / f"{p.stem}-collapsed-{v}.txt"))
            for p in inputs for v in VARIANTS]
    if args.stackcollapse is not None:
        todo += [(p, v, None) for p in args.extra for v in VARIANTS]
    elif args.extra:
        print("extra inputs need --stackcollapse PATH to compare with", file=sys.stderr)
    tmp = Path(tempfile.mkdtemp(prefix="conformance-"))
    for path, variant, expected in todo:
        if expected is not None:
            if not expected.exists():
                continue
            ref = folded(expected.read_text(errors="replace"))
        else:
            assert args.stackcollapse is not None
            ref = stackcollapse(args.stackcollapse, path, variant)
        ours, err = corescope(path, VARIANTS[variant])
        if variant != "kernel":
            ours = _no_kernel_marks(ours)
        eq, same, n, pct = agreement(ours, ref)
        why: list[str] = []
        if not eq:
            # the listed deliberate differences, one after another, until both sides agree
            cut = terminated(path, tmp)
            if cut is not None:
                ours, err = corescope(cut, VARIANTS[variant])
                if variant != "kernel":
                    ours = _no_kernel_marks(ours)
                why.append("last-record")
            for name, norm in DELIBERATE.items():
                if agreement(ours, ref)[0]:
                    break
                ref2, ours2 = norm(ref, ours)
                if (ref2, ours2) != (ref, ours):
                    ref, ours = ref2, ours2
                    why.append(name)
            if not agreement(ours, ref)[0]:
                why = []
        ok = eq or bool(why)
        equal_all &= ok
        rows.append((path.name, variant, eq, ",".join(why), same, n, len(ours), pct, err))
        if not ok and args.show:
            for k in sorted(set(ref) | set(ours)):
                if ref.get(k) != ours.get(k):
                    short = k if len(k) < 200 else f"{k[:60]} ... {k[-130:]}"
                    print(f"  {path.name} {variant}: ref {ref.get(k)} ours {ours.get(k)}: "
                          f"{short}")
                    args.show -= 1
                    if args.show <= 0:
                        break
    print(f"{'input':<36} {'variant':<7} {'equal':<5} {'deliberate':<18} {'agree':>11} "
          f"{'ours':>6} {'weight%':>8}")
    for name, variant, eq, why, same, n, mine, pct, err in rows:
        print(f"{name:<36} {variant:<7} {'yes' if eq else ('yes*' if why else 'NO'):<5} "
              f"{why or '-':<18} {same:>5}/{n:<5} {mine:>6} {pct:8.2f}"
              + (f"  ({err})" if err else ""))
    exact = sum(1 for r in rows if r[2])
    listed = sum(1 for r in rows if not r[2] and r[3])
    print(f"\n{exact}/{len(rows)} equal after sorting; {listed} more equal apart from the "
          "deliberate differences named (yes*; docs/perf-script.md); agree and weight% are "
          "before those")
    return 0 if equal_all else 1


if __name__ == "__main__":
    sys.exit(main())
