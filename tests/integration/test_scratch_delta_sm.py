from __future__ import annotations

import asyncio
import operator
import uuid
from collections.abc import Iterator
from typing import Annotated, Any, TypedDict

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule, run_state_machine_as_test, precondition
from langgraph.channels.delta import DeltaChannel
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, interrupt

from dynaorm import Table
from dynaorm.langgraph import Saver
from dynaorm.testing import TestBackend, use_tables, worker_suffix

agents = Table("langgraph_delta_sm", ttl="expires_at")


@pytest.fixture
def tb(backend: str | None) -> Iterator[TestBackend]:
    with use_tables(agents, endpoint_url=backend, name_suffix=worker_suffix()) as found:
        yield found


def _append(state: list[Any], writes: list[list[Any]]) -> list[Any]:
    return [*state, *(m for w in writes for m in w)]


def agent(checkpointer: Any, every: int) -> Any:
    """A turn: ``think`` (a subgraph of two steps with a DeltaChannel of its own, asking
    inside on "deep") then ``reply`` (asking on "ask")."""
    sub_state = TypedDict("sub_state", {  # type: ignore[misc]
        "messages": Annotated[list[Any], DeltaChannel(_append, snapshot_frequency=every)],
        "notes": Annotated[list[Any], DeltaChannel(_append, snapshot_frequency=every)]})
    state = TypedDict("state", {  # type: ignore[misc]
        "messages": Annotated[list[Any], DeltaChannel(_append, snapshot_frequency=every)],
        "plain": Annotated[list[Any], operator.add]})

    def s1(s: Any) -> dict[str, Any]:
        return {"notes": [f"n{len(s['messages'])}"]}

    def s2(s: Any) -> dict[str, Any]:
        said = [m for m in s["messages"] if not m.startswith(("t", "r", "a:"))]
        if said and said[-1] == "deep":
            got = interrupt("deeper?")
            return {"messages": [f"a:{got}"], "notes": [got]}
        return {"messages": [f"t{len(s['messages'])}/{len(s['notes'])}"]}
    sb = StateGraph(sub_state)
    sb.add_node("s1", s1)
    sb.add_node("s2", s2)
    sb.add_edge(START, "s1")
    sb.add_edge("s1", "s2")
    sb.add_edge("s2", END)

    def reply(s: Any) -> dict[str, Any]:
        said = [m for m in s["messages"] if not m.startswith(("t", "r", "a:"))]
        if said and said[-1] == "ask":
            return {"messages": [f"a:{interrupt('ok?')}"], "plain": ["asked"]}
        return {"messages": [f"r{len(s['messages'])}"], "plain": ["r"]}
    b = StateGraph(state)
    b.add_node("think", sb.compile())
    b.add_node("reply", reply)
    b.add_edge(START, "think")
    b.add_edge("think", "reply")
    b.add_edge("reply", END)
    return b.compile(checkpointer=checkpointer)


class Thread(RuleBasedStateMachine):
    tb: TestBackend

    @initialize(every=st.integers(1, 3))
    def start(self, every: int) -> None:
        self.thread = uuid.uuid4().hex
        self.ours, self.model = agent(Saver(agents), every), agent(InMemorySaver(), every)
        self.ids: dict[str, str] = {}  # ours -> model
        self.runs: list[str] = []
        self.n = 0

    def _conf(self, cid: str | None = None, run: str | None = None) -> Any:
        conf: dict[str, Any] = {"thread_id": self.thread, "checkpoint_ns": ""}
        if cid:
            conf["checkpoint_id"] = cid
        if run:
            conf["run_id"] = run
        return {"configurable": conf}

    def _both(self, arg: Any, use_async: bool) -> None:
        self.n += 1
        run = f"{self.thread}-{self.n}"
        self.runs.append(run)
        for g in (self.model, self.ours):
            if use_async:
                asyncio.run(g.ainvoke(arg, self._conf(run=run)))
            else:
                g.invoke(arg, self._conf(run=run))
        self._map()

    def _map(self) -> None:
        mine = [s.config["configurable"]["checkpoint_id"] for s in self.ours.get_state_history(self._conf())]
        theirs = [s.config["configurable"]["checkpoint_id"] for s in self.model.get_state_history(self._conf())]
        new_mine = [c for c in mine if c not in self.ids]
        new_theirs = [c for c in theirs if c not in self.ids.values()]
        assert len(new_mine) == len(new_theirs), (new_mine, new_theirs)
        self.ids.update(zip(new_mine, new_theirs, strict=True))

    @rule(text=st.sampled_from(["hi", "ask", "deep"]), use_async=st.booleans())
    def turn(self, text: str, use_async: bool) -> None:
        self._both({"messages": [text], "plain": ["u"]}, use_async)

    @precondition(lambda self: hasattr(self, "ours") and bool(self.model.get_state(self._conf()).next))
    @rule(answer=st.sampled_from(["yes", "no"]), use_async=st.booleans())
    def resume(self, answer: str, use_async: bool) -> None:
        self._both(Command(resume=answer), use_async)

    @rule(back=st.integers(1, 12), text=st.sampled_from(["edit", "ask"]))
    def fork(self, back: int, text: str) -> None:
        mine = list(self.ours.get_state_history(self._conf()))
        if len(mine) <= back:
            return
        past = mine[back].config["configurable"]["checkpoint_id"]
        self.ours.update_state(self._conf(past), {"messages": [text]})
        self.model.update_state(self._conf(self.ids[past]), {"messages": [text]})
        self._map()

    @rule(use_async=st.booleans())
    def prune(self, use_async: bool) -> None:
        s = self.ours.checkpointer
        if use_async:
            asyncio.run(s.aprune([self.thread]))
        else:
            s.prune([self.thread])

    @rule(data=st.data(), use_async=st.booleans())
    def delete_runs(self, data: Any, use_async: bool) -> None:
        if len(self.runs) < 2:
            return
        doomed = data.draw(st.lists(st.sampled_from(self.runs[:-1]), max_size=3))
        s = self.ours.checkpointer
        if use_async:
            asyncio.run(s.adelete_for_runs(doomed))
        else:
            s.delete_for_runs(doomed)

    @rule()
    def copy(self) -> None:
        target = self.thread + "-copy"
        self.ours.checkpointer.copy_thread(self.thread, target)
        mine = [(s.values, s.next) for s in self.ours.get_state_history(self._conf())]
        copied = [(s.values, s.next) for s in self.ours.get_state_history({"configurable": {"thread_id": target}})]
        self.ours.checkpointer.delete_thread(target)
        assert copied == mine

    @invariant()
    def every_checkpoint_reads_as_the_model(self) -> None:
        if not hasattr(self, "ours"):
            return
        latest = self.ours.get_state(self._conf())
        if latest.config["configurable"].get("checkpoint_id") is None:
            return
        for s in self.ours.get_state_history(self._conf()):
            cid = s.config["configurable"]["checkpoint_id"]
            theirs = self.model.get_state(self._conf(self.ids[cid]))
            assert (s.values, s.next) == (theirs.values, theirs.next), cid
        mine = self.ours.get_state(self._conf(), subgraphs=True)
        theirs = self.model.get_state(self._conf(self.ids[latest.config["configurable"]["checkpoint_id"]]), subgraphs=True)
        assert [t.state.values for t in mine.tasks if t.state] == [t.state.values for t in theirs.tasks if t.state]

    def teardown(self) -> None:
        if hasattr(self, "ours"):
            self.ours.checkpointer.delete_thread(self.thread)


@pytest.mark.engines("moto")
def test_random_threads_read_as_in_memory_saver(tb: TestBackend) -> None:
    Thread.tb = tb
    run_state_machine_as_test(Thread, settings=settings(
        max_examples=60, stateful_step_count=12, deadline=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]))
