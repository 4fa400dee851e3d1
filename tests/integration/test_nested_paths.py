"""Nested paths (contract 20): updates and conditions address a nested attribute by
path, checked against the model before anything is sent, its value through the nested
model's rules, its result held to them; by key (one UpdateItem) and on the read-first
path (a versioned entity), sync and async."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from dynaorm import ConditionFailedError, Entity, F, InvalidValueError
from dynaorm.testing import TestBackend
from tests.support.models import app
from tests.support.recording import Requests
from tests.support.rule_models import Address, Event, Profile, Stats, VProfile

KINDS = [Profile, VProfile]


def _seed(db: TestBackend, cls: type[Any], **fields: Any) -> None:
    with db.session() as s:
        s.save(cls(pid="p1", address=Address(city="Oslo", zip="0150"), **fields))


def _update(db: TestBackend, cls: type[Any], *actions: tuple[str, Any, Any]) -> Any:
    s = db.session()
    u = s.update(cls, pid="p1")
    for method, path, value in actions:
        if method == "remove":
            u.remove(path)
        else:
            getattr(u, method)(path, value)
    s.commit()
    assert u.result == s.get(cls, pid="p1")  # what it says it stored is what is stored
    return u.result


@pytest.mark.parametrize("cls", KINDS)
def test_one_field_of_a_nested_model_changes_alone(db: TestBackend, cls: type[Any]) -> None:
    _seed(db, cls)
    sent = Requests(db.table)
    got = _update(db, cls, ("set", F("address.city"), "Paris"))
    assert got.address == Address(city="Paris", zip="0150")
    assert sent.operations[:1] == (["UpdateItem"] if cls is Profile else ["GetItem"])


@pytest.mark.parametrize("cls", KINDS)
def test_a_counter_inside_a_stats_object_is_held_to_its_bounds(
        db: TestBackend, cls: type[Any]) -> None:
    _seed(db, cls, stats=Stats(logins=2))
    assert _update(db, cls, ("add", F("stats.logins"), 1)).stats.logins == 3
    error = ConditionFailedError if cls is Profile else InvalidValueError
    with pytest.raises(error, match="logins"):
        _update(db, cls, ("add", F("stats.logins"), 1))
    assert _update(db, cls, ("add", F("stats.logins"), -3)).stats.logins == 0


@pytest.mark.parametrize("cls", KINDS)
def test_a_list_of_events_takes_valid_events_up_to_its_length(
        db: TestBackend, cls: type[Any]) -> None:
    _seed(db, cls)
    got = _update(db, cls, ("append", F("history"), [Event(kind="login", at=1)]),
                  ("set", F("address.zip"), "0151"))
    assert got.history == [Event(kind="login", at=1)] and got.address.zip == "0151"
    assert _update(db, cls, ("set", F("history")[0].__getitem__("kind"), "logout")
                   ).history[0].kind == "logout"
    with pytest.raises(ValidationError):  # the nested model's rules, before sending
        db.session().update(cls, pid="p1").append(F("history"), [{"kind": ""}])
    _update(db, cls, ("prepend", F("history"), [{"kind": "boot"}]))
    error = ConditionFailedError if cls is Profile else InvalidValueError
    with pytest.raises(error, match="history"):
        _update(db, cls, ("append", F("history"), [{"kind": "x"}]))


@pytest.mark.parametrize("cls", KINDS)
def test_remove_and_set_default_by_path(db: TestBackend, cls: type[Any]) -> None:
    _seed(db, cls, prefs={"lang": "no"}, tags=["a", "b"])
    got = _update(db, cls, ("remove", F("address.zip"), None),
                  ("set_default", F("prefs")["theme"], "dark"),
                  ("set_default", F("prefs")["lang"], "en"), ("set", F("tags")[1], "c"))
    assert got.address == Address(city="Oslo") and got.prefs == {"lang": "no", "theme": "dark"}
    assert got.tags == ["a", "c"]
    got = _update(db, cls, ("remove", F("prefs")["lang"], None), ("remove", F("tags")[0], None))
    assert got.prefs == {"theme": "dark"} and got.tags == ["c"]


@pytest.mark.parametrize("cls", KINDS)
def test_a_path_into_nothing_is_refused_and_changes_nothing(
        db: TestBackend, cls: type[Any]) -> None:
    _seed(db, cls, tags=["a"])
    before = db.scan_raw()
    for path, value in ((F("stats.logins"), 1), (F("tags")[3], "z")):
        with pytest.raises((ConditionFailedError, InvalidValueError), match="parent"):
            _update(db, cls, ("set", path, value))
    assert db.scan_raw() == before


@pytest.mark.parametrize(("path", "why"), [
    (F("address.town"), "no field 'town'"), (F("adress.city"), "'adress'"),
    (F("address")[0], "an index"), (F("tags")["x"], "a key"), (F("prefs")[0], "an index"),
    (F("address.city.x"), "a key")])
def test_a_path_the_model_does_not_have_is_refused_before_sending(
        db: TestBackend, path: F, why: str) -> None:
    _seed(db, Profile)
    sent = Requests(db.table)
    s = db.session()
    with pytest.raises(InvalidValueError, match=why):
        s.update(Profile, pid="p1").set(path, "x")
    with pytest.raises(InvalidValueError, match=why):
        s.update(Profile, pid="p1").where(path == "x")
    with pytest.raises(InvalidValueError, match=why):
        s.query(Profile, pid="p1").filter(path == "x")
    with pytest.raises(InvalidValueError, match=why):
        s.save(Profile(pid="p2", address=Address(city="x")), condition=path.exists())
    assert sent.operations == []


def test_overlapping_paths_and_frozen_or_required_fields_are_refused(db: TestBackend) -> None:
    u = db.session().update(Profile, pid="p1").set(F("address.city"), "x")
    with pytest.raises(InvalidValueError, match="overlaps"):
        u.set(address=Address(city="y"))
    with pytest.raises(InvalidValueError, match="required"):
        db.session().update(Profile, pid="p1").remove(F("address.city"))
    with pytest.raises(InvalidValueError, match="primary-key"):
        db.session().update(Profile, pid="p1").set(F("pid"), "p9")


@pytest.mark.parametrize("cls", KINDS)
def test_conditions_and_filters_on_nested_paths(db: TestBackend, cls: type[Any]) -> None:
    _seed(db, cls, prefs={"theme": "dark"}, tags=["a"])
    s = db.session()
    assert s.query(cls, pid="p1").filter(F("address.city") == "Oslo").all()
    assert not s.query(cls, pid="p1").filter(F("prefs")["theme"] == "light").all()
    with pytest.raises(ConditionFailedError):
        s.update(cls, pid="p1").set(F("tags")[0], "b").where(F("address.city") == "Rome")
        s.commit()
    s.rollback()
    s.update(cls, pid="p1").set(F("tags")[0], "b").where(F("tags")[0] == "a")
    s.commit()
    assert s.get(cls, pid="p1").tags == ["b"]


class Place(BaseModel):
    """A nested model whose field has an alias (stored under its name, as every field of a
    nested model is)."""

    model_config = ConfigDict(populate_by_name=True)
    city: str = Field(alias="c")


class Located(Entity):
    class Meta:
        table = app
        pk = "LOCATED#{lid}"
        sk = "LOCATED"

    lid: str
    place: Place = Field(alias="at")


def test_a_nested_path_through_an_alias_is_refused_before_sending(db: TestBackend) -> None:
    """(0.6, contract 21) A path naming a nested model's field by its alias
    (``F("place.c")``) is refused before sending, naming the field it is stored under: 0.5
    wrote a stray attribute ``c`` (read back as the field, while filters read ``city``), and
    a filter on it returned ``[]`` silently."""
    with db.session() as s:
        s.save(Located(lid="l1", at=Place(city="Oslo")))
    sent = Requests(db.table)
    s = db.session()
    with pytest.raises(InvalidValueError, match="'city' is stored under its name"):
        db.session().update(Located, lid="l1").set(F("place.c"), "Rome")
    with pytest.raises(InvalidValueError, match="'city' is stored under its name"):
        s.query(Located, lid="l1").filter(F("place.c") == "Oslo").all()
    with pytest.raises(InvalidValueError, match="'city' is stored under its name"):
        db.session().update(Located, lid="l1").where(F("at.c") == "Oslo")
    assert sent.operations == []
    s.update(Located, lid="l1").set(F("place.city"), "Rome")
    s.commit()
    assert [i["at"] for i in db.scan_raw() if i["pk"]["S"] == "LOCATED#l1"] == [
        {"M": {"city": {"S": "Rome"}}}]
    assert [x.place.city for x in s.query(Located, lid="l1").filter(
        F("place.city") == "Rome")] == ["Rome"]
