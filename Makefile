# The two commands in the README: `make doctor` (check this node) and `make test` (everything).
PY ?= python3

.PHONY: doctor test lint bench

doctor:
	@scripts/setup.sh
	$(PY) -m corescope doctor

test:
	@scripts/setup.sh test
	$(PY) -m ruff check src tests bench
	$(PY) -m pytest -q

lint:
	$(PY) -m ruff check src tests bench

bench:
	@for b in bench/*.py; do echo "== $$b"; $(PY) $$b || exit 1; done
