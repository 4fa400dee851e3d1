"""Round trip without loss (contract 24, amends 14): an item another writer stored, read
through a model and saved back, with or without a change, keeps every attribute and map
member the change did not touch as stored, byte for byte (raw GetItem compared before and
after); a change to one member of a map writes that member. The pure merge is
``tests/unit/test_merge.py``; stored time formats are ``test_stored_formats.py``.

The property runs on moto and DynamoDB Local (the reference: it normalizes numbers as it
stores them, so "as stored" is what a raw GetItem read before the save).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from datetime import datetime
from decimal import Decimal
from typing import Annotated, Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from dynaorm import Entity, Session, StoredAs, Table
from dynaorm.testing import TestBackend, use_tables, worker_suffix
from tests.support.recording import Requests

crm = Table("round-trip", pk="PK", sk="SK", type_attribute="_type")


class Inner(BaseModel):
    level: int = 0


class Prefs(BaseModel):
    theme: str = "light"
    lang: str | None = None
    inner: Inner | None = None


class Contact(Entity):
    class Meta:
        table = crm
        type_name = "Contact"
        pk = "C#{cid}"
        sk = "PROFILE"

    cid: str
    name: str = ""
    score: Decimal | None = None
    visits: int | None = None
    vip: bool | None = None
    tags: set[str] | None = None
    prefs: Prefs | None = None
    meta: dict[str, Any] | None = None
    seen: Annotated[datetime | None, StoredAs("%Y-%m-%dT%H:%M:%SZ")] = None


RUN = itertools.count()


@pytest.fixture
def db(backend: str | None) -> Iterator[TestBackend]:
    with use_tables(crm, endpoint_url=backend, name_suffix=worker_suffix()) as tb:
        yield tb


def put_raw(item: dict[str, Any]) -> None:
    crm.client.put_item(TableName=crm.name, Item=item)


def get_raw(cid: str) -> dict[str, Any] | None:
    found: dict[str, Any] | None = crm.client.get_item(
        TableName=crm.name, Key={"PK": {"S": f"C#{cid}"}, "SK": {"S": "PROFILE"}},
        ConsistentRead=True).get("Item")
    return found


def raw(cid: str, **attrs: Any) -> dict[str, Any]:
    return {"PK": {"S": f"C#{cid}"}, "SK": {"S": "PROFILE"}, "_type": {"S": "Contact"},
            **attrs}


def load(s: Session, cid: str, how: str = "get") -> Contact:
    if how == "get":
        return s.get(Contact, cid=cid)
    (found,) = s.query(Contact, cid=cid).all()
    return found


# -- the defects of issue 82, one test each ---------------------------------------------------
def test_a_changed_member_keeps_the_members_the_nested_model_does_not_declare(
        db: TestBackend) -> None:
    put_raw(raw("1", prefs={"M": {"theme": {"S": "light"}, "beta": {"BOOL": True}}}))
    rec = Requests(crm)
    s = db.session()
    c = load(s, "1")
    assert c.prefs is not None
    c.prefs.theme = "dark"
    s.save(c)
    s.commit()
    assert get_raw("1")["prefs"] == {"M": {"theme": {"S": "dark"}, "beta": {"BOOL": True}}}
    # that member is written by its path, not the whole map
    (_, request), = [c for c in rec.calls if c[0] == "UpdateItem"]
    names = request["ExpressionAttributeNames"]
    assert {"prefs", "theme"} <= set(names.values())
    assert not any(av == {"M": {"theme": {"S": "dark"}, "beta": {"BOOL": True}}}
                   for av in request["ExpressionAttributeValues"].values())


def test_a_declared_member_the_stored_map_lacks_is_not_written_as_null(
        db: TestBackend) -> None:
    put_raw(raw("1", prefs={"M": {"theme": {"S": "light"}}}))
    s = db.session()
    c = load(s, "1", "query")
    assert c.prefs is not None and c.prefs.lang is None
    c.prefs.theme = "dark"
    s.save(c)
    s.commit()
    assert get_raw("1")["prefs"] == {"M": {"theme": {"S": "dark"}}}
    c.prefs.lang = "fr"  # set by the caller: written
    s.save(c)
    s.commit()
    assert get_raw("1")["prefs"] == {"M": {"theme": {"S": "dark"}, "lang": {"S": "fr"}}}


@pytest.mark.parametrize("how", ["get", "query"])
def test_a_key_move_keeps_number_spellings_type_tags_and_undeclared_attributes(
        db: TestBackend, how: str) -> None:
    put_raw(raw("1", score={"N": "1.50"}, visits={"S": "7"}, other={"SS": ["a", "b"]},
                prefs={"M": {"theme": {"S": "light"}, "beta": {"N": "2"}}}))
    before = get_raw("1")
    assert before is not None
    s = db.session()
    c = load(s, "1", how)
    c.name = "Ann"  # a save in place first, then a move from the state it left
    s.save(c)
    s.commit()
    c.cid = "2"
    s.save(c)
    s.commit()
    after = get_raw("2")
    assert after is not None and get_raw("1") is None
    for attr in ("score", "visits", "other", "prefs", "_type", "SK"):
        assert after[attr] == before[attr], attr


def test_a_number_in_another_spelling_is_kept_by_a_move_on_an_engine_that_keeps_it(
        db: TestBackend) -> None:
    put_raw(raw("1", score={"N": "1E2"}, visits={"N": "-0"}))
    before = get_raw("1")
    assert before is not None
    s = db.session()
    c = load(s, "1", "query")  # (a page's compact state: its numbers decoded)
    c.cid = "2"
    s.save(c)
    s.commit()
    after = get_raw("2")
    assert after is not None
    assert (after["score"], after["visits"]) == (before["score"], before["visits"])


def test_a_time_stored_in_its_format_is_written_in_it(db: TestBackend) -> None:
    put_raw(raw("1", seen={"S": "2026-01-02T03:04:05Z"}))
    s = db.session()
    c = load(s, "1")
    assert c.seen == datetime.fromisoformat("2026-01-02T03:04:05+00:00")
    c.seen = datetime.fromisoformat("2026-11-27T09:30:56.761229+00:00")
    s.save(c)
    s.commit()
    stored = get_raw("1")
    assert stored is not None
    assert stored["seen"] == {"S": "2026-11-27T09:30:56Z"}
    assert datetime.strptime(stored["seen"]["S"], "%Y-%m-%dT%H:%M:%SZ")  # the old code's


# -- the property -----------------------------------------------------------------------------
UTF8 = st.characters(codec="utf-8")
TEXT = st.text(UTF8, max_size=6)
NAMES = st.text("abcdefghxyz_.-# 0123456789", min_size=1, max_size=8)
NUMBERS = st.sampled_from(["1.50", "1E2", "-0", "0.0", "100", "1e-3", "7", "-12.250",
                           "12345678901234567890.5", "0.000001"])
TIMES = st.sampled_from(["2026-01-02T03:04:05Z", "2025-12-31T23:59:59Z"])
SCALARS = st.one_of(
    st.builds(lambda s: {"S": s}, TEXT),
    st.builds(lambda n: {"N": n}, NUMBERS),
    st.builds(lambda b: {"BOOL": b}, st.booleans()),
    st.just({"NULL": True}),
    st.builds(lambda b: {"B": b}, st.binary(min_size=1, max_size=4)),
    st.builds(lambda ss: {"SS": sorted(ss)}, st.sets(st.text(UTF8, min_size=1, max_size=4),
                                                      min_size=1, max_size=3)),
    st.builds(lambda ns: {"NS": sorted(ns)}, st.sets(st.sampled_from(["1", "2.5", "-3"]),
                                                      min_size=1, max_size=3)),
)
VALUES = st.recursive(SCALARS, lambda inner: st.one_of(
    st.builds(lambda m: {"M": m}, st.dictionaries(NAMES, inner, max_size=3)),
    st.builds(lambda li: {"L": li}, st.lists(inner, max_size=3))), max_leaves=8)
PREFS = st.builds(
    lambda theme, lang, inner, extra: {"M": {
        **extra, **({"theme": {"S": theme}} if theme is not None else {}),
        **({"lang": lang} if lang is not None else {}),
        **({"inner": inner} if inner is not None else {})}},
    st.none() | st.sampled_from(["light", "dark"]),
    st.none() | st.sampled_from([{"S": "en"}, {"NULL": True}]),
    st.none() | st.builds(lambda lv, ex: {"M": {**ex, **({"level": {"N": lv}} if lv else {})}},
                          st.none() | st.sampled_from(["1", "1E1", "-0"]),
                          st.dictionaries(st.sampled_from(["x", "y.z"]), SCALARS, max_size=2)),
    st.dictionaries(st.sampled_from(["beta", "a.b", "x y", "[0]"]), VALUES, max_size=2))
STORED = st.fixed_dictionaries({}, optional={
    "name": st.builds(lambda s: {"S": s}, TEXT),
    "score": st.one_of(st.builds(lambda n: {"N": n}, NUMBERS), st.just({"S": "2.5"})),
    "visits": st.sampled_from([{"N": "7"}, {"N": "-0"}, {"N": "1E1"}, {"S": "8"}]),
    "vip": st.sampled_from([{"BOOL": True}, {"N": "1"}, {"S": "false"}, {"NULL": True}]),
    "tags": st.builds(lambda ss: {"SS": sorted(ss)}, st.sets(st.text(UTF8, min_size=1, max_size=3),
                                                            min_size=1, max_size=3)),
    "prefs": PREFS,
    "meta": st.builds(lambda m: {"M": m}, st.dictionaries(NAMES, VALUES, max_size=3)),
    "seen": TIMES.map(lambda t: {"S": t}),
})
EXTRA = st.dictionaries(st.sampled_from(["other", "legacy.field", "Amount", "x y", "n"]),
                        VALUES, max_size=3)
CHANGES = st.sampled_from(["none", "name", "score", "prefs.theme", "prefs.lang",
                           "prefs.inner.level", "meta.add", "meta.drop", "tags", "seen",
                           "move"])


def _change(c: Contact, change: str) -> set[tuple[str, ...]]:
    """Make ``change`` on ``c``: the attributes (or ``attr.member`` paths) it touches."""
    if change == "name":
        c.name += "!"
        return {("name",)}
    if change == "score":
        c.score = (c.score or Decimal(0)) + 1
        return {("score",)}
    if change == "tags":
        c.tags = {*(c.tags or ()), "new"}
        return {("tags",)}
    if change == "seen":
        c.seen = datetime.fromisoformat("2027-05-06T07:08:09+00:00")
        return {("seen",)}
    if change.startswith("prefs"):
        if c.prefs is None:
            c.prefs = Prefs()
            return {("prefs",)}
        if change == "prefs.theme":
            c.prefs.theme += "x"
            return {("prefs", "theme")}
        if change == "prefs.lang":
            c.prefs.lang = (c.prefs.lang or "") + "x"
            return {("prefs", "lang")}
        if c.prefs.inner is None:
            c.prefs.inner = Inner(level=3)
            return {("prefs", "inner")}
        c.prefs.inner.level += 1
        return {("prefs", "inner", "level")}
    if change.startswith("meta"):
        if c.meta is None:
            c.meta = {"k": "v"}
            return {("meta",)}
        if change == "meta.add" or not c.meta:
            c.meta["added"] = 1
            return {("meta", "added")}
        name = sorted(c.meta)[0]
        del c.meta[name]
        return {("meta", name)}
    return set()


def _members(av: Any, path: tuple[str, ...]) -> Iterator[tuple[tuple[str, ...], Any]]:
    """Every (path, value) of an attribute value, maps looked into."""
    yield path, av
    if isinstance(av, dict) and isinstance(av.get("M"), dict):
        for name, inner in av["M"].items():
            yield from _members(inner, (*path, name))


def _untouched(path: tuple[str, ...], touched: set[tuple[str, ...]]) -> bool:
    return not any(path[:len(t)] == t or t[:len(path)] == path for t in touched)


def _at(item: dict[str, Any], path: tuple[str, ...]) -> Any:
    """The value at ``path`` of a raw item (``None``: absent)."""
    found: Any = item.get(path[0])
    for name in path[1:]:
        if not isinstance(found, dict) or not isinstance(found.get("M"), dict):
            return None
        found = found["M"].get(name)
    return found


@settings(max_examples=40, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture,
                                 HealthCheck.too_slow])
@given(stored=STORED, extra=EXTRA, change=CHANGES, how=st.sampled_from(["get", "query"]))
def test_a_round_trip_leaves_what_it_did_not_touch_as_stored(
        db: TestBackend, stored: dict[str, Any], extra: dict[str, Any], change: str,
        how: str) -> None:
    cid = f"p{next(RUN)}"
    put_raw(raw(cid, **extra, **stored))
    before = get_raw(cid)
    assert before is not None
    s = db.session()
    c = load(s, cid, how)
    touched = {("_rev",)}
    if change == "move":
        c.cid = f"{cid}-moved"
        touched |= {("PK",), ("cid",)}
    else:
        touched |= _change(c, change)
    s.save(c)
    s.commit()
    after = get_raw(c.cid)
    assert after is not None
    if change == "move":
        assert get_raw(cid) is None
    for attr, av in before.items():
        for path, value in _members(av, (attr,)):
            if _untouched(path, touched):
                assert _at(after, path) == value, (path, change)
    for attr, av in after.items():  # nothing appears that the change did not write
        for path, _ in _members(av, (attr,)):
            if _untouched(path, touched):
                assert _at(before, path) is not None, (path, change)
    again = load(db.session(), c.cid, how)  # and what it wrote reads back as the object
    assert again == c
