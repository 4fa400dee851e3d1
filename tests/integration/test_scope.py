"""Sessions scoped to a tenant (contract 22): ``Session(table, scope={"tenant_id": "t1"})``
and ``AsyncSession`` alike (the ``db`` fixture's async variant) read and write only the
scope's items. Every operation is tried across tenants: each refusal is a ``ScopeError``
raised before anything is sent (no request recorded, the table unchanged); scans are
filtered; a cursor of another tenant's read is refused; a guard that leads out of the
scope finds nothing. Engines: moto (embedded default) and DynamoDB Local (vector search:
the embedded default only, DynamoDB Local has none)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any, cast

import pytest

from dynaorm import (
    AsyncSession,
    DynaormError,
    F,
    InvalidCursorError,
    ScopeError,
    Session,
)
from dynaorm.aio.blocking import BlockingAsyncSession
from dynaorm.testing import TestBackend, use_tables, worker_suffix
from tests.conftest import engine_of, wire_of
from tests.support.recording import Requests
from tests.support.tenant_models import Clip, Customer, Handle, Memo, Setting, Tag, shelf, tenants

#: (what it asserts depends on the engine: it runs on each)
pytestmark = pytest.mark.engines("moto", "local", "dynoxide")

T1 = {"tenant_id": "t1"}


def _canonical(items: Any) -> list[str]:
    """Raw items as sorted canonical text: an engine's attribute order is not the item's."""
    return sorted(json.dumps(i, sort_keys=True, default=repr) for i in items)


@pytest.fixture
def tdb(db: TestBackend, request: pytest.FixtureRequest) -> Iterator[TestBackend]:
    """The tenants table, fresh, on the engine of ``db`` (its kind of session too), with
    two tenants' customers and memos in it."""
    with use_tables(tenants, endpoint_url=db.endpoint_url, name_suffix=worker_suffix(),
                    wire=wire_of(request)) as tb:
        tb.session_kind = db.session_kind
        with tb.session() as s:
            for t in ("t1", "t2"):
                for n in (1, 2):
                    s.save(Customer(tenant_id=t, customer_id=f"c{n}", name=f"{t}-n{n}",
                                    email=f"c{n}@{t}.example", card=f"4111-{t}-{n}"))
                s.save(Memo(tenant_id=t, memo_id="m1", text=f"memo of {t}"))
        yield tb


def scoped(tb: TestBackend, tenant: str = "t1") -> Session:
    """A session scoped to ``tenant``, of the kind the test runs (sync or async)."""
    if tb.session_kind == "async":
        return cast(Session, BlockingAsyncSession(AsyncSession(tenants,
                                                               scope={"tenant_id": tenant})))
    return Session(tenants, scope={"tenant_id": tenant})


def refused(tb: TestBackend, action: Any) -> ScopeError:
    """``action()`` raises ScopeError, sends nothing and leaves the table as it was."""
    before = _canonical(tb.scan_raw(tenants))
    rec = Requests(tenants)
    with pytest.raises(ScopeError) as info:
        action()
    assert rec.calls == []
    assert _canonical(tb.scan_raw(tenants)) == before
    return info.value


def test_reads_outside_the_scope_are_refused_before_sending(tdb: TestBackend) -> None:
    s = scoped(tdb)
    msg = str(refused(tdb, lambda: s.get(Customer, tenant_id="t2", customer_id="c1")))
    assert "tenant_id='t2'" in msg and "tenant_id='t1'" in msg
    refused(tdb, lambda: s.get_many(Customer, [{"tenant_id": "t1", "customer_id": "c1"},
                                               {"tenant_id": "t2", "customer_id": "c1"}]))
    refused(tdb, lambda: s.find(Customer, tenant_id="t2", email="c1@t2.example"))
    refused(tdb, lambda: s.query(Customer, tenant_id="t2", customer_id="c1").all())
    refused(tdb, lambda: s.query(Memo, tenant_id="t2").all())
    refused(tdb, lambda: s.query(Customer, index="gsi1", tenant_id="t2").all())
    refused(tdb, lambda: s.history(Memo, tenant_id="t2", memo_id="m1").all())
    # an index not partitioned by the tenant could read another tenant's items
    msg = str(refused(tdb, lambda: s.query(Customer, index="gsi2", region="eu").all()))
    assert "gsi2" in msg
    # inside the scope all of them read
    c1 = s.get(Customer, tenant_id="t1", customer_id="c1")
    assert c1 is not None and c1.card == "4111-t1-1"
    assert s.find(Customer, tenant_id="t1", email="C1@t1.example") == c1
    assert [c.name for c in s.query(Customer, index="gsi1", tenant_id="t1").all()] == [
        "t1-n1", "t1-n2"]
    assert [m.text for m in s.query(Memo, tenant_id="t1").all()] == ["memo of t1"]
    assert [m.version for m in s.history(Memo, tenant_id="t1", memo_id="m1").all()] == [1]
    assert [c and c.customer_id for c in s.get_many(
        Customer, [{"tenant_id": "t1", "customer_id": "c2"}])] == ["c2"]


def test_scans_are_filtered_to_the_scope(tdb: TestBackend) -> None:
    s = scoped(tdb)
    rec = Requests(tenants)
    found = s.scan(Customer, Memo).all()
    assert sorted((type(o).__name__, o.tenant_id) for o in found) == [
        ("Customer", "t1"), ("Customer", "t1"), ("Memo", "t1")]
    [scan] = rec.of("Scan")
    assert "t1" in str(scan["ExpressionAttributeValues"])  # a filter, on the server
    assert s.scan(Customer).filter(F("tenant_id") == "t2").all() == []
    assert s.scan(Customer, index="gsi1").count() == 2
    assert {c.tenant_id for c in scoped(tdb, "t2").scan(Customer).all()} == {"t2"}


def test_writes_outside_the_scope_are_refused_before_sending(tdb: TestBackend) -> None:
    s = scoped(tdb)
    refused(tdb, lambda: s.save(Customer(tenant_id="t2", customer_id="c9", name="x",
                                         email="x@t2")))
    refused(tdb, lambda: s.delete(Customer, tenant_id="t2", customer_id="c1"))
    refused(tdb, lambda: s.update(Customer, tenant_id="t2", customer_id="c1"))
    refused(tdb, lambda: s.check(Customer, condition=F("name") == "x", tenant_id="t2",
                                 customer_id="c1"))
    refused(tdb, lambda: s.save_many([Tag(tenant_id="t1", tag="a"),
                                      Tag(tenant_id="t2", tag="b")]))
    refused(tdb, lambda: s.delete_many(Tag, [{"tenant_id": "t2", "tag": "a"}]))
    refused(tdb, lambda: s.delete_many([Tag(tenant_id="t2", tag="a")]))
    refused(tdb, lambda: s.delete_many(Setting, [{"name": "a"}]))
    other = scoped(tdb, "t2").get(Customer, tenant_id="t2", customer_id="c1")
    assert other is not None
    refused(tdb, lambda: s.delete(other))
    # an object of the scope, moved to another tenant after staging: refused at commit
    mine = s.get(Customer, tenant_id="t1", customer_id="c2")
    assert mine is not None
    s.save(mine)
    mine.tenant_id = "t2"
    refused(tdb, s.commit)
    # an object loaded in t2 and re-pointed at t1: the move would delete t2's row
    other.tenant_id = "t1"
    refused(tdb, lambda: s.save(other))
    # inside the scope every write lands
    s.save(Customer(tenant_id="t1", customer_id="c3", name="n3", email="c3@t1"))
    s.update(Customer, tenant_id="t1", customer_id="c1").set(notes="vip")
    s.commit()
    s.delete(Customer, tenant_id="t1", customer_id="c2")
    s.commit()
    s.save_many([Tag(tenant_id="t1", tag="a"), Tag(tenant_id="t1", tag="b")])
    s.delete_many(Tag, [{"tenant_id": "t1", "tag": "a"}])
    assert [t.tag for t in s.query(Tag, tenant_id="t1").all()] == ["b"]
    unscoped = Session(tenants)
    assert unscoped.get(Customer, tenant_id="t1", customer_id="c2") is None
    assert unscoped.get(Customer, tenant_id="t2", customer_id="c2") is not None
    got = unscoped.get(Customer, tenant_id="t1", customer_id="c1")
    assert got is not None and got.notes == "vip"


def test_entities_and_guards_the_scope_cannot_cover_are_refused(tdb: TestBackend) -> None:
    s = scoped(tdb)
    msg = str(refused(tdb, lambda: s.get(Setting, name="theme")))
    assert "partition key" in msg and "Setting" in msg
    refused(tdb, lambda: s.scan(Setting).all())
    msg = str(refused(tdb, lambda: s.save(Handle(tenant_id="t1", handle_id="h1",
                                                 handle="ann"))))
    assert "Unique('handle', scope=" in msg
    refused(tdb, lambda: s.find(Handle, handle="ann"))
    with pytest.raises(ScopeError):
        Session(tenants, scope={})
    with pytest.raises(ScopeError):
        Session(tenants, scope={"tenant_id": "a#b"})
    assert isinstance(ScopeError("x"), DynaormError)


def test_a_cursor_of_another_tenant_is_refused(tdb: TestBackend) -> None:
    t1, t2 = scoped(tdb, "t1"), scoped(tdb, "t2")
    q2 = t2.query(Customer, index="gsi1", tenant_id="t2").page_size(1).page()
    assert q2.cursor is not None
    with pytest.raises(InvalidCursorError):
        t1.query(Customer, index="gsi1", tenant_id="t1").page_size(1).page(q2.cursor)
    s2 = t2.scan(Customer).page_size(1).page()
    raw = Session(tenants).scan(Customer).page_size(1).page()
    for cursor in (s2.cursor, raw.cursor):
        if cursor is not None:
            with pytest.raises(InvalidCursorError):
                t1.scan(Customer).page_size(1).page(cursor)
    first = t1.scan(Customer).page_size(1).page()
    seen = list(first.items)
    while first.cursor is not None:
        first = t1.scan(Customer).page_size(1).page(first.cursor)
        seen += first.items
    assert sorted(c.customer_id for c in seen) == ["c1", "c2"]
    assert {c.tenant_id for c in seen} == {"t1"}


def test_a_guard_that_leads_out_of_the_scope_finds_nothing(tdb: TestBackend) -> None:
    """A second writer re-points t1's guard of an email at t2's customer (raw items): the
    scoped find reads the guard, and the owner it names is not returned."""
    raw = Session(tenants)
    guard_key = {"pk": {"S": "TENANT#t1#email#c1@t1.example"},
                 "sk": {"S": "TENANT#t1#email#c1@t1.example"}}
    client = tenants.db
    item = client.driver.run(_get(guard_key), None)["Item"]
    item["owner_pk"] = {"S": "TENANT#t2#CUSTOMER#c1"}
    for attr in list(item):
        if isinstance(item[attr], dict) and item[attr].get("S") == "TENANT#t1#CUSTOMER#c1":
            item[attr] = {"S": "TENANT#t2#CUSTOMER#c1"}
    client.driver.run(_put(item), None)
    assert raw.get(Customer, tenant_id="t2", customer_id="c1") is not None
    assert scoped(tdb).find(Customer, tenant_id="t1", email="c1@t1.example") is None


def _get(key: dict[str, Any]) -> Any:
    from dynaorm.protocol.steps import call

    return call("GetItem", {"TableName": tenants.name, "Key": key, "ConsistentRead": True})


def _put(item: dict[str, Any]) -> Any:
    from dynaorm.protocol.steps import call

    return call("PutItem", {"TableName": tenants.name, "Item": item})


def test_searches_hold_the_scope(tdb: TestBackend, request: pytest.FixtureRequest) -> None:
    if engine_of(request) == "local":
        pytest.skip("DynamoDB Local has no vector index (SearchVectors is unknown there)")
    with use_tables(shelf, endpoint_url=tdb.endpoint_url, name_suffix=worker_suffix(),
                    wire=wire_of(request)) as tb:
        tb.session_kind = tdb.session_kind
        with tb.session() as w:
            for t in ("t1", "t2"):
                w.save(Clip(tenant_id=t, clip_id="k1", embedding=[1.0, 0.0, 0.0, 0.0]))
        s = scoped(tb)
        q = [1.0, 0.0, 0.0, 0.0]
        hits = s.search(Clip, "by_tenant", vector=q, top=5, tenant_id="t1").all()
        assert [(h.item.tenant_id, h.item.clip_id) for h in hits] == [("t1", "k1")]
        rec = Requests(shelf)
        with pytest.raises(ScopeError):
            s.search(Clip, "by_tenant", vector=q, top=5, tenant_id="t2")
        # the tenant as a filter of the index: added to the search condition
        hits = s.search(Clip, "by_kind", vector=q, top=5, kind="note").all()
        assert [h.item.tenant_id for h in hits] == ["t1"]
        with pytest.raises(DynaormError):  # a second condition on the tenant: refused
            s.search(Clip, "by_kind", vector=q, top=5, kind="note").where(
                F("tenant_id") == "t2")
        # an index that neither partitions nor filters by the tenant: refused
        with pytest.raises(ScopeError, match=r"open|vector index"):
            s.search(Clip, "open", vector=q, top=5)
        # only the search the scope allows was sent (one request when the index projects
        # the whole entity, a read by key after it when not); the refused ones sent nothing
        assert [op for op, _ in rec.calls if op == "SearchVectors"] == ["SearchVectors"]
        assert {h.item.tenant_id for h in Session(shelf).search(
            Clip, "open", vector=q, top=5).all()} == {"t1", "t2"}
