"""Backends for the suite: every test that takes ``backend`` or ``db`` runs on each engine:
the in-process moto, DynamoDB Local and dynoxide (both installed from npm by ``make test``).

- ``--dynaorm-endpoint URL`` / ``DYNAORM_TEST_ENDPOINT=URL`` (the plugin's option) runs
  those tests on that endpoint only, whatever engine it is (async variant included); a
  dead endpoint fails them. Allowances that differ by engine (:func:`engine_of`) follow
  the engine the endpoint turns out to be (``tests/support/engines.py``), not the
  option's name: under the name alone, dynoxide was held to DynamoDB Local's exact
  400 KB boundary for updates and failed.
- ``DYNAORM_BACKENDS=moto,local`` restricts the engines. By default a test runs on moto
  (:data:`DEFAULT_ENGINES`); DynamoDB Local and dynoxide join where the test's ``engines``
  marker names them (its behaviour depends on the engine). Engines chosen by name run
  every test their marker allows.
- ``--dynaorm-index-lag=SECONDS`` (the plugin's option) lags index reads on every engine:
  in-process, and through a fault proxy in front of DynamoDB Local, dynoxide and the
  endpoint given (``lagged``); a test that reads its own writes through an index carries
  ``@pytest.mark.dynaorm_index_lag(0, reason=...)``.
- An engine is required when ``CI=true`` or ``DYNAORM_REQUIRE_LOCAL=1``: there, a missing
  install or a server that does not start fails the run instead of skipping.
- Under pytest-xdist each worker uses its own tables (names suffixed ``-gw0``, ...).

The async variant: a test taking ``db`` that runs on DynamoDB Local also runs as
``local-async`` (``endpoint-async`` on the endpoint given; ``motoserver-async`` on a moto
server when moto is the only engine chosen, so a contributor without Java runs it too),
with ``db.session()`` an AsyncSession behind a blocking adapter, unless it carries
``@pytest.mark.sync_only`` (or its module sets ``pytestmark = pytest.mark.sync_only``).
The marker is the only thing consulted: no list of module or test names. A test is
sync-only when it needs the sync path itself: botocore event handlers
(``tests/support/faults.py``), thread barriers or fake sleeps of the sync driver, threads
sharing one client. Hooks (``tests/support/recording.py``) see both kinds of session.
Such a fixture cannot carry a marker (pytest refuses marks on fixtures), so every test
that takes one is marked where it is defined: read the test, see the marker.
``DYNAORM_ASYNC=0`` turns the variant off.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

from dynaorm import Table
from dynaorm.errors import RequestError, TableNotFoundError
from dynaorm.rules import call
from dynaorm.testing import TestBackend, fault_proxy, moto_backend, use_tables, worker_suffix
from dynaorm.testing.engines import check_test_engine
from pytest_dynaorm import LAG_OPTION, endpoint_of
from tests.support.ddb_local import DEFAULT_CACHE_DIR, QUICK_JVM, DynamoDBLocal, find_jar
from tests.support.dynoxide import Dynoxide, find_binary
from tests.support.engines import identify
from tests.support.examples import examples
from tests.support.models import app

# Generation speed is the machine's, not the code's: two xdist workers and the engines
# share two cores, so a strategy's first draws can take a second ("too_slow"), which
# says nothing about the property. Every other health check stays on. A property that
# declares no count draws the run's share of hypothesis's 100 (tests/support/examples.py).
settings.register_profile("dynaorm", suppress_health_check=[HealthCheck.too_slow],
                          max_examples=examples(100))
settings.load_profile("dynaorm")

BACKENDS = ("moto", "local", "dynoxide")
#: the engines a test runs on unless its ``engines`` marker names others: the embedded
#: default. A module whose behaviour depends on the engine (what the engine answers: its
#: conditions, errors, limits, pages, lag) marks the reference engine too, ``("moto",
#: "local")``, or all three; the whole suite runs on any engine through
#: ``--dynaorm-endpoint`` or ``DYNAORM_BACKENDS=local`` (engines chosen by name run every
#: test their marker allows)
DEFAULT_ENGINES = ("moto",)


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


def _async_variant(metafunc: pytest.Metafunc) -> bool:
    """Whether a test also runs with ``db.session()`` an AsyncSession (on DynamoDB Local,
    or on the ``--dynaorm-endpoint`` engine; ``DYNAORM_ASYNC=0`` turns it off)."""
    if os.environ.get("DYNAORM_ASYNC", "1") == "0" or "db" not in metafunc.fixturenames:
        return False
    return metafunc.definition.get_closest_marker("sync_only") is None


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "backend" in metafunc.fixturenames:
        names = backends(metafunc.config)
        marker = metafunc.definition.get_closest_marker("engines")
        # (behaviour that does not depend on the engine: CI's minutes; engines chosen by
        # name run every test the marker allows)
        only = marker.args if marker else (
            BACKENDS if os.environ.get("DYNAORM_BACKENDS") else DEFAULT_ENGINES)
        names = [n for n in names if n in only or n == "endpoint"]
        if _async_variant(metafunc):  # on DynamoDB Local, or on the endpoint given
            served = [f"{n}-async" for n in names if n in ("local", "endpoint")]
            if not served and backends(metafunc.config) == ["moto"]:  # moto alone chosen
                served = ["motoserver-async"]  # (a contributor without Java): a server
            names += served
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


@contextmanager
def lagged(config: pytest.Config, url: str) -> Iterator[str]:
    """``url``, behind a fault proxy when the run lags index reads."""
    if config.getoption(LAG_OPTION) is None:
        yield url
    else:
        with fault_proxy(url) as proxied:
            yield proxied


@pytest.fixture(scope="session")
def ddb_local(ddb_local_engine: str, request: pytest.FixtureRequest) -> Iterator[str]:
    """The endpoint of a DynamoDB Local server shared by the whole run (behind a fault
    proxy when the run lags index reads)."""
    with lagged(request.config, ddb_local_engine) as url:
        yield url


@pytest.fixture(scope="session")
def ddb_local_engine() -> Iterator[str]:
    """The DynamoDB Local server itself, never behind a proxy: for tests that count this
    process's own connections, descriptors or unclosed sockets."""
    if find_jar(DEFAULT_CACHE_DIR) is None:
        _unavailable("DynamoDB Local is not installed "
                     "(run scripts/install-ddb-local.sh or make test)")
    server = DynamoDBLocal(jvm_args=QUICK_JVM)
    try:
        server.start()
    except Exception as exc:
        _unavailable(f"DynamoDB Local did not start: {exc}")
    try:
        yield server.endpoint_url
    finally:
        server.stop()


@pytest.fixture(scope="session")
def dynoxide(request: pytest.FixtureRequest) -> Iterator[str]:
    """The endpoint of a dynoxide server shared by the whole run."""
    if find_binary() is None:
        _unavailable("dynoxide is not installed (run scripts/install-dynoxide.sh or make test)")
    server = Dynoxide()
    try:
        server.start()
    except Exception as exc:
        _unavailable(f"dynoxide did not start: {exc}")
    try:
        with lagged(request.config, server.endpoint_url) as url:
            yield url
    finally:
        server.stop()


@pytest.fixture
def backend(request: pytest.FixtureRequest) -> Iterator[str | None]:
    """``None`` for moto (active for the test), or the endpoint URL of the engine."""
    name = getattr(request, "param", "moto")
    if name == "moto":
        with moto_backend():
            yield None
    elif name in ("endpoint", "endpoint-async"):
        yield request.getfixturevalue("dynaorm_endpoint")
    elif name in ("local", "local-async"):
        yield request.getfixturevalue("ddb_local")
    elif name == "motoserver-async":
        yield request.getfixturevalue("dynaorm_moto_server")
    else:
        yield request.getfixturevalue("dynoxide")


def wire_of(request: pytest.FixtureRequest) -> str | None:
    """The wire the test's tables send over (``None``: the default, dynaorm's own).

    Without ``DYNAORM_WIRE``: dynaorm's own wire on DynamoDB Local, sync and async, and
    botocore's on dynoxide, so ``make test`` runs the integration suite over real HTTP
    through both wires. ``DYNAORM_WIRE=botocore`` (or ``dynaorm``) puts every engine on
    that wire (``make test-botocore-wire`` runs the suite on DynamoDB Local through
    botocore's). moto's in-process mock keeps the botocore client whatever this says;
    tests about one wire name it."""
    wire = os.environ.get("DYNAORM_WIRE")
    callspec = getattr(request.node, "callspec", None)
    if not wire and callspec is not None and callspec.params.get("backend") == "dynoxide":
        wire = "botocore"
    return wire or None


@pytest.fixture(autouse=True)
def _detached_hooks() -> Iterator[None]:
    """After each test, every hook and ``on_request`` listener it attached to a client is
    detached (clients are shared by the tables that connect alike, so one test's recorder
    must not see the next test's requests), and the suite's table is bound as it was
    before the test (a module-level fixture that set ``app.max_wait`` outside
    ``use_tables`` would leave it for every later module)."""
    bound = app.binding()
    yield
    app.restore(bound)
    from dynaorm.client.client import live_clients

    for client in live_clients():
        client._detach_all()
        client.driver.sleep = time.sleep


@pytest.fixture
def db(backend: str | None, request: pytest.FixtureRequest,
       _standing: dict[tuple[str, str | None, str | None], Any]) -> Iterator[TestBackend]:
    """The shared test table (tests/support/models.py), empty, on the current backend.

    On DynamoDB Local and dynoxide the worker's table stands from one test to the next
    (creating it there took most of a short test's time): each test finds it emptied
    (:func:`clear`), and one that changed the table itself (an index, a stream, TTL, the
    table deleted: what :func:`shape` reads differs from what it read when made) leaves it
    deleted, so the next test makes it anew. On moto in process it is made for the test
    and not deleted after: the mock goes with the test (and a mock left open around it is
    met by the next test's delete before its create). On the endpoint given (a user's
    engine) and under an index lag (whose proxy would show a deleted row's past to the
    next test's index reads) it is made and deleted per test, as ``use_tables`` does."""
    callspec = getattr(request.node, "callspec", None)
    name = str(callspec.params.get("backend", "")).removesuffix("-async") if callspec else ""
    lag = request.config.getoption(LAG_OPTION) is not None
    if not (name == "moto" or (name in ("local", "dynoxide") and not lag)):
        with use_tables(app, endpoint_url=backend, name_suffix=worker_suffix(),
                        wire=wire_of(request)) as tb:
            if session_kind(request) == "async":
                tb.session_kind = "async"
            yield tb
        return
    bound, table_name, wire = app.binding(), app.name, wire_of(request)
    key, checked = (table_name + worker_suffix(), backend, wire), False
    try:
        app.name = key[0]
        app.connect(backend)
        if wire is not None:
            app.wire = wire
        check_test_engine(app)
        checked = True
        if name == "moto":
            app.delete()
            app.create()
            yield TestBackend([app], backend, session_kind(request))
            return
        if key in _standing:
            try:
                clear(app)
            except TableNotFoundError:  # (another test's use_tables of it deleted it)
                del _standing[key]
        if key not in _standing:
            app.delete()
            app.create()
            _standing[key] = shape(app)
        yield TestBackend([app], backend, session_kind(request))
        if shape(app) != _standing[key]:  # (the test changed the table: made anew next)
            del _standing[key]
            app.delete()
    except BaseException:
        _standing.pop(key, None)
        if checked and name != "moto":
            app.delete()
        raise
    finally:
        app.name = table_name
        app.restore(bound)


@pytest.fixture(scope="session")
def _standing() -> dict[tuple[str, str | None, str | None], Any]:
    """The tables ``db`` leaves standing on an engine in this worker, by name, endpoint
    and wire, with their :func:`shape` when made. They go when the engine stops: DynamoDB
    Local and dynoxide run in memory, the run's own."""
    return {}


def shape(table: Table) -> Any:
    """What DescribeTable and DescribeTimeToLive say of ``table``, without what its items
    change (counts and sizes): ``None`` when it does not exist."""
    def run(op: str) -> Any:
        return table.db.driver.run(call(op, {"TableName": table.name}))

    try:
        found = run("DescribeTable")["Table"]
        ttl = run("DescribeTimeToLive").get("TimeToLiveDescription")
    except RequestError as exc:
        if exc.code == "ResourceNotFoundException":
            return None
        raise
    sized = ("ItemCount", "TableSizeBytes", "IndexSizeBytes")
    described = {k: v for k, v in found.items() if k not in sized}
    for kind in ("GlobalSecondaryIndexes", "LocalSecondaryIndexes"):
        if kind in described:
            described[kind] = [{k: v for k, v in index.items() if k not in sized}
                               for index in described[kind]]
    return described, ttl


def clear(table: Table) -> None:
    """Delete every item of ``table`` (a consistent scan of its keys, BatchWriteItem)."""
    keys = [a for a in (table.pk, table.sk) if a]
    scan: dict[str, Any] = {
        "TableName": table.name, "ConsistentRead": True,
        "ProjectionExpression": ", ".join(f"#k{i}" for i in range(len(keys))),
        "ExpressionAttributeNames": {f"#k{i}": a for i, a in enumerate(keys)}}
    found: list[dict[str, Any]] = []
    while True:
        out = table.db.driver.run(call("Scan", scan))
        found.extend(out.get("Items", []))
        if not out.get("LastEvaluatedKey"):
            break
        scan["ExclusiveStartKey"] = out["LastEvaluatedKey"]
    for start in range(0, len(found), 25):
        writes = {table.name: [{"DeleteRequest": {"Key": k}} for k in found[start:start + 25]]}
        while writes:
            writes = table.db.driver.run(call("BatchWriteItem", {"RequestItems": writes})).get(
                "UnprocessedItems") or {}


def engine_of(request: pytest.FixtureRequest) -> str:
    """The engine the current test runs on: "moto", "local", "dynoxide" or, under
    ``--dynaorm-endpoint``, the engine that endpoint turns out to be ("endpoint" when it
    is none of them: held to DynamoDB's exact behaviour)."""
    callspec = getattr(request.node, "callspec", None)
    name = str(callspec.params.get("backend", "")) if callspec else ""
    name = name.removesuffix("-async")
    if name == "motoserver":  # moto as a server: the same engine as in-process
        return "moto"
    if name == "endpoint":
        url = endpoint_of(request.config)
        return identify(url) if url else name
    return name


def session_kind(request: pytest.FixtureRequest) -> str:
    """``"async"`` when ``db.session()`` gives an AsyncSession (behind a blocking
    adapter) in the current test, else ``"sync"``."""
    callspec = getattr(request.node, "callspec", None)
    name = str(callspec.params.get("backend", "")) if callspec else ""
    return "async" if name.endswith("-async") else "sync"
