"""Caller conditions (``save/delete(condition=)``, ``s.check``), keyed deletes and
``delete_many`` on every engine; the condition evaluator agrees with the engines (its own
rules, without a table, are in tests/unit/test_conditions.py)."""

from __future__ import annotations

from typing import Any

import pytest

import dynaorm
from dynaorm import (
    ConcurrentModificationError,
    ConditionFailedError,
    DynaormError,
    F,
    ItemExistsError,
    ItemNotFoundError,
)
from dynaorm.testing import TestBackend
from dynaorm.values.expressions import holds
from tests.support.models import Note, User
from tests.support.recording import Requests
from tests.support.update_models import Counter

NKEY = {"pk": "NOTE#n1", "sk": "NOTE"}


#: what the engine answers is the subject: run on the reference engine too
pytestmark = pytest.mark.engines("moto", "local")


def _seed(db: TestBackend, *objs: Any) -> None:
    with db.session() as s:
        for o in objs:
            s.save(o)


def _ops(db: TestBackend) -> Requests:
    """From now on, the requests sent for the test's table (a hook on its client)."""
    return Requests(db.table)


def test_conditional_save_of_a_loaded_object(db: TestBackend) -> None:
    _seed(db, Note(note_id="n1", body="draft"))
    s = db.session()
    n = s.get(Note, note_id="n1")
    assert n is not None
    n.tags = ["t"]
    s.save(n, condition=F("body") == "published")
    before = db.scan()
    with pytest.raises(ConditionFailedError) as err:
        s.commit()
    assert (err.value.entity, err.value.key) == (Note, NKEY)
    assert err.value.item == Note(note_id="n1", body="draft")
    assert db.scan() == before
    s.save(n, condition=F("body") == "draft")
    s.commit()
    assert db.scan()[0]["tags"] == ["t"]


def test_both_conditions_on_one_action_the_stored_item_decides(db: TestBackend) -> None:
    _seed(db, Note(note_id="n1", body="draft"))
    s1, s2 = db.session(), db.session()
    a, b = s1.get(Note, note_id="n1"), s2.get(Note, note_id="n1")
    assert a is not None and b is not None
    a.body = "edited"
    s1.save(a)
    s1.commit()
    # b's own condition still holds (a tag-free note) but what it read has changed
    b.body = "mine"
    s2.save(b, condition=F("tags").not_exists() | (F("tags") == []))
    before = db.scan()
    with pytest.raises(ConcurrentModificationError):
        s2.commit()
    assert db.scan() == before
    # now the caller's condition is false on the stored item: that is what is reported
    b.body = "mine"
    s2.save(b, condition=F("body") == "draft")
    with pytest.raises(ConditionFailedError) as err:
        s2.commit()
    assert err.value.item == Note(note_id="n1", body="edited")
    assert db.scan() == before


def test_conditional_overwrite_of_a_new_object(db: TestBackend) -> None:
    _seed(db, Note(note_id="n1", body="old"))
    s = db.session()
    s.save(Note(note_id="n1", body="new"), overwrite=True, condition=F("body") == "other")
    before = db.scan()
    with pytest.raises(ConditionFailedError):
        s.commit()
    assert db.scan() == before
    s.save(Note(note_id="n1", body="new"), overwrite=True, condition=F("body") == "old")
    s.commit()
    assert db.scan()[0]["body"] == "new"
    s.save(Note(note_id="n1", body="x"), condition=F("body") == "new")  # an insert
    before = db.scan()
    with pytest.raises(ItemExistsError):
        s.commit()
    assert db.scan() == before


def test_conditional_delete(db: TestBackend) -> None:
    _seed(db, Counter(name="c1", count=3))
    s = db.session()
    c = s.get(Counter, name="c1")
    assert c is not None
    s.delete(c, condition=F("count") == 0)
    before = db.scan()
    with pytest.raises(ConditionFailedError) as err:
        s.commit()
    assert err.value.item == Counter(name="c1", count=3)
    assert db.scan() == before
    s.delete(c, condition=F("count") > 0)
    s.commit()
    assert db.scan() == []


def test_a_save_with_nothing_to_write_still_checks_its_condition(db: TestBackend) -> None:
    _seed(db, Note(note_id="n1", body="draft"))
    s = db.session()
    n = s.get(Note, note_id="n1")
    assert n is not None
    s.save(n, condition=F("body") == "gone")
    before = db.scan()
    with pytest.raises(ConditionFailedError):
        s.commit()
    assert db.scan() == before


def test_check_alone_is_a_transaction_of_one(db: TestBackend) -> None:
    _seed(db, Counter(name="c1", status="open"))
    s = db.session()
    sent = _ops(db)
    s.check(Counter, name="c1", condition=F("status") == "open")
    s.commit()
    assert sent.operations == ["TransactWriteItems"]
    s.check(Counter, name="c1", condition=F("status") == "closed")
    before = db.scan()
    with pytest.raises(ConditionFailedError) as err:
        s.commit()
    assert err.value.item == Counter(name="c1", status="open")
    s.check(Counter, name="zz", condition=F("status") == "open")
    with pytest.raises(ConditionFailedError) as err:
        s.commit()
    assert err.value.item is None
    assert db.scan() == before


def test_each_failed_condition_is_reported_against_its_own_action(db: TestBackend) -> None:
    _seed(db, Counter(name="c1", status="open"), Counter(name="c2", status="open"),
          Counter(name="c3", status="shut"))
    s = db.session()
    s.check(Counter, name="c1", condition=F("status") == "open")      # holds
    s.update(Counter, name="c2").add(count=1).where(F("status") == "shut")  # fails
    s.save(Note(note_id="n9", body="x"))                                # fine
    s.check(Counter, name="c3", condition=F("status") == "open")      # fails
    before = db.scan()
    with pytest.raises(ConditionFailedError) as err:
        s.commit()
    assert db.scan() == before
    assert err.value.failures == [
        (Counter, {"pk": "CTR#c2", "sk": "CTR"}, Counter(name="c2", status="open")),
        (Counter, {"pk": "CTR#c3", "sk": "CTR"}, Counter(name="c3", status="shut")),
    ]
    assert err.value.key == {"pk": "CTR#c2", "sk": "CTR"}


def test_conditions_need_F(db: TestBackend) -> None:
    s = db.session()
    with pytest.raises(DynaormError):
        s.save(Note(note_id="n1"), condition="body = 'x'")  # type: ignore[arg-type]
    with pytest.raises(DynaormError):
        s.check(Note, note_id="n1", condition=True)  # type: ignore[arg-type]


# -- deletes by key and in bulk ----------------------------------------------------------
def test_delete_by_key(db: TestBackend) -> None:
    _seed(db, Note(note_id="n1"), Note(note_id="n2"))
    s = db.session()
    s.delete(Note, note_id="n1")
    s.commit()
    assert [r["note_id"] for r in db.scan()] == ["n2"]
    s.delete(Note, note_id="n1")
    with pytest.raises(ItemNotFoundError):
        s.commit()
    s.delete(Note, note_id="n2", condition=F("body") == "x")
    with pytest.raises(ConditionFailedError):
        s.commit()
    assert len(db.scan()) == 1


def test_delete_by_key_with_rules_reads_first_and_removes_guards(db: TestBackend) -> None:
    _seed(db, User(user_id="u1", username="ann", email="a@x.com"))
    s = db.session()
    sent = _ops(db)
    s.delete(User, user_id="u1")
    s.commit()
    assert sent.operations == ["GetItem", "TransactWriteItems"]
    assert db.scan() == []
    s.delete(User, user_id="u1")
    with pytest.raises(ItemNotFoundError):
        s.commit()
    assert db.scan() == []


def test_delete_many_objects_and_keys(db: TestBackend) -> None:
    _seed(db, *(Note(note_id=f"n{i}") for i in range(30)))
    s = db.session()
    loaded = [s.get(Note, note_id=f"n{i}") for i in range(3)]
    s.delete_many([n for n in loaded if n is not None])
    assert all(n is not None and dynaorm.inspect(n).deleted for n in loaded)
    sent = _ops(db)
    s.delete_many(Note, [{"note_id": f"n{i}"} for i in range(3, 30)])
    assert sent.operations == ["BatchWriteItem", "BatchWriteItem"]
    assert db.scan() == []


def test_delete_many_refuses_entities_with_rules(db: TestBackend) -> None:
    _seed(db, User(user_id="u1", username="ann", email="a@x.com"))
    s = db.session()
    before = db.scan()
    with pytest.raises(DynaormError, match="rules"):
        s.delete_many(User, [{"user_id": "u1"}])
    assert db.scan() == before


# -- the evaluator ---------------------------------------------------------------------------
def test_evaluator_agrees_with_the_backend(db: TestBackend) -> None:
    """The same conditions as a ConditionCheck on a stored item: DynamoDB's verdict and the
    evaluator's are the same."""
    _seed(db, Counter(name="c1", count=5, tags={"a", "b"}, log=["x"], status="open"))
    stored = db.scan_raw()[0]
    conds = [F("count") == 5, F("count") != 4, F("label") != 1, F("label") == 1,
             F("status").begins_with("op"), F("tags").contains("a"),
             F("log").contains("x"), F("count").between(5, 6), F("label").not_exists(),
             F("status").is_in("open", "shut"), ~(F("label") == 1)]
    s = db.session()
    for cond in conds:
        s.check(Counter, name="c1", condition=cond)
        try:
            s.commit()
            verdict = True
        except ConditionFailedError:
            verdict = False
        assert holds(cond, stored) is verdict, cond
