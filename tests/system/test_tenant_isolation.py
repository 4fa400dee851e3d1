"""One tenant never reaches another's rows, whatever surface it goes through. Written as
the seams of release 0.8 (contract 23), attacked pair by pair by someone who wrote none
of them: the key grammar and tenant scope (A), receipts per tenant (B), LangGraph's saver
and store in the application's table (C), inference of a table you already have (D),
user rules' and LangGraph's rows known to every reader (F), the lake (G), IAM from the
model. Each test states what must never happen where two surfaces meet.

What does not depend on the engine runs on moto only (``moto_backend``), to keep CI's time;
receipts (conditional transactions) run on every engine through ``backend``."""

from __future__ import annotations

import sys
import types
import uuid
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from dynaorm import DynaormError, Entity, ScopeError, Session, Table
from dynaorm.formats import iam
from dynaorm.protocol.steps import call
from dynaorm.testing import moto_backend, use_tables, worker_suffix
from tests.support.iam_eval import string_like

lg = pytest.importorskip("dynaorm.langgraph", reason="dynaorm[langgraph] is not installed")
from langgraph.checkpoint.base import empty_checkpoint  # noqa: E402

from tests.support.examples import examples  # noqa: E402

Saver, Store = lg.Saver, lg.Store
SCOPE = "tenant_id"


def _conf(thread: str) -> Any:
    return {"configurable": {"thread_id": thread, "checkpoint_ns": ""}}


def _checkpoint(cid: str, value: Any) -> Any:
    cp = empty_checkpoint()
    cp["id"] = cid
    cp["channel_values"], cp["channel_versions"] = {"m": value}, {"m": 1}
    return cp


@pytest.fixture(scope="module")
def moto() -> Iterator[None]:
    with moto_backend():
        yield


# -- C x A: a scoped saver and store beside a scoped model, hostile tenant ids ---------------
hashed = Table("seams08_hashed", ttl="expires_at")


class Note(Entity):
    class Meta:
        table = hashed
        pk = "T#{tenant_id}#{note_id}"
        sk = "NOTE"

    tenant_id: str
    note_id: str


# tenant ids the LangGraph rows take (no '#'): prefixes of one another, IAM wildcards,
# the separators of other grammars
_tenant = st.text(st.sampled_from("ac-|._*%$?:"), min_size=1, max_size=5)


@settings(max_examples=examples(12), deadline=None, suppress_health_check=list(HealthCheck))
@given(a=_tenant, b=_tenant)
def test_a_scoped_saver_or_store_never_reaches_another_tenant(moto: None, a: str,
                                                              b: str) -> None:
    """Tenant ``b``'s saver lists, reads, copies from and deletes none of tenant ``a``'s
    threads; its store gets, searches and lists none of ``a``'s namespaces, whatever the
    two ids (``acme`` and ``acme-corp``, ``a|`` and ``a``, wildcards)."""
    if a == b:
        return
    with use_tables(hashed, name_suffix=worker_suffix() + uuid.uuid4().hex[:6]) as tb:
        sa, sb = Saver(hashed, scope={SCOPE: a}), Saver(hashed, scope={SCOPE: b})
        ma, mb = Store(hashed, scope={SCOPE: a}), Store(hashed, scope={SCOPE: b})
        sa.put(_conf("shared"), _checkpoint("c1", "of-a"), {"step": 1}, {})
        sa.put(_conf("own-a"), _checkpoint("c1", "of-a"), {"step": 1}, {})
        ma.put(("users", "u1"), "prefs", {"who": "a"})
        ma.put(("docs",), "k", {"who": "a"})
        with Session(hashed) as s:
            s.save(Note(tenant_id=a, note_id="n"))
        before = sorted(repr(sorted(i.items())) for i in tb.scan_raw())

        assert list(sb.list(None)) == []
        assert list(sb.list(_conf("shared"))) == []
        assert sb.get_tuple(_conf("shared")) is None
        assert mb.get(("users", "u1"), "prefs") is None
        assert mb.search(("users",)) == [] and mb.search(()) == []
        assert mb.list_namespaces() == []
        sb.delete_thread("shared")
        sb.copy_thread("shared", "stolen")
        sb.prune(["shared"], strategy="delete")
        sb.delete_for_runs(["r1"])
        mb.delete(("users", "u1"), "prefs")
        assert sorted(repr(sorted(i.items())) for i in tb.scan_raw()) == before
        got = sa.get_tuple(_conf("shared"))
        assert got is not None and got.checkpoint["channel_values"] == {"m": "of-a"}
        assert [i.value for i in ma.search(("users",))] == [{"who": "a"}]


# -- C x A x IAM: a tenant one entity of the table refuses is no tenant of the table --------
dashed = Table("seams08_dashed", ttl="expires_at")


class Doc(Entity):
    class Meta:
        table = dashed
        pk = "T-{tenant_id}-{doc_id}"
        sk = "DOC"

    tenant_id: str
    doc_id: str
    title: str = ""


class Memo(Entity):
    class Meta:
        table = dashed
        pk = "M#{tenant_id}#{memo_id}"
        sk = "MEMO"

    tenant_id: str
    memo_id: str


Saver(dashed, scope={SCOPE: "-"})  # (the model declares its LangGraph rows: IAM sees them)
Store(dashed, scope={SCOPE: "-"})


def _accepted(tenant: str) -> bool:
    """Whether some surface of ``dashed`` takes ``tenant`` as a scope and writes under it
    (a scoped session saving a Memo, a scoped saver or store putting)."""
    try:
        with Session(dashed, scope={SCOPE: tenant}) as s:
            s.save(Memo(tenant_id=tenant, memo_id="m"))
        return True
    except ScopeError:
        pass
    try:
        Saver(dashed, scope={SCOPE: tenant}).put(_conf("t"), _checkpoint("c1", 1), {}, {})
        return True
    except ScopeError:
        pass
    try:
        Store(dashed, scope={SCOPE: tenant}).put(("n",), "k", {"v": 1})
        return True
    except ScopeError:
        return False


def test_a_tenant_one_entity_refuses_is_refused_by_every_scope_of_the_table(
        moto: None) -> None:
    """``T-{tenant_id}-{doc_id}`` refuses ``acme-corp`` (its ``-``): so do a scoped
    session of another entity of the table and a LangGraph saver and store scoped to it,
    before anything is sent. They took it: a principal tagged ``acme-corp`` (a working
    tenant of the saver) was then granted ``T-acme-corp-*`` by ``dynaorm iam --scope``,
    which holds tenant ``acme``'s document ``corp-1`` (operations guide: "``acme-corp`` is
    refused on every write path")."""
    with use_tables(dashed, name_suffix=worker_suffix()) as tb:
        with Session(dashed) as s:
            s.save(Doc(tenant_id="acme", doc_id="corp-1"))
        def memo() -> None:
            with Session(dashed, scope={SCOPE: "acme-corp"}) as s:
                s.save(Memo(tenant_id="acme-corp", memo_id="m"))
        for surface in (
                memo,
                lambda: Saver(dashed, scope={SCOPE: "acme-corp"}).put(
                    _conf("t"), _checkpoint("c1", 1), {}, {}),
                lambda: Store(dashed, scope={SCOPE: "acme-corp"}).put(("n",), "k", {})):
            with pytest.raises(ScopeError, match="'-'"):
                surface()
        assert [i["pk"] for i in tb.scan_raw()] == [{"S": "T-acme-corp-1"}]


@settings(max_examples=examples(25), deadline=None, suppress_health_check=list(HealthCheck))
@example(tenants=["acme", "acme-corp"], docs=["corp-1"])
@given(tenants=st.lists(st.text(st.sampled_from("ac-_.:"), min_size=1, max_size=6),
                        min_size=2, max_size=4, unique=True),
       docs=st.lists(st.text(st.sampled_from("c-_"), min_size=1, max_size=4), min_size=1,
                     max_size=3))
def test_iam_never_grants_a_tenant_of_the_table_another_tenants_key(
        moto: None, tenants: list[str], docs: list[str]) -> None:
    """Over tenant ids and document ids: a principal tagged with a tenant id that some
    surface of the table accepts (a scoped session, saver or store) is granted by
    ``dynaorm iam --scope`` no key another tenant's Doc, Memo or LangGraph row renders."""
    policy, uncovered = iam.to_format(dashed.model(), "write", scope=SCOPE)
    assert not uncovered, uncovered
    (table,) = [s for s in policy["Statement"] if s["Sid"] == "Table"]
    patterns = table["Condition"]["ForAllValues:StringLike"]["dynamodb:LeadingKeys"]
    with use_tables(dashed, name_suffix=worker_suffix()) as tb:
        live = [t for t in tenants if _accepted(t)]
        with Session(dashed) as s:
            for tenant in live:
                for doc in docs:
                    if "-" not in tenant:
                        s.save(Doc(tenant_id=tenant, doc_id=doc))
        keys = [(i["pk"]["S"], i) for i in tb.scan_raw()]
    for key, item in keys:
        whose = item.get(SCOPE, {}).get("S")
        for tag in live:
            if any(string_like(p, key, {SCOPE: tag}) for p in patterns):
                assert whose == tag, (key, tag, patterns)


# -- C x F x G: LangGraph rows beside the model's, read by every reader -----------------------
def test_langgraph_rows_are_claimed_by_check_changes_and_the_lake(moto: None,
                                                                  tmp_path: Path) -> None:
    """A scoped saver's checkpoint and pending writes and a store's item (compressed and
    not) in the table beside a Note: ``dynaorm check`` reports no problem and nothing
    unclaimed, ``powertools.changes`` gives each stream record its entity, and two Iceberg
    exports (a thread added between them) hold every row with nothing unclaimed."""
    pytest.importorskip("pyiceberg", reason="dynaorm[lake] is not installed")
    from pyiceberg.catalog.sql import SqlCatalog

    from dynaorm.jobs import check, export, run_local
    from dynaorm.powertools import changes

    saver, store = Saver(hashed, scope={SCOPE: "acme"}), Store(hashed, scope={SCOPE: "acme"})
    with use_tables(hashed, name_suffix=worker_suffix()) as tb:
        cfg = saver.put(_conf("th"), _checkpoint("c1", "v"), {"step": 0}, {})
        saver.put_writes(cfg, [("m", 1), ("n", "x" * 600)], "task1")
        store.put(("users", "u1"), "small", {"a": 1})
        store.put(("users", "u1"), "large", {"a": "y" * 600})
        with Session(hashed) as s:
            s.save(Note(tenant_id="acme", note_id="n"))
        result = run_local(check(hashed))
        assert (result.scanned, result.problems, result.unclaimed) == (6, [], {})
        seen = set()
        for item in tb.scan_raw():
            record = {"eventID": "1", "eventName": "INSERT", "dynamodb": {
                "Keys": {"pk": item["pk"], "sk": item["sk"]}, "NewImage": item,
                "StreamViewType": "NEW_AND_OLD_IMAGES"}}
            change = changes(record, hashed)
            assert change is not None and change.entity is not None
            seen.add(change.entity.__name__)
        assert seen == {"Note", "LangGraphCheckpoint", "LangGraphWrite", "LangGraphMemory"}
        (tmp_path / "wh").mkdir()
        catalog = SqlCatalog("lake", uri=f"sqlite:///{tmp_path}/c.db",
                             warehouse=f"file://{tmp_path}/wh")
        first = run_local(export(hashed, tmp_path / "1", format="iceberg", catalog=catalog,
                                 namespace="app"))
        assert first.unclaimed == {} and first.failed == 0
        saver.put(_conf("th2"), _checkpoint("c1", "w"), {"step": 0}, {})
        second = run_local(export(hashed, tmp_path / "2", format="iceberg", catalog=catalog,
                                  namespace="app"))
        assert second.unclaimed == {} and second.failed == 0
        rows = {name[1]: catalog.load_table(name).scan().to_arrow().num_rows
                for name in catalog.list_tables("app")}
        assert rows == {"Note": 1, "LangGraphCheckpoint": 2, "LangGraphWrite": 2,
                        "LangGraphMemory": 2, "LangGraphLease": 0}  # (0.9: no single writer)


# -- D x C x A: infer a table holding LangGraph rows of two tenants ---------------------------
def _defined(code: str) -> Table:
    module = types.ModuleType(f"seams08_inferred_{uuid.uuid4().hex}")
    sys.modules[module.__name__] = module
    exec(compile(code, "<inferred>", "exec"), module.__dict__)
    return next(v for v in vars(module).values() if isinstance(v, Table))


def test_an_inferred_model_of_a_table_langgraph_wrote_prints_none_of_its_rows(
        moto: None) -> None:
    """``dynaorm model --infer`` of a table a scoped saver and store of two tenants wrote
    (contract 24: dynaorm's own rows are recognized, counted apart, never printed as
    entities): every row is counted as dynaorm's own, none is an entity of the printed
    code, and that code, imported, leaves a ``Saver`` of its table working (0.8 printed
    the checkpoint and memory rows as user entities, and importing them made ``Saver``
    refuse the table)."""
    from dynaorm.client.infer import infer_code

    copied = Table("seams08_copied")  # (no entities: the inferred model's name is its own)
    with use_tables(hashed, copied, name_suffix=worker_suffix()) as tb:
        for tenant in ("acme", "acme-corp"):
            saver, store = (Saver(hashed, scope={SCOPE: tenant}),
                            Store(hashed, scope={SCOPE: tenant}))
            cfg = saver.put(_conf("th"), _checkpoint("c1", tenant), {"step": 0}, {})
            saver.put_writes(cfg, [("m", tenant)], "task1")
            store.put(("users",), "k", {"v": tenant})
        for item in tb.scan_raw():
            copied.db.driver.run(call("PutItem", {"TableName": copied.name, "Item": item}))
        raw = {(i["pk"]["S"], i["sk"]["S"]) for i in tb.scan_raw(copied)}
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            code, model = infer_code(copied.name, report=None)
        assert len(raw) == 6 and model["inferred"]["own"] == 6, model["inferred"]
        assert model["inferred"]["placed"] == 0 and model["entities"] == []
        inferred = _defined(code)
        inferred.connect(None)
        assert not inferred.entities
        again = Saver(inferred, scope={SCOPE: "acme"})
        assert again.get_tuple(_conf("th")) is not None


# -- B x A: receipts of tenants sharing one idempotency key, on every engine ----------------
def test_tenants_sharing_an_idempotency_key_never_replay_or_block_one_another(
        backend: str | None) -> None:
    """``acme``, ``acme_corp`` and an unscoped session commit under one key ``K``, each
    its own document of ``T-{tenant_id}-{doc_id}``: each is applied (none is told
    ``replayed`` for another's commit, none refused as a mismatch), each retry replays its
    own, a tenant's other writes under ``K`` are a mismatch with its own receipt only; and
    each receipt's key is matched by its tenant's IAM pattern and no other's."""
    from dynaorm import IdempotencyMismatchError

    def commit(scope: dict[str, str] | None, tenant: str, doc: str) -> Any:
        with Session(dashed, scope=scope) as s:
            s.save(Doc(tenant_id=tenant, doc_id=doc))
            return s.commit(idempotency_key="K")

    policy, _ = iam.to_format(dashed.model(), "write", scope=SCOPE)
    (table,) = [s for s in policy["Statement"] if s["Sid"] == "Table"]
    patterns = table["Condition"]["ForAllValues:StringLike"]["dynamodb:LeadingKeys"]
    tenants = ("acme", "acme_corp")
    with use_tables(dashed, endpoint_url=backend, name_suffix=worker_suffix()) as tb:
        for tenant in tenants:
            assert not commit({SCOPE: tenant}, tenant, "d-1").replayed
        assert not commit(None, "zeta", "d-1").replayed
        for tenant in tenants:
            assert commit({SCOPE: tenant}, tenant, "d-1").replayed
            with pytest.raises(IdempotencyMismatchError):
                commit({SCOPE: tenant}, tenant, "d-2")
        assert commit(None, "zeta", "d-1").replayed
        items = tb.scan_raw()
        docs = sorted(i["pk"]["S"] for i in items if i["sk"]["S"] == "DOC")
        assert docs == ["T-acme-d-1", "T-acme_corp-d-1", "T-zeta-d-1"]
        receipts = [i["pk"]["S"] for i in items if i["pk"]["S"].startswith("dynaorm:receipt")]
        assert len(set(receipts)) == 3
        for key in receipts:
            owners = [t for t in tenants if any(string_like(p, key, {SCOPE: t})
                                                for p in patterns)]
            assert len(owners) <= 1 and all(key.startswith(f"dynaorm:receipt#{t}#")
                                            for t in owners), (key, owners)


# -- E x A x B: the MCP server of one tenant, keys with '-' separators, keyed writes ----------
def test_mcp_tools_of_two_tenants_never_cross_under_one_idempotency_key(moto: None) -> None:
    """Two MCP servers' tools (``acme``, ``acme_corp``) on ``T-{tenant_id}-{doc_id}``: a
    save under one ``idempotency_key`` by each is applied for each; a tool call naming the
    other tenant (an item's ``tenant_id``, or a document id that would render the other's
    key) writes and reads nothing of the other's; acme's get of ``corp-1`` is its own."""
    from dynaorm.mcp.server import prepare
    from dynaorm.mcp.tools import run

    def call(tenant: str, name: str, **args: Any) -> Any:
        tools, _ = prepare(dashed, writes=[Doc], scope={SCOPE: tenant})
        scope = {SCOPE: tenant}
        return run(tools[name], args, Session(dashed, scope=scope), scope, None, tools)

    with use_tables(dashed, name_suffix=worker_suffix()) as tb:
        for tenant in ("acme", "acme_corp"):
            done = call(tenant, "save_doc", item={"doc_id": "corp-1"}, idempotency_key="K")
            assert not done["replayed"]
        assert call("acme", "save_doc", item={"doc_id": "corp-1"},
                    idempotency_key="K")["replayed"]
        with pytest.raises(ScopeError, match="is outside this session"):
            call("acme", "save_doc", item={"doc_id": "x", SCOPE: "acme_corp"})
        got = call("acme", "get_doc", doc_id="corp-1")["item"]
        assert got is not None and got[SCOPE] == "acme"
        docs = sorted(i["pk"]["S"] for i in tb.scan_raw() if i["sk"]["S"] == "DOC")
        assert docs == ["T-acme-corp-1", "T-acme_corp-corp-1"]


# -- E x C: the MCP server of a table holding LangGraph's rows ------------------------------
def test_mcp_tools_of_a_table_holding_langgraph_rows_leave_the_adapters_rows_out(
        moto: None) -> None:
    """A scoped server's tools over a table whose scoped saver and store wrote their rows:
    the application's entities have tools, the adapter's rows (checkpoints, pending
    writes, memories: ``__dynaorm_internal__``) none, not even when ``writes=`` names
    them; the tenant's note reads back through them beside the checkpoint."""
    from dynaorm.mcp.server import prepare
    from dynaorm.mcp.tools import run

    with use_tables(hashed, name_suffix=worker_suffix()):
        Saver(hashed, scope={SCOPE: "acme"}).put(_conf("th"), _checkpoint("c1", "v"),
                                                  {"step": 0}, {})
        Store(hashed, scope={SCOPE: "acme"}).put(("n",), "k", {"v": 1})
        with Session(hashed, scope={SCOPE: "acme"}) as s:
            s.save(Note(tenant_id="acme", note_id="th"))
        tools, _ = prepare(hashed, scope={SCOPE: "acme"})
        adapters = {n for n, e in hashed.entities.items() if n.startswith("LangGraph")}
        assert adapters == {"LangGraphCheckpoint", "LangGraphWrite", "LangGraphMemory",
                            "LangGraphLease"}
        assert not {t.entity.__name__ for t in tools.values()} & adapters
        assert "get_note" in tools and "explain" in tools
        for name in sorted(adapters):
            with pytest.raises(DynaormError, match="rows an adapter keeps for itself"):
                prepare(hashed, writes=[name], scope={SCOPE: "acme"})
        scope = {SCOPE: "acme"}
        got = run(tools["get_note"], {"note_id": "th"}, Session(hashed, scope=scope), scope,
                  None, tools)
        assert got["item"] == {SCOPE: "acme", "note_id": "th"}


# -- C x A: a scope of two fields, given in either order -------------------------------------
def test_stores_and_savers_of_one_two_field_scope_share_it_whatever_its_order(
        moto: None) -> None:
    """A store scoped ``{"tenant_id": .., "user_id": ..}`` and one scoped with the same
    fields in the other order are the same scope: both declared on one table, each reads
    what the other wrote, and neither reads another user's (the saver already took both
    orders; the store refused the second, "one scope's fields only")."""
    two = Table(f"seams08_two_{uuid.uuid4().hex[:6]}")
    first = Store(two, scope={SCOPE: "a", "user_id": "u"})
    second = Store(two, scope={"user_id": "u", SCOPE: "a"})
    other = Store(two, scope={"user_id": "v", SCOPE: "a"})
    Saver(two, scope={SCOPE: "a", "user_id": "u"})
    Saver(two, scope={"user_id": "u", SCOPE: "a"})
    with use_tables(two, name_suffix=worker_suffix()):
        first.put(("n",), "k", {"by": "first"})
        got = second.get(("n",), "k")
        assert got is not None and got.value == {"by": "first"}
        assert other.get(("n",), "k") is None and other.list_namespaces() == []


# -- E x A x B: any call of one tenant's MCP tools, the other tenant's items untouched --------
_doc_id = st.text(st.sampled_from("ac-_|"), min_size=1, max_size=4)
_calls = st.lists(st.tuples(
    st.sampled_from(["get_doc", "save_doc", "update_doc", "delete_doc"]),
    _doc_id, st.booleans(), st.sampled_from([None, "K", "L"])), min_size=1, max_size=8)


@settings(max_examples=examples(15), deadline=None, suppress_health_check=list(HealthCheck))
@given(a=st.text(st.sampled_from("ac_.:|"), min_size=1, max_size=4),
       b=st.text(st.sampled_from("ac_.:|"), min_size=1, max_size=4),
       docs=st.lists(_doc_id, min_size=1, max_size=3), calls=_calls)
def test_a_tenants_mcp_calls_never_touch_nor_show_another_tenants_items(
        moto: None, a: str, b: str, docs: list[str], calls: list[Any]) -> None:
    """Tenant ``b``'s tools (get, save, update, delete, keyed or not, naming a
    document id with the key's separator, or naming tenant ``a`` outright): ``a``'s items
    are stored as they were, and no answer holds one of ``a``'s items."""
    from dynaorm.mcp.server import prepare
    from dynaorm.mcp.tools import check_arguments, run

    if a == b:
        return
    tools, _ = prepare(dashed, writes=[Doc], scope={SCOPE: b})
    assert {"get_doc", "save_doc", "update_doc", "delete_doc"} <= set(tools)
    with use_tables(dashed, name_suffix=worker_suffix()) as tb:
        with Session(dashed) as s:
            for doc in docs:
                s.save(Doc(tenant_id=a, doc_id=doc, title="of-a"))
        before = sorted(repr(sorted(i.items())) for i in tb.scan_raw())
        for name, doc, name_a, key in calls:
            target = {SCOPE: a} if name_a else {}
            args: dict[str, Any] = (
                {"item": {"doc_id": doc, "title": "by-b", **target}} if name == "save_doc"
                else {"doc_id": doc, "set": {"title": "by-b"}, **target}
                if name == "update_doc" else {"doc_id": doc, **target})
            if key is not None and name.split("_")[0] in ("save", "update", "delete"):
                args["idempotency_key"] = key
            scope = {SCOPE: b}
            try:
                check_arguments(tools[name], args)
                found = run(tools[name], args, Session(dashed, scope=scope), scope, None,
                            tools)
            except Exception as exc:  # (a refusal: what it must never do is below)
                assert "of-a" not in str(exc)
                continue
            assert "of-a" not in repr(found), (name, args, found)
        mine = sorted(repr(sorted(i.items())) for i in tb.scan_raw()
                      if i.get(SCOPE, {}).get("S") == a)
        assert mine == before


# -- D x A: infer a table a scoped model wrote, then scope the inferred model -----------------
_id = st.text(st.sampled_from("ac-_.|:"), min_size=1, max_size=4)


@settings(max_examples=examples(6), deadline=None, suppress_health_check=list(HealthCheck))
@given(rows=st.lists(st.tuples(_id, _id), min_size=2, max_size=6, unique=True))
def test_an_inferred_model_renders_the_keys_it_read_and_holds_a_scope_by_them(
        moto: None, rows: list[tuple[str, str]]) -> None:
    """Notes of several tenants (ids with ``-``, ``|``, ``.``, prefixes of one another),
    inferred: every item read through the inferred model renders back its own key, and a
    session of the inferred model scoped to one tenant reads that tenant's notes only."""
    from dynaorm.client.infer import infer_code

    copied = Table(f"seams08_copied_{uuid.uuid4().hex[:8]}")  # (each example's model)
    with use_tables(hashed, copied, name_suffix=worker_suffix()) as tb:
        with Session(hashed) as s:
            for tenant, note in rows:
                s.save(Note(tenant_id=tenant, note_id=note))
        for item in tb.scan_raw():
            copied.db.driver.run(call("PutItem", {"TableName": copied.name, "Item": item}))
        code, model = infer_code(copied.name, report=None)
        assert model["inferred"]["placed"] == len(rows), model["inferred"]
        inferred = _defined(code)
        inferred.connect(None)
        (cls,) = inferred.entities.values()
        spec = cls.__dynaorm_spec__
        with Session(inferred) as s:
            objs = s.scan(cls).all()
        raw = {(i["pk"]["S"], i["sk"]["S"]) for i in tb.scan_raw(copied)}
        assert {(spec.pk.render(dict(o)), spec.sk.render(dict(o))) for o in objs} == raw
        for tenant in {t for t, _ in rows}:
            with Session(inferred, scope={SCOPE: tenant}) as s:
                mine = sorted(o.note_id for o in s.scan(cls).all())
            assert mine == sorted(n for t, n in rows if t == tenant)
