"""A long, structure-aware fuzz campaign over every saved-artifact kind (not part of the test
suite: run by hand).

    PYTHONPATH=src python tests/tools/fuzz_artifacts.py --stage parse --n 3000 --seed 1
    PYTHONPATH=src python tests/tools/fuzz_artifacts.py --stage cli --n 100 --kinds kernel_log

Stage `parse`: every fixture of every kind (found by sniffing tests/fixtures), truncated at
every line boundary, then N mutated copies, each through the kind's parser directly (after
the importer's decompression). Stage `cli`: N mutated copies per kind written to a file and
run through `analyze --store`, then `report`/`cores`/`zombies --json` on that store, `events
--file` (kernel log and journal kinds) and `flame --perf-script` (perf kinds), in process.

A finding is an exception escaping, a hang (faulthandler kills the run after --hang seconds,
naming the case file), or absurd output (NaN/inf in JSON, a time past year 9999, a negative
count). Each new finding is written to OUT/<signature>.bin with a .txt saying what happened.
"""

from __future__ import annotations

import argparse
import faulthandler
import gzip
import hashlib
import json
import lzma
import math
import random
import re
import shutil
import sys
import tempfile
import time
import traceback
from collections import Counter, defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import zstandard

from corescope.sources.artifacts.base import Parsed
from corescope.sources.artifacts.content import _modules, decompress, module_for, sniff

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures"
MAX_YEAR_9999 = 253402300799.0
CAP = 64 * 1024 * 1024

NUMBERS = ["99999999999999999999999999", "-1", "-7", "NaN", "nan", "inf", "-inf", "1e308",
           "-1e308", "-0", "", "0", "1e-320", "18446744073709551616", "4294967296",
           "9" * 400, "0x10", "1_000", "٣", "+5", "1.", ".5", "-0.0", "Infinity"]
INSERTS = [b"\x00", b"\xff\xfe", b"\xc3", b"\x1b[2J", b"\x1b]0;x\x07", b"\r", b"\x85",
           "\u2028".encode(), b"\t", b"\xed\xa0\x80", b"\x1b[31m", b"{", b"}", b"[", b'"',
           b",", b":", b"\\", b"=", b" ", b"\n\n"]
NUM_RE = re.compile(rb"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")


def kinds() -> list[str]:
    return list(dict.fromkeys(k for m in _modules() for k in m.KINDS))


def fixtures_by_kind(limit: int) -> dict[str, list[Path]]:
    by: dict[str, list[Path]] = defaultdict(list)
    for p in sorted(FIXTURES.rglob("*")):
        if not p.is_file() or p.stat().st_size > 2_000_000:
            continue
        c = decompress(p.read_bytes(), CAP)
        k = sniff(c.data)
        if k and len(by[k]) < limit:
            by[k].append(p)
    return by


# --- mutations --------------------------------------------------------------------------------

def _lines(d: bytes) -> list[bytes]:
    return d.split(b"\n")


def m_truncate_line(r: random.Random, d: bytes, o: bytes) -> bytes:
    ls = _lines(d)
    return b"\n".join(ls[: r.randrange(len(ls) + 1)])


def m_truncate_byte(r: random.Random, d: bytes, o: bytes) -> bytes:
    return d[: r.randrange(len(d) + 1)]


def m_dup(r: random.Random, d: bytes, o: bytes) -> bytes:
    ls = _lines(d)
    i = r.randrange(len(ls))
    ls[i:i] = [ls[i]] * r.choice([1, 1, 2, 50])
    return b"\n".join(ls)


def m_delete(r: random.Random, d: bytes, o: bytes) -> bytes:
    ls = _lines(d)
    i = r.randrange(len(ls))
    del ls[i: i + r.choice([1, 1, 3, 20])]
    return b"\n".join(ls)


def m_shuffle(r: random.Random, d: bytes, o: bytes) -> bytes:
    ls = _lines(d)
    if r.random() < 0.3:
        r.shuffle(ls)
    else:
        i, j = r.randrange(len(ls)), r.randrange(len(ls))
        ls[i], ls[j] = ls[j], ls[i]
    return b"\n".join(ls)


def m_number(r: random.Random, d: bytes, o: bytes) -> bytes:
    spots = list(NUM_RE.finditer(d))
    if not spots:
        return d
    out = d
    for mt in sorted(r.sample(spots, min(len(spots), r.choice([1, 1, 3, 10]))),
                     key=lambda m: -m.start()):
        out = out[: mt.start()] + r.choice(NUMBERS).encode() + out[mt.end():]
    return out


def m_all_numbers(r: random.Random, d: bytes, o: bytes) -> bytes:
    v = r.choice(NUMBERS).encode()
    return NUM_RE.sub(lambda _: v, d)


def m_insert(r: random.Random, d: bytes, o: bytes) -> bytes:
    i = r.randrange(len(d) + 1)
    return d[:i] + r.choice(INSERTS) * r.choice([1, 1, 5]) + d[i:]


def m_flip(r: random.Random, d: bytes, o: bytes) -> bytes:
    if not d:
        return d
    b = bytearray(d)
    for _ in range(r.choice([1, 4, 16])):
        b[r.randrange(len(b))] ^= 1 << r.randrange(8)
    return bytes(b)


def _split_fields(line: bytes) -> tuple[list[bytes], bytes]:
    for sep in (b",", b";", b"\t", b" "):
        if sep in line:
            return line.split(sep), sep
    return [line], b" "


def m_swap_fields(r: random.Random, d: bytes, o: bytes) -> bytes:
    ls = _lines(d)
    i = r.randrange(len(ls))
    f, sep = _split_fields(ls[i])
    if len(f) > 1:
        a, b = r.randrange(len(f)), r.randrange(len(f))
        f[a], f[b] = f[b], f[a]
    ls[i] = sep.join(f)
    return b"\n".join(ls)


def m_columns(r: random.Random, d: bytes, o: bytes) -> bytes:
    ls = _lines(d)
    for i in r.sample(range(len(ls)), min(len(ls), r.choice([1, 1, 5]))):
        f, sep = _split_fields(ls[i])
        if r.random() < 0.5 and len(f) > 1:
            del f[r.randrange(len(f))]
        else:
            f.insert(r.randrange(len(f) + 1), r.choice([b"x", b"12", b"", b"-3", b"nan"]))
        ls[i] = sep.join(f)
    return b"\n".join(ls)


def m_repeat_header(r: random.Random, d: bytes, o: bytes) -> bytes:
    ls = _lines(d)
    n = r.choice([1, 2, 3, 5])
    i = r.randrange(len(ls) + 1)
    ls[i:i] = ls[:n]
    return b"\n".join(ls)


def m_mix(r: random.Random, d: bytes, o: bytes) -> bytes:
    ls, other = _lines(d), _lines(o)
    i = r.randrange(len(ls) + 1)
    j = r.randrange(len(other) + 1)
    ls[i:i] = other[j: j + r.choice([1, 5, 50, 10**6])]
    return b"\n".join(ls)


def m_crlf(r: random.Random, d: bytes, o: bytes) -> bytes:
    return d.replace(b"\n", b"\r\n") if r.random() < 0.8 else d.replace(b"\n", b"\r")


def m_long_line(r: random.Random, d: bytes, o: bytes) -> bytes:
    ls = _lines(d)
    i = r.randrange(len(ls))
    unit = (ls[i] or b"x")[:200]
    ls[i] = ls[i] + unit * r.choice([100, 5000, 100_000 // len(unit)])
    return b"\n".join(ls)


def _json_mutate(r: random.Random, v: Any) -> Any:
    """Replace one random node of a JSON document by something hostile."""
    bad: list[Any] = [None, -1, -0.0, 1e308, 10**30, "", "x", [], {}, True, "NaN", 2**64, 0,
                      "-5", "1e308", [1, 2], {"a": None}]
    if isinstance(v, dict) and v and r.random() < 0.85:
        k = r.choice(list(v))
        if r.random() < 0.1:
            del v[k]
        else:
            v[k] = _json_mutate(r, v[k])
        return v
    if isinstance(v, list) and v and r.random() < 0.85:
        i = r.randrange(len(v))
        if r.random() < 0.1:
            del v[i]
        else:
            v[i] = _json_mutate(r, v[i])
        return v
    return r.choice(bad)


def m_json(r: random.Random, d: bytes, o: bytes) -> bytes:
    text = d.decode("utf-8", errors="replace")
    try:
        doc = json.loads(text)
        for _ in range(r.choice([1, 1, 3])):
            doc = _json_mutate(r, doc)
        return json.dumps(doc, indent=r.choice([None, 1])).encode()
    except (ValueError, RecursionError):
        pass
    ls = text.split("\n")  # NDJSON / journal json: one document a line
    idx = [i for i, ln in enumerate(ls) if ln.strip().startswith(("{", "["))]
    if not idx:
        return d
    for i in r.sample(idx, min(len(idx), r.choice([1, 1, 4]))):
        try:
            ls[i] = json.dumps(_json_mutate(r, json.loads(ls[i])))
        except (ValueError, RecursionError):
            continue
    return "\n".join(ls).encode()


MUTATORS: list[Callable[[random.Random, bytes, bytes], bytes]] = [
    m_truncate_line, m_truncate_byte, m_dup, m_delete, m_shuffle, m_number, m_number,
    m_all_numbers, m_insert, m_flip, m_swap_fields, m_columns, m_columns, m_repeat_header,
    m_mix, m_crlf, m_long_line, m_json, m_json]


def wrap(r: random.Random, d: bytes) -> bytes:
    """Compress, and maybe cut the stream short."""
    c = r.choice(["gzip", "zstd", "xz"])
    z = (gzip.compress(d) if c == "gzip" else zstandard.ZstdCompressor().compress(d)
         if c == "zstd" else lzma.compress(d))
    if r.random() < 0.7:
        z = z[: r.randrange(len(z) + 1)]
    return z


def mutate(r: random.Random, d: bytes, other: bytes) -> tuple[bytes, list[str]]:
    names = []
    for _ in range(r.choice([1, 1, 2, 3])):
        m = r.choice(MUTATORS)
        d = m(r, d, other)
        if len(d) > 8_000_000:  # a mutation of a mutation must not grow without bound
            d = d[:8_000_000]
        names.append(m.__name__)
    if r.random() < 0.08:
        d = wrap(r, d)
        names.append("wrap")
    return d, names


# --- checks -----------------------------------------------------------------------------------

class Absurd(AssertionError):
    pass


def _time_ok(t: float, what: str) -> None:
    if not math.isfinite(t) or t < 0 or t > MAX_YEAR_9999:
        raise Absurd(f"{what}: {t!r}")


def check_parsed(p: Parsed, kind: str) -> None:
    assert p.kind == kind, (p.kind, kind)
    if p.records < 0:
        raise Absurd(f"records {p.records}")
    sp = p.span()
    if sp is not None:
        _time_ok(sp[0], "span start")
        _time_ok(sp[1], "span end")
    p.cpus()
    for b in p.boot_times:
        _time_ok(b.epoch, "boot time")
    n = len(p.samples)
    for i in {0, n // 2, n - 1} if n else ():
        s = p.samples[i]
        _time_ok(s.t, "sample t")
        if not (math.isfinite(s.interval_s) and s.interval_s >= 0):
            raise Absurd(f"interval {s.interval_s!r}")
        for cpu, row in s.deltas.items():
            if cpu < 0 or any((not isinstance(x, int) and not math.isfinite(x)) or x < 0
                              for x in row):
                raise Absurd(f"sample cpu {cpu} row {row}")
    for c in p.censuses:
        _time_ok(c.t, "census t")
        for v in (c.kernel_count, c.live, c.dying):
            if v is not None and v < 0:
                raise Absurd(f"census count {v}")
    for r in p.restarts:
        if not p.undated:
            _time_ok(r.t, "restart t")
        if r.restarts is not None and r.restarts < 0:
            raise Absurd(f"restarts {r.restarts}")
    for k in p.kernel[:50]:
        if k.wall is not None:
            _time_ok(k.wall, "kernel wall")
        if k.usec is not None and k.usec < 0:
            raise Absurd(f"kernel usec {k.usec}")
    if p.extra_span is not None:
        _time_ok(p.extra_span[0], "extra span")
        _time_ok(p.extra_span[1], "extra span")


def parse_one(kind: str, data: bytes) -> None:
    c = decompress(data, CAP)
    mod = module_for(kind)
    assert mod is not None
    p = mod.parse(c.data, kind, "fuzz")
    check_parsed(p, kind)


_YEAR = re.compile(r"^(\d{5,}|[+-]\d{4,})-\d\d-\d\d")
COUNT_KEYS = re.compile(r"^(\w+_)?(count|records|samples|restarts|dying|live|episodes|events|"
                        r"mono_usec|usec|seq|n|cpus?|queue|irq)$")
TIME_KEYS = re.compile(r"^(\w+_)?(time|start|end|t|span|epoch|since|until|at|wall)$")


def _nan(const: str) -> Any:
    raise Absurd(f"{const} in JSON output")


def check_json(text: str, what: str) -> None:
    if not text.strip():
        return
    doc = json.loads(text, parse_constant=_nan)

    def walk(v: Any, key: str) -> None:
        if isinstance(v, dict):
            for k, x in v.items():
                walk(x, str(k))
        elif isinstance(v, list):
            for x in v:
                walk(x, key)
        elif isinstance(v, str):
            if _YEAR.match(v):
                raise Absurd(f"{what}: {key}={v!r}")
        elif isinstance(v, (int, float)) and not isinstance(v, bool):
            if COUNT_KEYS.search(key) and v < 0:
                raise Absurd(f"{what}: negative {key}={v}")
            if TIME_KEYS.search(key) and not 0 <= v <= MAX_YEAR_9999:
                raise Absurd(f"{what}: {key}={v}")
            if key == "level" and not 0 <= v <= 7:
                raise Absurd(f"{what}: level={v}")
    walk(doc, "")


def run_cli_stage(kind: str, data: bytes, tmp: Path) -> None:
    from click.testing import CliRunner

    from corescope.views.cli import cli, hoist_global_options

    f = tmp / "artifact.txt"
    f.write_bytes(data)
    store = tmp / "store"
    shutil.rmtree(store, ignore_errors=True)
    runner = CliRunner()

    def run(*args: str) -> str:
        res = runner.invoke(cli, hoist_global_options(list(args)), catch_exceptions=True)
        if res.exception is not None and not isinstance(res.exception, SystemExit):
            assert res.exc_info is not None
            raise res.exception.with_traceback(res.exc_info[2])
        if "Traceback" in res.output:
            raise AssertionError(f"traceback in output of {args[0]}")
        return res.stdout

    out = run("analyze", "--store", str(store), "--json", str(f))
    check_json(out, "analyze")
    for cmd in ("report", "cores", "zombies"):
        check_json(run(cmd, "--store", str(store), "--json"), cmd)
    if kind == "kernel_log" or kind.startswith("journal"):
        check_json(run("events", "--file", str(f), "--json"), "events --file")
    if kind in ("perf_script", "folded"):
        run("flame", "--perf-script", str(f), "-o", str(tmp / "f.html"))


# --- the campaign -----------------------------------------------------------------------------

def signature(exc: BaseException) -> str:
    tb = traceback.extract_tb(exc.__traceback__)
    frames = [f for f in tb if "/corescope/" in f.filename] or tb[-1:]
    last = frames[-1] if frames else None
    where = f"{Path(last.filename).name}:{last.lineno}" if last else "?"
    msg = str(exc)[:60] if isinstance(exc, Absurd) else ""
    return f"{type(exc).__name__}@{where}{' ' + msg if msg else ''}"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--stage", choices=("parse", "cli"), default="parse")
    ap.add_argument("--n", type=int, default=1000, help="mutations per fixture file")
    ap.add_argument("--files", type=int, default=4, help="fixtures per kind")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--kinds", default="", help="comma-separated; default every kind")
    ap.add_argument("--out", type=Path, default=Path("/tmp/fz/findings"))
    ap.add_argument("--hang", type=float, default=60.0)
    a = ap.parse_args()
    a.out.mkdir(parents=True, exist_ok=True)
    cur = a.out / f"current-{a.stage}-{a.seed}.bin"
    by = fixtures_by_kind(a.files)
    want = [k for k in kinds() if not a.kinds or k in a.kinds.split(",")]
    missing = [k for k in want if not by.get(k)]
    if missing:
        print("no fixture for", missing, file=sys.stderr)
    pool = [p for ps in by.values() for p in ps]
    r = random.Random(a.seed)
    found: dict[str, int] = {}
    counts: Counter[str] = Counter()
    tmp = Path(tempfile.mkdtemp(prefix="fz-"))

    def attempt(kind: str, data: bytes, how: str) -> None:
        cur.write_bytes(data)
        faulthandler.dump_traceback_later(a.hang, exit=True, file=sys.stderr)
        t0 = time.monotonic()
        try:
            if a.stage == "parse":
                parse_one(kind, data)
            else:
                run_cli_stage(kind, data, tmp)
        except Exception as exc:
            sig = f"{kind} {signature(exc)}"
            if sig not in found or len(data) < found[sig]:
                new = sig not in found
                found[sig] = len(data)
                name = hashlib.sha1(sig.encode()).hexdigest()[:10]
                (a.out / f"{name}.bin").write_bytes(data)
                (a.out / f"{name}.txt").write_text(
                    f"{sig}\nkind {kind} via {how}\n\n" + "".join(traceback.format_exception(exc)))
                if new:
                    print(f"FINDING {sig}  -> {a.out / name}.bin", flush=True)
        finally:
            faulthandler.cancel_dump_traceback_later()
        dt = time.monotonic() - t0
        if dt > 10 and len(data) < 1_000_000:
            print(f"SLOW {kind} {dt:.1f}s {how} len={len(data)}", flush=True)
            (a.out / f"slow-{kind}-{int(dt)}.bin").write_bytes(data)
        counts[kind] += 1

    for kind in want:
        for path in by.get(kind, []):
            raw = decompress(path.read_bytes(), CAP).data
            t0 = time.monotonic()
            if a.stage == "parse":
                ls = _lines(raw)
                step = max(1, len(ls) // 2000)
                for i in range(0, len(ls) + 1, step):
                    attempt(kind, b"\n".join(ls[:i]), f"{path.name} cut at line {i}")
            for _ in range(a.n):
                other = r.choice(pool).read_bytes()
                data, names = mutate(r, raw, other)
                attempt(kind, data, f"{path.name} {'+'.join(names)}")
            print(f"{kind:18} {path.name:40} done {counts[kind]:7} "
                  f"{time.monotonic() - t0:6.1f}s findings {len(found)}", flush=True)
    print("COUNTS", dict(counts))
    print("FINDINGS", json.dumps(sorted(found), indent=1))
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
