"""Red team of issue 68's key grammar and key-decided tenant scope (contract 23, "Keys have
a grammar"), attacked where features meet: a scope field in several templates with other
separators, update by key and by object, bulk writes, the staging surface jobs write
through, jobs, the MCP server's write tools, cursors handed between tenants, a previous
layout (``Meta.previous``) read with a planted row, write sharding, a scope of two fields,
enum and zero-padded integer scope fields, unicode separators and look-alike tenants,
pickled objects, templates naming a field twice, and dynaorm's own rows written through
every write path. What holds is a guarantee here; a defect found was fixed with its test
(the test fails without the fix). Engines: moto and DynamoDB Local, sync and async (the
``db`` fixture's session kinds). The main path's tests are in
tests/integration/test_scope_keys.py and tests/integration/test_own_rows.py."""

from __future__ import annotations

import asyncio
import enum
import json
import pickle
from collections.abc import Callable, Iterator
from typing import Any, cast

import pytest
from mcp import Client

import dynaorm.mcp
from dynaorm import (
    GSI,
    AsyncSession,
    DynaormError,
    Entity,
    F,
    InvalidCursorError,
    KeyTemplateError,
    Previous,
    ScopeError,
    Session,
    Table,
    Unique,
)
from dynaorm.aio.blocking import BlockingAsyncSession
from dynaorm.jobs import backfill, run_local
from dynaorm.protocol.steps import call
from dynaorm.schema.entity import spec_of
from dynaorm.testing import TestBackend, use_tables, worker_suffix
from dynaorm.write.updates import StagedUpdate
from tests.conftest import wire_of
from tests.support.recording import Requests

red = Table("red_keys", indexes=[GSI("gsi1", pk="gsi1pk", sk="gsi1sk"),
                                 GSI("gsi2", pk="gsi2pk", sk="gsi2sk")])


class Doc(Entity):
    """The scope field in four templates, each with its own separator: the table key
    (``-``), gsi1 (``#``), gsi2 (``.``) and the unique guard's scope (``~``)."""

    class Meta:
        table = red
        pk = "T-{tenant_id}-{doc_id}"
        sk = "DOC"
        indexes = {"gsi1": ("TENANT#{tenant_id}", "D#{doc_id}"),
                   "gsi2": ("ORG.{tenant_id}.{region}", "D#{doc_id}")}
        unique = (Unique("email", scope="U~{tenant_id}~X"),)

    tenant_id: str
    doc_id: str
    email: str
    region: str = "eu"
    body: str = ""


class Plain(Entity):
    """Scoped, with no rules (bulk calls and jobs take it); ``region`` in gsi2 (``.``)."""

    class Meta:
        table = red
        pk = "P-{tenant_id}-{pid}"
        sk = "PLAIN"
        indexes = {"gsi2": ("R.{region}.X", "P#{pid}")}

    tenant_id: str
    pid: str
    region: str = "eu"
    body: str = ""


class Note(Entity):
    """Scoped, in a migration window: its previous layout's key has its own separator."""

    class Meta:
        table = red
        pk = "NOTE#{tenant_id}"
        sk = "N#{note_id}"
        type_name = "Note"
        previous = Previous(pk="OLD.{tenant_id}.{note_id}", sk="N", type_name="OldNote")

    tenant_id: str
    note_id: str
    body: str = ""


class Event(Entity):
    """Scoped and write-sharded on the table key."""

    class Meta:
        table = red
        pk = "EV#{tenant_id}#{shard}"
        sk = "E#{ev}"
        shards = {"primary": 3}

    tenant_id: str
    ev: str


class Member(Entity):
    """A scope of two fields."""

    class Meta:
        table = red
        pk = "ORG#{org}#T#{tenant_id}"
        sk = "M#{mid}"

    org: str
    tenant_id: str
    mid: str


class Tier(enum.Enum):
    GOLD = "gold"
    SPLIT = "go-ld"


class Tiered(Entity):
    """A scope field that is an enum."""

    class Meta:
        table = red
        pk = "TIER-{tier}-{tid}"
        sk = "TIERED"

    tier: Tier
    tid: str


class Padded(Entity):
    """A numeric tenant, zero-padded in its key (a format a key parses back exactly)."""

    class Meta:
        table = red
        pk = "ACCT#{account:04d}"
        sk = "P#{pid}"

    account: int
    pid: str
    body: str = ""


class Arrow(Entity):
    """A separator outside ASCII."""

    class Meta:
        table = red
        pk = "T\u2192{tenant_id}\u2192{doc_id}"
        sk = "ARROW"

    tenant_id: str
    doc_id: str
    body: str = ""


def _scoped(kind: str | None, **scope: Any) -> Session:
    """A session of ``red`` scoped to ``scope``, of the kind the test runs."""
    if kind == "async":
        return cast(Session, BlockingAsyncSession(AsyncSession(red, scope=scope)))
    return Session(red, scope=scope)


@pytest.fixture
def rdb(db: TestBackend, request: pytest.FixtureRequest) -> Iterator[TestBackend]:
    with use_tables(red, endpoint_url=db.endpoint_url, name_suffix=worker_suffix(),
                    wire=wire_of(request)) as tb:
        tb.session_kind = db.session_kind
        yield tb


def _raw(tb: TestBackend) -> list[str]:
    return sorted(json.dumps(i, sort_keys=True) for i in tb.scan_raw(red))


def _put(item: dict[str, str]) -> None:
    """A row stored as is (string attributes), as another writer would."""
    red.db.driver.run(call("PutItem", {"TableName": red.name,
                                       "Item": {k: {"S": v} for k, v in item.items()}}))


# -- a separator of ANY template the field appears in is refused on every write path ------
_BAD = (("tenant_id", "a-b"), ("tenant_id", "a.b"), ("tenant_id", "a~b"),
        ("tenant_id", "a#b"), ("region", "e.u"), ("region", "e#u"))


def _refused(entity: type[Entity], name: str, value: str) -> bool:
    """Whether the grammar refuses ``value`` in field ``name`` of ``entity``."""
    seps = spec_of(entity).separators(name)
    return any(c in value for c in seps)


def test_every_write_path_refuses_a_separator_of_any_template(rdb: TestBackend) -> None:
    """Doc's ``tenant_id`` may hold none of ``-`` (the table key), ``#`` (gsi1), ``.``
    (gsi2) and ``~`` (the guard's scope), its ``region`` no ``#``; Plain's ``region`` no
    ``.`` (gsi2): save, save_many, an update by key, an upsert, an update of a loaded
    object and a save of a changed one all refuse them before sending, naming the
    field."""
    with Session(red) as s:
        s.save(Doc(tenant_id="t1", doc_id="d1", email="a@x"))
        s.save(Plain(tenant_id="t1", pid="p1"))
    before = _raw(rdb)
    rec = Requests(red)
    s = rdb.session()
    for name, bad in _BAD:
        values = {"tenant_id": "t1", "doc_id": "d2", "email": "b@x", name: bad}
        attempts: list[Callable[[], Any]] = []
        if _refused(Doc, name, bad):
            loaded = s.get(Doc, tenant_id="t1", doc_id="d1")
            assert loaded is not None
            attempts.append(lambda v=values: s.save(Doc(**v)))
            if name == "region":  # (no table key field: it may be updated)
                attempts += [
                    lambda b=bad: s.update(Doc, tenant_id="t1", doc_id="d1").set(region=b),
                    lambda b=bad, o=loaded: s.update(o).set(region=b),
                    lambda b=bad, o=loaded: (setattr(o, "region", b), s.save(o)),
                ]
        if _refused(Plain, name, bad):
            attempts.append(lambda v={"tenant_id": "t1", "pid": "p2", name: bad}:
                            s.save_many([Plain(**v)]))
            if name == "region":
                attempts.append(lambda b=bad: s.update(Plain, tenant_id="t1", pid="p9",
                                                      upsert=True).set(region=b))
        assert attempts
        for attempt in attempts:
            with pytest.raises(KeyTemplateError, match=repr(name)):
                attempt()
                s.commit()
            s.rollback()
    assert not [op for op, _ in rec.calls if op not in ("GetItem", "Query")]
    assert _raw(rdb) == before


def test_a_scope_holding_a_separator_of_any_template_is_refused(rdb: TestBackend) -> None:
    for bad in ("a-b", "a.b", "a~b"):
        with pytest.raises(ScopeError, match="separator"):
            _scoped(rdb.session_kind, tenant_id=bad).scan(Doc).all()
    with pytest.raises(ScopeError, match="separator"):  # (an enum's value, as keys render it)
        _scoped(rdb.session_kind, tier=Tier.SPLIT).scan(Tiered).all()


# -- the staging surface jobs write through --------------------------------------------------
def test_a_write_staged_by_key_is_held_to_the_scope_by_its_key(rdb: TestBackend) -> None:
    """``Session.stage_write`` (the surface :mod:`dynaorm.jobs` writes through) with an
    update by key whose key fields say t1 and whose key is t2's: refused before sending
    (it used to update t2's item from t1's session: only the fields were checked)."""
    with Session(red) as s:
        for t in ("t1", "t2"):
            s.save(Plain(tenant_id=t, pid="p1", body=f"of {t}"))
    before = _raw(rdb)
    s1 = _scoped(rdb.session_kind, tenant_id="t1")
    forged = StagedUpdate(Plain, {"tenant_id": "t1", "pid": "p1"}, None, False,
                          {red.pk: "P-t2-p1", "sk": "PLAIN"})
    forged.set(body="written by t1")
    with pytest.raises(ScopeError, match="P-t2-p1"):
        s1.stage_write(forged)
        s1.commit()
    s1.rollback()
    assert _raw(rdb) == before
    honest = StagedUpdate(Plain, {"tenant_id": "t1", "pid": "p1"}, None, False,
                          {red.pk: "P-t1-p1", "sk": "PLAIN"})
    honest.set(body="t1's own")
    s1.stage_write(honest)
    s1.commit()
    assert s1.get(Plain, tenant_id="t1", pid="p1").body == "t1's own"  # type: ignore[union-attr]


# -- objects: mutated after staging, copied, pickled ----------------------------------------
def test_an_object_changed_after_staging_is_checked_again_at_commit(rdb: TestBackend) -> None:
    s1 = _scoped(rdb.session_kind, tenant_id="t1")
    fresh = Plain(tenant_id="t1", pid="p1")
    s1.save(fresh)
    fresh.__dict__["tenant_id"] = "t2"  # (no validation either)
    with pytest.raises(ScopeError, match="t2"):
        s1.commit()
    assert rdb.scan_raw(red) == []


def test_copies_of_another_tenant_s_object_never_move_its_row(rdb: TestBackend) -> None:
    """t2's object, loaded unscoped, then copied (``model_copy`` with t1's tenant) or
    pickled and edited: saved or deleted in t1's session, t2's row stays as it was."""
    with Session(red) as s:
        s.save(Plain(tenant_id="t2", pid="p1", body="of t2"))
    theirs = _raw(rdb)
    loaded = Session(red).get(Plain, tenant_id="t2", pid="p1")
    assert loaded is not None
    s1 = _scoped(rdb.session_kind, tenant_id="t1")
    copied = loaded.model_copy(update={"tenant_id": "t1"})
    revived = pickle.loads(pickle.dumps(loaded))
    revived.tenant_id = "t1"
    for obj in (copied, revived):
        for write in (s1.save, s1.delete):
            try:
                write(obj)
                s1.commit()
            except (ScopeError, DynaormError):
                s1.rollback()
    assert set(theirs) <= set(_raw(rdb))
    for row in rdb.scan_raw(red):  # (what else is there is t1's own)
        assert row["pk"]["S"] in ("P-t2-p1", "P-t1-p1")


# -- bulk, jobs and the MCP server's writes -------------------------------------------------
def test_bulk_writes_of_a_scoped_session_stay_in_it(rdb: TestBackend) -> None:
    with Session(red) as s:
        s.save(Plain(tenant_id="t2", pid="p1", body="of t2"))
    theirs = _raw(rdb)
    s1 = _scoped(rdb.session_kind, tenant_id="t1")
    with pytest.raises(ScopeError):
        s1.save_many([Plain(tenant_id="t1", pid="p1"), Plain(tenant_id="t2", pid="p1")])
    with pytest.raises(ScopeError):
        s1.delete_many(Plain, [{"tenant_id": "t2", "pid": "p1"}])
    with pytest.raises(ScopeError):
        s1.delete_many([Plain(tenant_id="t2", pid="p1")])
    assert _raw(rdb) == theirs  # (nothing of the refused call was sent)


@pytest.mark.sync_only  # (a job makes its own sessions)
def test_a_backfill_refuses_a_separator_before_sending(rdb: TestBackend) -> None:
    with Session(red) as s:
        s.save(Plain(tenant_id="t1", pid="p1"))
    before = _raw(rdb)

    def spoil(obj: Plain) -> Plain:
        obj.region = "e.u"
        return obj

    report = run_local(backfill(Plain, spoil))
    assert report.changed == 0 and len(report.failed) == 1
    assert "'region'" in report.failed[0] and "'.'" in report.failed[0]
    assert [r for r in _raw(rdb) if "P-t1-p1" in r] == before


def _tool_calls(srv: Any, calls: list[tuple[str, dict[str, Any]]]) -> list[tuple[bool, str]]:
    async def go() -> list[tuple[bool, str]]:
        async with Client(srv) as client:
            out = []
            for name, args in calls:
                r = await client.call_tool(name, args)
                out.append((bool(getattr(r, "is_error", getattr(r, "isError", False))),
                            "".join(getattr(c, "text", "") for c in r.content)))
            return out
    return asyncio.run(go())


@pytest.mark.sync_only  # (the server makes its own sessions)
def test_the_mcp_server_s_writes_stay_in_the_scope(rdb: TestBackend) -> None:
    with Session(red) as s:
        for t in ("t1", "t2"):
            s.save(Plain(tenant_id=t, pid="p1", body=f"of {t}"))
    srv = dynaorm.mcp.server(red, writes=["Plain"], scope={"tenant_id": "t1"})
    theirs = [r for r in _raw(rdb) if "P-t2-" in r]
    results = _tool_calls(srv, [
        ("save_plain", {"item": {"tenant_id": "t2", "pid": "x", "body": "by t1"}}),
        ("save_plain", {"item": {"pid": "x", "region": "e.u"}}),
        ("save_plain", {"item": {"pid": "x#y"}}),
        ("save_plain", {"item": {"pid": "dynaorm:receipt#x"}}),
        ("update_plain", {"tenant_id": "t2", "pid": "p1", "set": {"body": "by t1"}}),
        ("update_plain", {"pid": "p1", "set": {"region": "e.u"}}),
        ("delete_plain", {"tenant_id": "t2", "pid": "p1"}),
        ("get_plain", {"tenant_id": "t2", "pid": "p1"}),
        ("save_plain", {"item": {"pid": "x-y", "body": "t1's own"}}),
    ])
    assert [err for err, _ in results] == [True] * 8 + [False], results
    assert [r for r in _raw(rdb) if "P-t2-" in r] == theirs
    assert {i["pk"]["S"] for i in rdb.scan_raw(red)} == {"P-t1-p1", "P-t2-p1", "P-t1-x-y"}


# -- cursors of one tenant in another's session --------------------------------------------
def test_a_cursor_of_another_tenant_is_refused(rdb: TestBackend) -> None:
    with Session(red) as s:
        for t in ("t1", "t2"):
            for n in range(3):
                s.save(Doc(tenant_id=t, doc_id=f"d{n}", email=f"{n}@{t}"))
                s.save(Plain(tenant_id=t, pid=f"p{n}"))
    s1 = _scoped(rdb.session_kind, tenant_id="t1")
    s2 = _scoped(rdb.session_kind, tenant_id="t2")
    reads: list[Callable[[Session, str], Any]] = [
        lambda s, t: s.query(Doc, index="gsi1", tenant_id=t),
        lambda s, t: s.scan(Doc),
        lambda s, t: s.scan(Plain, segments=2),
    ]
    for read in reads:
        theirs = read(s2, "t2").page_size(1).page(None).cursor
        unscoped = read(Session(red), "t2").page_size(1).page(None).cursor
        assert theirs is not None and unscoped is not None
        for cursor in (theirs, unscoped):
            with pytest.raises(InvalidCursorError):
                read(s1, "t1").page_size(5).page(cursor)


# -- a previous layout: unmigrated rows, a planted one ---------------------------------------
def test_a_previous_layout_is_read_and_moved_only_in_the_scope(rdb: TestBackend) -> None:
    """Unmigrated rows of t1 and t2 (``OLD.<tenant>.<note>``) and one planted under t2's
    old key whose attributes say t1: t1's session reads and moves its own, never the
    planted one (get, delete_many); no get returns the planted row (its attributes name
    a key no get asked for); an object re-keyed into t1 whose old row is t2's cannot be
    moved by t1's session; and no note whose tenant holds the old layout's separator is
    written."""
    for t, n, says in (("t1", "n1", "t1"), ("t2", "n1", "t2"), ("t2", "liar", "t1")):
        _put({"pk": f"OLD.{t}.{n}", "sk": "N", "_type": "OldNote", "tenant_id": says,
              "note_id": n, "body": f"old {t}"})
    s1 = _scoped(rdb.session_kind, tenant_id="t1")
    own = s1.get(Note, tenant_id="t1", note_id="n1")
    assert own is not None and own.body == "old t1"
    assert s1.get(Note, tenant_id="t1", note_id="liar") is None
    assert Session(red).get(Note, tenant_id="t2", note_id="liar") is None  # (it says t1)
    other = Session(red).get(Note, tenant_id="t2", note_id="n1")
    assert other is not None and other.tenant_id == "t2"
    other.tenant_id = "t1"  # (re-keyed into t1: its move would delete t2's old row)
    with pytest.raises(ScopeError, match=r"OLD\.t2\.n1"):
        s1.save(other)
    s1.rollback()
    s1.delete_many(Note, [{"tenant_id": "t1", "note_id": "liar"}])
    own.body = "moved"
    s1.save(own)
    s1.commit()
    keys = sorted(i["pk"]["S"] for i in rdb.scan_raw(red))
    assert keys == ["NOTE#t1", "OLD.t2.liar", "OLD.t2.n1"]
    with pytest.raises(ScopeError, match=r"'\.'"):
        _scoped(rdb.session_kind, tenant_id="a.b").get(Note, tenant_id="a.b", note_id="n")


# -- sharding, scopes of two fields, enums, padded numbers, unicode --------------------------
def test_a_sharded_entity_s_reads_stay_in_the_scope(rdb: TestBackend) -> None:
    with Session(red) as s:
        for t in ("t1", "t2"):
            for n in range(4):
                s.save(Event(tenant_id=t, ev=f"e{n}"))
    s1 = _scoped(rdb.session_kind, tenant_id="t1")
    assert {e.tenant_id for e in s1.query(Event, tenant_id="t1").all()} == {"t1"}
    assert len(s1.query(Event, tenant_id="t1").all()) == 4
    assert {e.tenant_id for e in s1.scan(Event).all()} == {"t1"}
    assert sum(len(s1.query(Event, tenant_id="t1", shard=n).all()) for n in range(3)) == 4
    with pytest.raises(ScopeError):
        s1.query(Event, tenant_id="t2").all()


def test_a_scope_of_two_fields_holds_both(rdb: TestBackend) -> None:
    with Session(red) as s:
        for org in ("o1", "o2"):
            for t in ("t1", "t2"):
                s.save(Member(org=org, tenant_id=t, mid="m"))
    sm = _scoped(rdb.session_kind, org="o1", tenant_id="t1")
    assert [(m.org, m.tenant_id) for m in sm.scan(Member).all()] == [("o1", "t1")]
    assert [(m.org, m.tenant_id) for m in sm.query(Member, org="o1", tenant_id="t1")] == [
        ("o1", "t1")]
    for org, t in (("o2", "t1"), ("o1", "t2"), ("o2", "t2")):
        with pytest.raises(ScopeError):
            sm.get(Member, org=org, tenant_id=t, mid="m")


def test_an_enum_scope_reads_its_own(rdb: TestBackend) -> None:
    with Session(red) as s:
        s.save(Tiered(tier=Tier.GOLD, tid="x"))
    _put({"pk": "TIER-golden-x", "sk": "TIERED", "_type": "Tiered", "tier": "gold",
          "tid": "x"})
    s1 = _scoped(rdb.session_kind, tier=Tier.GOLD)
    assert [o.tid for o in s1.scan(Tiered).all()] == ["x"]
    assert s1.get(Tiered, tier=Tier.GOLD, tid="x") is not None
    assert [o.tid for o in s1.query(Tiered, tier="gold", tid="x")] == ["x"]


def test_a_zero_padded_numeric_scope_reads_and_writes_its_own(rdb: TestBackend) -> None:
    """A scope over ``{account:04d}``: the scope is accepted (the key parses back
    exactly), so its keys (``ACCT#0005``) are inside it; account 5 never reaches 105 nor
    50. (It used to refuse every key it rendered, and scan nothing: the scope's text
    ``5`` was compared with the key's ``0005``.)"""
    with Session(red) as s:
        for account in (5, 50, 105, -5):
            s.save(Padded(account=account, pid="p", body=str(account)))
    s5 = _scoped(rdb.session_kind, account=5)
    got = s5.get(Padded, account=5, pid="p")
    assert got is not None and got.body == "5"
    assert [o.body for o in s5.query(Padded, account=5)] == ["5"]
    assert [o.body for o in s5.scan(Padded).all()] == ["5"]
    s5.save(Padded(account=5, pid="q"))
    s5.commit()
    with pytest.raises(ScopeError):
        s5.get(Padded, account=105, pid="p")
    with pytest.raises(ScopeError):
        s5.save(Padded(account=50, pid="p"))
    minus = _scoped(rdb.session_kind, account=-5)
    assert [o.body for o in minus.scan(Padded).all()] == ["-5"]


_LOOKALIKES = ("t1 ", " t1", "T1", "\uff541", "t1\u200b", "t1\u0301", "t\u0131", "t1\u2192x")


def test_look_alike_tenants_and_a_unicode_separator(rdb: TestBackend) -> None:
    """Tenants that look like ``t1`` (whitespace, case, full-width, zero-width, combining
    marks, a dotless i) keep documents; the one holding the template's unicode separator
    is refused. ``t1``'s session reads only its own, whatever id it asks for."""
    with Session(red) as s:
        s.save(Arrow(tenant_id="t1", doc_id="d", body="t1"))
    for t in _LOOKALIKES:
        s = Session(red)
        try:
            s.save(Arrow(tenant_id=t, doc_id="d", body=t))
            s.commit()
        except KeyTemplateError:
            assert "\u2192" in t
    s1 = _scoped(rdb.session_kind, tenant_id="t1")
    assert [o.body for o in s1.scan(Arrow).all()] == ["t1"]
    for d in ("d", "\u2192d", "x\u2192d", " d"):
        got = s1.get(Arrow, tenant_id="t1", doc_id=d)
        assert got is None or got.body == "t1"
        assert all(o.body == "t1" for o in s1.query(Arrow, tenant_id="t1", doc_id=d))


# -- templates naming a field twice -----------------------------------------------------------
class Twice(Entity):
    """A key naming the scope field twice."""

    class Meta:
        table = red
        pk = "D#{tenant_id}#{x}#{tenant_id}"
        sk = "TWICE"

    tenant_id: str
    x: str


def test_a_template_naming_a_field_twice_parses_one_value(rdb: TestBackend) -> None:
    """``D#{tenant_id}#{x}#{tenant_id}`` used to make every parse raise ``re.error`` (a
    group named twice): every call of a scoped session, every read of a table without a
    type attribute. Now a key parses when both hold one value; a planted key whose two
    differ (``D#t1#x#t2``) is no key of the template, so no scope's."""
    with Session(red) as s:
        for t in ("t1", "t2"):
            s.save(Twice(tenant_id=t, x="x"))
    _put({"pk": "D#t1#y#t2", "sk": "TWICE", "_type": "Twice", "tenant_id": "t1", "x": "y"})
    pk = spec_of(Twice).pk
    assert pk.parse_key("D#t1#x#t1") == {"tenant_id": "t1", "x": "x"}
    assert pk.parse_key("D#t1#y#t2") is None
    s1 = _scoped(rdb.session_kind, tenant_id="t1")
    assert [(o.tenant_id, o.x) for o in s1.scan(Twice).all()] == [("t1", "x")]
    assert s1.get(Twice, tenant_id="t1", x="x") is not None
    assert [o.x for o in s1.query(Twice, tenant_id="t1", x="x")] == ["x"]


# -- dynaorm's own rows through every write path ---------------------------------------------
own_table = Table("red_keys_own", type_attribute=None)


class Loose(Entity):
    """A table without a type attribute, keyed ``{id}`` / ``{kind}``: any text fits it."""

    class Meta:
        table = own_table
        pk = "{id}"
        sk = "{kind}"

    id: str
    kind: str
    note: str = ""


def test_no_write_path_writes_an_own_row_s_key(db: TestBackend,
                                               request: pytest.FixtureRequest) -> None:
    """A receipt's key (read back from the table) given as an id: save, update by key,
    upsert, check, delete, save_many, delete_many (keys and objects) all refuse it before
    sending; a query of that partition returns nothing and deletes nothing."""
    with use_tables(own_table, endpoint_url=db.endpoint_url, name_suffix=worker_suffix(),
                    wire=wire_of(request)) as tb:
        tb.session_kind = db.session_kind
        s = tb.session()
        s.save(Loose(id="a", kind="k"))
        s.commit(idempotency_key="red-key")
        receipt = next(i for i in tb.scan_raw(own_table)
                       if i["pk"]["S"].startswith("dynaorm:"))
        rid, rkind = receipt["pk"]["S"], receipt["sk"]["S"]
        before = sorted(json.dumps(i, sort_keys=True) for i in tb.scan_raw(own_table))
        attempts: list[Callable[[], Any]] = [
            lambda: s.save(Loose(id=rid, kind=rkind)),
            lambda: s.update(Loose, id=rid, kind=rkind).set(note="x"),
            lambda: s.update(Loose, id=rid, kind=rkind, upsert=True).set(note="x"),
            lambda: s.check(Loose, id=rid, kind=rkind, condition=F("note").exists()),
            lambda: s.delete(Loose, id=rid, kind=rkind),
            lambda: s.save_many([Loose(id=rid, kind=rkind)]),
            lambda: s.delete_many(Loose, [{"id": rid, "kind": rkind}]),
            lambda: s.delete_many([Loose(id=rid, kind=rkind)]),
        ]
        rec = Requests(own_table)
        for attempt in attempts:
            with pytest.raises(KeyTemplateError, match="reserved for dynaorm's own rows"):
                attempt()
                s.commit()
            s.rollback()
        assert rec.calls == []
        assert s.query(Loose, id=rid).all() == [] and s.query(Loose, id=rid).count() == 0
        assert s.query(Loose, id=rid).keys() == []
        for obj in s.query(Loose, id=rid).all():
            s.delete(obj)
        s.commit()
        assert sorted(json.dumps(i, sort_keys=True) for i in tb.scan_raw(own_table)) == before


# -- a separator of a template the write does not render -----------------------------------
class Sparse(Entity):
    """gsi2 is sparse (``region`` may be ``None``: the item is then not in it)."""

    class Meta:
        table = red
        pk = "S-{tenant_id}-{sid}"
        sk = "SPARSE"
        indexes = {"gsi2": ("ORG.{tenant_id}.{region}", "S#{sid}")}

    tenant_id: str
    sid: str
    region: str | None = None


def test_a_separator_of_a_template_the_write_does_not_render_is_refused(
        rdb: TestBackend) -> None:
    for obj in (Note(tenant_id="a.b", note_id="n"), Sparse(tenant_id="a.b", sid="s")):
        s = rdb.session()
        with pytest.raises(KeyTemplateError, match="'tenant_id'"):
            s.save(obj)
            s.commit()
    assert rdb.scan_raw(red) == []


# --- keys colliding across tenants, previous layouts, conversions, hostile filters
# (moved from integration/test_scope_redteam.py:
# Red team of tenant-scoped sessions (contract 22, issue 61): keys whose rendered values
# collide across tenants, previous layouts, key conversions, scans with hostile filters,
# typed scope values. Engines: moto and DynamoDB Local, sync and async (the ``db``
# fixture's session kinds).)

red_scope = Table("red_scope")


class Lowered(Entity):
    """The tenant goes into the key lower-cased: 'T1' and 't1' share a partition."""

    class Meta:
        table = red_scope
        pk = "TENANT#{tenant_id!l}"
        sk = "LOW#{low_id}"

    tenant_id: str
    low_id: str
    secret: str = ""


class OldLayout(Entity):
    """Its previous layout's key did not carry the tenant."""

    class Meta:
        table = red_scope
        pk = "TENANT#{tenant_id}#OLD#{old_id}"
        sk = "OLD"
        previous = Previous(pk="OLD#{old_id}")

    tenant_id: str
    old_id: str
    secret: str = ""


class PlainNote(Entity):
    """Plainly scoped."""

    class Meta:
        table = red_scope
        pk = "TENANT#{tenant_id}"
        sk = "NOTE#{note_id}"
        type_name = "Note"  # (the name it was written with, beside Note above)

    tenant_id: str
    note_id: str
    secret: str = ""


class Counted(Entity):
    """A numeric tenant."""

    class Meta:
        table = red_scope
        pk = "ORG#{org}"
        sk = "C#{cid}"

    org: int
    cid: str


@pytest.fixture
def sdb(db: TestBackend, request: pytest.FixtureRequest) -> Iterator[TestBackend]:
    with use_tables(red_scope, endpoint_url=db.endpoint_url, name_suffix=worker_suffix(),
                    wire=wire_of(request)) as tb:
        tb.session_kind = db.session_kind
        yield tb


def scoped(tb: TestBackend, **scope: Any) -> Session:
    if tb.session_kind == "async":
        return cast(Session, BlockingAsyncSession(AsyncSession(red_scope, scope=scope)))
    return Session(red_scope, scope=scope)


def test_a_lossy_key_conversion_of_the_scope_field(sdb: TestBackend) -> None:
    """Tenant 'T1' (another tenant) and 't1' render the same partition: a session scoped
    to 't1' must not be able to read 'T1''s items."""
    with sdb.session() as s:
        s.save(Lowered(tenant_id="T1", low_id="a", secret="of T1"))
    s1 = scoped(sdb, tenant_id="t1")
    # refused: the scope cannot cover an entity whose key folds the tenant
    with pytest.raises(ScopeError, match="exactly"):
        s1.get(Lowered, tenant_id="t1", low_id="a")
    with pytest.raises(ScopeError, match="exactly"):
        s1.query(Lowered, tenant_id="t1").all()
    with pytest.raises(ScopeError, match="exactly"):
        s1.scan(Lowered).all()


def test_a_previous_layout_without_the_tenant(sdb: TestBackend) -> None:
    """A row of the old layout ('OLD#{old_id}', no tenant) of tenant t2: a session
    scoped to t1 reading old_id 'o1' must not get it."""
    raw = {"pk": {"S": "OLD#o1"}, "sk": {"S": "OLD"}, "_type": {"S": "OldLayout"},
           "tenant_id": {"S": "t2"}, "old_id": {"S": "o1"}, "secret": {"S": "of t2"}}
    red_scope.db.driver.run(call("PutItem", {"TableName": red_scope.name, "Item": raw}))
    s1 = scoped(sdb, tenant_id="t1")
    with pytest.raises(ScopeError, match="OLD#"):
        s1.get(OldLayout, tenant_id="t1", old_id="o1")
    with sdb.session() as s:  # (unscoped, it is read from its old layout, at its own key:
        # t2's; never for t1's key, which the old layout cannot tell from t2's)
        got = s.get(OldLayout, tenant_id="t2", old_id="o1")
        assert got is not None and got.secret == "of t2"
        assert s.get(OldLayout, tenant_id="t1", old_id="o1") is None


def test_a_user_filter_cannot_escape_the_scope_filter(sdb: TestBackend) -> None:
    with sdb.session() as s:
        for t in ("t1", "t2"):
            s.save(PlainNote(tenant_id=t, note_id="x", secret=f"of {t}"))
    s1 = scoped(sdb, tenant_id="t1")
    hostile = (F("tenant_id") == "t2") | (F("secret") == "of t2") | F("note_id").exists()
    assert {o.tenant_id for o in s1.scan(PlainNote).filter(hostile).all()} == {"t1"}
    assert s1.scan(PlainNote).filter(hostile).count() == 1
    assert {o.tenant_id for o in s1.scan(PlainNote, segment=0, segments=2).all()
            } | {o.tenant_id for o in s1.scan(PlainNote, segment=1, segments=2).all()
                 } == {"t1"}


@pytest.mark.parametrize("value", [1, "1"])
def test_a_numeric_scope_reads_its_own_items(sdb: TestBackend, value: Any) -> None:
    """scope={'org': 1} and an int field; and a str '1' for it: keys render alike, so
    a scan must find the same items (fail-closed, but wrong)."""
    with sdb.session() as s:
        s.save(Counted(org=1, cid="a"))
        s.save(Counted(org=2, cid="b"))
    if True:
        s1 = scoped(sdb, org=value)
        assert [c.cid for c in s1.query(Counted, org=1).all()] == ["a"]
        assert [c.cid for c in s1.scan(Counted).all()] == ["a"], value


def test_stage_write_by_key_holds_the_scope(sdb: TestBackend) -> None:
    """``stage_write`` (the jobs' surface) of an update or a check by another tenant's
    key: refused before sending, as ``update()``/``check()`` are."""
    from dynaorm.write.updates import StagedCheck, StagedUpdate

    with sdb.session() as s:
        s.save(PlainNote(tenant_id="t2", note_id="n", secret="of t2"))
    s1 = scoped(sdb, tenant_id="t1")
    spec_key = {"tenant_id": "t2", "note_id": "n"}
    with pytest.raises(ScopeError):
        s1.stage_write(StagedUpdate(PlainNote, spec_key, None, False).set(secret="mine"))
    with pytest.raises(ScopeError):
        s1.stage_write(StagedCheck(PlainNote, {"pk": "TENANT#t2", "sk": "NOTE#n"},
                                   F("secret") == "of t2"))
    s1.commit()
    with sdb.session() as s:
        stored = s.get(PlainNote, tenant_id="t2", note_id="n")
    assert stored is not None and stored.secret == "of t2"
    mine = StagedUpdate(PlainNote, {"tenant_id": "t1", "note_id": "n"}, None, True)
    s1.stage_write(mine.set(secret="t1's"))
    s1.commit()
    assert s1.get(PlainNote, tenant_id="t1", note_id="n") is not None


@pytest.mark.parametrize("value", ["", None, "t1#x", "#", 0.0 * 0])
def test_scopes_that_cannot_hold(value: Any) -> None:
    """Empty, None, a value with '#' (it would render another tenant's partition
    prefix): refused when the session is made (0 renders '0': a scope)."""
    if value == 0:
        assert Session(red_scope, scope={"tenant_id": value}) is not None
        return
    with pytest.raises(ScopeError):
        Session(red_scope, scope={"tenant_id": value})


def test_unicode_forms_are_other_tenants(sdb: TestBackend) -> None:
    """'é' composed and decomposed render different keys: each its own tenant."""
    nfc, nfd = "caf\u00e9", "cafe\u0301"
    with sdb.session() as s:
        s.save(PlainNote(tenant_id=nfd, note_id="n", secret="of nfd"))
    s1 = scoped(sdb, tenant_id=nfc)
    with pytest.raises(ScopeError):
        s1.get(PlainNote, tenant_id=nfd, note_id="n")
    assert s1.get(PlainNote, tenant_id=nfc, note_id="n") is None
    assert s1.scan(PlainNote).all() == []


def test_a_scan_cursor_of_another_session_stays_in_the_scope(sdb: TestBackend) -> None:
    """A cursor from an unscoped scan (positioned among t2's items) or a tampered one
    given to a scoped scan: the scope's filter still holds."""
    with sdb.session() as s:
        for t in ("t1", "t2", "t3"):
            for n in range(3):
                s.save(PlainNote(tenant_id=t, note_id=f"n{n}", secret=f"of {t}"))
    with sdb.session() as s:
        page = s.scan(PlainNote).page_size(2).page()
    assert page.cursor is not None
    s1 = scoped(sdb, tenant_id="t1")
    with pytest.raises(InvalidCursorError):  # (a cursor is bound to its read's filter)
        s1.scan(PlainNote).page_size(2).page(page.cursor)
    mine = s1.scan(PlainNote).page_size(2).page()
    assert mine.cursor is not None
    tampered = mine.cursor[:-4] + ("AAAA" if not mine.cursor.endswith("AAAA") else "BBBB")
    with pytest.raises(InvalidCursorError):
        s1.scan(PlainNote).page_size(2).page(tampered)
    seen, cursor = list(mine.items), mine.cursor
    while cursor is not None:
        got = s1.scan(PlainNote).page_size(2).page(cursor)
        seen.extend(got.items)
        cursor = got.cursor
    assert sorted((n.tenant_id, n.note_id) for n in seen) == [
        ("t1", "n0"), ("t1", "n1"), ("t1", "n2")]
