"""A scoped session decides "inside the scope" from an item's KEY (contract 23, "Keys have
a grammar"): an item stored under another tenant's key is never returned, written or
deleted whatever its attributes say, on every read path (get, get_many, find through a
guard, table and index queries with their pages, cursors, counts, values and keys, scans,
vector search, the MCP server's tools); and with ``pk = "T-{tenant_id}-{doc_id}"`` tenant
``acme`` never reaches what a tenant ``acme-corp`` would hold (no such tenant can be
written). Engines: moto and DynamoDB Local, sync and async (the ``db`` fixture's session
kinds); vector search on moto only (DynamoDB Local has none). The grammar's pure
properties are in tests/unit/test_templates.py."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
from collections.abc import Callable, Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any, cast

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp import Client

import dynaorm.mcp
from dynaorm import (
    AsyncSession,
    DynaormError,
    Entity,
    F,
    ItemNotFoundError,
    KeyTemplateError,
    ScopeError,
    Session,
    Table,
)
from dynaorm.aio.blocking import BlockingAsyncSession
from dynaorm.protocol.steps import call
from dynaorm.testing import TestBackend, use_tables, worker_suffix
from tests.conftest import engine_of, wire_of
from tests.support.examples import examples
from tests.support.recording import Requests
from tests.support.tenant_models import (
    Clip,
    Customer,
    Memo,
    Moved,
    Paper,
    plant,
    plant_stale_rows,
    shelf,
    stale,
    tenants,
)

#: (what it asserts depends on the engine: it runs on each)
pytestmark = pytest.mark.engines("moto", "local", "dynoxide")

LIAR = "liar"  # the id of every item planted under t2's key with t1's attributes


def _scoped(table: Table, kind: str | None, **scope: Any) -> Session:
    """A session of ``table`` scoped to ``scope``, of the kind the test runs."""
    if kind == "async":
        return cast(Session, BlockingAsyncSession(AsyncSession(table, scope=scope)))
    return Session(table, scope=scope)


def _move_to_t2(table: Table, tb: TestBackend) -> int:
    """Every row of t1 whose id is ``LIAR`` moved, as stored (its attributes, index keys
    and guards' names still saying t1), under t2's partition key; the guards naming it
    re-pointed to where it now is. Returns how many rows moved."""
    moved = 0
    pk = table.pk
    for item in tb.scan_raw(table):
        key = item[pk]["S"]
        if "owner_pk" in item:  # a guard: it now names its owner under t2's key
            if LIAR in item["owner_pk"]["S"]:
                item["owner_pk"] = {"S": item["owner_pk"]["S"].replace("#t1#", "#t2#", 1)
                                    .replace("TENANT#t1", "TENANT#t2", 1)}
                table.db.driver.run(call("PutItem", {"TableName": table.name, "Item": item}))
            continue
        if not key.startswith("TENANT#t1") or LIAR not in json.dumps(item):
            continue
        old = {a: item[a] for a in (pk, table.sk) if a is not None}
        table.db.driver.run(call("DeleteItem", {"TableName": table.name, "Key": old}))
        item[pk] = {"S": key.replace("TENANT#t1", "TENANT#t2", 1)}
        table.db.driver.run(call("PutItem", {"TableName": table.name, "Item": item}))
        moved += 1
    return moved


@pytest.fixture
def liars(db: TestBackend, request: pytest.FixtureRequest) -> Iterator[TestBackend]:
    """The tenants table with two honest customers and a memo of each of t1 and t2, and
    a customer and a memo of id ``liar`` stored under t2's key whose attributes (its
    ``tenant_id``, its gsi1 partition ``TENANT#t1``) and unique-email guard (in t1's
    guard scope) say t1."""
    with use_tables(tenants, endpoint_url=db.endpoint_url, name_suffix=worker_suffix(),
                    wire=wire_of(request)) as tb:
        tb.session_kind = db.session_kind
        with Session(tenants) as s:
            for t in ("t1", "t2"):
                for n in (1, 2):
                    s.save(Customer(tenant_id=t, customer_id=f"c{n}", name=f"{t}-n{n}",
                                    email=f"c{n}@{t}.example"))
                s.save(Memo(tenant_id=t, memo_id="m1", text=f"memo of {t}"))
            s.save(Customer(tenant_id="t1", customer_id=LIAR, name="t1-liar",
                            email="liar@t1.example"))
            s.save(Memo(tenant_id="t1", memo_id=LIAR, text="of t2"))
        assert _move_to_t2(tenants, tb) == 3  # (the customer, the memo and its v1 row)
        yield tb


def _ids(objs: Any) -> set[str]:
    return {getattr(o, "customer_id", None) or o.memo_id for o in objs}


def test_the_planted_items_are_there_for_an_unscoped_session(liars: TestBackend) -> None:
    """What the scoped tests rely on: unscoped, every read path does reach the planted
    items (so a scoped read that does not is the scope's doing)."""
    s = Session(tenants)
    found = s.find(Customer, tenant_id="t1", email="liar@t1.example")
    assert found is not None and found.customer_id == LIAR and found.tenant_id == "t1"
    assert LIAR in _ids(s.query(Customer, index="gsi1", tenant_id="t1"))
    assert LIAR in _ids(s.scan(Customer).all()) and LIAR in _ids(s.scan(Memo).all())
    assert LIAR in _ids(s.query(Memo, tenant_id="t2").all())


def test_find_does_not_follow_a_guard_out_of_the_scope(liars: TestBackend) -> None:
    s1 = _scoped(tenants, liars.session_kind, tenant_id="t1")
    rec = Requests(tenants)
    assert s1.find(Customer, tenant_id="t1", email="liar@t1.example") is None
    assert [op for op, _ in rec.calls] == ["GetItem"]  # (the guard; the owner: not read)
    found = s1.find(Customer, tenant_id="t1", email="c1@t1.example")
    assert found is not None and found.customer_id == "c1"


def test_index_queries_hold_the_scope_by_key(liars: TestBackend) -> None:
    s1 = _scoped(tenants, liars.session_kind, tenant_id="t1")
    q = s1.query(Customer, index="gsi1", tenant_id="t1")
    assert _ids(q) == _ids(q.all()) == {"c1", "c2"}
    assert q.count() == 2
    assert {v["customer_id"] for v in q.values("customer_id")} == {"c1", "c2"}
    keys = q.keys()
    assert {k["customer_id"] for k in keys} == {"c1", "c2"}
    assert _ids(q.limit(2).all()) == {"c1", "c2"}
    assert q.reverse().first() is not None and q.reverse().first().customer_id != LIAR  # type: ignore[union-attr]
    # pages of one: the planted item (between c2 and none, by name) is no page's result,
    # and the cursors still walk to the end
    seen: list[str] = []
    cursor: str | None = None
    for _ in range(6):
        page = q.page_size(1).page(cursor)
        seen += [o.customer_id for o in page.items]
        cursor = page.cursor
        if cursor is None:
            break
    assert sorted(seen) == ["c1", "c2"] and cursor is None
    # t2's key holds it, its fields say t1: a stale key, no scope's (contract 24)
    s2 = _scoped(tenants, liars.session_kind, tenant_id="t2")
    assert s2.get(Customer, tenant_id="t2", customer_id=LIAR) is None
    assert LIAR not in _ids(s2.query(Customer, index="gsi1", tenant_id="t2"))


def test_scans_hold_the_scope_by_key(liars: TestBackend) -> None:
    s1 = _scoped(tenants, liars.session_kind, tenant_id="t1")
    for scan in (s1.scan(Customer), s1.scan(Memo), s1.scan(Customer, Memo),
                 s1.scan(Customer, segments=2), s1.scan(Customer, index="gsi1")):
        assert LIAR not in _ids(scan.all())
        assert LIAR not in _ids(scan.page_size(1))
        assert scan.count() == len(scan.all())
        keys = scan.keys()
        assert LIAR not in {k.get("customer_id") or k.get("memo_id") for k in keys}
    assert _ids(s1.scan(Customer).all()) == {"c1", "c2"}
    assert _ids(s1.scan(Memo).all()) == {"m1"}
    assert s1.scan(Customer).limit(2).count() == 2
    first = s1.scan(Customer).page(None)
    assert _ids(first.items) <= {"c1", "c2"}


def test_writes_of_an_object_stored_under_another_scope_are_refused(
        liars: TestBackend) -> None:
    """An object loaded (unscoped) from t2's key, its attributes saying t1: a t1 session
    may neither save it (a move would delete t2's row) nor delete it."""
    planted = Session(tenants).get(Customer, tenant_id="t2", customer_id=LIAR)
    assert planted is not None and planted.tenant_id == "t1"
    before = liars.scan_raw(tenants)
    s1 = _scoped(tenants, liars.session_kind, tenant_id="t1")
    with pytest.raises(ScopeError, match="TENANT#t2"):
        s1.save(planted)
    with pytest.raises(ScopeError, match="TENANT#t2"):
        s1.delete(planted)
    s1.rollback()
    assert liars.scan_raw(tenants) == before


def test_keys_rendered_for_a_read_by_key_are_the_scope_s(liars: TestBackend) -> None:
    s1 = _scoped(tenants, liars.session_kind, tenant_id="t1")
    assert s1.get(Customer, tenant_id="t1", customer_id=LIAR) is None
    got = s1.get_many(Customer, [{"tenant_id": "t1", "customer_id": c}
                                 for c in ("c1", LIAR, "c2")])
    assert [None if g is None else g.customer_id for g in got] == ["c1", None, "c2"]
    assert _ids(s1.query(Memo, tenant_id="t1").all()) == {"m1"}
    assert s1.query(Memo, tenant_id="t1").count() == 1
    with pytest.raises(ScopeError):
        s1.get(Customer, tenant_id="t2", customer_id=LIAR)


def test_vector_search_holds_the_scope_by_key(db: TestBackend,
                                              request: pytest.FixtureRequest) -> None:
    if engine_of(request) == "local":
        pytest.skip("DynamoDB Local has no vector index (SearchVectors is unknown there)")
    with use_tables(shelf, endpoint_url=db.endpoint_url, name_suffix=worker_suffix(),
                    wire=wire_of(request)) as tb:
        with Session(shelf) as s:
            s.save(Clip(tenant_id="t1", clip_id="k1", embedding=[0, 1, 0, 0]))
            s.save(Clip(tenant_id="t2", clip_id="k2", embedding=[0, 0, 1, 0]))
            s.save(Clip(tenant_id="t1", clip_id=LIAR, embedding=[1, 0, 0, 0]))
        assert _move_to_t2(shelf, tb) == 1
        q = [1.0, 0.0, 0.0, 0.0]
        assert "liar" in {h.item.clip_id for h in Session(shelf).search(
            Clip, "by_tenant", vector=q, top=5, tenant_id="t1").all()}
        s1 = _scoped(shelf, db.session_kind, tenant_id="t1")
        for search in (s1.search(Clip, "by_tenant", vector=q, top=5, tenant_id="t1"),
                       s1.search(Clip, "by_kind", vector=q, top=5, kind="note")):
            hits = search.all()
            assert {h.item.clip_id for h in hits} == {"k1"}
            assert hits.skipped == 0  # (another scope's hit is not reported either)


@pytest.mark.sync_only  # (the server makes its own sessions)
def test_the_mcp_server_s_tools_hold_the_scope_by_key(liars: TestBackend) -> None:
    srv = dynaorm.mcp.server(tenants, scope={"tenant_id": "t1"})
    found, listed, scanned = (json.loads("".join(getattr(c, "text", "") for c in r.content))
                              for r in _call(srv, (
                                  ("find_customer_by_email", {"email": "liar@t1.example"}),
                                  ("query_customer_on_gsi1", {}),
                                  ("get_customer", {"customer_id": LIAR}))))
    assert found.get("item") is None
    assert {i["customer_id"] for i in listed["items"]} == {"c1", "c2"}
    assert scanned.get("item") is None


def _call(srv: Any, calls: tuple[tuple[str, dict[str, Any]], ...]) -> list[Any]:
    async def go() -> list[Any]:
        async with Client(srv) as client:
            return [await client.call_tool(name, args) for name, args in calls]
    return asyncio.run(go())


# -- a tenant whose name holds the separator after it -----------------------------------
docs = Table("scope_docs")


class Doc(Entity):
    """A tenant's document, keyed as the red team found it: ``T-{tenant_id}-{doc_id}``."""

    class Meta:
        table = docs
        pk = "T-{tenant_id}-{doc_id}"
        sk = "DOC"

    tenant_id: str
    doc_id: str
    body: str = ""


@pytest.fixture
def ddb(db: TestBackend, request: pytest.FixtureRequest) -> Iterator[TestBackend]:
    with use_tables(docs, endpoint_url=db.endpoint_url, name_suffix=worker_suffix(),
                    wire=wire_of(request)) as tb:
        tb.session_kind = db.session_kind
        yield tb


def test_a_tenant_holding_the_separator_cannot_be_written(ddb: TestBackend) -> None:
    rec = Requests(docs)
    with pytest.raises(KeyTemplateError) as info, Session(docs) as s:
        s.save(Doc(tenant_id="acme-corp", doc_id="123"))
    said = str(info.value)
    assert said.startswith("Doc:") and "'tenant_id'" in said and "'-'" in said
    assert rec.calls == [] and ddb.scan_raw(docs) == []
    with pytest.raises(ScopeError, match="'-'"):
        _scoped(docs, ddb.session_kind, tenant_id="acme-corp").get(
            Doc, tenant_id="acme-corp", doc_id="123")


def test_acme_never_reaches_a_neighbour_s_documents(ddb: TestBackend) -> None:
    """Tenants whose names start like ``acme`` (``acme_corp``, ``acme.corp``, ``acmecorp``,
    ``acme corp``) keep documents ``123`` and ``corp-123``; ``acme``'s own document
    ``corp-123`` (a document id may hold ``-``: nothing follows it) is acme's. acme's
    get, query and delete of any of these ids touch only acme's."""
    neighbours = ("acme_corp", "acme.corp", "acmecorp", "acme corp")
    with Session(docs) as s:
        for t, d in itertools.product(neighbours, ("123", "corp-123")):
            s.save(Doc(tenant_id=t, doc_id=d, body=f"of {t}"))
        s.save(Doc(tenant_id="acme", doc_id="corp-123", body="of acme"))
    theirs = [i for i in ddb.scan_raw(docs) if i["body"]["S"] != "of acme"]
    acme = _scoped(docs, ddb.session_kind, tenant_id="acme")
    asked = ("123", "corp-123", "_corp-123", ".corp-123", "corp", " corp-123")
    for d in asked:
        got = acme.get(Doc, tenant_id="acme", doc_id=d)
        assert got is None or (got.body == "of acme" and d == "corp-123")
        assert all(o.body == "of acme" for o in acme.query(Doc, tenant_id="acme", doc_id=d))
    acme.delete(Doc, tenant_id="acme", doc_id="corp-123")
    acme.commit()
    for d in asked:  # (an id that is not acme's: nothing of acme's there to delete)
        acme.delete(Doc, tenant_id="acme", doc_id=d)
        with pytest.raises(ItemNotFoundError):
            acme.commit()
    def text(item: dict[str, Any]) -> str:  # (an engine may order attributes anew)
        return json.dumps(item, sort_keys=True)

    assert sorted(map(text, ddb.scan_raw(docs))) == sorted(map(text, theirs))
    assert [o.body for o in acme.scan(Doc).all()] == []


# -- the property: no scoped call crosses a scope ------------------------------------------
_SEPARATORS = "-_.:|/ "
_NAME = st.text(st.sampled_from("ab" + _SEPARATORS), min_size=1, max_size=4)
_made = itertools.count()


def _doc_entity(home: Table, source: str) -> type[Entity]:
    """A document entity of the table ``home`` keyed ``source`` (a class of its own)."""
    class PropDoc(Entity):
        class Meta:
            table = home
            pk = source
            sk = "DOC"

        tenant_id: str
        doc_id: str
        body: str = ""

    return PropDoc


@settings(max_examples=examples(25), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture,
                                 HealthCheck.too_slow])
@given(head=st.sampled_from(["T", "", "T#"]), sep=st.sampled_from(_SEPARATORS),
       tail=st.sampled_from(["", "#X", "/end"]),
       tenants_=st.lists(_NAME, min_size=2, max_size=4, unique=True),
       ids=st.lists(_NAME, min_size=1, max_size=3, unique=True), data=st.data())
def test_no_scoped_call_crosses_a_scope(db: TestBackend, request: pytest.FixtureRequest,
                                        head: str, sep: str, tail: str, tenants_: list[str],
                                        ids: list[str], data: st.DataObject) -> None:
    """With a random template ``<head>{tenant_id}<sep>{doc_id}<tail>`` and random tenants
    and ids (some holding separators): every write the grammar refuses is refused before
    sending; a scoped session's get, query, scan and delete never return or delete an
    item whose key parses to another scope."""
    table = Table(f"scope_prop_{next(_made)}")
    source = head + "{tenant_id}" + sep + "{doc_id}" + tail
    entity = _doc_entity(table, source)
    pk = entity.__dynaorm_spec__.pk  # type: ignore[attr-defined]
    with use_tables(table, endpoint_url=db.endpoint_url, name_suffix=worker_suffix(),
                    wire=wire_of(request)) as tb:
        written: set[tuple[str, str]] = set()
        for t, d in itertools.product(tenants_, ids):
            obj = entity(tenant_id=t, doc_id=d, body=t)  # type: ignore[call-arg]
            s = Session(table)
            try:
                s.save(obj)
            except KeyTemplateError:
                assert any(c in t for c in pk.separators("tenant_id")) or any(
                    c in d for c in pk.separators("doc_id"))
                continue
            s.commit()
            written.add((t, d))
        mine = data.draw(st.sampled_from(tenants_), label="scope")
        try:
            scoped = _scoped(table, db.session_kind, tenant_id=mine)
            scoped.scan(entity).all()
        except ScopeError:
            assert any(c in mine for c in pk.separators("tenant_id"))
            return

        def owner(item: dict[str, Any]) -> str:
            parsed = pk.parse_key(item[table.pk]["S"])
            assert parsed is not None
            return str(parsed["tenant_id"])

        assert {o.body for o in scoped.scan(entity).all()} <= {mine}
        for d in ids:
            try:
                got = scoped.get(entity, tenant_id=mine, doc_id=d)
                listed = scoped.query(entity, tenant_id=mine, doc_id=d).all()
            except (KeyTemplateError, ScopeError):
                assert (mine, d) not in written
                continue
            assert all(o.body == mine for o in [*listed, *([got] if got else [])])
            assert (got is not None) == ((mine, d) in written)
            before = {json.dumps(i, sort_keys=True) for i in tb.scan_raw(table)}
            scoped.delete(entity, tenant_id=mine, doc_id=d)
            try:
                scoped.commit()
            except ItemNotFoundError:
                assert (mine, d) not in written
            after = [json.loads(i) for i in before - {
                json.dumps(i, sort_keys=True) for i in tb.scan_raw(table)}]
            assert all(owner(i) == mine for i in after)  # (what went was the scope's)


# -- stale keys: rows 0.7 wrote, whose fields say another scope than their key (contract 24) --
@pytest.fixture
def stale_rows(db: TestBackend, request: pytest.FixtureRequest) -> Iterator[TestBackend]:
    """The stale-key table with acme's rows and acme-corp's as 0.7 wrote them
    (:func:`~tests.support.tenant_models.plant_stale_rows`)."""
    with use_tables(stale, endpoint_url=db.endpoint_url, name_suffix=worker_suffix(),
                    wire=wire_of(request)) as tb:
        tb.session_kind = db.session_kind
        plant_stale_rows()
        yield tb


def _bodies(objs: Any) -> set[str]:
    return {o.body for o in objs}


def test_the_stale_rows_are_there_for_an_unscoped_session(stale_rows: TestBackend) -> None:
    """What the scoped test relies on: unscoped, the grammar reads acme-corp's rows as
    acme's keys (the stale keys), and every read path reaches them."""
    s = Session(stale)
    got = s.get(Paper, tenant_id="acme", paper_id="corp-123")
    assert got is not None and got.tenant_id == "acme-corp"
    assert "acme-corp's" in _bodies(s.scan(Paper).all())
    assert "acme-corp's" in _bodies(s.query(Paper, index="gsi1", tenant_id="acme",
                                            category="corp-x").all())
    # (a migration window's get misses it: its fields render no current key; a scan
    # reads it, as the issue found)
    assert s.get(Moved, tenant_id="acme", moved_id="corp-9") is None
    assert "acme-corp's" in _bodies(s.scan(Moved).all())


def test_a_scoped_read_skips_a_stale_key_on_every_path(stale_rows: TestBackend) -> None:
    """acme's session: get, get_many, a query of the row's partition, an index query, a
    scan, their pages, counts, values and keys, and a migration window's get and scan,
    never give acme-corp's rows (their keys parse as acme's, their fields say
    ``acme-corp``); acme's own rows still come back."""
    acme = _scoped(stale, stale_rows.session_kind, tenant_id="acme")
    assert acme.get(Paper, tenant_id="acme", paper_id="corp-123") is None
    assert acme.get(Paper, tenant_id="acme", paper_id="corp-123", consistent=True) is None
    got = acme.get_many(Paper, [{"tenant_id": "acme", "paper_id": p}
                                for p in ("corp-123", "p1")])
    assert [None if g is None else g.body for g in got] == [None, "acme's"]
    whole = acme.query(Paper, tenant_id="acme", paper_id="corp-123")
    indexed = acme.query(Paper, index="gsi1", tenant_id="acme", category="corp-x")
    for read in (whole, indexed, acme.scan(Paper), acme.scan(Paper, index="gsi1")):
        assert "acme-corp's" not in _bodies(read.all())
        assert "acme-corp's" not in _bodies(read.page_size(1).page().items)
        assert read.count() == len(read.all())
        assert all(v["tenant_id"] == "acme" for v in read.values("tenant_id"))
        listed = read.keys()
        assert all(k["paper_id"] != "123" for k in listed)
    assert _bodies(acme.scan(Paper).all()) == {"acme's"}
    assert _bodies(acme.query(Paper, index="gsi1", tenant_id="acme", category="x")) == {
        "acme's"}
    # the migration window: the previous layout's row is read as acme's, and skipped
    assert acme.get(Moved, tenant_id="acme", moved_id="corp-9") is None
    assert _bodies(acme.scan(Moved).all()) == {"acme's"}
    assert acme.get(Moved, tenant_id="acme", moved_id="m1") is not None


@pytest.mark.sync_only  # (the server makes its own sessions)
def test_the_mcp_server_s_scoped_tools_skip_a_stale_key(stale_rows: TestBackend) -> None:
    srv = dynaorm.mcp.server(stale, scope={"tenant_id": "acme"})
    got, listed = (json.loads("".join(getattr(c, "text", "") for c in r.content))
                   for r in _call(srv, (("get_paper", {"paper_id": "corp-123"}),
                                        ("query_paper_on_gsi1", {"category": "corp-x"}))))
    assert got.get("item") is None
    assert listed["items"] == []


_SEPS = "-_.:|/ "


def _plain_key(source: str, values: dict[str, str]) -> str:
    """``source`` rendered as 0.7 rendered it: each field's text in place, nothing but
    ``#`` refused."""
    return source.format(**values)


@pytest.mark.engines("moto")
@settings(max_examples=examples(25), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture,
                                 HealthCheck.too_slow])
@given(head=st.sampled_from(["T", "", "T#"]), sep=st.sampled_from(_SEPS),
       tail=st.sampled_from(["", "#X", "/end"]),
       bases=st.lists(st.text(st.sampled_from("ab"), min_size=1, max_size=3), min_size=1,
                      max_size=2, unique=True),
       others=st.lists(st.text(st.sampled_from("ab" + _SEPS), min_size=1, max_size=4),
                       max_size=2),
       ids=st.lists(st.text(st.sampled_from("ab1" + _SEPS), min_size=1, max_size=4),
                    min_size=1, max_size=3, unique=True), data=st.data())
def test_no_scoped_read_returns_a_row_of_another_scope(
        db: TestBackend, request: pytest.FixtureRequest, head: str, sep: str, tail: str,
        bases: list[str], others: list[str], ids: list[str], data: st.DataObject) -> None:
    """Random rows as 0.7 wrote them (tenants and ids holding any separator, keys
    ``<head>{tenant_id}<sep>{doc_id}<tail>``) under a template of the same separators:
    tenants a scope can name, tenants 0.7 let hold the separator after them (``acme`` and
    ``acme<sep>corp``: the latter's rows parse as the former's) and random ones. For each
    tenant a scope can name, its session's get, get_many, query, scan (pages, counts,
    values and keys too) never give an object whose fields name another tenant, and
    every object it gives is at a key that parses as its own."""
    table = Table(f"scope_stale_prop_{next(_made)}")
    source = head + "{tenant_id}" + sep + "{doc_id}" + tail
    entity = _doc_entity(table, source)
    pk = entity.__dynaorm_spec__.pk  # type: ignore[attr-defined]
    stale_ones = [b + sep + data.draw(st.text(st.sampled_from("ab1" + _SEPS), min_size=1,
                                              max_size=3), label="after") for b in bases]
    tenants_ = list(dict.fromkeys([*bases, *stale_ones, *others]))
    with use_tables(table, endpoint_url=db.endpoint_url, name_suffix=worker_suffix(),
                    wire=wire_of(request)):
        for t, d in itertools.product(tenants_, ids):
            plant(table, {"pk": _plain_key(source, {"tenant_id": t, "doc_id": d}),
                           "sk": "DOC", "_type": "PropDoc", "tenant_id": t, "doc_id": d,
                           "body": t})
        for mine in tenants_:
            if any(c in mine for c in pk.separators("tenant_id")):
                continue  # (no scope can name it: refused, as the 0.8 property shows)
            s = Session(table, scope={"tenant_id": mine})
            asked = [d for d in ids if not any(c in d for c in pk.separators("doc_id"))]
            found = [*s.scan(entity).all(), *s.scan(entity).page_size(1).page().items,
                     *filter(None, s.get_many(entity, [{"tenant_id": mine, "doc_id": d}
                                                       for d in asked])),
                     *(o for d in asked for o in [
                         s.get(entity, tenant_id=mine, doc_id=d),
                         *s.query(entity, tenant_id=mine, doc_id=d).all()] if o)]
            for obj in found:
                assert obj.tenant_id == mine and obj.body == mine, (source, mine, obj)
                key = pk.parse_key(_plain_key(source, obj.__dict__))
                assert key is not None and key["tenant_id"] == mine
            scan = s.scan(entity)
            assert scan.count() == len(scan.all())
            assert {v["tenant_id"] for v in scan.values("tenant_id")} <= {mine}
            mine_too = {(mine, d) for d in asked} & set(itertools.product(tenants_, ids))
            assert {(o.tenant_id, o.doc_id) for o in scan.all()} >= {
                (t, d) for t, d in mine_too
                if pk.parse_key(_plain_key(source, {"tenant_id": t, "doc_id": d}))}


# --- a scoped session and rows it did not write (stale keys)
# (moved from integration/test_red_team_081.py:
# The red team of issue 81 (contract 24, "Scope over rows it did not write"): what a
# scoped session must never do to a row whose key parses into its scope while its stored
# fields name another tenant (a stale key: acme-corp's paper ``T-acme-corp-123``, which the
# grammar reads as acme's paper ``corp-123``). Reads skip it (tests/integration/
# test_scope_keys.py); these are the writes by key, which reached it.)

ACME_CORP = {"pk": "T-acme-corp-123", "sk": "PAPER", "_type": "Paper",
             "tenant_id": "acme-corp", "paper_id": "123", "category": "x",
             "gsi1pk": "acme-corp-x", "gsi1sk": "123", "body": "acme-corp's"}


def _acme_corp_row(tb: TestBackend) -> dict[str, Any] | None:
    return next((i for i in tb.scan_raw(stale) if i["pk"] == {"S": "T-acme-corp-123"}),
                None)


def _delete(s: Session) -> None:
    s.delete(Paper, tenant_id="acme", paper_id="corp-123")
    s.commit()


def _update(s: Session) -> None:
    s.update(Paper, tenant_id="acme", paper_id="corp-123").set(body="acme's now")
    s.commit()


def _upsert(s: Session) -> None:
    s.update(Paper, upsert=True, tenant_id="acme", paper_id="corp-123").set(body="mine")
    s.commit()


def _overwrite(s: Session) -> None:
    s.save(Paper(tenant_id="acme", paper_id="corp-123", body="acme's now"), overwrite=True)
    s.commit()


def _insert(s: Session) -> None:
    s.save(Paper(tenant_id="acme", paper_id="corp-123", body="acme's now"))
    s.commit()


def _check(s: Session) -> None:
    """A condition check by key: an oracle of the stale row's values, were it asked."""
    s.check(Paper, condition=F("body") == "acme-corp's", tenant_id="acme",
            paper_id="corp-123")
    s.commit()


def _delete_many(s: Session) -> None:
    s.delete_many(Paper, [{"tenant_id": "acme", "paper_id": "corp-123"}])


def _delete_many_objects(s: Session) -> None:
    s.delete_many([Paper(tenant_id="acme", paper_id="corp-123")])


@pytest.mark.engines('moto')
@pytest.mark.parametrize("write", [_delete, _update, _upsert, _overwrite, _insert, _check,
                                   _delete_many, _delete_many_objects],
                         ids=lambda f: f.__name__.strip("_"))
def test_a_scoped_write_by_key_never_touches_a_stale_key_s_row(
        stale_rows: TestBackend, write: Callable[[Session], None]) -> None:
    """acme's session writing acme's key ``corp-123`` by key (never having read it) finds
    acme-corp's row there: it is refused (a ``DynaormError``), the row stays as it was,
    and the refusal names nothing of acme-corp's (its values are not acme's to see)."""
    acme = _scoped(stale, stale_rows.session_kind, tenant_id="acme")
    before = _acme_corp_row(stale_rows)
    assert before is not None
    with pytest.raises(DynaormError) as refused:
        write(acme)
    assert _acme_corp_row(stale_rows) == before
    error = refused.value
    assert "'acme-corp'" not in str(error)  # (its key is acme's; its value is not)
    inner = [error, *(e for _, e in getattr(error, "errors", ()))]  # (a bulk call's)
    for shown in (*(getattr(e, "item", None) for e in inner),
                  *(f[2] for e in inner for f in getattr(e, "failures", None) or ())):
        assert "acme-corp" not in repr(shown)  # (nor its object, on the error)
    # acme's own rows are still acme's to write by key
    acme.update(Paper, tenant_id="acme", paper_id="p1").set(body="edited")
    acme.commit()
    assert acme.get(Paper, tenant_id="acme", paper_id="p1").body == "edited"  # type: ignore[union-attr]
    plant(stale, {k: v for k, v in ACME_CORP.items()})  # (as it was, for the next)


@pytest.mark.engines('moto')
@pytest.mark.sync_only  # (a job: no session kind)
def test_a_tenant_export_holds_no_stale_key_s_row(stale_rows: TestBackend,
                                                   tmp_path: Path) -> None:
    """``jobs.export(..., scope={"tenant_id": "acme"})`` reads every row whose key begins
    with acme's prefix ``T-acme-``: acme-corp's paper ``T-acme-corp-123`` among them. The
    export is a scoped read (contract 24): acme's dataset holds acme's papers alone."""
    pq = pytest.importorskip("pyarrow.parquet")
    from dynaorm.jobs import export, run_local

    report = run_local(export(stale, tmp_path / "acme", scope={"tenant_id": "acme"},
                              entities=[Paper]))
    rows = [r for f in sorted((tmp_path / "acme" / "Paper").glob("*.parquet"))
            for r in pq.read_table(f).to_pylist()]
    assert {(r["tenant_id"], r["paper_id"]) for r in rows} == {("acme", "p1")}
    assert report.rows == {"Paper": 1}


# -- the property: random rows as 0.7 wrote them, every write by key of every scope --------


def _writes(entity: type[Entity], mine: str, doc: str) -> list[Callable[[Session], None]]:
    def delete(s: Session) -> None:
        s.delete(entity, tenant_id=mine, doc_id=doc)
        s.commit()

    def update(s: Session) -> None:
        s.update(entity, tenant_id=mine, doc_id=doc).set(body="written")
        s.commit()

    def upsert(s: Session) -> None:
        s.update(entity, upsert=True, tenant_id=mine, doc_id=doc).set(body="written")
        s.commit()

    def overwrite(s: Session) -> None:
        s.save(entity(tenant_id=mine, doc_id=doc, body="written"), overwrite=True)
        s.commit()

    def delete_many(s: Session) -> None:
        s.delete_many(entity, [{"tenant_id": mine, "doc_id": doc}])

    return [delete, update, upsert, overwrite, delete_many]


@pytest.mark.engines('moto')
@pytest.mark.sync_only
@settings(max_examples=examples(20), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(head=st.sampled_from(["T", "", "T#"]), sep=st.sampled_from(_SEPS),
       base=st.text(st.sampled_from("ab"), min_size=1, max_size=2),
       after=st.text(st.sampled_from("ab1" + _SEPS), min_size=1, max_size=3),
       doc=st.text(st.sampled_from("ab1" + _SEPS), min_size=1, max_size=3))
def test_no_scoped_write_by_key_changes_a_row_of_another_tenant(
        db: TestBackend, request: pytest.FixtureRequest, head: str, sep: str, base: str,
        after: str, doc: str) -> None:
    """Tenant ``base<sep><after>``'s row as 0.7 wrote it (``<head>{tenant_id}<sep>
    {doc_id}``): for ``base``'s session every write by key at a key that parses into its
    scope (delete, update, upsert, overwrite, bulk delete) leaves the other tenant's row
    as it was (refused, or written at a key that was empty)."""
    table = Table(f"red81_prop_{next(_made)}")
    source = head + "{tenant_id}" + sep + "{doc_id}"
    entity = _doc_entity(table, source)
    other = base + sep + after
    stored = {"pk": {"S": source.format(tenant_id=other, doc_id=doc)}, "sk": {"S": "DOC"},
              "_type": {"S": "PropDoc"}, "tenant_id": {"S": other},
              "doc_id": {"S": doc}, "body": {"S": other}}
    pk = entity.__dynaorm_spec__.pk  # type: ignore[attr-defined]
    parsed = pk.parse_key(stored["pk"]["S"])
    with use_tables(table, endpoint_url=db.endpoint_url, name_suffix=worker_suffix(),
                    wire=wire_of(request)) as tb:
        if parsed is None or parsed["tenant_id"] != base:
            return  # (the grammar reads it as no key of base's: no write reaches it)
        for write in _writes(entity, base, parsed["doc_id"]):
            plant(table, {k: v["S"] for k, v in stored.items()})
            with contextlib.suppress(DynaormError):
                write(Session(table, scope={"tenant_id": base}))
            found = [i for i in tb.scan_raw(table) if i["pk"] == stored["pk"]]
            assert found == [stored], (write.__name__, source, other)


# -- one scope object per scope: equal values that render other keys ------------------------
ledgers = Table("red81_ledgers")


class Ledger(Entity):
    """Keyed by a Decimal tenant: ``1`` and ``1.0`` are two keys, so two tenants."""

    class Meta:
        table = ledgers
        pk = "L#{tenant}#{ledger_id}"
        sk = "LEDGER"

    tenant: Decimal
    ledger_id: str
    body: str = ""


@pytest.mark.engines('moto')
@pytest.mark.sync_only
def test_two_scopes_of_equal_values_rendering_other_keys_are_two_scopes(
        db: TestBackend, request: pytest.FixtureRequest) -> None:
    """``Decimal("1")`` and ``Decimal("1.0")`` are equal (and hash alike) but render the
    keys ``L#1#...`` and ``L#1.0#...``: a session scoped to one never reads the other's
    rows, whichever scope was made first in the process (``Scope.of`` kept one object
    per equal values)."""
    with use_tables(ledgers, endpoint_url=db.endpoint_url, name_suffix=worker_suffix(),
                    wire=wire_of(request)):
        with Session(ledgers) as s:
            for tenant in ("1", "1.0"):
                s.save(Ledger(tenant=Decimal(tenant), ledger_id="l1", body=tenant))
        for tenant in ("1", "1.0"):
            scoped = Session(ledgers, scope={"tenant": Decimal(tenant)})
            got = scoped.get(Ledger, tenant=Decimal(tenant), ledger_id="l1")
            assert {o.body for o in scoped.scan(Ledger).all()} <= {tenant}
            assert got is None or got.body == tenant
        # (tenant 1's own rows are its; tenant 1.0's are skipped where the engine stores
        # the number as 1, as DynamoDB does: its stored field no longer renders its key)
        one = Session(ledgers, scope={"tenant": Decimal(1)})
        assert [o.body for o in one.scan(Ledger).all()] == ["1"]


class Counter(Entity):
    """Keyed by an int tenant (a scope may name it ``5`` or ``"5"``: both render ``5``)."""

    class Meta:
        table = ledgers
        pk = "C#{tenant}#{counter_id}"
        sk = "COUNTER"

    tenant: int
    counter_id: str
    n: int = 0


@pytest.mark.engines('moto')
@pytest.mark.sync_only
@pytest.mark.parametrize("given", [5, "5"])
def test_a_scoped_write_by_key_of_its_own_row_is_never_refused(
        db: TestBackend, request: pytest.FixtureRequest, given: Any) -> None:
    """The scope's own rows stay its to write by key whatever form the scope's value was
    given in (the guard compares the stored field as the entity stores it)."""
    with use_tables(ledgers, endpoint_url=db.endpoint_url, name_suffix=worker_suffix(),
                    wire=wire_of(request)):
        with Session(ledgers) as s:
            s.save(Counter(tenant=5, counter_id="c1"))
            s.save(Counter(tenant=5, counter_id="c2"))
        scoped = Session(ledgers, scope={"tenant": given})
        scoped.update(Counter, tenant=given, counter_id="c1").add(n=1)
        scoped.save(Counter(tenant=5, counter_id="c2", n=7), overwrite=True)
        scoped.commit()
        scoped.delete_many(Counter, [{"tenant": given, "counter_id": "c2"}])
        assert [(o.counter_id, o.n) for o in scoped.scan(Counter).all()] == [("c1", 1)]
        scoped.delete(Counter, tenant=given, counter_id="c1")
        scoped.commit()
        assert Session(ledgers).scan(Counter).all() == []
