"""A red team of dynaorm.langgraph.Saver (issue 71, contract 23), on real engines: random
call sequences against LangGraph's own ``InMemorySaver`` (the model), tenants with hostile
ids, answers lost with another writer in the window, the limits of an item and a
transaction, a saver's state across processes and event loops, and what it stores being
what a save of its entities stores. Its own behaviour is in
tests/integration/test_langgraph_saver.py."""

from __future__ import annotations

import asyncio
import os
import pickle
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

from dynaorm import KeyTemplateError, Session, Table, TransactionTooLargeError
from dynaorm.langgraph import Saver
from dynaorm.testing import TestBackend, inject_faults, use_tables, worker_suffix

agents = Table("langgraph_red", ttl="expires_at")
pytestmark = pytest.mark.sync_only  # (the saver's own a... methods are its async variant)


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
        # (a regular write's value is the same on every call of a task: see
        # test_a_tasks_second_regular_write_keeps_the_first for what differs)
        writes = [(c, f"{task}:{c}:{i}" if not c.startswith("__") else [task, self.n])
                  for i, c in enumerate(channels)]
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
        max_examples=int(os.environ.get("DYNAORM_RED_EXAMPLES", "25")), deadline=None,
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
