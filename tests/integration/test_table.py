"""Tables (contract section 1): create/exists/delete on every engine (idempotent), and
``use_tables`` giving a fresh table. The CreateTable definition itself is checked in
tests/unit/test_definitions.py."""

from __future__ import annotations

import pytest

from dynaorm import GSI, LSI, DynaormError, Table
from dynaorm.testing import use_tables
from tests.support.models import app
from tests.support.recording import send

#: what the engine answers is the subject: run on the reference engine too
pytestmark = pytest.mark.engines("moto", "local")


def test_create_exists_delete_are_idempotent(backend: str | None,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.setenv(name, "testing")
    t = Table("dynaorm-table-test", indexes=[GSI("g_idx", pk="gpk", sk="gsk"),
                                               LSI("l_idx", sk="lsk")])
    t.connect(backend, region="us-east-1")
    t.delete()  # absent: no error
    assert not t.exists()
    t.create()
    assert t.exists()
    t.create()  # already there: no error
    assert t.exists()
    described = send(t, "DescribeTable", {"TableName": t.name})["Table"]
    assert described["TableStatus"] == "ACTIVE"
    assert [g["IndexName"] for g in described["GlobalSecondaryIndexes"]] == ["g_idx"]
    assert [i["IndexName"] for i in described["LocalSecondaryIndexes"]] == ["l_idx"]
    assert {a["AttributeName"]: a["AttributeType"]
            for a in described["AttributeDefinitions"]} == {
        "pk": "S", "sk": "S", "gpk": "S", "gsk": "S", "lsk": "S"}
    t.delete()
    assert not t.exists()
    t.delete()
    assert not t.exists()


def test_use_tables_gives_a_fresh_table(backend: str | None) -> None:
    with use_tables(app, endpoint_url=backend) as tb:
        assert app.exists()
        send(app, "PutItem", {"TableName": app.name, "Item": {
            "pk": {"S": "x"}, "sk": {"S": "y"}}})
        assert len(tb.scan()) == 1
    with use_tables(app, endpoint_url=backend) as tb:
        assert tb.scan() == []


@pytest.mark.dynaorm_index_lag(0, reason="checks its own writes through a global index")
def test_create_adds_a_newly_declared_global_index(backend: str | None,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """A GSI declared after the table was created: ``create()`` adds it (UpdateTable),
    waits for its backfill, and the index then serves the items stored before."""
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.setenv(name, "testing")
    before = Table("dynaorm-index-add", indexes=[GSI("gx1", pk="g1pk")])
    before.connect(backend, region="us-east-1")
    before.delete()
    before.create()
    try:
        send(before, "PutItem", {"TableName": before.name, "Item": {
            "pk": {"S": "A"}, "sk": {"S": "1"}, "g2pk": {"S": "X"}}})
        after = Table("dynaorm-index-add", indexes=[GSI("gx1", pk="g1pk"),
                                                    GSI("gx2", pk="g2pk", sk="g2sk"),
                                                    GSI("gx3", pk="g3pk")])
        after.connect(backend, region="us-east-1")
        assert after.index_status() == {"gx1": "ACTIVE", "gx2": "MISSING", "gx3": "MISSING"}
        after.create()
        assert after.index_status() == {"gx1": "ACTIVE", "gx2": "ACTIVE", "gx3": "ACTIVE"}
        described = send(after, "DescribeTable", {"TableName": after.name})["Table"]
        assert sorted(g["IndexName"] for g in described["GlobalSecondaryIndexes"]) == [
            "gx1", "gx2", "gx3"]
        send(after, "PutItem", {"TableName": after.name, "Item": {
            "pk": {"S": "B"}, "sk": {"S": "1"}, "g2pk": {"S": "X"}, "g2sk": {"S": "s"}}})
        found = send(after, "Query", {
            "TableName": after.name, "IndexName": "gx2",
            "KeyConditionExpression": "g2pk = :v",
            "ExpressionAttributeValues": {":v": {"S": "X"}}})["Items"]
        assert [i["pk"]["S"] for i in found] == ["B"]  # (A lacks g2sk: not in the index)
        after.create()  # nothing left to add: no request changes anything
        with_lsi = Table("dynaorm-index-add", indexes=[LSI("lx1", sk="lsk")])
        with_lsi.connect(backend, region="us-east-1")
        with pytest.raises(DynaormError, match="local secondary index can only be created"):
            with_lsi.create()
    finally:
        before.delete()
