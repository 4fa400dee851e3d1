"""Rules on every write (contract 20): an update's result, not its operand, is held to
the field's bounds, by a condition in the same request or on the read-first path."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any
from uuid import uuid4

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

import dynaorm
from dynaorm import ConditionFailedError, InvalidValueError
from dynaorm.testing import TestBackend
from tests.support.examples import examples
from tests.support.recording import Requests, send
from tests.support.rule_models import (
    Account,
    Address,
    Event,
    Profile,
    Stamp,
    Stats,
    StrictAll,
    StrictWhen,
    VProfile,
)
from tests.support.update_models import Player


def _seed(db: TestBackend, obj: Account) -> None:
    with db.session() as s:
        s.save(obj)


def _update(db: TestBackend, **actions: dict[str, object]) -> Account:
    s = db.session()
    u = s.update(Account, aid="a1")
    for method, values in actions.items():
        getattr(u, method)(**values)
    s.commit()
    return u.result


def test_two_adds_within_le_then_one_past_it_is_refused_naming_the_rule(
        db: TestBackend) -> None:
    _seed(db, Account(aid="a1"))
    assert _update(db, add={"n": 5}).n == 5
    with pytest.raises(ConditionFailedError, match=r"'n'.*le=6"):
        _update(db, add={"n": 5})
    assert db.session().get(Account, aid="a1").n == 5  # readable, unchanged


def test_an_add_is_one_update_item_with_the_rule_in_its_condition(db: TestBackend) -> None:
    _seed(db, Account(aid="a1"))
    sent = Requests(db.table)
    _update(db, add={"n": 1})
    assert sent.operations == ["UpdateItem"]


def test_a_decrement_that_keeps_ge_0_is_accepted_and_one_past_it_refused(
        db: TestBackend) -> None:
    _seed(db, Account(aid="a1", balance=100))
    assert _update(db, add={"balance": -50}).balance == 50
    assert _update(db, add={"balance": -50}).balance == 0
    with pytest.raises(ConditionFailedError, match=r"'balance'.*ge=0") as err:
        _update(db, add={"balance": -1})
    assert err.value.item is not None and err.value.item.balance == 0


def test_repeated_adds_in_one_update_are_held_as_their_sum(db: TestBackend) -> None:
    _seed(db, Account(aid="a1"))
    s = db.session()
    s.update(Account, aid="a1").add(n=4).add(n=3)
    with pytest.raises(ConditionFailedError, match="le=6"):
        s.commit()


def test_float_bounds_both_sides(db: TestBackend) -> None:
    _seed(db, Account(aid="a1", ratio=0.5))
    assert _update(db, add={"ratio": -1.25}).ratio == -0.75
    with pytest.raises(ConditionFailedError, match=r"gt=-1\.0"):
        _update(db, add={"ratio": -0.25})
    with pytest.raises(ConditionFailedError, match=r"lt=1\.0"):
        _update(db, add={"ratio": 1.75})


def test_multiple_of_is_decided_before_sending(db: TestBackend) -> None:
    _seed(db, Account(aid="a1", even=2))
    assert _update(db, add={"even": -4}).even == -2
    s = db.session()
    sent = Requests(db.table)
    s.update(Account, aid="a1").add(even=3)
    with pytest.raises(InvalidValueError, match="multiple_of=2"):
        s.commit()
    assert sent.operations == []


def test_appends_are_held_to_max_length(db: TestBackend) -> None:
    _seed(db, Account(aid="a1"))
    _update(db, append={"recent": ["x"]})
    assert _update(db, prepend={"recent": ["w"]}).recent == ["w", "x"]
    with pytest.raises(ConditionFailedError, match=r"'recent'.*max_length=2"):
        _update(db, append={"recent": ["y"]})
    assert db.session().get(Account, aid="a1").recent == ["w", "x"]


def test_an_operand_longer_than_max_length_is_refused_before_sending(db: TestBackend) -> None:
    _seed(db, Account(aid="a1"))
    sent = Requests(db.table)
    with pytest.raises(InvalidValueError, match="max_length=2"):
        _update(db, append={"recent": ["a", "b", "c"]})
    assert sent.operations == []


def test_min_length_list_counts_the_stored_items(db: TestBackend) -> None:
    _seed(db, Account(aid="a1"))
    assert _update(db, append={"pair": [1]}).pair == [0, 0, 1]


def test_a_set_add_is_held_to_max_length_on_the_union(db: TestBackend) -> None:
    _seed(db, Account(aid="a1", badges={"x"}))
    assert _update(db, add={"badges": {"x", "y"}}).badges == {"x", "y"}  # a union of 2
    with pytest.raises(InvalidValueError, match="badges"):
        _update(db, add={"badges": {"z"}})
    assert db.session().get(Account, aid="a1").badges == {"x", "y"}


def test_a_discard_is_held_to_min_length(db: TestBackend) -> None:
    _seed(db, Account(aid="a1", flags={"a", "b"}))
    assert _update(db, discard={"flags": {"a"}}).flags == {"b"}
    with pytest.raises(InvalidValueError, match="flags"):
        _update(db, discard={"flags": {"b"}})


def test_save_refuses_an_assignment_the_model_refuses(db: TestBackend) -> None:
    _seed(db, Account(aid="a1", balance=3))
    s = db.session()
    obj = s.get(Account, aid="a1")
    obj.balance = -7  # pydantic does not validate assignment
    sent = Requests(db.table)
    with pytest.raises(InvalidValueError, match=r"'balance'.*-7"):
        s.save(obj)
        s.commit()
    assert sent.operations == []
    new = Account(aid="a2")
    new.recent.extend(["x", "y", "z"])  # changed in place
    with pytest.raises(InvalidValueError, match="'recent'"), db.session() as s2:
        s2.save(new)
    assert sent.operations == []
    obj.balance = 4  # a valid change goes through
    with db.session() as s3:
        s3.save(obj)
    assert db.session().get(Account, aid="a1").balance == 4


@pytest.mark.parametrize("cls", [Profile, VProfile])
def test_save_refuses_a_nested_model_changed_in_place_as_an_assignment(
        db: TestBackend, cls: type[Profile]) -> None:
    """(0.6, contract 21) A loaded object's nested model, or a model in a list, changed in
    place (pydantic validates neither) is validated on save like an assignment, loaded
    or written before: 0.5 compared it with the object it was loaded with and saved it."""
    with db.session() as s:
        s.save(cls(pid="p1", address=Address(city="Oslo"), stats=Stats(logins=1),
                   history=[Event(kind="login")]))
    sent = Requests(db.table)
    s = db.session()
    obj = s.get(cls, pid="p1")
    for change, field in ((lambda o: setattr(o.stats, "logins", 9), "stats"),
                          (lambda o: setattr(o.history[0], "kind", ""), "history"),
                          (lambda o: setattr(o.address, "city", 5), "address")):
        change(obj)
        with pytest.raises(InvalidValueError, match=f"'{field}'"):
            s.save(obj)
            s.commit()
        obj = s.get(cls, pid="p1")
    assert sent.operations == ["GetItem"] * 4
    obj.stats.logins = 3  # a valid change in place is saved ...
    s.save(obj)
    s.commit()
    obj.stats.logins = -1  # ... and the object, as written, is checked again
    with pytest.raises(InvalidValueError, match=r"'stats'.*-1"):
        s.save(obj)
        s.commit()
    assert db.session().get(cls, pid="p1").stats == Stats(logins=3)


@settings(max_examples=examples(30), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(logins=st.integers(-2, 5), kind=st.text(max_size=2), city=st.one_of(
    st.text(max_size=3), st.integers(0, 9)))
def test_in_place_changes_are_saved_exactly_where_the_model_takes_them(
        db: TestBackend, logins: int, kind: str, city: object) -> None:
    """(0.6) Nested models changed in place (a model, a model in a list) are saved where
    validating the same values accepts them, and refused before sending where it does not,
    the stored item left as it was."""
    with db.session() as s:
        s.save(Profile(pid="h1", address=Address(city="Oslo"), stats=Stats(),
                       history=[Event(kind="login")]), overwrite=True)
    s = db.session()
    obj = s.get(Profile, pid="h1")
    obj.stats.logins, obj.history[0].kind, obj.address.city = logins, kind, city  # type: ignore[assignment]
    try:
        Stats(logins=logins), Event(kind=kind), Address(city=city)  # type: ignore[arg-type]
    except ValidationError:
        before = db.scan_raw()
        with pytest.raises(InvalidValueError):
            s.save(obj)
            s.commit()
        assert db.scan_raw() == before
    else:
        s.save(obj)
        s.commit()
        assert db.session().get(Profile, pid="h1") == obj


@pytest.mark.parametrize("how", ["all", "get", "page", "first", "update"])
def test_strict_fields_round_trip_on_every_read_path(db: TestBackend, how: str) -> None:
    _round_trip(db, Stamp(sid="x", at=datetime.now(UTC), ref=uuid4()), how)


def _round_trip(db: TestBackend, made: Any, how: str) -> None:
    """``made`` (an entity keyed ``sid="x"``) saved, read back by ``how`` (a read path, or
    an update's result) as it was saved and persisted, then saved again with a new
    ``ref`` and read back as saved."""
    cls = type(made)
    with db.session() as s:
        s.save(made)
    s = db.session()
    q = s.query(cls, sid="x")
    if how == "update":
        u = s.update(cls, sid="x").set(at=made.at)
        s.commit()
        obj = u.result
    else:
        obj = {"all": lambda: q.all()[0], "get": lambda: s.get(cls, sid="x"),
               "page": lambda: q.page().items[0], "first": q.first}[how]()
    assert obj == made
    assert dynaorm.inspect(obj).persisted
    obj.ref = uuid4()
    with db.session() as s2:
        s2.save(obj)
    assert db.session().get(cls, sid="x") == obj


def _before_its_index(db: TestBackend) -> None:
    """A Player row as a writer before ``gsi2`` existed stored it: no index key."""
    with db.session() as s:
        s.save(Player(player_id="p1", handle="ann", score=5))
    row = next(r for r in db.scan_raw() if r["_type"] == {"S": "Player"})
    del row["gsi2pk"], row["gsi2sk"]
    send(db.table, "PutItem", {"TableName": db.table.name, "Item": row})


@pytest.mark.dynaorm_index_lag(0, reason="checks its own writes through a global index")
@pytest.mark.parametrize("how", ["save", "update"])
def test_an_indexed_change_of_an_item_older_than_its_index_writes_the_whole_key(
        db: TestBackend, how: str) -> None:
    _before_its_index(db)
    s = db.session()
    if how == "save":
        obj = s.get(Player, player_id="p1")
        obj.score = 7
        s.save(obj)
    else:
        s.update(Player, player_id="p1").set(score=7)
    s.commit()
    row = next(r for r in db.scan() if r["_type"] == "Player")
    assert (row["gsi2pk"], row["gsi2sk"]) == ("BOARD#main", "0000000007#p1")
    assert [p.score for p in s.query(Player, index="gsi2", board="main").all()] == [7]


@pytest.mark.parametrize("how", ["all", "get", "page", "first"])
def test_a_strict_config_and_a_nested_strict_field_round_trip(db: TestBackend, how: str) -> None:
    _round_trip(db, StrictAll(sid="x", at=datetime.now(UTC), ref=uuid4(),
                              inner=StrictWhen(at=datetime.now(UTC))), how)
