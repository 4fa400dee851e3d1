"""Definitions, checked when they are made, with no engine: a Table's CreateTable
definition (contract section 1) and the refusals of a bad Table or entity ``Meta``
(contract section 10). Creating and deleting tables on the engines is in
tests/integration/test_table.py."""

from __future__ import annotations

from typing import Any

import pytest

from dynaorm import GSI, LSI, DynaormError, Entity, Table, Unique
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


@pytest.mark.parametrize("name", ["", "ab", "has space", "x" * 256, "bad/char"])
def test_invalid_table_and_index_names_are_refused_at_definition(name: str) -> None:
    with pytest.raises(DynaormError, match="name"):
        Table(name)
    with pytest.raises(DynaormError, match="index name"):
        Table("valid-table", indexes=[GSI(name, pk="gpk")])


# -- definition errors (raised when the class is defined) ---------------------------------
def _define(meta: dict[str, Any], **fields: Any) -> type[Entity]:
    annotations = {"a": str, "b": str, **fields}
    inner = type("Meta", (), {**meta, "__qualname__": "ErrDefined.Meta",
                              "__module__": __name__})
    ns: dict[str, Any] = {"__annotations__": annotations, "__module__": __name__,
                          "__qualname__": "ErrDefined", "Meta": inner}
    return type("ErrDefined", (Entity,), ns)


@pytest.mark.parametrize(("meta", "message"), [
    ({"table": app, "pk": "A#{a}"}, "sk is required"),
    ({"table": app, "pk": "A#{nope}", "sk": "X"}, "nope"),
    ({"table": app, "pk": "A#{a}", "sk": "{b}", "colour": "red"}, "unknown option"),
    ({"table": "app", "pk": "A#{a}", "sk": "X"}, "must be a dynaorm Table"),
    ({"table": app, "pk": "A#{a}", "sk": "X", "indexes": {"gsi9": ("A", "B")}}, "gsi9"),
    ({"table": app, "pk": "A#{a}", "sk": "X", "indexes": {"lsi1": ("B#{b}", "C")}}, "LSI"),
    ({"table": app, "pk": "A#{a}", "sk": "X", "indexes": {"gsi1": ("A",)}}, "gsi1"),
    ({"table": app, "pk": "A#{a}", "sk": "X", "unique": ("zzz",)}, "zzz"),
    ({"table": app, "pk": "A#{a}", "sk": "X", "unique": (Unique("a", scope="S#{q}"),)}, "q"),
    ({"table": app, "pk": "A#{a}", "sk": "X", "shards": {"gsi1": 4},
      "indexes": {"gsi1": ("A#{a}", "B")}}, "shard"),
    ({"table": app, "pk": "A#{a}#{shard}", "sk": "X"}, "shard"),
    ({"table": app, "pk": "A#{a}", "sk": "X#{b}", "shards": {"primary": 0}}, "shards"),
])
def test_definition_errors(meta: dict[str, Any], message: str) -> None:
    with pytest.raises(DynaormError, match=message):
        _define(meta)


def test_field_colliding_with_a_key_attribute() -> None:
    with pytest.raises(DynaormError, match="collide"):
        _define({"table": app, "pk": "A#{a}", "sk": "X"}, gsi1pk=str)


def test_type_name_used_twice() -> None:
    with pytest.raises(DynaormError, match="type name"):
        _define({"table": app, "pk": "A#{a}", "sk": "X", "type_name": "User"})


def test_table_definition_errors() -> None:
    with pytest.raises(DynaormError):
        Table("")
    with pytest.raises(DynaormError, match="twice"):
        Table("tbl", indexes=[GSI("gsi", pk="a"), GSI("gsi", pk="b")])
    with pytest.raises(DynaormError, match="sort key"):
        Table("tbl", sk=None, indexes=[LSI("lsi", sk="x")])
    with pytest.raises(DynaormError, match="projection"):
        Table("tbl", indexes=[GSI("gsi", pk="a", projection="SOME")]).definition()


def _in_module(module: str, source: str, table: Table) -> Any:
    """The class ``source`` defines, as if written in ``module``."""
    scope: dict[str, Any] = {"__name__": module, "Entity": Entity, "table": table}
    exec(source, scope)
    return scope["Twin"]


def test_a_type_name_taken_by_another_module_is_refused() -> None:
    # Two classes named alike in two modules used to share one type name: each read the
    # other's items (issue 18). The second is refused; the message says what to do.
    names = Table("dynaorm-type-names")
    twin = """
class Twin(Entity):
    class Meta:
        table = table
        pk = "T#{t}"
        sk = "A"{extra}

    t: str
"""
    first = _in_module("shop.models", twin.replace("{extra}", ""), names)
    with pytest.raises(DynaormError, match=r"type name 'Twin' is taken by shop\.models\.Twin; "
                       r"give billing\.models\.Twin its own type name .*Meta: type_name"):
        _in_module("billing.models", twin.replace("{extra}", "").replace("T#", "U#"), names)
    assert names.entities == {"Twin": first}
    other = _in_module("billing.models", twin.replace("T#", "U#").replace(
        "{extra}", '\n        type_name = "BillingTwin"'), names)  # its own name: welcome
    assert names.entities == {"Twin": first, "BillingTwin": other}
    again = _in_module("shop.models", twin.replace("{extra}", ""), names)  # a reload
    assert names.entities["Twin"] is again and again is not first
