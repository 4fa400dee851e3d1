"""Regressions found by the contract review: each test failed before its fix."""

from __future__ import annotations

import math

import pytest

from dynaorm import (
    DynaormError,
    Entity,
    InvalidCursorError,
    ItemTooLargeError,
    KeyTemplateError,
    Table,
    UniqueConstraintError,
)
from dynaorm.errors import RequestError as RequestFailed
from dynaorm.testing import TestBackend
from tests.support.models import User, app
from tests.support.recording import RecordingTransport


class EReading(Entity):
    class Meta:
        table = app
        pk = "EDEV#{device}"
        sk = "R#{ts}"

    device: str
    ts: int
    v: int = 0


class EMsg(Entity):
    class Meta:
        table = app
        pk = "EROOM#{room}"
        sk = "DATE#{date}#TIME#{time}"

    room: str
    date: str
    time: str


class EOrder(Entity):
    class Meta:
        table = app
        pk = "ECUST#{cust}"
        sk = "ORDER#{cust}#{order_id}"

    cust: str
    order_id: str


class EFloat(Entity):
    class Meta:
        table = app
        pk = "EF#{fid}"
        sk = "F"

    fid: str
    x: float


@pytest.mark.parametrize("insert_first", [True, False])
def test_key_move_and_insert_at_the_old_key_both_land(db: TestBackend,
                                                      insert_first: bool) -> None:
    s = db.session()
    s.save(EReading(device="d", ts=1, v=1))
    s.commit()
    moved = s.get(EReading, device="d", ts=1)
    assert moved is not None
    moved.ts = 2
    fresh = EReading(device="d", ts=1, v=9)
    for obj in ((fresh, moved) if insert_first else (moved, fresh)):
        s.save(obj)
    s.commit()
    stored = {(i["ts"], i["v"]) for i in db.scan() if i["pk"] == "EDEV#d"}
    assert stored == {(1, 9), (2, 1)}
    assert fresh._is_persisted and moved._is_persisted


def test_keywords_naming_the_whole_sort_key_match_exactly(db: TestBackend) -> None:
    s = db.session()
    s.save_many([EReading(device="d", ts=t) for t in (1, 10, 11, 2)])
    assert [r.ts for r in s.query(EReading, device="d", ts=1)] == [1]
    assert s.query(EReading, device="d", ts=3).all() == []


def test_begins_with_refuses_fields_it_cannot_use(db: TestBackend) -> None:
    s = db.session()
    s.save_many([EMsg(room="r", date=d, time=t)
                 for d, t in (("2018-08-01", "10"), ("2018-09-01", "10"))])
    q = s.query(EMsg, room="r")
    with pytest.raises(KeyTemplateError, match="leading"):
        q.begins_with(time="10").all()  # skips date
    with pytest.raises(KeyTemplateError, match="bogus"):
        q.begins_with(date="2018-08", bogus="x").all()
    narrowed = s.query(EMsg, room="r", date="2018-08-01")
    with pytest.raises(KeyTemplateError, match="already given"):
        narrowed.begins_with(date="2018-09").all()
    assert [m.date for m in q.begins_with(date="2018-09")] == ["2018-09-01"]
    assert [m.time for m in narrowed.begins_with(time="1")] == ["10"]


def test_sort_key_reusing_a_partition_field_is_queryable(db: TestBackend) -> None:
    s = db.session()
    s.save_many([EOrder(cust="c1", order_id=o) for o in ("o1", "o2", "o3")])
    assert [o.order_id for o in s.query(EOrder, cust="c1")] == ["o1", "o2", "o3"]
    assert [o.order_id for o in s.query(EOrder, cust="c1", order_id="o2")] == ["o2"]
    assert [o.order_id for o in s.query(EOrder, cust="c1").lt(order_id="o3")] == ["o1", "o2"]
    assert s.query(EOrder, cust="c1").eq(order_id="o1").one().order_id == "o1"


def test_request_failures_are_dynaorm_errors(db: TestBackend) -> None:
    missing = Table("dynaorm-no-such-table", endpoint_url=db.endpoint_url)

    class EGhost(Entity):
        class Meta:
            table = missing
            pk = "G#{gid}"
            sk = "G"

        gid: str

    from dynaorm import Session

    s = Session(missing)
    with pytest.raises(DynaormError):
        s.query(EGhost, gid="g").all()
    with pytest.raises(DynaormError):
        s.get_many(EGhost, [{"gid": "g"}])
    with pytest.raises(DynaormError):
        s.save_many([EGhost(gid="g")])


def test_save_many_refuses_an_oversized_item_before_writing(db: TestBackend) -> None:
    s = db.session()
    objs = [EMsg(room="r", date="d", time="1"), EMsg(room="r", date="d", time="x" * 500_000)]
    with pytest.raises(ItemTooLargeError, match="EMsg"):
        s.save_many(objs)
    assert db.scan_raw() == []


@pytest.mark.sync_only
def test_single_item_transaction_conflict_is_retried(db: TestBackend) -> None:
    transport = RecordingTransport(db.endpoint_url)
    transport.faults["PutItem"] = [RequestFailed("PutItem", "TransactionConflictException",
                                                 "conflict with an ongoing transaction")]
    db.table.transport = transport
    s = db.session()
    s.save(EReading(device="d", ts=5))
    s.commit()
    assert [op for op, _ in transport.sent] == ["PutItem", "PutItem"]
    assert [i["ts"] for i in db.scan()] == [5]


def test_unstorable_number_is_a_dynaorm_error_naming_the_field(db: TestBackend) -> None:
    s = db.session()
    s.save(EFloat(fid="f", x=math.nan))
    with pytest.raises(DynaormError, match=r"EFloat field 'x'"):
        s.commit()
    assert db.scan_raw() == []


def test_find_by_none_finds_nothing(db: TestBackend) -> None:
    assert db.session().find(User, email=None) is None


def test_save_many_marks_every_object_of_a_repeated_key_persisted(db: TestBackend) -> None:
    s = db.session()
    first, last = EReading(device="d", ts=7, v=1), EReading(device="d", ts=7, v=2)
    s.save_many([first, last])
    assert first._is_persisted and last._is_persisted
    assert [i["v"] for i in db.scan()] == [2]
    s.save(first)  # an update back to v=1, not an insert that clashes
    s.commit()
    assert [i["v"] for i in db.scan()] == [1]


def test_errors_name_entity_and_key(db: TestBackend) -> None:
    s = db.session()
    s.save(User(user_id="u1", username="ann", email="ann@x.com"))
    s.commit()
    s.save(User(user_id="u2", username="ann", email="other@x.com"))
    with pytest.raises(UniqueConstraintError) as err:
        s.commit()
    assert err.value.key == {"pk": "USER#u2", "sk": "PROFILE"}
    assert "USER#u2" in str(err.value)
    with pytest.raises(InvalidCursorError, match="User"):
        s.query(User, index="gsi1", org_id="acme").page("not-a-cursor")
