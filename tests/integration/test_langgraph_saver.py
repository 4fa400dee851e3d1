"""dynaorm.langgraph.Saver's own behaviour on every engine (issue 71, contract 23): tenants
kept apart by scope, a put is one write, a task's retry writes once, large checkpoints
compressed and one too large refused, TTL, and its rows as entities of the model (``iam``,
exports, ``check``). LangGraph's conformance suite runs in test_langgraph_conformance.py;
the example graph resuming after a restart in tests/system/test_langgraph_agent.py."""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langgraph.checkpoint.base import empty_checkpoint

from dynaorm import DynaormError, ItemTooLargeError, Table
from dynaorm.formats import iam
from dynaorm.jobs import export, run_local
from dynaorm.jobs.checking import check_table
from dynaorm.langgraph import Saver
from dynaorm.testing import TestBackend, use_tables, worker_suffix
from tests.support.examples import examples
from tests.support.recording import Requests

agents = Table("langgraph_saver", ttl="expires_at")
T1, T2 = {"tenant_id": "t1"}, {"tenant_id": "t2"}


@pytest.fixture
def tb(backend: str | None) -> Iterator[TestBackend]:
    with use_tables(agents, endpoint_url=backend, name_suffix=worker_suffix()) as found:
        yield found


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
