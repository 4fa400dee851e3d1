"""Phases ask an entity's rules, which answer where the entity does not use them too
(issue 58, second step): a previous layout's stand-in holds no row, a sort-key layout
without versions numbers nothing, the versioned rule refuses an update of ``version``
itself, and a move's actions are counted from the rows its rules add. On every engine;
the pure answers without one."""

from __future__ import annotations

import pytest

import dynaorm
import dynaorm.rules
from dynaorm import DynaormError, Entity, Previous
from dynaorm.schema.entity import spec_of
from dynaorm.schema.rules import NO_BEFORE, PLAIN_KEYS, Change, Rows
from dynaorm.schema.rules.previous import move_actions
from dynaorm.testing import TestBackend
from dynaorm.values.records import Fail, Origin, Put, Role
from tests.support.models import Audit, Note, User, app
from tests.support.recording import Requests


class StandInMoved(Entity):
    """Versioned, unique, in a migration window."""

    class Meta:
        table = app
        pk = "SIMOVED#{item_id}"
        sk = "ITEM"
        unique = ("code",)
        versioned = True
        previous = Previous(pk="SIOLD#{item_id}")

    item_id: str
    code: str
    body: str = ""


def _no_origin(role: Role, fail: Fail) -> Origin:
    raise AssertionError("the stand-in adds no row")


def test_a_plain_entity_is_answered_by_stand_ins() -> None:
    rules = spec_of(Note).rules
    assert rules.before is NO_BEFORE and rules.sort_keys is PLAIN_KEYS
    assert NO_BEFORE.key({"note_id": "n1"}, "Note") is None
    assert NO_BEFORE.owns({"pk": {"S": "NOTE#n1"}}) is False
    assert NO_BEFORE.stores(spec_of(Note), {"pk": {"S": "NOTE#n1"}}) is False
    with pytest.raises(DynaormError, match="no previous layout"):
        NO_BEFORE.values(spec_of(Note), {"pk": {"S": "NOTE#n1"}})
    assert NO_BEFORE.vacant({"note_id": "n1"}, "Note", {"pk": "NOTE#n1"}, _no_origin) == ()
    assert PLAIN_KEYS.next(0, True) is None and PLAIN_KEYS.next(7, False) is None


def test_a_previous_layout_answers_for_its_old_rows() -> None:
    spec = spec_of(StandInMoved)
    before = spec.rules.before
    assert before is spec.previous and before.type_name == "StandInMoved"
    assert before.key({"item_id": "i1"}, "StandInMoved") == {"pk": "SIOLD#i1",
                                                             "sk": "v0_ITEM"}
    assert spec.rules.sort_keys.next(3, True) == 4 and spec.rules.sort_keys.next(3, False) == 3
    # a current row is not an old one; an old row is read as the current class reads it
    old = {"pk": {"S": "SIOLD#i1"}, "sk": {"S": "v0_ITEM"}, "code": {"S": "c"},
           "version": {"N": "1"}, "_type": {"S": "StandInMoved"}}
    current = {**old, "pk": {"S": "SIMOVED#i1"}}
    assert before.stores(spec, old) and not before.stores(spec, current)
    assert before.stores(spec, {**old, "sk": {"S": "v00000001_ITEM"}})  # (a version row)
    assert before.values(spec, old) == {"item_id": "i1", "code": "c", "version": 1}


def test_a_move_costs_the_rows_its_rules_add() -> None:
    # row delete and put, two per version row; then a re-pointed guard per unique rule and
    # a new version row: as the rules' rows of a described move say
    assert move_actions(spec_of(StandInMoved), 5) == 2 + 10 + 1 + 1
    assert move_actions(spec_of(User), 0) == 2 + 2  # (two unique rules, no versions)
    assert move_actions(spec_of(Note), 0) == 2


def test_the_rule_types_are_public_in_one_place() -> None:
    assert dynaorm.rules.Change is Change and dynaorm.rules.Rows is Rows
    assert (dynaorm.rules.Put, dynaorm.rules.Role, dynaorm.rules.Fail) == (Put, Role, Fail)
    assert dynaorm.rules.Rule is dynaorm.Rule
    assert dynaorm.rules.register_rule is dynaorm.register_rule
    assert dynaorm.rules.Change is not dynaorm.Change  # (the stream's change)
    assert all(hasattr(dynaorm.rules, n) for n in dynaorm.rules.__all__)


@pytest.mark.parametrize("method", ["set", "add", "remove"])
def test_an_update_of_the_version_itself_is_refused_before_sending(
        db: TestBackend, method: str) -> None:
    s = db.session()
    s.save(Audit(equipment_id="e1", part="p1"))
    s.commit()
    rec = Requests(app)
    update = s.update(Audit, equipment_id="e1", part="p1")
    with pytest.raises(DynaormError, match=r"version.*dynaorm's"):
        if method == "remove":
            update.remove("version")
        else:
            getattr(update, method)(version=5)
    assert rec.calls == []
    got = s.get(Audit, equipment_id="e1", part="p1")
    assert got is not None and got.version == 1
    # a condition on the version is still the caller's to write
    s.update(Audit, equipment_id="e1", part="p1").set(notes="n").where(
        dynaorm.F("version") == 1)
    s.commit()
    got = s.get(Audit, equipment_id="e1", part="p1")
    assert got is not None and got.notes == "n" and got.version == 2


def test_an_upsert_of_an_unnumbered_entity_reads_no_history(db: TestBackend) -> None:
    # a unique entity's upsert is read first (its guards follow the stored values); with
    # no version rows to continue, no history is queried
    s = db.session()
    rec = Requests(app)
    s.update(User, user_id="u-up", upsert=True).set(username="upsy", email="u@x.com")
    s.commit()
    assert rec.of("Query") == []
    got = s.get(User, user_id="u-up")
    assert got is not None and got.username == "upsy"


def test_an_upsert_of_a_versioned_entity_continues_its_kept_history(db: TestBackend) -> None:
    s = db.session()
    s.save(a := Audit(equipment_id="e2", part="p1"))
    s.commit()
    a.notes = "two"
    s.save(a)
    s.commit()
    s.delete(a)  # (its history is kept)
    s.commit()
    s.update(Audit, equipment_id="e2", part="p1", upsert=True).set(notes="three")
    s.commit()
    got = s.get(Audit, equipment_id="e2", part="p1")
    assert got is not None and got.version == 3 and got.notes == "three"
