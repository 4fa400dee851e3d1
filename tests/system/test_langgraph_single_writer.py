"""One writer a thread (``Saver(single_writer=True)``, issue 83, contract 24): the clauses
of langgraph#8796 / langgraph PR #8894 on DynamoDB Local, where the conditions and the
transactions are the engine's. Two workers on one thread: the second refused with
``ThreadBusyError`` while the first runs, nothing of it stored; a worker paused past its
lease refused on its next write; answers lost with another worker in the window;
sequential turns and an interrupt resumed across workers; time travel; and a property over
random interleavings of runs, pauses and lapses: the thread never forks. The lease itself
(``dynaorm.Lease``) is tests/integration/test_leases.py."""

from __future__ import annotations

import asyncio
import concurrent.futures as cf
import operator
import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import suppress
from datetime import timedelta
from typing import Annotated, Any, TypedDict

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    rule,
    run_state_machine_as_test,
)
from langgraph.checkpoint.base import empty_checkpoint
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, interrupt

from dynaorm import DynaormError, OutcomeUnknownError, Table
from dynaorm.langgraph import Saver, ThreadBusyError
from dynaorm.testing import TestBackend, inject_faults
from tests.support.clocks import Clock
from tests.support.engines import on_engine
from tests.support.examples import examples

agents = Table("langgraph_single", ttl="expires_at")
LEASE = timedelta(seconds=30)
# (threads, a fault injector and a clock of its own: sync only; on DynamoDB Local, whose
# conditions and transactions these clauses are about)
pytestmark = [pytest.mark.sync_only, pytest.mark.engines("local")]


class State(TypedDict):
    m: Annotated[list[str], operator.add]


@pytest.fixture
def tb(backend: str | None) -> Iterator[TestBackend]:
    yield from on_engine(backend, agents)


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    found = Clock()
    monkeypatch.setattr(Saver(agents).lease_row, "clock", found)
    return found


class Gate:
    """A node that stops inside until the test lets it go (a worker frozen in a model
    call): ``inside`` is set once it is in."""

    def __init__(self) -> None:
        self.inside, self.go = threading.Event(), threading.Event()

    def __call__(self, state: State) -> dict[str, Any]:
        if state["m"][-1] == "block":
            self.inside.set()
            assert self.go.wait(30)
        return {"m": ["thought"]}


def worker(gate: Gate | None = None) -> Any:
    """A worker's compiled graph: its own saver (its own process's), ``think`` then
    ``reply``; ``reply`` asks a human when the last message is ``"ask"``."""

    def reply(state: State) -> dict[str, Any]:
        if state["m"][-2:-1] == ["ask"]:
            return {"m": [interrupt("approve?")]}
        return {"m": ["reply"]}

    builder = StateGraph(State)
    builder.add_node("think", gate or (lambda state: {"m": ["thought"]}))
    builder.add_node("reply", reply)
    builder.add_edge(START, "think")
    builder.add_edge("think", "reply")
    builder.add_edge("reply", END)
    return builder.compile(checkpointer=Saver(agents, single_writer=True, lease=LEASE))


CONFIG: Any = {"configurable": {"thread_id": "th"}}


def _chain(g: Any) -> list[str]:
    """The root checkpoints' ids, asserting they form one chain (no checkpoint is the
    parent of two): the thread never forked."""
    found = list(g.get_state_history(CONFIG))
    parents = [s.parent_config["configurable"]["checkpoint_id"] for s in found
               if s.parent_config]
    assert len(parents) == len(set(parents)), "the thread forked"
    return [s.config["configurable"]["checkpoint_id"] for s in found]


def _rows(tb: TestBackend) -> list[Any]:
    return [i for i in tb.scan_raw() if i["sk"]["S"] != "L#"]


def _settled(tb: TestBackend) -> list[Any]:
    """The thread's rows once A's writes stopped landing: LangGraph hands a task's
    ``put_writes`` to its background executor even under ``durability="sync"``, so the
    start task's writes may land after A is inside its node (seen under load)."""
    rows, deadline = _rows(tb), time.monotonic() + 30
    while time.monotonic() < deadline:
        time.sleep(0.3)
        if (again := _rows(tb)) == rows:
            return rows
        rows = again
    raise AssertionError("A's rows never settled")


def test_a_second_worker_is_refused_while_the_first_runs(tb: TestBackend,
                                                          clock: Clock) -> None:
    """B's turn while A is inside a node: ThreadBusyError before anything of B's is
    stored; A finishes; B's turn then runs (A parked the thread at its end)."""
    gate = Gate()
    a, b = worker(gate), worker()
    with cf.ThreadPoolExecutor(1) as pool:
        running = pool.submit(a.invoke, {"m": ["block"]}, CONFIG, durability="sync")
        assert gate.inside.wait(30)
        before = _settled(tb)
        with pytest.raises(ThreadBusyError) as busy:
            b.invoke({"m": ["b's"]}, CONFIG)
        assert _rows(tb) == before
        assert busy.value.thread_id == "th" and busy.value.is_stale_write_owner_error
        gate.go.set()
        assert running.result()["m"] == ["block", "thought", "reply"]
    assert b.invoke({"m": ["b's"]}, CONFIG)["m"][-3:] == ["b's", "thought", "reply"]
    assert len(_chain(b)) == 8


def test_a_worker_paused_past_its_lease_is_refused_on_its_next_write(
        tb: TestBackend, clock: Clock) -> None:
    """langgraph#8796: A frozen in a model call past its lease; B takes the thread and
    finishes; A, thawed, is refused on its next write: the thread holds B's turn, never
    a fork, and nothing A wrote after B took the thread."""
    gate = Gate()
    a, b = worker(gate), worker()
    with cf.ThreadPoolExecutor(1) as pool:
        running = pool.submit(a.invoke, {"m": ["block"]}, CONFIG, durability="sync")
        assert gate.inside.wait(30)
        _settled(tb)
        clock.now += LEASE.total_seconds() * 4 / 3 + 1
        assert b.invoke({"m": ["b's"]}, CONFIG)["m"] == ["block", "b's", "thought", "reply"]
        after_b = _rows(tb)
        gate.go.set()
        with pytest.raises(ThreadBusyError):
            running.result()
    assert _rows(tb) == after_b
    assert b.get_state(CONFIG).values["m"] == ["block", "b's", "thought", "reply"]
    _chain(b)


@pytest.mark.parametrize("use_async", [False, True])
def test_sequential_turns_reach_different_workers_back_to_back(
        tb: TestBackend, clock: Clock, use_async: bool) -> None:
    """Each turn on the other worker, at once (no lease waited out): every one runs,
    sync or async, and the thread is one chain."""
    workers = [worker(), worker()]
    for turn in range(6):
        g, message = workers[turn % 2], {"m": [f"user {turn}"]}
        if use_async:
            asyncio.run(g.ainvoke(message, CONFIG))
        else:
            g.invoke(message, CONFIG)
    assert workers[0].get_state(CONFIG).values["m"] == [
        m for turn in range(6) for m in (f"user {turn}", "thought", "reply")]
    assert len(_chain(workers[1])) == 6 * 4


@pytest.mark.parametrize("use_async", [False, True])
def test_an_interrupted_thread_is_resumed_by_another_worker(
        tb: TestBackend, clock: Clock, use_async: bool) -> None:
    """A's turn stops at ``interrupt()`` (it parks the thread); B, another worker, resumes
    it at once; then A takes the next turn."""
    a, b = worker(), worker()

    def run(g: Any, arg: Any) -> Any:
        return asyncio.run(g.ainvoke(arg, CONFIG)) if use_async else g.invoke(arg, CONFIG)
    run(a, {"m": ["ask"]})
    assert b.get_state(CONFIG).next == ("reply",)
    assert run(b, Command(resume="approved"))["m"] == ["ask", "thought", "approved"]
    assert run(a, {"m": ["next"]})["m"][-3:] == ["next", "thought", "reply"]
    _chain(a)


def test_time_travel_by_the_holder_and_a_fork_from_the_past(tb: TestBackend,
                                                            clock: Clock) -> None:
    """After a turn, ``update_state`` from an older checkpoint (a fork meant) is written;
    the next turn, on another worker, continues from it. While a run holds the thread,
    an update_state of no run is refused, and one by the holder's run is not."""
    a, b = worker(), worker()
    a.invoke({"m": ["first"]}, CONFIG)
    past = list(a.get_state_history(CONFIG))[1]  # (after ``think``, before ``reply``)
    assert past.values["m"] == ["first", "thought"]
    forked = a.update_state(past.config, {"m": ["edited"]})
    assert b.invoke({"m": ["next"]}, CONFIG)["m"] == [
        "first", "thought", "edited", "next", "thought", "reply"]
    assert b.get_state(CONFIG).parent_config is not None and forked["configurable"][
        "checkpoint_id"] in [s.config["configurable"]["checkpoint_id"]
                             for s in b.get_state_history(CONFIG)]
    gate = Gate()
    c = worker(gate)
    mine: Any = {"configurable": {"thread_id": "th", "run_id": "run-c"}}
    with cf.ThreadPoolExecutor(1) as pool:
        running = pool.submit(c.invoke, {"m": ["block"]}, mine, durability="sync")
        assert gate.inside.wait(30)
        with pytest.raises(ThreadBusyError):
            a.update_state(CONFIG, {"m": ["meddling"]})
        c.update_state(mine, {"m": ["the holder's own"]})
        gate.go.set()
        with pytest.raises(ThreadBusyError):  # (its loop's next checkpoint is the child
            running.result()  # of one the update moved the thread on from: no fork)
    assert "meddling" not in b.get_state(CONFIG).values["m"]
    assert b.get_state(CONFIG).values["m"][-2:] == ["block", "the holder's own"]


def _put(saver: Saver, run: str | None, parent: str | None, cid: str, last: bool = False
         ) -> Any:
    """A root checkpoint of ``run`` (``None``: no run), the child of ``parent``; ``last``:
    nothing left to run (it parks the thread)."""
    cp = empty_checkpoint()
    cp["id"] = cid
    cp["channel_values"] = {} if last else {"branch:to:next": None}
    conf: dict[str, Any] = {"thread_id": "th", "checkpoint_ns": ""}
    if run:
        conf["run_id"] = run
    if parent:
        conf["checkpoint_id"] = parent
    return saver.put({"configurable": conf}, cp, {"source": "loop", "step": 1}, {})


def _writes(saver: Saver, run: str, at: str, value: str) -> None:
    saver.put_writes({"configurable": {"thread_id": "th", "checkpoint_ns": "",
                                       "checkpoint_id": at, "run_id": run}},
                     [("m", value)], f"task-{value}")


def test_a_put_whose_answer_is_lost_with_another_worker_in_the_window(
        tb: TestBackend, clock: Clock) -> None:
    """A's put applied, its answer lost; in the window B (another run) tries to extend the
    thread: refused, A holds it. A, told the truth (applied, or unknown), still holds it;
    B's attempt stored nothing."""
    a, b = (Saver(agents, single_writer=True, lease=LEASE) for _ in range(2))
    _put(a, "A", None, "0001")
    refused: list[Exception] = []

    def in_the_window() -> None:
        try:
            _put(b, "B", "0002", "0003")
        except ThreadBusyError as exc:
            refused.append(exc)
    with inject_faults(agents) as faults:
        faults.lose_answer("TransactWriteItems", after=in_the_window)
        with suppress(OutcomeUnknownError):
            _put(a, "A", "0001", "0002")
    assert len(refused) == 1
    _put(a, "A", "0002", "0004", last=True)
    ids = [i["sk"]["S"] for i in _rows(tb)]
    assert ids == ["C#_#0001#", "C#_#0002#", "C#_#0004#"]


def test_a_put_whose_answer_is_lost_is_retried_by_its_run(tb: TestBackend,
                                                          clock: Clock) -> None:
    """Red team of issue 83: A's put applied, its answer lost (B refused in the window);
    A puts the same checkpoint again, as a caller told "unknown" does. Before, the retry
    was refused with ThreadBusyError ("another run's"): the head had moved to A's own
    checkpoint, which the retry's parent no longer was. The retry is accepted, stores
    nothing new, and A goes on."""
    a, b = (Saver(agents, single_writer=True, lease=LEASE) for _ in range(2))
    _put(a, "A", None, "0001")
    refused: list[Exception] = []

    def in_the_window() -> None:
        try:
            if not refused:
                _put(b, "B", "0001", "0003")
        except ThreadBusyError as exc:
            refused.append(exc)
    with inject_faults(agents) as faults:  # (every attempt's answer: unknown to A)
        faults.lose_answer("TransactWriteItems", times=None, after=in_the_window)
        with pytest.raises(OutcomeUnknownError):
            _put(a, "A", "0001", "0002")
    assert len(refused) == 1
    before = _rows(tb)
    _put(a, "A", "0001", "0002")  # (the same put again)
    assert [i["sk"]["S"] for i in _rows(tb)] == [i["sk"]["S"] for i in before] == [
        "C#_#0001#", "C#_#0002#"]
    with pytest.raises(ThreadBusyError):
        _put(b, "B", "0002", "0003")
    _put(a, "A", "0002", "0004", last=True)
    assert [i["sk"]["S"] for i in _rows(tb)] == ["C#_#0001#", "C#_#0002#", "C#_#0004#"]


@pytest.mark.engines("moto", "local")
@pytest.mark.parametrize("on", ["its own checkpoint", "the checkpoint it read",
                                "its own checkpoint, before its put"])
def test_a_run_refused_after_a_collision_stores_nothing_and_takes_nothing(
        tb: TestBackend, clock: Clock, on: str) -> None:
    """Issue 90: two turns of one thread collide (a double-sent message): A and B both
    read 0001; A's turn extends it and parks at 0002; B's put of 0003 (a child of 0001)
    is refused. B's task writes on its never-stored 0003 (LangGraph writes them in the
    background: after its put, or before it), or B's input's on 0001 (a
    ``DeltaChannel``'s): refused, or deleted by the refused put; no lease taken. Before,
    they were stored (a write row for a checkpoint never stored) and took the lease:
    the thread was B's for the whole lease, the winner's next turn refused. The next
    turn, on any worker, is accepted at once."""
    a, b, c = (Saver(agents, single_writer=True, lease=LEASE) for _ in range(3))
    _put(a, "A1", None, "0001", last=True)
    _put(a, "A2", "0001", "0002", last=True)
    before = _rows(tb)
    if on == "its own checkpoint, before its put":
        _writes(b, "B", "0003", "b's")  # (on a checkpoint not stored yet: accepted)
    else:
        with pytest.raises(ThreadBusyError):
            _put(b, "B", "0001", "0003")
    with pytest.raises(ThreadBusyError):
        if on == "its own checkpoint, before its put":
            _put(b, "B", "0001", "0003")
        else:
            _writes(b, "B", "0003" if on == "its own checkpoint" else "0001", "b's")
    assert _rows(tb) == before
    _put(c, "A3", "0002", "0004", last=True)  # (at once: the clock never moved)
    assert [i["sk"]["S"] for i in _rows(tb)] == ["C#_#0001#", "C#_#0002#", "C#_#0004#"]


@pytest.mark.parametrize("what", ["A's put", "A's writes"])
@pytest.mark.parametrize("how", ["prune", "delete_for_runs"])
def test_a_write_inside_a_prunes_window_is_refused(
        tb: TestBackend, clock: Clock, monkeypatch: pytest.MonkeyPatch, how: str,
        what: str) -> None:
    """Red team of issues 83 and 90: a prune (strategy="delete") or a delete_for_runs of A
    reads the thread while A holds it (0001..0003), then A puts 0004 (or its task writes
    on its head 0003) before the delete's writes. Before, the put was kept (and the head
    with it), the writes stayed, write rows whose checkpoint the delete removed. Both
    take the lease first (a new epoch), as delete_thread does: A's write is refused and
    stores nothing, the thread goes whole with its lease, A's next write is refused, and
    a new turn takes the thread at once."""
    a, b = (Saver(agents, single_writer=True, lease=LEASE) for _ in range(2))
    _put(a, "A", None, "0001")
    _put(a, "A", "0001", "0002")
    _put(a, "A", "0002", "0003")

    def inside() -> None:
        if what == "A's put":
            _put(a, "A", "0003", "0004", last=True)
        else:
            _writes(a, "A", "0003", "late")

    refused = _refused_in_the_window(monkeypatch, inside, lambda deleter: (
        deleter.prune(["th"], strategy="delete") if how == "prune"
        else deleter.delete_for_runs(["A"])))
    assert len(refused) == 1 and tb.scan_raw() == []
    with pytest.raises(ThreadBusyError, match="no lease is stored"):
        _writes(a, "A", "0003", "later")
    _put(b, "B", "0003", "0005", last=True)
    assert [i["sk"]["S"] for i in _rows(tb)] == ["C#_#0005#"]


def _refused_in_the_window(monkeypatch: pytest.MonkeyPatch, write: Callable[[], Any],
                           delete: Callable[[Saver], Any]) -> list[ThreadBusyError]:
    """``delete`` (a call of a Saver of its own) with ``write`` in its window (right after
    its first read of the thread): the refusals ``write`` met."""
    refused: list[ThreadBusyError] = []

    def inside() -> None:
        try:
            write()
        except ThreadBusyError as exc:
            refused.append(exc)
    deleter = Saver(agents)
    _window(monkeypatch, deleter, first=inside)
    delete(deleter)
    return refused


def _window(monkeypatch: pytest.MonkeyPatch, deleter: Saver, first: Callable[[], Any]) -> None:
    """A second writer in ``deleter``'s window: ``first`` runs right after its first read
    of the thread."""
    read, reads = deleter._thread, []

    def in_the_window(s: Any, thread_id: str, deleting: bool = False) -> Any:
        found = yield from read(s, thread_id, deleting)
        reads.append(thread_id)
        if len(reads) == 1:
            first()
        return found
    monkeypatch.setattr(deleter, "_thread", in_the_window)


@pytest.mark.engines("moto", "local")
@pytest.mark.parametrize("what", ["A's step", "A's last put", "A's writes", "B's turn",
                                  "a write of no run"])
def test_delete_thread_takes_the_lease_from_a_run_inside_its_window(
        tb: TestBackend, clock: Clock, monkeypatch: pytest.MonkeyPatch, what: str) -> None:
    """Issue 90: delete_thread reads the thread while A holds it (0001, 0002), then A
    (its step: writes on 0002 and its put of 0003; its last put; its writes), B (a new
    run) or a write of no run writes. Before, delete_thread deleted under the run: a
    write landing in its window kept the thread's lease (a run that keeps the thread)
    and that run's rows stayed, or was left behind. delete_thread takes the lease
    first (a new epoch): each is refused, nothing stored, and the thread goes whole; A's
    next write is refused, a new turn takes the thread at once."""
    a, b = (Saver(agents, single_writer=True, lease=LEASE) for _ in range(2))
    _put(a, "A", None, "0001")
    _put(a, "A", "0001", "0002")

    def inside() -> None:
        if what == "A's step":
            _writes(a, "A", "0002", "step")
            _put(a, "A", "0002", "0003")
        elif what in ("B's turn", "a write of no run"):
            _put(b, "B" if what == "B's turn" else None, "0002", "0003")
        elif what == "A's last put":
            _put(a, "A", "0002", "0003", last=True)
        else:
            _writes(a, "A", "0002", "late")

    refused = _refused_in_the_window(monkeypatch, inside,
                                     lambda deleter: deleter.delete_thread("th"))
    assert len(refused) == 1 and tb.scan_raw() == []
    with pytest.raises(ThreadBusyError, match="no lease is stored"):
        _writes(a, "A", "0002", "later")
    _put(b, "B2", None, "0004", last=True)
    assert [i["sk"]["S"] for i in _rows(tb)] == ["C#_#0004#"]


def test_writes_whose_answer_is_lost_while_the_lease_lapses_and_another_takes_it(
        tb: TestBackend, clock: Clock) -> None:
    """A's writes applied (A held the thread), the answer lost; in the window A's lease
    lapses and B takes the thread. A is told nothing untrue (its writes were stored
    before B took over), and A's next write is refused: no fork."""
    a, b = (Saver(agents, single_writer=True, lease=LEASE) for _ in range(2))
    _put(a, "A", None, "0001")

    def in_the_window() -> None:
        clock.now += LEASE.total_seconds() * 4 / 3 + 1
        _put(b, "B", "0001", "0002")
    with inject_faults(agents) as faults:
        faults.lose_answer("TransactWriteItems", after=in_the_window)
        with suppress(OutcomeUnknownError, ThreadBusyError):
            _writes(a, "A", "0001", "a's")
    with pytest.raises(ThreadBusyError):
        _put(a, "A", "0001", "0003")
    assert [i["sk"]["S"] for i in _rows(tb) if "#W#" not in i["sk"]["S"]] == [
        "C#_#0001#", "C#_#0002#"]


def test_writes_whose_every_answer_is_lost_are_never_said_unstored(
        tb: TestBackend, clock: Clock) -> None:
    """Red team of issue 83: A's writes applied while A held the thread, every answer
    lost; in the window A's lease lapses and B takes the thread. put_writes reads back
    and finds them all stored: before, it then sent the lease's renewal alone, refused,
    and raised ThreadBusyError ("nothing of the write was stored") for writes that were.
    Now it says the outcome is unknown (they may be its first attempt's); A's next write
    is refused."""
    a, b = (Saver(agents, single_writer=True, lease=LEASE) for _ in range(2))
    _put(a, "A", None, "0001")

    def in_the_window() -> None:  # (B takes the lapsed lease: one UpdateItem)
        if clock.now < 1_800_000_100:
            clock.now += LEASE.total_seconds() * 4 / 3 + 100
            s = tb.session()
            s.lease(b.lease_row, holder="run:B", duration=LEASE, thread_id="th")
            s.commit()
    with inject_faults(agents) as faults:
        faults.lose_answer("TransactWriteItems", times=None, after=in_the_window)
        with pytest.raises(OutcomeUnknownError):
            _writes(a, "A", "0001", "a's")
    assert [i["sk"]["S"] for i in _rows(tb)] == ["C#_#0001#", "C#_#0001#W#task-a's#0"]
    with pytest.raises(ThreadBusyError):
        _put(a, "A", "0001", "0003")


class Workers(RuleBasedStateMachine):
    """Three workers run turns of one thread as LangGraph does (each loads the thread's
    head when it starts, then writes its task's writes and a child checkpoint a step,
    its last checkpoint parking the thread; a task's writes may come before their
    checkpoint, as LangGraph's background writes do); their steps interleave at random,
    a put's answer is lost, and the clock jumps past leases. Checked against a model of
    who holds the thread (issue 90): the thread never forks, no write refused is stored,
    no write row is left without its checkpoint, while the model says nobody holds
    the thread (every run parked, refused, or its lease lapsed) a new turn on any
    worker is accepted at once, and while a run holds it (its last write less than a
    lease ago) a new turn on another worker is refused. A run whose first writes came
    ahead of their checkpoint holds it parked (anyone's) until it puts a later
    checkpoint than theirs."""

    tb: TestBackend
    clock: Clock

    @initialize()
    def start(self) -> None:
        self.savers = [Saver(agents, single_writer=True, lease=LEASE) for _ in range(3)]
        self.runs: dict[int, dict[str, Any]] = {}
        self.n = 0
        self.refused: set[str] = set()
        self.thread = f"p{os.urandom(6).hex()}"
        self.holder: str | None = None  # (the model: the run holding the thread; "?")
        self.since = 0.0  # (when the holder last wrote: it holds a lease from then)
        self.headed: bool | None = False  # (whether the thread has a head; None: unknown)

    def _id(self) -> str:
        self.n += 1
        return f"{self.n:04d}"

    def _conf(self, run: str, at: str | None) -> Any:
        conf = {"thread_id": self.thread, "checkpoint_ns": "", "run_id": run}
        return {"configurable": conf | ({"checkpoint_id": at} if at else {})}

    @rule(w=st.integers(0, 2))
    def begin(self, w: int) -> None:
        """Worker ``w`` starts a turn (a new run): it reads the thread's head."""
        if w in self.runs:
            return
        latest = self.savers[w].get_tuple({"configurable": {"thread_id": self.thread,
                                                            "checkpoint_ns": ""}})
        self.runs[w] = {"id": f"run-{self._id()}", "head": latest and latest.checkpoint[
            "id"], "steps": 0}

    @rule(w=st.integers(0, 2), last=st.booleans(), ahead=st.booleans(),
          lose=st.sampled_from((False, False, False, True)), probe=st.booleans())
    def step(self, w: int, last: bool, ahead: bool, lose: bool, probe: bool) -> None:
        """Worker ``w``'s run writes its next step (a worker without a turn starts one);
        ``probe``: then a worker without a turn tries one (:meth:`intrude`)."""
        self.begin(w)
        self._step(w, last, ahead, lose)
        if probe:
            self.intrude(min({0, 1, 2} - set(self.runs), default=w))

    def _step(self, w: int, last: bool, ahead: bool = False, lose: bool = False) -> bool:
        """Worker ``w``'s run writes its next step: a write on its head, or (``ahead``)
        on the step's checkpoint before it; then the checkpoint, its answer lost when
        ``lose``. Whether it was refused."""
        run = self.runs.get(w)
        if run is None:
            return False
        saver, cid = self.savers[w], self._id()
        on, attempt = (cid, f"a{cid}") if ahead else (run["head"], f"w{cid}")
        try:
            if on is not None:
                saver.put_writes(self._conf(run["id"], on), [("m", cid)], f"task-{attempt}")
                if ahead and not run.get("held") and self.headed is not False:
                    run["held"], run["parked"] = run["id"], cid  # (a run's first writes
                    if self.headed is None:  # ahead of their checkpoint: parked, but on
                        self.holder = "?"  # a thread without a head yet)
                elif run.get("parked") is None:
                    self._holds(run)
            attempt = cid
            cp = empty_checkpoint()
            cp["id"] = cid
            cp["channel_values"] = {} if last else {"branch:to:node": None}
            with inject_faults(agents) as faults:
                if lose:
                    faults.lose_answer("TransactWriteItems")
                run["head"] = saver.put(self._conf(run["id"], run["head"]), cp,
                                        {"source": "loop", "step": run["steps"]}, {})[
                    "configurable"]["checkpoint_id"]
            run["steps"] += 1
        except ThreadBusyError:
            self.refused.add(attempt)  # (LangGraph's run ends with the error)
            del self.runs[w]
            return True
        except OutcomeUnknownError:  # (the run ends; who holds is not known)
            self.holder = "?"
            self.headed = self.headed or None
            del self.runs[w]
            return False
        self.headed = True
        if last:
            self.holder = None
            del self.runs[w]
        elif run.get("parked") is None or cid > run["parked"]:  # (a later checkpoint
            run["parked"] = None  # than the parked writes' takes the thread up)
            self._holds(run)
        return False

    def _holds(self, run: dict[str, Any]) -> None:
        self.holder = run["held"] = run["id"]
        self.since = self.clock.now

    @rule(w=st.integers(0, 2))
    def next_turn(self, w: int) -> None:
        """While nobody holds the thread, a new turn on worker ``w`` is accepted at once."""
        if self.holder is not None or w in self.runs:
            return
        self.begin(w)
        assert not self._step(w, last=True), "a free thread refused a new turn"

    @rule(w=st.integers(0, 2))
    def intrude(self, w: int) -> None:
        """While a run holds the thread, a new turn on worker ``w`` is refused (and its
        attempt stored nothing: the invariant)."""
        if self.holder in (None, "?") or w in self.runs or (
                self.clock.now - self.since >= LEASE.total_seconds()):
            return
        self.begin(w)
        assert self._step(w, last=True), "a new turn took the thread a run held"

    @rule(seconds=st.sampled_from([10, 41]))
    def wait(self, seconds: int) -> None:
        self.clock.now += seconds
        if seconds > LEASE.total_seconds() * 4 / 3:
            self.holder = None  # (every lease lapsed)

    @invariant()
    def never_forked(self) -> None:
        rows = [i for i in self.tb.scan_raw() if i["pk"]["S"] == f"LG#{self.thread}"
                and i["sk"]["S"] != "L#"]
        parents = [i["parent"]["S"] if "parent" in i else None for i in rows
                   if "#W#" not in i["sk"]["S"]]
        assert len(parents) == len(set(parents)), "the thread forked"  # (one root too)
        checkpoints = {i["sk"]["S"].split("#")[2] for i in rows if "#W#" not in i["sk"]["S"]}
        stored = checkpoints | {
            i["sk"]["S"].split("#W#task-")[-1] for i in rows if "#W#" in i["sk"]["S"]}
        assert not self.refused & stored, "a refused write was stored"
        assert {i["sk"]["S"].split("#")[2] for i in rows} <= checkpoints, (
            "a write row without its checkpoint")


@pytest.mark.engines("moto", "local")
def test_no_interleaving_of_workers_forks_the_thread(tb: TestBackend, clock: Clock) -> None:
    Workers.tb, Workers.clock = tb, clock
    run_state_machine_as_test(Workers, settings=settings(
        max_examples=examples(int(os.environ.get("DYNAORM_LEASE_EXAMPLES", 10))),
        stateful_step_count=15, deadline=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]))


def test_a_rollback_of_the_last_run_leaves_the_thread_writable(tb: TestBackend,
                                                               clock: Clock) -> None:
    """``delete_for_runs`` of the latest run deletes the thread's head: the lease forgets
    it, and the next turn starts from what is left. ``delete_thread`` deletes the lease
    too: a run still holding it is refused."""
    a, b = worker(), worker()
    a.invoke({"m": ["kept"]}, {"configurable": {"thread_id": "th", "run_id": "r1"}})
    a.invoke({"m": ["undone"]}, {"configurable": {"thread_id": "th", "run_id": "r2"}})
    a.checkpointer.delete_for_runs(["r2"])
    assert b.invoke({"m": ["next"]}, CONFIG)["m"] == [
        "kept", "thought", "reply", "next", "thought", "reply"]
    _chain(b)
    gate = Gate()
    c = worker(gate)
    with cf.ThreadPoolExecutor(1) as pool:
        running = pool.submit(c.invoke, {"m": ["block"]}, CONFIG, durability="sync")
        assert gate.inside.wait(30)
        b.checkpointer.delete_thread("th")
        gate.go.set()
        with pytest.raises(ThreadBusyError, match="no lease is stored"):
            running.result()
    assert tb.scan_raw() == []


def test_a_run_writes_from_several_event_loops_and_a_forked_child(tb: TestBackend,
                                                                   clock: Clock) -> None:
    """A run named by its run_id writes from one event loop, then another, each time two
    writes at once (they wait on the run's lock: one per loop); a child of ``os.fork()``
    taken while a thread of the parent held the saver's lock writes a run of its own."""
    saver = Saver(agents, single_writer=True, lease=LEASE)
    first = _put(saver, "r", None, "0001")
    mine = {"configurable": {**first["configurable"], "run_id": "r"}}

    async def two_at_once(n: int) -> None:
        await asyncio.gather(*(saver.aput_writes(mine, [("m", f"{n}{i}")], f"t{n}{i}")
                               for i in range(2)))
    for n in range(2):
        asyncio.run(two_at_once(n))
    found = saver.get_tuple(first)
    assert found is not None and len(found.pending_writes or []) == 4
    with saver.tenures._lock:  # (held by this thread while the process forks)
        child = os.fork()
        if child == 0:  # pragma: no cover (the child reports by its exit status)
            code = 1
            try:
                _put(saver, "r", "0001", "0002", last=True)
                code = 0
            finally:
                os._exit(code)
    deadline = time.monotonic() + 60
    while (done := os.waitpid(child, os.WNOHANG))[0] == 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    if done[0] == 0:
        os.kill(child, 9)
    assert done[0] == child and os.waitstatus_to_exitcode(done[1]) == 0


def test_a_run_id_used_again_takes_a_free_thread(tb: TestBackend, clock: Clock) -> None:
    """A run id an application gives again (its own request id per conversation, a
    retried run's) names a later invocation: after another worker's run took the
    thread and let it go, the first worker's next turn (or resume) under the old id is
    its owner's, not refused as "another run's" while nobody holds the thread. Before:
    ThreadBusyError ("held by 'run:r2' ... and released"), as the saver renewed the
    old tenure by its epoch."""
    a, b = worker(), worker()
    a.invoke({"m": ["one"]}, {"configurable": {"thread_id": "th", "run_id": "r1"}})
    b.invoke({"m": ["two"]}, {"configurable": {"thread_id": "th", "run_id": "r2"}})
    a.invoke({"m": ["three"]}, {"configurable": {"thread_id": "th", "run_id": "r1"}})
    b.invoke({"m": ["ask"]}, {"configurable": {"thread_id": "th", "run_id": "r3"}})
    assert a.invoke(Command(resume="yes"), {"configurable": {"thread_id": "th",
                                                             "run_id": "r1"}})["m"][-1] == "yes"
    assert a.get_state(CONFIG).values["m"] == [
        "one", "thought", "reply", "two", "thought", "reply", "three", "thought", "reply",
        "ask", "thought", "yes"]
    _chain(a)


def test_without_langgraphs_run_control_a_late_step_never_forks_the_thread(
        tb: TestBackend, clock: Clock, monkeypatch: pytest.MonkeyPatch) -> None:
    """Another LangGraph version, whose config has no ``__pregel_runtime`` (the run's
    control): a graph's writes without a run id are then runs of their own, one write
    long. B's turn while A is inside a node is accepted (no run holds the thread); A's
    late step must then be refused (its parent is no longer the head), never stored as
    a second child: the thread is B's turn, A told ThreadBusyError. Before: A's step was
    stored beside B's (a run-less write carried no head condition), the thread forked
    and B's turn was lost from it though B's invoke returned it."""
    import dynaorm_langgraph.fence as fence
    import dynaorm_langgraph.saver as saver

    monkeypatch.setattr(fence, "_RUNTIME", "__a_key_langgraph_does_not_set")
    monkeypatch.setattr(saver, "CONTROLLED", False)  # (as the saver reads it)
    gate = Gate()
    a, b = worker(gate), worker()
    with cf.ThreadPoolExecutor(1) as pool:
        running = pool.submit(a.invoke, {"m": ["block"]}, CONFIG, durability="sync")
        assert gate.inside.wait(30)
        told_b = b.invoke({"m": ["b's"]}, CONFIG)["m"]
        gate.go.set()
        with pytest.raises(ThreadBusyError):
            running.result()
    assert told_b == ["block", "b's", "thought", "reply"]
    assert b.get_state(CONFIG).values["m"] == told_b
    _chain(b)


def test_every_write_of_a_graph_names_its_run() -> None:
    """A canary of the LangGraph installed: every write of an invocation, its subgraph's
    included, carries LangGraph's run control (``__pregel_runtime``'s ``control``), so a
    run without a run id is told from a direct call (``update_state``). Without it the
    single writer falls back to one-write runs (the test above)."""
    from langgraph.checkpoint.memory import InMemorySaver

    from dynaorm_langgraph.fence import holder_of

    seen: list[Any] = []

    class Spy(InMemorySaver):
        def put(self, config: Any, *args: Any) -> Any:
            seen.append(config)
            return super().put(config, *args)

        def put_writes(self, config: Any, *args: Any, **kw: Any) -> None:
            seen.append(config)
            super().put_writes(config, *args, **kw)

    sub = StateGraph(State)
    sub.add_node("inner", lambda state: {"m": ["inner"]})
    sub.add_edge(START, "inner")
    builder = StateGraph(State)
    builder.add_node("outer", sub.compile())
    builder.add_edge(START, "outer")
    g = builder.compile(checkpointer=Spy())
    g.invoke({"m": ["x"]}, CONFIG)
    runs = {holder_of(c) and holder_of(c)[0] for c in seen}  # type: ignore[index]
    assert len(seen) > 4 and len(runs) == 1 and None not in runs
    assert any(c["configurable"].get("checkpoint_ns") for c in seen)
    seen.clear()
    g.update_state(CONFIG, {"m": ["y"]})
    assert seen and all(holder_of(c) is None for c in seen)


def _stray(tb: TestBackend) -> list[str]:
    """The write rows whose checkpoint is not stored (the thread's root namespace)."""
    rows = [i["sk"]["S"] for i in _rows(tb)]
    stored = {sk.split("#")[2] for sk in rows if "#W#" not in sk}
    return [sk for sk in rows if "#W#" in sk and sk.split("#")[2] not in stored]


@pytest.mark.engines("moto", "local")
@pytest.mark.parametrize("every", [False, True])
def test_writes_ahead_whose_answer_is_lost_while_another_turn_takes_the_thread(
        tb: TestBackend, clock: Clock, every: bool) -> None:
    """Red team of issue 90: B's first writes come ahead of their checkpoint 0003 (as
    LangGraph's background writes do) and acquire the thread parked; their answer is lost
    and, in the window, A2's turn takes the parked thread and moves it on (0002). B
    retries, finds its rows stored and the thread A2's: it ends (OutcomeUnknownError,
    or ThreadBusyError; or, the transaction's retry answered by its token, success), and
    its put of 0003 is refused. No row of B's may stay: a write row whose checkpoint is
    never stored. (Held: the refused put deletes them.)"""
    a, b = (Saver(agents, single_writer=True, lease=LEASE) for _ in range(2))
    _put(a, "A1", None, "0001", last=True)

    def in_the_window() -> None:
        if not moved:
            faults.clear()  # (A2's own answers are not lost)
            moved.append(_put(a, "A2", "0001", "0002"))
            if every:
                faults.lose_answer("TransactWriteItems", times=None)
    moved: list[Any] = []
    with inject_faults(agents) as faults:
        # (its first attempt, on the head's condition, is refused: the second, which
        # acquires the thread parked, is applied and its answer lost; ``every``: every
        # answer after it too)
        faults.lose_answer("TransactWriteItems", skip=1, after=in_the_window)
        with suppress(OutcomeUnknownError, ThreadBusyError):
            _writes(b, "B", "0003", "b's")
    with pytest.raises(ThreadBusyError):
        _put(b, "B", "0001", "0003")  # (were LangGraph to put it: refused)
    assert _stray(tb) == []


def test_a_run_whose_first_writes_came_ahead_holds_the_thread_from_its_next_checkpoint(
        tb: TestBackend, clock: Clock) -> None:
    """B's first writes come ahead of their checkpoint 0002 (LangGraph's background
    writes) and acquire the thread parked; its put of 0002 leaves it parked, its next
    checkpoint 0003 takes it up: A's turn is then refused, however soon it comes. (The
    parked acquire counted as a renewal: within a third of the lease of it, 0003 left the
    thread parked, and A's turn took it from the running B; seen in the threads example.)"""
    a, b = (Saver(agents, single_writer=True, lease=LEASE) for _ in range(2))
    _put(a, "A1", None, "0001", last=True)
    _writes(b, "B", "0002", "b's")
    _put(b, "B", "0001", "0002")
    _put(b, "B", "0002", "0003")
    with pytest.raises(ThreadBusyError):
        _put(a, "A2", "0003", "0004")
    _put(b, "B", "0003", "0005", last=True)  # (B, which held it all along, goes on)


@pytest.mark.engines("moto", "local")
def test_many_writes_ahead_of_their_checkpoint_are_accepted(tb: TestBackend,
                                                           clock: Clock) -> None:
    """Red team of issue 90: a task with 150 writes (a fan-out of ``Send``s) stored ahead
    of its checkpoint 0002 (LangGraph's background writes) on a free thread: accepted, in
    two commits, then the checkpoint's put; the task's writes are all read back."""
    a, b = (Saver(agents, single_writer=True, lease=LEASE) for _ in range(2))
    _put(a, "A1", None, "0001", last=True)
    conf: Any = {"configurable": {"thread_id": "th", "checkpoint_ns": "",
                                  "checkpoint_id": "0002", "run_id": "B"}}
    b.put_writes(conf, [("m", str(i)) for i in range(150)], "task-b")
    _put(b, "B", "0001", "0002", last=True)
    found = b.get_tuple(conf)
    assert found is not None and len(found.pending_writes or []) == 150


def _after_the_first_commit(monkeypatch: pytest.MonkeyPatch, saver: Saver,
                            between: Callable[[], Any]) -> list[int]:
    """``between`` runs once ``saver``'s first commit is answered, before its next; the
    commits answered (one entry each)."""
    commit, done = saver._commit, []

    def in_the_window(*args: Any, **kwargs: Any) -> Any:
        found = yield from commit(*args, **kwargs)
        done.append(1)
        if len(done) == 1:
            between()
        return found
    monkeypatch.setattr(saver, "_commit", in_the_window)
    return done


def _b_writes_150(b: Saver, checkpoint_id: str) -> None:
    """Run B's task writes 150 rows on ``checkpoint_id`` (two commits)."""
    b.put_writes({"configurable": {"thread_id": "th", "checkpoint_ns": "",
                                   "checkpoint_id": checkpoint_id, "run_id": "B"}},
                 [("m", str(i)) for i in range(150)], "task-b")


@pytest.mark.engines("moto", "local")
def test_writes_ahead_refused_between_their_commits_leave_nothing(
        tb: TestBackend, clock: Clock, monkeypatch: pytest.MonkeyPatch) -> None:
    """Red team of issue 90: B's task writes 150 rows ahead of their checkpoint 0003 (two
    commits); the first acquires the thread parked; between the two, A2's turn takes the
    thread; the second is refused (ThreadBusyError: B's run ends, 0003 is never put).
    A refused run stores nothing: none of B's rows may stay."""
    a, b = (Saver(agents, single_writer=True, lease=LEASE) for _ in range(2))
    _put(a, "A1", None, "0001", last=True)
    done = _after_the_first_commit(monkeypatch, b, lambda: _put(a, "A2", "0001", "0002"))
    with pytest.raises(ThreadBusyError):
        _b_writes_150(b, "0003")
    assert len(done) == 1
    assert _stray(tb) == []
    _put(a, "A2", "0002", "0004", last=True)


@pytest.mark.engines("moto")
def test_put_writes_and_its_async_twin_show_task_path() -> None:
    """LangGraph passes ``task_path`` to ``put_writes`` only where
    ``inspect.signature(saver.put_writes)`` names it (and ``aput_writes``'s, for the
    async loop): the twins made by ``rows.twins`` keep it, and both hide the session and
    the fence."""
    import inspect

    saver = Saver(agents, single_writer=True, lease=LEASE)
    for method in (saver.put_writes, saver.aput_writes):
        params = inspect.signature(method).parameters
        assert list(params) == ["config", "writes", "task_id", "task_path"]
    assert inspect.iscoroutinefunction(saver.aput_writes)
    assert not inspect.iscoroutinefunction(saver.put_writes)


@pytest.mark.engines("moto", "local")
def test_writes_refused_between_their_commits_are_not_said_unstored(
        tb: TestBackend, clock: Clock, monkeypatch: pytest.MonkeyPatch) -> None:
    """Red team of issue 90: B's task writes 150 rows on the thread's head 0001 (two
    commits: the first acquires the thread); between them B pauses past its lease and A2's
    turn takes the thread (0002); B's second commit is refused. ThreadBusyError says
    nothing of the write was stored, and a refused run stores nothing: none of B's rows
    may stay (or the error must not say so)."""
    a, b = (Saver(agents, single_writer=True, lease=LEASE) for _ in range(2))
    _put(a, "A1", None, "0001", last=True)

    def lapse_and_take() -> None:
        clock.now += LEASE.total_seconds() * 4 / 3 + 1
        _put(a, "A2", "0001", "0002")
    done = _after_the_first_commit(monkeypatch, b, lapse_and_take)
    with pytest.raises(ThreadBusyError):
        _b_writes_150(b, "0001")
    assert len(done) == 1
    assert [sk for i in _rows(tb) if "#W#task-b#" in (sk := i["sk"]["S"])] == []


@pytest.mark.engines("moto", "local")
def test_a_thread_copied_onto_one_with_a_lease_takes_the_next_turn(
        tb: TestBackend, clock: Clock) -> None:
    """Red team of issue 90: "th2" took a turn (its lease's head 0001); copy_thread("th",
    "th2") copies th's 0005..0006 into it (LangGraph's copy_thread: every checkpoint and
    write of the source into the target). The next turn reads th2's latest (0006) and
    extends it: refused (the head is 0001), then and after any wait. Either the copy is
    refused while th2 holds rows or a lease, or the turn is accepted."""
    a = Saver(agents, single_writer=True, lease=LEASE)

    def put(thread: str, parent: str | None, cid: str) -> Any:
        cp = empty_checkpoint()
        cp["id"] = cid
        conf: dict[str, Any] = {"thread_id": thread, "checkpoint_ns": "", "run_id": cid}
        return a.put({"configurable": conf | ({"checkpoint_id": parent} if parent else {})},
                     cp, {"source": "loop", "step": 1}, {})
    put("th2", None, "0001")
    put("th", None, "0005")
    put("th", "0005", "0006")
    copied = False
    with suppress(ThreadBusyError):
        a.copy_thread("th", "th2")
        copied = True
    latest = a.get_tuple({"configurable": {"thread_id": "th2", "checkpoint_ns": ""}})
    assert latest is not None
    if copied:
        clock.now += 3600
    put("th2", latest.checkpoint["id"], "0007")


@pytest.mark.engines("moto", "local")
def test_a_copy_taken_while_a_run_writes_ahead_has_no_write_without_its_checkpoint(
        tb: TestBackend, clock: Clock) -> None:
    """Red team of issue 90: B's writes ahead of its checkpoint 0002 are stored (the thread
    parked for it); copy_thread("th", "copy") then runs: the copy must hold no write row
    whose checkpoint is not stored (the source's may still be put; the copy's never)."""
    a, b = (Saver(agents, single_writer=True, lease=LEASE) for _ in range(2))
    _put(a, "A1", None, "0001", last=True)
    _writes(b, "B", "0002", "b's")
    a.copy_thread("th", "copy")
    rows = [i["sk"]["S"] for i in tb.scan_raw() if i["pk"]["S"] == "LG#copy"]
    stored = {sk.split("#")[2] for sk in rows if "#W#" not in sk}
    assert [sk for sk in rows if "#W#" in sk and sk.split("#")[2] not in stored] == []


@pytest.mark.engines("moto", "local")
def test_the_async_twins_refuse_a_collision_and_delete_a_held_thread_alike(
        tb: TestBackend, clock: Clock) -> None:
    """Red team of issue 90 (``rows.twins``): the collision of
    ``test_a_run_refused_after_a_collision_stores_nothing_and_takes_nothing`` through
    ``aput``/``aput_writes``, each on an event loop of its own: B refused, nothing stored
    nor acquired, the next turn accepted at once; then ``adelete_thread`` while a run
    holds the thread: the run's next ``aput_writes`` refused, the table empty."""
    a, b, c = (Saver(agents, single_writer=True, lease=LEASE) for _ in range(3))

    def conf(run: str, at: str | None) -> Any:
        found: dict[str, Any] = {"thread_id": "th", "checkpoint_ns": "", "run_id": run}
        return {"configurable": found | ({"checkpoint_id": at} if at else {})}

    def aput(saver: Saver, run: str, parent: str | None, cid: str, last: bool) -> Any:
        cp = empty_checkpoint()
        cp["id"] = cid
        cp["channel_values"] = {} if last else {"branch:to:next": None}
        return asyncio.run(saver.aput(conf(run, parent), cp, {"source": "loop", "step": 1},
                                      {}))
    aput(a, "A1", None, "0001", True)
    aput(a, "A2", "0001", "0002", True)
    before = _rows(tb)
    with pytest.raises(ThreadBusyError):
        aput(b, "B", "0001", "0003", False)
    with pytest.raises(ThreadBusyError):
        asyncio.run(b.aput_writes(conf("B", "0003"), [("m", "b's")], "task-b"))
    assert _rows(tb) == before
    aput(c, "A3", "0002", "0004", False)  # (at once; A3 now holds the thread)
    asyncio.run(c.adelete_thread("th"))
    assert tb.scan_raw() == []
    with pytest.raises(ThreadBusyError, match="no lease is stored"):
        asyncio.run(c.aput_writes(conf("A3", "0004"), [("m", "late")], "task-late"))
    assert tb.scan_raw() == []


@pytest.mark.engines("moto", "local")
def test_savers_of_different_leases_on_one_table_hold_by_the_stored_lease(
        tb: TestBackend, clock: Clock) -> None:
    """Red team of issue 90: two workers' savers of one table with different ``lease=``.
    A run of the long one (10 minutes) is not taken by the short one's new turn after
    the short lease (30 s) has passed; the short one's run is taken once its own lapsed,
    and is refused on its next write."""
    short, long_ = (Saver(agents, single_writer=True, lease=LEASE),
                    Saver(agents, single_writer=True, lease=timedelta(minutes=10)))
    _put(long_, "L", None, "0001")
    clock.now += LEASE.total_seconds() * 4 / 3 + 1
    with pytest.raises(ThreadBusyError):
        _put(short, "S", "0001", "0002")
    _put(long_, "L", "0001", "0002", last=True)
    _put(short, "S2", "0002", "0003")
    clock.now += LEASE.total_seconds() * 4 / 3 + 1
    _put(long_, "L2", "0003", "0004", last=True)
    with pytest.raises(ThreadBusyError):
        _put(short, "S2", "0003", "0005")
    assert [i["sk"]["S"] for i in _rows(tb)] == [f"C#_#000{n}#" for n in range(1, 5)]


@pytest.mark.engines("moto", "local")
@pytest.mark.parametrize("every", [False, True])
def test_a_release_whose_answer_is_lost_with_the_next_turn_in_the_window(
        tb: TestBackend, clock: Clock, every: bool) -> None:
    """Red team of issue 90: A's last put (it parks the thread) applied, its answer lost
    (``every``: each retry's too); in the window B's turn reads the head (A's 0002) and
    takes the thread at once. A is told the truth (success, or unknown); B's turn
    goes on and parks; a third turn is accepted at once; one chain, no stray row."""
    a, b, c = (Saver(agents, single_writer=True, lease=LEASE) for _ in range(3))
    _put(a, "A", None, "0001")

    def in_the_window() -> None:
        if not moved:
            faults.clear()
            moved.append(_put(b, "B", "0002", "0003"))
            if every:
                faults.lose_answer("TransactWriteItems", times=None)
    moved: list[Any] = []
    with inject_faults(agents) as faults:
        faults.lose_answer("TransactWriteItems", after=in_the_window)
        with suppress(OutcomeUnknownError):
            _put(a, "A", "0001", "0002", last=True)
    assert moved
    _put(b, "B", "0003", "0004", last=True)
    _put(c, "C", "0004", "0005", last=True)
    assert [i["sk"]["S"] for i in _rows(tb)] == [f"C#_#000{n}#" for n in range(1, 6)]


@pytest.mark.engines("moto", "local")
@pytest.mark.parametrize("how", ["delete_thread", "prune", "delete_for_runs"])
def test_a_delete_that_fails_after_taking_the_lease_leaves_the_thread_writable(
        tb: TestBackend, clock: Clock, how: str) -> None:
    """Red team of issue 90: delete_thread, prune and delete_for_runs take the thread's
    lease (``lease`` long) before they read it; the read then fails (DynamoDB's 500 on
    every Query, past the session's retries: nothing deleted). The caller is told, and
    the thread must not stay locked: the next turn, on any worker, is accepted at once
    (as after a refused run), not after the whole lease."""
    a, b = (Saver(agents, single_writer=True, lease=LEASE) for _ in range(2))
    _put(a, "A", None, "0001", last=True)
    with inject_faults(agents) as faults:
        faults.server_error("Query", times=None)
        with pytest.raises(DynaormError):  # (the read's 500, past the retries)
            if how == "delete_for_runs":
                a.delete_for_runs(["A"])
            else:
                getattr(a, how)("th" if how == "delete_thread" else ["th"])
    _put(b, "B", "0001", "0002", last=True)
