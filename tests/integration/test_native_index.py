"""Native multi-attribute index keys (contract 20): a GSI keyed on up to four entity
attributes each, as stored, created, queried and refused on every engine.

dynoxide 1.2 creates such indexes but refuses a query that leaves out a sort attribute:
the tests that leave one out ask the engine (:func:`tests.conftest.engine_of`).
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta, timezone

import pytest
from pydantic import AwareDatetime, ConfigDict, Field

from dynaorm import GSI, DynaormError, Entity, InvalidValueError, KeyTemplateError, Table
from dynaorm.jobs import backfill, run_local
from dynaorm.testing import TestBackend, use_tables, worker_suffix
from tests.conftest import engine_of, wire_of

#: (what it asserts depends on the engine: it runs on each)
pytestmark = pytest.mark.engines("moto", "local", "dynoxide")

native = Table("native_idx", indexes=[
    GSI("by_place", pk=("tenant_id", "place"), sk=("created", "rank", "state")),
    GSI("by_rank", pk=("rank",)),
], key_types={"rank": "N"})


class Order(Entity):
    class Meta:
        table = native
        pk = "ORDER#{order_id}"
        sk = "ORDER"

    model_config = ConfigDict(populate_by_name=True)

    order_id: str
    tenant_id: str
    region: str = Field(alias="place")  # stored as "place": the index's attribute
    created: datetime
    rank: int
    state: str = "open"
    note: str | None = None


class Invoice(Entity):
    """Another type on the same index (the same attributes)."""

    class Meta:
        table = native
        pk = "INVOICE#{invoice_id}"
        sk = "INVOICE"

    model_config = ConfigDict(populate_by_name=True)

    invoice_id: str
    tenant_id: str
    region: str = Field(alias="place")
    created: datetime
    rank: int
    state: str = "due"


@pytest.fixture
def nb(backend: str | None, request: pytest.FixtureRequest) -> Iterator[TestBackend]:
    with use_tables(native, endpoint_url=backend, name_suffix=worker_suffix(),
                    wire=wire_of(request)) as tb:
        yield tb


def test_create_declares_every_key_attribute() -> None:
    gsi = next(g for g in native.definition()["GlobalSecondaryIndexes"]
               if g["IndexName"] == "by_place")
    assert gsi["KeySchema"] == [
        {"AttributeName": "tenant_id", "KeyType": "HASH"},
        {"AttributeName": "place", "KeyType": "HASH"},
        {"AttributeName": "created", "KeyType": "RANGE"},
        {"AttributeName": "rank", "KeyType": "RANGE"},
        {"AttributeName": "state", "KeyType": "RANGE"}]
    types = {a["AttributeName"]: a["AttributeType"]
             for a in native.definition()["AttributeDefinitions"]}
    assert types["rank"] == "N" and types["place"] == "S"


T0 = datetime(2026, 1, 1, tzinfo=UTC)


def _orders(nb: TestBackend) -> None:
    s = nb.session()
    s.save_many([Order(order_id=f"o{i}", tenant_id="acme", region="eu" if i < 5 else "us",
                       created=T0.replace(day=1 + i // 2), rank=i,
                       state="open" if i % 2 else "shipped") for i in range(6)])
    s.save(Invoice(invoice_id="i1", tenant_id="acme", region="eu", created=T0, rank=7))
    s.commit()


def _partial_sort(request: pytest.FixtureRequest) -> None:
    """Skip on dynoxide 1.2: it refuses a query leaving out a sort attribute (DynamoDB,
    DynamoDB Local 3.x and moto serve it)."""
    if engine_of(request) == "dynoxide":
        pytest.skip("dynoxide 1.2 refuses a query that leaves out a sort attribute")


def ids(found: list[Order]) -> list[str]:
    return [o.order_id for o in found]


@pytest.mark.dynaorm_index_lag(0, reason="checks its own writes through a global index")
def test_query_every_partition_attribute_and_a_leading_run(nb: TestBackend,
        request: pytest.FixtureRequest) -> None:
    _partial_sort(request)
    _orders(nb)
    s = nb.session()
    q = s.query(Order, index="by_place", tenant_id="acme", region="eu")
    assert ids(q.all()) == ["o0", "o1", "o2", "o3", "o4"]  # by created, then rank
    assert ids(q.reverse().all()) == ["o4", "o3", "o2", "o1", "o0"]
    day2 = T0.replace(day=2)
    assert ids(s.query(Order, index="by_place", tenant_id="acme", region="eu",
                       created=day2).all()) == ["o2", "o3"]
    assert ids(q.gte(created=day2).all()) == ["o2", "o3", "o4"]
    assert ids(q.lt(created=day2).all()) == ["o0", "o1"]
    assert ids(q.between({"created": T0}, {"created": day2}).all()) == ["o0", "o1", "o2", "o3"]
    by_day = s.query(Order, index="by_place", tenant_id="acme", region="eu", created=day2)
    assert ids(by_day.gt(rank=2).all()) == ["o3"]  # a number attribute, by value
    assert ids(by_day.eq(rank=3).all()) == ["o3"]
    assert ids(s.query(Order, index="by_place", tenant_id="acme", region="eu", created=day2,
                       rank=3).begins_with(state="op").all()) == ["o3"]
    assert ids(s.query(Order, index="by_place", tenant_id="acme", region="us").all()) == ["o5"]
    # another type on the same index is not an Order; asked for, it is read too
    both = s.query(Order, Invoice, index="by_place", tenant_id="acme", region="eu").all()
    assert len(both) == 6 and sum(isinstance(x, Invoice) for x in both) == 1


@pytest.mark.dynaorm_index_lag(0, reason="checks its own writes through a global index")
def test_pages_and_cursors_over_a_native_index(nb: TestBackend,
        request: pytest.FixtureRequest) -> None:
    _partial_sort(request)
    _orders(nb)
    s = nb.session()
    q = s.query(Order, index="by_place", tenant_id="acme", region="eu").page_size(2)
    seen, cursor = [], None
    while True:
        page = q.page(cursor)
        seen += ids(page.items)
        cursor = page.cursor
        if cursor is None:
            break
    assert seen == ["o0", "o1", "o2", "o3", "o4"]


@pytest.mark.dynaorm_index_lag(0, reason="checks its own writes through a global index")
def test_a_partition_only_number_index(nb: TestBackend,
                                       request: pytest.FixtureRequest) -> None:
    _orders(nb)
    s = nb.session()
    assert ids(s.query(Order, index="by_rank", rank=4).all()) == ["o4"]
    assert s.query(Invoice, index="by_rank", rank=7).one().invoice_id == "i1"
    if engine_of(request) != "dynoxide":  # dynoxide 1.2: no key condition of 5 parts
        whole = s.query(Order, index="by_place", tenant_id="acme", region="eu", created=T0,
                        rank=1, state="open")
        assert ids(whole.all()) == ["o1"]


@pytest.mark.dynaorm_index_lag(0, reason="checks its own writes through a global index")
def test_updates_move_the_item_in_the_index_and_need_no_backfill(nb: TestBackend,
        request: pytest.FixtureRequest) -> None:
    _partial_sort(request)
    _orders(nb)
    s = nb.session()
    o = s.get(Order, order_id="o0")
    o.region = "us"
    s.save(o)
    s.commit()
    assert ids(s.query(Order, index="by_place", tenant_id="acme", region="us").all()) == [
        "o0", "o5"]
    raw = nb.scan_raw()
    allowed = {"pk", "sk", "_type", "order_id", "invoice_id", "tenant_id", "place", "created",
               "rank", "state", "_rev"}
    assert all(k in allowed for item in raw for k in item)  # no key rendered


def test_a_query_that_cannot_be_served_is_refused_before_sending(nb: TestBackend) -> None:
    s = nb.session()
    bad = [
        lambda: s.query(Order, index="by_place", tenant_id="acme"),  # a partition attr missing
        lambda: s.query(Order, index="by_place", tenant_id="acme", region="eu", rank=1),
        lambda: s.query(Order, index="by_place", tenant_id="acme", region="eu",
                        place="eu"),  # the stored name is not the field name
        lambda: s.query(Order, index="by_place", tenant_id="acme", region="eu").gte(rank=1),
        lambda: s.query(Order, index="by_place", tenant_id="acme", region="eu").gte(
            created=T0, rank=1),
        lambda: s.query(Order, index="by_place", tenant_id="acme", region="eu",
                        created=T0).begins_with(rank=1),  # a number: no begins_with
        lambda: s.query(Order, index="by_rank", rank="many"),
        lambda: s.query(Order, index="by_rank", rank=1, shard=0),
    ]
    for make in bad:
        with pytest.raises(DynaormError):
            make().all()
    with pytest.raises(KeyTemplateError, match="by_place"):
        s.query(Order, index="by_place", tenant_id="acme").all()


def test_key_values_dynamodb_refuses_are_refused_before_sending(nb: TestBackend) -> None:
    """An empty value for a native index's key attribute, or one over DynamoDB's 2048
    (partition) or 1024 (sort) bytes: DynamoDB Local and moto refuse such a write, and a
    query with an empty value (or, DynamoDB Local, a sort value over 1024 bytes), as a
    ``ValidationException``; dynaorm refuses each first, naming the entity and the field
    (a query: also the index). Nothing is stored."""
    good = {"order_id": "o1", "tenant_id": "acme", "region": "eu", "created": T0, "rank": 1}
    for bad, attr in [({"tenant_id": ""}, "tenant_id"), ({"region": "é" * 1025}, "place"),
                      ({"state": ""}, "state"), ({"state": "x" * 1025}, "state")]:
        s = nb.session()
        s.save(Order(**{**good, **bad}))
        with pytest.raises(KeyTemplateError, match=f"^Order .*field '{attr}'"):
            s.commit()
        s = nb.session()
        s.update(Order, order_id="o1").set(**{"region" if attr == "place" else attr:
                                              next(iter(bad.values()))})
        with pytest.raises(KeyTemplateError, match=f"^Order .*field '{attr}'"):
            s.commit()
    assert nb.session().get(Order, order_id="o1") is None
    s = nb.session()
    eu, run = {"tenant_id": "acme", "region": "eu"}, {"created": T0, "rank": 1}
    refused = [
        (lambda: s.query(Order, index="by_place", tenant_id="", region="eu"), "tenant_id"),
        (lambda: s.query(Order, index="by_place", tenant_id="acme", region=""), "region"),
        (lambda: s.query(Order, index="by_place", **eu, **run, state=""), "state"),
        (lambda: s.query(Order, index="by_place", **eu, **run, state="x" * 1025), "state"),
        (lambda: s.query(Order, index="by_place", **eu, **run).gte(state=""), "state"),
        (lambda: s.query(Order, index="by_place", **eu, **run).begins_with(state=""), "state"),
        (lambda: s.query(Order, index="by_place", **eu, **run).between(
            {"state": "a"}, {"state": "x" * 1025}), "state"),
    ]
    for make, field in refused:
        with pytest.raises(KeyTemplateError, match=f"^Order \\(index 'by_place'\\).*'{field}'"):
            make().all()


def test_key_values_at_the_limits_are_sent(nb: TestBackend,
                                           request: pytest.FixtureRequest) -> None:
    """Each value at its limit is accepted: no refusal the engines do not make."""
    _partial_sort(request)
    s = nb.session()
    assert s.query(Order, index="by_place", tenant_id="t" * 2048, region="eu").all() == []
    assert s.query(Order, index="by_place", tenant_id="acme", region="eu").gte(
        created=T0).all() == []
    if engine_of(request) != "dynoxide":  # (dynoxide 1.2: no key condition of 5 parts)
        assert s.query(Order, index="by_place", tenant_id="acme", region="eu", created=T0,
                       rank=1).gte(state="x" * 1024).all() == []


def test_describe_shows_the_native_indexes_an_entity_is_in() -> None:
    from dynaorm.cli.main import describe_entity
    from dynaorm.schema.entity import spec_of

    lines = "\n".join(describe_entity(spec_of(Order)))
    assert "by_place" in lines and "native GSI pk ('tenant_id', 'place')" in lines
    assert "by_rank" in lines and "native GSI pk ('rank',)" in lines


def test_definitions_that_cannot_work_are_refused() -> None:
    with pytest.raises(DynaormError, match="native index"):
        Table("native_bad", indexes=[GSI("too_many", pk=("a", "b", "c", "d", "e"))])
    with pytest.raises(DynaormError, match="native index"):
        Table("native_bad", indexes=[GSI("twice", pk=("a",), sk=("a",))])
    with pytest.raises(DynaormError, match="native index"):
        Table("native_bad", indexes=[GSI("mixed", pk="a", sk=("b", "c"))])
    with pytest.raises(DynaormError, match="rank"):
        class WrongType(Entity):  # a string stored where the index keeps a number
            class Meta:
                table = native
                pk = "W#{w}"
                sk = "W"

            w: str
            rank: str
    with pytest.raises(DynaormError, match="takes no templates"):
        class Templated(Entity):
            class Meta:
                table = native
                pk = "T#{t}"
                sk = "T"
                indexes = {"by_rank": ("{t}", None)}

            t: str


@pytest.mark.dynaorm_index_lag(0, reason="checks its own writes through a global index")
def test_optional_attributes_are_sparse(nb: TestBackend, request: pytest.FixtureRequest
                                        ) -> None:
    sparse = Table("native_sparse", indexes=[GSI("by_note", pk=("note",))])

    class Memo(Entity):
        class Meta:
            table = sparse
            pk = "M#{m}"
            sk = "M"

        m: str
        note: str | None = None

    with use_tables(sparse, endpoint_url=nb.table.endpoint_url, name_suffix=worker_suffix(),
                    wire=wire_of(request)) as tb:
        s = tb.session()
        s.save_many([Memo(m="1"), Memo(m="2", note="x")])
        assert [m.m for m in s.query(Memo, index="by_note", note="x").all()] == ["2"]
    assert engine_of(request)


@pytest.mark.dynaorm_index_lag(0, reason="checks its own writes through a global index")
def test_pynamodb_bridge_maps_a_model_onto_a_native_index(
        nb: TestBackend, request: pytest.FixtureRequest) -> None:
    """A PynamoDB model whose GSI the dynaorm table declares natively: the bridged entity
    takes no templates for it, and its items are queried through it."""
    pytest.importorskip("pynamodb")
    from pynamodb.attributes import NumberAttribute, UnicodeAttribute
    from pynamodb.indexes import AllProjection, GlobalSecondaryIndex
    from pynamodb.models import Model

    from dynaorm.pynamodb import entity_from_pynamodb

    class ByRank(GlobalSecondaryIndex["Legacy"]):
        class Meta:
            index_name = "by_rank"
            projection = AllProjection()

        rank = NumberAttribute(hash_key=True)

    class Legacy(Model):
        class Meta:
            table_name = "native_legacy"

        pk = UnicodeAttribute(hash_key=True)
        sk = UnicodeAttribute(range_key=True)
        rank = NumberAttribute()
        by_rank = ByRank()

    legacy = Table("native_legacy", type_attribute=None, key_types={"rank": "N"},
                   indexes=[GSI("by_rank", pk=("rank",))])
    bridged = entity_from_pynamodb(Legacy, table=legacy, name="LegacyBridged")
    with use_tables(legacy, endpoint_url=nb.table.endpoint_url, name_suffix=worker_suffix(),
                    wire=wire_of(request)) as tb:
        s = tb.session()
        s.save(bridged(pk="L#1", sk="L", rank=42))
        s.commit()
        assert [x.pk for x in s.query(bridged, index="by_rank", rank=42).all()] == ["L#1"]


@pytest.mark.dynaorm_index_lag(0, reason="checks its own writes through a global index")
def test_async_query_of_a_native_index(nb: TestBackend, request: pytest.FixtureRequest) -> None:
    if engine_of(request) != "local":
        pytest.skip("an AsyncSession over HTTP, with a partial sort key: DynamoDB Local")
    import asyncio

    from dynaorm import AsyncSession

    _orders(nb)

    async def main() -> list[str]:
        q = AsyncSession(native).query(Order, index="by_place", tenant_id="acme", region="eu")
        return [o.order_id for o in await q.gte(created=T0.replace(day=2)).all()]

    assert asyncio.run(main()) == ["o2", "o3", "o4"]


def test_adding_a_native_index_to_an_existing_table(backend: str | None,
                                                   request: pytest.FixtureRequest) -> None:
    """create() on a table that exists adds the native index (UpdateTable with every key
    attribute); the items already stored are in it without any write of dynaorm's."""
    if engine_of(request) == "dynoxide":
        pytest.skip("dynoxide 1.2 refuses two HASH attributes without a RANGE one")
    before = Table("native_grow")
    after = Table("native_grow", indexes=[GSI("by_pair", pk=("tenant_id", "region"))])

    class Early(Entity):
        class Meta:
            table = before
            pk = "E#{e}"
            sk = "E"

        e: str
        tenant_id: str
        region: str

    with use_tables(before, endpoint_url=backend, name_suffix=worker_suffix(),
                    wire=wire_of(request)) as tb:
        s = tb.session()
        s.save_many([Early(e="1", tenant_id="t", region="r"), Early(e="2", tenant_id="t",
                                                                    region="x")])
        after.name, after.endpoint_url = before.name, before.endpoint_url
        after.create(wait=60)
        assert after.index_status() == {"by_pair": "ACTIVE"}

        class Early(Entity):  # type: ignore[no-redef]  # (the next release's: it replaces)
            class Meta:
                table = after
                pk = "E#{e}"
                sk = "E"

            e: str
            tenant_id: str
            region: str

        found = tb.session(after).query(Early, index="by_pair", tenant_id="t", region="r")
        assert [x.e for x in found.all()] == ["1"]


def test_an_index_keyed_otherwise_than_declared_is_mismatched(
        backend: str | None, request: pytest.FixtureRequest) -> None:
    """A template index still in the table under the name a native one now declares (the
    move done in place) is reported, not taken for the declared index."""
    if engine_of(request) == "dynoxide":
        pytest.skip("dynoxide 1.2 refuses two HASH attributes without a RANGE one")
    old = Table("native_moved", indexes=[GSI("by_pair", pk="gpk", sk="gsk")])
    new = Table("native_moved", indexes=[GSI("by_pair", pk=("tenant_id", "region"))])
    with use_tables(old, endpoint_url=backend, name_suffix=worker_suffix(),
                    wire=wire_of(request)):
        assert old.index_status() == {"by_pair": "ACTIVE"}
        new.name, new.endpoint_url = old.name, old.endpoint_url
        assert new.index_status() == {"by_pair": "MISMATCHED"}
        new.create(wait=5)  # does not try to add it again, nor pretend it is there
        assert new.index_status() == {"by_pair": "MISMATCHED"}


# -- found by a first service (issue 50) ----------------------------------------------------
@pytest.mark.dynaorm_index_lag(0, reason="checks its own writes through a global index")
def test_datetimes_in_native_keys_are_stored_in_utc_and_naive_ones_refused(
        nb: TestBackend, request: pytest.FixtureRequest) -> None:
    """(0.6, contract 21) A datetime keying a native index is stored in UTC, as key
    templates store it, so the index orders by instant; a naive one is refused before
    sending (save, update, query). 0.5 stored each with the offset it came with (ordered
    by text: 12:00+05:00 after 08:00+00:00) and took naive ones."""
    _partial_sort(request)
    plus5 = timezone(timedelta(hours=5))
    s = nb.session()
    s.save(Order(order_id="late", tenant_id="t", region="eu", rank=1,
                 created=datetime(2026, 1, 1, 8, tzinfo=UTC)))
    s.save(Order(order_id="early", tenant_id="t", region="eu", rank=1,
                 created=datetime(2026, 1, 1, 12, tzinfo=plus5)))  # 07:00 UTC
    s.commit()
    assert sorted(i["created"]["S"] for i in nb.scan_raw()) == [
        "2026-01-01T07:00:00+00:00", "2026-01-01T08:00:00+00:00"]
    q = s.query(Order, index="by_place", tenant_id="t", region="eu")
    assert ids(q.all()) == ["early", "late"]
    assert ids(q.lt(created=datetime(2026, 1, 1, 12, 30, tzinfo=plus5)).all()) == ["early"]
    assert ids(s.query(Order, index="by_place", tenant_id="t", region="eu", created=datetime(
        2026, 1, 1, 4, tzinfo=timezone(timedelta(hours=-4)))).all()) == ["late"]
    assert s.get(Order, order_id="early").created == datetime(2026, 1, 1, 7, tzinfo=UTC)
    before = nb.scan_raw()
    naive = datetime(2026, 1, 1, 9)
    with pytest.raises(InvalidValueError, match=r"Order field 'created'.*naive"):
        s.save(Order(order_id="n", tenant_id="t", region="eu", rank=1, created=naive))
        s.commit()
    with pytest.raises(InvalidValueError, match=r"created.*naive"):
        s.update(Order, order_id="late").set(created=naive)
        s.commit()
    with pytest.raises(KeyTemplateError, match=r"created.*naive"):
        q.gte(created=naive).all()
    assert nb.scan_raw() == before
    nb.table.client.put_item(TableName=nb.table.name, Item={  # as 0.5 stored it
        **next(i for i in before if i["order_id"]["S"] == "early"),
        "created": {"S": "2026-01-01T12:00:00+05:00"}})
    report = run_local(backfill(Order, lambda order: order, name="utc-keys"))
    assert report.changed == 2 and sorted(i["created"]["S"] for i in nb.scan_raw()) == [
        "2026-01-01T07:00:00+00:00", "2026-01-01T08:00:00+00:00"]


def test_an_optional_native_attribute_must_default_to_none() -> None:
    """(0.6) An Optional field keying a native index whose ``None`` would be stored as NULL
    (a non-None default, or required) is refused when the class is defined: DynamoDB
    refuses a NULL index key attribute (moto indexed it, and dynaorm then refused its own
    cursor), and leaving it out would read back as the default. With the default
    ``None`` the item leaves the index (see test_optional_attributes_are_sparse)."""
    for annotation, default in (("str | None", "'open'"), ("str | None", "...")):
        with pytest.raises(DynaormError, match=r"Held.state: None cannot be stored in "
                                               r"native index key attribute 'state'"):
            exec(f"""
class Held(Entity):
    class Meta:
        table = native
        pk = "H#{{h}}"
        sk = "H"

    h: str
    state: {annotation} = {default}
""", {"Entity": Entity, "native": native})


def test_native_definitions_name_the_key_type_and_accept_pydantic_times() -> None:
    """(0.6) A field of a number (or binary) type on a string attribute is refused with the
    ``key_types`` to declare; pydantic's datetime types (``AwareDatetime``) are times, as
    a ``datetime`` is (0.5 refused both as "not S")."""
    typed = Table("native_types", indexes=[GSI("by_when", pk=("kind",), sk=("when",))])
    with pytest.raises(DynaormError, match=r"Counted.when stores N, but native index key "
                                           r"attribute 'when' is S; Table\(key_types="
                                           r"\{'when': 'N'\}\)"):
        class Counted(Entity):
            class Meta:
                table = typed
                pk = "C#{c}"
                sk = "C"

            c: str
            kind: str
            when: int

    class Aware(Entity):
        class Meta:
            table = typed
            pk = "A#{a}"
            sk = "A"

        a: str
        kind: str
        when: AwareDatetime

    from dynaorm.schema.entity import spec_of

    assert spec_of(Aware).kinds["when"].name == "utc time"


def test_a_refused_native_query_names_the_fields_it_takes_and_the_one_it_got(
        nb: TestBackend) -> None:
    """(0.6, contract 21) The refusal names the Python names a query takes (``region``,
    not its stored name ``place``) and the unknown name it was given (0.5 named neither)."""
    with pytest.raises(KeyTemplateError, match=r"takes \['tenant_id', 'region'\], a leading "
                                               r"run of \['created', 'rank', 'state'\].*"
                                               r"not among them: \['colour'\]"):
        nb.session().query(Order, index="by_place", tenant_id="acme", colour="red").all()


def test_describe_lists_a_native_index_only_under_entities_that_can_be_in_it() -> None:
    """(0.6) An item is in a native index only with every one of its attributes: 0.5
    listed the index under every entity holding its partition attributes."""
    from dynaorm.cli.main import describe_entity
    from dynaorm.schema.entity import spec_of

    pairs = Table("native_describe", indexes=[GSI("by_pair", pk=("a",), sk=("b",))])

    class Both(Entity):
        class Meta:
            table = pairs
            pk = "B#{k}"
            sk = "B"

        k: str
        a: str
        b: str

    class OnlyA(Entity):
        class Meta:
            table = pairs
            pk = "O#{k}"
            sk = "O"

        k: str
        a: str

    assert "by_pair" in "\n".join(describe_entity(spec_of(Both)))
    assert "by_pair" not in "\n".join(describe_entity(spec_of(OnlyA)))
