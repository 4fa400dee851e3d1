"""Red team (issue 59, point 4): moto's own item size check is off for the requests the
embedded default sends; a PartiQL write (``ExecuteStatement``, ``BatchExecuteStatement``,
``ExecuteTransaction``) the emulator does not size must still be refused above 409,600
bytes, as DynamoDB Local refuses it."""

from __future__ import annotations

from typing import Any

import pytest

from dynaorm import RequestError
from dynaorm.testing import TestBackend
from tests.conftest import engine_of
from tests.support.recording import send

#: (what it asserts depends on the engine: it runs on each)
pytestmark = pytest.mark.engines("moto", "local", "dynoxide")


def _stored(db: TestBackend, key: str) -> int:
    found = send(db.table, "GetItem", {"TableName": db.table.name, "ConsistentRead": True,
                                       "Key": {"pk": {"S": key}, "sk": {"S": "S"}}})
    return len(found["Item"]["blob"]["S"])


def _update(name: str, key: str, size: int) -> dict[str, Any]:
    return {"Statement": f"UPDATE \"{name}\" SET blob = ? WHERE pk = ? AND sk = ?",
            "Parameters": [{"S": "x" * size}, {"S": key}, {"S": "S"}]}


@pytest.mark.parametrize("how", ["ExecuteStatement", "BatchExecuteStatement",
                                 "ExecuteTransaction"])
def test_a_partiql_update_past_400kb_is_refused(db: TestBackend, how: str,
                                                request: pytest.FixtureRequest) -> None:
    if engine_of(request) == "dynoxide":
        pytest.skip("dynoxide's boundary is its own")
    name = db.table.name
    key = f"PARTIQL-{how}"
    send(db.table, "PutItem", {"TableName": name, "Item": {"pk": {"S": key}, "sk": {"S": "S"},
                                                           "blob": {"S": "small"}}})
    statement = _update(name, key, 500_000)
    body = {"ExecuteStatement": statement,
            "BatchExecuteStatement": {"Statements": [statement]},
            "ExecuteTransaction": {"TransactStatements": [statement]}}[how]
    try:
        answer = send(db.table, how, body)
    except RequestError:
        answer = {}
    errors = [r.get("Error") for r in answer.get("Responses", []) if r.get("Error")]
    assert _stored(db, key) == 5, (answer, errors)


def test_the_moto_server_keeps_moto_s_check_for_partiql() -> None:
    """``moto_server()`` (behind the rules' proxy): a 409,600-byte put is stored, a PartiQL
    update growing an item to 500,000 bytes is refused (the proxy does not size it)."""
    import boto3

    from dynaorm.testing import moto_server
    from dynaorm.values.limits import item_size

    with moto_server() as url:
        client = boto3.client("dynamodb", endpoint_url=url, region_name="us-east-1",
                              aws_access_key_id="x", aws_secret_access_key="x")
        client.create_table(TableName="sizes", BillingMode="PAY_PER_REQUEST",
                            KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
                            AttributeDefinitions=[{"AttributeName": "pk",
                                                   "AttributeType": "S"}])
        item: dict[str, Any] = {"pk": {"S": "a"}, "blob": {"S": ""}}
        item["blob"]["S"] = "x" * (409_600 - item_size(item))
        client.put_item(TableName="sizes", Item=item)
        assert item_size(client.get_item(TableName="sizes", Key={"pk": {"S": "a"}},
                                         ConsistentRead=True)["Item"]) == 409_600
        client.put_item(TableName="sizes", Item={"pk": {"S": "b"}, "blob": {"S": "small"}})
        with pytest.raises(client.exceptions.ClientError):
            client.execute_statement(Statement='UPDATE "sizes" SET blob = ? WHERE pk = ?',
                                     Parameters=[{"S": "x" * 500_000}, {"S": "b"}])
        assert client.get_item(TableName="sizes", Key={"pk": {"S": "b"}},
                               ConsistentRead=True)["Item"]["blob"] == {"S": "small"}
