"""Testing support and the pytest plugin (registered as ``pytest11``: installing is enough).

In a ``conftest.py``, one line gives every test an in-process DynamoDB (moto) with fresh
tables for your :class:`~dynaorm.Table` objects::

    from dynaorm.testing import tables_fixture
    from myapp.models import app

    db = tables_fixture(app)

    def test_signup(db):
        with db.session() as s:
            s.save(User(username="ada", email="ada@example.com"))
        assert len(db.scan()) == 3   # the user and its two guard items

Run the same tests against DynamoDB Local or a real endpoint with
``pytest --dynaorm-endpoint http://localhost:8000`` (or ``DYNAORM_TEST_ENDPOINT``).
Under pytest-xdist every worker gets its own tables (their names end in ``-gw0``,
``-gw1``, ...), so workers never share or race on a table.

This module needs moto (``pip install "dynaorm[testing]"``) only for the in-process
backend, and pytest only for :func:`tables_fixture`; both are imported when used. The
plugin registered with pytest is the tiny :mod:`pytest_dynaorm`, which imports dynaorm
only when a test asks for one of its fixtures.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, cast

from dynaorm._types import Item
from dynaorm.model.codec import decode_item
from dynaorm.model.keys import key_order, key_value
from dynaorm.model.table import Table
from dynaorm.sync.session import Session
from dynaorm.transport.config import LOOPBACK_ACCESS_KEY, LOOPBACK_REGION, LOOPBACK_SECRET_KEY
from dynaorm.transport.faults import FaultInjector, inject_faults

__all__ = ["TestBackend", "moto_backend", "moto_server", "tables_fixture", "use_tables",
           "worker_suffix"]
__all__ += ["FaultInjector", "inject_faults"]  # (0.3) dynaorm.transport.faults

#: What to install for the in-process backend and the pytest fixtures.
INSTALL_HINT = 'pip install "dynaorm[testing]"'

_DUMMY_ENV = {"AWS_ACCESS_KEY_ID": LOOPBACK_ACCESS_KEY,
              "AWS_SECRET_ACCESS_KEY": LOOPBACK_SECRET_KEY,
              "AWS_DEFAULT_REGION": LOOPBACK_REGION}


@contextmanager
def _env(values: dict[str, str]) -> Iterator[None]:
    saved = {k: os.environ.get(k) for k in values}
    os.environ.update({k: v for k, v in values.items() if not os.environ.get(k)})
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


@contextmanager
def moto_backend() -> Iterator[None]:
    """An in-process moto DynamoDB, with dummy credentials, for the block's duration."""
    try:
        from moto import mock_aws
    except ModuleNotFoundError as exc:  # the plain install: say what to install
        raise ModuleNotFoundError(f"the in-process DynamoDB needs moto: {INSTALL_HINT}",
                                  name=exc.name) from exc

    with _env(_DUMMY_ENV), mock_aws():
        yield


class TestBackend:
    """What :func:`tables_fixture` yields: the tables, sessions on them, raw scans.

    ``endpoint_url`` is the endpoint the tables point at (``None``: in-process moto).
    """

    __test__ = False  # not a test class, despite the name

    def __init__(self, tables: Sequence[Table], endpoint_url: str | None,
                 session_kind: str = "sync") -> None:
        self.tables = list(tables)
        self.endpoint_url = endpoint_url
        #: ``"sync"``: :meth:`session` gives a :class:`Session`; ``"async"``: a blocking
        #: adapter over a real ``AsyncSession`` (each call runs the coroutine on this
        #: thread's private event loop), so sync-style tests exercise the async code path
        self.session_kind = session_kind

    @property
    def table(self) -> Table:
        """The first table."""
        return self.tables[0]

    def session(self, table: Table | None = None) -> Session:
        """A new :class:`Session` on ``table`` (default: the first table); with
        ``session_kind="async"``, an ``AsyncSession`` behind a blocking adapter."""
        if self.session_kind == "async":
            from dynaorm.aio.blocking import BlockingAsyncSession
            from dynaorm.aio.session import AsyncSession

            return cast(Session, BlockingAsyncSession(AsyncSession(table or self.table)))
        return Session(table or self.table)

    def scan_raw(self, table: Table | None = None) -> list[Item]:
        """Every stored item in wire form (consistent scan, sorted by key)."""
        t = table or self.table
        items: list[Item] = []
        request: dict[str, Any] = {"TableName": t.name, "ConsistentRead": True}
        while True:
            out = t.transport.call("Scan", request)
            items.extend(out.get("Items", []))
            if not out.get("LastEvaluatedKey"):
                break
            request["ExclusiveStartKey"] = out["LastEvaluatedKey"]
        return sorted(items, key=lambda i: tuple(key_order(key_value(i[a]))
                                                 for a in (t.pk, t.sk) if a))

    def scan(self, table: Table | None = None) -> list[dict[str, Any]]:
        """Every stored item as plain Python values, sorted by key."""
        return [decode_item(i) for i in self.scan_raw(table)]


def worker_suffix() -> str:
    """``"-gw0"``, ``"-gw1"``, ... under pytest-xdist (``PYTEST_XDIST_WORKER``), else ``""``."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    return f"-{worker}" if worker else ""


@contextmanager
def use_tables(*tables: Table, endpoint_url: str | None = None,
               name_suffix: str = "") -> Iterator[TestBackend]:
    """Point ``tables`` at ``endpoint_url`` (None: botocore's default, e.g. moto), create
    them fresh, and delete them afterwards.

    ``name_suffix`` is appended to every table's name for the block (the tables are module
    globals in user code: they are repointed in place and restored afterwards).
    """
    saved = [(t.name, t.endpoint_url, t._transport) for t in tables]
    with _env(_DUMMY_ENV):
        try:
            for t in tables:
                t.name = t.name + name_suffix
                t.connect(endpoint_url)
                t.delete()
                t.create()
            yield TestBackend(tables, endpoint_url)
        finally:
            try:
                for t in tables:
                    t.delete()
            finally:
                for t, (name, url, transport) in zip(tables, saved, strict=True):
                    t.name = name
                    t.endpoint_url = url
                    t._transport = transport


@contextmanager
def moto_server() -> Iterator[str]:
    """moto in server mode on a free loopback port, for the block's duration: yields its
    endpoint URL. Unlike :func:`moto_backend` it serves any client (aiobotocore included)."""
    import socket

    try:
        from moto.server import ThreadedMotoServer
    except ModuleNotFoundError as exc:
        raise ModuleNotFoundError(f"the moto server needs moto[server]: {INSTALL_HINT}",
                                  name=exc.name) from exc
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    try:
        with _env(_DUMMY_ENV):
            yield f"http://127.0.0.1:{port}"
    finally:
        server.stop()


def tables_fixture(*tables: Table, scope: str = "function") -> Callable[..., Any]:
    """A pytest fixture giving each test fresh ``tables`` on the test backend.

    The backend is an in-process moto, or the endpoint given by ``--dynaorm-endpoint`` /
    ``DYNAORM_TEST_ENDPOINT``. Under pytest-xdist each worker uses its own tables.
    """
    import pytest

    @pytest.fixture(scope=scope)  # type: ignore[call-overload, untyped-decorator]
    def _fixture(dynaorm_endpoint: str | None) -> Iterator[TestBackend]:
        if dynaorm_endpoint:
            with use_tables(*tables, endpoint_url=dynaorm_endpoint,
                            name_suffix=worker_suffix()) as backend:
                yield backend
        else:
            with moto_backend(), use_tables(*tables, name_suffix=worker_suffix()) as backend:
                yield backend

    return _fixture  # type: ignore[no-any-return]
