"""Red team of tenant-scoped sessions (contract 22, issue 61): keys whose rendered values
collide across tenants, previous layouts, key conversions, scans with hostile filters,
typed scope values. Engines: moto and DynamoDB Local, sync and async (the ``db``
fixture's session kinds)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, cast

import pytest

from dynaorm import AsyncSession, Entity, F, InvalidCursorError, ScopeError, Session, Table
from dynaorm.aio.blocking import BlockingAsyncSession
from dynaorm.protocol.steps import call
from dynaorm.schema.rules.previous import Previous
from dynaorm.testing import TestBackend, use_tables, worker_suffix
from tests.conftest import wire_of

red = Table("red_scope")


class Lowered(Entity):
    """The tenant goes into the key lower-cased: 'T1' and 't1' share a partition."""

    class Meta:
        table = red
        pk = "TENANT#{tenant_id!l}"
        sk = "LOW#{low_id}"

    tenant_id: str
    low_id: str
    secret: str = ""


class OldLayout(Entity):
    """Its previous layout's key did not carry the tenant."""

    class Meta:
        table = red
        pk = "TENANT#{tenant_id}#OLD#{old_id}"
        sk = "OLD"
        previous = Previous(pk="OLD#{old_id}")

    tenant_id: str
    old_id: str
    secret: str = ""


class Note(Entity):
    """Plainly scoped."""

    class Meta:
        table = red
        pk = "TENANT#{tenant_id}"
        sk = "NOTE#{note_id}"

    tenant_id: str
    note_id: str
    secret: str = ""


class Counted(Entity):
    """A numeric tenant."""

    class Meta:
        table = red
        pk = "ORG#{org}"
        sk = "C#{cid}"

    org: int
    cid: str


@pytest.fixture
def rdb(db: TestBackend, request: pytest.FixtureRequest) -> Iterator[TestBackend]:
    with use_tables(red, endpoint_url=db.endpoint_url, name_suffix=worker_suffix(),
                    wire=wire_of(request)) as tb:
        tb.session_kind = db.session_kind
        yield tb


def scoped(tb: TestBackend, **scope: Any) -> Session:
    if tb.session_kind == "async":
        return cast(Session, BlockingAsyncSession(AsyncSession(red, scope=scope)))
    return Session(red, scope=scope)


def test_a_lossy_key_conversion_of_the_scope_field(rdb: TestBackend) -> None:
    """Tenant 'T1' (another tenant) and 't1' render the same partition: a session scoped
    to 't1' must not be able to read 'T1''s items."""
    with rdb.session() as s:
        s.save(Lowered(tenant_id="T1", low_id="a", secret="of T1"))
    s1 = scoped(rdb, tenant_id="t1")
    # refused: the scope cannot cover an entity whose key folds the tenant
    with pytest.raises(ScopeError, match="exactly"):
        s1.get(Lowered, tenant_id="t1", low_id="a")
    with pytest.raises(ScopeError, match="exactly"):
        s1.query(Lowered, tenant_id="t1").all()
    with pytest.raises(ScopeError, match="exactly"):
        s1.scan(Lowered).all()


def test_a_previous_layout_without_the_tenant(rdb: TestBackend) -> None:
    """A row of the old layout ('OLD#{old_id}', no tenant) of tenant t2: a session
    scoped to t1 reading old_id 'o1' must not get it."""
    raw = {"pk": {"S": "OLD#o1"}, "sk": {"S": "OLD"}, "_type": {"S": "OldLayout"},
           "tenant_id": {"S": "t2"}, "old_id": {"S": "o1"}, "secret": {"S": "of t2"}}
    red.db.driver.run(call("PutItem", {"TableName": red.name, "Item": raw}))
    s1 = scoped(rdb, tenant_id="t1")
    with pytest.raises(ScopeError, match="OLD#"):
        s1.get(OldLayout, tenant_id="t1", old_id="o1")
    with rdb.session() as s:  # (unscoped, it is read from its old layout, at its own key:
        # t2's; never for t1's key, which the old layout cannot tell from t2's)
        got = s.get(OldLayout, tenant_id="t2", old_id="o1")
        assert got is not None and got.secret == "of t2"
        assert s.get(OldLayout, tenant_id="t1", old_id="o1") is None


def test_a_user_filter_cannot_escape_the_scope_filter(rdb: TestBackend) -> None:
    with rdb.session() as s:
        for t in ("t1", "t2"):
            s.save(Note(tenant_id=t, note_id="x", secret=f"of {t}"))
    s1 = scoped(rdb, tenant_id="t1")
    hostile = (F("tenant_id") == "t2") | (F("secret") == "of t2") | F("note_id").exists()
    assert {o.tenant_id for o in s1.scan(Note).filter(hostile).all()} == {"t1"}
    assert s1.scan(Note).filter(hostile).count() == 1
    assert {o.tenant_id for o in s1.scan(Note, segment=0, segments=2).all()
            } | {o.tenant_id for o in s1.scan(Note, segment=1, segments=2).all()
                 } == {"t1"}


@pytest.mark.parametrize("value", [1, "1"])
def test_a_numeric_scope_reads_its_own_items(rdb: TestBackend, value: Any) -> None:
    """scope={'org': 1} and an int field; and a str '1' for it: keys render alike, so
    a scan must find the same items (fail-closed, but wrong)."""
    with rdb.session() as s:
        s.save(Counted(org=1, cid="a"))
        s.save(Counted(org=2, cid="b"))
    if True:
        s1 = scoped(rdb, org=value)
        assert [c.cid for c in s1.query(Counted, org=1).all()] == ["a"]
        assert [c.cid for c in s1.scan(Counted).all()] == ["a"], value


def test_stage_write_by_key_holds_the_scope(rdb: TestBackend) -> None:
    """``stage_write`` (the jobs' surface) of an update or a check by another tenant's
    key: refused before sending, as ``update()``/``check()`` are."""
    from dynaorm.write.updates import StagedCheck, StagedUpdate

    with rdb.session() as s:
        s.save(Note(tenant_id="t2", note_id="n", secret="of t2"))
    s1 = scoped(rdb, tenant_id="t1")
    spec_key = {"tenant_id": "t2", "note_id": "n"}
    with pytest.raises(ScopeError):
        s1.stage_write(StagedUpdate(Note, spec_key, None, False).set(secret="mine"))
    with pytest.raises(ScopeError):
        s1.stage_write(StagedCheck(Note, {"pk": "TENANT#t2", "sk": "NOTE#n"},
                                   F("secret") == "of t2"))
    s1.commit()
    with rdb.session() as s:
        stored = s.get(Note, tenant_id="t2", note_id="n")
    assert stored is not None and stored.secret == "of t2"
    mine = StagedUpdate(Note, {"tenant_id": "t1", "note_id": "n"}, None, True)
    s1.stage_write(mine.set(secret="t1's"))
    s1.commit()
    assert s1.get(Note, tenant_id="t1", note_id="n") is not None


@pytest.mark.parametrize("value", ["", None, "t1#x", "#", 0.0 * 0])
def test_scopes_that_cannot_hold(value: Any) -> None:
    """Empty, None, a value with '#' (it would render another tenant's partition
    prefix): refused when the session is made (0 renders '0': a scope)."""
    if value == 0:
        assert Session(red, scope={"tenant_id": value}) is not None
        return
    with pytest.raises(ScopeError):
        Session(red, scope={"tenant_id": value})


def test_unicode_forms_are_other_tenants(rdb: TestBackend) -> None:
    """'é' composed and decomposed render different keys: each its own tenant."""
    nfc, nfd = "caf\u00e9", "cafe\u0301"
    with rdb.session() as s:
        s.save(Note(tenant_id=nfd, note_id="n", secret="of nfd"))
    s1 = scoped(rdb, tenant_id=nfc)
    with pytest.raises(ScopeError):
        s1.get(Note, tenant_id=nfd, note_id="n")
    assert s1.get(Note, tenant_id=nfc, note_id="n") is None
    assert s1.scan(Note).all() == []


def test_a_scan_cursor_of_another_session_stays_in_the_scope(rdb: TestBackend) -> None:
    """A cursor from an unscoped scan (positioned among t2's items) or a tampered one
    given to a scoped scan: the scope's filter still holds."""
    with rdb.session() as s:
        for t in ("t1", "t2", "t3"):
            for n in range(3):
                s.save(Note(tenant_id=t, note_id=f"n{n}", secret=f"of {t}"))
    with rdb.session() as s:
        page = s.scan(Note).page_size(2).page()
    assert page.cursor is not None
    s1 = scoped(rdb, tenant_id="t1")
    with pytest.raises(InvalidCursorError):  # (a cursor is bound to its read's filter)
        s1.scan(Note).page_size(2).page(page.cursor)
    mine = s1.scan(Note).page_size(2).page()
    assert mine.cursor is not None
    tampered = mine.cursor[:-4] + ("AAAA" if not mine.cursor.endswith("AAAA") else "BBBB")
    with pytest.raises(InvalidCursorError):
        s1.scan(Note).page_size(2).page(tampered)
    seen, cursor = list(mine.items), mine.cursor
    while cursor is not None:
        got = s1.scan(Note).page_size(2).page(cursor)
        seen.extend(got.items)
        cursor = got.cursor
    assert sorted((n.tenant_id, n.note_id) for n in seen) == [
        ("t1", "n0"), ("t1", "n1"), ("t1", "n2")]
