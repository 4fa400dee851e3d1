"""What dynaorm changes in the embedded moto (:mod:`dynaorm.testing.private_apis`) keeps
moto's answers: its own item size check is off only on the thread inside
``moto_sizes_unchecked()`` (red team of issue 59, point 4: a client on another thread,
sending to moto directly, not through the emulator, which sizes items, is still refused
past moto's limit); a ``TransactWriteItems`` that fails leaves its tables, streams
included, exactly as they were, though each table is backed up once, not once an item
(``moto_transactions_copy_once``); an answer's attribute values are written as moto
writes them (``moto_attribute_values_direct``)."""

from __future__ import annotations

import threading
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from hypothesis import given, settings
from hypothesis import strategies as st

from dynaorm.testing.private_apis import moto_sizes_unchecked, moto_transactions_copy_once
from tests.support.examples import examples

moto = pytest.importorskip("moto")


def test_the_switch_does_not_leak_to_another_thread() -> None:
    with moto.mock_aws():
        client = boto3.client("dynamodb", region_name="us-east-1")
        client.create_table(TableName="t", BillingMode="PAY_PER_REQUEST",
                            KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
                            AttributeDefinitions=[{"AttributeName": "pk",
                                                   "AttributeType": "S"}])
        big = {"pk": {"S": "other"}, "blob": {"S": "x" * 500_000}}
        outcome: list[Any] = []
        inside, done = threading.Event(), threading.Event()

        def other() -> None:
            inside.wait(10)
            try:
                client.put_item(TableName="t", Item=big)
                outcome.append("stored")
            except ClientError as exc:
                outcome.append(exc.response["Error"]["Message"])
            done.set()

        thread = threading.Thread(target=other)
        thread.start()
        with moto_sizes_unchecked():
            inside.set()
            done.wait(30)
            client.put_item(TableName="t", Item={"pk": {"S": "mine"},
                                                 "blob": {"S": "x" * 406_000}})
        thread.join()
        assert outcome == ["Item size has exceeded the maximum allowed size"]
        assert "Item" in client.get_item(TableName="t", Key={"pk": {"S": "mine"}})
        with pytest.raises(ClientError, match="maximum allowed size"):  # (off only inside)
            client.put_item(TableName="t", Item={"pk": {"S": "after"},
                                                 "blob": {"S": "x" * 406_000}})


#: a transaction's actions over a small key space (so that they meet), each on the table
#: with a sort key (``ranged``) or the one without; a condition that may fail, and now and
#: then a key twice (moto refuses the whole transaction) or a malformed item
_KEYS = st.tuples(st.sampled_from(["a", "b", "c"]), st.sampled_from(["1", "2"]))
_CONDITIONS = st.sampled_from([None, "attribute_exists(pk)", "attribute_not_exists(pk)",
                               "n < :two"])
_ACTIONS = st.lists(st.tuples(st.sampled_from(["Put", "Update", "Delete", "ConditionCheck",
                                               "Malformed"]),
                              st.booleans(), _KEYS, _CONDITIONS,
                              st.integers(0, 3)), min_size=1, max_size=5)


def _action(kind: str, ranged: bool, key: tuple[str, str], condition: str | None,
            n: int) -> dict[str, Any]:
    table = "ranged" if ranged else "flat"
    attrs: dict[str, Any] = {"pk": {"S": key[0]}, **({"sk": {"S": key[1]}} if ranged else {})}
    body: dict[str, Any] = {"TableName": table}
    if kind in ("Put", "Malformed"):
        item = {**attrs, "n": {"N": str(n)}}
        body["Item"] = {"n": {"N": "1"}} if kind == "Malformed" else item
        kind = "Put"
    else:
        body["Key"] = attrs
    if kind == "Update":
        body["UpdateExpression"] = "ADD n :one"
    if kind == "ConditionCheck" and condition is None:
        condition = "attribute_exists(pk)"
    if condition is not None:
        body["ConditionExpression"] = condition
    values = {":one": {"N": "1"}} if kind == "Update" else {}
    if condition is not None and ":two" in condition:
        values[":two"] = {"N": "2"}
    if values:
        body["ExpressionAttributeValues"] = values
    return {kind: body}


def _state(backend: Any) -> dict[str, Any]:
    """Each table's items as moto holds them (partitions, empty ones included) and its
    stream records."""
    state: dict[str, Any] = {}
    for name, table in backend.tables.items():
        items = {str(h): ({str(r): i.to_json() for r, i in part.items()}
                          if isinstance(part, dict) else part.to_json())
                 for h, part in table.items.items()}
        records = [r.to_json() for r in table.stream_shard.items]
        state[name] = (items, records)
    return state


@pytest.fixture(scope="module")
def two_tables() -> Any:
    """moto with a table with a sort key and one without, both with a stream; moto's
    DynamoDB backend."""
    moto_transactions_copy_once()
    from moto.dynamodb.models import dynamodb_backends

    stream: Any = {"StreamEnabled": True, "StreamViewType": "NEW_AND_OLD_IMAGES"}
    with moto.mock_aws():
        client: Any = boto3.client("dynamodb", region_name="us-east-1")
        for name, keys in (("ranged", ("pk", "sk")), ("flat", ("pk",))):
            client.create_table(
                TableName=name, BillingMode="PAY_PER_REQUEST", StreamSpecification=stream,
                KeySchema=[{"AttributeName": k, "KeyType": t}
                           for k, t in zip(keys, ("HASH", "RANGE"), strict=False)],
                AttributeDefinitions=[{"AttributeName": k, "AttributeType": "S"}
                                      for k in keys])
        yield client, dynamodb_backends["123456789012"]["us-east-1"]


@settings(max_examples=examples(100), deadline=None)
@given(transactions=st.lists(_ACTIONS, min_size=1, max_size=8))
def test_a_failed_transaction_leaves_its_tables_as_they_were(
        two_tables: tuple[Any, Any],
        transactions: list[list[tuple[str, bool, tuple[str, str], str | None, int]]]) -> None:
    """Property: with each table backed up once, a transaction moto refuses (a false
    condition, a key twice, a malformed item) leaves every table it names, stream records
    and emptied partitions included, as they were."""
    client, backend = two_tables
    for table in backend.tables.values():  # (each example from empty tables)
        table.items.clear()
        table.stream_shard.items = []
    for actions in transactions:
        before = _state(backend)
        try:
            client.transact_write_items(TransactItems=[_action(*a) for a in actions])
        except ClientError as exc:
            assert exc.response["Error"]["Code"] in (
                "TransactionCanceledException", "ValidationException"), exc
            assert _state(backend) == before


_SCALARS = st.one_of(
    st.builds(lambda v: {"S": v}, st.text(max_size=5)),
    st.builds(lambda v: {"N": str(v)}, st.integers(-10, 10)),
    st.builds(lambda v: {"B": v}, st.binary(max_size=5)),
    st.builds(lambda v: {"BOOL": v}, st.booleans()),
    st.just({"NULL": True}),
    st.builds(lambda v: {"SS": sorted(v)}, st.sets(st.text(max_size=3), min_size=1, max_size=3)),
    st.builds(lambda v: {"NS": [str(n) for n in sorted(v)]},
              st.sets(st.integers(0, 9), min_size=1, max_size=3)),
    st.builds(lambda v: {"BS": sorted(v)}, st.sets(st.binary(max_size=3), min_size=1,
                                                   max_size=3)))
_VALUES = st.recursive(_SCALARS, lambda inner: st.one_of(
    st.builds(lambda v: {"M": v}, st.dictionaries(st.text(max_size=3), inner, max_size=3)),
    st.builds(lambda v: {"L": v}, st.lists(inner, max_size=3))), max_leaves=8)
_ITEMS = st.dictionaries(st.text(min_size=1, max_size=4), _VALUES, max_size=4)


@settings(max_examples=examples(100), deadline=None)
@given(items=st.lists(_ITEMS, max_size=3))
def test_attribute_values_are_written_as_moto_writes_them(items: list[dict[str, Any]]) -> None:
    """Property: an answer holding any tree of attribute values (each type, maps and lists
    at any depth) is written byte for byte as moto's own serializer writes it."""
    import json

    from moto.core.serialize import JSONSerializer, ResponseSerializer
    from moto.core.utils import get_service_model

    from dynaorm.testing.private_apis import moto_attribute_values_direct

    moto_attribute_values_direct()

    class Moto(JSONSerializer):  # (moto's own way: every member asked for)
        def _serialize_type_structure(self, serialized: Any, value: Any, shape: Any,
                                      key: str) -> None:
            ResponseSerializer._serialize_type_structure(self, serialized, value, shape, key)

    model = get_service_model("dynamodb")
    for operation, result in (("GetItem", {"Item": items[0]} if items else {}),
                              ("Query", {"Items": items, "Count": len(items)})):
        op = model.operation_model(operation)
        ours, theirs = JSONSerializer(op).serialize(result), Moto(op).serialize(result)
        assert ours == theirs
        assert json.loads(ours["body"]) == json.loads(theirs["body"])
