"""Backends for the suite: every test that takes ``backend`` or ``db`` runs on each engine:
the in-process moto, DynamoDB Local and dynoxide (both installed from npm by ``make test``).

- ``--dynaorm-endpoint URL`` / ``DYNAORM_TEST_ENDPOINT=URL`` (the plugin's option) runs
  those tests on that endpoint only, whatever engine it is; a dead endpoint fails them.
- ``DYNAORM_BACKENDS=moto,local`` restricts the engines (default: all three).
- An engine is required when ``CI=true`` or ``DYNAORM_REQUIRE_LOCAL=1``: there, a missing
  install or a server that does not start fails the run instead of skipping.
- Under pytest-xdist each worker uses its own tables (names suffixed ``-gw0``, ...).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator

import pytest

from dynaorm.testing import TestBackend, moto_backend, use_tables, worker_suffix
from pytest_dynaorm import endpoint_of
from tests.support.ddb_local import DEFAULT_CACHE_DIR, DynamoDBLocal, find_jar
from tests.support.dynoxide import Dynoxide, find_binary
from tests.support.models import app

BACKENDS = ("moto", "local", "dynoxide")


def _required() -> bool:
    return os.environ.get("CI", "").lower() == "true" or os.environ.get(
        "DYNAORM_REQUIRE_LOCAL") == "1"


def backends(config: pytest.Config) -> list[str]:
    """The engines the ``backend`` fixture runs on in this session."""
    if endpoint_of(config):
        return ["endpoint"]
    chosen = os.environ.get("DYNAORM_BACKENDS")
    if not chosen:
        return list(BACKENDS)
    names = [n.strip() for n in chosen.split(",") if n.strip()]
    unknown = set(names) - set(BACKENDS)
    if unknown:
        raise pytest.UsageError(f"DYNAORM_BACKENDS: unknown {sorted(unknown)}; "
                                f"choose from {BACKENDS}")
    return names


#: Modules whose tests use sync-only instruments (the botocore client's events, swapped
#: transports, threads): they do not also run through AsyncSession.
SYNC_ONLY_MODULES = frozenset({
    "test_transport", "test_faults", "test_bulk", "test_concurrency", "test_idempotency",
    "test_observability", "test_paging_cost", "test_cli", "test_audit", "test_audit_02",
    "test_plugin", "test_examples", "test_seed_users", "test_labs", "test_streams",
    "test_async", "test_find_race",
})
#: Tests that watch the sync client's requests (its botocore events, a swapped transport).
SYNC_ONLY_TESTS = frozenset({
    "test_check_alone_is_a_transaction_of_one",
    "test_delete_by_key_with_rules_reads_first_and_removes_guards",
    "test_delete_many_objects_and_keys",
    "test_single_item_transaction_conflict_is_retried",
    "test_error_provoked_for_real",
    "test_history_through_the_index_reads_about_k_items",
    "test_scatter_gather_merges_in_sort_key_order",
    "test_scatter_gather_reads_shards_first_to_last",
    "test_one_shard_alone",
    "test_every_action_alone_is_one_update_item_and_result_is_the_stored_entity",
    "test_add_on_a_gsi_sort_key_field_re_renders_the_index_key",
})
#: Fixtures that instrument the sync client: a test using one is sync-only.
SYNC_ONLY_FIXTURES = frozenset({"rec", "faults", "requests", "recorded", "counted"})


def _async_variant(metafunc: pytest.Metafunc) -> bool:
    """Whether a test also runs with ``db.session()`` an AsyncSession (on DynamoDB Local;
    ``DYNAORM_ASYNC=0`` turns it off)."""
    if os.environ.get("DYNAORM_ASYNC", "1") == "0" or "db" not in metafunc.fixturenames:
        return False
    module = metafunc.module.__name__.rsplit(".", 1)[-1]
    if module in SYNC_ONLY_MODULES or SYNC_ONLY_FIXTURES & set(metafunc.fixturenames):
        return False
    if metafunc.function.__name__ in SYNC_ONLY_TESTS:
        return False
    return metafunc.definition.get_closest_marker("sync_only") is None


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "backend" in metafunc.fixturenames:
        names = backends(metafunc.config)
        if "local" in names and _async_variant(metafunc):
            names = [*names, "local-async"]
        metafunc.parametrize("backend", names, indirect=True)


def _unavailable(msg: str) -> None:
    if _required():
        pytest.fail(msg)
    pytest.skip(msg)


@pytest.fixture(scope="session", autouse=True)
def _close_async_clients() -> Iterator[None]:
    """At the end of the run, close the aiobotocore clients the async variant made."""
    yield
    blocking = sys.modules.get("dynaorm.aio.blocking")
    if blocking is not None:
        blocking.close_loop()


@pytest.fixture(scope="session")
def ddb_local() -> Iterator[str]:
    """The endpoint of a DynamoDB Local server shared by the whole run."""
    if find_jar(DEFAULT_CACHE_DIR) is None:
        _unavailable("DynamoDB Local is not installed "
                     "(run scripts/install-ddb-local.sh or make test)")
    server = DynamoDBLocal()
    try:
        server.start()
    except Exception as exc:
        _unavailable(f"DynamoDB Local did not start: {exc}")
    try:
        yield server.endpoint_url
    finally:
        server.stop()


@pytest.fixture(scope="session")
def dynoxide() -> Iterator[str]:
    """The endpoint of a dynoxide server shared by the whole run."""
    if find_binary() is None:
        _unavailable("dynoxide is not installed (run scripts/install-dynoxide.sh or make test)")
    server = Dynoxide()
    try:
        server.start()
    except Exception as exc:
        _unavailable(f"dynoxide did not start: {exc}")
    try:
        yield server.endpoint_url
    finally:
        server.stop()


@pytest.fixture
def backend(request: pytest.FixtureRequest) -> Iterator[str | None]:
    """``None`` for moto (active for the test), or the endpoint URL of the engine."""
    name = getattr(request, "param", "moto")
    if name == "moto":
        with moto_backend():
            yield None
    elif name == "endpoint":
        yield endpoint_of(request.config)
    elif name in ("local", "local-async"):
        yield request.getfixturevalue("ddb_local")
    else:
        yield request.getfixturevalue("dynoxide")


@pytest.fixture
def db(backend: str | None, request: pytest.FixtureRequest) -> Iterator[TestBackend]:
    """The shared test table (tests/support/models.py), fresh, on the current backend."""
    with use_tables(app, endpoint_url=backend, name_suffix=worker_suffix()) as tb:
        if session_kind(request) == "async":
            tb.session_kind = "async"
        yield tb


def engine_of(request: pytest.FixtureRequest) -> str:
    """The engine the current test runs on: "moto", "local", "dynoxide" or "endpoint"."""
    callspec = getattr(request.node, "callspec", None)
    name = str(callspec.params.get("backend", "")) if callspec else ""
    return name.removesuffix("-async")


def session_kind(request: pytest.FixtureRequest) -> str:
    """``"async"`` when ``db.session()`` gives an AsyncSession (behind a blocking
    adapter) in the current test, else ``"sync"``."""
    callspec = getattr(request.node, "callspec", None)
    name = str(callspec.params.get("backend", "")) if callspec else ""
    return "async" if name.endswith("-async") else "sync"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "sync_only: not also run through AsyncSession (uses sync-only instruments)")
