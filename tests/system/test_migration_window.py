"""A table in its migration window (``Meta.previous``) and literal-key claims where the
surfaces of 0.8 meet them. Written as the seams of release 0.8 that no earlier red team
crossed (``test_tenant_isolation.py`` and the red-team modules covered each surface alone
and the pairs they name), attacked by someone who wrote none of them. Each pair is two
of 0.8's new surfaces where they meet:

- previous layouts as a rule (``Meta.previous``) x inference: a table in its migration
  window, with receipts and unique guards beside, inferred and checked;
- previous layouts x the Iceberg lake with a schema change between runs;
- previous layouts x the MCP tools of a tenant x ``dynaorm iam --scope`` (every request a
  scoped server's tools send is one the tenant's policy allows, and another tenant's
  does not);
- literal-key claims x receipts (a keyed commit at a claimed key);
- literal-key claims x the lake and x inference.

Each test states what must never happen; what does not hold is a strict xfail naming the
defect. Nothing here depends on the engine: moto only (the engine-dependent seams are in
``integration/test_migrations.py``)."""

from __future__ import annotations

import sys
import types
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from dynaorm import GSI, Entity, Previous, ScopeError, Session, Table, Unique
from dynaorm.formats import iam
from dynaorm.protocol.steps import call
from dynaorm.schema.rules.receipts import RECEIPT_TYPE
from dynaorm.testing import moto_backend, use_tables, worker_suffix
from tests.support.examples import examples
from tests.support.iam_eval import allowed, checks_of
from tests.support.recording import recording

SCOPE = "tenant_id"
#: no shrinking: each example builds tables (a failure prints its example as drawn)
QUICK = (Phase.explicit, Phase.reuse, Phase.generate)


@pytest.fixture(scope="module")
def moto() -> Iterator[None]:
    with moto_backend():
        yield


def _defined(code: str) -> Table:
    """The table the printed code of an inferred model defines (run as a module)."""
    module = types.ModuleType(f"seams08b_inferred_{uuid.uuid4().hex}")
    sys.modules[module.__name__] = module
    exec(compile(code, "<inferred>", "exec"), module.__dict__)
    return next(v for v in vars(module).values() if isinstance(v, Table))


def _copy(source: Table, target: Table, items: list[dict[str, Any]]) -> None:
    for item in items:
        target.db.driver.run(call("PutItem", {"TableName": target.name, "Item": item}))


# -- previous layout x inference x receipts x unique guards ---------------------------------
window = Table("seams08b_window")


class Member(Entity):
    """Scoped, in a migration window (the old layout joins by ``.``)."""

    class Meta:
        table = window
        pk = "M#{tenant_id}"
        sk = "U#{uid}"
        type_name = "Member"
        previous = Previous(pk="OLD.{tenant_id}.{uid}", sk="M", type_name="OldMember")

    tenant_id: str
    uid: str
    email: str
    level: int = 0


def _plant(table: Table, tenant: str, uid: str, email: str) -> None:
    """A member of the old layout, as 0.7's code stored it."""
    table.db.driver.run(call("PutItem", {"TableName": table.name, "Item": {
        "pk": {"S": f"OLD.{tenant}.{uid}"}, "sk": {"S": "M"}, "_type": {"S": "OldMember"},
        "tenant_id": {"S": tenant}, "uid": {"S": uid}, "email": {"S": email},
        "level": {"N": "1"}}}))


#: ids of the grammar's other separators (``|`` in an id: the strict xfail below)
_id = st.text(st.sampled_from("ab-_:"), min_size=1, max_size=4)


@settings(max_examples=examples(6), deadline=None, suppress_health_check=list(HealthCheck),
          phases=QUICK)
@given(rows=st.lists(st.tuples(_id, _id, st.booleans()), min_size=1, max_size=5,
                     unique_by=lambda r: (r[0], r[1])))
def test_a_table_in_its_migration_window_is_inferred_and_claimed(
        moto: None, rows: list[tuple[str, str, bool]]) -> None:
    """Members of tenants (ids with ``-``, ``_``, ``:``), some still in the old layout,
    some written by keyed commits (their receipts in the table): inferred,
    the printed code defines; a receipt is never an entity of the inferred model; every
    item is placed or named unplaced; each placed item read through the inferred model
    renders back its own key with the values stored (and none it did not place);
    ``dynaorm check`` with that model reports no problem and claims every item it
    placed."""
    from dynaorm.client.infer import infer_code
    from dynaorm.jobs import check, run_local

    copied = Table(f"seams08b_copied_{uuid.uuid4().hex[:8]}")
    with use_tables(window, copied, name_suffix=worker_suffix()) as tb:
        for n, (tenant, uid, old) in enumerate(rows):
            if old:
                _plant(window, tenant, uid, f"{uid}@x")
            else:
                with Session(window, scope={SCOPE: tenant}) as s:
                    s.save(Member(tenant_id=tenant, uid=uid, email=f"{uid}@x"))
                    s.commit(idempotency_key=f"k{n}")
        items = tb.scan_raw(window)
        _copy(window, copied, items)
        receipts = [i for i in items if i.get("_type", {}).get("S") == RECEIPT_TYPE]
        assert len(receipts) == sum(not old for _, _, old in rows)
        code, model = infer_code(copied.name, report=None)
        inferred = _defined(code)
        inferred.connect(None)
        assert RECEIPT_TYPE not in {e.__dynaorm_spec__.type_name
                                    for e in inferred.entities.values()}, code
        report = model["inferred"]
        unplaced = {(k["pk"], k["sk"]) for k in report["unplaced"]["keys"]}
        assert report["unplaced"]["count"] == len(unplaced)  # (few rows: all named)
        # (a receipt is dynaorm's own row: counted apart, never placed as an entity's)
        assert report["own"] == len(receipts), report
        assert report["placed"] == len(items) - len(unplaced) - len(receipts), report
        classes = list(inferred.entities.values())
        with Session(inferred) as s:
            objs = s.scan(*classes).all()
        stored = {(i["pk"]["S"], i["sk"]["S"]): i for i in items
                  if i.get("_type", {}).get("S") != RECEIPT_TYPE}
        seen = {}
        for obj in objs:
            spec = type(obj).__dynaorm_spec__
            seen[(spec.pk.render(dict(obj)), spec.sk.render(dict(obj)))] = obj
        assert set(seen) == set(stored) - unplaced, (code, sorted(seen), sorted(stored))
        for key, obj in seen.items():
            for name in ("tenant_id", "uid", "email"):
                assert getattr(obj, name) == stored[key][name]["S"], (key, name)
        result = run_local(check(inferred))
        assert result.problems == [], (code, result)
        assert sum(result.unclaimed.values()) == len(unplaced), (code, result.unclaimed)


def test_an_item_inference_left_unplaced_never_breaks_a_scan_of_its_model(
        moto: None) -> None:
    """Old-layout members ``OLD._|._b``, ``OLD.b_aa.||ba``, ``OLD.a:.__`` (ids the
    grammar takes: ``|`` is no separator of theirs), inferred: a scan of every entity of
    the printed model answers (the items it placed; never an error for one it did not)."""
    from dynaorm.client.infer import infer_code

    copied = Table(f"seams08b_bar_{uuid.uuid4().hex[:8]}")
    with use_tables(window, copied, name_suffix=worker_suffix()) as tb:
        for tenant, uid in (("_|", "_b"), ("b_aa", "||ba"), ("a:", "__")):
            _plant(window, tenant, uid, f"{uid}@x")
        _copy(window, copied, tb.scan_raw(window))
        code, model = infer_code(copied.name, report=None)
        inferred = _defined(code)
        inferred.connect(None)
        with Session(inferred) as s:
            objs = s.scan(*inferred.entities.values()).all()
        assert len(objs) == model["inferred"]["placed"], (code, model["inferred"])


# -- inference x scope: a unique rule per tenant ---------------------------------------------
seats = Table("seams08b_seats")


class Seat(Entity):
    """Unique per tenant: two tenants may hold one email (the guard's key renders the
    tenant: ``<tenant_id>#email#<email>``)."""

    class Meta:
        table = seats
        pk = "S#{tenant_id}"
        sk = "U#{uid}"
        type_name = "Seat"
        unique = (Unique("email", scope="{tenant_id}"),)

    tenant_id: str
    uid: str
    email: str


def test_an_inferred_per_tenant_unique_rule_keeps_tenants_apart(moto: None) -> None:
    """Seats of two tenants, each unique per tenant, inferred: ``dynaorm check`` with the
    inferred model reports no problem, and with it tenant ``beta`` can take an email
    tenant ``acme`` holds (while ``acme`` cannot take it twice)."""
    from dynaorm import UniqueConstraintError
    from dynaorm.client.infer import infer_code
    from dynaorm.jobs import check, run_local

    copied = Table(f"seams08b_seats_{uuid.uuid4().hex[:8]}")
    with use_tables(seats, copied, name_suffix=worker_suffix()) as tb:
        with Session(seats) as s:
            s.save(Seat(tenant_id="acme", uid="u1", email="a@x"))
            s.save(Seat(tenant_id="beta", uid="u2", email="b@x"))
        _copy(seats, copied, tb.scan_raw(seats))
        code, _ = infer_code(copied.name, report=None)
        inferred = _defined(code)
        inferred.connect(None)
        (cls,) = inferred.entities.values()
        with Session(inferred) as s:
            s.save(cls(tenant_id="acme", uid="u9", email="a@x"))
            with pytest.raises(UniqueConstraintError):
                s.commit()
        result = run_local(check(inferred))
        assert result.problems == [], (code, result.problems)
        with Session(inferred) as s:  # (beta may hold acme's email)
            s.save(cls(tenant_id="beta", uid="u3", email="a@x"))


class NumberedSeat(Entity):
    """Unique per tenant, the tenant a number written ``{n:05d}`` in the key and the
    guard's scope (``S#00007#email#<email>``)."""

    class Meta:
        table = seats
        pk = "S#{n:05d}"
        sk = "U#{uid}"
        type_name = "NumberedSeat"
        unique = (Unique("email", scope="S#{n:05d}"),)

    n: int
    uid: str
    email: str


def test_an_inferred_rule_scoped_by_a_formatted_key_renders_the_stored_keys(
        moto: None) -> None:
    """Seats of two numbered tenants (a zero-padded key field), inferred: the model
    rebuilds one unique rule scoped by the key's leading part, and its keys and guard
    keys rendered from what it reads equal the stored ones; ``dynaorm check`` reports no
    problem; a tenant cannot take its email twice, another tenant may."""
    from dynaorm import UniqueConstraintError
    from dynaorm.client.infer import infer_code
    from dynaorm.jobs import check, run_local

    copied = Table(f"seams08b_nseats_{uuid.uuid4().hex[:8]}")
    with use_tables(seats, copied, name_suffix=worker_suffix()) as tb:
        with Session(seats) as s:
            s.save(NumberedSeat(n=7, uid="u1", email="a@x"))
            s.save(NumberedSeat(n=42, uid="u2", email="b@x"))
        stored = tb.scan_raw(seats)
        _copy(seats, copied, stored)
        code, _ = infer_code(copied.name, report=None)
        inferred = _defined(code)
        inferred.connect(None)
        (cls,) = inferred.entities.values()
        spec = cls.__dynaorm_spec__
        ((rule,),) = [spec.uniques]
        keys = {(i[seats.pk]["S"], i[seats.sk]["S"]) for i in stored}
        with Session(inferred) as s:
            rows = s.scan(cls).all()
        rendered = {tuple(spec.primary_key(r.__dict__).values()) for r in rows}
        guards = {(g, g) for r in rows if (g := rule.guard_key(r.__dict__, spec.name))}
        assert rendered | guards == keys, code
        assert run_local(check(inferred)).problems == [], code
        with Session(inferred) as s:
            s.save(cls(**{**rows[0].__dict__, "uid": "u9"}))
            with pytest.raises(UniqueConstraintError):
                s.commit()
        other = next(r for r in rows if r != rows[0])
        with Session(inferred) as s:  # (another tenant may hold the email)
            s.save(cls(**{**other.__dict__, "uid": "u8", "email": rows[0].email}))


# -- previous layout x the lake, a schema change between runs -------------------------------
def _member_v(table: Table, **extra: Any) -> type[Any]:
    """``Member`` of ``table`` (its old layout too), with ``extra`` fields (name: (type,
    default)): the model of one run of the lake."""
    meta = type("Meta", (), {
        "table": table, "pk": "M#{tenant_id}", "sk": "U#{uid}", "type_name": "Member",
        "previous": Previous(pk="OLD.{tenant_id}.{uid}", sk="M", type_name="OldMember"),
        "__qualname__": "LakeMember.Meta", "__module__": __name__})
    notes = {"tenant_id": str, "uid": str, "email": str, "level": int,
             **{k: v[0] for k, v in extra.items()}}
    defaults = {"level": 0, **{k: v[1] for k, v in extra.items()}}
    return type("LakeMember", (Entity,), {"__annotations__": notes, "Meta": meta,
                                          "__module__": __name__,
                                          "__qualname__": "LakeMember", **defaults})


def test_the_lake_of_a_table_in_its_migration_window_holds_each_entity_once(
        moto: None, tmp_path: Path) -> None:
    """Run 1 exports members in both layouts (and a keyed commit's receipt); between the
    runs some are moved, one deleted in its old layout, and the model gains a field (a
    schema change); run 2 evolves the lake. Never: an old-layout item exported under
    another name or left unclaimed, a member held twice (old and new layout), a receipt
    exported, a deleted member kept, the lake's schema not evolved."""
    pytest.importorskip("pyiceberg", reason="dynaorm[lake] is not installed")
    from pyiceberg.catalog.sql import SqlCatalog

    from dynaorm.jobs import export, run_local

    lake = Table(f"seams08b_lake_{uuid.uuid4().hex[:6]}")
    v1 = _member_v(lake)
    (tmp_path / "wh").mkdir()
    catalog = SqlCatalog("lake", uri=f"sqlite:///{tmp_path}/c.db",
                         warehouse=f"file://{tmp_path}/wh")
    with use_tables(lake, name_suffix=worker_suffix()):
        for tenant, uid in (("t-1", "a"), ("t-1", "b"), ("t_2", "a")):
            _plant(lake, tenant, uid, f"{tenant}.{uid}@x")
        with Session(lake, scope={SCOPE: "t_2"}) as s:
            s.save(v1(tenant_id="t_2", uid="n", email="new@x"))
            s.commit(idempotency_key="lake-k")

        def members() -> list[tuple[Any, ...]]:
            t = catalog.load_table(("app", "Member"))
            rows = t.scan().to_arrow().to_pylist()
            return sorted((r["tenant_id"], r["uid"], r["email"], r.get("tier")) for r in rows)

        first = run_local(export(lake, tmp_path / "1", format="iceberg", catalog=catalog,
                                 namespace="app"))
        assert first.unclaimed == {} and first.failed == 0, first
        assert {n for _, n in catalog.list_tables("app")} == {"Member"}
        assert members() == [("t-1", "a", "t-1.a@x", None), ("t-1", "b", "t-1.b@x", None),
                             ("t_2", "a", "t_2.a@x", None), ("t_2", "n", "new@x", None)]
        v2 = _member_v(lake, tier=(str, "free"))
        with Session(lake, scope={SCOPE: "t-1"}) as s:
            moved = s.get(v2, tenant_id="t-1", uid="a")
            assert moved is not None
            moved.email = "moved@x"
            s.save(moved)
            s.delete(v2, tenant_id="t-1", uid="b")
        second = run_local(export(lake, tmp_path / "2", format="iceberg", catalog=catalog,
                                  namespace="app"))
        assert second.unclaimed == {} and second.failed == 0, second
        assert "tier" in str(catalog.load_table(("app", "Member")).schema())
        assert members() == [("t-1", "a", "moved@x", "free"), ("t_2", "a", "t_2.a@x", "free"),
                             ("t_2", "n", "new@x", "free")]


# -- previous layout x MCP tools of a tenant x dynaorm iam --scope ---------------------------
guarded = Table("seams08b_iam", indexes=[GSI("gsi1", pk="gsi1pk", sk="gsi1sk")])


class Badge(Entity):
    """Scoped, in a migration window, queried by an index of the tenant."""

    class Meta:
        table = guarded
        pk = "B#{tenant_id}"
        sk = "U#{uid}"
        type_name = "Badge"
        previous = Previous(pk="OLD.{tenant_id}.{uid}", sk="B", type_name="OldBadge")
        indexes = {"gsi1": ("TEN#{tenant_id}", "L#{level}")}

    tenant_id: str
    uid: str
    email: str = ""
    level: int = 0


_tenant = st.text(st.sampled_from("t1-_:"), min_size=1, max_size=4)
_uid = st.sampled_from(["a", "b", "a-b", "a_b", "c:d"])
_tool_calls = st.lists(st.tuples(
    st.sampled_from(["get", "save", "update", "delete", "query", "query_on_gsi1"]), _uid,
    st.sampled_from([None, "K1", "K2"])), min_size=1, max_size=8)


@settings(max_examples=examples(10), deadline=None, suppress_health_check=list(HealthCheck),
          phases=QUICK)
@given(a=_tenant, b=_tenant, calls=_tool_calls)
def test_every_request_a_tenants_tools_send_is_one_its_policy_allows(
        moto: None, a: str, b: str, calls: list[Any]) -> None:
    """Badges of tenants ``a`` and ``b`` (ids with ``-``, ``_``, ``:``, one a prefix of the
    other), some still in their old layout; ``a``'s MCP tools (get, save, update, delete,
    keyed or not, queries of the table and the index): every request they send is allowed
    by the policies ``dynaorm iam --role write --scope tenant_id`` prints to a principal
    tagged ``a``, and none naming a key is allowed to one tagged ``b`` (the old layout's
    keys, the receipts' and the index's included)."""
    from dynaorm.mcp.server import prepare
    from dynaorm.mcp.tools import check_arguments, run

    if a == b:
        return
    tools, _ = prepare(guarded, writes=[Badge], scope={SCOPE: a})
    scope = {SCOPE: a}
    with use_tables(guarded, name_suffix=worker_suffix() + uuid.uuid4().hex[:6]):
        policy, uncovered = iam.to_format(guarded.model(), "write", scope=SCOPE)
        assert not uncovered, uncovered
        for tenant in (a, b):
            guarded.db.driver.run(call("PutItem", {"TableName": guarded.name, "Item": {
                "pk": {"S": f"OLD.{tenant}.a"}, "sk": {"S": "B"}, "_type": {"S": "OldBadge"},
                SCOPE: {"S": tenant}, "uid": {"S": "a"}, "level": {"N": "1"}}}))
            with Session(guarded) as s:
                s.save(Badge(tenant_id=tenant, uid="b", level=2))
        recorder = recording(guarded)
        for kind, uid, key in calls:
            name = f"{kind.split('_on_')[0]}_badge" + (
                "_on_gsi1" if kind.endswith("gsi1") else "")
            args: dict[str, Any] = (
                {"item": {"uid": uid, "email": "e", "level": 3}} if kind == "save"
                else {"uid": uid, "set": {"email": "f"}} if kind == "update"
                else {} if kind.startswith("query") else {"uid": uid})
            if key is not None and kind in ("save", "update", "delete"):
                args["idempotency_key"] = key
            try:
                check_arguments(tools[name], args)
                run(tools[name], args, Session(guarded, scope=scope), scope, None, tools)
            except Exception as exc:  # (a refusal; the requests sent are checked below)
                assert type(exc).__name__ != "AssertionError", exc
        keys = {None: guarded.pk, "gsi1": "gsi1pk"}
        checks = [c for op, req in recorder.sent for c in checks_of(op, req, keys)]
    for check in checks:
        assert allowed(policy, check, {SCOPE: a}), (check, a)
        if check.leading is not None:
            assert not allowed(policy, check, {SCOPE: b}), (check, b)


def test_a_scoped_write_role_may_save_a_new_entity_of_a_migration_window(
        moto: None) -> None:
    """A scoped session of ``t1`` saves a new badge (its old layout's key checked free in
    the same transaction): every item of the transaction is allowed to a principal tagged
    ``t1`` by the write role's policy."""
    with use_tables(guarded, name_suffix=worker_suffix()):
        policy, _ = iam.to_format(guarded.model(), "write", scope=SCOPE)
        recorder = recording(guarded)
        with Session(guarded, scope={SCOPE: "t1"}) as s:
            s.save(Badge(tenant_id="t1", uid="new"))
        keys = {None: guarded.pk, "gsi1": "gsi1pk"}
        checks = [c for op, req in recorder.sent for c in checks_of(op, req, keys)]
    assert "ConditionCheckItem" in {c.action for c in checks}
    for check in checks:
        assert allowed(policy, check, {SCOPE: "t1"}), check


# -- literal-key claims x receipts x the lake ------------------------------------------------
def _meta(owner: str, **options: Any) -> type:
    return type("Meta", (), {**options, "__qualname__": f"{owner}.Meta",
                             "__module__": __name__})


def _claims(label: str) -> tuple[Table, type[Any], type[Any]]:
    """A table without a type attribute: ``Profile`` (``USER#{a}``/``PROFILE``) beside
    ``Admin`` (``USER#admin``/``PROFILE``, whose literal key wins)."""
    home = Table(f"seams08b-lit-{label}-{uuid.uuid4().hex[:6]}", pk="PK", sk="SK",
                 type_attribute=None)
    name = f"Seams08Profile{label}"
    profile = type(name, (Entity,), {
        "__annotations__": {"a": str, "bio": str}, "bio": "", "__module__": __name__,
        "__qualname__": name,
        "Meta": _meta(name, table=home, pk="USER#{a}", sk="PROFILE")})
    name = f"Seams08Admin{label}"
    admin = type(name, (Entity,), {
        "__annotations__": {"bio": str}, "bio": "", "__module__": __name__,
        "__qualname__": name,
        "Meta": _meta(name, table=home, pk="USER#admin", sk="PROFILE")})
    return home, profile, admin


def _rows_of(table: Table) -> list[str]:
    out = []
    for i in table.db.driver.run(call("Scan", {"TableName": table.name})).get("Items", []):
        out.append(repr(sorted((k, repr(v)) for k, v in i.items())))
    return sorted(out)


def test_a_keyed_commit_at_a_claimed_key_is_refused_and_keeps_the_key_free(
        moto: None) -> None:
    """A keyed commit saving ``Profile(a="admin")`` (the admin's literal key) beside
    another profile: refused before sending, the table as it was, no receipt; the same
    key then commits another call (it was never used: not a mismatch, not a replay), and
    that call's retry replays."""
    from dynaorm import KeyTemplateError

    home, profile, admin = _claims("keyed")
    with use_tables(home, name_suffix=worker_suffix()):
        with Session(home) as s:
            s.save(admin(bio="root"))
        held = _rows_of(home)
        s = Session(home)
        s.save(profile(a="ada"))
        with pytest.raises(KeyTemplateError, match="literal key"):
            s.save(profile(a="admin", bio="takeover"))
            s.commit(idempotency_key="claimed")
        with pytest.raises(KeyTemplateError, match="literal key"):
            s.update(profile, a="admin").set(bio="takeover")
            s.commit(idempotency_key="claimed")
        assert _rows_of(home) == held
        for attempt in range(2):
            s = Session(home)
            s.save(profile(a="bob"))
            assert s.commit(idempotency_key="claimed").replayed is bool(attempt)
        assert Session(home).get(admin) == admin(bio="root")
        assert Session(home).get(profile, a="ada") is None


def test_the_lake_of_a_table_of_literal_claims_exports_each_row_as_its_entity(
        moto: None, tmp_path: Path) -> None:
    """A table without a type attribute: the admin's literal row beside profiles (one
    whose key only differs from it by a suffix) and a keyed commit's receipt. Two Iceberg
    runs (the profile gains a field between them): the admin's row is the admin's table's
    only row, never a profile; the receipt is in neither; nothing unclaimed."""
    pytest.importorskip("pyiceberg", reason="dynaorm[lake] is not installed")
    from pyiceberg.catalog.sql import SqlCatalog

    from dynaorm.jobs import export, run_local

    home, profile, admin = _claims("lake")
    (tmp_path / "wh").mkdir()
    catalog = SqlCatalog("lake", uri=f"sqlite:///{tmp_path}/c.db",
                         warehouse=f"file://{tmp_path}/wh")
    with use_tables(home, name_suffix=worker_suffix()):
        with Session(home) as s:
            s.save(admin(bio="root"))
            s.save(profile(a="admins", bio="p1"))
            s.save(profile(a="ada", bio="p2"))
            s.commit(idempotency_key="lake-lit")

        def rows() -> dict[str, list[Any]]:
            return {n: sorted(tuple(sorted(r.items())) for r in catalog.load_table(
                ("app", n)).scan().to_arrow().to_pylist()) for _, n in catalog.list_tables("app")}

        first = run_local(export(home, tmp_path / "1", format="iceberg", catalog=catalog,
                                 namespace="app"))
        assert first.unclaimed == {} and first.failed == 0, first
        got = rows()
        assert got[admin.__name__] == [(("bio", "root"),)], got
        assert sorted(r[0][1] for r in got[profile.__name__]) == ["ada", "admins"], got
        assert set(got) == {admin.__name__, profile.__name__}, got
        profile2 = type(profile.__name__, (Entity,), {
            "__annotations__": {"a": str, "bio": str, "tier": str}, "bio": "",
            "tier": "free", "__module__": __name__, "__qualname__": profile.__name__,
            "Meta": _meta(profile.__name__, table=home, pk="USER#{a}", sk="PROFILE")})
        with Session(home) as s:
            s.save(profile2(a="bob", bio="p3"))
        second = run_local(export(home, tmp_path / "2", format="iceberg", catalog=catalog,
                                  namespace="app"))
        assert second.unclaimed == {} and second.failed == 0, second
        got = rows()
        assert got[admin.__name__] == [(("bio", "root"),)], got
        assert sorted(dict(r)["a"] for r in got[profile.__name__]) == ["ada", "admins", "bob"]


# -- inference x the MCP tools of a tenant ----------------------------------------------------
def test_the_mcp_tools_of_an_inferred_model_keep_to_their_tenant(moto: None) -> None:
    """Badges of tenants ``t``, ``t-1`` and ``t_1`` (one a prefix of the others), inferred;
    an MCP server of the inferred model scoped to ``t``: its get answers ``t``'s badge
    and never another's (whatever id names it), its query lists ``t``'s only, a save
    naming another tenant is refused, and nothing of another tenant changes."""
    from dynaorm.client.infer import infer_code
    from dynaorm.mcp.server import prepare
    from dynaorm.mcp.tools import check_arguments, run

    copied = Table(f"seams08b_mcp_{uuid.uuid4().hex[:8]}",
                   indexes=[GSI("gsi1", pk="gsi1pk", sk="gsi1sk")])
    with use_tables(guarded, copied, name_suffix=worker_suffix()) as tb:
        with Session(guarded) as s:
            for tenant in ("t", "t-1", "t_1"):
                for uid in ("a", "1", "a-b"):
                    s.save(Badge(tenant_id=tenant, uid=uid, email=f"{tenant}/{uid}"))
        _copy(guarded, copied, tb.scan_raw(guarded))
        code, model = infer_code(copied.name, report=None)
        assert model["inferred"]["unplaced"]["count"] == 0, model["inferred"]
        inferred = _defined(code)
        inferred.connect(None)
        (cls,) = inferred.entities.values()
        before = _rows_of(copied)
        scope = {SCOPE: "t"}
        tools, _ = prepare(inferred, writes=[cls], scope=scope)
        name = cls.__name__.lower()

        def tool(kind: str, **args: Any) -> Any:
            check_arguments(tools[f"{kind}_{name}"], args)
            return run(tools[f"{kind}_{name}"], args, Session(inferred, scope=scope), scope,
                       None, tools)

        for uid in ("a", "1", "a-b", "1-a", "_1-a"):
            got = tool("get", uid=uid)["item"]
            assert got is None or (got[SCOPE], got["email"]) == ("t", f"t/{uid}"), got
        listed = tool("query")["items"]
        assert sorted(i["email"] for i in listed) == ["t/1", "t/a", "t/a-b"], listed
        assert f"query_{name}_on_gsi1" in tools, sorted(tools)  # (the index inferred)
        listed = run(tools[f"query_{name}_on_gsi1"], {}, Session(inferred, scope=scope),
                     scope, None, tools)["items"]
        assert sorted(i["email"] for i in listed) == ["t/1", "t/a", "t/a-b"], listed
        for other in ("t-1", "t_1"):
            with pytest.raises(ScopeError, match="outside"):
                tool("save", item={"uid": "a", "email": "stolen", "level": 0, SCOPE: other})
        assert _rows_of(copied) == before


def test_iam_names_a_per_tenant_unique_guard_whose_key_starts_with_the_tenant(
        moto: None) -> None:
    """``Seat``'s guard keys start with the tenant (``{tenant_id}#email#...``): the pattern
    ``${tag}#*`` of a principal tagged ``S`` would match tenant ``t``'s seat row ``S#t``.
    ``dynaorm iam --scope`` must name it (the command exits 2), never print it silently."""
    from tests.support.iam_eval import string_like

    policy, uncovered = iam.to_format(seats.model(), "write", scope=SCOPE)
    patterns = policy["Statement"][0]["Condition"]["ForAllValues:StringLike"][
        "dynamodb:LeadingKeys"]
    assert any(string_like(p, "S#t", {SCOPE: "S"}) for p in patterns)  # (why it is named)
    assert any("Seat unique guard" in u and "S#" in u for u in uncovered), uncovered
