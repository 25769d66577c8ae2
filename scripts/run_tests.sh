#!/usr/bin/env bash
# The tests of `make test`, after its lint. First the quiet live tests, alone; then the other
# live tests on two pytest-xdist workers of their own (tests/live/conftest.py: the tests that
# load a CPU or judge the whole node take turns on one, the rest run on the other) BESIDE mypy
# and the rest of the suite, which run niced on every core. The live tests mostly wait on the
# real kernel; the load they make and measure (lab hotcore's burner) runs at nice -20 and the
# recorder at -10, so the niced work beside them takes next to nothing from what they measure.
# Their output is kept in a file and shown when they end. Exits 0 only when all passed.
set -uo pipefail
PY=${PY:-python3}
TEST_WORKERS=${TEST_WORKERS:-auto}
LIVE_WORKERS=${LIVE_WORKERS:-2}
cd "$(dirname "$0")/.."
rc=0
# The tests start corescope in a fresh interpreter hundreds of times. Where bytecode writing is
# off (PYTHONDONTWRITEBYTECODE, set in some CI images and dev shells) each of those compiled
# every module it imported again, ~0.4 s of CPU a run. Compile once, into a private cache
# made for this run (never a shared, guessable directory: root imports from it).
pycache=$(mktemp -d "${TMPDIR:-/tmp}/corescope-pycache.XXXXXX")
export PYTHONPYCACHEPREFIX="$pycache"
unset PYTHONDONTWRITEBYTECODE
"$PY" -m compileall -q -j 0 src >/dev/null || rc=1
# the few live tests that bound the kernel log's clock to milliseconds (a reader thread's wake-up
# latency is part of what they measure) or count every memcg the kernel holds (file IO beside
# them pins dying ones) first, marked quiet, with nothing of ours beside them
"$PY" -m pytest -q -m quiet tests/live || rc=1
log=$(mktemp "${TMPDIR:-/tmp}/corescope-live.XXXXXX")
# an asynchronous command starts with SIGINT ignored: give it back, so Ctrl-C (or the trap
# below) lets pytest stop and run the live tests' clean-ups (lab cgroups, mounts, recorders)
( trap - INT; exec "$PY" -m pytest -q -m "not quiet" -n "$LIVE_WORKERS" --dist loadgroup \
    tests/live ) >"$log" 2>&1 &
live=$!
trap 'kill -INT "$live" 2>/dev/null; wait "$live"; cat "$log"; rm -f "$log"; rm -rf "$pycache"; exit 130' INT TERM
echo "tests/live: running beside the rest (output in $log, shown when they end)"
nice -n 10 "$PY" -m mypy || rc=1
# --dist loadgroup: the tests of one costly session fixture share a worker (tests/conftest.py);
# the longest tests (browser, integration) are handed out first, the many short unit tests
# last, so no worker is left alone with a long test at the end
nice -n 10 "$PY" -m pytest -q -n "$TEST_WORKERS" --dist loadgroup tests/browser \
    tests/integration tests/cli tests/unit || rc=1
wait "$live" || rc=1
echo "== tests/live"
cat "$log"
rm -f "$log"
rm -rf "$pycache"
exit "$rc"
