# dsh: every target sets itself up on a fresh machine with only Python 3.11 and pip.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
PYTEST_WORKERS ?= 2
LINT_PATHS := $(wildcard src tests scripts bench examples)

.PHONY: run test lint typecheck contracts unit bench bench-quick bytecode fmt clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

# Compile dsh's bytecode, as installing a wheel does: an editable install leaves it to the first
# import, which writes nothing where PYTHONDONTWRITEBYTECODE is set, so every start would compile.
bytecode: $(STAMP)
	$(BIN)/python -m compileall -q src

DEMO_PROMPT ?= show me the files in this folder
SESSIONS ?= $(CURDIR)/.sessions

# The main job: the version, the kernel demo, then one agent turn end to end. Keyless
# (the scripted demo model driving the real bash tool) unless DEEPSEEK_API_KEY is set.
run: bytecode
	$(BIN)/dsh --version
	$(BIN)/python examples/kernel-demo/start.py
	@if [ -n "$$DEEPSEEK_API_KEY" ]; then \
		$(BIN)/dsh --sessions-root "$(SESSIONS)" run "$(DEMO_PROMPT)"; \
	else \
		echo "(no DEEPSEEK_API_KEY: running the keyless demo model)"; \
		$(BIN)/dsh --sessions-root "$(SESSIONS)" run --demo "$(DEMO_PROMPT)"; \
	fi
	$(BIN)/dsh --sessions-root "$(SESSIONS)" sessions list
	@echo "session logs are under $(SESSIONS)"

lint: $(STAMP)
	$(BIN)/ruff check $(LINT_PATHS)
	$(BIN)/ruff format --check $(LINT_PATHS)

typecheck: $(STAMP)
	$(BIN)/mypy

contracts: $(STAMP)
	$(BIN)/lint-imports

unit: $(STAMP)
	rm -f .coverage .coverage.* coverage.json
	$(BIN)/python scripts/run_tests.py -n $(PYTEST_WORKERS)
	$(BIN)/python scripts/coverage_gate.py

test: lint typecheck contracts unit

bench: bytecode
	$(BIN)/python bench/run.py

bench-quick: bytecode
	$(BIN)/python bench/run.py --quick

fmt: $(STAMP)
	$(BIN)/ruff check --fix $(LINT_PATHS)
	$(BIN)/ruff format $(LINT_PATHS)

clean:
	rm -rf $(VENV) .coverage .coverage.* coverage.json .mypy_cache .ruff_cache .pytest_cache
