"""``Shards(count, by=, first=)`` and ``query(..., shard=)`` (contract section 7, 0.2)."""

from __future__ import annotations

import zlib
from typing import Any

import pytest

from dynaorm import DynaormError, Entity, KeyTemplateError, Session, Shards
from dynaorm.model.entity import spec_of
from dynaorm.testing import TestBackend
from tests.support.models import app
from tests.support.recording import Requests


class Request(Entity):
    """The labs' write-sharded GSI: ``requestid % 10 + 1`` picks one of shards 1..10."""

    class Meta:
        table = app
        pk = "REQ#{request_id}"
        sk = "REQ"
        indexes = {"gsi1": ("DAY#{day}#{shard}", "{request_id:08d}")}
        shards = {"gsi1": Shards(10, by=lambda r: r.request_id % 10 + 1, first=1)}

    request_id: int
    day: str
    status: str = "ok"


class Bucketed(Entity):
    """Sharded by a field that holds the shard value."""

    class Meta:
        table = app
        pk = "BKT#{name}"
        sk = "BKT"
        indexes = {"gsi2": ("BKTS#{shard}", "{name}")}
        shards = {"gsi2": Shards(3, by="bucket")}

    name: str
    bucket: int


class Event(Entity):
    """The table key itself sharded by a function of a key field."""

    class Meta:
        table = app
        pk = "EVDAY#{day}#{shard}"
        sk = "{event_id}"
        shards = {"primary": Shards(4, by=lambda e: int(e.event_id[1:]) % 4)}

    day: str
    event_id: str
    kind: str = ""


class Plain(Entity):
    class Meta:
        table = app
        pk = "PLAIN#{pid}"
        sk = "P"
        indexes = {"gsi2": ("PLAINS#{shard}", "{pid}")}
        shards = {"gsi2": 5}

    pid: str


REQUESTS = [Request(request_id=i, day="2024-05-01") for i in range(1, 41)]


@pytest.fixture
def s(db: TestBackend) -> Session:
    session = db.session()
    session.save_many([*REQUESTS, *(Event(day="d1", event_id=f"e{i}") for i in range(12))])
    return session


def raw_gsi(db: TestBackend, pk: str) -> list[dict[str, Any]]:
    client = db.table.transport.client
    out = client.query(TableName=app.name, IndexName="gsi1",
                       KeyConditionExpression="gsi1pk = :p",
                       ExpressionAttributeValues={":p": {"S": pk}})
    return list(out["Items"])


def test_custom_shard_values_land_where_the_rule_says(s: Session, db: TestBackend) -> None:
    for shard in range(1, 11):
        raw = raw_gsi(db, f"DAY#2024-05-01#{shard}")
        assert sorted(int(i["request_id"]["N"]) for i in raw) == [
            r for r in range(1, 41) if r % 10 + 1 == shard]
    assert raw_gsi(db, "DAY#2024-05-01#0") == []


@pytest.mark.sync_only
def test_scatter_gather_reads_shards_first_to_last(s: Session, db: TestBackend) -> None:
    rec = Requests(db.table)
    got = s.query(Request, index="gsi1", day="2024-05-01").all()
    assert [r.request_id for r in got] == list(range(1, 41))
    parts = sorted(r["ExpressionAttributeValues"][":v0"]["S"] for r in rec.of("Query"))
    assert parts == sorted(f"DAY#2024-05-01#{i}" for i in range(1, 11))


@pytest.mark.sync_only
def test_one_shard_alone(s: Session, db: TestBackend) -> None:
    rec = Requests(db.table)
    got = s.query(Request, index="gsi1", day="2024-05-01", shard=3).all()
    assert [r.request_id for r in got] == [2, 12, 22, 32]
    (request,) = rec.of("Query")
    assert request["ExpressionAttributeValues"][":v0"] == {"S": "DAY#2024-05-01#3"}
    assert s.query(Request, index="gsi1", day="2024-05-01", shard=3).count() == 4
    page = s.query(Request, index="gsi1", day="2024-05-01", shard=3).page_size(3).page()
    rest = s.query(Request, index="gsi1", day="2024-05-01", shard=3).page_size(3).page(
        page.cursor)
    assert [r.request_id for r in page.items + rest.items] == [2, 12, 22, 32]
    for bad in (0, 11, "3", True):
        with pytest.raises(KeyTemplateError):
            s.query(Request, index="gsi1", day="2024-05-01", shard=bad).all()
    with pytest.raises(KeyTemplateError):
        s.query(Request, index=None, request_id=1, shard=1).all()  # the table key is plain


def test_a_field_holds_the_shard(db: TestBackend) -> None:
    s = db.session()
    s.save_many([Bucketed(name=f"b{i}", bucket=i % 3) for i in range(9)])
    assert [b.name for b in s.query(Bucketed, index="gsi2", shard=1)] == ["b1", "b4", "b7"]
    assert len(s.query(Bucketed, index="gsi2").all()) == 9
    with pytest.raises(KeyTemplateError, match=r"outside 0\.\.2"):
        s.save_many([Bucketed(name="x", bucket=3)])
    with pytest.raises(KeyTemplateError):
        s.save(Bucketed(name="y", bucket=-1))
        s.commit()
    assert s.get(Bucketed, name="x") is None


def test_primary_shard_from_key_fields(s: Session, db: TestBackend) -> None:
    got = s.get(Event, day="d1", event_id="e5")
    assert got is not None and got.event_id == "e5"
    keys = {i["pk"] for i in db.scan() if i.get("_type") == "Event"}
    assert keys == {f"EVDAY#d1#{n}" for n in range(4)}
    assert [e.event_id for e in s.query(Event, day="d1", shard=1)] == ["e1", "e5", "e9"]
    assert len(s.query(Event, day="d1").all()) == 12


def test_primary_by_must_use_key_fields() -> None:
    with pytest.raises(KeyTemplateError, match="primary-key template"):
        class BadEvent(Entity):
            class Meta:
                table = app
                pk = "BADEV#{day}#{shard}"
                sk = "{event_id}"
                shards = {"primary": Shards(4, by="kind")}

            day: str
            event_id: str
            kind: int = 0

    class SneakyEvent(Entity):  # a function cannot be checked until it runs: get() refuses
        class Meta:
            table = app
            pk = "SNEAKY#{day}#{shard}"
            sk = "{event_id}"
            shards = {"primary": Shards(4, by=lambda e: e.kind)}

        day: str
        event_id: str
        kind: int = 0

    with pytest.raises(KeyTemplateError, match="primary-key template fields"):
        spec_of(SneakyEvent).primary_key({"day": "d", "event_id": "e", "kind": 1})


def test_bad_rules_are_refused_at_definition() -> None:
    for bad in (0, -1, True, "4"):
        with pytest.raises(DynaormError):
            Shards(bad)  # type: ignore[arg-type]
    with pytest.raises(DynaormError):
        Shards(4, by=3)  # type: ignore[arg-type]
    with pytest.raises(DynaormError):
        Shards(4, first=1.5)  # type: ignore[arg-type]
    with pytest.raises(KeyTemplateError):
        class NoField(Entity):
            class Meta:
                table = app
                pk = "NOF#{a}"
                sk = "X"
                indexes = {"gsi2": ("NOFS#{shard}", "{a}")}
                shards = {"gsi2": Shards(2, by="missing")}

            a: str


def test_plain_n_keeps_its_crc32_buckets() -> None:
    spec = spec_of(Plain)
    for pid in ("a", "b", "p-17", "zz"):
        assert spec.shard_of({"pid": pid}, "gsi2") == zlib.crc32(pid.encode()) % 5
    assert spec.shard_rules["gsi2"] == Shards(5)
    assert list(Shards(10, first=1).values) == list(range(1, 11))
