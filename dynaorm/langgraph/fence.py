"""One writer a thread (``Saver(single_writer=True)``, contract 24), on the public
:class:`dynaorm.Lease`: every write of a run carries an action on the thread's lease row
(``LangGraphLease``, in the thread's partition) in the same commit, so a write is stored
only while its run holds the thread.

**A run** is LangGraph's ``run_id`` when the config names one (``configurable.run_id`` or
``metadata.run_id``: LangGraph's server sets it, and ``delete_for_runs`` deletes by it);
else one invocation of the graph (``invoke``/``stream``, its subgraphs included: the
``RunControl`` of LangGraph's runtime, one per invocation); else (``update_state``, a
direct call) the write is a run of its own, one write long. A run id given again to a
later invocation names a tenure of its own (one per invocation: it takes a free thread;
the same holder's name supersedes a live one of that id). A LangGraph that gives no run
control (:data:`CONTROLLED`) leaves a graph's writes without a run id runs of no one:
their root steps then extend the head as a run's do, so they never fork the thread.

- A run's first write **acquires** the thread's lease (a new epoch, ``lease`` long),
  refused with :class:`ThreadBusyError` while another run holds it: nothing of that write
  is stored. Each later write of the run **renews** it, on the condition that the lease is
  still at the run's epoch: once the lease lapsed (no write for ``lease``) and another run
  acquired it, the first run is refused on its next write, however long it slept.
- A run **parks** the lease (releases it, the epoch kept) where it stops: a root
  checkpoint with nothing left to run (no ``__start__``, ``branch:to:*`` nor ``join:*``
  trigger holding a value, no pending ``Send``), or a root write of ``__interrupt__`` or
  ``__error__``. A parked lease is anyone's: the next turn, from any worker, acquires it
  at once; an interrupted thread is resumed by any worker. The run's own writes that come
  after (a parallel task finishing, the functional API's last writes) are still accepted,
  while nobody took the thread, and leave it parked.
- A write without a run (``update_state``: time travel, a fork) acquires and parks in one:
  accepted whenever no run holds the thread.
- The lease row also keeps the thread's **head** (the root checkpoint last put): a root
  checkpoint whose parent is not the head is refused (but a time travel's, whose source is
  ``fork`` or ``update``: a fork meant; nor one that is the head already: a put again
  after its answer was lost), so a run that read the thread, then waited while
  another moved it on, cannot fork it with its first checkpoint either. A run's first
  writes are on the head, or on a checkpoint not stored yet (LangGraph may store them
  before it), acquiring the thread parked: else refused, as are writes on a checkpoint
  whose put was refused (which deletes those before it). ``delete_thread`` takes the
  lease (a new epoch) first: a run's later writes are refused.

A static breakpoint (``interrupt_before``/``interrupt_after``) or a crash stops a run
without a parking write: the thread is free once its lease lapses.
"""

from __future__ import annotations

import asyncio
import os
import threading
import uuid
import weakref
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import Checkpoint

from dynaorm import LeaseError

NONCE = [uuid.uuid4().hex]  # (this process's: a holder's name is unique across processes)
_ALL: weakref.WeakSet[Tenures] = weakref.WeakSet()


def _forked() -> None:
    NONCE[0] = uuid.uuid4().hex
    for tenures in list(_ALL):
        tenures._forked()


os.register_at_fork(after_in_child=_forked)
try:  # (LangGraph's runtime in a config, by LangGraph's own name, and its ``control``)
    from langgraph._internal._constants import CONFIG_KEY_RUNTIME as _RUNTIME
    from langgraph.runtime import Runtime

    #: whether the LangGraph installed names every invocation's run (its runtime's
    #: ``control``). Without it a graph's writes without a run id are runs of no one,
    #: told from a direct call (``update_state``) by nothing: their root steps are then
    #: held to the thread's head, so they never fork it
    CONTROLLED = "control" in getattr(Runtime, "__dataclass_fields__", {})
except ImportError:  # pragma: no cover (another LangGraph)
    _RUNTIME, CONTROLLED = "__pregel_runtime", False
_KEPT = 4096  # (tenures a saver remembers: runs in flight, and a few done)
_STOPS = ("__interrupt__", "__error__")


class ThreadBusyError(LeaseError):
    """A write to a thread another run holds (``Saver(single_writer=True)``), or a write of
    a run that lost the thread (its lease lapsed and another run took it): nothing of the
    write was stored. ``thread_id``: the thread; ``item``: its lease as stored (``holder``,
    ``epoch``, ``until``). Carries LangGraph's ``is_stale_write_owner_error`` marker (the
    conformance capability proposed in langgraph#8894)."""

    is_stale_write_owner_error = True
    thread_id: str | None = None


@dataclass
class Tenure:
    """What a saver knows of one run's hold on one thread: the epoch it acquires with
    (chosen once, so the run's concurrent first writes acquire the same tenure), whether
    an acquire of it may have been applied (``held``: later writes then hold by epoch),
    and the root checkpoint the run parked the lease at (a put of a later one takes it
    up again; one of that checkpoint, stored late, does not); when it last renewed the
    lease (the lease's clock), the lease as the run holds it (``row``), and the root
    checkpoints whose put was refused (``refused``: writes on them are too). ``owner``
    keeps the run's ``RunControl`` alive while remembered, so no other invocation can
    take its ``id``."""

    epoch: str
    owner: object
    held: bool = False
    parked: str | None = None
    renewed: float = 0.0
    row: Any = None
    refused: set[str] = field(default_factory=set)
    sync: threading.Lock = field(default_factory=threading.Lock)
    _async: tuple[object, asyncio.Lock] | None = None

    @property
    def alock(self) -> asyncio.Lock:
        """The run's lock on the running event loop (a run named by a ``run_id`` may be
        written from several loops, one after the other)."""
        loop = asyncio.get_running_loop()
        if self._async is None or self._async[0] is not loop:
            self._async = (loop, asyncio.Lock())
        return self._async[1]


def holder_of(config: RunnableConfig) -> tuple[str, object | None] | None:
    """The run a write belongs to: ``(holder name, invocation)``, ``None`` for none. The
    invocation is LangGraph's run control (one per ``invoke``, its subgraphs included),
    ``None`` for a write outside one (a run id given to the saver's own calls): a run id
    given again to a later invocation names a tenure of its own (its holder's name is
    the same, so it supersedes an older one of that name, and takes a free thread)."""
    conf: Mapping[str, Any] = config.get("configurable") or {}
    run = conf.get("run_id") or (config.get("metadata") or {}).get("run_id")
    control = getattr(conf.get(_RUNTIME), "control", None)
    if run:
        return f"run:{run}", control
    if control is None:
        return None
    return f"{NONCE[0]}:{id(control)}", control


class Tenures:
    """The tenures of a saver's runs, by (thread's key, run), the oldest forgotten past
    ``_KEPT`` (a forgotten run that writes again acquires anew). A child process of
    ``os.fork()`` starts with none (its runs are its own) and a lock no thread holds."""

    def __init__(self) -> None:
        self._known: OrderedDict[tuple[Any, ...], Tenure] = OrderedDict()
        self._lock = threading.Lock()
        _ALL.add(self)

    def _forked(self) -> None:
        self._known, self._lock = OrderedDict(), threading.Lock()

    def of(self, thread: Mapping[str, str], holder: str, invocation: object | None,
           epoch: str) -> Tenure:
        """The tenure of ``holder``'s ``invocation`` (see :func:`holder_of`) on
        ``thread``, a new one (acquiring with ``epoch``) when none is known."""
        key = (*sorted(thread.items()), holder, id(invocation))
        with self._lock:
            found = self._known.get(key)
            if found is None or found.owner is not invocation:
                found = self._known[key] = Tenure(epoch, invocation)
            self._known.move_to_end(key)
            while len(self._known) > _KEPT:
                self._known.popitem(last=False)
            return found


def idle(checkpoint: Checkpoint) -> bool:
    """Whether a root checkpoint leaves nothing to run: no trigger channel holds a value
    (``__start__``, ``branch:to:<node>``, a complete ``join:`` barrier) and no ``Send``
    is pending (``__pregel_tasks``)."""
    for name, value in checkpoint["channel_values"].items():
        if name == "__start__" or name.startswith("branch:to:") or (
                name.startswith(("join:", "__pregel_tasks")) and value):
            return False
    return True


def stops(writes: Any) -> bool:
    """Whether a root task's writes stop its run (an interrupt, an error)."""
    return any(channel in _STOPS for channel, _ in writes)
