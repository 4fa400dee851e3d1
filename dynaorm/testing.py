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
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import pytest

from ._types import Item
from .codec import decode_item
from .config import LOOPBACK_ACCESS_KEY, LOOPBACK_REGION, LOOPBACK_SECRET_KEY
from .session import Session
from .table import Table

__all__ = ["TestBackend", "moto_backend", "tables_fixture", "use_tables"]

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
    from moto import mock_aws

    with _env(_DUMMY_ENV), mock_aws():
        yield


class TestBackend:
    """What :func:`tables_fixture` yields: the tables, sessions on them, raw scans."""

    __test__ = False  # not a test class, despite the name

    def __init__(self, tables: Sequence[Table], endpoint_url: str | None) -> None:
        self.tables = list(tables)
        self.endpoint_url = endpoint_url

    @property
    def table(self) -> Table:
        return self.tables[0]

    def session(self, table: Table | None = None) -> Session:
        """A new :class:`Session` on ``table`` (default: the first table)."""
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
        return sorted(items, key=lambda i: tuple(i[a]["S"] for a in (t.pk, t.sk) if a))

    def scan(self, table: Table | None = None) -> list[dict[str, Any]]:
        """Every stored item as plain Python values, sorted by key."""
        return [decode_item(i) for i in self.scan_raw(table)]


@contextmanager
def use_tables(*tables: Table, endpoint_url: str | None = None) -> Iterator[TestBackend]:
    """Point ``tables`` at ``endpoint_url`` (None: botocore's default, e.g. moto), create
    them fresh, and delete them afterwards."""
    saved = [(t.endpoint_url, t._transport) for t in tables]
    with _env(_DUMMY_ENV):
        for t in tables:
            t.connect(endpoint_url)
            t.delete()
            t.create()
        try:
            yield TestBackend(tables, endpoint_url)
        finally:
            for t, (url, transport) in zip(tables, saved, strict=True):
                try:
                    t.delete()
                finally:
                    t.endpoint_url = url
                    t._transport = transport


def tables_fixture(*tables: Table, scope: str = "function") -> Callable[..., Any]:
    """A pytest fixture giving each test fresh ``tables`` on the test backend."""

    @pytest.fixture(scope=scope)  # type: ignore[call-overload, untyped-decorator]
    def _fixture(dynaorm_endpoint: str | None) -> Iterator[TestBackend]:
        if dynaorm_endpoint:
            with use_tables(*tables, endpoint_url=dynaorm_endpoint) as backend:
                yield backend
        else:
            with moto_backend(), use_tables(*tables) as backend:
                yield backend

    return _fixture  # type: ignore[no-any-return]


# -- the plugin ----------------------------------------------------------------------------
def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("dynaorm")
    group.addoption("--dynaorm-endpoint", default=None,
                    help="run dynaorm fixtures against this DynamoDB endpoint instead of an "
                         "in-process moto (default: $DYNAORM_TEST_ENDPOINT)")


@pytest.fixture(scope="session")
def dynaorm_endpoint(request: pytest.FixtureRequest) -> str | None:
    """The endpoint dynaorm fixtures use; ``None`` means the in-process moto backend."""
    value: str | None = request.config.getoption("--dynaorm-endpoint") or os.environ.get(
        "DYNAORM_TEST_ENDPOINT") or None
    return value


@pytest.fixture
def dynaorm_moto() -> Iterator[None]:
    """An in-process moto DynamoDB for one test (create your own tables in it)."""
    with moto_backend():
        yield
