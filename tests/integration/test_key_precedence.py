"""A literal key beside a template in one partition (contract 18, "Mapping"): the literal
wins by default (``Meta.overlaps = "literal"``) on a table without a type attribute, so
a read for the template's type skips the literal's row (counted in ``Page.skipped``) and
never decodes it as the wrong type; with a type attribute, the type attribute decides.
Definition-time refusals (two templates, ``Meta.overlaps = "refuse"``) are in
``unit/test_definitions.py``."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest

from dynaorm import Entity, Table
from dynaorm.jobs.checking import check_table
from dynaorm.testing import TestBackend, use_tables, worker_suffix
from tests.support.recording import Requests, send

shop = Table("keys-precedence", pk="PK", sk="SK", type_attribute=None)
typed = Table("keys-precedence-typed", pk="PK", sk="SK")


class Order(Entity):  # the template, defined first: the literal defined later still wins
    class Meta:
        table = shop
        pk = "STORE#{store_id}"
        sk = "{timestamp}"

    store_id: str
    timestamp: str
    total: int = 0


class Store(Entity):
    class Meta:
        table = shop
        pk = "STORE#{store_id}"
        sk = "METADATA"

    store_id: str
    name: str


class TypedOrder(Entity):
    class Meta:
        table = typed
        pk = "STORE#{store_id}"
        sk = "{timestamp}"

    store_id: str
    timestamp: str
    total: int = 0


class TypedStore(Entity):
    class Meta:
        table = typed
        pk = "STORE#{store_id}"
        sk = "METADATA"

    store_id: str
    name: str


#: a store and its orders as the design's own loader writes them (no type attribute)
RAW: list[dict[str, Any]] = [
    {"PK": {"S": "STORE#s1"}, "SK": {"S": "2024-01-01T10:00:00"}, "total": {"N": "5"}},
    {"PK": {"S": "STORE#s1"}, "SK": {"S": "2024-03-01T10:00:00"}, "total": {"N": "7"}},
    {"PK": {"S": "STORE#s1"}, "SK": {"S": "METADATA"}, "name": {"S": "Main street"}},
    {"PK": {"S": "STORE#s1"}, "SK": {"S": "Z-2099"}, "total": {"N": "9"}},
]


@pytest.fixture
def db(backend: str | None, request: pytest.FixtureRequest) -> Iterator[TestBackend]:
    with use_tables(shop, typed, endpoint_url=backend, name_suffix=worker_suffix()) as tb:
        if str(request.node.callspec.params.get("backend", "")).endswith("-async"):
            tb.session_kind = "async"
        for item in RAW:
            send(shop, "PutItem", {"TableName": shop.name, "Item": item})
        yield tb


def test_a_query_for_the_template_skips_the_literal_row_and_counts_it(db: TestBackend) -> None:
    s = db.session(shop)
    orders = s.query(Order, store_id="s1").all()
    assert [o.timestamp for o in orders] == ["2024-01-01T10:00:00", "2024-03-01T10:00:00",
                                             "Z-2099"]  # METADATA is the store's, never an Order
    page = s.query(Order, store_id="s1").page()
    assert [o.total for o in page.items] == [5, 7, 9]
    assert page.skipped == 1  # the literal row the key condition could not exclude
    assert s.query(Order, store_id="s1").count() == 3
    assert [o.timestamp for o in s.query(Order, store_id="s1").reverse().limit(2)] == [
        "Z-2099", "2024-03-01T10:00:00"]
    assert s.query(Order, store_id="s1").gte(timestamp="2024-02").all()[0].total == 7
    assert s.query(Order, store_id="s1").keys() == [
        {"store_id": "s1", "timestamp": t}
        for t in ("2024-01-01T10:00:00", "2024-03-01T10:00:00", "Z-2099")]


def test_the_literal_type_reads_its_row(db: TestBackend) -> None:
    s = db.session(shop)
    assert s.query(Store, store_id="s1").all() == [Store(store_id="s1", name="Main street")]
    both = s.query(Store, Order, store_id="s1").all()
    assert [type(x).__name__ for x in both] == ["Order", "Order", "Store", "Order"]
    page = s.query(Store, Order, store_id="s1").page()
    assert page.skipped == 0  # every row is a result of one of the two types


def test_get_by_key_honours_the_precedence(db: TestBackend) -> None:
    """A get of the template's type by the literal's key is refused (no Order can be
    stored there: reads take the item for the Store's), as a save there is."""
    from dynaorm.errors import KeyTemplateError

    s = db.session(shop)
    with pytest.raises(KeyTemplateError, match="is Store's literal key"):
        s.get(Order, store_id="s1", timestamp="METADATA")
    assert s.get(Store, store_id="s1") == Store(store_id="s1", name="Main street")
    with pytest.raises(KeyTemplateError, match="is Store's literal key"):
        s.get_many(Order, [{"store_id": "s1", "timestamp": "METADATA"},
                           {"store_id": "s1", "timestamp": "Z-2099"}])
    got = s.get_many(Order, [{"store_id": "s1", "timestamp": "2024-01-01T10:00:00"},
                             {"store_id": "s1", "timestamp": "Z-2099"}])
    assert [o.total for o in got if o is not None] == [5, 9]


def test_scans_tell_the_types_apart(db: TestBackend) -> None:
    s = db.session(shop)
    assert sorted(o.timestamp for o in s.scan(Order).all()) == [
        "2024-01-01T10:00:00", "2024-03-01T10:00:00", "Z-2099"]
    assert [x.name for x in s.scan(Store).all()] == ["Main street"]
    assert s.scan(Order).count() == 3
    assert sorted(type(x).__name__ for x in s.scan(Store, Order)) == [
        "Order", "Order", "Order", "Store"]


def test_writes_of_both_types_read_back_as_their_own(db: TestBackend) -> None:
    s = db.session(shop)
    s.save(Store(store_id="s2", name="Harbour"))
    s.save(Order(store_id="s2", timestamp="2024-05-05", total=3))
    s.commit()
    assert [type(x).__name__ for x in s.query(Store, Order, store_id="s2")] == [
        "Order", "Store"]
    assert s.query(Order, store_id="s2").one().total == 3
    assert check_table(shop).problems == []  # dynaorm check tells the rows apart the same way


def test_a_key_condition_on_the_literal_leaves_it_out(db: TestBackend) -> None:
    rec = Requests(shop) if db.session_kind == "sync" else None
    s = db.session(shop)
    assert s.query(Order, store_id="s1").eq(timestamp="METADATA").all() == []
    if rec is not None:  # the literal's row: no request at all
        assert rec.of("Query") == []
    # a bound equal to the literal becomes strict: the row is not read at all
    assert [o.timestamp for o in s.query(Order, store_id="s1").gte(timestamp="METADATA")] == [
        "Z-2099"]
    assert [o.timestamp for o in s.query(Order, store_id="s1").lte(timestamp="METADATA")] == [
        "2024-01-01T10:00:00", "2024-03-01T10:00:00"]
    if rec is not None:
        conditions = [q["KeyConditionExpression"] for q in rec.of("Query")]
        assert len(conditions) == 2 and " > " in conditions[0] and " < " in conditions[1]
        assert rec.items_read("Query") == 3  # the literal row never came back


def test_with_a_type_attribute_the_type_attribute_decides(db: TestBackend) -> None:
    s = db.session(typed)
    s.save(TypedStore(store_id="s1", name="Main street"))
    s.save(TypedOrder(store_id="s1", timestamp="2024-01-01", total=5))
    s.commit()
    assert [o.total for o in s.query(TypedOrder, store_id="s1")] == [5]
    assert s.query(TypedStore, store_id="s1").one().name == "Main street"
    assert s.get(TypedOrder, store_id="s1", timestamp="METADATA") is None
    # an item at the literal's key whose type attribute says order is an order
    send(typed, "PutItem", {"TableName": typed.name, "Item": {
        "PK": {"S": "STORE#s9"}, "SK": {"S": "METADATA"}, "_type": {"S": "TypedOrder"},
        "total": {"N": "1"}}})
    odd = s.get(TypedOrder, store_id="s9", timestamp="METADATA")
    assert odd is not None and odd.total == 1
    assert s.get(TypedStore, store_id="s9") is None


def test_stream_records_classify_by_the_precedence() -> None:
    def record(sk: str) -> dict[str, Any]:
        keys = {"PK": {"S": "STORE#s1"}, "SK": {"S": sk}}
        return {"eventID": "1", "eventName": "INSERT",
                "dynamodb": {"Keys": keys, "NewImage": {**keys, "total": {"N": "1"}},
                             "ApproximateCreationDateTime": datetime(2024, 1, 1, tzinfo=UTC)
                             .timestamp()}}

    changes = list(shop.changes([record("METADATA"), record("2024-01-01")]))
    assert [c.entity for c in changes] == [Store, Order]


class Profile(Entity):  # a template whose keys may render the admin's literal key
    class Meta:
        table = shop
        pk = "USER#{user_id}"
        sk = "PROFILE"

    user_id: str
    bio: str = ""


class AdminProfile(Entity):
    class Meta:
        table = shop
        pk = "USER#admin"
        sk = "PROFILE"

    bio: str = ""


def test_a_write_at_a_key_another_entitys_literal_claims_is_refused_before_sending(
        db: TestBackend) -> None:
    """``Profile(user_id="admin")`` renders ``USER#admin``/``PROFILE``, the literal key of
    ``AdminProfile``, which reads take the item for: its save (sync, async, ``save_many``),
    an update and a delete by that key, and a get by it are refused before anything is
    sent, naming the entity whose literal key wins (the save was stored, told it was, and
    never read back as a ``Profile``; the delete removed the admin's profile). Other
    users' profiles and the admin's own are stored and read back as their own."""
    from dynaorm import Session
    from dynaorm.aio.session import AsyncSession
    from dynaorm.errors import KeyTemplateError

    s = db.session(shop)
    s.save(AdminProfile(bio="root"))
    s.save(Profile(user_id="ada", bio="hi"))
    s.commit()
    held = sorted(json.dumps(i, sort_keys=True) for i in shop.db.send(
        "Scan", {"TableName": shop.name})["Items"])
    obj = Profile(user_id="admin", bio="evil")
    sync = Session(shop)
    writes = [lambda: sync.save(obj), lambda: AsyncSession(shop).save(obj),
              lambda: sync.save_many([obj]),
              lambda: sync.update(Profile, user_id="admin").set(bio="x"),
              lambda: sync.delete(Profile(user_id="admin")),
              lambda: sync.get(Profile, user_id="admin")]
    for write in writes:
        with pytest.raises(KeyTemplateError, match=r"Profile: the key \{'PK': 'USER#admin', "
                           r"'SK': 'PROFILE'\} is AdminProfile's literal key"):
            write()
    sync.commit()
    assert sorted(json.dumps(i, sort_keys=True) for i in shop.db.send(
        "Scan", {"TableName": shop.name})["Items"]) == held
    assert s.get(AdminProfile) == AdminProfile(bio="root")
    assert s.get(Profile, user_id="ada") == Profile(user_id="ada", bio="hi")
