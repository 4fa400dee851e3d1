"""The fault proxy (``dynaorm.testing.fault_proxy``, contract section 21): what it leaves
alone passes as the engine answered it (DynamoDB Local's answers and refusals, request
ids included), and an engine that answers badly, or not at all, is seen through it as
it would be without it (a hostile server: ``tests/support/hostile.py``). Index lag
through it: ``integration/test_index_lag.py``; its rules in front of the moto server:
every ``motoserver-async`` variant."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from dynaorm import AnswerLostError, BadAnswerError, Client, RequestError
from dynaorm.testing import fault_proxy
from tests.support.hostile import HostileServer, Reply, answer

KEY = {"pk": {"S": "PROXY#1"}, "sk": {"S": "X"}}
ITEM = {**KEY, "b": {"B": b"\x00\xffbin"}, "n": {"N": "1.5"}}
TABLE = {"TableName": "proxy-fidelity", "BillingMode": "PAY_PER_REQUEST",
         "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"},
                       {"AttributeName": "sk", "KeyType": "RANGE"}],
         "AttributeDefinitions": [{"AttributeName": "pk", "AttributeType": "S"},
                                  {"AttributeName": "sk", "AttributeType": "S"}]}


@pytest.fixture
def engine(ddb_local: str) -> Iterator[tuple[Client, Client]]:
    """A client of DynamoDB Local and one through a proxy in front of it; a fresh table."""
    with fault_proxy(ddb_local) as proxied:
        direct, through = Client(ddb_local, max_attempts=1), Client(proxied, max_attempts=1)
        direct.send("CreateTable", TABLE)
        try:
            yield direct, through
        finally:
            direct.send("DeleteTable", {"TableName": TABLE["TableName"]})


def _plain(answer: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in answer.items() if k != "ResponseMetadata"}


def test_answers_and_refusals_pass_as_the_engine_gave_them(
        engine: tuple[Client, Client]) -> None:
    direct, through = engine
    put = {"TableName": TABLE["TableName"], "Item": ITEM}
    assert _plain(through.send("PutItem", put)) == _plain(direct.send("PutItem", put))
    get = {"TableName": TABLE["TableName"], "Key": KEY, "ConsistentRead": True}
    got = through.send("GetItem", get)
    assert _plain(got) == _plain(direct.send("GetItem", get)) == {"Item": ITEM}
    assert got["ResponseMetadata"]["RequestId"]  # DynamoDB Local's, passed on
    refused = []
    for client in (direct, through):
        with pytest.raises(RequestError) as err:
            client.send("PutItem", {**put, "ConditionExpression": "attribute_not_exists(pk)",
                                    "ReturnValuesOnConditionCheckFailure": "ALL_OLD"})
        refused.append((type(err.value), err.value.code, err.value.item,
                        bool(err.value.request_id)))
    assert refused[0] == refused[1] == (
        RequestError, "ConditionalCheckFailedException", ITEM, True)


@pytest.mark.parametrize(("reply", "kind"), [
    (Reply(answer(b"<html>proxy</html>", headers="Content-Type: text/html\r\n",
                  crc=False)), BadAnswerError),
    (Reply(answer(b'{"Item": {', length=False).replace(
        b"\r\n\r\n", b"\r\nContent-Length: 40\r\n\r\n"), close=True), AnswerLostError),
    (Reply(b"", close=True), AnswerLostError),
], ids=["a 200 page that is not JSON", "an answer cut short", "no answer"])
def test_an_engine_that_answers_badly_is_seen_as_it_is(reply: Reply,
                                                       kind: type[RequestError]) -> None:
    hostile = HostileServer(lambda n, body: reply)
    try:
        with fault_proxy(hostile.url) as proxied:
            with pytest.raises(RequestError) as err:
                Client(proxied, max_attempts=1).send("GetItem", {
                    "TableName": "t", "Key": KEY})
            assert type(err.value) is kind
            assert hostile.bodies  # the request reached the engine
    finally:
        hostile.close()
