"""The PynamoDB bridge (``dynaorm.pynamodb``, contract 18): an entity made from a PynamoDB
``Model`` reads and writes exactly that model's items. Every test writes with one side and
reads with the other, on every engine (moto, DynamoDB Local, dynoxide): PynamoDB talks to
the same endpoint as dynaorm (its ``Meta.host`` / ``Meta.region`` are pointed there)."""

from __future__ import annotations

import contextlib
import importlib
import sys
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest
from pydantic import BaseModel

pytest.importorskip("pynamodb")

from pynamodb.attributes import (
    Attribute,
    BinaryAttribute,
    BinarySetAttribute,
    BooleanAttribute,
    DiscriminatorAttribute,
    JSONAttribute,
    ListAttribute,
    MapAttribute,
    NumberAttribute,
    NumberSetAttribute,
    TTLAttribute,
    UnicodeAttribute,
    UnicodeSetAttribute,
    UTCDateTimeAttribute,
    VersionAttribute,
)
from pynamodb.exceptions import DeleteError, PutError, UpdateError
from pynamodb.indexes import (
    AllProjection,
    GlobalSecondaryIndex,
    IncludeProjection,
    KeysOnlyProjection,
    LocalSecondaryIndex,
)
from pynamodb.models import Model

from dynaorm import GSI, ConditionFailedError, DynaormError, F, Table
from dynaorm.client.settings import local_credentials
from dynaorm.pynamodb import (
    PynamoDBEntity,
    entity_from_pynamodb,
    table_from_pynamodb,
    utc_datetime_string,
    versioned_delete,
    versioned_save,
    versioned_update,
)
from dynaorm.testing import TestBackend, use_tables, worker_suffix

NOW = datetime(2024, 1, 2, 3, 4, 5, 6789, tzinfo=UTC)
FAR = datetime(2090, 1, 1, tzinfo=UTC)  # a TTL that has not passed


# -- the PynamoDB side ---------------------------------------------------------------------
class Location(MapAttribute[str, Any]):
    lat = NumberAttribute()
    lng = NumberAttribute(attr_name="LNG")
    seen = UTCDateTimeAttribute(null=True)
    label = UnicodeAttribute(null=True)


class ViewsIndex(GlobalSecondaryIndex["ThreadModel"]):
    class Meta:
        index_name = "by_views"
        projection = AllProjection()

    forum_name = UnicodeAttribute(hash_key=True)
    views = NumberAttribute(range_key=True)


class ThreadModel(Model):
    """Every attribute type, stored names that differ, a GSI, TTL and a version."""

    class Meta:
        table_name = "pynamodb-threads"

    forum_name = UnicodeAttribute(hash_key=True)
    subject = UnicodeAttribute(range_key=True)
    views = NumberAttribute(default=0)
    replies = NumberAttribute(attr_name="reply_count", null=True)
    score = NumberAttribute(null=True)
    blob = BinaryAttribute(legacy_encoding=False, null=True)
    answered = BooleanAttribute(null=True)
    created = UTCDateTimeAttribute(null=True)
    doc = JSONAttribute(null=True)
    where = Location(null=True)
    extra = MapAttribute[str, Any](null=True)
    tags = UnicodeSetAttribute()
    numbers = NumberSetAttribute()
    blobs = BinarySetAttribute(legacy_encoding=False)
    stops = ListAttribute(of=Location, null=True)
    names = ListAttribute(of=UnicodeAttribute, null=True)
    anything = ListAttribute[Any](null=True)
    expires = TTLAttribute(null=True)
    version = VersionAttribute()
    by_views = ViewsIndex()


class LevelIndex(LocalSecondaryIndex["EventModel"]):
    class Meta:
        index_name = "by_level"
        projection = KeysOnlyProjection()

    device = NumberAttribute(hash_key=True, attr_name="DeviceId")
    level = NumberAttribute(range_key=True)


class DigestIndex(GlobalSecondaryIndex["EventModel"]):
    class Meta:
        index_name = "by_digest"
        projection = IncludeProjection(["note"])

    digest = BinaryAttribute(hash_key=True, legacy_encoding=False)


class EventModel(Model):
    """Typed keys: a number hash key, a datetime range key, an LSI and a binary GSI key."""

    class Meta:
        table_name = "pynamodb-events"

    device = NumberAttribute(hash_key=True, attr_name="DeviceId")
    at = UTCDateTimeAttribute(range_key=True)
    level = NumberAttribute(null=True)
    digest = BinaryAttribute(legacy_encoding=False, null=True)
    note = UnicodeAttribute(null=True)
    by_level = LevelIndex()
    by_digest = DigestIndex()


class PetModel(Model):
    """A polymorphic model: the discriminator is the table's type attribute."""

    class Meta:
        table_name = "pynamodb-pets"

    owner = UnicodeAttribute(hash_key=True)
    name = UnicodeAttribute(range_key=True)
    kind = DiscriminatorAttribute(attr_name="cls")


class CatModel(PetModel, discriminator="cat"):
    lives = NumberAttribute(default=9)


class DogModel(PetModel, discriminator="dog"):
    breed = UnicodeAttribute(null=True)


# -- the dynaorm side ----------------------------------------------------------------------
threads = table_from_pynamodb(ThreadModel)
Thread = entity_from_pynamodb(ThreadModel, table=threads, name="Thread")
events = table_from_pynamodb(EventModel)
Event = entity_from_pynamodb(EventModel, table=events, name="Event")
pets = table_from_pynamodb(PetModel)
Cat = entity_from_pynamodb(CatModel, table=pets, name="Cat")
Dog = entity_from_pynamodb(DogModel, table=pets, name="Dog")

PAIRS: tuple[tuple[tuple[type[Model], ...], Table], ...] = (
    ((ThreadModel,), threads), ((EventModel,), events), ((PetModel, CatModel, DogModel), pets))


@pytest.fixture
def db(backend: str | None, request: pytest.FixtureRequest) -> Iterator[TestBackend]:
    """The three tables, fresh, with the PynamoDB models pointed at the same endpoint (on
    the ``-async`` engines, dynaorm's side runs through an AsyncSession)."""
    saved = [(m, m.Meta.table_name, getattr(m.Meta, "host", None),
              getattr(m.Meta, "region", None)) for models, _ in PAIRS for m in models]
    with use_tables(threads, events, pets, endpoint_url=backend,
                    name_suffix=worker_suffix()) as tb:
        if str(request.node.callspec.params.get("backend", "")).endswith("-async"):
            tb.session_kind = "async"
        credentials = local_credentials(backend)  # dynaorm's identity on that engine
        for models, table in PAIRS:
            for model in models:
                model.Meta.table_name = table.name
                model.Meta.host = backend
                model.Meta.region = table.client.meta.region_name
                for name, value in credentials.items():
                    setattr(model.Meta, name, value)
                model._connection = None  # PynamoDB keeps one per class
        try:
            yield tb
        finally:
            for model, name, host, reg in saved:
                for key in credentials:
                    with contextlib.suppress(AttributeError):
                        delattr(model.Meta, key)
                model.Meta.table_name = name
                model.Meta.host = host
                model.Meta.region = reg
                model._connection = None


def full_thread(subject: str = "bridge") -> ThreadModel:
    return ThreadModel(
        forum_name="dynamo", subject=subject, views=12, replies=3, score=2.5,
        blob=b"\x00\xffraw", answered=True, created=NOW,
        doc={"a": [1, 2, {"b": None}], "c": "text"},
        where=Location(lat=47.5, lng=-122, seen=NOW, label="SEA"),
        extra={"n": 1, "f": 0.25, "s": "x", "nested": {"l": [1, "two"]}},
        tags={"a", "b"}, numbers={1, 2.5}, blobs={b"\x01", b"\x02"},
        stops=[Location(lat=1, lng=2), Location(lat=3.5, lng=4, label="B")],
        names=["ann", "bob"], anything=[1, "x", True, {"k": "v"}], expires=FAR)


def thread_values(t: ThreadModel) -> dict[str, Any]:
    """What a PynamoDB object holds, maps as plain dicts."""
    out: dict[str, Any] = {}
    for name in ThreadModel.get_attributes():
        value = getattr(t, name)
        if isinstance(value, MapAttribute):
            value = value.as_dict()
        if isinstance(value, list):
            value = [v.as_dict() if isinstance(v, MapAttribute) else v for v in value]
        out[name] = value
    return out


def entity_values(obj: Any) -> dict[str, Any]:
    """What a bridged object holds (Python names), nested models as dicts without their
    ``None`` values (as PynamoDB's ``as_dict``)."""
    def plain(value: Any) -> Any:
        if isinstance(value, BaseModel):
            return {k: v for k, v in value.__dict__.items() if v is not None}
        if isinstance(value, list):
            return [plain(v) for v in value]
        return value

    return {name: plain(value) for name, value in obj.__dict__.items()}


def _sorted_sets(av: dict[str, Any]) -> dict[str, Any]:
    kind, value = next(iter(av.items()))
    return {kind: sorted(value)} if kind in ("SS", "NS", "BS") else av


def raw_without(tb: TestBackend, table: Table, *drop: str) -> list[dict[str, Any]]:
    """The stored items, ``drop`` left out, sets in order (DynamoDB keeps none)."""
    return [{k: _sorted_sets(v) for k, v in item.items() if k not in drop}
            for item in tb.scan_raw(table)]


# -- definitions (pure) ---------------------------------------------------------------------
def by_name(d: dict[str, Any]) -> str:
    return str(d["AttributeName"])


def test_the_table_is_the_models_table() -> None:
    """Keys, key types, indexes and projections are those PynamoDB would create."""
    for models, table in PAIRS:
        schema = models[0]._get_schema()
        definition = table.definition()
        assert sorted(definition["KeySchema"], key=by_name) == sorted(
            schema["key_schema"], key=by_name)
        assert sorted(definition["AttributeDefinitions"], key=by_name) == sorted(
            schema["attribute_definitions"], key=by_name)
        for kind, theirs in (("GlobalSecondaryIndexes", "global_secondary_indexes"),
                             ("LocalSecondaryIndexes", "local_secondary_indexes")):
            ours = {i["IndexName"]: (sorted(i["KeySchema"], key=by_name),
                                     i["Projection"]["ProjectionType"])
                    for i in definition.get(kind, [])}
            assert ours == {i["index_name"]: (sorted(i["key_schema"], key=by_name),
                                              i["projection"]["ProjectionType"])
                            for i in schema[theirs]}
    assert threads.ttl == "expires" and threads.type_attribute is None
    assert pets.type_attribute == "cls"
    assert events.key_types == {"DeviceId": "N", "level": "N", "digest": "B"}


def test_fields_keep_python_names_and_store_attr_names() -> None:
    t = Thread(forum_name="f", subject="s", replies=1)
    assert t.replies == 1
    assert Thread.model_fields["replies"].alias == "reply_count"
    assert Thread(forum_name="f", subject="s", reply_count=2).replies == 2
    assert issubclass(Thread, PynamoDBEntity) and Thread.__pynamodb_model__ is ThreadModel
    assert Thread.__pynamodb_version__ == "version"
    assert set(Thread.model_fields) == set(ThreadModel.get_attributes())
    assert "kind" not in Cat.model_fields  # the discriminator is the type attribute


def test_json_text_and_datetime_strings() -> None:
    t = Thread(forum_name="f", subject="s", doc='{"a": 1}', created="2024-01-02T03:04:05"
               ".000006+0000")
    assert t.doc == {"a": 1}  # a str given to a JSON field is JSON text
    assert t.created == datetime(2024, 1, 2, 3, 4, 5, 6, tzinfo=UTC)
    assert Thread(forum_name="f", subject="s", created=datetime(2024, 1, 1)).created == (
        datetime(2024, 1, 1, tzinfo=UTC))  # naive means UTC, as PynamoDB says
    assert utc_datetime_string(NOW) == "2024-01-02T03:04:05.006789+0000"
    assert utc_datetime_string(NOW) == UTCDateTimeAttribute().serialize(NOW)


def test_legacy_binary_is_refused() -> None:
    class Legacy(Model):
        class Meta:
            table_name = "legacy"

        k = UnicodeAttribute(hash_key=True)
        data = BinaryAttribute(legacy_encoding=True)

    with pytest.raises(DynaormError, match="legacy_encoding"):
        entity_from_pynamodb(Legacy)


def test_legacy_binary_of_a_subclass_a_registered_kind_names_is_refused(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A ``BinaryAttribute`` subclass a registered kind names, with ``legacy_encoding``:
    its items hold base64 inside the binary, which the kind would read as its bytes."""
    from dynaorm.codec import register, stored_as
    from dynaorm.values import codec

    monkeypatch.setattr(codec, "_KINDS", codec._KINDS)  # (the registration undone after)
    class Token(bytes):
        pass

    register(stored_as(Token, bytes, to=bytes, back=Token, pynamodb=("SkuBytesAttribute",)))

    class SkuBytesAttribute(BinaryAttribute):
        pass

    class Legacy(Model):
        class Meta:
            table_name = "legacy"

        k = UnicodeAttribute(hash_key=True)
        data = SkuBytesAttribute(legacy_encoding=True)

    with pytest.raises(DynaormError, match="legacy_encoding"):
        entity_from_pynamodb(Legacy, name="LegacySku")


def test_a_custom_attribute_needs_a_field_of_its_own() -> None:
    class Upper(Attribute[str]):
        attr_type = "S"

        def serialize(self, value: str) -> str:
            return value.upper()

        def deserialize(self, value: str) -> str:
            return value.lower()

    class Custom(Model):
        class Meta:
            table_name = "custom"

        k = UnicodeAttribute(hash_key=True)
        shout = Upper()

    with pytest.raises(DynaormError, match="Upper has its own encoding"):
        entity_from_pynamodb(Custom)
    Bridged = entity_from_pynamodb(Custom, name="CustomBridged", fields={"shout": str})
    assert Bridged(k="a", shout="x").shout == "x"
    with pytest.raises(DynaormError, match="not attributes"):
        entity_from_pynamodb(Custom, name="CustomBridged2", fields={"shout": str, "nope": str})


def test_a_custom_attribute_a_registered_kind_names_maps_to_that_kind() -> None:
    # Money is registered once (tests/support/money.py), naming PynamoDB's MoneyAttribute:
    # the bridge maps such an attribute to a Money field, stored alike on both sides
    from tests.support.money import Money

    class MoneyAttribute(NumberAttribute):  # PynamoDB's own Money: its cents
        def serialize(self, value: Money) -> str:
            return str(super().serialize(value.cents))

        def deserialize(self, value: str) -> Money:
            return Money(super().deserialize(value))

    class Shop(Model):
        class Meta:
            table_name = "shop"

        k = UnicodeAttribute(hash_key=True)
        price = MoneyAttribute()

    Bridged = entity_from_pynamodb(Shop, name="ShopBridged")
    assert Bridged.model_fields["price"].annotation is Money
    assert Bridged(k="a", price=Money(1250)).to_pynamodb().price == Money(1250)
    assert Bridged.from_pynamodb(Shop(k="b", price=Money(7))).price == Money(7)
    assert Shop(k="b", price=Money(7)).serialize()["price"] == {"N": "7"}


class Sku:
    """A code of the test's own, stored as a string (registered below)."""

    def __init__(self, code: str) -> None:
        self.code = code

    def __eq__(self, other: object) -> bool:
        return type(other) is Sku and other.code == self.code

    def __hash__(self) -> int:
        return hash(self.code)


def test_a_registered_kind_naming_a_subclass_of_pynamodbs_own_attribute_wins(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A kind registered for ``SkuAttribute``, a subclass of ``UnicodeAttribute`` keeping
    its encoding, or for ``UnicodeAttribute`` itself: its attributes map to that kind
    (registered ahead of every kind), not to the ``str`` the bridge gives PynamoDB's own."""
    from dynaorm.codec import register, stored_as
    from dynaorm.values import codec

    monkeypatch.setattr(codec, "_KINDS", codec._KINDS)  # (the registrations undone after;
    # stored_as gives Sku its pydantic schema once: no other test registers it)

    class SkuAttribute(UnicodeAttribute):
        pass

    class Shop(Model):
        class Meta:
            table_name = "shop"

        k = NumberAttribute(hash_key=True)
        sku = SkuAttribute()
        name = UnicodeAttribute()

    register(stored_as(Sku, str, to=lambda s: s.code, back=Sku, pynamodb=("SkuAttribute",)))
    Bridged = entity_from_pynamodb(Shop, name="SkuShopBridged")
    assert Bridged.model_fields["sku"].annotation is Sku
    assert Bridged.model_fields["name"].annotation is str
    assert Bridged(k=1, sku=Sku("A-1"), name="n").to_pynamodb().sku == "A-1"
    register(stored_as(Sku, str, to=lambda s: s.code, back=Sku,
                       pynamodb=("UnicodeAttribute",)))
    Bridged = entity_from_pynamodb(Shop, name="SkuShopBridged2")
    assert Bridged.model_fields["name"].annotation is Sku


def test_models_the_bridge_cannot_map_are_refused() -> None:
    class Shape(MapAttribute[str, Any]):
        kind = DiscriminatorAttribute()

    class Drawing(Model):
        class Meta:
            table_name = "drawings"

        k = UnicodeAttribute(hash_key=True)
        shape = Shape()

    with pytest.raises(DynaormError, match="polymorphic maps"):
        entity_from_pynamodb(Drawing)

    class Flagged(Model):
        class Meta:
            table_name = "flagged"

        k = BooleanAttribute(hash_key=True)

    with pytest.raises(DynaormError, match="cannot be a DynamoDB key"):
        table_from_pynamodb(Flagged)

    class Keyless(Model):
        class Meta:
            table_name = "keyless"

        k = UnicodeAttribute()

    with pytest.raises(DynaormError, match="has no hash key"):
        table_from_pynamodb(Keyless)

    class WrongIndex(GlobalSecondaryIndex["Indexed"]):
        class Meta:
            index_name = "by_b"
            projection = AllProjection()

        b = UnicodeAttribute(hash_key=True)  # the model stores it as "B"

    class Indexed(Model):
        class Meta:
            table_name = "indexed"

        k = UnicodeAttribute(hash_key=True)
        b = UnicodeAttribute(attr_name="B")
        by_b = WrongIndex()

    with pytest.raises(DynaormError, match="index 'by_b' key 'b' is no attribute"):
        entity_from_pynamodb(Indexed, table=Table("indexed", pk="k", sk=None,
                                                  type_attribute=None,
                                                  indexes=[GSI("by_b", pk="b")]))


def test_a_table_of_another_layout_is_refused() -> None:
    with pytest.raises(DynaormError, match="its keys are"):
        entity_from_pynamodb(ThreadModel, table=Table("other"), name="T1")
    with pytest.raises(DynaormError, match="discriminator attribute is None"):
        entity_from_pynamodb(ThreadModel, table=Table("ttt", pk="forum_name", sk="subject"),
                             name="T2")
    with pytest.raises(DynaormError, match="TTL attribute"):
        entity_from_pynamodb(ThreadModel, name="T3", table=Table(
            "ttt", pk="forum_name", sk="subject", type_attribute=None))
    with pytest.raises(DynaormError, match="no value of its own"):
        entity_from_pynamodb(PetModel, table=pets, name="AnyPet")


def test_without_pynamodb_the_import_names_the_extra(monkeypatch: pytest.MonkeyPatch
                                                     ) -> None:
    monkeypatch.delitem(sys.modules, "dynaorm.pynamodb")
    monkeypatch.setitem(sys.modules, "pynamodb.attributes", None)
    with pytest.raises(ImportError, match=r"pip install 'dynaorm\[pynamodb\]'"):
        importlib.import_module("dynaorm.pynamodb")


# -- round trips on the engines ------------------------------------------------------------
def test_pynamodb_writes_dynaorm_reads_equal(db: TestBackend) -> None:
    written = full_thread()
    written.save()
    s = db.session()
    got = s.get(Thread, forum_name="dynamo", subject="bridge")
    assert got is not None
    theirs = thread_values(ThreadModel.get("dynamo", "bridge"))
    assert entity_values(got) == theirs
    assert got.version == 1 and got.where.lng == -122 and got.created == NOW
    assert got.expires == FAR and got.blob == b"\x00\xffraw" and got.numbers == {1, 2.5}


def test_dynaorm_writes_pynamodb_reads_equal(db: TestBackend) -> None:
    obj = Thread.from_pynamodb(full_thread("mine"))
    versioned_save(s := db.session(), obj)
    s.commit()
    theirs = ThreadModel.get("dynamo", "mine", consistent_read=True)
    assert theirs.version == 1
    assert thread_values(theirs) == entity_values(obj)
    assert theirs.to_simple_dict(force=True) == obj.to_pynamodb().to_simple_dict(force=True)


def test_both_sides_store_the_same_item(db: TestBackend) -> None:
    """The same values written by each side are the same stored item, attribute for
    attribute (PynamoDB's encoding: datetime strings, JSON text, attr_names, sets)."""
    full_thread("theirs").save()
    mine = Thread.from_pynamodb(full_thread("mine"))
    versioned_save(s := db.session(), mine)
    s.commit()
    items = raw_without(db, threads, "subject")
    # (0.5: dynaorm's row carries the revision every dynaorm write stamps; PynamoDB's not)
    assert [bool(i.pop("_rev", None)) for i in items].count(True) == 1
    theirs_item, mine_item = items
    assert mine_item == theirs_item
    assert mine_item["created"] == {"S": "2024-01-02T03:04:05.006789+0000"}
    assert mine_item["doc"]["S"].startswith("{") and "reply_count" in mine_item
    assert mine_item["where"]["M"]["LNG"] == {"N": "-122"}


def test_round_trip_pynamodb_dynaorm_pynamodb(db: TestBackend) -> None:
    full_thread().save()
    s = db.session()
    t = s.get(Thread, forum_name="dynamo", subject="bridge")
    assert t is not None
    t.views = 13
    t.tags = t.tags | {"c"}
    t.where.label = "PDX"
    t.stops.append(t.stops[0])
    t.doc = {"changed": True}
    t.numbers = set()  # PynamoDB stores no empty set: the attribute goes
    versioned_save(s, t)
    s.commit()
    assert t.version == 2
    back = ThreadModel.get("dynamo", "bridge", consistent_read=True)
    assert back.views == 13 and back.tags == {"a", "b", "c"} and back.version == 2
    assert back.where.label == "PDX" and len(back.stops) == 3 and back.doc == {"changed": True}
    assert back.numbers is None
    back.views = 14
    back.save()  # PynamoDB's own optimistic lock passes: dynaorm moved the version
    again = s.get(Thread, forum_name="dynamo", subject="bridge", consistent=True)
    assert again is not None and again.views == 14 and again.version == 3


def test_stored_names_in_filters_and_updates(db: TestBackend) -> None:
    full_thread().save()
    s = db.session()
    found = s.query(Thread, forum_name="dynamo").filter(F("replies") == 3).all()
    assert [t.subject for t in found] == ["bridge"]
    t = found[0]
    versioned_update(s, t).add(replies=2)
    s.commit()
    back = ThreadModel.get("dynamo", "bridge", consistent_read=True)
    assert back.replies == 5 and back.version == 2
    found = s.query(Thread, forum_name="dynamo").filter(
        F("created") == utc_datetime_string(NOW)).all()
    assert len(found) == 1


@pytest.mark.dynaorm_index_lag(0, reason="checks its own writes through a global index")
def test_queries_on_a_gsi_both_ways(db: TestBackend) -> None:
    for n, views in enumerate((5, 50, 500)):
        ThreadModel(forum_name="dynamo", subject=f"p{n}", views=views, tags={"x"}).save()
    s = db.session()
    for n, views in enumerate((7, 70)):
        versioned_save(s, Thread(forum_name="dynamo", subject=f"d{n}", views=views))
    s.commit()
    ours = s.query(Thread, index="by_views", forum_name="dynamo").gt(views=6).all()
    assert [(t.subject, t.views) for t in ours] == [
        ("d0", 7), ("p1", 50), ("d1", 70), ("p2", 500)]
    theirs = ThreadModel.by_views.query("dynamo", ThreadModel.views > 6)
    assert [(t.subject, t.views) for t in theirs] == [(t.subject, t.views) for t in ours]


@pytest.mark.dynaorm_index_lag(0, reason="checks its own writes through a global index")
def test_typed_keys_lsi_and_binary_gsi(db: TestBackend) -> None:
    EventModel(device=7, at=NOW, level=3, digest=b"\x01\x02", note="a").save()
    EventModel(device=7, at=NOW + timedelta(seconds=1), level=1).save()
    s = db.session(events)
    s.save(Event(device=7, at=NOW + timedelta(seconds=2), level=2, digest=b"\x03", note="b"))
    s.commit()
    raw = db.scan_raw(events)
    assert {item["DeviceId"]["N"] for item in raw} == {"7"}
    assert raw[2]["at"] == {"S": utc_datetime_string(NOW + timedelta(seconds=2))}
    got = s.get(Event, device=7, at=NOW)
    assert got is not None and got.level == 3 and got.digest == b"\x01\x02"
    by_level = s.query(Event, index="by_level", device=7).all()
    assert [e.level for e in by_level] == [1, 2, 3]
    assert [e.level for e in EventModel.by_level.query(7)] == [1, 2, 3]
    [mine] = s.query(Event, index="by_digest", digest=b"\x03").all()
    assert mine.note == "b"
    [theirs] = EventModel.by_digest.query(b"\x03")
    assert theirs.note == "b" and theirs.at == NOW + timedelta(seconds=2)
    assert [e.at for e in s.query(Event, device=7).gte(at=NOW + timedelta(seconds=1))] == [
        NOW + timedelta(seconds=1), NOW + timedelta(seconds=2)]


def test_polymorphic_models_are_type_names(db: TestBackend) -> None:
    CatModel(owner="ann", name="tom").save()
    DogModel(owner="ann", name="rex", breed="lab").save()
    s = db.session(pets)
    s.save(Dog(owner="ann", name="fido"))
    s.save(Cat(owner="ann", name="kit", lives=3))
    s.commit()
    ours = s.query(Cat, Dog, owner="ann").all()
    assert [(type(p).__name__, p.name) for p in ours] == [
        ("Dog", "fido"), ("Cat", "kit"), ("Dog", "rex"), ("Cat", "tom")]
    theirs = list(PetModel.query("ann"))
    assert [(type(p).__name__, p.name) for p in theirs] == [
        ("DogModel", "fido"), ("CatModel", "kit"), ("DogModel", "rex"), ("CatModel", "tom")]
    assert theirs[1].lives == 3 and ours[3].lives == 9
    assert {item["cls"]["S"] for item in db.scan_raw(pets)} == {"cat", "dog"}


# -- optimistic locking ----------------------------------------------------------------------
def test_dynaorm_save_beats_a_stale_pynamodb_save(db: TestBackend) -> None:
    full_thread().save()
    stale = ThreadModel.get("dynamo", "bridge", consistent_read=True)
    s = db.session()
    t = s.get(Thread, forum_name="dynamo", subject="bridge", consistent=True)
    assert t is not None
    t.views = 100
    versioned_save(s, t)
    s.commit()
    stale.views = 1
    with pytest.raises(PutError):
        stale.save()  # conditioned on version 1; dynaorm stored 2
    with pytest.raises(UpdateError):
        stale.update(actions=[ThreadModel.views.set(2)])
    with pytest.raises(DeleteError):
        stale.delete()
    assert ThreadModel.get("dynamo", "bridge", consistent_read=True).views == 100


def test_a_stale_dynaorm_write_fails_after_a_pynamodb_save(db: TestBackend) -> None:
    full_thread().save()
    s = db.session()
    t = s.get(Thread, forum_name="dynamo", subject="bridge", consistent=True)
    assert t is not None
    theirs = ThreadModel.get("dynamo", "bridge", consistent_read=True)
    theirs.answered = False
    theirs.save()  # version 2
    t.views = 1
    versioned_save(s, t)
    with pytest.raises(ConditionFailedError):
        s.commit()
    versioned_save(s, t)  # staged again: still conditioned on the version loaded (1)
    with pytest.raises(ConditionFailedError):
        s.commit()
    versioned_update(s, t).set(views=2)
    with pytest.raises(ConditionFailedError):
        s.commit()
    versioned_delete(s, t)
    with pytest.raises(ConditionFailedError):
        s.commit()
    fresh = s.get(Thread, forum_name="dynamo", subject="bridge", consistent=True)
    assert fresh is not None and fresh.version == 2 and fresh.views == 12
    versioned_delete(s, fresh)
    s.commit()
    assert ThreadModel.count("dynamo") == 0


def test_a_new_object_takes_version_one_and_an_insert_over_it_fails(db: TestBackend
                                                                       ) -> None:
    s = db.session()
    t = Thread(forum_name="dynamo", subject="new")
    assert t.version is None
    versioned_save(s, t)
    s.commit()
    assert t.version == 1
    assert ThreadModel.get("dynamo", "new", consistent_read=True).version == 1
    with pytest.raises(PutError):
        ThreadModel(forum_name="dynamo", subject="new").save()  # version must not exist
    versioned_save(s, Thread(forum_name="dynamo", subject="new"))
    with pytest.raises(ConditionFailedError):  # as PynamoDB's: a version exists
        s.commit()


def test_versioned_helpers_need_a_version_attribute(db: TestBackend) -> None:
    with pytest.raises(DynaormError, match="no PynamoDB VersionAttribute"):
        versioned_save(db.session(pets), Cat(owner="a", name="b"))


def test_an_item_without_a_version_gets_version_one(db: TestBackend) -> None:
    s = db.session()
    s.save(Thread(forum_name="dynamo", subject="plain"))  # a plain save writes no version
    s.commit()
    t = s.get(Thread, forum_name="dynamo", subject="plain", consistent=True)
    assert t is not None and t.version is None
    versioned_update(s, t).add(views=1)
    s.commit()
    back = ThreadModel.get("dynamo", "plain", consistent_read=True)
    assert back.version == 1 and back.views == 1
    versioned_update(s, t).add(views=1)  # t was loaded without a version: now stale
    with pytest.raises(ConditionFailedError):
        s.commit()


# -- TTL ----------------------------------------------------------------------------------
def test_ttl_is_epoch_seconds_both_ways(db: TestBackend) -> None:
    s = db.session()
    versioned_save(s, Thread(forum_name="dynamo", subject="ttl", expires=FAR))
    versioned_save(s, Thread(forum_name="dynamo", subject="soon",
                             expires=timedelta(hours=1)))  # PynamoDB's relative form
    s.commit()
    raw = {item["subject"]["S"]: item for item in db.scan_raw(threads)}
    assert raw["ttl"]["expires"] == {"N": str(int(FAR.timestamp()))}
    assert ThreadModel.get("dynamo", "ttl").expires == FAR
    soon = ThreadModel.get("dynamo", "soon").expires
    assert timedelta(minutes=59) < soon - datetime.now(UTC) <= timedelta(hours=1)
    ThreadModel(forum_name="dynamo", subject="gone",
                expires=datetime(2001, 1, 1, tzinfo=UTC)).save()
    assert ThreadModel.get("dynamo", "gone").expires.year == 2001  # PynamoDB still reads it
    assert s.get(Thread, forum_name="dynamo", subject="gone") is None  # dynaorm skips it
    assert [t.subject for t in s.query(Thread, forum_name="dynamo")] == ["soon", "ttl"]


def test_numbers_read_as_pynamodb_reads_them(db: TestBackend) -> None:
    ThreadModel(forum_name="dynamo", subject="n", score=0.1, views=3,
                extra={"f": 0.1, "i": 2}, numbers={0.1, 3}).save()
    got = db.session().get(Thread, forum_name="dynamo", subject="n")
    assert got is not None
    assert got.score == 0.1 and type(got.score) is float and type(got.views) is int
    assert got.extra == {"f": 0.1, "i": 2} and got.numbers == {0.1, 3}
    assert not any(isinstance(v, Decimal) for v in got.extra.values())
