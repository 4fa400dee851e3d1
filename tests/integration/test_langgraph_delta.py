"""dynaorm.langgraph.Saver and LangGraph's ``DeltaChannel`` (issue 83, contract 24): a
thread's delta history in one paged Query (the request budget of a ``get_state``), the
same answers as LangGraph's own ``InMemorySaver``, and ``prune``, ``delete_for_runs`` and
``copy_thread`` leaving the state read after them as it was read before. LangGraph's
repository conformance capabilities for deltas run in test_langgraph_conformance.py."""

from __future__ import annotations

import asyncio
import copy
import operator
import os
import pickle
import uuid
from collections import Counter
from collections.abc import Iterator
from typing import Annotated, Any, TypedDict

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langgraph.channels.delta import DeltaChannel
from langgraph.checkpoint.base import empty_checkpoint
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.serde.types import _DeltaSnapshot
from langgraph.graph import END, START, StateGraph

from dynaorm import Table
from dynaorm.langgraph import Saver
from dynaorm.testing import TestBackend, use_tables, worker_suffix
from tests.support.engines import on_engine
from tests.support.examples import examples
from tests.support.recording import Requests

agents = Table("langgraph_delta", ttl="expires_at")


@pytest.fixture
def tb(backend: str | None) -> Iterator[TestBackend]:
    yield from on_engine(backend, agents)


def _append(state: list[Any], writes: list[list[Any]]) -> list[Any]:
    return [*state, *(m for w in writes for m in w)]


def graph(checkpointer: Any, every: int = 50) -> Any:
    """A chat turn of two nodes: ``messages`` a ``DeltaChannel`` (a snapshot every
    ``every`` updates, deepagents' default is 50), ``plain`` an ordinary reducer."""

    state = TypedDict("state", {  # type: ignore[misc]  # noqa: UP013 (``every``: a value)
        "messages": Annotated[list[Any], DeltaChannel(_append, snapshot_frequency=every)],
        "plain": Annotated[list[Any], operator.add]})

    def think(state: Any) -> dict[str, Any]:
        return {"messages": [f"thought {len(state['messages'])}"], "plain": ["t"]}

    def reply(state: Any) -> dict[str, Any]:
        return {"messages": [f"reply {len(state['messages'])}"]}

    builder = StateGraph(state)
    builder.add_node("think", think)
    builder.add_node("reply", reply)
    builder.add_edge(START, "think")
    builder.add_edge("think", "reply")
    builder.add_edge("reply", END)
    return builder.compile(checkpointer=checkpointer)


def _turns(g: Any, thread: str, n: int, start: int = 0) -> None:
    for i in range(start, start + n):
        g.invoke({"messages": [f"user {i}"], "plain": ["u"]},
                 {"configurable": {"thread_id": thread, "run_id": f"{thread}-r{i}"}})


def _replay(model: InMemorySaver, saver: Saver, thread: str) -> None:
    """The thread LangGraph wrote into ``model``, written into ``saver`` call by call as
    LangGraph wrote it (its checkpoints, metadata and writes: a long thread without
    running its graph again, which reads the thread at every turn)."""
    for t in reversed(list(model.list(_config(thread)))):
        parent = t.parent_config or {"configurable": {"thread_id": thread,
                                                      "checkpoint_ns": ""}}
        stored = saver.put(parent, t.checkpoint, t.metadata, t.checkpoint["channel_versions"])
        tasks: dict[str, list[tuple[str, Any]]] = {}
        for task, channel, value in t.pending_writes or []:
            tasks.setdefault(task, []).append((channel, value))
        for task, writes in tasks.items():
            saver.put_writes(stored, writes, task)


def _config(thread: str) -> Any:
    return {"configurable": {"thread_id": thread}}


def _within_budget(turns: int, budget: int) -> None:
    """One ``get_state`` of a ``turns``-turn thread whose messages are a DeltaChannel
    sends at most ``budget`` requests, and reads InMemorySaver's values, sync and async."""
    saver, model = graph(Saver(agents)), graph(InMemorySaver())
    _turns(model, "th", turns)
    if turns <= 10:
        _turns(saver, "th", turns)
    else:  # (written as LangGraph wrote it into the model: its 60 turns cost CI minutes)
        _replay(model.checkpointer, saver.checkpointer, "th")
    rec = Requests(agents)
    state = saver.get_state(_config("th"))
    counted = Counter(op for op, _ in rec.calls)
    assert sum(counted.values()) <= budget, counted
    assert len(state.values["messages"]) == 3 * turns
    assert state.values == model.get_state(_config("th")).values
    rec.calls.clear()
    state = asyncio.run(saver.aget_state(_config("th")))
    assert len(rec.calls) <= budget and state.values == model.get_state(_config("th")).values
    print(turns, "turns:", dict(counted))  # (the closing note's figures: pytest -s)


@pytest.mark.engines("moto")
def test_get_state_of_a_10_turn_delta_thread_is_at_most_3_requests(tb: TestBackend) -> None:
    """311 requests with BaseCheckpointSaver's walk (a get_tuple an ancestor)."""
    _within_budget(10, 3)


@pytest.mark.engines("local")  # (moto copies its tables for every transaction: 0.2 s
def test_get_state_of_a_60_turn_delta_thread_is_at_most_5_requests(  # each, 420 of them)
        tb: TestBackend) -> None:
    """A snapshot every 50 updates (deepagents' default): the walk reads back to it."""
    _within_budget(60, 5)


@pytest.mark.engines("moto")
def test_time_travel_and_history_read_as_in_memory_saver(tb: TestBackend) -> None:
    """Every checkpoint of the history, and a fork from the middle of it, read the same
    values as LangGraph's InMemorySaver (a snapshot every 3 updates: seeds mid-chain)."""
    saver, model = graph(Saver(agents), every=3), graph(InMemorySaver(), every=3)
    for g in saver, model:
        _turns(g, "th", 5)
    ours, theirs = (list(g.get_state_history(_config("th"))) for g in (saver, model))
    assert [s.values for s in ours] == [s.values for s in theirs]
    for g, past in ((saver, ours[7]), (model, theirs[7])):
        g.update_state(past.config, {"messages": ["a fork"]})
        _turns(g, "th", 1, start=9)
    assert saver.get_state(_config("th")).values == model.get_state(_config("th")).values


def _chain(saver: Any, thread: str, ns: str, steps: list[tuple[Any, int | None, list[str]]],
           forks: dict[int, int]) -> list[Any]:
    """Checkpoints by hand: each step stores ``value`` (a ``_DeltaSnapshot``, a plain
    value or none), is the child of ``forks.get(i, i - 1)``, and gets writes of the given
    channels from two tasks (some tasks with a path, as LangGraph's)."""
    configs: list[Any] = []
    for i, (value, _, channels) in enumerate(steps):
        cp = empty_checkpoint()
        cp["id"] = f"{i:04d}"
        cp["channel_versions"] = {"ch": i + 1}  # (a delta channel's step: a version, and
        if value is not None:  # a value only at a snapshot, or a plain value)
            cp["channel_values"] = {"ch": value}
        conf: dict[str, Any] = {"thread_id": thread, "checkpoint_ns": ns}
        parent = forks.get(i, i - 1)
        if parent >= 0:
            conf["checkpoint_id"] = configs[parent]["configurable"]["checkpoint_id"]
        stored = saver.put({"configurable": conf}, cp, {"source": "loop", "step": i},
                           dict(cp["channel_versions"]))
        configs.append(stored)
        for task, path in (("task-b", "~__pregel_pull, b"), ("task-a", "")):
            writes = [(c, f"{c}@{i}:{task}") for c in channels]
            if writes:
                saver.put_writes(stored, writes, task, path)
    return configs


STEPS = st.lists(st.tuples(
    st.sampled_from([None, None, "snapshot", "plain"]), st.none(),
    st.lists(st.sampled_from(["ch", "other"]), max_size=3)), min_size=1, max_size=10)


@pytest.mark.engines("moto")
@settings(max_examples=examples(25), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(steps=STEPS, forks=st.dictionaries(st.integers(1, 9), st.integers(0, 8), max_size=3),
       ns=st.sampled_from(["", "child:1"]), use_async=st.booleans(),
       limit=st.none() | st.integers(1, 4), every_ns=st.booleans())
def test_the_history_of_every_checkpoint_is_in_memory_savers(
        tb: TestBackend, steps: list[Any], forks: dict[int, int], ns: str,
        use_async: bool, limit: int | None, every_ns: bool) -> None:
    """Random chains by hand (snapshots, plain seeds, none; forks; writes of several
    tasks and channels): for every checkpoint, the history of each channel is what
    LangGraph's InMemorySaver answers, asked by the config its put returned or by the
    one a ``list`` returned (of its namespace or every one, ``limit``-ed or not: the
    walk then reads the rows that list read, and the thread when they stop short)."""
    forks = {i: p for i, p in forks.items() if p < i < len(steps)}
    built = [((_DeltaSnapshot([f"snap{i}"]) if v == "snapshot" else [f"plain{i}"]) if v
              else None, c, chs) for i, (v, c, chs) in enumerate(steps)]
    saver, model = Saver(agents), InMemorySaver()
    thread = uuid.uuid4().hex
    ours = _chain(saver, thread, ns, built, forks)
    theirs = _chain(model, thread, ns, built, forks)
    for mine, its in zip(ours, theirs, strict=True):
        for channels in (["other", "ch"], []):
            got = (asyncio.run(saver.aget_delta_channel_history(config=mine, channels=channels))
                   if use_async else saver.get_delta_channel_history(config=mine,
                                                                     channels=channels))
            assert got == model.get_delta_channel_history(config=its, channels=channels)
    latest = {"configurable": {"thread_id": thread, "checkpoint_ns": ns}}
    assert saver.get_delta_channel_history(config=latest, channels=["ch"]) == \
        model.get_delta_channel_history(config=latest, channels=["ch"])
    listed = {"configurable": {"thread_id": thread, **({} if every_ns else {
        "checkpoint_ns": ns})}}
    for t in saver.list(listed, limit=limit):
        assert saver.get_delta_channel_history(config=t.config, channels=["ch", "other"]
                                               ) == model.get_delta_channel_history(
            config=t.config, channels=["ch", "other"])
    saver.delete_thread(thread)  # (moto copies the table for every transaction: kept small)


def _rows(tb: TestBackend, thread: str) -> int:
    return sum(i["pk"]["S"] == f"LG#{thread}" for i in tb.scan_raw())


OPS = ["prune", "delete_for_runs", "copy_thread"]


@pytest.mark.engines("moto")
@pytest.mark.parametrize("op", OPS)
def test_the_state_read_after_prune_delete_for_runs_and_copy_is_the_state_before(
        tb: TestBackend, op: str) -> None:
    """The sync methods on moto (their async twins on DynamoDB Local: below, each pair
    once, each engine with every method)."""
    _state_kept(tb, op, use_async=False)


@pytest.mark.engines("local")
@pytest.mark.parametrize("op", OPS)
def test_the_state_read_after_the_async_prune_delete_and_copy_is_the_state_before(
        tb: TestBackend, op: str) -> None:
    _state_kept(tb, op, use_async=True)


def _state_kept(tb: TestBackend, op: str, use_async: bool) -> None:
    """Five turns, a snapshot every 4 updates (the latest checkpoint is none): after
    ``prune(keep_latest)``, ``delete_for_runs`` of the first four runs, or
    ``copy_thread``, the state read (DeltaChannel ``messages``, plain ``plain``) is the
    state read before; rows a kept checkpoint does not read are gone. Before issue 83
    prune left ``messages`` empty (10 messages, 0)."""
    saver = Saver(agents)
    g = graph(saver, every=4)
    thread = f"th-{op}-{use_async}"
    _turns(g, thread, 5)
    before, rows = g.get_state(_config(thread)).values, _rows(tb, thread)
    assert len(before["messages"]) == 15 and len(before["plain"]) == 10
    call: Any = {"prune": lambda: saver.aprune([thread]) if use_async else saver.prune(
        [thread]), "delete_for_runs": lambda: (
            saver.adelete_for_runs if use_async else saver.delete_for_runs)(
            [f"{thread}-r{i}" for i in range(4)]),
        "copy_thread": lambda: (saver.acopy_thread if use_async else saver.copy_thread)(
            thread, thread + "-copy")}[op]
    done = call()
    if use_async:
        asyncio.run(done)
    read = thread + "-copy" if op == "copy_thread" else thread
    after = (asyncio.run(g.aget_state(_config(read))) if use_async
             else g.get_state(_config(read))).values
    assert after == before
    if op == "copy_thread":
        assert _rows(tb, read) == rows
    else:
        assert 0 < _rows(tb, thread) < rows  # (the rows no kept checkpoint reads: gone)


@pytest.mark.engines("moto")
def test_prune_of_a_chain_written_by_hand_keeps_it_back_to_its_snapshot(
        tb: TestBackend) -> None:
    """Checkpoints without LangGraph's counters: prune keeps the latest one's chain back
    to the ``_DeltaSnapshot`` its channel is seeded by, and not past it."""
    saver = Saver(agents)
    steps = [(None, None, ["ch"]), (_DeltaSnapshot(["s"]), None, ["ch"]),
             (None, None, ["ch"]), (None, None, ["ch"]), (None, None, [])]
    configs = _chain(saver, "hand", "", steps, {})
    before = saver.get_delta_channel_history(config=configs[-1], channels=["ch"])
    saver.prune(["hand"])
    assert saver.get_delta_channel_history(config=configs[-1], channels=["ch"]) == before
    kept = [t.checkpoint["id"] for t in saver.list(_config("hand"))]
    assert kept == ["0004", "0003", "0002", "0001"]



@pytest.mark.engines("moto")
def test_a_history_walk_is_one_query_and_reads_as_in_memory_saver(tb: TestBackend) -> None:
    """``get_state_history`` of a 10-turn thread (40 checkpoints, each asking its
    DeltaChannel's history; a snapshot every 4 updates) sends one Query, sync and async
    (the thread written once for both: reading it writes nothing): each history walks
    the rows the list read (before: a Query a checkpoint, 33, each reading back to its
    seed), and reads InMemorySaver's values."""
    ours, theirs = graph(Saver(agents), every=4), graph(InMemorySaver(), every=4)
    for g in ours, theirs:
        _turns(g, "walk", 10)
    expected = [s.values for s in theirs.get_state_history(_config("walk"))]

    async def alist(g: Any) -> list[Any]:
        return [s async for s in g.aget_state_history(_config("walk"))]
    for use_async in (False, True):
        rec = Requests(agents)
        got = asyncio.run(alist(ours)) if use_async else list(ours.get_state_history(
            _config("walk")))
        assert Counter(op for op, _ in rec.calls) == {"Query": 1}, use_async
        assert [s.values for s in got] == expected and len(got) == 40


@pytest.mark.engines("moto")
def test_each_history_of_a_listed_checkpoint_is_its_own_objects(tb: TestBackend) -> None:
    """Histories of the checkpoints one list read share its rows, not their values: a
    seed or a write changed in place by its reader (a reducer may) leaves the next
    history of the walk as it was."""
    saver, model = Saver(agents), InMemorySaver()
    steps = [(_DeltaSnapshot(["s"]), None, ["ch"]), (None, None, ["ch"]), (None, None, [])]
    for c in saver, model:
        _chain(c, "own", "", steps, {})
    listed = list(saver.list(_config("own")))
    for t in listed + listed:
        got = saver.get_delta_channel_history(config=t.config, channels=["ch"])
        assert got == model.get_delta_channel_history(config=t.config, channels=["ch"])
        if "seed" in got["ch"]:
            got["ch"]["seed"].value.append("changed")


def _histories(saver: Any, configs: list[Any]) -> list[Any]:
    return [saver.get_delta_channel_history(config=c, channels=["messages"])
            for c in configs]


@pytest.mark.engines("moto")
def test_a_history_walk_reads_the_thread_as_its_list_read_it(tb: TestBackend) -> None:
    """Another writer moving the thread on and deleting it while ``get_state_history`` is
    being iterated (its list read, its snapshots not yet built): the snapshots are the
    thread's as listed (before: their messages were lost)."""
    ours = graph(Saver(agents), every=50)
    _turns(ours, "moved", 3)
    before = [s.values for s in ours.get_state_history(_config("moved"))]
    walk = ours.get_state_history(_config("moved"))
    first = next(walk)
    other = graph(Saver(agents), every=50)  # (another process's saver, say)
    _turns(other, "moved", 1, start=3)
    other.checkpointer.delete_thread("moved")
    assert [first.values, *(s.values for s in walk)] == before


@pytest.mark.engines("moto")
def test_a_listed_config_copied_pickled_or_changed_is_a_plain_config(
        tb: TestBackend) -> None:
    """A listed checkpoint's config carries the rows its list read; copied, deep-copied
    or pickled it is the plain config (no rows, no table), whose history is read again;
    one its caller changed to name another checkpoint answers for that one."""
    saver = Saver(agents)
    _turns(graph(saver, every=50), "plain", 2)
    listed = list(saver.list(_config("plain")))
    configs = [t.config for t in listed]
    expected = _histories(saver, configs)
    for copied in (copy.copy, copy.deepcopy, lambda c: pickle.loads(pickle.dumps(c))):
        plain = [copied(c) for c in configs]
        assert all(type(c) is dict for c in plain) and plain == configs
        rec = Requests(agents)
        assert _histories(saver, plain) == expected
        assert Counter(op for op, _ in rec.calls) == {"Query": len(plain)}
    changed = listed[0].config
    changed["configurable"]["checkpoint_id"] = configs[3]["configurable"]["checkpoint_id"]
    assert _histories(saver, [changed]) == [expected[3]]


@pytest.mark.engines("moto")
def test_a_history_walk_spans_event_loops_and_forks(tb: TestBackend) -> None:
    """A list read on one event loop: the histories of its checkpoints asked on another
    loop, and in a child process of ``os.fork()``, are those of the thread (none reads
    the table again)."""
    saver = Saver(agents)
    _turns(graph(saver, every=50), "loops", 2)
    expected = _histories(saver, [t.config for t in saver.list(_config("loops"))])

    async def alist() -> list[Any]:
        return [t async for t in saver.alist(_config("loops"))]
    listed = asyncio.run(alist())

    async def ahistories() -> list[Any]:
        return [await saver.aget_delta_channel_history(config=t.config, channels=[
            "messages"]) for t in listed]
    rec = Requests(agents)
    assert asyncio.run(ahistories()) == expected and rec.calls == []
    read, write = os.pipe()
    if (child := os.fork()) == 0:  # pragma: no cover (the child's)
        try:
            os.write(write, pickle.dumps((_histories(saver, [t.config for t in listed]),
                                          len(rec.calls))))
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as got:
        assert pickle.loads(got.read()) == (expected, 0)
    os.waitpid(child, 0)


@pytest.mark.engines("moto")
def test_a_walk_of_a_list_of_every_namespace_opens_each_namespaces_own_checkpoint(
        tb: TestBackend) -> None:
    """Two namespaces of one thread whose checkpoints have the same ids (the ids are the
    writer's: ``put`` takes any), one storing the channel's value where the other stores
    none: the history of each checkpoint a list of every namespace returned is
    InMemorySaver's (what the list decoded of one namespace's checkpoint is not the
    other's)."""
    saver, model = Saver(agents), InMemorySaver()
    root = [(_DeltaSnapshot(["r0"]), None, ["ch"]), (None, None, ["ch"]),
            (None, None, ["ch"])]
    child = [(None, None, ["ch"]), (_DeltaSnapshot(["c1"]), None, ["ch"]),
             (None, None, ["ch"])]
    for c in saver, model:
        _chain(c, "same-ids", "", root, {})
        _chain(c, "same-ids", "child:1", child, {})
    for t in saver.list(_config("same-ids")):
        assert saver.get_delta_channel_history(config=t.config, channels=["ch"]) == \
            model.get_delta_channel_history(config=t.config, channels=["ch"]), t.config


@pytest.mark.engines("moto")
def test_a_listed_config_given_to_a_saver_of_another_table_reads_that_table(
        tb: TestBackend, backend: str | None) -> None:
    """Two savers on two tables, a thread of the same id in each: the history asked of
    the second saver with a config the first one's list returned is the second table's
    (the first list's rows are not walked)."""
    with use_tables(other_agents, endpoint_url=backend,
                    name_suffix=worker_suffix()):
        first, second = Saver(agents), Saver(other_agents)
        _chain(first, "twin", "", [(_DeltaSnapshot(["first"]), None, ["ch"]),
                                   (None, None, ["ch"])], {})
        _chain(second, "twin", "", [(_DeltaSnapshot(["second"]), None, ["other"]),
                                    (None, None, ["ch"])], {})
        latest = next(first.list(_config("twin"))).config
        got = second.get_delta_channel_history(config=latest, channels=["ch"])
        assert got == {"ch": {"writes": [], "seed": _DeltaSnapshot(["second"])}}
        assert first.get_delta_channel_history(config=latest, channels=["ch"]) == {"ch": {
            "writes": [("task-a", "ch", "ch@0:task-a"), ("task-b", "ch", "ch@0:task-b")],
            "seed": _DeltaSnapshot(["first"])}}


other_agents = Table("langgraph_delta_other", ttl="expires_at")


@pytest.mark.engines("moto")
@settings(max_examples=examples(15), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(steps=STEPS, forks=st.dictionaries(st.integers(1, 9), st.integers(0, 8), max_size=3),
       before=st.none() | st.integers(0, 9), step=st.none() | st.integers(0, 9),
       limit=st.none() | st.integers(1, 4))
def test_the_history_of_a_checkpoint_listed_before_or_filtered_is_in_memory_savers(
        tb: TestBackend, steps: list[Any], forks: dict[int, int], before: int | None,
        step: int | None, limit: int | None) -> None:
    """A list ``before`` a checkpoint, ``filter``-ed on its metadata and ``limit``-ed
    lists what InMemorySaver lists, and each listed checkpoint's history (walked over the
    rows that list read, or the thread's when they stop short) is InMemorySaver's."""
    forks = {i: p for i, p in forks.items() if p < i < len(steps)}
    built = [((_DeltaSnapshot([f"snap{i}"]) if v == "snapshot" else [f"plain{i}"]) if v
              else None, c, chs) for i, (v, c, chs) in enumerate(steps)]
    saver, model = Saver(agents), InMemorySaver()
    thread = uuid.uuid4().hex
    ours = _chain(saver, thread, "", built, forks)
    _chain(model, thread, "", built, forks)
    kw: dict[str, Any] = {"limit": limit, "filter": None if step is None else {"step": step},
                          "before": None if before is None or before >= len(ours) else ours[
                              before]}
    got, expected = (list(c.list(_config(thread), **kw)) for c in (saver, model))
    assert [t.config for t in got] == [t.config for t in expected]
    for t in got:
        assert saver.get_delta_channel_history(config=t.config, channels=["ch", "other"]
                                               ) == model.get_delta_channel_history(
            config=t.config, channels=["ch", "other"])
    saver.delete_thread(thread)


@pytest.mark.engines("moto")
def test_snapshots_of_a_history_share_no_value(tb: TestBackend) -> None:
    """Each snapshot ``get_state_history`` yields changed in place as it comes (its
    messages, its plain list, each message's own list) leaves every later snapshot as
    InMemorySaver's: no two share an object (the rows one list read are walked for each)."""
    ours, theirs = graph(Saver(agents), every=3), graph(InMemorySaver(), every=3)
    for g in ours, theirs:
        _turns(g, "shared", 4)
    expected = [copy.deepcopy(s.values) for s in theirs.get_state_history(_config("shared"))]
    got = []
    for s in ours.get_state_history(_config("shared")):
        got.append(copy.deepcopy(s.values))
        for value in s.values.values():
            value.append("changed in place")
    assert got == expected


def _nested(checkpointer: Any) -> Any:
    """A parent whose node is ``graph`` as a subgraph (its own checkpoints, in a
    namespace of its own: a ``DeltaChannel`` in each) run on every turn."""
    state = TypedDict("state", {  # type: ignore[misc]  # noqa: UP013
        "messages": Annotated[list[Any], DeltaChannel(_append, snapshot_frequency=3)],
        "plain": Annotated[list[Any], operator.add]})
    builder = StateGraph(state)
    builder.add_node("inner", graph(None, every=2))
    builder.add_edge(START, "inner")
    builder.add_edge("inner", END)
    return builder.compile(checkpointer=checkpointer)


@pytest.mark.engines("moto")
def test_the_history_of_a_graph_and_of_its_subgraph_is_in_memory_savers(
        tb: TestBackend) -> None:
    """A subgraph's checkpoints (a namespace of their own, interleaved with the parent's
    in the thread's rows): the parent's history is InMemorySaver's, and each checkpoint's
    delta history, of a list of every namespace, walked over the rows it read is the one
    the table's read answers."""
    ours, theirs = _nested(Saver(agents)), _nested(InMemorySaver())
    for g in ours, theirs:
        _turns(g, "nested", 3)
    assert [s.values for s in ours.get_state_history(_config("nested"))] == [
        s.values for s in theirs.get_state_history(_config("nested"))]
    saver = ours.checkpointer
    listed = list(saver.list(_config("nested")))
    assert len({t.config["configurable"]["checkpoint_ns"] for t in listed}) == 4
    assert len(listed) == len(list(theirs.checkpointer.list(_config("nested"))))
    for t in listed:  # (the model's namespaces are other task ids: the table's walk)
        assert saver.get_delta_channel_history(config=t.config, channels=["messages"]) \
            == saver.get_delta_channel_history(config=copy.copy(t.config),
                                               channels=["messages"])


@pytest.mark.engines("moto")
@pytest.mark.xfail(strict=True, reason="defect: list(before=) reads the thread from its "
                   "newest row (no key condition) in pages of 2*limit+1 rows, and a walk's "
                   "fallback Query from the newest row too: 25 Queries for a page of 2 "
                   "snapshots 35 checkpoints deep (the whole history is 1). Not buildable "
                   "in the saver alone: dynaorm's Query refuses a range (lt/lte/between) "
                   "over the checkpoint and write types at once (their sort-key templates "
                   "render the bound differently: C#{ns}#{id}# whole, C#{ns}#{id}#W# a "
                   "prefix), and a field value cannot hold '#'; it needs read/keycond.py "
                   "to plan a range bound on a prefix both templates share")
def test_a_page_of_history_before_a_checkpoint_is_a_few_requests(tb: TestBackend) -> None:
    """``get_state_history(before=, limit=)``, the guide's way to page a long history:
    a page of 2 snapshots deep in a 10-turn thread (40 checkpoints, a snapshot every 4
    updates) reads as InMemorySaver's in at most 4 requests (its list, and a walk each
    for the snapshots whose seed the list's rows do not reach), as deep as it lies."""
    ours, theirs = graph(Saver(agents), every=4), graph(InMemorySaver(), every=4)
    _turns(theirs, "paged", 10)
    _replay(theirs.checkpointer, ours.checkpointer, "paged")
    mine, model = (list(g.get_state_history(_config("paged"))) for g in (ours, theirs))
    for at in (5, 20, 35):
        rec = Requests(agents)
        got = [s.values for s in ours.get_state_history(
            _config("paged"), before=mine[at].config, limit=2)]
        assert got == [s.values for s in theirs.get_state_history(
            _config("paged"), before=model[at].config, limit=2)]
        assert len(rec.calls) <= 4, (at, Counter(op for op, _ in rec.calls))
