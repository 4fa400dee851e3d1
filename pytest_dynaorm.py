"""dynaorm's pytest plugin, registered through the ``pytest11`` entry point.

It is deliberately tiny and lives outside the ``dynaorm`` package: loading it imports
neither dynaorm (pydantic, PynamoDB, botocore) nor moto, so a pytest run that uses none of
its fixtures pays nothing for it. Each fixture imports what it needs when a test asks for
it.

Fixtures:

- ``dynaorm_endpoint``: the endpoint given by ``--dynaorm-endpoint`` or
  ``DYNAORM_TEST_ENDPOINT`` (``None``: the in-process moto backend), behind a fault proxy
  (:func:`dynaorm.testing.fault_proxy`) when ``--dynaorm-index-lag`` is given;
- ``dynaorm_moto``: an in-process moto DynamoDB for one test;
- ``dynaorm_moto_server``: a moto server on a free loopback port for the whole run (its
  URL), for code that moto's in-process mock cannot serve, such as aiobotocore;
- ``dynaorm_worker_suffix``: ``"-gw0"``, ``"-gw1"``... under pytest-xdist, else ``""``.

``dynaorm.testing.tables_fixture(*tables)`` builds a fixture on top of them.

``--dynaorm-index-lag=SECONDS`` makes every test's reads of global secondary and vector
indexes see the table as it was SECONDS ago (:func:`dynaorm.testing.index_lag`, through
an autouse fixture; ``--dynaorm-index-lag-seed=N``: only the changes N picks lag, the
others are visible at once). A test that must read its own writes through an index says
so, with why: ``@pytest.mark.dynaorm_index_lag(0, reason="...")`` (any number of
seconds: its own lag, whatever the option says). A local ``--dynaorm-endpoint`` (plain
http or a loopback host) is always behind a fault proxy, so the marker and
``index_lag()`` hold there; on another (DynamoDB's own, over https), whose signatures a
proxy cannot keep, ``index_lag()`` raises ``DynaormError`` saying so instead of lagging
nothing (0.6 lagged nothing, silently).

A chosen endpoint is checked once, when pytest starts (:func:`pytest_configure`): a
malformed URL, or one that accepts no TCP connection within :data:`CONNECT_TIMEOUT` seconds,
stops the run with one usage error instead of a traceback in every test. The check uses
only the standard library. Nothing here sets an environment variable.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator
from urllib.parse import urlsplit

import pytest

ENDPOINT_OPTION = "--dynaorm-endpoint"
ENDPOINT_ENV = "DYNAORM_TEST_ENDPOINT"
LAG_OPTION = "--dynaorm-index-lag"
SEED_OPTION = "--dynaorm-index-lag-seed"
#: the marker that gives one test its own index lag (``0``: its index reads are exact)
LAG_MARKER = "dynaorm_index_lag"
#: seconds the start-up check waits for the endpoint to accept a TCP connection
CONNECT_TIMEOUT = 2.0


def pytest_addoption(parser: pytest.Parser) -> None:
    """Add ``--dynaorm-endpoint``, ``--dynaorm-index-lag`` and
    ``--dynaorm-index-lag-seed`` to pytest's options."""
    group = parser.getgroup("dynaorm")
    group.addoption(ENDPOINT_OPTION, default=None,
                    help="run dynaorm fixtures against this DynamoDB endpoint instead of an "
                         f"in-process moto (default: ${ENDPOINT_ENV})")
    group.addoption(LAG_OPTION, default=None, type=float, metavar="SECONDS",
                    help="reads of global secondary and vector indexes see the table as "
                         "it was SECONDS ago, as on DynamoDB (in-process, and on the "
                         "endpoint through a fault proxy)")
    group.addoption(SEED_OPTION, default=None, type=int, metavar="SEED",
                    help="only the changes SEED picks lag; the others show at once")


def endpoint_of(config: pytest.Config) -> str | None:
    """The endpoint chosen by option or environment, or ``None`` for in-process moto."""
    value: str | None = config.getoption(ENDPOINT_OPTION, default=None) or os.environ.get(
        ENDPOINT_ENV) or None
    return value


def check_endpoint(url: str, timeout: float = CONNECT_TIMEOUT) -> str | None:
    """Why ``url`` cannot serve the tests (one line), or ``None``: it is an http(s) URL
    with a host, and a TCP connection to it opens within ``timeout`` seconds."""
    try:
        parts = urlsplit(url)
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError as exc:
        return f"{url!r} is not a valid URL ({exc})"
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return f"{url!r} is not an http(s) URL such as http://localhost:8000"
    try:
        socket.create_connection((parts.hostname, port), timeout=timeout).close()
    except OSError as exc:
        reason = "timed out" if isinstance(exc, TimeoutError) else (exc.strerror or str(exc))
        return f"{url!r} does not answer ({reason}): is DynamoDB Local (or the engine) running?"
    return None


def pytest_configure(config: pytest.Config) -> None:
    """Register the marker; check the index lag and the chosen endpoint once, up front: a
    malformed URL or an endpoint that does not answer is one usage error, not a traceback
    in every test."""
    config.addinivalue_line("markers", f"{LAG_MARKER}(seconds, reason=...): this test's "
                            "index reads lag by seconds (0: exact), whatever "
                            f"{LAG_OPTION} says")
    lag = config.getoption(LAG_OPTION, default=None)
    if lag is not None and not lag >= 0:
        raise pytest.UsageError(f"{LAG_OPTION}: a number of seconds >= 0, got {lag}")
    url = endpoint_of(config)
    if url is None:
        return
    problem = check_endpoint(url)
    if problem is not None:
        source = ENDPOINT_OPTION if config.getoption(ENDPOINT_OPTION, default=None) else (
            f"${ENDPOINT_ENV}")
        raise pytest.UsageError(f"{source}: {problem}")


def pytest_report_header(config: pytest.Config) -> str | None:
    """The index lag of the run, when there is one (what reproduces it)."""
    lag = config.getoption(LAG_OPTION, default=None)
    if lag is None:
        return None
    seed = config.getoption(SEED_OPTION, default=None)
    return f"dynaorm: index reads lag {lag:g}s" + (f" (seed {seed})" if seed is not None
                                                   else "")


def index_lag_of(node: pytest.Item, config: pytest.Config) -> float | None:
    """The index lag of a test: its marker's seconds, else the option's (``None``:
    none)."""
    marker = node.get_closest_marker(LAG_MARKER)
    if marker is not None:
        return float(marker.args[0] if marker.args else marker.kwargs["seconds"])
    lag: float | None = config.getoption(LAG_OPTION, default=None)
    return lag


@pytest.fixture(autouse=True)
def _dynaorm_index_lag(request: pytest.FixtureRequest) -> Iterator[None]:
    """The test's index lag (:func:`index_lag_of`), on for the whole test (before any
    fixture of its own makes a table); nothing at all without one."""
    url = endpoint_of(request.config)
    if url is not None and not fronted(url) and "dynaorm_endpoint" in request.fixturenames \
            and request.config.getoption(LAG_OPTION, default=None) is None:
        from dynaorm.testing.emulation.emulator import unfronted

        with unfronted(url):  # (index_lag refuses, saying why, rather than lag nothing)
            yield
        return
    seconds = index_lag_of(request.node, request.config)
    if not seconds:
        yield
        return
    from dynaorm.testing import index_lag

    with index_lag(seconds, seed=request.config.getoption(SEED_OPTION, default=None)):
        yield


def fronted(url: str) -> bool:
    """Whether the endpoint ``url`` goes behind a fault proxy (so :func:`~dynaorm.testing.
    index_lag` holds on it): a local engine's (plain http, or a loopback host). The proxy
    does not sign requests anew, so an endpoint that checks signatures (DynamoDB's own, on
    https) cannot be behind one."""
    parts = urlsplit(url)
    return parts.scheme == "http" or parts.hostname in ("localhost", "127.0.0.1", "::1")


@pytest.fixture(scope="session")
def dynaorm_endpoint(request: pytest.FixtureRequest) -> Iterator[str | None]:
    """The endpoint dynaorm fixtures use; ``None`` means the in-process moto backend. A
    local engine (:func:`fronted`) is behind a fault proxy (its URL), so
    :func:`~dynaorm.testing.index_lag` and the marker hold on it; requests pass as they
    are while no lag is on."""
    url = endpoint_of(request.config)
    if url is None or not (fronted(url) or request.config.getoption(LAG_OPTION) is not None):
        yield url
        return
    from dynaorm.testing import fault_proxy

    with fault_proxy(url) as proxied:
        yield proxied


@pytest.fixture(scope="session")
def dynaorm_worker_suffix() -> str:
    """The suffix that gives each pytest-xdist worker its own tables (``""`` without xdist)."""
    from dynaorm.testing import worker_suffix

    return worker_suffix()


@pytest.fixture
def dynaorm_moto() -> Iterator[None]:
    """An in-process moto DynamoDB for one test (create your own tables in it)."""
    from dynaorm.testing import moto_backend

    with moto_backend():
        yield


@pytest.fixture(scope="session")
def dynaorm_moto_server() -> Iterator[str]:
    """A moto server on a free loopback port for the whole run; yields its endpoint URL.

    Every client can reach it (aiobotocore included); dynaorm's clients get dummy
    credentials where none are configured (no environment variable is set). Tables created
    there persist until the run ends.
    """
    from dynaorm.testing import moto_server

    with moto_server() as url:
        yield url
