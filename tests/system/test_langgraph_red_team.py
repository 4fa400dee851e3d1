"""A red team of dynaorm.langgraph.Saver (issue 71, contract 23), on real engines: random
call sequences against LangGraph's own ``InMemorySaver`` (the model), tenants with hostile
ids, answers lost with another writer in the window, the limits of an item and a
transaction, a saver's state across processes and event loops, and what it stores being
what a save of its entities stores. Its own behaviour is in
tests/integration/test_langgraph_saver.py."""

from __future__ import annotations

import asyncio
import json
import os
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    Bundle,
    RuleBasedStateMachine,
    initialize,
    rule,
    run_state_machine_as_test,
)
from langgraph.checkpoint.base import CheckpointTuple, empty_checkpoint
from langgraph.checkpoint.memory import InMemorySaver

from dynaorm import (
    DynaormError,
    ItemTooLargeError,
    KeyTemplateError,
    ScopeError,
    Session,
    Table,
)
from dynaorm.langgraph import Saver
from dynaorm.testing import TestBackend, inject_faults, use_tables, worker_suffix
from tests.support.examples import examples

agents = Table("langgraph_red", ttl="expires_at")
# (sync only: the saver's own a... methods are its async variant)
# (moto and DynamoDB Local: what these attack does not depend on the engine beyond
# them, and CI has 30 minutes)
pytestmark = [pytest.mark.sync_only, pytest.mark.engines("moto", "local")]


def _canon(item: Any) -> str:
    """An item's text whatever order the engine gives its attributes in (dynoxide's
    scans order them anew)."""
    return json.dumps(item, sort_keys=True, default=repr)


@pytest.fixture
def tb(backend: str | None) -> Iterator[TestBackend]:
    with use_tables(agents, endpoint_url=backend, name_suffix=worker_suffix()) as found:
        yield found


def _tenant() -> dict[str, str]:
    return {"tenant_id": uuid.uuid4().hex}


def _checkpoint(cid: str, value: Any, version: int) -> Any:
    cp = empty_checkpoint()
    cp["id"] = cid
    cp["channel_values"], cp["channel_versions"] = {"m": value}, {"m": version}
    return cp


def _conf(thread: str, ns: str | None = "", cid: str | None = None) -> Any:
    conf: dict[str, Any] = {"thread_id": thread}
    if ns is not None:
        conf["checkpoint_ns"] = ns
    if cid is not None:
        conf["checkpoint_id"] = cid
    return {"configurable": conf}


def _seen(t: CheckpointTuple | None) -> Any:
    """What a tuple says, in a form both savers give alike (the model echoes the config it
    was asked with; only the checkpoint's own coordinates count)."""
    if t is None:
        return None
    conf = t.config["configurable"]
    parent = t.parent_config and t.parent_config["configurable"]["checkpoint_id"]
    return ((conf["thread_id"], conf.get("checkpoint_ns", ""), t.checkpoint["id"]),
            t.checkpoint["channel_values"], dict(t.metadata), parent,
            sorted(t.pending_writes or [], key=repr))


class Model(InMemorySaver):
    """InMemorySaver with the three extended capabilities it lacks, as the conformance
    suite defines them (copy keeps ids; delete_for_runs drops a run's checkpoints with
    their writes; prune keeps the latest checkpoint of each namespace, or none)."""

    def _drop(self, thread: str, ns: str, cid: str) -> None:
        self.storage[thread][ns].pop(cid, None)
        self.writes.pop((thread, ns, cid), None)

    def copy_thread(self, source: str, target: str) -> None:
        for ns, cps in list(self.storage.get(source, {}).items()):
            self.storage[target][ns].update(cps)
        for (thread, ns, cid), ws in list(self.writes.items()):
            if thread == source:
                self.writes[(target, ns, cid)].update(ws)
        for (thread, ns, ch, v), blob in list(self.blobs.items()):
            if thread == source:
                self.blobs[(target, ns, ch, v)] = blob

    def delete_for_runs(self, run_ids: Any) -> None:
        for thread, spaces in list(self.storage.items()):
            for ns, cps in list(spaces.items()):
                for cid, (_, meta, _) in list(cps.items()):
                    if self.serde.loads_typed(meta).get("run_id") in run_ids:
                        self._drop(thread, ns, cid)

    def prune(self, thread_ids: Any, *, strategy: str = "keep_latest") -> None:
        for thread in thread_ids:
            for ns, cps in list(self.storage.get(thread, {}).items()):
                for cid in sorted(cps)[:-1] if strategy == "keep_latest" else list(cps):
                    self._drop(thread, ns, cid)


THREADS = st.sampled_from(["a", "b", "é☃ long " + "x" * 300])
SPACES = st.sampled_from(["", "child:1", "child:1|grand:2"])
RUNS = st.sampled_from(["r1", "r2", "r3"])
ASYNC = st.booleans()


class Differential(RuleBasedStateMachine):
    """Each call on dynaorm's saver (sync or async, at random) and on the model; every
    answer compared. A tenant of its own per run: the table is shared, the rows are not."""

    saver: Saver
    puts = Bundle("puts")

    @initialize()
    def start(self) -> None:
        self.saver, self.model = Saver(agents, scope=_tenant()), Model()
        self.n = 0

    def call(self, use_async: bool, name: str, *args: Any, **kw: Any) -> Any:
        if not use_async:
            return getattr(self.saver, name)(*args, **kw)

        async def run() -> Any:
            if name == "list":
                return [t async for t in self.saver.alist(*args, **kw)]
            return await getattr(self.saver, "a" + name)(*args, **kw)
        return asyncio.run(run())  # (a new event loop each call)

    @rule(target=puts, thread=THREADS, ns=SPACES, run=RUNS, use_async=ASYNC,
          parent=st.booleans(), step=st.integers(-1, 3))
    def put(self, thread: str, ns: str, run: str, use_async: bool, parent: bool,
            step: int) -> Any:
        self.n += 1
        cid = f"{self.n:05d}"
        latest = self.model.get_tuple(_conf(thread, ns))
        conf = _conf(thread, ns, latest.checkpoint["id"] if parent and latest else None)
        args = (_checkpoint(cid, [run, self.n], self.n), {"source": "loop", "step": step,
                                                          "run_id": run}, {"m": self.n})
        got = self.call(use_async, "put", conf, *args)
        assert got == self.model.put(conf, *args)
        return got

    @rule(at=puts, task=st.sampled_from(["t1", "t2"]), use_async=ASYNC,
          channels=st.lists(st.sampled_from(["m", "other", "__error__", "__interrupt__"]),
                            min_size=1, max_size=4))
    def put_writes(self, at: Any, task: str, use_async: bool, channels: list[str]) -> None:
        self.n += 1  # (a task's second call writes other values: the first regular kept)
        writes = [(c, f"{task}:{c}:{i}:{self.n}") for i, c in enumerate(channels)]
        self.call(use_async, "put_writes", at, writes, task)
        self.model.put_writes(at, writes, task)

    @rule(at=puts, use_async=ASYNC, exact=st.booleans(), ns_given=st.booleans())
    def get_tuple(self, at: Any, use_async: bool, exact: bool, ns_given: bool) -> None:
        conf = at["configurable"]
        config = _conf(conf["thread_id"], conf["checkpoint_ns"] if ns_given else None,
                       conf["checkpoint_id"] if exact else None)
        assert _seen(self.call(use_async, "get_tuple", config)) == _seen(
            self.model.get_tuple(config))

    @rule(thread=st.none() | THREADS, ns=st.none() | SPACES, use_async=ASYNC,
          filter=st.none() | st.fixed_dictionaries({"run_id": RUNS}) | st.just({"step": 1}),
          before=st.none() | st.integers(1, 40), limit=st.none() | st.integers(0, 4))
    def list(self, thread: str | None, ns: str | None, use_async: bool,
             filter: dict[str, Any] | None, before: int | None, limit: int | None) -> None:
        config = None if thread is None else _conf(thread, ns)
        spread = config is None or ns is None  # (the model lists namespaces and threads
        # in the order it met them: compared as sets, without a limit)
        kw = {"filter": filter, "before": before and _conf("any", "", f"{before:05d}"),
              "limit": None if spread else limit}
        got = [_seen(t) for t in self.call(use_async, "list", config, **kw)]
        want = [_seen(t) for t in self.model.list(config, **kw)]
        if spread:
            got, want = sorted(got, key=repr), sorted(want, key=repr)
        assert got == want

    @rule(thread=THREADS, use_async=ASYNC)
    def delete_thread(self, thread: str, use_async: bool) -> None:
        self.call(use_async, "delete_thread", thread)
        self.model.delete_thread(thread)

    @rule(runs=st.lists(RUNS, max_size=2), use_async=ASYNC)
    def delete_for_runs(self, runs: list[str], use_async: bool) -> None:
        self.call(use_async, "delete_for_runs", runs)
        self.model.delete_for_runs(runs)

    @rule(source=THREADS, to=THREADS, use_async=ASYNC)
    def copy_thread(self, source: str, to: str, use_async: bool) -> None:
        self.call(use_async, "copy_thread", source, to)
        self.model.copy_thread(source, to)

    @rule(threads=st.lists(THREADS, max_size=2), use_async=ASYNC,
          strategy=st.sampled_from(["keep_latest", "delete"]))
    def prune(self, threads: list[str], use_async: bool, strategy: str) -> None:
        self.call(use_async, "prune", threads, strategy=strategy)
        self.model.prune(threads, strategy=strategy)


def test_every_call_answers_as_langgraphs_in_memory_saver(tb: TestBackend) -> None:
    """Random sequences of all eight capabilities, sync and async, answer as the model."""
    run_state_machine_as_test(Differential, settings=settings(
        max_examples=examples(int(os.environ.get("DYNAORM_RED_EXAMPLES", "25"))), deadline=None,
        stateful_step_count=14,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]))


def _put(saver: Any, thread: str, ns: str, cid: str, value: Any = "v", run: str = "r1",
         version: int = 1) -> Any:
    return saver.put(_conf(thread, ns), _checkpoint(cid, value, version),
                     {"source": "loop", "step": 0, "run_id": run}, {"m": version})


def test_get_tuple_without_a_namespace_reads_the_root_one(tb: TestBackend) -> None:
    """(found by the differential) ``get_tuple`` of a config without ``checkpoint_ns``
    reads the root namespace, as every LangGraph saver does: a subgraph's newer checkpoint
    (or one of the same id) is not the thread's state."""
    for saver in Saver(agents, scope=_tenant()), Model():
        _put(saver, "th", "", "1", "root")
        _put(saver, "th", "child:1", "2", "child")
        _put(saver, "th", "child:1", "1", "child's first")
        latest = saver.get_tuple(_conf("th", None))
        assert latest is not None and latest.checkpoint["channel_values"]["m"] == "root"
        one = asyncio.run(saver.aget_tuple(_conf("th", None, "1")))
        assert one is not None and one.checkpoint["channel_values"]["m"] == "root"
        assert saver.get_tuple(_conf("th", None, "2")) is None


def test_a_list_of_limit_0_or_below_answers_nothing(tb: TestBackend) -> None:
    """(found by the differential) ``list(limit=0)`` (or below) answers no checkpoint, as
    ``InMemorySaver``; it answered every one (the limit was checked after the first)."""
    for saver in Saver(agents, scope=_tenant()), Model():
        _put(saver, "th", "", "1")
        _put(saver, "th", "", "2")
        for limit, count in (0, 0), (-1, 0), (1, 1), (None, 2):
            assert len(list(saver.list(_conf("th"), limit=limit))) == count, (saver, limit)
            assert len(list(saver.list(None, limit=limit))) == count, (saver, limit)


def test_a_tasks_second_regular_write_keeps_the_first(tb: TestBackend) -> None:
    """(found by the differential) A task's regular write is kept as first written, as
    every LangGraph saver keeps it (only a special write, ``__interrupt__``..., is
    replaced); it was overwritten."""
    got = []
    for saver in Saver(agents, scope=_tenant()), Model():
        at = _put(saver, "th", "", "1")
        saver.put_writes(at, [("m", "first"), ("__interrupt__", "first")], "task")
        saver.put_writes(at, [("m", "second"), ("__interrupt__", "second")], "task")
        found = saver.get_tuple(at)
        got.append(sorted(found.pending_writes) if found else None)
    assert got[0] == got[1] == [("task", "__interrupt__", "second"), ("task", "m", "first")]


def test_a_task_with_more_writes_than_a_transaction_holds(tb: TestBackend) -> None:
    """A task of 101 writes (a node fanning out 101 Sends) is saved (one transaction a
    100) and read back whole, as the model reads it. (It was refused: one transaction.)"""
    saver, model = Saver(agents, scope=_tenant()), Model()
    writes = [("__pregel_tasks", f"send {i}") for i in range(150)]
    for s in saver, model:
        s.put_writes(_put(s, "th", "", "1"), writes, "task")
    assert _state(saver, "th") == _state(model, "th")
    found = saver.get_tuple(_conf("th"))
    assert found is not None and [w[2] for w in found.pending_writes] == [
        v for _, v in writes]


@pytest.mark.engines("moto")  # (the saver's own rows and commits: no engine's)
def test_a_task_s_writes_stopped_between_transactions_are_never_read_in_part(
        tb: TestBackend) -> None:
    """LangGraph takes a task with an output write as finished (its writes go back to it;
    it is not run again: ``langgraph.pregel._task_status``): a ``put_writes`` stopped
    between its transactions must never show part of the task's writes, else the rest are
    lost. None of them shows (the task runs again); run again, all of them, once. (150
    writes: stopped after the first transaction's 100, before its 50; a stop between
    two of three transactions, and a lost answer, are test_red_team_lg.py's
    test_put_writes_shows_all_of_a_task_or_none_and_tells_the_truth.)"""
    saver, model = Saver(agents, scope=_tenant()), Model()
    writes = [("__pregel_tasks", f"send {i}") for i in range(150)]
    for s in saver, model:
        s.put_writes(_put(s, "th", "", "1"), [("m", "other")], "other task")
    with inject_faults(agents) as faults:
        faults.server_error("TransactWriteItems", skip=1, times=None)
        with pytest.raises(DynaormError):
            saver.put_writes(_conf("th", "", "1"), writes, "task")
    assert faults.sent["TransactWriteItems"] > 2  # (the first 100 are in the table)
    assert len(tb.scan_raw(agents)) >= 102
    assert _state(saver, "th") == _state(model, "th")  # (the other task's write alone)
    assert saver.get_tuple(_conf("th")).pending_writes == [  # type: ignore[union-attr]
        ("other task", "m", "other")]
    for s in saver, model:
        s.put_writes(_conf("th", "", "1"), writes, "task")
    assert _state(saver, "th") == _state(model, "th")
    found = saver.get_tuple(_conf("th"))
    assert found is not None and len(found.pending_writes) == 151


HOSTILE = ["é☃", "ns|a:b", "_", "C", "W", "0", "-1", " ", "%23", "\u0000x", "a" * 900,
           "LG", "t1", "x\ny", "🙂" * 100]


@pytest.mark.parametrize("field", ["thread_id", "checkpoint_ns", "checkpoint_id", "task_id"])
def test_hostile_ids_round_trip_apart_or_are_refused_before_sending(
        tb: TestBackend, field: str) -> None:
    """Every id a key holds, with separator-like, unicode, long and control characters:
    what is accepted reads back as written, under no other id; what the grammar refuses
    (``#``, empty) is a KeyTemplateError before anything is sent."""
    saver = Saver(agents, scope=_tenant())
    ids = {"thread_id": "th", "checkpoint_ns": "", "checkpoint_id": "1", "task_id": "t"}
    for n, value in enumerate(HOSTILE):
        at = {**ids, field: value}
        if field != "checkpoint_id":
            at["checkpoint_id"] = str(n + 2)
        stored = _put(saver, at["thread_id"], at["checkpoint_ns"], at["checkpoint_id"],
                      value=value)
        saver.put_writes(stored, [("m", value)], at["task_id"])
    for n, value in enumerate(HOSTILE):
        at = {**ids, field: value}
        cid = value if field == "checkpoint_id" else str(n + 2)
        found = saver.get_tuple(_conf(at["thread_id"], at["checkpoint_ns"], cid))
        assert found is not None and found.checkpoint["channel_values"]["m"] == value
        assert found.pending_writes == [(at["task_id"], "m", value)]
        assert found.config["configurable"] == {"thread_id": at["thread_id"],
                                                "checkpoint_ns": at["checkpoint_ns"],
                                                "checkpoint_id": cid}
    assert len(list(saver.list(None))) == len(HOSTILE)
    stored = _put(saver, "th", "", "1")
    before = sorted(map(_canon, tb.scan_raw()))
    for bad in ("a#b", "#", "") if field != "checkpoint_ns" else ("a#b", "#"):
        at = {**ids, field: bad}
        with pytest.raises(KeyTemplateError, match=r"#|empty"):
            if field == "task_id":
                saver.put_writes(stored, [("m", 1)], bad)
            else:
                _put(saver, at["thread_id"], at["checkpoint_ns"], at["checkpoint_id"])
    assert sorted(map(_canon, tb.scan_raw())) == before


@pytest.mark.parametrize("tenant", ["t1#x", "", "t1#"])
def test_a_scope_value_a_key_cannot_hold_is_refused_when_the_saver_is_made(
        tb: TestBackend, tenant: str) -> None:
    """A tenant ``t1#x`` would render the keys of tenant ``t1``'s thread ``x#...``: the
    saver is refused when it is made (a ScopeError), not at its first call."""
    t1 = Saver(agents, scope={"tenant_id": "t1"})
    _put(t1, "x", "", "1")
    before = sorted(map(_canon, tb.scan_raw()))
    with pytest.raises(ScopeError, match="without '#'"):
        Saver(agents, scope={"tenant_id": tenant})
    assert sorted(map(_canon, tb.scan_raw())) == before


def test_tenants_with_the_same_hostile_ids_never_meet(tb: TestBackend) -> None:
    """t1 and t2 use the same thread, namespace, checkpoint, task and run ids (unicode,
    separator-like): each saver's every call sees and changes only its own rows, a copy
    to or from the other's thread included."""
    one, two = Saver(agents, scope={"tenant_id": "t1"}), Saver(agents, scope={"tenant_id": "t2"})
    thread, ns, run = "é|_:W-0", "child:1|x:2", "run é"
    for saver, who in (one, "one"), (two, "two"):
        at = _put(saver, thread, ns, "1", value=who, run=run)
        saver.put_writes(at, [("m", who)], "task é")
    mine = [_seen(t) for t in two.list(None)]
    theirs = sorted(map(_canon, (i for i in tb.scan_raw() if i["pk"]["S"].startswith("LG#t2#"))))
    assert [t.checkpoint["channel_values"]["m"] for t in one.list(None)] == ["one"]
    one.copy_thread(thread, "only t2 has it")  # (t1's own thread copied)
    one.copy_thread("only t2 has it", thread)
    two.copy_thread(thread, "only t2 has it")
    one.copy_thread("only t2 has it", "from t2?")  # t1's copy of the thread it made
    assert {t.config["configurable"]["thread_id"] for t in one.list(None)} == {
        thread, "only t2 has it", "from t2?"}
    assert all(t.checkpoint["channel_values"]["m"] == "one" for t in one.list(None))
    asyncio.run(one.adelete_for_runs([run]))
    one.prune([thread, "only t2 has it"], strategy="delete")
    one.delete_thread("from t2?")
    assert list(one.list(None)) == []
    assert sorted(map(_canon, (i for i in tb.scan_raw() if i["pk"]["S"].startswith(
        "LG#t2#") and "only t2" not in i["pk"]["S"]))) == theirs
    assert [_seen(t) for t in two.list(_conf(thread, None))] == mine


def _state(saver: Saver, thread: str) -> list[Any]:
    return [_seen(t) for t in saver.list(_conf(thread, None))]


@pytest.mark.parametrize("use_async", [False, True])
def test_a_put_whose_answer_is_lost_with_another_writer_in_the_window(
        tb: TestBackend, use_async: bool) -> None:
    """The engine applied the put, then its answer was lost; meanwhile another process
    wrote the next checkpoint of the thread and a write on ours. Whatever the caller is
    told is true, and the thread holds each checkpoint and write once, as the model does
    after the same calls."""
    scope = _tenant()
    saver, other, model = Saver(agents, scope=scope), Saver(agents, scope=scope), Model()
    first = _put(saver, "th", "", "1")
    _put(model, "th", "", "1")

    def in_the_window() -> None:
        for s in other, model:
            nxt = s.put(_conf("th", "", "2"), _checkpoint("3", "other's", 3),
                        {"source": "loop", "step": 1, "run_id": "r1"}, {"m": 3})
            s.put_writes(nxt, [("m", "w")], "other task")
    args = (_conf("th", "", "1"), _checkpoint("2", "mine", 2),
            {"source": "loop", "step": 1, "run_id": "r1"}, {"m": 2})
    with inject_faults(agents) as faults:
        faults.lose_answer("PutItem", after=in_the_window)
        try:
            told = asyncio.run(saver.aput(*args)) if use_async else saver.put(*args)
        except Exception as exc:  # (whatever it says must be true)
            told = exc
    assert faults.sent["PutItem"] == 3  # (mine lost, the other's, mine sent again)
    model.put(*args)
    assert first["configurable"]["checkpoint_id"] == "1"
    if isinstance(told, Exception):  # (told it may not have happened: it did)
        assert "unknown" in type(told).__name__.lower() or "outcome" in str(told).lower()
    else:
        assert told == _conf("th", "", "2")
    assert _state(saver, "th") == _state(model, "th")


@pytest.mark.parametrize("use_async", [False, True])
def test_put_writes_whose_answer_is_lost_with_another_writer_in_the_window(
        tb: TestBackend, use_async: bool) -> None:
    """A task's writes applied, their answer lost; in the window another worker wrote the
    same task's interrupt anew and another task's write. After the retry: no write twice,
    none lost, the caller told nothing untrue."""
    scope = _tenant()
    saver, other, model = Saver(agents, scope=scope), Saver(agents, scope=scope), Model()
    at = _put(saver, "th", "", "1")
    _put(model, "th", "", "1")
    mine = [("m", "mine"), ("__interrupt__", "mine")]

    def in_the_window() -> None:
        for s in other, model:
            s.put_writes(at, mine, "task")
            s.put_writes(at, [("m", "theirs")], "other task")
    with inject_faults(agents) as faults:
        faults.lose_answer("TransactWriteItems", after=in_the_window)
        try:
            told = (asyncio.run(saver.aput_writes(at, mine, "task")) if use_async
                    else saver.put_writes(at, mine, "task"))
        except Exception as exc:
            told = exc
    assert faults.sent["TransactWriteItems"] == 3  # (mine lost, the other's, mine again)
    if not isinstance(told, Exception):
        model.put_writes(at, mine, "task")
    else:
        assert "unknown" in type(told).__name__.lower() or "outcome" in str(told).lower()
    assert _state(saver, "th") == _state(model, "th")
    found = saver.get_tuple(at)
    assert found is not None and len(found.pending_writes) == 3


def test_checkpoints_at_the_item_limit_and_blobs_of_every_serde_type(tb: TestBackend) -> None:
    """Values of every type LangGraph's serializer keeps read back equal (as from the
    model); incompressible state just under DynamoDB's 400 KB is kept, just over refused
    before anything is sent; a put_writes over the item limit likewise."""
    import datetime as dt
    import decimal
    import enum
    from dataclasses import dataclass

    from langchain_core.messages import AIMessage, HumanMessage
    from langgraph.types import Interrupt, Send
    from pydantic import BaseModel

    class Colour(enum.Enum):
        RED = "red"

    class Note(BaseModel):
        text: str

    @dataclass
    class Point:
        x: int

    values = [None, True, 3, 2.5, "s", b"\x00\xff", bytearray(b"ba"), (1, "t"), {1, 2},
              frozenset({"f"}), {"nested": [1, {"k": b"v"}]}, decimal.Decimal("1.10"),
              dt.datetime(2026, 1, 2, 3, 4, tzinfo=dt.UTC), dt.date(2026, 1, 2),
              dt.timedelta(seconds=5), uuid.UUID(int=7), Colour.RED, Note(text="n"),
              Point(1), HumanMessage("hi"), AIMessage("yo", id="1"), Send("node", {"a": 1}),
              Interrupt(value="ask", id="i1"), "é☃" * 1000]
    saver, model = Saver(agents, scope=_tenant()), Model()
    for s in saver, model:
        for n, value in enumerate(values):
            at = _put(s, "th", "", f"{n:03d}", value=value, version=n + 1)
            s.put_writes(at, [("m", value)], "task")
    for n, _ in enumerate(values):
        conf = _conf("th", "", f"{n:03d}")
        assert _seen(saver.get_tuple(conf)) == _seen(model.get_tuple(conf))
    kept = _put(saver, "big", "", "1", value=os.urandom(390_000))
    assert saver.get_tuple(kept) is not None
    before = sorted(map(_canon, tb.scan_raw()))
    with pytest.raises(ItemTooLargeError):
        _put(saver, "big", "", "2", value=os.urandom(410_000))
    with pytest.raises(ItemTooLargeError):
        saver.put_writes(kept, [("m", b"1"), ("o", os.urandom(410_000))], "task")
    assert sorted(map(_canon, tb.scan_raw())) == before


def test_what_it_stores_is_what_a_save_of_its_entities_stores(tb: TestBackend) -> None:
    """Every row the saver wrote, read back as its entity and saved by a plain Session
    under another thread id, is the same item but for the key: nothing beside the model."""
    scope = _tenant()
    saver = Saver(agents, scope=scope, ttl=None)
    at = _put(saver, "th", "child:1", "1", value=["m"] * 50)
    saver.put_writes(at, [("m", "w"), ("__interrupt__", "i")], "task")
    with Session(agents, scope=scope) as s:
        rows = s.query(saver.cp, saver.w, **scope, thread_id="th").all()
        assert len(rows) == 3
        for r in rows:
            s.save(type(r)(**{**dict(r), "thread_id": "again"}))
    pk = f"LG#{scope['tenant_id']}#"
    again = {i["sk"]["S"]: i for i in tb.scan_raw() if i["pk"]["S"] == pk + "again"}
    mine = [i for i in tb.scan_raw() if i["pk"]["S"] == pk + "th"]
    assert len(mine) == len(again) == 3
    for item in mine:
        differ = {"pk": None, "thread_id": None, "_rev": None}  # (_rev: each write's own)
        assert {**item, **differ} == {**again[item["sk"]["S"]], **differ}


def test_one_saver_on_two_event_loops_at_once_and_after_a_fork(tb: TestBackend) -> None:
    """One saver driven by two threads, each with its own event loop, at once; then a
    forked process putting through the saver it inherited (on an engine of its own
    process: DynamoDB Local)."""
    import multiprocessing
    import threading

    saver = Saver(agents, scope=_tenant())
    errors: list[BaseException] = []

    def work(who: str) -> None:
        async def run() -> None:
            for n in range(5):
                at = await saver.aput(_conf(who), _checkpoint(f"{n:03d}", who, n + 1),
                                      {"source": "loop", "step": n}, {"m": n + 1})
                await saver.aput_writes(at, [("m", n)], "task")
                assert (await saver.aget_tuple(_conf(who))).checkpoint["id"] == f"{n:03d}"
        try:
            asyncio.run(run())
        except BaseException as exc:  # (reported below)
            errors.append(exc)
    threads = [threading.Thread(target=work, args=(w,)) for w in ("one", "two")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert [len(list(saver.list(_conf(w)))) for w in ("one", "two")] == [5, 5]
    if tb.endpoint_url is None:
        return  # (moto lives in this process: a child's writes would stay in the child)
    child = multiprocessing.get_context("fork").Process(
        target=lambda: _put(saver, "forked", "", "1", value="child's"))
    child.start()
    child.join(60)
    assert child.exitcode == 0
    found = saver.get_tuple(_conf("forked"))
    assert found is not None and found.checkpoint["channel_values"]["m"] == "child's"


def test_delete_for_runs_of_more_run_ids_than_one_filter_holds(tb: TestBackend) -> None:
    """DynamoDB's IN takes at most 100 values: 150 run ids (and one of them ours) still
    delete that run's checkpoints, and only them."""
    saver = Saver(agents, scope=_tenant())
    for n in range(3):
        _put(saver, "th", "", f"{n}", run=f"r{n}")
    saver.delete_for_runs([f"x{i}" for i in range(149)] + ["r1"])
    assert [t.checkpoint["id"] for t in saver.list(_conf("th"))] == ["2", "0"]
