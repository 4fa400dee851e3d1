# Three commands matter: `make demo` (the quickstart, in-process), `make quick` (the quick
# check: a small venv of its own, under 3 minutes from a fresh clone) and `make test`
# (everything, about half an hour).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
TYPED := examples tests/support/typing_check.py tests/support/readme_snippets.py
# The suite starts hundreds of Python processes (the examples, the command, pytest inside
# the plugin's tests); where the environment forbids writing bytecode, each compiled the
# package and the test modules from source again (about half a second of CPU a process).
unexport PYTHONDONTWRITEBYTECODE

.PHONY: demo quick test suite test-endpoint langgraph release-check test-botocore-wire fuzz-wire deep lint typecheck docs unit engines ddb-local dynoxide bench bench-all footprint clean soak

# The development environment: the package (editable) and the PEP 735 groups of
# pyproject.toml, which `pip install --group` reads from pip 25.1 on (hence the upgrade).
$(STAMP): pyproject.toml libs/langgraph/pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade 'pip>=25.1'
	$(BIN)/python -m pip install --quiet -e . -e libs/langgraph --group dev --group bench --group docs
	touch $(STAMP)

# The demo needs only the `testing` extra: a small venv of its own, not the dev tools.
DEMO_VENV := .venv-demo
DEMO_STAMP := $(DEMO_VENV)/.installed
$(DEMO_STAMP): pyproject.toml
	$(PYTHON) -m venv $(DEMO_VENV)
	$(DEMO_VENV)/bin/python -m pip install --quiet -e '.[testing]'
	touch $(DEMO_STAMP)

demo: $(DEMO_STAMP)
	$(DEMO_VENV)/bin/dynaorm demo

# The quick check from a fresh clone, under 3 minutes on two cores: a small venv of its own
# (the `testing` and `async` extras, the `quick` group: pytest-xdist, hypothesis; ~190 MB,
# not the 1.3 GB development venv), then the pure and equivalence tests (unit/,
# equivalence/) on moto in-process, in two pytest-xdist workers. A test whose optional
# library is absent (pyarrow, cfn-lint, the MCP SDK, FastAPI, PynamoDB) skips and says
# which. Left to `make unit`: the wires against a hostile loopback server (misbehaving
# proxies and networks, random bytes, hostile answers decoded on both wires): half the tests' time
# (waits on sockets and timeouts), and not planning, rendering, keys or values.
QUICK_LEFT := tests/unit/test_wire_hostile.py tests/unit/test_answer_decoding.py
QUICK_VENV := .venv-quick
QUICK_STAMP := $(QUICK_VENV)/.installed
$(QUICK_STAMP): pyproject.toml
	$(PYTHON) -m venv $(QUICK_VENV)
	$(QUICK_VENV)/bin/python -m pip install --quiet --upgrade 'pip>=25.1'
	$(QUICK_VENV)/bin/python -m pip install --quiet -e '.[testing,async]' --group quick
	touch $(QUICK_STAMP)

quick: $(QUICK_STAMP)
	DYNAORM_BACKENDS=moto DYNAORM_ASYNC=0 $(QUICK_VENV)/bin/pytest -q -p no:cacheprovider \
		-n 2 $(QUICK_LEFT:%=--ignore=%) tests/unit tests/equivalence

# The engines of the integration tests besides moto, from npm into the git-ignored .cache/.
engines: ddb-local dynoxide

ddb-local:
	bash scripts/install-ddb-local.sh

dynoxide:
	bash scripts/install-dynoxide.sh

# ruff, and the floors of the house (the import contracts in pyproject.toml)
lint: $(STAMP)
	$(BIN)/ruff check dynaorm libs pytest_dynaorm.py tests examples benchmarks
	$(BIN)/lint-imports

# mypy --strict on the library and the typed examples; pyright on what users write.
typecheck: $(STAMP)
	$(BIN)/mypy dynaorm libs/langgraph/dynaorm_langgraph pytest_dynaorm.py $(TYPED)
	$(BIN)/pyright $(TYPED)

# The documentation site (guide + API reference from docstrings); warnings are errors.
docs: $(STAMP)
	$(BIN)/mkdocs build --strict --quiet --site-dir build/site

# All of unit/ and equivalence/ in the development venv (`make quick` is the quick check:
# it leaves the wires against a hostile server out), on moto in-process only: no DynamoDB
# Local, no dynoxide, no async variant, no lint. About 6 minutes of CPU, in two workers.
unit: $(STAMP)
	DYNAORM_BACKENDS=moto DYNAORM_ASYNC=0 $(BIN)/pytest -q -p no:cacheprovider -n 2 \
		tests/unit tests/equivalence

# The release a user installs: sdist and wheel built, twine-checked, the wheel alone in a
# fresh venv running `dynaorm demo` (about a minute; scripts/release-check.sh).
release-check: $(STAMP)
	PYTHON=$(BIN)/python bash scripts/release-check.sh

# CI: the venv and the engines' download first, side by side; then the suite beside the
# endpoint stage and the checks, two of those at a time (make -j3: the checks are one
# process each, mostly waiting on one core or, the release check, on pip; the suite's two
# pytest-xdist workers wait on engines, subprocesses and the tail of the run, where one
# worker is left with a long test: before the suite, the checks took ~3 of CI's minutes).
# Each stage's output is printed whole when it ends (--output-sync). The suite:
# two workers, each its own engines and tables (tests/conftest.py); the 40 slowest tests
# are listed (what to make cheaper or move to fewer engines first).
CHECKS := lint typecheck docs release-check langgraph
test:
	@date +'%T setup'
	$(MAKE) --no-print-directory -j2 --output-sync=target $(STAMP) engines
	@date +'%T checks, suite and endpoint at once'
	$(MAKE) --no-print-directory -j3 --output-sync=target suite test-endpoint $(CHECKS)
	@date +'%T done'

# (xdist's default scheduling: --dist worksteal measured no faster here, a fresh-clone
# CI of 1,316 s against 1,286 s, session 12)
suite: $(STAMP) engines
	DYNAORM_REQUIRE_LOCAL=1 $(BIN)/pytest -q -p no:cacheprovider -n 2 --durations=40 \
		--ignore=$(CONFORMANCE)

# The LangGraph adapter's stage (libs/langgraph, the distribution dynaorm-langgraph):
# LangGraph's checkpointer conformance suite, released and the repository's newer
# capabilities (vendored at pinned commits), on moto and DynamoDB Local. The adapter's own
# tests (tests/integration/test_langgraph_*.py) run in the suite: they use its fixtures.
CONFORMANCE := tests/integration/test_langgraph_conformance.py
langgraph: $(STAMP) engines
	DYNAORM_REQUIRE_LOCAL=1 $(BIN)/pytest -q -p no:cacheprovider $(CONFORMANCE)

# The path `--dynaorm-endpoint URL` takes (the README's "any engine": the plugin's fault
# proxy in front, the async variant on it), which the run above never takes, on a dynoxide
# of its own (scripts/with-dynoxide.py; under CI=true a missing dynoxide fails): the
# index-lag, vector-search, search and explain tests, sync and async variants (every async
# variant of the integration suite took ~6 minutes of CI's 30 on two cores: run it by hand
# with ENDPOINT_TESTS="endpoint-async or test_index_lag or test_vectors"). Only their
# endpoint variants ("and endpoint"): the same modules' tests that take no engine, or
# DynamoDB Local by name (explain's), ran as they are in the run above.
ENDPOINT_TESTS ?= "(test_index_lag or test_vectors or test_search or test_explain) and endpoint"
test-endpoint: $(STAMP) dynoxide
	DYNAORM_REQUIRE_LOCAL=1 $(BIN)/python scripts/with-dynoxide.py $(BIN)/pytest -q \
		-p no:cacheprovider -n 2 tests/integration -k $(ENDPOINT_TESTS)

# Every property at the examples it declares (make test draws a quarter of them:
# tests/support/examples.py), the rest of the suite as make test runs it.
deep: $(STAMP) engines
	DYNAORM_EXAMPLES=1 DYNAORM_REQUIRE_LOCAL=1 $(BIN)/pytest -q -p no:cacheprovider -n 2

# The integration suite on DynamoDB Local through the botocore wire (make test sends
# through dynaorm's own wire; moto in-process and the tests that hook botocore use botocore).
test-botocore-wire: $(STAMP) engines
	DYNAORM_WIRE=botocore DYNAORM_BACKENDS=local DYNAORM_REQUIRE_LOCAL=1 \
		$(BIN)/pytest -q -p no:cacheprovider tests/integration

# The wires against random byte streams from a hostile server, long (the test suite runs
# 20 examples per variant; DYNAORM_FUZZ_EXAMPLES=N make fuzz-wire for another count)
DYNAORM_FUZZ_EXAMPLES ?= 2000
fuzz-wire: $(STAMP)
	DYNAORM_FUZZ_EXAMPLES=$(DYNAORM_FUZZ_EXAMPLES) DYNAORM_EXAMPLES=1 $(BIN)/pytest -q -p no:cacheprovider \
		tests/unit/test_wire_hostile.py -k random_byte_streams

bench: $(STAMP)
	$(BIN)/python benchmarks/overhead.py

footprint: $(STAMP)
	$(BIN)/python benchmarks/footprint.py

# Every benchmark (see benchmarks/README.md), figures as JSON in build/bench/; DynamoDB
# Local from .cache/ (make ddb-local). Several minutes: they print, they never fail a build.
BENCH_OUT := build/bench
bench-all: $(STAMP) ddb-local
	mkdir -p $(BENCH_OUT)
	$(BIN)/python benchmarks/overhead.py --json $(BENCH_OUT)/overhead.json
	$(BIN)/python benchmarks/overhead.py --transport stub --json $(BENCH_OUT)/overhead-stub.json
	$(BIN)/python benchmarks/updates.py --json $(BENCH_OUT)/updates.json
	$(BIN)/python benchmarks/updates.py --transport stub --skip-history --json $(BENCH_OUT)/updates-stub.json
	$(BIN)/python benchmarks/memory.py --json $(BENCH_OUT)/memory.json
	$(BIN)/python benchmarks/scale.py --memory-json $(BENCH_OUT)/memory.json --json $(BENCH_OUT)/scale.json
	$(BIN)/python benchmarks/paging.py --json $(BENCH_OUT)/paging.json
	$(BIN)/python benchmarks/projections.py --json $(BENCH_OUT)/projections.json
	$(BIN)/python benchmarks/scan.py
	$(BIN)/python benchmarks/async_gets.py
	$(BIN)/python benchmarks/jobs.py
	$(BIN)/python benchmarks/vectors.py --json $(BENCH_OUT)/vectors.json
	$(BIN)/python benchmarks/export.py --memory
	$(BIN)/python benchmarks/encryption.py --json $(BENCH_OUT)/encryption.json
	$(BIN)/python benchmarks/offload.py --json $(BENCH_OUT)/offload.json
	$(BIN)/python benchmarks/load.py --json $(BENCH_OUT)/load.json
	$(BIN)/python benchmarks/unit_of_work.py --json $(BENCH_OUT)/unit_of_work.json
	-$(BIN)/python benchmarks/footprint.py

clean:
	rm -rf $(VENV) $(DEMO_VENV) $(QUICK_VENV) .cache .mypy_cache .ruff_cache .pytest_cache .hypothesis build

# The adversary (tests/system/test_adversary.py) for a long run on DynamoDB Local:
# SOAK examples of the state machine, its figures printed at the end.
SOAK ?= 300
soak: $(STAMP) ddb-local
	DYNAORM_SOAK=$(SOAK) DYNAORM_EXAMPLES=1 DYNAORM_BACKENDS=local DYNAORM_REQUIRE_LOCAL=1 $(BIN)/pytest -q -s \
		-p no:cacheprovider tests/system/test_adversary.py
