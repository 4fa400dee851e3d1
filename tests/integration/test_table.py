"""Tables (contract section 1): create/exists/delete on every engine (idempotent), and
``use_tables`` giving a fresh table. The CreateTable definition itself is checked in
tests/unit/test_definitions.py."""

from __future__ import annotations

import pytest

from dynaorm import GSI, LSI, Table
from dynaorm.testing import use_tables
from tests.support.models import app
from tests.support.recording import send


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
