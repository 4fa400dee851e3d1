"""dynaorm.langgraph.Saver's own behaviour on every engine (issue 71, contract 23): tenants
kept apart by scope, a put is one write, a task's retry writes once, large checkpoints
compressed and one too large refused, TTL, and its rows as entities of the model (``iam``,
exports, ``check``). LangGraph's conformance suite runs in test_langgraph_conformance.py;
the example graph resuming after a restart in tests/system/test_langgraph_agent.py."""

from __future__ import annotations

import asyncio
import copy
import importlib
import json
import multiprocessing
import operator
import os
import pickle
import sys
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Annotated, Any, TypedDict

import pytest
from hypothesis import HealthCheck, given, settings
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
from langgraph.graph import START, StateGraph

import dynaorm
from dynaorm import DynaormError, ItemTooLargeError, KeyTemplateError, ScopeError, Session, Table
from dynaorm.formats import iam
from dynaorm.jobs import export, run_local
from dynaorm.jobs.checking import check_table
from dynaorm.langgraph import Saver, Store
from dynaorm.testing import TestBackend, inject_faults, use_tables, worker_suffix
from tests.support import langgraph_tables
from tests.support.concurrency import join_all
from tests.support.engines import on_engine
from tests.support.examples import examples
from tests.support.langgraph_tables import lg_agents
from tests.support.raw import raw_items
from tests.support.recording import Requests

agents = Table("langgraph_saver", ttl="expires_at")
T1, T2 = {"tenant_id": "t1"}, {"tenant_id": "t2"}


@pytest.fixture
def tb(backend: str | None) -> Iterator[TestBackend]:
    yield from on_engine(backend, agents)


def _put(saver: Saver, thread: str, value: Any, *, run: str = "r1", ns: str = "",
         parent: str | None = None) -> dict[str, Any]:
    cp = empty_checkpoint()
    cp["channel_values"], cp["channel_versions"] = {"messages": value}, {"messages": 1}
    conf: dict[str, Any] = {"thread_id": thread, "checkpoint_ns": ns}
    if parent:
        conf["checkpoint_id"] = parent
    return dict(saver.put({"configurable": conf}, cp, {"source": "loop", "step": 0,
                                                        "run_id": run}, {"messages": 1}))


def _values(saver: Saver, thread: str) -> list[Any]:
    return [t.checkpoint["channel_values"]["messages"]
            for t in saver.list({"configurable": {"thread_id": thread}})]


def test_a_tenant_never_reads_lists_copies_or_deletes_another_tenants_thread(
        tb: TestBackend) -> None:
    """Two tenants with the same thread id and run id: every call of t1's saver (sync and
    async) acts on t1's rows only; t2's are as they were."""
    one, two = Saver(agents, scope=T1), Saver(agents, scope=T2)
    _put(one, "th", "t1's")
    first = _put(two, "th", "t2's")
    two.put_writes(first, [("messages", "t2's write")], "task")
    assert _values(one, "th") == ["t1's"] and _values(two, "th") == ["t2's"]
    assert [t.config["configurable"]["thread_id"] for t in one.list(None)] == ["th"]
    assert one.get_tuple({"configurable": {**first["configurable"]}}) is None
    one.copy_thread("th", "copy")
    asyncio.run(one.acopy_thread("th", "copy2"))
    assert _values(one, "copy") == _values(one, "copy2") == ["t1's"]
    assert _values(two, "copy") == _values(two, "copy2") == []
    one.prune(["th"], strategy="delete")
    one.delete_for_runs(["r1"])
    asyncio.run(one.adelete_thread("th"))
    assert _values(one, "th") == []
    kept = two.get_tuple({"configurable": {"thread_id": "th", "checkpoint_ns": ""}})
    assert kept is not None and kept.checkpoint["channel_values"]["messages"] == "t2's"
    assert kept.pending_writes == [("task", "messages", "t2's write")]
    assert {i["pk"]["S"] for i in tb.scan_raw()} == {"LG#t2#th"}  # (the copies deleted too)


THREADS = st.sampled_from(["th", "other"])
OPS = st.lists(st.one_of(
    st.tuples(st.just("put"), THREADS), st.tuples(st.just("writes"), THREADS),
    st.tuples(st.just("copy"), THREADS, THREADS), st.tuples(st.just("delete"), THREADS),
    st.tuples(st.just("prune"), THREADS, st.sampled_from(["keep_latest", "delete"])),
    st.tuples(st.just("runs"), st.sampled_from(["r1", "r2"]))), max_size=6)


@settings(max_examples=examples(12), deadline=None, suppress_health_check=[
    HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(ops=OPS)
def test_no_call_of_one_tenant_ever_changes_another_tenants_rows(
        tb: TestBackend, ops: list[tuple[Any, ...]]) -> None:
    """Whatever t1's saver does, on thread ids and run ids t2 uses too, t2's rows stay
    exactly as they were (what must never happen, as a property)."""
    one, two = Saver(agents, scope=T1), Saver(agents, scope=T2)
    two.put_writes(_put(two, "th", "t2's", run="r1"), [("messages", "w")], "task")
    before = [i for i in tb.scan_raw() if i["pk"]["S"].startswith("LG#t2#")]
    for op, *args in ops:
        if op == "put":
            _put(one, args[0], "t1's", run="r1")
        elif op == "writes":
            one.put_writes({"configurable": {"thread_id": args[0], "checkpoint_ns": "",
                                             "checkpoint_id": "c"}}, [("m", 1)], "task")
        elif op == "copy":
            one.copy_thread(*args)
        elif op == "delete":
            one.delete_thread(args[0])
        elif op == "prune":
            one.prune([args[0]], strategy=args[1])
        else:
            one.delete_for_runs([args[0]])
    assert [i for i in tb.scan_raw() if i["pk"]["S"].startswith("LG#t2#")] == before


def test_a_put_is_one_write_and_reading_it_back_one_query(tb: TestBackend) -> None:
    """The checkpoint with its channel values is one item: one PutItem; a task's writes
    one commit. The latest checkpoint is one Query of one row (a finished turn's has no
    writes: its row is the thread's newest); with writes, a second Query reads just its
    rows; a checkpoint by id, one Query of its rows (issue 83: a get_tuple by id read the
    thread from its newest row, three a request)."""
    saver = Saver(agents, scope=T1)
    rec = Requests(agents)
    first = _put(saver, "th", ["m"] * 5)
    assert rec.operations == ["PutItem"]
    saver.put_writes(first, [("messages", "a"), ("next", "b")], "task")
    assert rec.operations[1:] == ["TransactWriteItems"]
    stored = _put(saver, "th", ["m"] * 6, parent=first["configurable"]["checkpoint_id"])
    rec.clear()
    latest = asyncio.run(saver.aget_tuple({"configurable": {"thread_id": "th"}}))
    assert rec.operations == ["Query"] and rec.calls[0][1]["Limit"] == 1
    assert latest is not None and latest.config == stored and latest.pending_writes == []
    saver.put_writes(stored, [("messages", "c")], "task")
    rec.clear()
    latest = saver.get_tuple({"configurable": {"thread_id": "th"}})
    assert rec.operations == ["Query", "Query"]
    assert latest is not None and latest.pending_writes == [("task", "messages", "c")]
    rec.clear()
    found = saver.get_tuple(first)
    assert rec.operations == ["Query"]
    assert found is not None and found.config == first
    assert found.pending_writes == [("task", "messages", "a"), ("task", "next", "b")]


def test_a_retried_task_writes_once(tb: TestBackend) -> None:
    saver = Saver(agents, scope=T1)
    stored = _put(saver, "th", "v")
    for _ in range(2):  # (the task's retry)
        saver.put_writes(stored, [("messages", "a"), ("__error__", "boom")], "task")
    found = saver.get_tuple(stored)
    assert found is not None
    assert sorted(found.pending_writes) == [("task", "__error__", "boom"),
                                            ("task", "messages", "a")]


@pytest.mark.parametrize("how", ["prune", "delete_for_runs"])
def test_a_prune_racing_a_run_keeps_the_runs_writes_ahead_of_its_checkpoint(
        tb: TestBackend, how: str) -> None:
    """Red team of issue 90 (a plain saver): run r2's task writes land before its
    checkpoint (LangGraph's background writes), then prune(keep_latest) or a
    delete_for_runs of another run runs, then r2's checkpoint is put. Its writes must be
    read with it, as before the lease changes (and as a saver without leases does):
    they are a live run's, not strays (a single-writer run is refused instead)."""
    saver = Saver(agents, scope=T1)
    _put(saver, "th", "old", run="r0")
    head = _put(saver, "th", "kept", run="r1", parent=_put(saver, "th", "mid", run="r0")[
        "configurable"]["checkpoint_id"])
    cp = empty_checkpoint()
    ahead: Any = {"configurable": {"thread_id": "th", "checkpoint_ns": "",
                                   "checkpoint_id": cp["id"]}}
    saver.put_writes(ahead, [("messages", "done")], "task-r2")
    if how == "prune":
        saver.prune(["th"])
    else:
        saver.delete_for_runs(["r0"])
    stored = saver.put(head, cp, {"source": "loop", "step": 1, "run_id": "r2"}, {})
    found = saver.get_tuple(stored)
    assert found is not None and found.pending_writes == [("task-r2", "messages", "done")]


def test_a_thread_of_large_checkpoints_is_copied_and_deleted_whole(tb: TestBackend) -> None:
    """Red team of issue 90: copies and deletes are commits of up to 100 rows; a thread of
    12 checkpoints of 360 KB each (values that do not compress) is more than one
    transaction's 4 MB. Before, copy_thread raised TransactionTooLargeError with part
    of the thread copied. Copied whole, then deleted whole."""
    saver = Saver(agents, scope=T1)
    config: Any = None
    for _ in range(12):
        config = _put(saver, "th", os.urandom(360_000), parent=config and config[
            "configurable"]["checkpoint_id"])
    saver.copy_thread("th", "copy")
    assert [len(v) for v in _values(saver, "copy")] == [360_000] * 12
    saver.delete_thread("copy")
    assert _values(saver, "copy") == [] and len(_values(saver, "th")) == 12


def test_a_tasks_writes_past_a_transactions_4_mb_are_stored(tb: TestBackend) -> None:
    """Red team of issue 90: a task's 12 writes of 360 KB each (tool outputs that do not
    compress) are each under an item's 400 KB, together past a transaction's 4 MB.
    Before, put_writes raised TransactionTooLargeError (the task could never finish).
    Written by commits, read back whole."""
    saver = Saver(agents, scope=T1)
    stored = _put(saver, "th", "v")
    saver.put_writes(stored, [("messages", os.urandom(360_000)) for _ in range(12)], "task")
    found = saver.get_tuple(stored)
    assert found is not None and [len(w[2]) for w in found.pending_writes] == [360_000] * 12
    saver.put_writes(stored, [("messages", "the same text " * 300_000)], "long")  # (4 MB
    found = saver.get_tuple(stored)  # that compress into one item)
    assert found is not None and len(found.pending_writes) == 13


def test_a_large_checkpoint_is_compressed_and_one_too_large_refused(tb: TestBackend) -> None:
    """1 MB of messages that compress fit one item and read back whole; 500 KB that do not
    compress are refused with ItemTooLargeError, before anything is sent."""
    saver = Saver(agents, scope=T1)
    big = ["the same long message, again and again " * 40] * 700
    stored = _put(saver, "th", big)
    assert len(repr(big)) > 1_000_000
    found = saver.get_tuple(stored)
    assert found is not None and found.checkpoint["channel_values"]["messages"] == big
    rec = Requests(agents)
    with pytest.raises(ItemTooLargeError, match="409600 byte item limit"):
        _put(saver, "noise", os.urandom(500_000))
    assert rec.operations == [] and _values(saver, "noise") == []


def test_ttl_stamps_every_row_it_writes(tb: TestBackend) -> None:
    saver = Saver(agents, scope=T1, ttl=timedelta(hours=1))
    stored = _put(saver, "th", "v")
    saver.put_writes(stored, [("messages", "a")], "task")
    saver.copy_thread("th", "copy")
    items = tb.scan_raw()
    assert len(items) == 4
    for item in items:
        assert abs(int(item["expires_at"]["N"]) - (time.time() + 3600)) < 60


@pytest.mark.engines("moto")
@pytest.mark.parametrize("ttl", [timedelta(hours=1), 3600, 3600.0, {"default_ttl": 60},
                                 {"default_ttl": 60, "strategy": "delete",
                                  "sweep_interval_minutes": 5}])
def test_ttl_is_a_timedelta_seconds_or_langgraphs_ttl_config(tb: TestBackend, ttl: Any) -> None:
    """Issue 81: ``ttl={"default_ttl": 60}`` (LangGraph's TTL config, minutes) was accepted
    and every put then raised AttributeError; each form stamps an hour."""
    saver = Saver(agents, scope=T1, ttl=ttl)
    saver.put_writes(_put(saver, "th", "v"), [("messages", "a")], "task")
    items = tb.scan_raw()
    assert len(items) == 2
    for item in items:
        assert abs(int(item["expires_at"]["N"]) - (time.time() + 3600)) < 60


@pytest.mark.parametrize("ttl, error, match", [
    ("1h", TypeError, "timedelta, seconds or LangGraph's TTL config"),
    (True, TypeError, "timedelta, seconds"), (0, ValueError, "positive"),
    (timedelta(0), ValueError, "positive"), (-5.0, ValueError, "positive"),
    ({"default_ttl": 60, "refresh": True}, ValueError, r"unknown keys \['refresh'\]"),
    ({"default_ttl": "60"}, TypeError, "must be a number"),
    ({"strategy": "delete"}, ValueError, "needs default_ttl"),
    ({"default_ttl": 60, "strategy": "keep_latest"}, ValueError, "strategy 'keep_latest'")])
def test_a_ttl_neither_form_takes_is_refused_when_the_saver_is_made(
        ttl: Any, error: type[Exception], match: str) -> None:
    with pytest.raises(error, match=match):
        Saver(Table("langgraph_ttl_forms", ttl="expires_at"), ttl=ttl)


def test_what_a_saver_cannot_do_is_refused() -> None:
    with pytest.raises(DynaormError, match="no TTL attribute"):
        Saver(Table("langgraph_no_ttl"), ttl=timedelta(days=1))
    with pytest.raises(DynaormError, match="sort key"):
        Saver(Table("langgraph_pk_only", sk=None))
    scoped = Table("langgraph_scoped")
    Saver(scoped, scope=T1)
    with pytest.raises(DynaormError, match="same scope fields"):
        Saver(scoped)
    with pytest.raises(DynaormError, match="unknown strategy"):
        Saver(scoped, scope=T1).prune(["th"], strategy="oldest")


def test_its_rows_are_in_the_model_iam_exports_and_check(tb: TestBackend,
                                                         tmp_path: Path) -> None:
    saver = Saver(agents, scope=T1, single_writer=True)
    saver.put_writes(_put(saver, "th", "v"), [("messages", "a")], "task")
    model = agents.model()
    assert {"LangGraphCheckpoint", "LangGraphWrite", "LangGraphLease"} <= {
        e["name"] for e in model["entities"]}
    policy, uncovered = iam.to_format(model, "write", scope="tenant_id")
    assert uncovered == []
    assert "LG#${aws:PrincipalTag/tenant_id}#*" in policy["Statement"][0]["Condition"][
        "ForAllValues:StringLike"]["dynamodb:LeadingKeys"]
    report = run_local(export(agents, tmp_path))
    assert report.rows == {"LangGraphCheckpoint": 1, "LangGraphWrite": 1, "LangGraphLease": 1}
    assert report.unclaimed == {} and report.failed == 0
    assert check_table(agents).problems == []


# --- random call sequences against InMemorySaver; lost answers; limits
# (moved from system/test_langgraph_red_team.py:
# A red team of dynaorm.langgraph.Saver (issue 71, contract 23), on real engines: random
# call sequences against LangGraph's own ``InMemorySaver`` (the model), tenants with hostile
# ids, answers lost with another writer in the window, the limits of an item and a
# transaction, a saver's state across processes and event loops, and what it stores being
# what a save of its entities stores. Its own behaviour is in
# tests/integration/test_langgraph_saver.py.)

graphs = Table("langgraph_red", ttl="expires_at")
# (sync only: the saver's own a... methods are its async variant)
# (moto and DynamoDB Local: what these attack does not depend on the engine beyond
# them, and CI has 30 minutes)


def _canon(item: Any) -> str:
    """An item's text whatever order the engine gives its attributes in (dynoxide's
    scans order them anew)."""
    return json.dumps(item, sort_keys=True, default=repr)


@pytest.fixture
def gtb(backend: str | None) -> Iterator[TestBackend]:
    yield from on_engine(backend, graphs)


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


THREAD_IDS = st.sampled_from(["a", "b", "é☃ long " + "x" * 300])
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
        self.saver, self.model = Saver(graphs, scope=_tenant()), Model()
        self.n = 0

    def call(self, use_async: bool, name: str, *args: Any, **kw: Any) -> Any:
        if not use_async:
            return getattr(self.saver, name)(*args, **kw)

        async def run() -> Any:
            if name == "list":
                return [t async for t in self.saver.alist(*args, **kw)]
            return await getattr(self.saver, "a" + name)(*args, **kw)
        return asyncio.run(run())  # (a new event loop each call)

    @rule(target=puts, thread=THREAD_IDS, ns=SPACES, run=RUNS, use_async=ASYNC,
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

    @rule(thread=st.none() | THREAD_IDS, ns=st.none() | SPACES, use_async=ASYNC,
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

    @rule(thread=THREAD_IDS, use_async=ASYNC)
    def delete_thread(self, thread: str, use_async: bool) -> None:
        self.call(use_async, "delete_thread", thread)
        self.model.delete_thread(thread)

    @rule(runs=st.lists(RUNS, max_size=2), use_async=ASYNC)
    def delete_for_runs(self, runs: list[str], use_async: bool) -> None:
        self.call(use_async, "delete_for_runs", runs)
        self.model.delete_for_runs(runs)

    @rule(source=THREAD_IDS, to=THREAD_IDS, use_async=ASYNC)
    def copy_thread(self, source: str, to: str, use_async: bool) -> None:
        self.call(use_async, "copy_thread", source, to)
        self.model.copy_thread(source, to)

    @rule(threads=st.lists(THREAD_IDS, max_size=2), use_async=ASYNC,
          strategy=st.sampled_from(["keep_latest", "delete"]))
    def prune(self, threads: list[str], use_async: bool, strategy: str) -> None:
        self.call(use_async, "prune", threads, strategy=strategy)
        self.model.prune(threads, strategy=strategy)


@pytest.mark.sync_only
@pytest.mark.engines('moto', 'local')
def test_every_call_answers_as_langgraphs_in_memory_saver(gtb: TestBackend) -> None:
    """Random sequences of all eight capabilities, sync and async, answer as the model."""
    run_state_machine_as_test(Differential, settings=settings(
        max_examples=examples(int(os.environ.get("DYNAORM_RED_EXAMPLES", "25"))), deadline=None,
        stateful_step_count=14,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]))


def _put_at(saver: Any, thread: str, ns: str, cid: str, value: Any = "v", run: str = "r1",
         version: int = 1) -> Any:
    return saver.put(_conf(thread, ns), _checkpoint(cid, value, version),
                     {"source": "loop", "step": 0, "run_id": run}, {"m": version})


@pytest.mark.sync_only
@pytest.mark.engines('moto', 'local')
def test_get_tuple_without_a_namespace_reads_the_root_one(gtb: TestBackend) -> None:
    """(found by the differential) ``get_tuple`` of a config without ``checkpoint_ns``
    reads the root namespace, as every LangGraph saver does: a subgraph's newer checkpoint
    (or one of the same id) is not the thread's state."""
    for saver in Saver(graphs, scope=_tenant()), Model():
        _put_at(saver, "th", "", "1", "root")
        _put_at(saver, "th", "child:1", "2", "child")
        _put_at(saver, "th", "child:1", "1", "child's first")
        latest = saver.get_tuple(_conf("th", None))
        assert latest is not None and latest.checkpoint["channel_values"]["m"] == "root"
        one = asyncio.run(saver.aget_tuple(_conf("th", None, "1")))
        assert one is not None and one.checkpoint["channel_values"]["m"] == "root"
        assert saver.get_tuple(_conf("th", None, "2")) is None


@pytest.mark.sync_only
@pytest.mark.engines('moto', 'local')
def test_a_list_of_limit_0_or_below_answers_nothing(gtb: TestBackend) -> None:
    """(found by the differential) ``list(limit=0)`` (or below) answers no checkpoint, as
    ``InMemorySaver``; it answered every one (the limit was checked after the first)."""
    for saver in Saver(graphs, scope=_tenant()), Model():
        _put_at(saver, "th", "", "1")
        _put_at(saver, "th", "", "2")
        for limit, count in (0, 0), (-1, 0), (1, 1), (None, 2):
            assert len(list(saver.list(_conf("th"), limit=limit))) == count, (saver, limit)
            assert len(list(saver.list(None, limit=limit))) == count, (saver, limit)


@pytest.mark.sync_only
@pytest.mark.engines('moto', 'local')
def test_a_tasks_second_regular_write_keeps_the_first(gtb: TestBackend) -> None:
    """(found by the differential) A task's regular write is kept as first written, as
    every LangGraph saver keeps it (only a special write, ``__interrupt__``..., is
    replaced); it was overwritten."""
    got = []
    for saver in Saver(graphs, scope=_tenant()), Model():
        at = _put_at(saver, "th", "", "1")
        saver.put_writes(at, [("m", "first"), ("__interrupt__", "first")], "task")
        saver.put_writes(at, [("m", "second"), ("__interrupt__", "second")], "task")
        found = saver.get_tuple(at)
        got.append(sorted(found.pending_writes) if found else None)
    assert got[0] == got[1] == [("task", "__interrupt__", "second"), ("task", "m", "first")]


@pytest.mark.sync_only
@pytest.mark.engines('moto', 'local')
def test_a_task_with_more_writes_than_a_transaction_holds(gtb: TestBackend) -> None:
    """A task of 101 writes (a node fanning out 101 Sends) is saved (one transaction a
    100) and read back whole, as the model reads it. (It was refused: one transaction.)"""
    saver, model = Saver(graphs, scope=_tenant()), Model()
    writes = [("__pregel_tasks", f"send {i}") for i in range(150)]
    for s in saver, model:
        s.put_writes(_put_at(s, "th", "", "1"), writes, "task")
    assert _state(saver, "th") == _state(model, "th")
    found = saver.get_tuple(_conf("th"))
    assert found is not None and [w[2] for w in found.pending_writes] == [
        v for _, v in writes]


@pytest.mark.sync_only
@pytest.mark.engines("moto")  # (the saver's own rows and commits: no engine's)
def test_a_task_s_writes_stopped_between_transactions_are_never_read_in_part(
        gtb: TestBackend) -> None:
    """LangGraph takes a task with an output write as finished (its writes go back to it;
    it is not run again: ``langgraph.pregel._task_status``): a ``put_writes`` stopped
    between its transactions must never show part of the task's writes, else the rest are
    lost. None of them shows (the task runs again); run again, all of them, once. (150
    writes: stopped after the first transaction's 100, before its 50; a stop between
    two of three transactions, and a lost answer, are
    test_put_writes_shows_all_of_a_task_or_none_and_tells_the_truth's, below.)"""
    saver, model = Saver(graphs, scope=_tenant()), Model()
    writes = [("__pregel_tasks", f"send {i}") for i in range(150)]
    for s in saver, model:
        s.put_writes(_put_at(s, "th", "", "1"), [("m", "other")], "other task")
    with inject_faults(graphs) as faults:
        faults.server_error("TransactWriteItems", skip=1, times=None)
        with pytest.raises(DynaormError):
            saver.put_writes(_conf("th", "", "1"), writes, "task")
    assert faults.sent["TransactWriteItems"] > 2  # (the first 100 are in the table)
    assert len(gtb.scan_raw(graphs)) >= 102
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


@pytest.mark.sync_only
@pytest.mark.engines('moto', 'local')
@pytest.mark.parametrize("field", ["thread_id", "checkpoint_ns", "checkpoint_id", "task_id"])
def test_hostile_ids_round_trip_apart_or_are_refused_before_sending(
        gtb: TestBackend, field: str) -> None:
    """Every id a key holds, with separator-like, unicode, long and control characters:
    what is accepted reads back as written, under no other id; what the grammar refuses
    (``#``, empty) is a KeyTemplateError before anything is sent."""
    saver = Saver(graphs, scope=_tenant())
    ids = {"thread_id": "th", "checkpoint_ns": "", "checkpoint_id": "1", "task_id": "t"}
    for n, value in enumerate(HOSTILE):
        at = {**ids, field: value}
        if field != "checkpoint_id":
            at["checkpoint_id"] = str(n + 2)
        stored = _put_at(saver, at["thread_id"], at["checkpoint_ns"], at["checkpoint_id"],
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
    stored = _put_at(saver, "th", "", "1")
    before = sorted(map(_canon, gtb.scan_raw()))
    for bad in ("a#b", "#", "") if field != "checkpoint_ns" else ("a#b", "#"):
        at = {**ids, field: bad}
        with pytest.raises(KeyTemplateError, match=r"#|empty"):
            if field == "task_id":
                saver.put_writes(stored, [("m", 1)], bad)
            else:
                _put_at(saver, at["thread_id"], at["checkpoint_ns"], at["checkpoint_id"])
    assert sorted(map(_canon, gtb.scan_raw())) == before


@pytest.mark.sync_only
@pytest.mark.engines('moto', 'local')
@pytest.mark.parametrize("tenant", ["t1#x", "", "t1#"])
def test_a_scope_value_a_key_cannot_hold_is_refused_when_the_saver_is_made(
        gtb: TestBackend, tenant: str) -> None:
    """A tenant ``t1#x`` would render the keys of tenant ``t1``'s thread ``x#...``: the
    saver is refused when it is made (a ScopeError), not at its first call."""
    t1 = Saver(graphs, scope={"tenant_id": "t1"})
    _put_at(t1, "x", "", "1")
    before = sorted(map(_canon, gtb.scan_raw()))
    with pytest.raises(ScopeError, match="without '#'"):
        Saver(graphs, scope={"tenant_id": tenant})
    assert sorted(map(_canon, gtb.scan_raw())) == before


@pytest.mark.sync_only
@pytest.mark.engines('moto', 'local')
def test_tenants_with_the_same_hostile_ids_never_meet(gtb: TestBackend) -> None:
    """t1 and t2 use the same thread, namespace, checkpoint, task and run ids (unicode,
    separator-like): each saver's every call sees and changes only its own rows, a copy
    to or from the other's thread included."""
    one, two = Saver(graphs, scope={"tenant_id": "t1"}), Saver(graphs, scope={"tenant_id": "t2"})
    thread, ns, run = "é|_:W-0", "child:1|x:2", "run é"
    for saver, who in (one, "one"), (two, "two"):
        at = _put_at(saver, thread, ns, "1", value=who, run=run)
        saver.put_writes(at, [("m", who)], "task é")
    mine = [_seen(t) for t in two.list(None)]
    theirs = sorted(map(_canon, (i for i in gtb.scan_raw() if i["pk"]["S"].startswith("LG#t2#"))))
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
    assert sorted(map(_canon, (i for i in gtb.scan_raw() if i["pk"]["S"].startswith(
        "LG#t2#") and "only t2" not in i["pk"]["S"]))) == theirs
    assert [_seen(t) for t in two.list(_conf(thread, None))] == mine


def _state(saver: Saver, thread: str) -> list[Any]:
    return [_seen(t) for t in saver.list(_conf(thread, None))]


@pytest.mark.sync_only
@pytest.mark.engines('moto', 'local')
@pytest.mark.parametrize("use_async", [False, True])
def test_a_put_whose_answer_is_lost_with_another_writer_in_the_window(
        gtb: TestBackend, use_async: bool) -> None:
    """The engine applied the put, then its answer was lost; meanwhile another process
    wrote the next checkpoint of the thread and a write on ours. Whatever the caller is
    told is true, and the thread holds each checkpoint and write once, as the model does
    after the same calls."""
    scope = _tenant()
    saver, other, model = Saver(graphs, scope=scope), Saver(graphs, scope=scope), Model()
    first = _put_at(saver, "th", "", "1")
    _put_at(model, "th", "", "1")

    def in_the_window() -> None:
        for s in other, model:
            nxt = s.put(_conf("th", "", "2"), _checkpoint("3", "other's", 3),
                        {"source": "loop", "step": 1, "run_id": "r1"}, {"m": 3})
            s.put_writes(nxt, [("m", "w")], "other task")
    args = (_conf("th", "", "1"), _checkpoint("2", "mine", 2),
            {"source": "loop", "step": 1, "run_id": "r1"}, {"m": 2})
    with inject_faults(graphs) as faults:
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


@pytest.mark.sync_only
@pytest.mark.engines('moto', 'local')
@pytest.mark.parametrize("use_async", [False, True])
def test_put_writes_whose_answer_is_lost_with_another_writer_in_the_window(
        gtb: TestBackend, use_async: bool) -> None:
    """A task's writes applied, their answer lost; in the window another worker wrote the
    same task's interrupt anew and another task's write. After the retry: no write twice,
    none lost, the caller told nothing untrue."""
    scope = _tenant()
    saver, other, model = Saver(graphs, scope=scope), Saver(graphs, scope=scope), Model()
    at = _put_at(saver, "th", "", "1")
    _put_at(model, "th", "", "1")
    mine = [("m", "mine"), ("__interrupt__", "mine")]

    def in_the_window() -> None:
        for s in other, model:
            s.put_writes(at, mine, "task")
            s.put_writes(at, [("m", "theirs")], "other task")
    with inject_faults(graphs) as faults:
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


@pytest.mark.sync_only
@pytest.mark.engines('moto', 'local')
def test_checkpoints_at_the_item_limit_and_blobs_of_every_serde_type(gtb: TestBackend) -> None:
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
    saver, model = Saver(graphs, scope=_tenant()), Model()
    for s in saver, model:
        for n, value in enumerate(values):
            at = _put_at(s, "th", "", f"{n:03d}", value=value, version=n + 1)
            s.put_writes(at, [("m", value)], "task")
    for n, _ in enumerate(values):
        conf = _conf("th", "", f"{n:03d}")
        assert _seen(saver.get_tuple(conf)) == _seen(model.get_tuple(conf))
    kept = _put_at(saver, "big", "", "1", value=os.urandom(390_000))
    assert saver.get_tuple(kept) is not None
    before = sorted(map(_canon, gtb.scan_raw()))
    with pytest.raises(ItemTooLargeError):
        _put_at(saver, "big", "", "2", value=os.urandom(410_000))
    with pytest.raises(ItemTooLargeError):
        saver.put_writes(kept, [("m", b"1"), ("o", os.urandom(410_000))], "task")
    assert sorted(map(_canon, gtb.scan_raw())) == before


@pytest.mark.sync_only
@pytest.mark.engines('moto', 'local')
def test_what_it_stores_is_what_a_save_of_its_entities_stores(gtb: TestBackend) -> None:
    """Every row the saver wrote, read back as its entity and saved by a plain Session
    under another thread id, is the same item but for the key: nothing beside the model."""
    scope = _tenant()
    saver = Saver(graphs, scope=scope, ttl=None)
    at = _put_at(saver, "th", "child:1", "1", value=["m"] * 50)
    saver.put_writes(at, [("m", "w"), ("__interrupt__", "i")], "task")
    with Session(graphs, scope=scope) as s:
        rows = s.query(saver.cp, saver.w, **scope, thread_id="th").all()
        assert len(rows) == 3
        for r in rows:
            s.save(type(r)(**{**dict(r), "thread_id": "again"}))
    pk = f"LG#{scope['tenant_id']}#"
    again = {i["sk"]["S"]: i for i in gtb.scan_raw() if i["pk"]["S"] == pk + "again"}
    mine = [i for i in gtb.scan_raw() if i["pk"]["S"] == pk + "th"]
    assert len(mine) == len(again) == 3
    for item in mine:
        differ = {"pk": None, "thread_id": None, "_rev": None}  # (_rev: each write's own)
        assert {**item, **differ} == {**again[item["sk"]["S"]], **differ}


@pytest.mark.sync_only
@pytest.mark.engines('moto', 'local')
def test_one_saver_on_two_event_loops_at_once_and_after_a_fork(gtb: TestBackend) -> None:
    """One saver driven by two threads, each with its own event loop, at once; then a
    forked process putting through the saver it inherited (on an engine of its own
    process: DynamoDB Local)."""
    import multiprocessing
    import threading

    saver = Saver(graphs, scope=_tenant())
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
    join_all(threads)
    assert errors == []
    assert [len(list(saver.list(_conf(w)))) for w in ("one", "two")] == [5, 5]
    if gtb.endpoint_url is None:
        return  # (moto lives in this process: a child's writes would stay in the child)
    child = multiprocessing.get_context("fork").Process(
        target=lambda: _put_at(saver, "forked", "", "1", value="child's"))
    child.start()
    child.join(60)
    assert child.exitcode == 0
    found = saver.get_tuple(_conf("forked"))
    assert found is not None and found.checkpoint["channel_values"]["m"] == "child's"


@pytest.mark.sync_only
@pytest.mark.engines('moto', 'local')
def test_delete_for_runs_of_more_run_ids_than_one_filter_holds(gtb: TestBackend) -> None:
    """DynamoDB's IN takes at most 100 values: 150 run ids (and one of them ours) still
    delete that run's checkpoints, and only them."""
    saver = Saver(graphs, scope=_tenant())
    for n in range(3):
        _put_at(saver, "th", "", f"{n}", run=f"r{n}")
    saver.delete_for_runs([f"x{i}" for i in range(149)] + ["r1"])
    assert [t.checkpoint["id"] for t in saver.list(_conf("th"))] == ["2", "0"]


# --- put_writes past a transaction, failing or its answer lost
# (moved from system/test_red_team_lg.py, the red team of fixlg:
# 3. ``Saver.put_writes`` past a transaction, every one of its transactions failing or its
#    answer lost (another writer in the window): the reader never shows part of a task, and
#    ``put_writes`` never reports success for writes that are not read back.)

_QUICK = settings(deadline=None, suppress_health_check=list(HealthCheck), max_examples=examples(6))


atb = langgraph_tables.atb  # (a fixture: lg_agents, fresh)


# == 3. Saver.put_writes past a transaction ===============================================


def _put_cid(saver: Any, thread: str, cid: str) -> Any:
    cp = empty_checkpoint()
    cp["id"] = cid
    return saver.put(_conf(thread), cp, {"source": "loop", "step": 0}, {})


def _task(saver: Any, thread: str, task: str = "task") -> list[Any]:
    found = saver.get_tuple(_conf(thread))
    assert found is not None
    return [w[2] for w in found.pending_writes if w[0] == task]


def _sends(n: int, run: str = "") -> list[tuple[str, Any]]:
    return [("__pregel_tasks", f"{run}send {i}") for i in range(n)]


@pytest.mark.sync_only
@pytest.mark.engines('moto')
@settings(_QUICK, max_examples=examples(3))  # (CI's 30 minutes: a retried 500 backs off)
@given(kind=st.sampled_from(["server_error", "lose_answer"]), skip=st.integers(0, 4),
       times=st.sampled_from([1, 2, None]), size=st.sampled_from([101, 230]))
def test_put_writes_shows_all_of_a_task_or_none_and_tells_the_truth(
        atb: TestBackend, kind: str, skip: int, times: int | None, size: int) -> None:
    """Whatever transaction of a chunked ``put_writes`` fails (or applies and loses its
    answer), times over: the reader shows all of the task's writes or none; a success is
    all of them, once; run again, all of them, once."""
    saver = Saver(lg_agents, scope={"tenant_id": uuid.uuid4().hex})
    at = _put_cid(saver, "th", "1")
    writes = _sends(size)
    with inject_faults(lg_agents) as faults:
        getattr(faults, kind)("TransactWriteItems", skip=skip, times=times)
        try:
            saver.put_writes(at, writes, "task")
            told = True
        except DynaormError:
            told = False
    shown = _task(saver, "th")
    assert shown in ([], [v for _, v in writes])
    if told:
        assert shown == [v for _, v in writes]
    saver.put_writes(at, writes, "task")
    assert _task(saver, "th") == [v for _, v in writes]


@pytest.mark.sync_only
@pytest.mark.engines('moto')
def test_a_concurrent_writer_of_the_same_task_in_a_lost_answer_s_window(
        atb: TestBackend) -> None:
    """The same task's writes written again by another process while a chunk's answer is
    lost: both succeed, the task is read once, whole."""
    scope = {"tenant_id": uuid.uuid4().hex}
    saver, other = Saver(lg_agents, scope=scope), Saver(lg_agents, scope=scope)
    at = _put_cid(saver, "th", "1")
    writes = _sends(230)
    with inject_faults(lg_agents) as faults:
        faults.lose_answer("TransactWriteItems", skip=1,
                           after=lambda: other.put_writes(at, writes, "task"))
        saver.put_writes(at, writes, "task")
    assert _task(saver, "th") == [v for _, v in writes]


@pytest.mark.sync_only
@pytest.mark.engines('moto')
@pytest.mark.parametrize("again", [120, 100])
def test_a_task_run_again_with_fewer_writes_after_a_stopped_put_writes(
        atb: TestBackend, again: int) -> None:
    """Issue 90: a task's put_writes stopped after its first transaction (150 writes: 100
    rows in, each counting 150), then the task run again with fewer writes (120, or 100:
    the rows in): the reader shows the second call's writes, as InMemorySaver does (the
    retry deletes the stopped call's rows of another count, never shown, and writes its
    own). Before, the task stayed hidden for ever (the reader wanted 150)."""
    saver, model = Saver(lg_agents, scope={"tenant_id": uuid.uuid4().hex}), InMemorySaver()
    at = _put_cid(saver, "th", "1")
    with inject_faults(lg_agents) as faults:
        faults.server_error("TransactWriteItems", skip=1, times=None)
        with pytest.raises(DynaormError):
            saver.put_writes(at, _sends(150), "task")
    saver.put_writes(at, _sends(again, "second "), "task")  # (success)
    model.put_writes(_put_cid(model, "th", "1"), _sends(again, "second "), "task")
    assert len(_task(saver, "th")) == len(_task(model, "th")) == again


# --- savers and stores deep-copied, pickled, reloaded, across event loops
# (moved from system/test_red_team_08c.py:
# Red team 08c: what was never attacked.
#
# 1. :mod:`dynaorm.langgraph`'s ``Saver`` and ``Store`` kept across calls in the ways an
#    application keeps objects: ``copy.deepcopy`` (of a saver, a store, a compiled graph, a
#    config holding them), ``pickle``, ``importlib.reload`` of the adapter's modules (its
#    entity classes defined again) with savers and stores made before still in use, and
#    ``asyncio.run`` after ``asyncio.run`` with a saver or store made in the first loop; a
#    saver the model refuses, made again; a job's tasks on a table of LangGraph rows.
# 2. The refusal of a write at a key a user rule's row kind claims (a table without a type
#    attribute: ``EntitySpec.primary_key``), across what else an entity is (Compressed,
#    Encrypted through KMS, a previous layout; versioned and unique need a type attribute,
#    so they are refused when declared) and every surface that writes: ``Session``,
#    ``AsyncSession``, ``save_many``, an idempotent commit, update, delete, the MCP write
#    tools, a backfill job, ``dynaorm migrate``, the LangGraph ``Store`` and ``Saver``.
#
# Each test states what must never happen; what does not hold is a strict xfail naming the
# defect. moto only (``pytest.mark.engines``): the refusals happen before sending.)



# == 1. LangGraph's saver and store, kept across calls ====================================
copies = Table("red08c_agents", ttl="expires")


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
    with use_tables(copies, endpoint_url=backend, name_suffix=worker_suffix()):
        yield




def _thread_conf(thread: str) -> Any:
    return {"configurable": {"thread_id": thread, "checkpoint_ns": ""}}


@pytest.mark.sync_only
@pytest.mark.engines('moto')
def test_a_deep_copy_of_a_saver_store_or_compiled_graph_keeps_to_the_same_rows(
        lg: None) -> None:
    """``copy.deepcopy`` of a saver, a store, a graph compiled with them or a config
    holding them (as of LangGraph's ``InMemorySaver``, which deep-copies) never raises
    and never forks the state: the copy's checkpointer and store are the originals (their
    state is the table's), an item the copy puts the original gets. (It raised
    ``TypeError: cannot pickle '_thread.RLock'``: the table's client.)"""
    scope = _tenant()
    saver, store = Saver(copies, scope=scope), Store(copies, scope=scope)
    graph = _graph(saver, store)
    graph.invoke({"steps": []}, _thread_conf("t1"))
    twin = copy.deepcopy(graph)  # (LangGraph's own sentinels do not survive it: not run)
    assert twin.checkpointer is saver and twin.store is store
    graph.invoke({"steps": []}, _thread_conf("t1"))
    assert graph.get_state(_thread_conf("t1")).values == {"steps": ["step 0", "step 1"]}
    held = copy.deepcopy({"configurable": {"store": store, "saver": saver}})["configurable"]
    held["store"].put(("users",), "u1", {"n": 1})
    assert store.get(("users",), "u1").value == {"n": 1}  # type: ignore[union-attr]
    assert held["saver"].get_tuple(_thread_conf("t1")).checkpoint == saver.get_tuple(  # type: ignore[union-attr]
        _thread_conf("t1")).checkpoint


@pytest.mark.sync_only
@pytest.mark.engines('moto')
def test_pickling_a_saver_store_or_graph_is_refused_and_writes_nothing(lg: None) -> None:
    """A saver, a store, or a graph compiled with them never pickles (as LangGraph's own
    ``InMemorySaver``, ``InMemoryStore`` and AWS's ``DynamoDBSaver`` do not): a pickle
    would carry the table's client across processes. Refused, the table unchanged."""
    saver, store = Saver(copies, scope=_tenant()), Store(copies, scope=_tenant())
    store.put(("a",), "k", {"v": 1})
    held = raw_items(copies)
    for obj in (saver, store, _graph(saver, store)):
        with pytest.raises((TypeError, AttributeError, pickle.PicklingError)):
            pickle.dumps(obj)
    assert raw_items(copies) == held


@pytest.mark.sync_only
@pytest.mark.engines('moto')
def test_the_tasks_of_a_job_on_a_table_of_langgraph_rows_pickle(lg: None) -> None:
    """A check job of a table holding a saver's and a store's rows: its tasks pickle
    (every worker process and engine gets them pickled) and come back equal, naming the
    table itself (a module attribute: its LangGraph rows are made per table, held by no
    module attribute); worker processes run them. (They named the first entity class, a
    ``LangGraphCheckpoint``: ``PicklingError``.)"""
    from dynaorm.jobs import check

    Saver(copies, scope=_tenant())
    Store(copies, scope=_tenant())
    tasks = check(copies, segments=2).tasks()
    assert pickle.loads(pickle.dumps(tasks)) == tasks
    assert all(t.entity is copies for t in pickle.loads(pickle.dumps(tasks)))
    spawn = multiprocessing.get_context("spawn")  # (as run_local's workers start)
    with ProcessPoolExecutor(1, mp_context=spawn) as pool:
        assert pool.submit(_names_agents, tasks[1]).result() == (True, tasks[1].where)


def _names_agents(task: Any) -> tuple[bool, Any]:
    """In a worker process: whether ``task`` names this module's ``agents``."""
    return task.entity is copies, task.where


@pytest.mark.sync_only
@pytest.mark.engines('moto')
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
    names = ("dynaorm_langgraph.saver", "dynaorm_langgraph.store", "dynaorm_langgraph",
             "dynaorm.langgraph")
    kept = {n: dict(vars(sys.modules[n])) for n in names}
    yield
    for n in names:
        vars(sys.modules[n]).clear()
        vars(sys.modules[n]).update(kept[n])


@pytest.mark.sync_only
@pytest.mark.engines('moto')
def test_after_a_reload_old_and_new_savers_and_stores_share_the_tables_entities(
        lg: None, reloaded: None) -> None:
    """``importlib.reload`` of the adapter (its entity classes defined again) never gives
    the table a second ``LangGraphCheckpoint``/``LangGraphWrite``/``LangGraphMemory``:
    a saver or store made before and one made after read each other's rows, a TTL
    refresh on read by either moves the item's expiry, and ``dynaorm check`` is clean."""
    from dynaorm.jobs.checking import check_table

    scope = _tenant()
    old_saver = Saver(copies, scope=scope)
    old_store = Store(copies, scope=scope, ttl={"default_ttl": 1, "refresh_on_read": True})
    old_saver.put(_thread_conf("r1"), empty_checkpoint(), {"step": 0}, {})
    old_store.put(("a",), "k", {"v": 1})
    before = {n: copies.entities[n] for n in copies.entities}
    for name in ("dynaorm_langgraph.saver", "dynaorm_langgraph.store", "dynaorm_langgraph",
                 "dynaorm.langgraph"):
        importlib.reload(sys.modules[name])
    import dynaorm.langgraph as fresh
    assert fresh.Saver is not Saver
    new_saver = fresh.Saver(copies, scope=scope)
    new_store = fresh.Store(copies, scope=scope, ttl={"default_ttl": 1, "refresh_on_read": True})
    assert {n: copies.entities[n] for n in copies.entities} == before
    new_saver.put(_thread_conf("r2"), empty_checkpoint(), {"step": 0}, {})
    assert old_saver.get_tuple(_thread_conf("r2")) is not None
    assert new_saver.get_tuple(_thread_conf("r1")) is not None
    assert {t.config["configurable"]["thread_id"] for t in new_saver.list(None)} == {"r1", "r2"}
    new_store.put(("a",), "k2", {"v": 2}, ttl=1)
    for store, key in ((old_store, "k2"), (new_store, "k")):
        expiry = Session(copies).get(store.entity, path=f"a..{key}", **scope).expires
        assert store.get(("a",), key) is not None
        moved = Session(copies).get(store.entity, path=f"a..{key}", **scope).expires
        assert expiry is not None and moved is not None and moved >= expiry
        assert moved > datetime.now(UTC)
    assert check_table(copies).problems == []


@pytest.mark.sync_only
@pytest.mark.engines('moto')
def test_a_saver_and_store_made_in_one_event_loop_serve_the_next_ones(lg: None) -> None:
    """A saver and a store made inside one ``asyncio.run`` and used in later ones (each
    a new event loop, the first closed) and by sync calls: every call answers, nothing
    of the first loop is reused once closed."""
    made: dict[str, Any] = {}
    scope = _tenant()

    async def first() -> None:
        made["saver"], made["store"] = Saver(copies, scope=scope), Store(copies, scope=scope)
        await made["saver"].aput(_thread_conf("loop"), empty_checkpoint(), {"step": 0}, {})
        await made["store"].aput(("loop",), "k", {"n": 0})

    async def later(n: int) -> tuple[Any, Any]:
        await made["store"].aput(("loop",), "k", {"n": n})
        return (await made["saver"].aget_tuple(_thread_conf("loop")),
                await made["store"].aget(("loop",), "k"))

    asyncio.run(first())
    for n in (1, 2, 3):
        tup, item = asyncio.run(later(n))
        assert tup is not None and item is not None and item.value == {"n": n}
    assert made["saver"].get_tuple(_thread_conf("loop")) is not None
    assert made["store"].get(("loop",), "k").value == {"n": 3}


def test_the_adapters_rows_are_told_by_type_name_or_by_keys_and_fields() -> None:
    """What the adapter registers (``dynaorm.surface_rows``) for ``dynaorm check`` and
    inference where no saver is declared: its rows by type name, else a checkpoint or
    pending write, a lease and a memory by their keys and the fields each holds."""
    from dynaorm_langgraph.rows import SURFACE_ROWS as rows

    def s(v: str) -> dict[str, str]:
        return {"S": v}

    checkpoint = {"pk": s("LG#t"), "sk": s("C#_#c1#"), "thread_id": s("t"), "ns": s("_"),
                  "checkpoint_id": s("c1")}
    lease = {"pk": s("LG#t"), "sk": s("L#"), "thread_id": s("t")}
    memory = {"pk": s("LANGGRAPH#STORE"), "sk": s("a/b"), "path": s("a/b")}
    for row in (checkpoint, lease, memory):
        assert rows.claims(row, "pk", "sk", None)
        assert not rows.claims(row, "pk", None, None)  # (a table without a sort key)
    assert not rows.claims({**checkpoint, "ns": {"N": "1"}}, "pk", "sk", None)
    assert not rows.claims({**lease, "thread_id": {"NULL": True}}, "pk", "sk", None)
    assert not rows.claims({**lease, "pk": s("USER#t")}, "pk", "sk", None)
    assert not rows.claims({**memory, "path": s("a/c")}, "pk", "sk", None)
    assert rows.claims({}, "pk", "sk", "LangGraphLease")
    assert not rows.claims(checkpoint, "pk", "sk", "User")


def test_the_adapters_rows_are_told_by_the_key_grammar_of_its_entities(tb: TestBackend) -> None:
    """Where a row carries no type name, its keys are read by the templates the saver's
    and the store's entities are declared with (in a scope of as many fields as the key
    holds), and the fields they name must be the row's: every row a scoped saver and store
    write is claimed (a memory's path holds ``#``); a user's row under ``LG#``, one at a
    key ``LANGGRAPH#STORE`` only begins, one whose key holds ``#`` in a field's value, or
    one whose key and fields disagree is not (0.9 told them by a key's first characters
    and the fields' presence)."""
    from dynaorm_langgraph.rows import SURFACE_ROWS as rows

    saver, store = Saver(agents, scope=T1), Store(agents, scope=T1)
    saver.put_writes(_put(saver, "th", "v", ns="sub"), [("messages", "w")], "task")
    store.put(("users#1", "prefs"), "k#2", {"n": 1})
    stored = tb.scan_raw()
    assert {i["_type"]["S"] for i in stored} == {
        "LangGraphCheckpoint", "LangGraphWrite", "LangGraphMemory"}
    for item in stored:
        assert rows.claims(item, "pk", "sk", None), item

    def s(v: str) -> dict[str, str]:
        return {"S": v}

    write = {"pk": s("LG#t1#th"), "sk": s("C#_#c1#W#task#0"), "thread_id": s("th"),
             "ns": s("_"), "checkpoint_id": s("c1"), "task_id": s("task"), "idx": {"N": "0"}}
    assert rows.claims(write, "pk", "sk", None)
    for row in ({"pk": s("LG#GROUP#1"), "sk": s("L#"), "thread_id": s("t1")},  # (a user's)
                {"pk": s("LANGGRAPH#STOREX"), "sk": s("a"), "path": s("a")},
                {"pk": s("LANGGRAPH#STORE#t1"), "sk": s("a"), "path": s("a")},
                {**write, "sk": s("C#_#c1#W#ta#sk#0"), "task_id": s("ta#sk")},
                {**write, "pk": s("LG#t1#th#x"), "thread_id": s("th#x")},
                {**write, "sk": s("C#_#c2#W#task#0")}, {**write, "idx": s("0")}):
        assert not rows.claims(row, "pk", "sk", None), row
