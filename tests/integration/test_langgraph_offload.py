"""LangGraph's state past 400 KB (issue 83's item on "Values of any size", contract 24): on
a table with ``offload=``, the saver's checkpoints, metadata and pending writes and the
store's values are ``Offloaded`` fields of their rows, so a value too large for an item is
kept in S3 (moto's) through the session and the model's rule, never by hand: it reads
back on every path (``get_tuple``, ``list``, a graph's ``get_state``, the store's
``get``/``search``), and ``prune``, ``delete_thread``, ``copy_thread`` and a store's
delete leave the bucket holding exactly what the rows reference (``dynaorm check``: no
orphan, no dangling reference). Without ``offload=`` the refusal before sending stays
(tests/integration/test_langgraph_saver.py). S3 is the client's: on moto only."""

from __future__ import annotations

import asyncio
import base64
import os
from collections.abc import AsyncIterator, Iterator
from datetime import timedelta
from typing import Any, TypedDict

import pytest
from langgraph.checkpoint.base import empty_checkpoint
from langgraph.checkpoint.conformance import checkpointer_test, validate
from langgraph.graph import END, START, StateGraph
from langgraph.store.base import GetOp, PutOp, SearchOp

from dynaorm import ItemTooLargeError, OutcomeUnknownError, StaticKeyring, Table
from dynaorm.jobs.checking import check_table
from dynaorm.langgraph import Saver, Store
from dynaorm.testing import TestBackend, inject_faults, use_tables, worker_suffix
from tests.support.offload import Bucket, bucket, referenced
from tests.support.recording import Requests

pytestmark = [pytest.mark.engines("moto")]
agents = Table("lg_offload", offload="s3://placeholder/v/")
vault = Table("lg_offload_sealed", offload="s3://placeholder/v/",
              keyring=StaticKeyring(os.urandom(32)))
memories = Table("lg_offload_store", offload="s3://placeholder/v/")
plain = Table("lg_offload_plain")
#: every value past one byte kept in S3: LangGraph's conformance suite through S3
everything = Table("lg_offload_all", offload="s3://placeholder/v/", offload_threshold=1)
#: incompressible, well past an item's 400 KB even compressed
BIG = 500_000


@pytest.fixture
def s3(backend: str | None, request: pytest.FixtureRequest,
       monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[TestBackend, Bucket]]:
    with bucket(backend, request, monkeypatch, agents, vault, memories, everything
                ) as b, use_tables(agents, vault, memories, plain, everything,
                                   endpoint_url=backend,
            name_suffix=worker_suffix()) as tb:
        yield tb, b


def consistent(tb: TestBackend, b: Bucket, *tables: Table) -> None:
    """The bucket holds exactly what the rows reference, and ``dynaorm check`` finds no
    orphan and no dangling reference."""
    assert b.uris() == referenced([r for t in tables for r in tb.scan_raw(t)])
    for table in tables:
        assert check_table(table, orphan_age=timedelta(0)).problems == []


def _put(saver: Saver, thread: str, cid: str, value: Any, parent: str | None = None) -> Any:
    cp = empty_checkpoint()
    cp["id"] = cid
    cp["channel_values"], cp["channel_versions"] = {"blob": value}, {"blob": 1}
    conf: dict[str, Any] = {"thread_id": thread, "checkpoint_ns": ""}
    if parent:
        conf["checkpoint_id"] = parent
    return saver.put({"configurable": conf}, cp, {"source": "loop", "step": 0}, {"blob": 1})


class State(TypedDict):
    blob: bytes


def test_a_large_checkpoint_round_trips_and_prune_copy_delete_leave_no_object(
        s3: tuple[TestBackend, Bucket]) -> None:
    """A graph whose node returns 500 KB of random bytes: its pending write and its
    checkpoint go to S3 (without offload= both would be refused), ``get_state``,
    ``get_tuple`` and ``list`` read them back; a get_tuple is one Query and one S3 GET, a
    put an upload and a write (an insert); a put again of a stored checkpoint reads it
    and replaces it, its old object removed. ``prune`` removes the older checkpoints'
    objects, ``copy_thread`` gives the copy objects of its own, ``delete_thread`` removes
    them."""
    tb, b = s3
    saver = Saver(agents)
    data = os.urandom(BIG)
    graph = StateGraph(State)
    graph.add_node("big", lambda state: {"blob": data})
    graph.add_edge(START, "big")
    graph.add_edge("big", END)
    app = graph.compile(checkpointer=saver)
    conf: Any = {"configurable": {"thread_id": "t1"}}
    app.invoke({"blob": b"in"}, conf)
    assert app.get_state(conf).values["blob"] == data
    assert len(b.keys()) >= 2  # (the node's write, the last checkpoint's channel value)
    consistent(tb, b, agents)

    rec = Requests(agents)
    latest = saver.get_tuple(conf)
    assert latest is not None and latest.checkpoint["channel_values"]["blob"] == data
    assert rec.operations == ["Query", "s3:GetObject"]
    rec.clear()
    stored = _put(saver, "t1", "9" * 8, os.urandom(BIG), latest.config["configurable"][
        "checkpoint_id"])
    assert rec.operations == ["s3:PutObject", "PutItem"]  # (an insert: nothing to read)
    assert [t.config for t in saver.list(conf, limit=1)] == [stored]
    again = os.urandom(BIG)  # (a put again of a stored checkpoint replaces it and its object)
    rec.clear()
    assert _put(saver, "t1", "9" * 8, again, latest.config["configurable"][
        "checkpoint_id"]) == stored
    assert rec.operations.count("PutItem") == 2 and "GetItem" in rec.operations
    found = saver.get_tuple(stored)
    assert found is not None and found.checkpoint["channel_values"]["blob"] == again
    consistent(tb, b, agents)

    saver.copy_thread("t1", "t2")
    saver.prune(["t1"], strategy="keep_latest")
    (kept,) = saver.list(conf)
    assert kept.config == stored
    consistent(tb, b, agents)
    saver.delete_thread("t1")
    assert saver.get_tuple(conf) is None
    copy = saver.get_tuple({"configurable": {"thread_id": "t2"}})
    assert copy is not None and copy.checkpoint["channel_values"]["blob"] == kept.checkpoint[
        "channel_values"]["blob"]
    consistent(tb, b, agents)
    saver.delete_thread("t2")
    assert b.keys() == set()
    consistent(tb, b, agents)


def test_a_large_memory_round_trips_and_its_delete_removes_its_object(
        s3: tuple[TestBackend, Bucket]) -> None:
    """A 600 KB memory that does not compress under 400 KB: put, get, search read it back;
    a put of a new value replaces its object; a delete removes it."""
    tb, b = s3
    store = Store(memories)
    value = {"text": base64.b64encode(os.urandom(450_000)).decode()}
    store.put(("docs",), "big", value)
    store.put(("docs",), "small", {"v": 1})
    got = store.get(("docs",), "big")
    assert got is not None and got.value == value
    assert [(i.key, i.value) for i in store.search(("docs",))] == [
        ("big", value), ("small", {"v": 1})]
    assert len(b.keys()) == 1
    again = {"text": base64.b64encode(os.urandom(450_000)).decode()}
    assert store.batch([PutOp(("docs",), "big", again), GetOp(("docs",), "big")])[1].value == value
    assert store.batch([SearchOp(("docs",), limit=1)])[0][0].value == again
    consistent(tb, b, memories)
    store.delete(("docs",), "big")
    store.delete(("docs",), "missing")  # (a delete of nothing is no error, as before)
    assert store.get(("docs",), "big") is None and b.keys() == set()
    consistent(tb, b, memories)


def test_without_offload_a_large_memory_is_refused_before_sending(
        s3: tuple[TestBackend, Bucket]) -> None:
    store = Store(plain)
    rec = Requests(plain)
    with pytest.raises(ItemTooLargeError):
        store.put(("docs",), "big", {"text": base64.b64encode(os.urandom(450_000)).decode()})
    assert rec.operations == [] and store.get(("docs",), "big") is None


def test_sealed_state_is_sealed_in_s3_too(s3: tuple[TestBackend, Bucket]) -> None:
    """``sealed=True`` with offload: the object holds the ciphertext, never the state."""
    tb, b = s3
    saver = Saver(vault, sealed=True)
    secret = b"the launch code " + os.urandom(BIG)
    stored = _put(saver, "t", "1", secret)
    (key,) = b.keys()
    assert b"the launch code" not in b.body(f"s3://{b.name}/{key}")
    found = saver.get_tuple(stored)
    assert found is not None and found.checkpoint["channel_values"]["blob"] == secret
    saver.delete_thread("t")
    consistent(tb, b, vault)


@pytest.mark.parametrize("operation", ["PutItem", "DeleteObjects"])
def test_a_lost_answer_leaves_nothing_dangling(s3: tuple[TestBackend, Bucket],
                                               operation: str) -> None:
    """A large put's write applied and its answer lost (the put retried or said unknown),
    or a prune's removal of the objects applied and its answer lost, a second writer
    putting a large checkpoint inside the window: the bucket holds exactly what the rows
    reference, and the state reads back."""
    tb, b = s3
    saver = Saver(agents)
    first = _put(saver, "t", "1", os.urandom(BIG))
    value, theirs = os.urandom(BIG), os.urandom(BIG)
    seen = Requests(agents)
    with inject_faults(agents) as faults:
        faults.lose_answer("s3:" + operation if operation == "DeleteObjects" else operation,
                           after=lambda: _put(Saver(agents), "u", "1", theirs))
        try:
            stored = _put(saver, "t", "2", value, first["configurable"]["checkpoint_id"])
            if operation == "DeleteObjects":
                saver.prune(["t"], strategy="keep_latest")
        except OutcomeUnknownError:  # (never a success it cannot prove)
            stored = None
    assert seen.operations.count(("s3:" if operation == "DeleteObjects" else "") + operation
                                 ) >= 2  # (the lost attempt, and the second writer's or a retry)
    consistent(tb, b, agents)
    other = Saver(agents).get_tuple({"configurable": {"thread_id": "u"}})
    assert other is not None and other.checkpoint["channel_values"]["blob"] == theirs
    if stored is not None:
        found = saver.get_tuple(stored)
        assert found is not None and found.checkpoint["channel_values"]["blob"] == value


def test_the_async_methods_store_and_remove_large_values_too(
        s3: tuple[TestBackend, Bucket]) -> None:
    """The ``a...`` methods run the same steps on an ``AsyncSession``: a large checkpoint
    and memory stored, read back, and their objects removed."""
    tb, b = s3
    saver, store = Saver(agents), Store(memories)
    data, value = os.urandom(BIG), {"text": base64.b64encode(os.urandom(450_000)).decode()}

    async def main() -> None:
        cp = empty_checkpoint()
        cp["channel_values"], cp["channel_versions"] = {"blob": data}, {"blob": 1}
        conf: Any = {"configurable": {"thread_id": "a", "checkpoint_ns": ""}}
        stored = await saver.aput(conf, cp, {"source": "loop", "step": 0}, {"blob": 1})
        await saver.aput_writes(stored, [("blob", data)], "task")
        found = await saver.aget_tuple(stored)
        assert found is not None and found.checkpoint["channel_values"]["blob"] == data
        assert found.pending_writes == [("task", "blob", data)]
        await store.aput(("docs",), "big", value)
        got = await store.aget(("docs",), "big")
        assert got is not None and got.value == value
        assert len(b.keys()) == 3
        await saver.adelete_thread("a")
        await store.adelete(("docs",), "big")

    asyncio.run(main())
    assert b.keys() == set()
    consistent(tb, b, agents, memories)


@pytest.mark.parametrize("second", ["delete_thread", "put"])
def test_a_delete_beside_a_second_writer_in_its_window(s3: tuple[TestBackend, Bucket],
                                                       second: str) -> None:
    """``delete_thread``'s first delete answered with a 500 (not applied); inside that
    window a second saver deletes the thread, or puts a large checkpoint into it. The
    rows it read go (those already gone left to the other), the one put since is kept
    with its object: no orphan, no dangling reference, and no error for what is done."""
    tb, b = s3
    saver = Saver(agents)
    first = _put(saver, "t", "1", os.urandom(BIG))
    saver.put_writes(first, [("blob", os.urandom(BIG))], "task")
    theirs = os.urandom(BIG)

    def other() -> None:
        if second == "put":
            _put(Saver(agents), "t", "2", theirs, "1")
        else:
            Saver(agents).delete_thread("t")

    with inject_faults(agents) as faults:
        faults.server_error("DeleteItem", after=other)
        saver.delete_thread("t")
    assert faults.sent["DeleteItem"] >= 3  # (the refused attempt, its retry, the write's)
    consistent(tb, b, agents)
    left = [t.checkpoint["channel_values"]["blob"] for t in saver.list(
        {"configurable": {"thread_id": "t"}})]
    assert left == ([theirs] if second == "put" else [])
    assert len(b.keys()) == len(left)


def test_a_single_writer_put_again_of_its_head_through_the_lease(
        s3: tuple[TestBackend, Bucket]) -> None:
    """``single_writer=True``: the put is one transaction with the lease's action; its
    insert refused (the checkpoint stored, its answer lost) is put again over it, the
    head accepted, the old object removed."""
    tb, b = s3
    saver = Saver(agents, single_writer=True)
    first = _put(saver, "t", "1", os.urandom(BIG))
    again = os.urandom(BIG)
    assert _put(saver, "t", "1", again) == first
    found = saver.get_tuple(first)
    assert found is not None and found.checkpoint["channel_values"]["blob"] == again
    assert len(b.keys()) == 1
    consistent(tb, b, agents)


def test_a_run_refused_by_the_lease_leaves_no_object_of_its_large_values(
        s3: tuple[TestBackend, Bucket]) -> None:
    """Single-writer fencing beside values kept in S3 (contract 25, "Leases that let go":
    a refused run stores nothing): while run A holds the thread, run B's checkpoint and
    B's writes, each past an item's size, are refused with ThreadBusyError, and what B
    uploaded for them is removed: the bucket holds exactly A's objects, no orphan."""
    from dynaorm.langgraph import ThreadBusyError

    tb, b = s3
    a, other = Saver(agents, single_writer=True), Saver(agents, single_writer=True)

    def put(saver: Saver, run: str, cid: str, parent: str | None, value: bytes) -> Any:
        cp = empty_checkpoint()
        cp["id"] = cid
        cp["channel_values"] = {"blob": value, "branch:to:next": None}
        cp["channel_versions"] = {"blob": 1}
        conf: dict[str, Any] = {"thread_id": "t", "checkpoint_ns": "", "run_id": run}
        if parent:
            conf["checkpoint_id"] = parent
        return saver.put({"configurable": conf}, cp, {"source": "loop", "step": 1},
                         {"blob": 1})

    put(a, "run-a", "0001", None, os.urandom(BIG))
    put(a, "run-a", "0002", "0001", os.urandom(BIG))
    held = b.uris()
    rows = tb.scan_raw(agents)
    with pytest.raises(ThreadBusyError):
        put(other, "run-b", "0003", "0002", os.urandom(BIG))
    with pytest.raises(ThreadBusyError):
        other.put_writes({"configurable": {"thread_id": "t", "checkpoint_ns": "",
                                           "checkpoint_id": "0002", "run_id": "run-b"}},
                         [("blob", os.urandom(BIG))], "task-b")
    assert tb.scan_raw(agents) == rows and b.uris() == held
    consistent(tb, b, agents)


def test_langgraphs_conformance_suite_passes_with_every_value_in_s3(
        s3: tuple[TestBackend, Bucket]) -> None:
    """LangGraph's checkpointer conformance suite (every capability it detects) on a
    table whose threshold keeps every checkpoint, metadata and write in S3; after it, the
    bucket holds exactly what the rows reference."""
    tb, b = s3

    @checkpointer_test(name="dynaorm.langgraph.Saver (offloaded)")
    async def saver() -> AsyncIterator[Saver]:
        yield Saver(everything)

    report = asyncio.run(validate(saver))
    assert report.results and all(
        r.passed and not r.tests_failed for r in report.results.values()), {
        n: r.failures for n, r in report.results.items()}
    assert b.keys()
    consistent(tb, b, everything)


def test_a_copy_past_a_transactions_4_mb_leaves_no_orphan(s3: tuple[TestBackend, Bucket]
                                                          ) -> None:
    """Red team of issue 90: a thread of a large checkpoint (its value in S3) and 70 of
    60 KB kept inline (under the threshold: 4 MB inline in all) is copied: more than one
    transaction's 4 MB, so the copy runs again one row a commit. The copy reads whole,
    and the bucket holds exactly what the rows reference."""
    tb, b = s3
    saver = Saver(agents)
    config = _put(saver, "t", "0000", os.urandom(BIG))
    for n in range(1, 71):
        config = _put(saver, "t", f"{n:04d}", os.urandom(60_000), config["configurable"][
            "checkpoint_id"])
    saver.copy_thread("t", "copy")
    assert len(list(saver.list({"configurable": {"thread_id": "copy"}}))) == 71
    consistent(tb, b, agents)
