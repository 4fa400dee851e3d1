# Two commands matter: `make demo` (the quickstart, in-process) and `make test` (everything).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test lint typecheck unit ddb-local bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test,bench]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/dynaorm demo

ddb-local:
	bash scripts/install-ddb-local.sh

lint: $(STAMP)
	$(BIN)/ruff check dynaorm tests examples benchmarks

typecheck: $(STAMP)
	$(BIN)/mypy dynaorm examples tests/typing_check.py

unit: $(STAMP)
	$(BIN)/pytest -q -p no:cacheprovider

test: $(STAMP) ddb-local lint typecheck
	DYNAORM_REQUIRE_LOCAL=1 $(BIN)/pytest -q -p no:cacheprovider

bench: $(STAMP)
	$(BIN)/python benchmarks/overhead.py

clean:
	rm -rf $(VENV) .cache .mypy_cache .ruff_cache .pytest_cache .hypothesis
