"""DynamoDB's 400 KB item limit (409,600 bytes, attribute names included) held alike on the
embedded default and on DynamoDB Local (issue 59, point 4): moto refuses items from
405,000 bytes as it counts them (a binary value as its base64 text); the embedded default
stores what DynamoDB stores, up to 409,600 bytes, and refuses the byte after, on a put,
a batch, a transaction and an update that grows an item. dynoxide is held to the same on
puts; its update boundary is its own (``engine_of``)."""

from __future__ import annotations

from typing import Any

import pytest

from dynaorm import RequestError
from dynaorm.testing import TestBackend
from dynaorm.values.limits import MAX_ITEM_BYTES, item_size
from tests.conftest import engine_of
from tests.support.recording import send

#: (what it asserts depends on the engine: it runs on each)
pytestmark = pytest.mark.engines("moto", "local", "dynoxide")

SIZES = [405_000, 405_001, 407_000, 409_599, 409_600, 409_601]


def _item(n: int, size: int, kind: str) -> dict[str, Any]:
    """An item of exactly ``size`` bytes as DynamoDB counts them, its bulk one ``kind``
    value (``S`` or ``B``)."""
    item: dict[str, Any] = {"pk": {"S": f"SIZE#{n}"}, "sk": {"S": "S"}, "blob": {kind: ""}}
    fill = size - item_size(item)
    item["blob"] = {kind: "x" * fill if kind == "S" else b"\x00" * fill}
    assert item_size(item) == size
    return item


def _stored(db: TestBackend, n: int) -> int | None:
    found = send(db.table, "GetItem", {"TableName": db.table.name, "ConsistentRead": True,
                                       "Key": {"pk": {"S": f"SIZE#{n}"}, "sk": {"S": "S"}}})
    return item_size(found["Item"]) if "Item" in found else None


@pytest.mark.parametrize("kind", ["S", "B"])
@pytest.mark.parametrize("how", ["PutItem", "BatchWriteItem", "TransactWriteItems"])
def test_items_up_to_409600_bytes_are_stored_and_no_more(db: TestBackend, how: str,
                                                         kind: str) -> None:
    """0.6's embedded default refused items of 405,001-409,600 bytes (moto's limit)."""
    name = db.table.name
    for n, size in enumerate(SIZES):
        item = _item(n, size, kind)
        request = {"PutItem": {"TableName": name, "Item": item},
                   "BatchWriteItem": {"RequestItems": {name: [{"PutRequest": {"Item": item}}]}},
                   "TransactWriteItems": {"TransactItems": [{"Put": {"TableName": name,
                                                                     "Item": item}}]}}[how]
        if size <= MAX_ITEM_BYTES:
            send(db.table, how, request)
            assert _stored(db, n) == size
        else:
            with pytest.raises(RequestError) as refused:
                send(db.table, how, request)
            assert refused.value.code in ("ValidationException",
                                          "TransactionCanceledException")
            assert _stored(db, n) is None


def test_an_update_may_grow_an_item_to_409600_bytes_and_no_more(
        db: TestBackend, request: pytest.FixtureRequest) -> None:
    if engine_of(request) == "dynoxide":
        pytest.skip("dynoxide's update boundary is its own (tests/conftest.py)")
    name = db.table.name
    for n, size in enumerate(SIZES):
        small = _item(n, 1000, "S")
        send(db.table, "PutItem", {"TableName": name, "Item": small})
        grown = _item(n, size, "S")["blob"]
        update = {"TableName": name, "Key": {"pk": small["pk"], "sk": small["sk"]},
                  "UpdateExpression": "SET #b = :b", "ExpressionAttributeNames": {"#b": "blob"},
                  "ExpressionAttributeValues": {
                      ":b": grown}}
        if size <= MAX_ITEM_BYTES:
            send(db.table, "UpdateItem", update)
            assert _stored(db, n) == size
        else:
            with pytest.raises(RequestError, match="exceeded the maximum allowed size"):
                send(db.table, "UpdateItem", update)
            assert _stored(db, n) == 1000
