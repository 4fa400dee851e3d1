"""Values as stored (contract section 2, "Stored item"): every supported type round-trips
through save/get on every engine, with the item shape it is stored as; a None field
round-trips even when leaving it out would reload something else. The codec's own
properties, with no table, are in tests/unit/test_codec.py."""

from __future__ import annotations

import enum
import sys
import types
import uuid
import warnings
from datetime import UTC, date, datetime, timedelta, timezone
from decimal import Decimal
from typing import Annotated, Any

import pytest
from pydantic import BaseModel, Field

from dynaorm import ConditionFailedError, Entity, F, Session, StoredAs, Table
from dynaorm.testing import TestBackend, use_tables
from dynaorm.values.codec import Kind
from tests.support import mocked_aws
from tests.support.models import app

aws_moto = mocked_aws.aws_moto  # (a fixture: moto in process, boto3's clients too)


class NProfile(Entity):
    class Meta:
        table = app
        pk = "NPROFILE#{pid}"
        sk = "P"

    pid: str
    nick: str | None = "anon"          # non-None default
    motto: str | None                  # required, may be None
    bio: str | None = None             # plain optional: omitted when None


def test_none_round_trips_for_every_kind_of_optional_field(db: TestBackend) -> None:
    s = db.session()
    s.save(NProfile(pid="p1", nick=None, motto=None))
    s.commit()
    loaded = s.get(NProfile, pid="p1", consistent=True)
    assert loaded == NProfile(pid="p1", nick=None, motto=None, bio=None)
    (stored,) = [i for i in db.scan_raw() if i["pk"]["S"] == "NPROFILE#p1"]
    assert stored["nick"] == {"NULL": True} and stored["motto"] == {"NULL": True}
    assert "bio" not in stored


def test_setting_a_defaulted_field_to_none_is_written(db: TestBackend) -> None:
    s = db.session()
    s.save(NProfile(pid="p2", motto="carpe diem"))
    s.commit()
    loaded = s.get(NProfile, pid="p2")
    assert loaded is not None and loaded.nick == "anon"
    loaded.nick = None
    s.save(loaded)
    s.commit()
    again = s.get(NProfile, pid="p2", consistent=True)
    assert again is not None and again.nick is None and again.motto == "carpe diem"


# -- every supported type ---------------------------------------------------------------
class Shade(enum.Enum):
    LIGHT = "light"
    DARK = "dark"


class Rank(enum.IntEnum):
    ONE = 1
    TWO = 2


class CodecAddress(BaseModel):
    street: str
    zip: int
    since: date | None = None
    tags: list[str] = Field(default_factory=list)


class CodecThing(Entity):
    class Meta:
        table = app
        pk = "THING#{thing_id}"
        sk = "THING"

    thing_id: str
    address: CodecAddress
    addresses: list[CodecAddress] = Field(default_factory=list)
    numbers: list[int] = Field(default_factory=list)
    mixed: list[Any] = Field(default_factory=list)
    attrs: dict[str, Any] = Field(default_factory=dict)
    counts: dict[str, int] = Field(default_factory=dict)
    names: set[str] = Field(default_factory=set)
    ids: set[int] = Field(default_factory=set)
    price: Decimal = Decimal("0")
    ratio: float = 0.0
    at: datetime | None = None
    naive_at: datetime | None = None
    day: date | None = None
    uid: uuid.UUID | None = None
    shade: Shade = Shade.LIGHT
    rank: Rank = Rank.ONE
    blob: bytes = b""
    maybe: str | None = None
    flag: bool = False
    count: int = 0


def _full_thing(thing_id: str = "t1") -> CodecThing:
    return CodecThing(
        thing_id=thing_id,
        address=CodecAddress(street="1 Main St", zip=98101, since=date(2020, 5, 17),
                             tags=["home"]),
        addresses=[CodecAddress(street="a", zip=1), CodecAddress(street="b", zip=2)],
        numbers=[3, 1, 2, -5, 0],
        mixed=["x", 1, True, None, {"k": [1, "2"]}],
        attrs={"nested": {"deep": {"list": [1, 2, {"x": "y"}]}}, "empty": {}, "none": None},
        counts={"a": 1, "b": 10**20},
        names={"alice", "bob", ""},
        ids={1, 2, 3, 10**15},
        price=Decimal("1234.5678"),
        ratio=0.1,
        at=datetime(2024, 2, 29, 12, 0, 1, 999999, tzinfo=timezone(timedelta(hours=5, minutes=30))),
        naive_at=datetime(2024, 2, 29, 12, 0, 1),
        day=date(1999, 12, 31),
        uid=uuid.UUID("12345678-1234-5678-1234-567812345678"),
        shade=Shade.DARK,
        rank=Rank.TWO,
        blob=bytes(range(256)),
        maybe=None,
        flag=True,
        count=-3,
    )


def test_every_type_round_trips(db: TestBackend) -> None:
    thing = _full_thing()
    s = db.session()
    s.save(thing)
    s.commit()
    loaded = db.session().get(CodecThing, thing_id="t1", consistent=True)
    assert loaded is not None
    assert loaded == thing
    # types come back as declared, not merely equal
    assert isinstance(loaded.price, Decimal)
    assert isinstance(loaded.ratio, float)
    assert isinstance(loaded.uid, uuid.UUID)
    assert loaded.shade is Shade.DARK
    assert loaded.rank is Rank.TWO
    assert isinstance(loaded.blob, bytes)
    assert loaded.at is not None and loaded.at.utcoffset() == timedelta(hours=5, minutes=30)
    assert loaded.naive_at is not None and loaded.naive_at.tzinfo is None
    assert isinstance(loaded.address, CodecAddress)
    assert loaded.names == {"alice", "bob", ""}
    assert loaded.maybe is None


def test_stored_item_shape(db: TestBackend) -> None:
    thing = _full_thing("t2")
    s = db.session()
    s.save(thing)
    s.commit()
    (raw,) = db.scan_raw()
    assert raw["pk"] == {"S": "THING#t2"}
    assert raw["sk"] == {"S": "THING"}
    assert raw["_type"] == {"S": "CodecThing"}
    assert "maybe" not in raw  # None fields are omitted
    assert sorted(raw["names"]["SS"]) == ["", "alice", "bob"]
    assert sorted(int(n) for n in raw["ids"]["NS"]) == [1, 2, 3, 10**15]
    assert raw["price"] == {"N": "1234.5678"}
    assert raw["flag"] == {"BOOL": True}
    assert raw["blob"] == {"B": bytes(range(256))}
    assert raw["shade"] == {"S": "dark"}
    assert raw["rank"] == {"N": "2"}
    assert raw["uid"] == {"S": "12345678-1234-5678-1234-567812345678"}
    assert set(raw["address"]["M"]) == {"street", "zip", "since", "tags"}
    # (0.5) and the row's revision: 16 hex characters, fresh per request
    expected_attrs = {"pk", "sk", "_type", "_rev", *CodecThing.model_fields} - {"maybe"}
    assert set(raw) == expected_attrs
    assert len(raw["_rev"]["S"]) == 16


def test_empty_collections_round_trip(db: TestBackend) -> None:
    thing = CodecThing(thing_id="t3", address=CodecAddress(street="", zip=0))
    s = db.session()
    s.save(thing)
    s.commit()
    loaded = db.session().get(CodecThing, thing_id="t3", consistent=True)
    assert loaded == thing
    assert loaded is not None and loaded.names == set() and loaded.ids == set()


def test_updates_of_collections_round_trip(db: TestBackend) -> None:
    thing = _full_thing("t4")
    s = db.session()
    s.save(thing)
    s.commit()
    thing.names = {"carol"}
    thing.ids = set()
    thing.attrs["nested"]["deep"]["list"].append(4)
    thing.maybe = "now set"
    thing.at = None
    s.save(thing)
    s.commit()
    loaded = db.session().get(CodecThing, thing_id="t4", consistent=True)
    assert loaded == thing
    (raw,) = db.scan_raw()
    assert "at" not in raw


class LooseMap(Entity):
    class Meta:
        table = app
        pk = "LOOSEMAP#{lid}"
        sk = "L"

    lid: str
    data: dict[Any, Any] = Field(default_factory=dict)


def test_a_map_with_non_string_keys_is_refused_before_sending(db: TestBackend) -> None:
    # (0.4) {1: "a", "1": "b"} was stored as {"1": "b"}; (2, 3), None and b"k" keys
    # became strings. Now nothing is sent, by save, save_many or update.
    from dynaorm import InvalidValueError

    s = db.session()
    for bad in ({1: "a", "1": "b"}, {(2, 3): "x"}, {None: "x"}, {b"k": "x"}):
        s.save(LooseMap(lid="m1", data=bad))
        with pytest.raises(InvalidValueError, match="map key"):
            s.commit()
        s.rollback()
        with pytest.raises(InvalidValueError, match="map key"):
            s.save_many([LooseMap(lid="m2", data=bad)])
    assert [i for i in db.scan_raw() if i["pk"]["S"].startswith("LOOSEMAP#")] == []


# -- a type of your own, registered once (tests/support/money.py) ------------------------
def test_a_registered_type_is_saved_read_both_ways_updated_and_compared(
        db: TestBackend) -> None:
    # Money (whole cents) is registered once, as stored like an int: nothing else of
    # dynaorm knows it, yet every path below takes it
    from dynaorm import ConditionFailedError, F
    from dynaorm.schema.entity import _fast, _load, _validator, spec_of
    from tests.support.money import Money, Priced, PricedChecked

    s = db.session()
    s.save(Priced(sku="a", price=Money(1250), was=Money(1500)))
    s.save(Priced(sku="b", price=Money(99)))
    s.commit()
    raw = {i["pk"]["S"]: i for i in db.scan_raw() if i["pk"]["S"].startswith("PRICED#")}
    assert raw["PRICED#a"]["price"] == {"N": "1250"} and raw["PRICED#a"]["was"] == {"N": "1500"}
    assert "was" not in raw["PRICED#b"]
    # read back: an item holding every field through the fast way (from the wire form),
    # one that leaves a field out the plain way; both the objects decoding gives
    spec = spec_of(Priced)
    fast = _fast(Priced, spec)
    assert fast is not None
    assert fast[0](raw["PRICED#a"]) == Priced(sku="a", price=Money(1250), was=Money(1500))
    with pytest.raises(ValueError):  # (a pydantic ValidationError: the plain way takes it)
        fast[0](raw["PRICED#b"])
    for item in raw.values():
        plain = _load(Priced, spec, item, _validator(Priced))
        assert _load(Priced, spec, item, _validator(Priced), fast[0]) == plain
    got = db.session().get(Priced, sku="a", consistent=True)
    assert got == Priced(sku="a", price=Money(1250), was=Money(1500))
    assert got is not None and type(got.price) is Money
    assert db.session().query(Priced, sku="b").all() == [Priced(sku="b", price=Money(99))]
    # compared in filters and conditions, as numbers
    assert db.session().query(Priced, sku="a").filter(F("price") > Money(1000)).all() == [got]
    assert db.session().query(Priced, sku="b").filter(F("price") > Money(1000)).all() == []
    # updated with add (repeated adds accumulate; onto an absent attribute: from zero)
    u = s.update(Priced, sku="a").add(price=Money(250)).add(price=Money(5)).where(
        F("price") >= Money(1000))
    s.commit()
    assert u.result.price == Money(1505)
    s.update(Priced, sku="b").add(was=Money(7))
    s.commit()
    assert db.session().get(Priced, sku="b", consistent=True) == Priced(
        sku="b", price=Money(99), was=Money(7))
    s.update(Priced, sku="b").set(price=Money(1)).where(F("price") < Money(50))
    with pytest.raises(ConditionFailedError):
        s.commit()
    s.rollback()
    # a loaded object changed and saved under a condition on the type
    got.was = None
    s.save(got, condition=F("price") == Money(1505))
    s.commit()
    assert db.session().get(Priced, sku="a", consistent=True) == Priced(
        sku="a", price=Money(1505))
    # the update that reads first (a rule across fields) adds in Python, alike
    s.save(PricedChecked(sku="c", price=Money(10)))
    s.commit()
    u2 = s.update(PricedChecked, sku="c").add(price=Money(5), was=Money(3))
    s.commit()
    assert u2.result == PricedChecked(sku="c", price=Money(15), was=Money(3))
    assert db.session().get(PricedChecked, sku="c", consistent=True) == u2.result


# -- a field-level kind (contract 21, "Every write validated") ------------------------------
#: a kind of ints stored as zero-padded text (a table another tool designed this way)
PADDED = Kind("padded", (int,), "S", lambda v: {"S": f"{v:08d}"})


class Ticket(Entity):
    class Meta:
        table = app
        pk = "TICKET#{tid}"
        sk = "T"

    tid: str
    seat: Annotated[int, PADDED]
    row: int = 0


def test_a_field_level_kind_is_honoured_on_every_write_and_read_path(db: TestBackend) -> None:
    """A ``Kind`` in a field's ``Annotated`` metadata decides how that field is stored,
    whatever the value's class: on save, update and conditions (as a string, not ``N``),
    and every read path gives the int back (get, query, values, scan, filters)."""
    s = db.session()
    s.save(Ticket(tid="t1", seat=7))
    s.save(Ticket(tid="t2", seat=12))
    s.commit()
    stored = {i["pk"]["S"]: i for i in db.scan_raw() if i["pk"]["S"].startswith("TICKET#")}
    assert stored["TICKET#t1"]["seat"] == {"S": "00000007"}
    assert stored["TICKET#t1"]["row"] == {"N": "0"}  # (other fields as usual)
    assert s.get(Ticket, tid="t1", consistent=True) == Ticket(tid="t1", seat=7)
    assert s.query(Ticket, tid="t2").values("seat") == [{"seat": 12}]
    assert sorted(t.seat for t in s.scan(Ticket).filter(F("seat") == 12).all()) == [12]
    s.update(Ticket, tid="t1").set(seat=8).where(F("seat") == 7)
    s.commit()
    raw = next(i for i in db.scan_raw() if i["pk"]["S"] == "TICKET#t1")
    assert raw["seat"] == {"S": "00000008"}
    loaded = s.get(Ticket, tid="t1", consistent=True)
    assert loaded is not None and loaded.seat == 8
    loaded.seat = 9
    s.save(loaded, condition=F("seat") == 8)
    s.commit()
    assert next(i for i in db.scan_raw() if i["pk"]["S"] == "TICKET#t1")["seat"] == {
        "S": "00000009"}
    with pytest.raises(ConditionFailedError):
        s.update(Ticket, tid="t1").set(row=1).where(F("seat") == 8)  # (it holds 9 now)
        s.commit()


# --- StoredAs times through save, inference and jobs.load
# (moved from system/test_seams_09.py:
# The seams of release 0.9 (contract 24), attacked pair by pair by someone who wrote none
# of them: the round trip and ``StoredAs`` (a), inference (b), leases (c), the public door's
# ``Session.run`` (d), scoped sessions (e), bulk loads (f), offloaded values and keys per
# tenant (g). Each test states what must never happen where two surfaces meet. Nothing here
# depends on the engine: moto only.)

WHEN = datetime(2026, 1, 1, 10, 30, tzinfo=UTC)


EPOCH = str(int(WHEN.timestamp()))


# -- (a) x (b): the model inference prints writes a time as the table stores it -------------
times = Table("seams09_times")


class Visit(Entity):
    """An optional epoch time spelled as pydantic lets one spell it: the ``Annotated``
    inside the ``| None``."""

    class Meta:
        table = times
        pk = "V#{visit_id}"
        sk = "VISIT"

    visit_id: str
    expires: Annotated[datetime, StoredAs.EPOCH_SECONDS] | None = None


@pytest.mark.engines('moto')
@pytest.mark.sync_only
def test_an_optional_stored_as_time_is_written_in_its_format(aws_moto: None) -> None:
    """``Annotated[datetime, StoredAs.EPOCH_SECONDS] | None`` stores a number, as
    ``Annotated[datetime | None, StoredAs.EPOCH_SECONDS]`` does: never ISO text beside
    the other writers' numbers (it did, silently), and reads back, changed or not."""
    with use_tables(times) as b:
        with Session(times) as s:
            s.save(Visit(visit_id="v1", expires=WHEN))
        (item,) = b.scan_raw()
        assert item["expires"] == {"N": EPOCH}
        with Session(times) as s:
            got = s.get(Visit, visit_id="v1")
            assert got is not None and got.expires == WHEN
            got.expires = WHEN + timedelta(seconds=1)
            s.save(got)
        (item,) = b.scan_raw()
        assert item["expires"] == {"N": str(int(WHEN.timestamp()) + 1)}


def _defined(code: str) -> Table:
    module = types.ModuleType(f"seams09_inferred_{uuid.uuid4().hex}")
    sys.modules[module.__name__] = module  # (pydantic resolves annotations through it)
    exec(compile(code, "<inferred>", "exec"), module.__dict__)
    return next(v for v in vars(module).values() if isinstance(v, Table))


@pytest.mark.engines('moto')
@pytest.mark.sync_only
def test_the_inferred_model_of_an_optional_epoch_time_saves_numbers(aws_moto: None) -> None:
    """Inference of a table whose items hold an epoch time on some items only prints an
    optional ``StoredAs`` time; a save through the printed model (a new object, and a
    changed time of a loaded one) stores a number there, never ISO text the table's other
    writers cannot read as their time."""
    import boto3

    from dynaorm.client.infer import infer_code

    with use_tables(times) as b:
        raw = boto3.client("dynamodb", region_name="us-east-1")
        for n in range(6):
            item: dict[str, Any] = {"pk": {"S": f"V#v{n}"}, "sk": {"S": "VISIT"},
                                    "visit_id": {"S": f"v{n}"}}
            if n % 2:
                item["expires"] = {"N": str(int(WHEN.timestamp()) + n)}
            raw.put_item(TableName=times.name, Item=item)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            code, _ = infer_code(times.name, client=raw, report=None)
        assert "StoredAs.EPOCH_SECONDS" in code, code
        table = _defined(code)
        cls = next(iter(table.entities.values()))
        table.connect(None, "us-east-1")
        with Session(table) as s:
            s.save(cls(visit_id="new", expires=WHEN))
            old = s.get(cls, visit_id="v0")
            assert old is not None
            old.expires = WHEN
            s.save(old)
        stored = {i["visit_id"]["S"]: i.get("expires") for i in b.scan_raw()}
        assert stored["new"] == {"N": EPOCH} and stored["v0"] == {"N": EPOCH}, stored


# -- (f) x (a): a bulk load of StoredAs times, loaded and saved back ------------------------
stamped = Table("seams09_stamped")


class Event(Entity):
    class Meta:
        table = stamped
        pk = "T#{tenant_id}#E#{event_id}"
        sk = "EVENT"
        unique = ("ref",)
        versioned = True

    tenant_id: str
    event_id: str
    ref: str
    total: int = 0
    placed: Annotated[datetime, StoredAs.EPOCH_SECONDS] | None = None
    seen: Annotated[datetime | None, StoredAs("%Y/%m/%d %H:%M")] = None


@pytest.mark.engines('moto')
@pytest.mark.sync_only
def test_a_loaded_entity_stores_its_formats_and_a_save_back_keeps_them(aws_moto: None) -> None:
    """``jobs.load`` renders each time in its ``StoredAs`` format (the optional one too),
    as ``save`` does; a loaded object changed elsewhere and saved back keeps both as
    stored, the latest copy and the new version row alike."""
    import boto3

    from dynaorm.jobs import load

    with use_tables(stamped) as b:
        boto3.client("s3").create_bucket(Bucket="seams09-loads")
        report = load(stamped, [Event(tenant_id="acme", event_id=f"e{n}", ref=f"r{n}",
                                      placed=WHEN, seen=WHEN) for n in range(2)],
                      s3="s3://seams09-loads/runs", name="first", poll=0)
        assert report.loaded == 2 and not report.failures
        with Session(stamped) as s:
            got = s.get(Event, tenant_id="acme", event_id="e1")
            assert got is not None and got.placed == WHEN and got.seen == WHEN
            got.total = 7
            s.save(got)
        rows = [i for i in b.scan_raw() if "event_id" in i]
        assert len(rows) == 5  # (two latest copies, three version rows)
        assert all(i["placed"] == {"N": EPOCH} and i["seen"] == {"S": "2026/01/01 10:30"}
                   for i in rows), rows
