# dsh: every target sets itself up on a fresh machine with only Python 3.11 and pip.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
PYTEST_WORKERS ?= 2

.PHONY: run test lint typecheck contracts unit bench bench-quick fmt clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

run: $(STAMP)
	$(BIN)/dsh --version
	$(BIN)/python examples/kernel-demo/start.py

lint: $(STAMP)
	$(BIN)/ruff check src tests scripts bench examples
	$(BIN)/ruff format --check src tests scripts bench examples

typecheck: $(STAMP)
	$(BIN)/mypy

contracts: $(STAMP)
	$(BIN)/lint-imports

unit: $(STAMP)
	rm -f .coverage .coverage.* coverage.json
	$(BIN)/python scripts/run_tests.py -n $(PYTEST_WORKERS)
	$(BIN)/python scripts/coverage_gate.py

test: lint typecheck contracts unit

bench: $(STAMP)
	$(BIN)/python bench/run.py

bench-quick: $(STAMP)
	$(BIN)/python bench/run.py --quick

fmt: $(STAMP)
	$(BIN)/ruff check --fix src tests scripts bench examples
	$(BIN)/ruff format src tests scripts bench examples

clean:
	rm -rf $(VENV) .coverage .coverage.* coverage.json .mypy_cache .ruff_cache .pytest_cache
