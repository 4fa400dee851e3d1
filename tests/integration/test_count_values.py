"""``count()`` on the server, ``values()`` and ``keys()`` of queries (contract section 6, 0.2)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from dynaorm import DynaormError, Entity, F, Session
from dynaorm.testing import TestBackend
from tests.support.models import Audit, app, unsaved
from tests.support.recording import Requests

#: what the engine answers is the subject: run on the reference engine too
pytestmark = pytest.mark.engines("moto", "local")


class VRoom(Entity):
    class Meta:
        table = app
        pk = "VROOM#{room}"
        sk = "ROOM"

    room: str
    title: str = ""


class VMsg(Entity):
    class Meta:
        table = app
        pk = "VROOM#{room}"
        sk = "MSG#{at:%Y%m%d%H%M%S}#{msg_id}"

    room: str
    at: datetime
    msg_id: str
    text: str = ""
    nick: str | None = None
    likes: int = 0


MSGS = [VMsg(room="r1", at=datetime(2024, 1, 1 + i, tzinfo=UTC), msg_id=f"m{i}", text=f"t{i}",
             nick="ann" if i % 2 else None, likes=i) for i in range(12)]


@pytest.fixture
def s(db: TestBackend) -> Session:
    s = db.session()
    s.save_many([VRoom(room="r1", title="general"), *unsaved(MSGS), VMsg(room="r2", at=MSGS[0].at,
                                                                 msg_id="x")])
    for part in ("P1", "P2", "P3"):
        audit = Audit(equipment_id="E9", part=part)
        for n in range(2):
            audit.notes = str(n)
            s.save(audit)
            s.commit()
    return s


@pytest.fixture
def rec(db: TestBackend) -> Requests:
    return Requests(db.table)


def test_count_is_select_count_with_the_type_as_filter(s: Session, rec: Requests) -> None:
    assert s.query(VMsg, room="r1").count() == 12
    (request,) = rec.of("Query")
    assert request["Select"] == "COUNT"
    names = request["ExpressionAttributeNames"]
    assert names[request["FilterExpression"].split(" ")[0]] == "_type"
    assert "ProjectionExpression" not in request
    # the room item shares the partition: counted only when asked for
    assert s.query(VMsg, VRoom, room="r1").count() == 13
    assert s.query(VRoom, room="r1").count() == 1
    assert s.query(VMsg, room="r1").filter(F("likes") >= 6).count() == 6
    assert s.query(VMsg, room="r1").limit(5).count() == 5
    assert s.query(VMsg, room="r1").lt(at=MSGS[4].at).count() == 4
    assert s.query(VMsg, room="nope").count() == 0
    rec.clear()
    assert s.query(VMsg, room="r1").page_size(5).count() == 12
    assert [r.get("Limit") for r in rec.of("Query")] == [None]  # a count is not paged by us


def test_versioned_counts(s: Session, rec: Requests) -> None:
    assert s.query(Audit, equipment_id="E9").count() == 3  # latest copies only
    assert s.history(Audit, equipment_id="E9", part="P1").count() == 2
    history = rec.of("Query")[-1]
    assert "Select" not in history  # history rows are told apart by the client: keys read
    names = history["ExpressionAttributeNames"]
    assert {names[n] for n in history["ProjectionExpression"].split(", ")} == {
        "pk", "sk", "_type"}


def test_values_are_typed_and_absent_fields_are_none(s: Session, rec: Requests) -> None:
    values = s.query(VMsg, room="r1").values("at", "nick", "likes")
    assert values == [{"at": m.at, "nick": m.nick, "likes": m.likes} for m in MSGS]
    assert isinstance(values[0]["at"], datetime) and values[0]["nick"] is None
    request = rec.of("Query")[-1]
    names = request["ExpressionAttributeNames"]
    assert {names[n] for n in request["ProjectionExpression"].split(", ")} == {
        "at", "nick", "likes", "pk", "sk", "_type"}
    assert s.query(VMsg, room="r1").reverse().limit(2).values("msg_id") == [
        {"msg_id": "m11"}, {"msg_id": "m10"}]
    mixed = s.query(VRoom, VMsg, room="r1").values("title", "text")
    assert mixed[0] == {"title": None, "text": "t0"} and mixed[-1] == {"title": "general",
                                                                         "text": None}
    with pytest.raises(DynaormError, match="colour"):
        s.query(VMsg, room="r1").values("colour")


def test_keys_give_what_get_takes(s: Session) -> None:
    found = s.query(VMsg, room="r1").filter(F("nick") == "ann").keys()
    assert found == [{"room": "r1", "at": m.at, "msg_id": m.msg_id} for m in MSGS if m.nick]
    for key in found:
        got = s.get(VMsg, **key)
        assert got is not None and got.nick == "ann"
    assert s.query(Audit, equipment_id="E9").keys() == [
        {"equipment_id": "E9", "part": p} for p in ("P1", "P2", "P3")]
