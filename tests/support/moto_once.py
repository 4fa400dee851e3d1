"""moto's ``TransactWriteItems`` backing up each table once, not once an item.

moto 5 deep-copies a table for every item of a transaction (to restore it if the
transaction fails), all before it writes any: a transaction of 100 writes to one table
copied that table 100 times, identical copies of which it keeps the last. The
LangGraph tests' cost was mostly these copies (a chunked ``put_writes`` is transactions
of 100 items). The ``moto_copies_once`` fixture makes the copies of one transaction one
a table: the same backup, so the same answers and the same rollback.
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from moto.dynamodb import models
from moto.dynamodb.models.table import Table as MotoTable

_local = threading.local()  # (a transaction's copies, by table: one thread's own)


class _CopyOnce:
    """moto's module ``copy``: inside a transaction, a table's deep copy made once."""

    def __getattr__(self, name: str) -> Any:
        return getattr(copy, name)

    def deepcopy(self, value: Any, memo: Any = None) -> Any:
        copies = getattr(_local, "copies", None)
        if copies is None or not isinstance(value, MotoTable):
            return copy.deepcopy(value, memo)
        if id(value) not in copies:
            copies[id(value)] = copy.deepcopy(value)
        return copies[id(value)]


@pytest.fixture
def moto_copies_once(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    transact = models.DynamoDBBackend.transact_write_items

    def once(self: Any, items: list[dict[str, Any]]) -> None:
        _local.copies = {}
        try:
            transact(self, items)
        finally:
            _local.copies = None

    monkeypatch.setattr(models, "copy", _CopyOnce())
    monkeypatch.setattr(models.DynamoDBBackend, "transact_write_items", once)
    yield
