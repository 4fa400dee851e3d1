"""TTL with rules (contract 18, amends 14): an expired owner never blocks its unique values
(guards carry and follow their owner's TTL, and a claim over an expired owner's guard
succeeds); the readable history of a versioned entity never has gaps (version rows keep
their TTL aside, never under the TTL attribute); ``dynaorm check`` knows these rules.

TTL values in the past are written directly: moto and dynoxide never delete expired items,
so those tests see them still stored, which is the state these rules are about; DynamoDB
Local runs a TTL sweeper, so an expired item may be gone at any moment there, and the
assertions hold either way. ``test_ttl.py`` covers the TTL attribute itself."""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from pydantic import Field

from dynaorm import (
    ConflictError,
    DynaormError,
    Entity,
    ItemExistsError,
    Session,
    Table,
    UniqueConstraintError,
)
from dynaorm.jobs.checking import check_table
from dynaorm.testing import TestBackend
from tests.integration.test_ttl import Lock, Login, cache
from tests.support.engines import on_engine
from tests.support.recording import send

rules = Table("ttl-rules", ttl="expires")


class Member(Entity):
    class Meta:
        table = rules
        pk = "MEMBER#{member_id}"
        sk = "PROFILE"
        unique = ("email",)

    member_id: str
    email: str
    expires: datetime | None = None


class Doc(Entity):
    class Meta:
        table = rules
        pk = "DOC#{doc_id}"
        sk = "DOC"
        versioned = True

    doc_id: str
    body: str
    expires: datetime | None = None


class Pass(Entity):
    """Versioned and unique, its TTL a required int stored under an alias."""

    class Meta:
        table = rules
        pk = "PASS#{code}"
        sk = "PASS"
        versioned = True
        unique = ("holder",)

    code: str
    holder: str
    until: int = Field(alias="expires")


PAST = datetime.now(UTC).replace(microsecond=0) - timedelta(hours=1)
EARLIER = PAST - timedelta(hours=1)
LATER = datetime.now(UTC).replace(microsecond=0) + timedelta(days=1)
LATEST = LATER + timedelta(days=1)


@pytest.fixture
def db(backend: str | None) -> Iterator[TestBackend]:
    yield from on_engine(backend, rules)


def _raw(db: TestBackend) -> dict[tuple[str, str], dict[str, Any]]:
    return {(i["pk"], i["sk"]): i for i in db.scan()}


def _guard(db: TestBackend, key: str) -> dict[str, Any]:
    return _raw(db)[(key, key)]


def _epoch(at: datetime) -> int:
    return int(at.timestamp())


def _put(db: TestBackend, item: dict[str, Any]) -> None:
    send(db.table, "PutItem", {"TableName": db.table.name, "Item": item})


def _expire(db: TestBackend, key: str, sk: str | None = None) -> None:
    """The TTL of the item at ``key`` passes (time moves on, as far as reads can tell)."""
    send(db.table, "UpdateItem", {
        "TableName": db.table.name, "UpdateExpression": "SET expires = :t",
        "ExpressionAttributeValues": {":t": {"N": str(_epoch(PAST))}},
        "Key": {"pk": {"S": key}, "sk": {"S": sk or key}}})


def _live(items: dict[tuple[str, str], dict[str, Any]]) -> dict[tuple[str, str], Any]:
    """The items whose TTL has not passed (an engine with a TTL sweeper deletes the rest
    whenever it likes)."""
    return {k: i for k, i in items.items()
            if not isinstance(i.get("expires"), int) or i["expires"] > time.time()}


# -- unique values ------------------------------------------------------------------------
def test_a_claim_over_an_expired_owner_succeeds(db: TestBackend) -> None:
    s = db.session()
    s.save(Member(member_id="old", email="bob@x.io", expires=LATEST))
    s.commit()
    assert _guard(db, "email#bob@x.io")["expires"] == _epoch(LATEST)  # the owner's TTL
    _expire(db, "MEMBER#old", "PROFILE")  # its TTL passes: the guard's with it
    _expire(db, "email#bob@x.io")
    s.save(Member(member_id="new", email="bob@x.io", expires=LATER))
    s.commit()  # not blocked: the old owner's TTL passed (DynamoDB has not deleted it)
    guard = _guard(db, "email#bob@x.io")
    assert (guard["owner_pk"], guard["expires"]) == ("MEMBER#new", _epoch(LATER))
    found = s.find(Member, email="bob@x.io")
    assert found is not None and found.member_id == "new"
    assert s.get(Member, member_id="old") is None
    with pytest.raises(UniqueConstraintError) as err:  # a live owner still blocks
        s.save(Member(member_id="third", email="bob@x.io"))
        s.commit()
    assert "check --repair" not in str(err.value)


def test_an_expired_item_does_not_block_an_insert_at_its_key(db: TestBackend) -> None:
    s = db.session()
    s.save(Member(member_id="m1", email="a@x.io", expires=PAST))
    s.commit()
    s.save(Member(member_id="m1", email="b@x.io"))  # reads see no m1: a save inserts it
    s.commit()
    got = s.get(Member, member_id="m1")
    assert got is not None and got.email == "b@x.io" and got.expires is None
    s.save(Member(member_id="m1", email="c@x.io"))
    with pytest.raises(ItemExistsError):  # a live item still does
        s.commit()


def test_guards_carry_and_follow_their_owners_ttl(db: TestBackend) -> None:
    s = db.session()
    m = Member(member_id="m1", email="a@x.io", expires=LATER)
    s.save(m)
    s.commit()
    assert _guard(db, "email#a@x.io")["expires"] == _epoch(LATER)
    m.expires = LATEST  # a save that changes only the TTL rewrites the guard with it
    s.save(m)
    s.commit()
    assert _guard(db, "email#a@x.io")["expires"] == _epoch(LATEST)
    m.email, m.expires = "b@x.io", LATER  # a new value: its guard carries the TTL too
    s.save(m)
    s.commit()
    raw = _raw(db)
    assert ("email#a@x.io", "email#a@x.io") not in raw
    assert raw[("email#b@x.io", "email#b@x.io")]["expires"] == _epoch(LATER)
    s.update(Member, member_id="m1").set(expires=LATEST)
    s.commit()
    assert _guard(db, "email#b@x.io")["expires"] == _epoch(LATEST)
    s.update(Member, member_id="m1").set(expires=None)  # no TTL: neither has the guard
    s.commit()
    assert "expires" not in _guard(db, "email#b@x.io")
    assert "expires" not in _raw(db)[("MEMBER#m1", "PROFILE")]


def test_an_expired_owner_cannot_take_its_value_back(db: TestBackend) -> None:
    s = db.session()
    old = Member(member_id="old", email="a@x.io", expires=LATER)
    s.save(old)
    s.commit()
    _expire(db, "MEMBER#old", "PROFILE")  # its TTL passes (row and guard alike)
    _expire(db, "email#a@x.io")
    s.save(Member(member_id="new", email="a@x.io"))
    s.commit()
    old.expires = LATEST  # the stale object tries to extend its life with the value
    s.save(old)
    with pytest.raises(ConflictError):  # its guard is another's now (or, where the
        s.commit()                     # engine's sweeper deleted it, the row is gone)
    assert _guard(db, "email#a@x.io")["owner_pk"] == "MEMBER#new"


def test_a_guard_without_ttl_says_to_run_check_repair(db: TestBackend) -> None:
    s = db.session()
    s.save(Member(member_id="old", email="a@x.io", expires=LATER))
    s.commit()
    send(db.table, "UpdateItem", {  # a guard as 0.2 wrote it: no TTL
        "TableName": db.table.name, "UpdateExpression": "REMOVE expires",
        "Key": {"pk": {"S": "email#a@x.io"}, "sk": {"S": "email#a@x.io"}}})
    _expire(db, "MEMBER#old", "PROFILE")
    s.save(Member(member_id="new", email="a@x.io"))
    with pytest.raises(UniqueConstraintError, match=r"dynaorm check --repair"):
        s.commit()
    for _ in range(2):  # (a second pass only where DynamoDB Local's sweeper deleted the
        result = check_table(rules, fix=True)  # owner between the judgment and its
        if result.problems:                    # confirmation: the finding moved, dropped)
            break
    # (stamped with the owner's passed TTL; or, where the engine's sweeper deleted the
    # owner already, deleted as an orphan: either way the value is free)
    assert [p.split()[0] for p in result.problems] in (["guard-ttl"], ["orphan-guard"])
    assert result.repaired == 1
    guard = _raw(db).get(("email#a@x.io",) * 2)
    assert guard is None or guard["expires"] == _epoch(PAST)
    s.save(Member(member_id="new", email="a@x.io"))
    s.commit()
    assert _guard(db, "email#a@x.io")["owner_pk"] == "MEMBER#new"
    assert check_table(rules).problems == []


# -- history ------------------------------------------------------------------------------
def test_history_has_no_gaps_when_ttls_pass(db: TestBackend) -> None:
    s = db.session()
    doc = Doc(doc_id="d1", body="one", expires=LATEST)
    s.save(doc)
    s.commit()
    for body, at in (("two", LATEST), ("three", LATEST), ("four", LATER)):
        doc.body, doc.expires = body, at
        s.save(doc)
        s.commit()
    raw = _raw(db)
    rows = [i for (pk, sk), i in raw.items() if pk == "DOC#d1" and not sk.startswith("v0_")]
    assert len(rows) == 4 and all("expires" not in r for r in rows)  # kept aside
    assert [r["_version_ttl"] for r in rows] == [_epoch(LATEST)] * 3 + [_epoch(LATER)]
    assert raw[("DOC#d1", "v0_DOC")]["expires"] == _epoch(LATER)  # the latest copy has it
    for n, at in ((1, EARLIER), (2, PAST), (3, EARLIER)):  # time moves past their TTLs
        send(db.table, "UpdateItem", {
            "TableName": db.table.name, "UpdateExpression": "SET #t = :t",
            "ExpressionAttributeNames": {"#t": "_version_ttl"},
            "ExpressionAttributeValues": {":t": {"N": str(_epoch(at))}},
            "Key": {"pk": {"S": "DOC#d1"}, "sk": {"S": f"v{n:08d}_DOC"}}})
    history = s.history(Doc, doc_id="d1").all()
    assert [(d.version, d.body) for d in history] == [  # type: ignore[attr-defined]
        (1, "one"), (2, "two"), (3, "three"), (4, "four")]
    assert [d.expires for d in history] == [EARLIER, PAST, EARLIER, LATER]
    second = s.get(Doc, doc_id="d1", version=2)
    assert second is not None and second.expires == PAST
    latest = s.get(Doc, doc_id="d1")
    assert latest is not None and latest.body == "four"


def test_an_expired_entity_keeps_its_history_like_a_deleted_one(db: TestBackend) -> None:
    s = db.session()
    p = Pass(code="c1", holder="ada", until=_epoch(LATER))
    s.save(p)
    s.commit()
    p.until = _epoch(PAST)  # it expires
    s.save(p)
    s.commit()
    assert s.get(Pass, code="c1") is None
    assert [(x.version, x.until) for x in s.history(Pass, code="c1")] == [  # type: ignore[attr-defined]
        (1, _epoch(LATER)), (2, _epoch(PAST))]
    one = s.get(Pass, code="c1", version=1)
    assert one is not None and one.until == _epoch(LATER)
    again = Pass(code="c1", holder="ada", until=_epoch(LATEST))  # its key and value are free
    s.save(again)
    s.commit()
    assert again.version == 3  # type: ignore[attr-defined]
    assert [x.version for x in s.history(Pass, code="c1")] == [1, 2, 3]  # type: ignore[attr-defined]
    assert _guard(db, "holder#ada")["expires"] == _epoch(LATEST)
    s.delete(again, history=True)
    s.commit()
    assert [i for i in _raw(db) if i[0].startswith("PASS#")] == []


# -- check --------------------------------------------------------------------------------
@pytest.mark.sync_only
def test_check_on_a_healthy_ttl_table_reports_nothing(db: TestBackend) -> None:
    s = db.session()
    s.save(Member(member_id="old", email="a@x.io", expires=PAST))
    s.save(Member(member_id="live", email="b@x.io", expires=LATER))
    s.save(Member(member_id="plain", email="c@x.io"))
    s.commit()
    s.save(Member(member_id="new", email="a@x.io", expires=LATER))  # over the expired one
    doc = Doc(doc_id="d1", body="one", expires=LATER)
    s.save(doc)
    s.commit()
    doc.body, doc.expires = "two", PAST  # the entity expires: its history stays
    s.save(doc)
    s.save(Pass(code="c1", holder="ada", until=_epoch(PAST)))
    s.save(Pass(code="c2", holder="bob", until=_epoch(LATER)))
    s.commit()
    before = _live(_raw(db))
    result = check_table(rules, fix=True)
    assert (result.problems, result.repairs) == ([], [])
    assert _live(_raw(db)) == before


@pytest.mark.sync_only
def test_check_repair_stamps_missing_guard_ttls_and_moves_history_ttls(
        db: TestBackend) -> None:
    s = db.session()
    s.save(Member(member_id="m1", email="a@x.io", expires=LATER))
    doc = Doc(doc_id="d1", body="one", expires=LATER)
    s.save(doc)
    s.commit()
    doc.body = "two"
    s.save(doc)
    s.commit()
    guard = {"pk": {"S": "email#a@x.io"}, "sk": {"S": "email#a@x.io"},
             "_type": {"S": "dynaorm:unique"}, "owner_pk": {"S": "MEMBER#m1"},
             "owner_sk": {"S": "PROFILE"}, "owner_type": {"S": "Member"},
             "unique_field": {"S": "email"}}
    _put(db, guard)  # as 0.2 wrote it: no TTL
    row = send(db.table, "GetItem", {
        "TableName": db.table.name,
        "Key": {"pk": {"S": "DOC#d1"}, "sk": {"S": "v00000001_DOC"}}})["Item"]
    row["expires"] = row.pop("_version_ttl")  # a version row as 0.2 wrote it
    _put(db, row)
    found = check_table(rules)
    assert sorted(p.split()[0] for p in found.problems) == ["guard-ttl", "history-ttl"]
    fixed = check_table(rules, fix=True)
    assert fixed.repaired == 2 and fixed.failed == 0
    assert _guard(db, "email#a@x.io")["expires"] == _epoch(LATER)
    stored = _raw(db)[("DOC#d1", "v00000001_DOC")]
    assert "expires" not in stored and stored["_version_ttl"] == _epoch(LATER)
    assert check_table(rules).problems == []
    assert [d.body for d in s.history(Doc, doc_id="d1")] == ["one", "two"]


@pytest.mark.sync_only
def test_check_puts_a_missing_guard_with_its_owners_ttl(db: TestBackend) -> None:
    s = db.session()
    s.save(Member(member_id="m1", email="a@x.io", expires=LATER))
    s.commit()
    send(db.table, "DeleteItem", {
        "TableName": db.table.name,
        "Key": {"pk": {"S": "email#a@x.io"}, "sk": {"S": "email#a@x.io"}}})
    fixed = check_table(rules, fix=True)
    assert [p.split()[0] for p in fixed.problems] == ["missing-guard"]
    assert _guard(db, "email#a@x.io")["expires"] == _epoch(LATER)
    assert time.time() < _epoch(LATER)


# --- a key move onto an expired item, a second writer in the window (issue 59, point 5) ---
# (red team of issue 59's fixes; moved from integration/test_fix59_red_team.py)


@pytest.fixture
def ttl_tb(backend: str | None) -> Any:
    yield from on_engine(backend, cache)


def test_a_move_onto_an_expired_key_revived_in_the_window_is_refused(ttl_tb: Any) -> None:
    """A second writer revives the expired item (a live TTL) after the move is planned and
    before it commits: the move must not overwrite it, must say so with a typed error, and
    must leave the table as it was (the mover's item where it was, the reviver's intact)."""
    past, later, other = int(time.time()) - 60, int(time.time()) + 600, int(time.time()) + 900
    s = Session(cache)
    s.save(Lock(name="old", until=past))
    s.save(Lock(name="mine", until=later))
    s.commit()
    lock = s.get(Lock, name="mine")
    assert lock is not None
    lock.name = "old"
    s.save(lock)
    with Session(cache) as second:  # the window: "old" is live again
        second.save(Lock(name="old", until=other))
    with pytest.raises(DynaormError):
        s.commit()
    check = Session(cache)
    assert check.get(Lock, name="old", consistent=True) == Lock(name="old", until=other)
    assert check.get(Lock, name="mine", consistent=True) == Lock(name="mine", until=later)


def test_a_login_move_onto_an_expired_guard_revived_in_the_window_is_refused(
        ttl_tb: Any) -> None:
    """The same with a unique guard moving along: the revived login keeps its token."""
    from datetime import UTC, datetime, timedelta

    s = Session(cache)
    s.save(Login(user="u1", token="gone", expires=datetime.now(UTC) - timedelta(minutes=1)))
    s.save(Login(user="u2", token="t2", expires=datetime.now(UTC) + timedelta(hours=1)))
    s.commit()
    login = s.get(Login, user="u2", token="t2")
    assert login is not None
    login.user, login.token = "u1", "gone"
    s.save(login)
    revived = Login(user="u1", token="gone", expires=datetime.now(UTC) + timedelta(hours=2))
    with Session(cache) as second:  # the expired login renewed in the window
        second.save(revived)
    with pytest.raises(DynaormError):
        s.commit()
    check = Session(cache)
    found = check.find(Login, token="gone", consistent=True)
    assert found is not None and revived.expires is not None and found.expires is not None
    assert (found.user, int(found.expires.timestamp())) == ("u1", int(revived.expires.timestamp()))
    assert check.find(Login, token="t2", consistent=True) is not None
    assert len(ttl_tb.scan()) == 4  # two logins, two guards


