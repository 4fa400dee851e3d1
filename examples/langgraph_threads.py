"""A LangGraph chat agent run the way production runs it: its messages a ``DeltaChannel``
(each step stores its new messages only, a snapshot every few), read back in one query;
one writer a thread (``single_writer=True``): a second worker's turn on a busy thread is
refused, the next turn goes to any worker; and its state sealed with the table's keyring
(``sealed=True``): nothing of the conversation is stored in the clear.

Run: ``python examples/langgraph_threads.py [--endpoint-url URL]``
(needs ``pip install "dynaorm[langgraph,encryption]"``)
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from datetime import timedelta
from typing import Annotated, Any, TypedDict

from _support import run, show
from langgraph.channels.delta import DeltaChannel
from langgraph.graph import END, START, StateGraph

from dynaorm import Attempt, Hook, StaticKeyring, Table
from dynaorm.langgraph import Saver, ThreadBusyError

# (a demo key: give a KmsKeyring in production, see the encryption guide)
app = Table("dynaorm-example-langgraph-threads", ttl="expires_at",
            keyring=StaticKeyring(os.urandom(32)))


def append(messages: list[str], writes: Sequence[list[str]]) -> list[str]:
    """The channel's reducer: a step's writes appended (a DeltaChannel's reducer takes a
    batch of writes at once)."""
    return [*messages, *(m for w in writes for m in w)]


class Chat(TypedDict):
    messages: Annotated[list[str], DeltaChannel(append, snapshot_frequency=5)]


def worker(name: str, on_think: Any = None) -> Any:
    """One worker's graph (each process builds its own, on the same table)."""

    def think(state: Chat) -> dict[str, Any]:
        if on_think is not None:
            on_think()
        return {"messages": [f"{name} thinks about {state['messages'][-1]!r}"]}

    def reply(state: Chat) -> dict[str, Any]:
        return {"messages": [f"{name} replies ({len(state['messages'])} messages so far)"]}

    graph = StateGraph(Chat)
    graph.add_node("think", think)
    graph.add_node("reply", reply)
    graph.add_edge(START, "think")
    graph.add_edge("think", "reply")
    graph.add_edge("reply", END)
    saver = Saver(app, single_writer=True, lease=timedelta(minutes=2), sealed=True,
                  ttl=timedelta(days=30))
    return graph.compile(checkpointer=saver)


class Requests(Hook):
    """Counts the requests sent to the table (a hook on its client)."""

    def __init__(self) -> None:
        self.sent = 0

    def on_start(self, phase: Any) -> object:
        if isinstance(phase, Attempt):
            self.sent += 1
        return None


def main() -> None:
    with run(app, "LangGraph threads: deltas in one read, one writer, sealed state") as tb:
        config: Any = {"configurable": {"thread_id": "chat-1"}}
        a, b = worker("a"), worker("b")
        for turn in range(9):  # (turns reach either worker, back to back)
            (a if turn % 2 else b).invoke({"messages": [f"user says {turn}"]}, config)

        requests = Requests()
        app.db.add_hook(requests)
        state = a.get_state(config)
        app.db.remove_hook(requests)
        show("len(a.get_state(config).values['messages'])", [len(state.values["messages"])])
        show("requests of that get_state", [requests.sent])

        refused: list[str] = []

        def meanwhile() -> None:  # (b's turn while a's run is inside ``think``)
            try:
                b.invoke({"messages": ["a second user message"]}, config)
            except ThreadBusyError as exc:
                refused.append(type(exc).__name__)
        # (durability="sync": a's checkpoint, and so its hold on the thread, is stored
        # before ``think`` runs; LangGraph's default stores it beside the next step, and
        # b's turn may then take the parked thread first, which refuses a's run instead)
        worker("a", meanwhile).invoke({"messages": ["user says 9"]}, config,
                                      durability="sync")
        show("b's turn while a runs", refused)
        b.invoke({"messages": ["user says 10"]}, config)  # (a's run parked the thread)
        show("the last two messages", b.get_state(config).values["messages"][-2:])

        stored = repr(tb.scan_raw())
        show("'user says' in the stored items", ["user says" in stored])

        a.checkpointer.prune(["chat-1"])  # (the latest, and what its messages read)
        show("messages after prune", [len(b.get_state(config).values["messages"])])


if __name__ == "__main__":
    main()
