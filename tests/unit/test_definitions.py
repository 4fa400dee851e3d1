"""Tables (contract section 1): the CreateTable definition, and create/exists/delete on
both backends (idempotent)."""

from __future__ import annotations

import pytest

from dynaorm import GSI, LSI, DynaormError, Table
from dynaorm.testing import use_tables
from tests.support.models import app


def test_definition_of_the_test_table() -> None:
    assert app.definition() == {
        "TableName": "dynaorm-tests",
        "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"},
                      {"AttributeName": "sk", "KeyType": "RANGE"}],
        "AttributeDefinitions": [
            {"AttributeName": name, "AttributeType": "S"}
            for name in ("gsi1pk", "gsi1sk", "gsi2pk", "gsi2sk", "lsi1sk", "pk", "sk")
        ],
        "BillingMode": "PAY_PER_REQUEST",
        "GlobalSecondaryIndexes": [
            {"IndexName": "gsi1",
             "KeySchema": [{"AttributeName": "gsi1pk", "KeyType": "HASH"},
                           {"AttributeName": "gsi1sk", "KeyType": "RANGE"}],
             "Projection": {"ProjectionType": "ALL"}},
            {"IndexName": "gsi2",
             "KeySchema": [{"AttributeName": "gsi2pk", "KeyType": "HASH"},
                           {"AttributeName": "gsi2sk", "KeyType": "RANGE"}],
             "Projection": {"ProjectionType": "ALL"}},
        ],
        "LocalSecondaryIndexes": [
            {"IndexName": "lsi1",
             "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"},
                           {"AttributeName": "lsi1sk", "KeyType": "RANGE"}],
             "Projection": {"ProjectionType": "ALL"}},
        ],
    }


def test_definition_variants() -> None:
    t = Table("plain", pk="id", sk=None,
              indexes=[GSI("by_owner", pk="owner"), GSI("keys", pk="k", sk="s",
                                                         projection="keys_only"),
                       GSI("some", pk="k", projection=["a", "b"])])
    d = t.definition()
    assert d["KeySchema"] == [{"AttributeName": "id", "KeyType": "HASH"}]
    assert d["AttributeDefinitions"] == [
        {"AttributeName": n, "AttributeType": "S"} for n in ("id", "k", "owner", "s")]
    assert "LocalSecondaryIndexes" not in d
    gsis = {g["IndexName"]: g for g in d["GlobalSecondaryIndexes"]}
    assert gsis["by_owner"]["KeySchema"] == [{"AttributeName": "owner", "KeyType": "HASH"}]
    assert gsis["keys"]["Projection"] == {"ProjectionType": "KEYS_ONLY"}
    assert gsis["some"]["Projection"] == {"ProjectionType": "INCLUDE",  # (0.2) + the type
                                          "NonKeyAttributes": ["a", "b", "_type"]}
    bare = Table("bare").definition()
    assert "GlobalSecondaryIndexes" not in bare and "LocalSecondaryIndexes" not in bare
    assert bare["BillingMode"] == "PAY_PER_REQUEST"


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
    described = t.transport.call("DescribeTable", {"TableName": t.name})["Table"]
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
        app.transport.call("PutItem", {"TableName": app.name, "Item": {
            "pk": {"S": "x"}, "sk": {"S": "y"}}})
        assert len(tb.scan()) == 1
    with use_tables(app, endpoint_url=backend) as tb:
        assert tb.scan() == []


@pytest.mark.parametrize("name", ["", "ab", "has space", "x" * 256, "bad/char"])
def test_invalid_table_and_index_names_are_refused_at_definition(name: str) -> None:
    with pytest.raises(DynaormError, match="name"):
        Table(name)
    with pytest.raises(DynaormError, match="index name"):
        Table("valid-table", indexes=[GSI(name, pk="gpk")])
