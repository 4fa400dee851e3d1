"""Another writer that is not dynaorm: raw ``UpdateItem`` / ``GetItem`` on a table's
client, for tests where a value or an attribute appears that the model did not load (a
newer model version, another tool)."""

from __future__ import annotations

import json
from typing import Any

from dynaorm._types import Item
from dynaorm.client.table import Table
from dynaorm.protocol.steps import call
from dynaorm.values.codec import encode_value

__all__ = ["raw_delete", "raw_get", "raw_items", "raw_set", "raw_set_member"]


def raw_set(table: Table, key: dict[str, str], **values: Any) -> None:
    """Set attributes of the item at ``key`` (string key values) as another writer."""
    names = {f"#a{i}": k for i, k in enumerate(values)}
    vals = {f":v{i}": encode_value(v) for i, v in enumerate(values.values())}
    table.db.driver.run(call("UpdateItem", {
        "TableName": table.name, "Key": {k: {"S": v} for k, v in key.items()},
        "UpdateExpression": "SET " + ", ".join(f"#a{i} = :v{i}" for i in range(len(values))),
        "ExpressionAttributeNames": names, "ExpressionAttributeValues": vals}))


def raw_get(table: Table, key: dict[str, str]) -> Item | None:
    """The item at ``key`` as stored (consistent read), or ``None``."""
    out = table.db.driver.run(call("GetItem", {
        "TableName": table.name, "Key": {k: {"S": v} for k, v in key.items()},
        "ConsistentRead": True}))
    item: Item | None = out.get("Item")
    return item


def raw_delete(table: Table, key: dict[str, str]) -> None:
    """Delete the item at ``key`` (string key values) as another writer."""
    table.db.driver.run(call("DeleteItem", {
        "TableName": table.name, "Key": {k: {"S": v} for k, v in key.items()}}))


def raw_set_member(table: Table, key: dict[str, str], attr: str, member: str,
                   av: dict[str, Any]) -> None:
    """Set member ``member`` of the map ``attr`` of the item at ``key`` by its path, as
    another writer (one that stamps no revision)."""
    table.db.driver.run(call("UpdateItem", {
        "TableName": table.name, "Key": {k: {"S": v} for k, v in key.items()},
        "UpdateExpression": "SET #a.#m = :v", "ExpressionAttributeNames": {
            "#a": attr, "#m": member}, "ExpressionAttributeValues": {":v": av}}))


def raw_items(table: Table) -> list[str]:
    """Every stored item of ``table`` as JSON text, sorted: order-independent (dynoxide
    orders attributes), read consistently, every page."""
    out: list[str] = []
    request: dict[str, Any] = {"TableName": table.name, "ConsistentRead": True}
    while True:
        page = table.db.send("Scan", request)
        out += [json.dumps(i, sort_keys=True, default=repr) for i in page["Items"]]
        if "LastEvaluatedKey" not in page:
            return sorted(out)
        request["ExclusiveStartKey"] = page["LastEvaluatedKey"]
