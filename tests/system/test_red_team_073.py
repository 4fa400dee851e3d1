"""Red team of issue 73's fixes (written by someone who did not write them): the MCP
write tools under hostile arguments, lost answers with a second writer in the window,
idempotency keys reused across calls and tenants, forged and misplaced cursors; the
Iceberg lake across model changes between runs; the stream and ``check`` readers of a
user rule's rows. Driven by the official ``mcp`` SDK's client on moto and DynamoDB
Local. What does not hold is a strict xfail naming the defect."""

from __future__ import annotations

import base64
import json
import math
import uuid
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Annotated, Any

import pytest
from pydantic import BaseModel, Field, ValidationError

import dynaorm
import dynaorm.mcp
from dynaorm import DynaormError, Rule, Session, register_rule
from dynaorm.schema.rules import RULES, Rows
from dynaorm.testing import TestBackend, inject_faults, use_tables, worker_suffix
from dynaorm.values.records import Fail, Put, Role
from tests.conftest import wire_of
from tests.integration.test_mcp_writes import Kit, failed, kit_raw, kits, ok, values_of
from tests.support.export_setup import aws  # noqa: F401 (a fixture)
from tests.support.mcp_client import call, text
from tests.support.tenant_models import Customer, Memo, tenants

# (sync only: the server makes its own sessions)
# (moto and DynamoDB Local: what these attack does not depend on the engine beyond
# them, and CI has 30 minutes)
pytestmark = [pytest.mark.sync_only, pytest.mark.engines("moto", "local")]
RUN = uuid.uuid4().hex[:8]


@pytest.fixture
def kdb(db: TestBackend, request: pytest.FixtureRequest) -> Iterator[TestBackend]:
    with use_tables(kits, tenants, endpoint_url=db.endpoint_url,
                    name_suffix=worker_suffix(), wire=wire_of(request)) as tb:
        yield tb


def _save_refuses(**values: Any) -> bool:
    try:
        with Session(kits) as s:
            s.save(Kit(**values))
    except (ValidationError, DynaormError):
        return True
    return False


# -- MCP: hostile values -----------------------------------------------------------------
HOSTILE = [
    ("kit_id", "a#b"), ("kit_id", "KIT#x"), ("kit_id", ""), ("kit_id", "x" * 2000),
    ("price", math.nan), ("price", math.inf), ("price", -math.inf), ("price", 10**40 + 1),
    ("price", 1e300), ("price", "1e-200"), ("count", 10**30), ("sizes", [10**39]),
    ("sizes", [math.nan]), ("label", "\x00"), ("tags", [""]), ("blob", "x" * 10),
]


def test_a_hostile_value_is_stored_as_a_save_stores_it_or_refused_by_both(
        kdb: TestBackend) -> None:
    """Any value the save and update tools accept is stored as a caller's save stores it;
    any a save refuses, both refuse, naming the argument, writing nothing. (The values
    share the tables: each writes items of its own ids; the key field's, first, empty the
    kits before they write.)"""
    for name, value in HOSTILE:
        _hostile(name, value)


def _hostile(name: str, value: Any) -> None:
    n = uuid.uuid4().hex[:8]
    kit_id = value if name == "kit_id" else f"ref-{n}"
    values = {} if name == "kit_id" else {name: value}
    refused = _save_refuses(kit_id=kit_id, **values)
    expected = None if refused else values_of(kit_raw(kit_id))
    if name == "kit_id":  # (a key field: the save tool only; the update tool's key)
        with Session(kits) as s:
            for k in list(s.scan(Kit)):
                s.delete(k)
        srv = dynaorm.mcp.server(kits, writes=["Kit"])
        saved, updated = call(srv, ("save_kit", {"item": {"kit_id": value}}),
                              ("update_kit", {"kit_id": value, "set": {"count": 1}}))
        if refused:
            assert "kit_id" in failed(saved), text(saved)
            assert [k.kit_id for k in Session(kits).scan(Kit)] == []
        else:
            assert ok(saved)["item"]["kit_id"] == value
        return
    with Session(kits) as s:
        s.save(Kit(kit_id=f"upd-{n}"))
    base = values_of(kit_raw(f"upd-{n}"))
    srv = dynaorm.mcp.server(kits, writes=["Kit"])
    # (bytes travel through the tools as base64 text: the blob the save got, encoded)
    sent = {k: base64.b64encode(v.encode()).decode() if k == "blob" else v
            for k, v in values.items()}
    saved, updated = call(srv, ("save_kit", {"item": {"kit_id": f"new-{n}", **sent}}),
                          ("update_kit", {"kit_id": f"upd-{n}", "set": sent}))
    if refused:
        for r in (saved, updated):
            said = failed(r)
            assert name in said and "Traceback" not in said, said
        assert kit_raw(f"new-{n}") is None and values_of(kit_raw(f"upd-{n}")) == base
        return
    assert values_of(kit_raw(f"new-{n}")) == expected, text(saved)
    assert values_of(kit_raw(f"upd-{n}")) == expected, text(updated)


@pytest.mark.parametrize("changes", [{"kit_id": "other"}, {"pk": "KIT#other"},
                                     {"sk": "X"}, {"_rev": 1}, {"_type": "Kit"}])
def test_a_set_touching_key_or_dynaorm_attributes_is_refused_by_name(
        kdb: TestBackend, changes: dict[str, Any]) -> None:
    with Session(kits) as s:
        s.save(Kit(kit_id="k1"))
    before = kit_raw("k1")
    srv = dynaorm.mcp.server(kits, writes=["Kit"])
    [r] = call(srv, ("update_kit", {"kit_id": "k1", "set": changes}))
    assert f"set/{next(iter(changes))}" in failed(r)
    assert kit_raw("k1") == before


def test_a_set_moving_a_unique_value_onto_another_is_refused_and_writes_nothing(
        kdb: TestBackend) -> None:
    with Session(tenants) as s:
        s.save(Customer(tenant_id="t1", customer_id="c1", name="a", email="a@x.io"))
        s.save(Customer(tenant_id="t1", customer_id="c2", name="b", email="b@x.io"))
    srv = dynaorm.mcp.server(tenants, writes=["Customer"])
    taken, moved, again = call(
        srv, ("update_customer", {"tenant_id": "t1", "customer_id": "c2",
                                  "set": {"email": "A@X.io"}}),
        ("update_customer", {"tenant_id": "t1", "customer_id": "c2",
                             "set": {"email": "c@x.io"}}),
        ("save_customer", {"item": {"tenant_id": "t1", "customer_id": "c3", "name": "c",
                                    "email": "b@x.io"}}))
    assert "email" in failed(taken)
    assert ok(moved)["item"]["email"] == "c@x.io"
    ok(again)  # (b@x.io was released by the move)
    found = Session(tenants).find(Customer, tenant_id="t1", email="a@x.io")
    assert found is not None and found.customer_id == "c1"


def test_an_update_of_an_item_that_does_not_exist_creates_nothing(kdb: TestBackend) -> None:
    srv = dynaorm.mcp.server(kits, writes=["Kit"])
    [r] = call(srv, ("update_kit", {"kit_id": "ghost", "set": {"count": 3}}))
    failed(r)
    assert kit_raw("ghost") is None


# -- MCP: idempotency keys ---------------------------------------------------------------
def test_a_key_reused_for_another_call_is_a_mismatch_never_a_replay(kdb: TestBackend) -> None:
    srv = dynaorm.mcp.server(kits, writes=["Kit"])
    key = f"reuse-{RUN}"
    first, other_args, other_tool, same = call(
        srv, ("save_kit", {"item": {"kit_id": "k1"}, "idempotency_key": key}),
        ("save_kit", {"item": {"kit_id": "k2"}, "idempotency_key": key}),
        ("update_kit", {"kit_id": "k1", "set": {"count": 2}, "idempotency_key": key}),
        ("save_kit", {"item": {"kit_id": "k1"}, "idempotency_key": key}))
    assert ok(first)["replayed"] is False and ok(same)["replayed"] is True
    for r in (other_args, other_tool):
        said = failed(r)
        assert "replayed" not in said and "IdempotencyMismatch" in said, said
    assert kit_raw("k2") is None and Session(kits).get(Kit, kit_id="k1").count == 0


def test_one_tenants_key_never_replays_nor_blocks_anothers(kdb: TestBackend) -> None:
    one = dynaorm.mcp.server(tenants, writes=["Memo"], scope={"tenant_id": "t1"})
    two = dynaorm.mcp.server(tenants, writes=["Memo"], scope={"tenant_id": "t2"})
    key = f"shared-{RUN}"
    args = {"item": {"memo_id": "m1", "text": "hi"}, "idempotency_key": key}
    [a] = call(one, ("save_memo", args))
    [b] = call(two, ("save_memo", args))
    assert ok(a)["replayed"] is False, text(a)
    assert ok(b)["replayed"] is False, text(b)  # (t2's own write, not t1's replayed)
    s = Session(tenants)
    assert s.get(Memo, tenant_id="t2", memo_id="m1") is not None
    assert s.get(Memo, tenant_id="t1", memo_id="m1") is not None


@pytest.mark.parametrize("second_writer", [False, True])
def test_a_retried_save_after_a_lost_answer_with_a_unique_taken_in_the_window(
        kdb: TestBackend, second_writer: bool) -> None:
    """The save applied, its answer lost; a second writer then moves the customer's
    email away and someone else takes it: the retry replays (it applied), it never
    tries again nor reports the value taken."""
    srv = dynaorm.mcp.server(tenants, writes=["Customer"])
    key = f"uq-{second_writer}-{RUN}"
    args = {"item": {"tenant_id": "t1", "customer_id": "c1", "name": "a",
                     "email": "a@x.io"}, "idempotency_key": key}

    def writer() -> None:
        with Session(tenants) as other:
            mine = other.get(Customer, tenant_id="t1", customer_id="c1", consistent=True)
            assert mine is not None
            mine.email = "moved@x.io"
            other.save(mine)
        with Session(tenants) as other:
            other.save(Customer(tenant_id="t1", customer_id="c9", name="z",
                                email="a@x.io"))

    with inject_faults(tenants) as faults:
        faults.lose_answer("TransactWriteItems", after=writer if second_writer else None)
        call(srv, ("save_customer", args))
    [again] = call(srv, ("save_customer", args))
    assert ok(again)["replayed"] is True, text(again)
    stored = Session(tenants).get(Customer, tenant_id="t1", customer_id="c1",
                                  consistent=True)
    assert stored is not None
    assert stored.email == ("moved@x.io" if second_writer else "a@x.io")


# -- MCP: cursors ------------------------------------------------------------------------
def _memos(tenant: str, n: int) -> None:
    with Session(tenants) as s:
        for i in range(n):
            s.save(Memo(tenant_id=tenant, memo_id=f"m{i}"))


@pytest.mark.parametrize("how", ["truncated", "empty", "garbage", "padded"])
def test_a_damaged_cursor_is_invalid_cursor_error(kdb: TestBackend, how: str,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DYNAORM_CURSOR_SECRET", raising=False)
    _memos("t1", 3)
    srv = dynaorm.mcp.server(tenants)
    [page] = call(srv, ("query_memo", {"tenant_id": "t1", "limit": 2}))
    cursor = ok(page)["cursor"]
    damaged = {"truncated": cursor[: len(cursor) // 2], "empty": "",
               "garbage": "%%%%", "padded": cursor + "=="}[how]
    [r] = call(srv, ("query_memo", {"tenant_id": "t1", "cursor": damaged}))
    said = failed(r)
    assert said.startswith("InvalidCursorError"), said


@pytest.mark.parametrize("secret", [None, "shared"])
def test_a_cursor_of_one_tenant_never_reads_anothers_partition(
        kdb: TestBackend, secret: str | None, monkeypatch: pytest.MonkeyPatch) -> None:
    """A cursor given to tenant t1's query, passed by tenant t2 (another scoped server
    with the same secret, or the same unscoped server with another partition): refused
    as a cursor, never t1's items, never an engine's error."""
    if secret is None:
        monkeypatch.delenv("DYNAORM_CURSOR_SECRET", raising=False)
    else:
        monkeypatch.setenv("DYNAORM_CURSOR_SECRET", secret)
    _memos("t1", 3)
    _memos("t2", 3)
    srv = dynaorm.mcp.server(tenants)
    [page] = call(srv, ("query_memo", {"tenant_id": "t1", "limit": 2}))
    cursor = ok(page)["cursor"]
    [other] = call(srv, ("query_memo", {"tenant_id": "t2", "cursor": cursor}))
    assert failed(other).startswith("InvalidCursorError"), text(other)
    if secret is not None:
        scoped = dynaorm.mcp.server(tenants, scope={"tenant_id": "t2"})
        [theirs] = call(scoped, ("query_memo", {"cursor": cursor}))
        assert failed(theirs).startswith("InvalidCursorError"), text(theirs)


# -- the lake: model changes between runs ------------------------------------------------


class Line1(BaseModel):
    sku: str
    qty: int


class Line2(BaseModel):  # (qty removed)
    sku: str


class Line3(BaseModel):  # (a field added, with a default)
    sku: str
    qty: int
    note: str = "-"


class Line4(BaseModel):  # (qty's type changed)
    sku: str
    qty: str


class Place(BaseModel):
    city: str


D2 = Annotated[Decimal, Field(max_digits=10, decimal_places=2)]
D3 = Annotated[Decimal, Field(max_digits=10, decimal_places=3)]
D12 = Annotated[Decimal, Field(max_digits=12, decimal_places=2)]

#: (name, the fields before, a value of each, the fields after, a value of each, evolves)
CHANGES: list[tuple[str, dict[str, Any], dict[str, Any], dict[str, Any], dict[str, Any],
                    bool]] = [
    ("list-element-field-removed", {"lines": list[Line1]},
     {"lines": [Line1(sku="a", qty=1)]}, {"lines": list[Line2]},
     {"lines": [Line2(sku="b")]}, True),
    ("list-element-field-added", {"lines": list[Line1]},
     {"lines": [Line1(sku="a", qty=1)]}, {"lines": list[Line3]},
     {"lines": [Line3(sku="b", qty=2)]}, True),
    ("list-element-field-retyped", {"lines": list[Line1]},
     {"lines": [Line1(sku="a", qty=1)]}, {"lines": list[Line4]},
     {"lines": [Line4(sku="b", qty="2")]}, False),
    ("map-value-field-removed", {"by": dict[str, Line1]},
     {"by": {"k": Line1(sku="a", qty=1)}}, {"by": dict[str, Line2]},
     {"by": {"k": Line2(sku="b")}}, True),
    ("renamed", {"n": int}, {"n": 1}, {"m": (int, 0)}, {"m": 2}, True),
    ("narrowed-float-to-int", {"n": float}, {"n": 1.5}, {"n": int}, {"n": 2}, False),
    ("scale-up", {"d": D2}, {"d": Decimal("1.25")}, {"d": D3}, {"d": Decimal("1.125")},
     False),
    ("precision-up", {"d": D2}, {"d": Decimal("1.25")}, {"d": D12},
     {"d": Decimal("1234567890.25")}, True),
    ("struct-made-optional", {"p": Place}, {"p": Place(city="Oslo")},
     {"p": Place | None}, {"p": None}, True),
    ("struct-became-text", {"p": Place}, {"p": Place(city="Oslo")}, {"p": str},
     {"p": "Oslo"}, False),
    ("text-became-struct", {"p": str}, {"p": "Oslo"}, {"p": Place},
     {"p": Place(city="Rome")}, False),
    ("list-became-set", {"t": list[str]}, {"t": ["a"]}, {"t": set[str]}, {"t": {"b"}},
     True),
    ("bool-became-int", {"b": bool}, {"b": True}, {"b": int}, {"b": 3}, False),
]


def _lake_version(table: Any, **fields: Any) -> type[Any]:
    meta = type("Meta", (), {"table": table, "pk": "E#{id}", "sk": "E", "type_name": "evo",
                             "__qualname__": "Evo.Meta", "__module__": __name__})
    notes = {"id": str, **{k: v[0] if isinstance(v, tuple) else v for k, v in fields.items()}}
    defaults = {k: v[1] for k, v in fields.items() if isinstance(v, tuple)}
    return type("Evo", (dynaorm.Entity,), {"__annotations__": notes, "Meta": meta,
                                           "__module__": __name__, "__qualname__": "Evo",
                                           **defaults})


def _lake_state(catalog: Any) -> tuple[Any, ...]:
    t = catalog.load_table("app.evo")
    rows = sorted(t.scan().to_arrow().to_pylist(), key=lambda r: r["id"])
    return (str(t.schema()), [s.snapshot_id for s in t.snapshots()], rows)


@pytest.mark.engines("moto")  # (the lake's evolution is dynaorm's and pyiceberg's: one engine)
@pytest.mark.parametrize("change", CHANGES, ids=[c[0] for c in CHANGES])
def test_a_model_change_between_runs_is_evolution_or_lake_error(
        backend: str | None, aws: None, tmp_path: Path, change: Any) -> None:  # noqa: F811
    """Run 1 exports the model before, run 2 the model after (an item of each stored):
    evolution holding both items, or ``LakeError`` with the lake as it was; never a bare
    ``ValueError`` or pyarrow error."""
    pytest.importorskip("pyiceberg", reason="dynaorm[lake] is not installed")
    from moto import mock_aws
    from pyiceberg.catalog.sql import SqlCatalog

    from dynaorm import LakeError
    from dynaorm.jobs import export, run_local
    from dynaorm.testing import moto_backend

    name, before, one, after, two, evolves = change
    (tmp_path / "warehouse").mkdir()
    catalog = SqlCatalog("lake", uri=f"sqlite:///{tmp_path}/catalog.db",
                         warehouse=f"file://{tmp_path}/warehouse")
    table = dynaorm.Table(f"dynaorm-red73-{name}")
    with mock_aws(), moto_backend(), use_tables(table, endpoint_url=backend,
                                                 name_suffix=worker_suffix()):
        runs = iter(range(10))

        def export_with(cls: type[Any]) -> Any:
            return run_local(export(table, tmp_path / str(next(runs)), format="iceberg",
                                    catalog=catalog, namespace="app", entities=[cls]))
        v1 = _lake_version(table, **before)
        with Session(table) as s:
            s.save(v1(id="a", **one))
        export_with(v1)
        v2 = _lake_version(table, **after)
        with Session(table) as s:
            s.save(v2(id="b", **two))
        held = _lake_state(catalog)
        if evolves:
            assert export_with(v2).tables == {"app.evo": 2}
            assert [r["id"] for r in _lake_state(catalog)[2]] == ["a", "b"]
        else:
            with pytest.raises(LakeError) as refused:
                export_with(v2)
            assert _lake_state(catalog) == held
            assert "nothing was committed" in str(refused.value)


# -- streams and check: a user rule's rows -----------------------------------------------
class Red73Audit(Rule):
    """An audit row per write of a ``Red73Audited*`` entity, ``AUDIT#<pk>`` /
    ``<what>#<its sk>#<n>``, carrying no type attribute (a rule written before the table
    had one, or that never sets it)."""

    __slots__ = ()
    name = "red73-audit"
    order = 90
    transforms = False

    @classmethod
    def build(cls, decl: Any) -> Red73Audit | None:
        return cls() if decl.type_name.startswith("Red73Audited") else None

    def rows(self, change: Any) -> Rows:
        key = change.new_key or change.old_key
        what = "delete" if change.new is None else "insert" if change.old is None else "update"
        at = {"pk": f"AUDIT#{key['pk']}", "sk": f"{what}#{key['sk']}#{change.staged:06d}"}
        item = {"pk": {"S": at["pk"]}, "sk": {"S": at["sk"]}}
        return Rows((), (Put(at, item, None, change.origin(Role.ROW, Fail.CALLER,
                                                            owner=at)),))


@pytest.fixture(scope="module")
def ruled() -> Iterator[dict[str, Any]]:
    """Two tables (one with a type attribute, one without), each with an audited entity
    and an entity whose key templates also fit the audit rows."""
    register_rule(Red73Audit)
    made: dict[str, Any] = {}
    try:
        for label, attr in (("typed", "_type"), ("untyped", None)):
            table = dynaorm.Table(f"dynaorm-red73-rules-{label}", type_attribute=attr)
            audited, ledger = _audited_models(table)
            made[label] = (table, audited, ledger)
        yield made
    finally:
        RULES.pop(Red73Audit.name, None)


def _audited_models(home: Any) -> tuple[type[Any], type[Any]]:
    """An audited order of ``home``, and a ledger whose templates fit its audit rows."""
    class Red73AuditedOrder(dynaorm.Entity):
        class Meta:
            table = home
            pk = "ORDER#{oid}"
            sk = "ORDER"

        oid: str
        n: int = 0

    class Red73Ledger(dynaorm.Entity):
        class Meta:
            table = home
            pk = "AUDIT#{kind}#{ref}"
            sk = "{what}#{a}#{b}"

        kind: str
        ref: str
        what: str
        a: str
        b: str
        amount: int = 0

    return Red73AuditedOrder, Red73Ledger


def _record(name: str, item: dict[str, Any], keys_only: bool = False) -> dict[str, Any]:
    keys = {k: item[k] for k in ("pk", "sk")}
    data: dict[str, Any] = {"Keys": keys, "SequenceNumber": "1",
                            "ApproximateCreationDateTime": 1767225600}
    if not keys_only:
        data["NewImage"] = item
    return {"eventID": "e1", "eventName": name, "dynamodb": data}


@pytest.mark.parametrize("label", ["typed", "untyped"])
@pytest.mark.parametrize("keys_only", [False, True])
def test_a_rule_row_whose_key_fits_an_entity_template_is_the_rules(
        db: TestBackend, ruled: dict[str, Any], label: str, keys_only: bool) -> None:
    """An audit row (no type attribute) whose key also fits another entity's templates:
    ``powertools.changes`` says it is the rule's (role ``"rule"``), not the entity's; a
    keys-only record too."""
    from dynaorm import powertools

    table, audited, _ = ruled[label]
    with use_tables(table, endpoint_url=db.endpoint_url, name_suffix=worker_suffix()):
        with Session(table) as s:
            s.save(audited(oid="1"))
        [row] = [i for i in table.db.send("Scan", {"TableName": table.name})["Items"]
                 if i["pk"]["S"].startswith("AUDIT#")]
        change = powertools.changes(_record("INSERT", row, keys_only), table)
        assert change is not None
        assert (change.role, change.rule, change.entity) == ("rule", "red73-audit", audited)


@pytest.mark.parametrize("label", ["typed", "untyped"])
def test_reads_of_the_entity_never_return_a_rule_row_and_check_is_clean(
        db: TestBackend, ruled: dict[str, Any], label: str) -> None:
    from dynaorm.jobs.checking import check_table

    table, audited, ledger = ruled[label]
    with use_tables(table, endpoint_url=db.endpoint_url, name_suffix=worker_suffix()):
        with Session(table) as s:
            s.save(audited(oid="1"))
            s.save(ledger(kind="K", ref="r", what="w", a="a", b="b", amount=5))
        s = Session(table)
        assert [(x.kind, x.amount) for x in s.scan(ledger)] == [("K", 5)]
        assert list(s.query(ledger, kind="ORDER", ref="1")) == []
        assert check_table(table).problems == []


@pytest.mark.parametrize("label", ["typed", "untyped"])
def test_a_write_at_a_key_a_rule_row_claims_is_refused_before_sending(
        db: TestBackend, ruled: dict[str, Any], label: str) -> None:
    """A ledger keyed where the audit rule writes its rows (``AUDIT#ORDER#1``), on a
    table without a type attribute: its save (sync, async, ``save_many``), an update by
    its key and a delete by the key of an audit row are refused before anything is sent,
    naming the rule and the key (a get by it too: no ledger can be there), and the table
    holds what it held (the save was stored, told it was, and never read back; the delete
    removed the audit row). With a type attribute the stored type name tells them apart:
    the save is read back."""
    from dynaorm.aio.session import AsyncSession
    from dynaorm.errors import KeyTemplateError

    table, audited, ledger = ruled[label]
    with use_tables(table, endpoint_url=db.endpoint_url, name_suffix=worker_suffix()):
        with Session(table) as s:
            s.save(audited(oid="1"))
        held = sorted(json.dumps(i, sort_keys=True) for i in table.db.send(
            "Scan", {"TableName": table.name})["Items"])
        [audit] = [i for i in held if "AUDIT#" in i]
        at = {"kind": "ORDER", "ref": "1", "what": "insert", "a": "ORDER",
              "b": json.loads(audit)["sk"]["S"].split("#")[2]}
        obj = ledger(**{**at, "what": "w"}, amount=1)
        if label == "typed":
            with Session(table) as s:
                s.save(obj)
            assert Session(table).get(ledger, **{**at, "what": "w"}) == obj
            return
        s = Session(table)
        writes = [lambda: s.save(obj), lambda: AsyncSession(table).save(obj),
                  lambda: s.save_many([obj]), lambda: s.update(ledger, **at).set(amount=2),
                  lambda: s.delete(ledger(**at)), lambda: s.get(ledger, **at)]
        for write in writes:
            with pytest.raises(KeyTemplateError, match=r"Red73Ledger: the key \{'pk': "
                               r"'AUDIT#ORDER#1', 'sk': .* fits the rows rule 'red73-audit' "
                               r"adds to Red73AuditedOrder's writes \(AUDIT#ORDER#\{oid\}, "
                               r"None\); table .* has no type attribute"):
                write()
        s.commit()
        assert sorted(json.dumps(i, sort_keys=True) for i in table.db.send(
            "Scan", {"TableName": table.name})["Items"]) == held


def _keyed(home: Any, name: str, pk: str, sk: str, **meta: Any) -> type[Any]:
    """An entity of ``home`` keyed ``pk``/``sk`` (each field a ``str``)."""
    from dynaorm.schema.templates import KeyTemplate
    fields = dict.fromkeys((*KeyTemplate.parse(pk).fields, *KeyTemplate.parse(sk).fields), str)
    body = {"table": home, "pk": pk, "sk": sk, "__qualname__": f"{name}.Meta",
            "__module__": __name__, **meta}
    return type(name, (dynaorm.Entity,), {"__annotations__": fields, "__module__": __name__,
                                          "__qualname__": name,
                                          "Meta": type("Meta", (), body)})


#: (label, the other entity's pk, sk, its Meta options): each could fit an audit row
#: ``AUDIT#ORDER#{oid}`` where neither shape is narrower (or ``Meta.overlaps`` refuses)
UNRANKED = [
    ("equal", "AUDIT#ORDER#{ref}", "{what}#{a}#{b}", {}),
    ("crossing", "AUDIT#{kind}#1", "{what}#{a}#{b}", {}),
    ("refuse", "AUDIT#{kind}#{ref}", "{what}#{a}#{b}", {"overlaps": "refuse"}),
]


@pytest.mark.parametrize("audited_first", [True, False])
@pytest.mark.parametrize(("label", "pk", "sk", "meta"), UNRANKED, ids=[u[0] for u in UNRANKED])
def test_a_rule_row_kind_no_precedence_tells_from_an_entity_is_refused(
        ruled: dict[str, Any], audited_first: bool, label: str, pk: str, sk: str,
        meta: dict[str, Any]) -> None:
    """On a table without a type attribute, an entity whose templates could fit a rule's
    row where neither shape is narrower than the other is refused when the second class
    is defined, with the error two entities' unranked templates get; with a type
    attribute, or a narrower rule row (the ``ruled`` fixture), both are defined."""
    for attr in (None, "_type"):
        home = dynaorm.Table(f"dynaorm-red73-unranked-{label}-{audited_first}-{attr}",
                             type_attribute=attr)
        make = [("Red73AuditedThing", "ORDER#{oid}", "ORDER", {}), ("Red73Other", pk, sk, meta)]
        if not audited_first:
            make.reverse()
        _keyed(home, *make[0][:3], **make[0][3])
        if attr is not None:
            _keyed(home, *make[1][:3], **make[1][3])
            continue
        with pytest.raises(DynaormError, match=r"could match the same item as the row rule "
                           r"'red73-audit' adds to Red73AuditedThing's writes \('AUDIT#ORDER"
                           r"#\{oid\}', None\); table .* has no type attribute") as ruled_err:
            _keyed(home, *make[1][:3], **make[1][3])
        assert len(home.entities) == 1  # (the refused class is not the table's)
    two = dynaorm.Table(f"dynaorm-red73-unranked-{label}-{audited_first}-entities",
                        type_attribute=None)
    _keyed(two, "Red73One", "AUDIT#ORDER#{ref}", "{what}#{a}#{b}")
    with pytest.raises(DynaormError, match="could match the same item as Red73One's") as err:
        _keyed(two, "Red73Two", "AUDIT#ORDER#{x}", "{y}#{z}#{w}")
    assert type(ruled_err.value) is type(err.value)  # (the same error, the same words)


def _typed_version(table: Any, name: str, **fields: Any) -> type[Any]:
    meta = type("Meta", (), {"table": table, "pk": f"{name.upper()}#{{id}}", "sk": "E",
                             "type_name": name, "__qualname__": f"{name}.Meta",
                             "__module__": __name__})
    notes = {"id": str, **fields}
    return type(name, (dynaorm.Entity,), {"__annotations__": notes, "Meta": meta,
                                          "__module__": __name__, "__qualname__": name})


def _snapshots(catalog: Any, name: str) -> tuple[Any, ...]:
    t = catalog.load_table(f"app.{name}")
    return (str(t.schema()), [s.snapshot_id for s in t.snapshots()],
            sorted(r["id"] for r in t.scan().to_arrow().to_pylist()))


def test_one_entitys_refused_change_leaves_every_table_of_the_export_as_it_was(
        backend: str | None, aws: None, tmp_path: Path) -> None:  # noqa: F811
    """An export of two entities: one's change is evolution, the other's is refused: the
    export is ``LakeError`` and neither table changed (no lake left half-changed); with
    the refused one mended, both apply."""
    pytest.importorskip("pyiceberg", reason="dynaorm[lake] is not installed")
    from moto import mock_aws
    from pyiceberg.catalog.sql import SqlCatalog

    from dynaorm import LakeError
    from dynaorm.jobs import export, run_local
    from dynaorm.testing import moto_backend

    (tmp_path / "warehouse").mkdir()
    catalog = SqlCatalog("lake", uri=f"sqlite:///{tmp_path}/catalog.db",
                         warehouse=f"file://{tmp_path}/warehouse")
    table = dynaorm.Table("dynaorm-red73-half")
    with mock_aws(), moto_backend(), use_tables(table, endpoint_url=backend,
                                                 name_suffix=worker_suffix()):
        runs = iter(range(10))

        def export_with(*classes: type[Any]) -> Any:
            return run_local(export(table, tmp_path / str(next(runs)), format="iceberg",
                                    catalog=catalog, namespace="app",
                                    entities=list(classes)))
        a1, b1 = _typed_version(table, "aa", n=int), _typed_version(table, "bb", n=int)
        with Session(table) as s:
            s.save(a1(id="1", n=1))
            s.save(b1(id="1", n=1))
        export_with(a1, b1)
        a2 = _typed_version(table, "aa", n=int,  # (evolution)
                            note=Annotated[str | None, Field(default=None)])
        b2 = _typed_version(table, "bb", n=str)  # (refused: long to string)
        with Session(table) as s:
            s.save(a2(id="2", n=2, note="x"))
        held = (_snapshots(catalog, "aa"), _snapshots(catalog, "bb"))
        with pytest.raises(LakeError, match=r"app\.bb: column 'n'"):
            export_with(a2, b2)
        assert (_snapshots(catalog, "aa"), _snapshots(catalog, "bb")) == held
        b3 = _typed_version(table, "bb", n=int)
        assert export_with(a2, b3).tables == {"app.aa": 2, "app.bb": 1}


def test_an_incremental_export_after_a_schema_change_evolves_the_table(
        backend: str | None, aws: None, tmp_path: Path) -> None:  # noqa: F811
    """A full export of v1, then the model changes (a field removed, one added, one made
    optional) and the window's incremental export applies with v2: evolution, the rows
    as the table now holds them."""
    pytest.importorskip("pyiceberg", reason="dynaorm[lake] is not installed")
    from moto import mock_aws
    from pyiceberg.catalog.sql import SqlCatalog

    from dynaorm.jobs import export, run_local
    from dynaorm.jobs.export_files import s3_client
    from dynaorm.testing import full_export, incremental_export, moto_backend

    (tmp_path / "warehouse").mkdir()
    catalog = SqlCatalog("lake", uri=f"sqlite:///{tmp_path}/catalog.db",
                         warehouse=f"file://{tmp_path}/warehouse")
    table = dynaorm.Table("dynaorm-red73-inc")
    with mock_aws(), moto_backend(), use_tables(table, endpoint_url=backend,
                                                 name_suffix=worker_suffix()) as tb:
        s3 = s3_client()
        s3.create_bucket(Bucket="exports")

        def lake(cls: type[Any], url: str, n: str) -> Any:
            return run_local(export(table, tmp_path / n, source=url, format="iceberg",
                                    catalog=catalog, namespace="app", entities=[cls]))
        v1 = _typed_version(table, "cc", n=int, old=str, lines=list[Line1])
        with Session(table) as s:
            s.save(v1(id="1", n=1, old="x", lines=[Line1(sku="a", qty=1)]))
        t0 = tb.scan_raw()
        lake(v1, full_export(s3, "exports", "f", t0, time="2026-01-01T00:00:00Z"), "f")
        v2 = _typed_version(table, "cc", n=int | None, lines=list[Line2],
                            note=Annotated[str, Field(default="-")])
        with Session(table) as s:
            s.save(v2(id="2", n=None, lines=[Line2(sku="b")], note="new"))
            s.delete(v2, id="1")
        inc = incremental_export(s3, "exports", "i", t0, tb.scan_raw(),
                                 since="2026-01-01T00:00:00Z", until="2026-01-01T01:00:00Z")
        assert lake(v2, inc, "i").tables == {"app.cc": 1}
        rows = catalog.load_table("app.cc").scan().to_arrow().to_pylist()
        assert [(r["id"], r["n"], r["note"], r["old"]) for r in rows] == [
            ("2", None, "new", None)]
        assert rows[0]["lines"] == [{"sku": "b", "qty": None}]


# -- MCP: nested values and misplaced cursors --------------------------------------------
nests = dynaorm.Table("dynaorm-red73-nests")


class Where(BaseModel):
    city: str
    zone: int = 0


class Parcel(dynaorm.Entity):
    """Nested models, in a list and a map, and a unique field."""

    class Meta:
        table = nests
        pk = "PARCEL#{parcel_id}"
        sk = "PARCEL"
        unique = ("code",)

    parcel_id: str
    code: str
    to: Where
    stops: list[Where] = Field(default_factory=list)
    by: dict[str, Where] = Field(default_factory=dict)


@pytest.mark.parametrize("item", [
    {"to": {"city": "Oslo", "evil": 1}},
    {"to": {"city": "Oslo", "zone": "7"}},
    {"to": {"city": "Oslo", "zone": 1.5}},
    {"to": {"city": 5}},
    {"stops": [{"city": "a"}, {"zone": 1}]},
    {"by": {"k": {"city": "a", "deep": {"x": [1, {"y": 2}]}}}},
    {"by": {"#": {"city": "a"}}},
    {"to": {"city": "Oslo", "zone": 10**40}},
])
def test_nested_values_are_stored_as_a_save_stores_them_or_refused_by_both(
        db: TestBackend, request: pytest.FixtureRequest, item: dict[str, Any]) -> None:
    with use_tables(nests, endpoint_url=db.endpoint_url, name_suffix=worker_suffix(),
                    wire=wire_of(request)):
        values = {"code": "c-ref", "to": {"city": "x"}, **item}
        try:
            with Session(nests) as s:
                s.save(Parcel(parcel_id="ref", **values))
            refused = False
        except (ValidationError, DynaormError):
            refused = True

        def stored(pid: str) -> Any:
            found = nests.db.send("GetItem", {"TableName": nests.name, "ConsistentRead": True,
                                              "Key": {"pk": {"S": f"PARCEL#{pid}"},
                                                      "sk": {"S": "PARCEL"}}}).get("Item")
            return None if found is None else {k: v for k, v in found.items()
                                               if k not in ("pk", "sk", "parcel_id", "code",
                                                            "_rev")}
        with Session(nests) as s:
            s.save(Parcel(parcel_id="upd", code="c-upd", to=Where(city="x")))
        base = stored("upd")
        srv = dynaorm.mcp.server(nests, writes=["Parcel"])
        saved, updated = call(srv, ("save_parcel", {"item": {"parcel_id": "new", **values,
                                                            "code": "c-new"}}),
                              ("update_parcel", {"parcel_id": "upd", "set": item}))
        if refused:
            for r in (saved, updated):
                said = failed(r)
                assert any(k in said for k in item) and "Traceback" not in said, said
            assert stored("new") is None and stored("upd") == base
            return
        # (a tool may refuse more than a save, by its schema: "7" for an integer)
        assert stored("new") == (None if saved.is_error else stored("ref")), text(saved)
        new = stored("upd")
        assert new is not None
        assert {k: new[k] for k in item} == (
            {k: base[k] for k in item} if updated.is_error
            else {k: stored("ref")[k] for k in item}), text(updated)


@pytest.mark.parametrize("secret", [None, "shared"])
def test_a_cursor_passed_to_another_tool_is_refused_as_a_cursor(
        kdb: TestBackend, secret: str | None, monkeypatch: pytest.MonkeyPatch) -> None:
    if secret is None:
        monkeypatch.delenv("DYNAORM_CURSOR_SECRET", raising=False)
    else:
        monkeypatch.setenv("DYNAORM_CURSOR_SECRET", secret)
    _memos("t1", 3)
    with Session(tenants) as s:
        for i in range(3):
            s.save(Customer(tenant_id="t1", customer_id=f"c{i}", name=f"n{i}",
                            email=f"{i}@x.io"))
    srv = dynaorm.mcp.server(tenants, writes=["Memo"])
    [page] = call(srv, ("query_memo", {"tenant_id": "t1", "limit": 2}))
    cursor = ok(page)["cursor"]
    results = call(srv, ("query_customer_on_gsi1", {"tenant_id": "t1", "cursor": cursor}),
                   ("query_customer_on_gsi2", {"region": "eu", "cursor": cursor}),
                   ("query_tag", {"tenant_id": "t1", "cursor": cursor}),
                   ("history_memo", {"tenant_id": "t1", "memo_id": "m0", "cursor": cursor}))
    for r in results:  # (a cursor is bound to its query)
        assert failed(r).startswith("InvalidCursorError"), text(r)


@pytest.mark.parametrize("tool", ["update_kit", "delete_kit"])
def test_an_unversioned_write_retried_after_a_second_writer_never_undoes_theirs(
        kdb: TestBackend, tool: str) -> None:
    """No If-Match to stop it: the retry of an update or delete whose answer was lost,
    after another writer changed (or re-created) the item in the window, replays and
    leaves their item alone."""
    with Session(kits) as s:
        s.save(Kit(kit_id="k1", count=1))
    srv = dynaorm.mcp.server(kits, writes=["Kit"])
    args: dict[str, Any] = {"kit_id": "k1", "idempotency_key": f"{tool}-{RUN}"}
    if tool == "update_kit":
        args["set"] = {"count": 2}

    def theirs() -> None:
        with Session(kits) as other:
            found = other.get(Kit, kit_id="k1", consistent=True) or Kit(kit_id="k1")
            found.count, found.label = 9, "theirs"
            other.save(found)

    with inject_faults(kits) as faults:
        faults.lose_answer("TransactWriteItems", after=theirs)
        call(srv, (tool, args))
    [again] = call(srv, (tool, args))
    assert ok(again)["replayed"] is True, text(again)
    stored = Session(kits).get(Kit, kit_id="k1", consistent=True)
    assert stored is not None and (stored.count, stored.label) == (9, "theirs")
