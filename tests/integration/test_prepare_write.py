"""A rule reads what a write needs before it is planned (issue 58, ``Rule.prepare_write``):
the versioned rule's last kept version is its own read, a ``Query`` it yields as a step,
which the sync and the async session send alike and ``explain`` notes without sending.
``core/commit.py`` only hands the rules the insert. On every engine; the pure answers
without one."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest

from dynaorm import AsyncSession, Attempt, Entity, Hook, ItemExistsError, Previous, explain
from dynaorm.protocol.steps import Call, call
from dynaorm.schema.entity import spec_of
from dynaorm.schema.rules import Change, Rule
from dynaorm.schema.rules.versioned import Versioning
from dynaorm.testing import TestBackend
from tests.support.models import Audit, Note, app
from tests.support.recording import Requests


class KeptMoved(Entity):
    """Versioned, in a migration window: a new object continues a history kept under the
    old layout's key."""

    class Meta:
        table = app
        pk = "KMNEW#{item_id}"
        sk = "ITEM"
        versioned = True
        previous = Previous(pk="KMOLD#{item_id}")

    item_id: str
    body: str = ""


def _insert(entity: type[Entity], **values: Any) -> Change:
    spec = spec_of(entity)
    key = spec.primary_key(values)
    return Change(entity, key, None, values, None, key, rules=spec.rules)


def test_the_read_is_the_versioned_rules_hook() -> None:
    spec = spec_of(Audit)
    assert spec.rules.prepare_write.__func__ is Versioning.prepare_write  # type: ignore[union-attr]
    plain = spec_of(Note).rules.prepare_write  # (no rule reads: the no-op, no step)
    assert plain.__func__ is Rule.prepare_write  # type: ignore[union-attr]
    with pytest.raises(StopIteration) as done:
        next(plain(_insert(Note, note_id="n1")))
    assert done.value.value is None


def test_the_rule_yields_its_read_as_data_and_is_answered() -> None:
    # driven by hand, as a driver would: a Query of the key's version rows, newest first,
    # consistent; an answer naming version 4 of this key (and rows it must skip) is found
    proto = spec_of(Audit).rules.prepare_write(_insert(Audit, equipment_id="e9", part="p"))
    step = next(proto)
    assert isinstance(step, Call) and step.operation == "Query" and step.origins == (Audit,)
    request = step.request
    assert request["ConsistentRead"] is True and request["ScanIndexForward"] is False
    assert request["TableName"] == app.name and "IndexName" not in request
    assert "(" not in request["KeyConditionExpression"]  # (a key condition: flat)
    assert {"S": "EQUIPMENT#e9"} in request["ExpressionAttributeValues"].values()
    other = {"pk": {"S": "EQUIPMENT#e9"}, "sk": {"S": "v00000009_q"}, "_type": {"S": "Audit"}}
    mine = {"pk": {"S": "EQUIPMENT#e9"}, "sk": {"S": "v00000004_p"}, "_type": {"S": "Audit"}}
    typed = {**mine, "sk": {"S": "v00000007_p"}, "_type": {"S": "Other"}}
    page = {"Items": [other, typed], "LastEvaluatedKey": {"pk": {"S": "x"}}}
    step = proto.send(page)  # (a next page: from where the last ended)
    assert step.request["ExclusiveStartKey"] == {"pk": {"S": "x"}}
    with pytest.raises(StopIteration) as done:
        proto.send({"Items": [mine]})
    assert done.value.value == 4


def _kept_history(db: TestBackend) -> None:
    """Audit e1/p1 saved twice, then deleted: its two version rows are kept."""
    s = db.session()
    s.save(a := Audit(equipment_id="e1", part="p1"))
    s.commit()
    a.notes = "two"
    s.save(a)
    s.commit()
    s.delete(a)
    s.commit()


def test_a_new_object_continues_the_kept_history_sync(db: TestBackend) -> None:
    _kept_history(db)
    rec = Requests(app)
    s = db.session()
    s.save(Audit(equipment_id="e1", part="p1", notes="again"))
    s.commit()  # version 1 refused, the rule reads the last version (2), planned again
    assert len(rec.of("Query")) == 1 and rec.of("Query")[0]["ConsistentRead"] is True
    got = s.get(Audit, equipment_id="e1", part="p1")
    assert got is not None and got.version == 3 and got.notes == "again"
    assert [v.version for v in s.history(Audit, equipment_id="e1", part="p1")] == [1, 2, 3]


def test_a_new_object_continues_the_kept_history_async(db: TestBackend) -> None:
    _kept_history(db)
    rec = Requests(app)

    async def main() -> None:
        async with AsyncSession(app) as s:
            s.save(Audit(equipment_id="e1", part="p1", notes="again"))
            await s.commit()

    asyncio.run(main())
    assert len(rec.of("Query")) == 1  # (the same step, sent by the async client)
    got = db.session().get(Audit, equipment_id="e1", part="p1")
    assert got is not None and got.version == 3 and got.notes == "again"


def test_a_migration_window_continues_the_history_kept_at_the_old_key(
        db: TestBackend) -> None:
    # a deleted entity's history still under the old layout's key (not migrated): the rule
    # finds none at the new key, then reads the old one's, and the new object continues it
    s = db.session()
    for n in (1, 2):
        app.db.driver.run(call("PutItem", {"TableName": app.name, "Item": {
            "pk": {"S": "KMOLD#k1"}, "sk": {"S": f"v{n:08d}_ITEM"}, "_type": {"S": "KeptMoved"},
            "item_id": {"S": "k1"}, "body": {"S": f"old {n}"}, "version": {"N": str(n)}}}))
    rec = Requests(app)
    s.save(KeptMoved(item_id="k1", body="new"))
    s.commit()
    queried = [[v["S"] for v in q["ExpressionAttributeValues"].values() if "#" in v["S"]]
               for q in rec.of("Query")]
    assert queried == [["KMNEW#k1"], ["KMOLD#k1"]]  # (the new key's history, then the old's)
    got = s.get(KeptMoved, item_id="k1")
    assert got is not None and got.version == 3 and got.body == "new"


def test_explain_notes_the_rules_read_and_sends_nothing(db: TestBackend) -> None:
    s = db.session()
    s.save(KeptMoved(item_id="k2"))
    rec = Requests(app)
    found = explain(s)
    assert rec.calls == []  # nothing sent: the steps were data
    assert [r.split(" ")[0] for r in found.reads_first] == ["Query", "Query"]
    assert all("planned here as absent" in r for r in found.reads_first)


class _WindowWriter(Hook):
    """Once the rule's Query is answered, another writer leaves version 3 in the window,
    before the commit's request: its version row and latest copy (``latest``), or its
    version row alone (as an entity created and deleted again); ``then_delete``: its
    latest copy deleted after."""

    def __init__(self, latest: bool = True, then_delete: bool = False) -> None:
        self.done, self.latest, self.then_delete = False, latest, then_delete
        app.db.add_hook(self)

    def on_end(self, phase: Any, token: Any) -> object:
        if self.done or not isinstance(phase, Attempt) or phase.operation != "Query":
            return None
        self.done = True
        row = {"pk": {"S": "EQUIPMENT#e1"}, "_type": {"S": "Audit"},
               "equipment_id": {"S": "e1"}, "part": {"S": "p1"}, "auditor": {"S": ""},
               "notes": {"S": "theirs"}, "version": {"N": "3"}}
        sks = ("v00000003_p1", "v0_p1") if self.latest else ("v00000003_p1",)
        app.db.send("TransactWriteItems", {"TransactItems": [
            {"Put": {"TableName": app.name, "Item": {**row, "sk": {"S": sk}}}} for sk in sks]})
        if self.then_delete:
            app.db.send("DeleteItem", {"TableName": app.name, "Key": {
                "pk": {"S": "EQUIPMENT#e1"}, "sk": {"S": "v0_p1"}}})
        return None


def test_a_second_writer_in_the_window_after_the_read_wins_and_ours_changes_nothing(
        db: TestBackend) -> None:
    _kept_history(db)
    writer = _WindowWriter()
    s = db.session()
    ours = Audit(equipment_id="e1", part="p1", notes="ours")
    s.save(ours)
    try:
        with pytest.raises(ItemExistsError):
            s.commit()  # (planned as version 3 on the read: its rows are taken now)
    finally:
        app.db.remove_hook(writer)
    assert writer.done and ours._dynaorm_state is None  # (the object stays new)
    got = db.session().get(Audit, equipment_id="e1", part="p1")
    assert got is not None and (got.version, got.notes) == (3, "theirs")
    history = db.session().history(Audit, equipment_id="e1", part="p1")
    assert [(v.version, v.notes) for v in history] == [(1, ""), (2, "two"), (3, "theirs")]


# -- red team (redw): other second writers in the window after the rule's read ---------------
@pytest.mark.parametrize("then_delete", [False, True], ids=["history-row", "create-delete"])
def test_a_history_row_written_in_the_window_is_continued_after(
        db: TestBackend, then_delete: bool) -> None:
    """The kept history grew to version 3 after the rule read it (no latest copy now):
    our insert, planned as version 3, meets the taken row, reads again and continues the
    history as version 4; nothing of theirs is lost."""
    _kept_history(db)
    writer = _WindowWriter(latest=then_delete, then_delete=then_delete)
    s = db.session()
    s.save(Audit(equipment_id="e1", part="p1", notes="ours"))
    try:
        s.commit()
    finally:
        app.db.remove_hook(writer)
    assert writer.done
    got = db.session().get(Audit, equipment_id="e1", part="p1")
    assert got is not None and (got.version, got.notes) == (4, "ours")
    history = db.session().history(Audit, equipment_id="e1", part="p1")
    assert [(v.version, v.notes) for v in history] == [
        (1, ""), (2, "two"), (3, "theirs"), (4, "ours")]


def test_a_keyed_insert_continuing_a_kept_history_applies_once_and_replays(
        db: TestBackend) -> None:
    """Under an idempotency key the insert's first plan (version 1) is refused, the rule
    reads the history and the commit is sent again (the same key, the same writes): it
    applies as version 3; the same writes again under the key are a replay (nothing
    written, the version stays 3)."""
    _kept_history(db)
    key = f"prepare-write-{db.session_kind}-{uuid.uuid4().hex}"
    s = db.session()
    s.save(Audit(equipment_id="e1", part="p1", notes="keyed"))
    assert not s.commit(idempotency_key=key).replayed
    again = db.session()
    again.save(Audit(equipment_id="e1", part="p1", notes="keyed"))
    assert again.commit(idempotency_key=key).replayed
    got = db.session().get(Audit, equipment_id="e1", part="p1")
    assert got is not None and (got.version, got.notes) == (3, "keyed")
    assert [v.version for v in db.session().history(Audit, equipment_id="e1", part="p1")
            ] == [1, 2, 3]
