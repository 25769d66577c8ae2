#!/usr/bin/env python3
"""Read saved kernel-log excerpts as `corescope events --file` does and print, per file, the
events it finds: kind, the fields a reader looks at, the time each got and how.

    python3 scripts/kernel_log_table.py EXCERPT... [--expect FILE.json]

An expectation file maps an excerpt's file name to the list of incident kinds it should give
(`{"ena-reset.txt": ["nic_tx_stall", "nic_reset"]}`); with it, each excerpt is marked right or
wrong and the total is printed. Not run by `make test`: for checking real logs (pasted in bug
threads, say) that cannot be shipped with the repository.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from corescope.analysis.classify import classify_saved_log
from corescope.sources.kmsg_clock import anchor_clock
from corescope.sources.kmsg_saved import parse_saved_log

FIELDS = ("iface", "queue", "cpu", "cpus", "pid", "comm", "cgroup", "container_id", "stage",
          "signal", "lines")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("paths", nargs="+", type=Path)
    ap.add_argument("--expect", type=Path, default=None)
    args = ap.parse_args(argv)
    expect = json.loads(args.expect.read_text()) if args.expect else {}
    anchor = anchor_clock()
    right = total = 0
    for path in args.paths:
        try:
            data = path.read_bytes()
        except OSError as exc:
            print(f"{path}: cannot read: {exc.strerror}", file=sys.stderr)
            continue
        records, diags = parse_saved_log(data, str(path))
        events, clock = classify_saved_log(records, anchor)
        shown = [e for e in events if e.is_incident]
        verdict = ""
        if path.name in expect:
            total += 1
            ok = [e.kind for e in shown] == list(expect[path.name])
            right += ok
            verdict = "  RIGHT" if ok else f"  WRONG (want {expect[path.name]})"
        print(f"== {path}: {len(records)} records, {len(shown)} incidents; clock: {clock}"
              f"{verdict}")
        for d in diags[:5]:
            print(f"   note: {d.message}")
        for e in shown:
            f = {k: e.fields[k] for k in FIELDS if k in e.fields}
            when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(e.time))
            print(f"   {when}  {e.kind:<22} {e.driver or '-':<10} {e.device or '-':<14} {f}")
    if total:
        print(f"{right} of {total} excerpts right")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
