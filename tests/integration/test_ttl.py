"""``Table(ttl=...)`` (contract 14): enabled on create, stored as epoch seconds, expired
items hidden from reads."""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta, timezone

import pytest
from pydantic import Field

from dynaorm import DynaormError, Entity, F, InvalidValueError, Session, Table
from dynaorm.testing import TestBackend
from tests.support.engines import on_engine
from tests.support.recording import Requests

cache = Table("ttl-cache", ttl="expires")


#: what the engine answers is the subject: run on the reference engine too
pytestmark = pytest.mark.engines("moto", "local")


class Login(Entity):
    class Meta:
        table = cache
        pk = "USER#{user}"
        sk = "LOGIN#{token}"
        unique = ("token",)

    user: str
    token: str
    expires: datetime | None = None


class Lock(Entity):
    class Meta:
        table = cache
        pk = "LOCK#{name}"
        sk = "LOCK"

    name: str
    until: int = Field(alias="expires")  # the TTL attribute by its stored name


@pytest.fixture
def db(backend: str | None) -> Iterator[TestBackend]:
    yield from on_engine(backend, cache)


def test_definition_and_refusals() -> None:
    assert "TimeToLiveSpecification" not in cache.definition()  # UpdateTimeToLive does it
    with pytest.raises(DynaormError, match="datetime or an int"):
        class Bad(Entity):
            class Meta:
                table = cache
                pk = "B#{b}"
                sk = "B"
            b: str
            expires: str
    with pytest.raises(DynaormError, match="ttl must name a non-key attribute"):
        Table("ttl-x", ttl="pk")


def test_create_enables_ttl(db: TestBackend) -> None:
    out = cache.client.describe_time_to_live(TableName=cache.name)["TimeToLiveDescription"]
    assert out["AttributeName"] == "expires"
    assert out["TimeToLiveStatus"] in ("ENABLED", "ENABLING")
    cache.create()  # again: already enabled, no error


def test_stored_as_epoch_seconds_and_read_back_in_utc(db: TestBackend) -> None:
    s = db.session()
    at = datetime.now(timezone(timedelta(hours=2))).replace(microsecond=123456) + timedelta(
        hours=1)
    s.save(Login(user="u1", token="t1", expires=at))
    s.save(Lock(name="l1", until=int(time.time()) + 600))
    s.commit()
    raw = {i["pk"]["S"]: i for i in db.scan_raw()}
    assert raw["USER#u1"]["expires"] == {"N": str(int(at.timestamp()))}
    assert "N" in raw["LOCK#l1"]["expires"]
    got = s.get(Login, user="u1", token="t1")
    assert got is not None and got.expires == at.replace(microsecond=0)
    assert got.expires is not None and got.expires.utcoffset() == timedelta(0)
    lock = s.get(Lock, name="l1")
    assert lock is not None and lock.until > time.time()


def test_a_naive_datetime_is_refused(db: TestBackend) -> None:
    s = db.session()
    s.save(Login(user="u1", token="t1", expires=datetime(2030, 1, 1)))
    with pytest.raises(InvalidValueError, match=r"'expires'.*aware"):
        s.commit()
    s.rollback()
    assert db.scan_raw() == []


def test_reads_skip_expired_items(db: TestBackend) -> None:
    s = db.session()
    past = datetime.now(UTC) - timedelta(minutes=5)
    future = datetime.now(UTC) + timedelta(hours=1)
    for n in range(4):
        s.save(Login(user="u1", token=f"t{n}", expires=past if n % 2 else future))
    s.save(Login(user="u1", token="forever"))
    s.commit()
    s.save_many([Lock(name="old", until=int(time.time()) - 10),
                 Lock(name="new", until=int(time.time()) + 600)])
    # 5 logins, 5 guards, 2 locks; the 5 expired ones (2 logins, their guards, which carry
    # their owners' TTL, and a lock) may already be gone where the engine sweeps (Local)
    assert 7 <= len(db.scan_raw()) <= 12
    assert s.get(Login, user="u1", token="t1") is None
    assert s.get(Login, user="u1", token="t0") is not None
    assert s.find(Login, token="t1") is None and s.find(Login, token="t2") is not None
    assert [x.name if x else None for x in s.get_many(Lock, [{"name": "old"}, {"name": "new"}])
            ] == [None, "new"]
    live = s.query(Login, user="u1").all()
    assert sorted(x.token for x in live) == ["forever", "t0", "t2"]
    assert sorted(x.name for x in s.scan(Lock)) == ["new"]
    rec = Requests(cache)
    assert s.query(Login, user="u1").count() == 3
    [count] = rec.of("Query")
    assert count["Select"] == "COUNT" and "expires" in count["ExpressionAttributeNames"].values()
    assert s.scan(Lock).count() == 1
    assert s.scan(Login).filter(F("expires").exists()).count() == 2
    assert Session(cache).query(Login, user="u1").values("token") == [
        {"token": "forever"}, {"token": "t0"}, {"token": "t2"}]


def test_create_sends_update_time_to_live(db: TestBackend) -> None:
    cache.delete()
    rec = Requests(cache)
    cache.create()
    assert rec.of("UpdateTimeToLive") == [{
        "TableName": cache.name,
        "TimeToLiveSpecification": {"Enabled": True, "AttributeName": "expires"}}]
    assert rec.of("CreateTable")[0]["AttributeDefinitions"] == [
        {"AttributeName": "pk", "AttributeType": "S"},
        {"AttributeName": "sk", "AttributeType": "S"}]


def test_an_include_projection_carries_the_ttl_attribute() -> None:
    from dynaorm import GSI

    t = Table("ttl-inc", ttl="exp", indexes=[GSI("gsi", pk="gpk", projection=["a"])])
    [gsi] = t.definition()["GlobalSecondaryIndexes"]
    assert gsi["Projection"] == {"ProjectionType": "INCLUDE",
                                 "NonKeyAttributes": ["a", "_type", "exp"]}


def test_a_key_move_onto_an_expired_item_takes_its_key(db: TestBackend) -> None:
    """(issue 59) An item whose TTL has passed but which DynamoDB has not deleted yet is
    gone for every read, and an insert over it succeeds: a key move onto its key (and a
    move of a login, whose guard moves along) succeeds too, as an insert does, instead of
    ``ItemExistsError``."""
    past, later = int(time.time()) - 60, int(time.time()) + 600
    s = db.session()
    s.save(Lock(name="old", until=past))
    s.save(Lock(name="mine", until=later))
    s.save(Login(user="u1", token="gone", expires=datetime.now(UTC) - timedelta(minutes=1)))
    s.save(Login(user="u2", token="t2", expires=datetime.now(UTC) + timedelta(hours=1)))
    s.commit()
    assert s.get(Lock, name="old") is None  # expired: gone for reads
    lock = s.get(Lock, name="mine")
    assert lock is not None
    lock.name = "old"  # onto the expired item's key
    s.save(lock)
    login = s.get(Login, user="u2", token="t2")
    assert login is not None
    login.user, login.token = "u1", "gone"  # onto the expired login's key and guard
    s.save(login)
    s.commit()
    assert s.get(Lock, name="old", consistent=True) == Lock(name="old", until=later)
    assert s.get(Lock, name="mine", consistent=True) is None
    assert s.find(Login, token="gone", consistent=True) == login
    assert {(i["pk"], i["sk"]) for i in db.scan()} == {
        ("LOCK#old", "LOCK"), ("USER#u1", "LOGIN#gone"), ("token#gone", "token#gone")}
