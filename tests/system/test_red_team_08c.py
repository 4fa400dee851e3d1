"""Red team 08c: what was never attacked.

1. :mod:`dynaorm.langgraph`'s ``Saver`` and ``Store`` kept across calls in the ways an
   application keeps objects: ``copy.deepcopy`` (of a saver, a store, a compiled graph, a
   config holding them), ``pickle``, ``importlib.reload`` of the adapter's modules (its
   entity classes defined again) with savers and stores made before still in use, and
   ``asyncio.run`` after ``asyncio.run`` with a saver or store made in the first loop; a
   saver the model refuses, made again; a job's tasks on a table of LangGraph rows.
2. The refusal of a write at a key a user rule's row kind claims (a table without a type
   attribute: ``EntitySpec.primary_key``), across what else an entity is (Compressed,
   Encrypted through KMS, a previous layout; versioned and unique need a type attribute,
   so they are refused when declared) and every surface that writes: ``Session``,
   ``AsyncSession``, ``save_many``, an idempotent commit, update, delete, the MCP write
   tools, a backfill job, ``dynaorm migrate``, the LangGraph ``Store`` and ``Saver``.

Each test states what must never happen; what does not hold is a strict xfail naming the
defect. moto only (``pytest.mark.engines``): the refusals happen before sending."""

from __future__ import annotations

import asyncio
import contextlib
import copy
import importlib
import json
import multiprocessing
import operator
import pickle
import sys
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor
from datetime import UTC, datetime
from typing import Annotated, Any, TypedDict

import boto3
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from langgraph.checkpoint.base import empty_checkpoint
from langgraph.graph import START, StateGraph
from langgraph.store.base import PutOp

import dynaorm
from dynaorm import (
    Compressed,
    DynaormError,
    Encrypted,
    KmsKeyring,
    Rule,
    Session,
    Table,
    Unique,
    register_rule,
)
from dynaorm.aio.session import AsyncSession
from dynaorm.client.settings import default_session, resolve_region
from dynaorm.errors import KeyTemplateError
from dynaorm.langgraph import Saver, Store
from dynaorm.schema.rules import RULES, Rows
from dynaorm.schema.rules.previous import Previous
from dynaorm.schema.unclaimed import rule_row
from dynaorm.testing import use_tables, worker_suffix
from dynaorm.values.records import Fail, Put, Role
from tests.support.examples import examples

pytestmark = [pytest.mark.sync_only, pytest.mark.engines("moto")]

_QUICK = settings(deadline=None, suppress_health_check=list(HealthCheck))


def _items(table: Table) -> list[str]:
    """Every stored item of ``table``, order-independent (dynoxide orders attributes)."""
    out: list[str] = []
    request: dict[str, Any] = {"TableName": table.name, "ConsistentRead": True}
    while True:
        page = table.db.send("Scan", request)
        out += [json.dumps(i, sort_keys=True, default=repr) for i in page["Items"]]
        if "LastEvaluatedKey" not in page:
            return sorted(out)
        request["ExclusiveStartKey"] = page["LastEvaluatedKey"]


# == 1. LangGraph's saver and store, kept across calls ====================================
agents = Table("red08c_agents", ttl="expires")


class State(TypedDict):
    steps: Annotated[list[str], operator.add]


def _graph(saver: Saver, store: Store) -> Any:
    def step(state: State) -> dict[str, Any]:
        return {"steps": [f"step {len(state['steps'])}"]}
    builder = StateGraph(State)
    builder.add_node("step", step)
    builder.add_edge(START, "step")
    return builder.compile(checkpointer=saver, store=store)


@pytest.fixture
def lg(backend: str | None) -> Iterator[None]:
    with use_tables(agents, endpoint_url=backend, name_suffix=worker_suffix()):
        yield


def _tenant() -> dict[str, str]:
    """A fresh tenant: every saver and store of the table is scoped (one key layout)."""
    return {"tenant_id": uuid.uuid4().hex}


def _conf(thread: str) -> Any:
    return {"configurable": {"thread_id": thread, "checkpoint_ns": ""}}


def test_a_deep_copy_of_a_saver_store_or_compiled_graph_keeps_to_the_same_rows(
        lg: None) -> None:
    """``copy.deepcopy`` of a saver, a store, a graph compiled with them or a config
    holding them (as of LangGraph's ``InMemorySaver``, which deep-copies) never raises
    and never forks the state: the copy's checkpointer and store are the originals (their
    state is the table's), an item the copy puts the original gets. (It raised
    ``TypeError: cannot pickle '_thread.RLock'``: the table's client.)"""
    scope = _tenant()
    saver, store = Saver(agents, scope=scope), Store(agents, scope=scope)
    graph = _graph(saver, store)
    graph.invoke({"steps": []}, _conf("t1"))
    twin = copy.deepcopy(graph)  # (LangGraph's own sentinels do not survive it: not run)
    assert twin.checkpointer is saver and twin.store is store
    graph.invoke({"steps": []}, _conf("t1"))
    assert graph.get_state(_conf("t1")).values == {"steps": ["step 0", "step 1"]}
    held = copy.deepcopy({"configurable": {"store": store, "saver": saver}})["configurable"]
    held["store"].put(("users",), "u1", {"n": 1})
    assert store.get(("users",), "u1").value == {"n": 1}  # type: ignore[union-attr]
    assert held["saver"].get_tuple(_conf("t1")).checkpoint == saver.get_tuple(  # type: ignore[union-attr]
        _conf("t1")).checkpoint


def test_pickling_a_saver_store_or_graph_is_refused_and_writes_nothing(lg: None) -> None:
    """A saver, a store, or a graph compiled with them never pickles (as LangGraph's own
    ``InMemorySaver``, ``InMemoryStore`` and AWS's ``DynamoDBSaver`` do not): a pickle
    would carry the table's client across processes. Refused, the table unchanged."""
    saver, store = Saver(agents, scope=_tenant()), Store(agents, scope=_tenant())
    store.put(("a",), "k", {"v": 1})
    held = _items(agents)
    for obj in (saver, store, _graph(saver, store)):
        with pytest.raises((TypeError, AttributeError, pickle.PicklingError)):
            pickle.dumps(obj)
    assert _items(agents) == held


def test_the_tasks_of_a_job_on_a_table_of_langgraph_rows_pickle(lg: None) -> None:
    """A check job of a table holding a saver's and a store's rows: its tasks pickle
    (every worker process and engine gets them pickled) and come back equal, naming the
    table itself (a module attribute: its LangGraph rows are made per table, held by no
    module attribute); worker processes run them. (They named the first entity class, a
    ``LangGraphCheckpoint``: ``PicklingError``.)"""
    from dynaorm.jobs import check

    Saver(agents, scope=_tenant())
    Store(agents, scope=_tenant())
    tasks = check(agents, segments=2).tasks()
    assert pickle.loads(pickle.dumps(tasks)) == tasks
    assert all(t.entity is agents for t in pickle.loads(pickle.dumps(tasks)))
    spawn = multiprocessing.get_context("spawn")  # (as run_local's workers start)
    with ProcessPoolExecutor(1, mp_context=spawn) as pool:
        assert pool.submit(_names_agents, tasks[1]).result() == (True, tasks[1].where)


def test_a_table_pickles_by_reference_or_not_at_all() -> None:
    """A table pickles as the module attribute that holds it (the same table back, its
    client never carried); one no module attribute holds is refused, never copied."""
    assert pickle.loads(pickle.dumps(agents)) is agents
    with pytest.raises(pickle.PicklingError, match="held by no module attribute"):
        pickle.dumps(Table("red08c-nowhere"))


def _names_agents(task: Any) -> tuple[bool, Any]:
    """In a worker process: whether ``task`` names this module's ``agents``."""
    return task.entity is agents, task.where


@pytest.mark.parametrize(("label", "sk"), [("writes", "C#{a}#{b}#W#{c}#{d}"),
                                           ("checkpoints", "C#{a}#{b}#")])
def test_a_saver_refused_by_the_model_is_refused_again_and_leaves_no_checkpoint_entity(
        label: str, sk: str) -> None:
    """On a table without a type attribute, an entity of the app whose keys could be a
    saver's writes' (or checkpoints') refuses the saver (``DynaormError`` naming both).
    The next ``Saver`` of the table is refused alike, never a bare ``KeyError``, and no
    ``LangGraphCheckpoint`` is left declared without its ``LangGraphWrite`` (a saver
    refused by its writes left the checkpoint entity in the model, and the next one
    raised ``KeyError: 'LangGraphWrite'``)."""
    home = Table(f"red08c-trap-{label}", type_attribute=None)
    fields = ("t", "a", "b", "c", "d")
    type("Trap", (dynaorm.Entity,), {
        "__annotations__": dict.fromkeys(fields[:3 if label == "checkpoints" else 5], str),
        "__module__": __name__, "__qualname__": f"Trap_{label}",
        "Meta": type("Meta", (), {"table": home, "pk": "LG#{t}", "sk": sk,
                                  "__qualname__": f"Trap_{label}.Meta"})})
    for _ in range(2):
        with pytest.raises(DynaormError, match="could match the same item as Trap"):
            Saver(home)
        assert "LangGraphCheckpoint" not in home.entities


@pytest.fixture
def reloaded() -> Iterator[None]:
    """Puts the adapter's modules back as they were after a test that reloads them."""
    names = ("dynaorm.langgraph.saver", "dynaorm.langgraph.store", "dynaorm.langgraph")
    kept = {n: dict(vars(sys.modules[n])) for n in names}
    yield
    for n in names:
        vars(sys.modules[n]).clear()
        vars(sys.modules[n]).update(kept[n])


def test_after_a_reload_old_and_new_savers_and_stores_share_the_tables_entities(
        lg: None, reloaded: None) -> None:
    """``importlib.reload`` of the adapter (its entity classes defined again) never gives
    the table a second ``LangGraphCheckpoint``/``LangGraphWrite``/``LangGraphMemory``:
    a saver or store made before and one made after read each other's rows, a TTL
    refresh on read by either moves the item's expiry, and ``dynaorm check`` is clean."""
    from dynaorm.jobs.checking import check_table

    scope = _tenant()
    old_saver = Saver(agents, scope=scope)
    old_store = Store(agents, scope=scope, ttl={"default_ttl": 1, "refresh_on_read": True})
    old_saver.put(_conf("r1"), empty_checkpoint(), {"step": 0}, {})
    old_store.put(("a",), "k", {"v": 1})
    before = {n: agents.entities[n] for n in agents.entities}
    for name in ("dynaorm.langgraph.saver", "dynaorm.langgraph.store", "dynaorm.langgraph"):
        importlib.reload(sys.modules[name])
    import dynaorm.langgraph as fresh
    assert fresh.Saver is not Saver
    new_saver = fresh.Saver(agents, scope=scope)
    new_store = fresh.Store(agents, scope=scope, ttl={"default_ttl": 1, "refresh_on_read": True})
    assert {n: agents.entities[n] for n in agents.entities} == before
    new_saver.put(_conf("r2"), empty_checkpoint(), {"step": 0}, {})
    assert old_saver.get_tuple(_conf("r2")) is not None
    assert new_saver.get_tuple(_conf("r1")) is not None
    assert {t.config["configurable"]["thread_id"] for t in new_saver.list(None)} == {"r1", "r2"}
    new_store.put(("a",), "k2", {"v": 2}, ttl=1)
    for store, key in ((old_store, "k2"), (new_store, "k")):
        expiry = Session(agents).get(store.entity, path=f"a..{key}", **scope).expires
        assert store.get(("a",), key) is not None
        moved = Session(agents).get(store.entity, path=f"a..{key}", **scope).expires
        assert expiry is not None and moved is not None and moved >= expiry
        assert moved > datetime.now(UTC)
    assert check_table(agents).problems == []


def test_a_saver_and_store_made_in_one_event_loop_serve_the_next_ones(lg: None) -> None:
    """A saver and a store made inside one ``asyncio.run`` and used in later ones (each
    a new event loop, the first closed) and by sync calls: every call answers, nothing
    of the first loop is reused once closed."""
    made: dict[str, Any] = {}
    scope = _tenant()

    async def first() -> None:
        made["saver"], made["store"] = Saver(agents, scope=scope), Store(agents, scope=scope)
        await made["saver"].aput(_conf("loop"), empty_checkpoint(), {"step": 0}, {})
        await made["store"].aput(("loop",), "k", {"n": 0})

    async def later(n: int) -> tuple[Any, Any]:
        await made["store"].aput(("loop",), "k", {"n": n})
        return (await made["saver"].aget_tuple(_conf("loop")),
                await made["store"].aget(("loop",), "k"))

    asyncio.run(first())
    for n in (1, 2, 3):
        tup, item = asyncio.run(later(n))
        assert tup is not None and item is not None and item.value == {"n": n}
    assert made["saver"].get_tuple(_conf("loop")) is not None
    assert made["store"].get(("loop",), "k").value == {"n": 3}


# == 2. a key a rule's row kind claims, across the interaction matrix ======================
class RedlgAudit(Rule):
    """An audit row per write of a ``Redlg08cAudited*`` entity, ``AUDIT#<its pk>`` /
    ``<what>#<its sk>#<n>``, with no type attribute (as ``Red73Audit``)."""

    __slots__ = ()
    name = "red08c-audit"
    order = 90
    transforms = False

    @classmethod
    def build(cls, decl: Any) -> RedlgAudit | None:
        return cls() if decl.type_name.startswith("Redlg08cAudited") else None

    def rows(self, change: Any) -> Rows:
        key = change.new_key or change.old_key
        what = "delete" if change.new is None else "insert" if change.old is None else "update"
        at = {"pk": f"AUDIT#{key['pk']}", "sk": f"{what}#{key['sk']}#{change.staged:06d}"}
        return Rows((), (Put(at, {k: {"S": v} for k, v in at.items()}, None,
                             change.origin(Role.ROW, Fail.CALLER, owner=at)),))


class RedlgShadow(Rule):
    """A shadow row per write of a ``Redlg08cShadowed*`` entity in the LangGraph store's
    partition, ``LANGGRAPH#STORE`` / ``shadow..<its pk's value>``: a row kind narrower
    than the store's items (sort key ``{path}``)."""

    __slots__ = ()
    name = "red08c-shadow"
    order = 91
    transforms = False

    @classmethod
    def build(cls, decl: Any) -> RedlgShadow | None:
        return cls() if decl.type_name.startswith("Redlg08cShadowed") else None

    def rows(self, change: Any) -> Rows:
        key = change.new_key or change.old_key
        at = {"pk": "LANGGRAPH#STORE", "sk": f"shadow..{key['pk'].split('#', 1)[1]}"}
        return Rows((), (Put(at, {k: {"S": v} for k, v in at.items()}, None,
                             change.origin(Role.ROW, Fail.CALLER, owner=at)),))


class RedlgThread(Rule):
    """A row per write of a ``Redlg08cThreaded*`` entity in the saver's partition of
    thread ``audit``, ``LG#audit`` / ``C#_#<its pk's value>#``: a row kind narrower than
    the saver's checkpoints (``LG#{thread_id}`` / ``C#{ns}#{checkpoint_id}#``)."""

    __slots__ = ()
    name = "red08c-thread"
    order = 92
    transforms = False

    @classmethod
    def build(cls, decl: Any) -> RedlgThread | None:
        return cls() if decl.type_name.startswith("Redlg08cThreaded") else None

    def rows(self, change: Any) -> Rows:
        key = change.new_key or change.old_key
        at = {"pk": "LG#audit", "sk": f"C#_#{key['pk'].split('#', 1)[1]}#"}
        return Rows((), (Put(at, {k: {"S": v} for k, v in at.items()}, None,
                             change.origin(Role.ROW, Fail.CALLER, owner=at)),))


VARIANTS = ("plain", "compressed", "encrypted", "previous")
LEDGER_KEYS = ("kind", "ref", "what", "a", "b")


def _declare(label: str, **meta: Any) -> tuple[Table, Any, Any]:
    """A table without a type attribute holding an audited order (its audit rows
    ``AUDIT#ORDER#{oid}``) and a ledger keyed ``AUDIT#{kind}#{ref}`` / ``{what}#{a}#{b}``,
    wider than those rows, with what ``label`` adds."""
    home = Table(f"red08c-{label}", type_attribute=None)

    class Redlg08cAuditedOrder(dynaorm.Entity):
        class Meta:
            table = home
            pk = "ORDER#{oid}"
            sk = "ORDER"

        oid: str

    extra: dict[str, Any] = {"compressed": {"note": Compressed[str]},
                             "encrypted": {"note": Encrypted[str]}}.get(label, {"note": str})
    body = {"table": home, "pk": "AUDIT#{kind}#{ref}", "sk": "{what}#{a}#{b}",
            "__qualname__": f"Redlg08cLedger_{label}.Meta", **meta}
    ledger = type(f"Redlg08cLedger_{label}", (dynaorm.Entity,), {
        "__annotations__": {**dict.fromkeys(LEDGER_KEYS, str), **extra, "email": str},
        "__module__": __name__, "__qualname__": f"Redlg08cLedger_{label}", "note": "",
        "email": "e", "Meta": type("Meta", (), body)})
    return home, Redlg08cAuditedOrder, ledger


@pytest.fixture(scope="module")
def ruled() -> Iterator[dict[str, tuple[Table, Any, Any]]]:
    register_rule(RedlgAudit)
    register_rule(RedlgShadow)
    register_rule(RedlgThread)
    try:
        made = {label: _declare(label, **({"previous": Previous(pk="WAS#{kind}#{ref}")}
                                          if label == "previous" else {}))
                for label in VARIANTS}
        shadow = Table("red08c-shadow", type_attribute=None)

        class Redlg08cShadowedNote(dynaorm.Entity):
            class Meta:
                table = shadow
                pk = "NOTE#{nid}"
                sk = "NOTE"

            nid: str

        Store(shadow)  # (declares LangGraphMemory: LANGGRAPH#STORE / {path})
        made["store"] = (shadow, Redlg08cShadowedNote, shadow.entities["LangGraphMemory"])
        threads = Table("red08c-threads", type_attribute=None)

        class Redlg08cThreadedNote(dynaorm.Entity):
            class Meta:
                table = threads
                pk = "TNOTE#{nid}"
                sk = "TNOTE"

            nid: str

        Saver(threads)  # (declares LangGraphCheckpoint: LG#{thread_id} / C#{ns}#{cid}#)
        made["saver"] = (threads, Redlg08cThreadedNote, threads.entities["LangGraphCheckpoint"])
        yield made
    finally:
        RULES.pop(RedlgAudit.name, None)
        RULES.pop(RedlgShadow.name, None)
        RULES.pop(RedlgThread.name, None)


@pytest.mark.parametrize("meta", [{"versioned": True}, {"unique": [Unique("email")]}],
                         ids=["versioned", "unique"])
def test_versioned_and_unique_ledgers_are_refused_where_no_type_attribute_is(
        ruled: Any, meta: dict[str, Any]) -> None:
    """A versioned or unique entity on a table without a type attribute is refused when
    declared (its guard and version rows carry the type): no write of one ever reaches
    the claimed-key check unguarded."""
    with pytest.raises(DynaormError, match="need\\(s\\) the type attribute"):
        _declare(f"refused-{next(iter(meta))}", **meta)


def _kms(endpoint: str | None, backend: str | None) -> KmsKeyring:
    region = resolve_region(None, default_session(), backend)
    kms = boto3.client("kms", endpoint_url=endpoint, region_name=region,
                       aws_access_key_id="x", aws_secret_access_key="x")
    key = kms.create_key()["KeyMetadata"]["KeyId"]
    mac = kms.create_key(KeySpec="HMAC_256", KeyUsage="GENERATE_VERIFY_MAC")["KeyMetadata"][
        "KeyId"]
    return KmsKeyring(key, mac_key_id=mac)


@pytest.fixture
def tables(ruled: dict[str, tuple[Table, Any, Any]], backend: str | None,
           request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
           ) -> Iterator[dict[str, tuple[Table, Any, Any]]]:
    """The ruled tables, fresh, each with an audited order ``1`` (its audit row at
    ``AUDIT#ORDER#1``); the encrypted one's keyring KMS through moto."""
    endpoint = None if backend is None else request.getfixturevalue("dynaorm_moto_server")
    if endpoint is not None:
        monkeypatch.setenv("AWS_ENDPOINT_URL_KMS", endpoint)
    homes = [m[0] for m in ruled.values()]
    with use_tables(*homes, endpoint_url=backend, name_suffix=worker_suffix()):
        ruled["encrypted"][0].keyring = _kms(endpoint, backend)
        try:
            for home, audited, _ in ruled.values():  # (the store's, saver's: theirs below)
                with Session(home) as s:
                    s.save(audited(**{next(iter(audited.model_fields)): "1"}))
            yield ruled
        finally:
            ruled["encrypted"][0].keyring = None


def _claimed(table: Table, item: str) -> bool:
    """Whether ``item``'s key fits a rule's row kind of ``table`` (what reads take for
    the rule's row on a table without a type attribute)."""
    return rule_row(table, json.loads(item)) is not None


def _writes(home: Table, ledger: Any, values: dict[str, str]) -> dict[str, Callable[[], Any]]:
    """Each surface's write of a ledger at ``values``."""
    from dynaorm.jobs import backfill, run_local
    from dynaorm.mcp.server import prepare
    from dynaorm.mcp.tools import run

    obj = ledger(**values, note="n")
    seed = ledger(kind="SEED", ref=uuid.uuid4().hex[:8], what="w", a="a", b="b")

    def session() -> None:
        with Session(home) as s:
            s.save(obj)

    def idempotent() -> None:
        s = Session(home)
        s.save(obj)
        s.commit(idempotency_key=uuid.uuid4().hex)

    def in_async() -> None:
        async def go() -> None:
            async with AsyncSession(home) as s:
                s.save(obj)
        asyncio.run(go())

    def save_many() -> None:
        Session(home).save_many([ledger(kind="MANY", ref=uuid.uuid4().hex[:8], what="w",
                                        a="a", b="b"), obj])

    def update() -> None:
        with Session(home) as s:
            s.update(ledger, **values).set(note="u")

    def delete() -> None:
        with Session(home) as s:
            s.delete(obj)

    def mcp(verb: str, args: dict[str, Any]) -> Callable[[], Any]:
        tools, _ = prepare(home, writes=[ledger])
        tool = tools[f"{verb}_{ledger.__name__.lower()}"]
        return lambda: run(tool, {**args, "idempotency_key": uuid.uuid4().hex}, Session(home),
                           {}, None, tools)

    def job() -> None:
        with Session(home) as s:
            s.save(seed)
        run_local(backfill(ledger, lambda o: obj if o == seed else None))

    return {"session": session, "idempotent": idempotent, "async": in_async,
            "save_many": save_many, "update": update, "delete": delete,
            "mcp": mcp("save", {"item": {**values, "note": "n"}}),
            "mcp_update": mcp("update", {**values, "set": {"note": "u"}}),
            "mcp_delete": mcp("delete", values), "backfill": job}


_part = st.one_of(st.sampled_from(["ORDER", "AUDIT", "insert", "update", "delete", "1",
                                   "000000", "w"]),
                  st.text(st.sampled_from("ORDE1a-|"), min_size=1, max_size=4))
AT = ("ORDER", "1", "w", "a", "b")  # (AUDIT#ORDER#1: the audit row of order 1)
SURFACES = ("session", "idempotent", "async", "save_many", "update", "delete", "mcp",
            "mcp_update", "mcp_delete", "backfill")


@settings(_QUICK, max_examples=examples(40))
@given(label=st.sampled_from(VARIANTS), surface=st.sampled_from(SURFACES),
       values=st.fixed_dictionaries({k: _part for k in LEDGER_KEYS}))
@example(label="plain", surface="delete", values={"kind": "ORDER", "ref": "1",
                                                  "what": "insert", "a": "ORDER",
                                                  "b": "000000"})
@example(label="previous", surface="mcp_delete", values={"kind": "ORDER", "ref": "1",
                                                         "what": "insert", "a": "ORDER",
                                                         "b": "000000"})
@example(label="encrypted", surface="mcp", values=dict(zip(LEDGER_KEYS, AT, strict=True)))
@example(label="compressed", surface="backfill", values=dict(zip(LEDGER_KEYS, AT, strict=True)))
def test_no_surface_stores_at_a_key_a_rule_row_kind_claims(
        tables: dict[str, tuple[Table, Any, Any]], label: str, surface: str,
        values: dict[str, str]) -> None:
    """For any key values and any surface (Session, an idempotent commit, AsyncSession,
    save_many beside an unclaimed object, update, delete, the MCP save, update and
    delete tools (with an idempotency key), a backfill
    whose function returns the object), whatever else the entity is (Compressed,
    Encrypted through KMS, a previous layout): nothing accepted is stored at a key a
    rule's row kind claims (``AUDIT#ORDER#...``), what is accepted is read back, and a
    refused write leaves the table as it was (a delete never removes an audit row)."""
    home, _, ledger = tables[label]
    held = _items(home)
    try:
        _writes(home, ledger, values)[surface]()
    except (DynaormError, ValueError) as exc:  # (refused: a claimed key, a missing item)
        if surface == "backfill" and isinstance(exc, KeyTemplateError):
            held = sorted({*held, *(i for i in _items(home) if "SEED" in i)})
        assert _items(home) == held, f"{surface} refused ({exc!r}) yet changed the table"
        return
    now = _items(home)
    assert not [i for i in set(now) - set(held) if _claimed(home, i)]
    assert [i for i in held if _claimed(home, i)] == [i for i in now if _claimed(home, i)]
    if surface in ("session", "idempotent", "async", "save_many", "mcp", "backfill"):
        found = Session(home).get(ledger, **values)
        assert found is not None and found.note == "n"


def test_migrate_never_moves_an_item_to_a_key_a_rule_row_kind_claims(
        tables: dict[str, tuple[Table, Any, Any]]) -> None:
    """Two items of the previous layout (``WAS#...``): one whose current key is free,
    one whose current key an audit row kind claims (``AUDIT#ORDER#1``). ``dynaorm
    migrate`` never stores the second at the claimed key and leaves it where it was;
    the first stays readable (moved or not: the xfail below is about the rest)."""
    from dynaorm.jobs import migrate, run_local

    home, _, ledger = tables["previous"]
    for kind in ("FREE", "ORDER"):
        item = {"pk": f"WAS#{kind}#1", "sk": "w#a#b", "kind": kind, "ref": "1", "what": "w",
                "a": "a", "b": "b", "note": "old", "email": "e"}
        home.db.send("PutItem", {"TableName": home.name,
                                 "Item": {k: {"S": v} for k, v in item.items()}})
    with contextlib.suppress(KeyTemplateError):  # (the xfail below)
        run_local(migrate(home))
    now = [json.loads(i) for i in _items(home)]
    assert not [i for i in now if i["pk"]["S"] == "AUDIT#ORDER#1" and "note" in i]
    assert [i for i in now if i["pk"]["S"] == "WAS#ORDER#1"]
    assert Session(home).get(ledger, kind="FREE", ref="1", what="w", a="a", b="b") is not None


def test_migrate_reports_an_item_it_cannot_move_instead_of_raising(
        tables: dict[str, tuple[Table, Any, Any]]) -> None:
    """``dynaorm migrate`` over a previous-layout item whose current key is claimed
    answers a report naming it (failed or left), never raises out of the job."""
    from dynaorm.jobs import migrate, run_local

    home, _, _ = tables["previous"]
    item = {"pk": "WAS#ORDER#1", "sk": "w#a#b", "kind": "ORDER", "ref": "1", "what": "w",
            "a": "a", "b": "b", "note": "old", "email": "e"}
    home.db.send("PutItem", {"TableName": home.name,
                             "Item": {k: {"S": v} for k, v in item.items()}})
    report = run_local(migrate(home))
    assert report.failed or report.left


_label = st.text(st.sampled_from("shadowx1-|"), min_size=1, max_size=7)


@settings(_QUICK, max_examples=examples(25))
@given(puts=st.lists(st.tuples(st.lists(_label, min_size=1, max_size=2), _label, st.booleans()),
                     min_size=1, max_size=30))
@example(puts=[(["x"], "1", False)] * 26 + [(["shadow"], "1", False)])
@example(puts=[(["shadow"], "1", False)])
@example(puts=[(["x"], "1", False), (["shadow"], "2", True)])
def test_the_store_never_puts_at_a_key_a_rule_row_kind_claims(
        tables: dict[str, tuple[Table, Any, Any]],
        puts: list[tuple[list[str], str, bool]]) -> None:
    """A batch of puts and deletes (any namespaces and keys, some in ``shadow``, where a
    rule row kind ``LANGGRAPH#STORE`` / ``shadow..{nid}`` claims the keys; past
    ``save_many``'s 25 an item): either refused whole, the table as it was, or every put
    stored and read back by ``get``, every delete done, none at a claimed key. (A batch
    of a put and a delete at a claimed key raised ``KeyTemplateError`` after storing the
    put.) The store's own delete of a claimed key never removes the rule's row."""
    home, shadowed, _ = tables["store"]
    with Session(home) as s:
        s.save(shadowed(nid="1"), overwrite=True)  # (its shadow row: LANGGRAPH#STORE / shadow..1)
    store = Store(home)
    held = _items(home)
    ops = [PutOp(tuple(ns), key, None if gone else {"v": i})
           for i, (ns, key, gone) in enumerate(puts)]
    try:
        store.batch(ops)
    except DynaormError as exc:
        assert isinstance(exc, KeyTemplateError)
        assert _items(home) == held
    else:
        now = _items(home)
        assert not [i for i in set(now) - set(held) if _claimed(home, i)]
        last = {(tuple(op.namespace), op.key): op.value for op in ops}
        for (ns, key), value in last.items():
            found = store.get(ns, key)
            assert (found and found.value) == value
    with contextlib.suppress(KeyTemplateError):
        store.delete(("shadow",), "1")
    assert [i for i in _items(home) if "shadow..1" in i]


@settings(_QUICK, max_examples=examples(20))
@given(thread=st.sampled_from(["audit", "other", "audit-"]), cid=st.sampled_from(["1", "2", "x"]),
       call=st.sampled_from(["put", "aput", "copy_thread", "put_writes", "delete_thread",
                             "prune"]))
@example(thread="audit", cid="1", call="copy_thread")
@example(thread="audit", cid="1", call="put")
def test_the_saver_never_writes_at_a_key_a_rule_row_kind_claims(
        tables: dict[str, tuple[Table, Any, Any]], thread: str, cid: str, call: str) -> None:
    """A checkpoint put (sync, async), a thread copied into, a task's writes, a thread
    deleted or pruned, where a rule row kind claims ``LG#audit`` / ``C#_#{nid}#`` (the
    root checkpoints of thread ``audit``): refused with the table as it was, or done
    with nothing at a claimed key; the rule's own rows are never deleted."""
    home, threaded, _ = tables["saver"]
    with Session(home) as s:
        s.save(threaded(nid="1"), overwrite=True)  # (its row: LG#audit / C#_#1#)
    saver = Saver(home)
    source = uuid.uuid4().hex
    saver.put(_conf(source), {**empty_checkpoint(), "id": cid}, {"step": 0}, {})
    held = _items(home)
    conf = {"configurable": {"thread_id": thread, "checkpoint_ns": "", "checkpoint_id": cid}}
    calls: dict[str, Callable[[], Any]] = {
        "put": lambda: saver.put(_conf(thread), {**empty_checkpoint(), "id": cid}, {}, {}),
        "aput": lambda: asyncio.run(saver.aput(_conf(thread), {**empty_checkpoint(), "id": cid},
                                               {}, {})),
        "copy_thread": lambda: saver.copy_thread(source, thread),
        "put_writes": lambda: saver.put_writes(conf, [("c", 1)], "task"),
        "delete_thread": lambda: saver.delete_thread(thread),
        "prune": lambda: saver.prune([thread], strategy="delete")}
    try:
        calls[call]()
    except DynaormError as exc:
        assert isinstance(exc, KeyTemplateError)
        assert _items(home) == held
        return
    now = _items(home)
    assert not [i for i in set(now) - set(held) if _claimed(home, i)]
    assert [i for i in held if _claimed(home, i)] == [i for i in now if _claimed(home, i)]
