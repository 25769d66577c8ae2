# The two commands in the README: `make doctor` (check this node) and `make test` (everything).
PY ?= python3

.PHONY: doctor test lint bench docs

# doctor exits 1 when it has findings: that is its answer, not a failure of make. Exit 2 (it
# could not run) still fails. SETUP and DOCTOR_ARGS let a test run it without installing.
SETUP ?= scripts/setup.sh
# The in-process, subprocess and browser tests run on every core (pytest-xdist); the live tests
# after them, alone, since they measure the real cores they load.
TEST_WORKERS ?= auto
DOCTOR_ARGS ?=

doctor:
	@$(SETUP)
	@rc=0; $(PY) -m corescope doctor $(DOCTOR_ARGS) || rc=$$?; \
	if [ $$rc -eq 1 ]; then echo "make doctor: findings above (doctor exit 1)"; \
	elif [ $$rc -ne 0 ]; then exit $$rc; fi

test:
	@scripts/setup.sh test
	$(PY) -m ruff check src tests bench
	$(PY) -m mypy
	$(PY) -m pytest -q -n $(TEST_WORKERS) tests/unit tests/cli tests/integration tests/browser
	$(PY) -m pytest -q tests/live

lint:
	$(PY) -m ruff check src tests bench
	$(PY) -m mypy

bench:
	@for b in bench/*.py; do echo "== $$b"; $(PY) $$b || exit 1; done
docs:
	$(PY) scripts/gen_docs.py
