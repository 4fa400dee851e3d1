"""Red team 08h of merge ``fix08f``: a previous layout's read, delete or update by key
finds only the entity at the key asked for (``Layout.read``/``Layout.either`` compare the
old row's object's current key with it). What must never happen: a false miss, an old row
of the entity asked for answered as absent (hidden data), because its current key and the
key asked for differ in text but name the same item:

- a number (``N``) key attribute: DynamoDB reads the row at ``5`` for ``5.0``
  (``Decimal("5.0")``, ``5.00``, ``5E0``): under the current layout ``get`` finds it, so
  under the old one it must too (fix08f compared the rendered text: a miss, and a delete
  by that key raised ``ItemNotFoundError``). Every engine: the engine decides what a
  number key is.
- an old layout that pads numbers (``{n:05d}``) or a current one that does: the object
  read from the old row is the entity asked for (a hypothesis property, moto only).
"""

from __future__ import annotations

from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dynaorm
from dynaorm import Entity, Previous, Session, Table
from dynaorm.protocol.steps import call
from dynaorm.testing import TestBackend, use_tables, worker_suffix
from tests.conftest import wire_of
from tests.support.examples import examples

numbered = Table("red08h_num", pk="pk", sk="sk", key_types={"pk": "N"})


class Num(Entity):
    """A number partition key; its sort key moved (``O#{x}`` -> ``C#{x}``)."""

    class Meta:
        table = numbered
        pk = "{n}"
        sk = "C#{x}"
        previous = Previous(sk="O#{x}")

    n: Decimal
    x: str
    body: str = ""


@pytest.fixture
def ndb(db: TestBackend, request: pytest.FixtureRequest) -> Iterator[TestBackend]:
    with use_tables(numbered, endpoint_url=db.endpoint_url, name_suffix=worker_suffix(),
                    wire=wire_of(request)) as tb:
        tb.session_kind = db.session_kind
        yield tb


def _plant_num(n: str, x: str, body: str) -> None:
    """A row of the old layout, as the release before stored it."""
    numbered.db.driver.run(call("PutItem", {"TableName": numbered.name, "Item": {
        "pk": {"N": n}, "sk": {"S": f"O#{x}"}, "_type": {"S": "Num"}, "n": {"N": n},
        "x": {"S": x}, "body": {"S": body}}}))


SAME_FIVE = [Decimal("5"), Decimal("5.0"), Decimal("5.00"), Decimal("5E0"), 5, 5.0]


@pytest.mark.engines("moto", "local")
@pytest.mark.parametrize("asked", SAME_FIVE, ids=str)
def test_a_number_key_asked_as_another_spelling_finds_the_old_row(
        ndb: TestBackend, asked: Any) -> None:
    """(fix08f: ``get(Num, n=Decimal("5.0"), x="a")`` of an old row at ``5`` was ``None``,
    while the same spelling found a current row: the number key compared as text)"""
    _plant_num("5", "a", "old")
    s = ndb.session()
    s.save(Num(n=Decimal(5), x="b", body="current"))
    s.commit()
    assert s.get(Num, n=asked, x="b") is not None  # (DynamoDB: 5.0 is 5)
    got = s.get(Num, n=asked, x="a")
    assert got is not None and got.body == "old"
    many = s.get_many(Num, [{"n": asked, "x": "a"}, {"n": asked, "x": "b"}])
    assert [o.body if o else None for o in many] == ["old", "current"]
    assert s.get(Num, n=Decimal(6), x="a") is None  # (another number: a miss)
    s.delete(Num, n=asked, x="a")
    s.commit()
    assert s.get(Num, n=Decimal(5), x="a") is None
    assert [i["sk"]["S"] for i in ndb.scan_raw(numbered)] == ["C#b"]


# -- padded templates: the decoded object's key and the asked key in other text ----------

padded = Table("red08h_pad")


class PadOld(Entity):
    """The old layout pads the number, the current one does not."""

    class Meta:
        table = padded
        pk = "N#{n}"
        sk = "P#{c}"
        previous = Previous(pk="OLD#{n:05d}", sk="{c}")

    n: int
    c: str
    body: str = ""


class PadNew(Entity):
    """The current layout pads the number, the old one did not."""

    class Meta:
        table = padded
        pk = "M#{n:05d}"
        sk = "P#{c}"
        previous = Previous(pk="OM#{n}", sk="{c}")

    n: int
    c: str
    body: str = ""


@pytest.fixture(scope="module")
def moto_padded() -> Iterator[None]:
    from dynaorm.testing import moto_backend

    with moto_backend(), use_tables(padded, name_suffix=worker_suffix()):
        yield


@pytest.mark.sync_only
@pytest.mark.engines("moto")
@settings(max_examples=examples(40), deadline=None, suppress_health_check=list(HealthCheck))
@given(entity=st.sampled_from([PadOld, PadNew]), n=st.integers(0, 99999),
       other=st.integers(0, 99999), c=st.sampled_from(["a", "b"]),
       how=st.sampled_from(["get", "get_many", "update", "delete"]))
def test_an_old_row_of_a_padded_layout_is_the_entity_at_its_key(
        moto_padded: None, entity: type[Entity], n: int, other: int, c: str,
        how: str) -> None:
    """Never a false miss: a row stored in the old layout is found by its entity's own
    key, whichever template pads the number; another number never finds it."""
    spec: Any = entity.__dynaorm_spec__
    old_key = spec.rules.before.key({"n": n, "c": c}, entity.__name__)
    padded.db.driver.run(call("PutItem", {"TableName": padded.name, "Item": {
        "pk": {"S": old_key["pk"]}, "sk": {"S": old_key["sk"]},
        "_type": {"S": entity.__name__}, "n": {"N": str(n)}, "c": {"S": c},
        "body": {"S": "old"}}}))
    try:
        s = Session(padded)
        if other != n:
            assert s.get(entity, n=other, c=c) is None
        if how == "get":
            got = s.get(entity, n=n, c=c)
            assert got is not None and got.body == "old"  # type: ignore[attr-defined]
        elif how == "get_many":
            many = s.get_many(entity, [{"n": n, "c": c}])
            assert many[0] is not None
        elif how == "update":  # (an old row is refused by update(): never "not found")
            with pytest.raises(dynaorm.DynaormError, match="previous layout"):
                s.update(entity, n=n, c=c).set(body="x")
                s.commit()
        else:
            s.delete(entity, n=n, c=c)
            s.commit()
            assert s.get(entity, n=n, c=c) is None
    finally:
        padded.db.driver.run(call("DeleteItem", {"TableName": padded.name, "Key": {
            "pk": {"S": old_key["pk"]}, "sk": {"S": old_key["sk"]}}}))


scoped = Table("red08h_scoped")


class TenantLine(Entity):
    """A lossy old layout (one row per ``tenant_id``; a row per ``item`` now), scoped by
    ``tenant_id``."""

    class Meta:
        table = scoped
        pk = "T#{tenant_id}"
        sk = "{item}"
        previous = Previous(sk="PROFILE", type_name="TenantLineV1")

    tenant_id: str
    item: str
    body: str = ""


@pytest.mark.sync_only
@pytest.mark.engines("moto")
def test_a_scoped_session_reads_and_deletes_only_its_tenants_entity_at_the_key() -> None:
    """A tenant's session: its old row is found at its own key only; another item of the
    same old row is a miss (get, get_many) and not found (delete); another tenant's key
    is refused before anything is sent; nothing is deleted."""
    from dynaorm.testing import moto_backend

    with moto_backend(), use_tables(scoped, name_suffix=worker_suffix()):
        for tenant, item in (("a", "z"), ("b", "y")):
            scoped.db.driver.run(call("PutItem", {"TableName": scoped.name, "Item": {
                "pk": {"S": f"T#{tenant}"}, "sk": {"S": "PROFILE"},
                "_type": {"S": "TenantLineV1"}, "tenant_id": {"S": tenant},
                "item": {"S": item}, "body": {"S": "old"}}}))
        s = Session(scoped, scope={"tenant_id": "a"})
        assert s.get(TenantLine, tenant_id="a", item="z") is not None
        assert s.get(TenantLine, tenant_id="a", item="y") is None
        many = s.get_many(TenantLine, [{"tenant_id": "a", "item": "y"},
                                       {"tenant_id": "a", "item": "z"}])
        assert [o.item if o else None for o in many] == [None, "z"]
        with pytest.raises(dynaorm.ScopeError):
            s.delete(TenantLine, tenant_id="b", item="y")
            s.commit()
        s = Session(scoped, scope={"tenant_id": "a"})
        with pytest.raises(dynaorm.ItemNotFoundError):
            s.delete(TenantLine, tenant_id="a", item="y")
            s.commit()
        assert len(scoped.db.driver.run(call("Scan", {"TableName": scoped.name}))["Items"]) == 2
