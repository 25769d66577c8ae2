# The two commands in the README: `make doctor` (check this node) and `make test` (everything).
PY ?= python3

.PHONY: doctor test lint bench docs

# doctor exits 1 when it has findings: that is its answer, not a failure of make. Exit 2 (it
# could not run) still fails. SETUP and DOCTOR_ARGS let a test run it without installing.
SETUP ?= scripts/setup.sh
# The in-process, subprocess and browser tests run on every core (pytest-xdist), niced; the live
# tests at the same time on two workers of their own (scripts/run_tests.sh says why that is safe).
TEST_WORKERS ?= auto
LIVE_WORKERS ?= 2
DOCTOR_ARGS ?=

doctor:
	@$(SETUP)
	@rc=0; $(PY) -m corescope doctor $(DOCTOR_ARGS) || rc=$$?; \
	if [ $$rc -eq 1 ]; then echo "make doctor: findings above (doctor exit 1)"; \
	elif [ $$rc -ne 0 ]; then exit $$rc; fi

test:
	@scripts/setup.sh test
	$(PY) -m ruff check src tests bench
	PY=$(PY) TEST_WORKERS=$(TEST_WORKERS) LIVE_WORKERS=$(LIVE_WORKERS) scripts/run_tests.sh

lint:
	$(PY) -m ruff check src tests bench
	$(PY) -m mypy

bench:
	@for b in bench/*.py; do echo "== $$b"; $(PY) $$b || exit 1; done
docs:
	$(PY) scripts/gen_docs.py
