"""A LangGraph agent whose memory lives in the application's own table: a small
``StateGraph`` that stops at an interrupt for a human's review, resumes from the table (as
a new process would), travels back in time to fork the thread, and a tenant scope that
keeps another tenant's agent from seeing any of it.

Run: ``python examples/langgraph_agent.py [--endpoint-url URL]``
(needs ``pip install "dynaorm[langgraph]"``)
"""

from __future__ import annotations

import operator
from datetime import timedelta
from typing import Annotated, Any, TypedDict

from _support import run, show
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Command, interrupt

from dynaorm import Table
from dynaorm.langgraph import Saver

app = Table("dynaorm-example-langgraph", ttl="expires_at")


class State(TypedDict):
    topic: str
    notes: Annotated[list[str], operator.add]


def draft(state: State) -> dict[str, Any]:
    return {"notes": [f"draft about {state['topic']}"]}


def review(state: State) -> dict[str, Any]:
    verdict = interrupt({"question": "publish this draft?", "notes": state["notes"]})
    return {"notes": [f"review: {verdict}"]}


def publish(state: State) -> dict[str, Any]:
    return {"notes": ["published" if state["notes"][-1] == "review: yes" else "shelved"]}


def build(tenant: str) -> CompiledStateGraph[Any, Any, Any, Any]:
    """The graph, its checkpoints kept in ``app`` under the tenant's scope for 30 days."""
    graph = StateGraph(State)
    graph.add_node("draft", draft)
    graph.add_node("review", review)
    graph.add_node("publish", publish)
    graph.add_edge(START, "draft")
    graph.add_edge("draft", "review")
    graph.add_edge("review", "publish")
    graph.add_edge("publish", END)
    saver = Saver(app, scope={"tenant_id": tenant}, ttl=timedelta(days=30))
    return graph.compile(checkpointer=saver)


def main() -> None:
    with run(app, "a LangGraph agent with its memory in the table"):
        config: Any = {"configurable": {"thread_id": "post-1"}}
        build("acme").invoke({"topic": "single-table design", "notes": []}, config)
        graph = build("acme")  # (a new process, after a restart, does just this)
        show("graph.get_state(config).next", [graph.get_state(config).next])
        out = graph.invoke(Command(resume="yes"), config)
        show('graph.invoke(Command(resume="yes"), config)["notes"]', out["notes"])

        history = list(graph.get_state_history(config))  # newest first
        at_review = next(s for s in history if s.next == ("review",))
        # time travel: fork the thread at the review, with the draft edited
        fork = graph.update_state(at_review.config, {"notes": ["edited"]}, as_node="draft")
        graph.invoke(None, fork)  # runs up to the interrupt again
        out = graph.invoke(Command(resume="not yet"), config)
        show('graph.invoke(Command(resume="not yet"), config)["notes"]', out["notes"])
        show("len(list(graph.get_state_history(config)))",
             [len(list(graph.get_state_history(config)))])
        show('build("globex").get_state(config).values', [build("globex").get_state(
            config).values])


if __name__ == "__main__":
    main()
