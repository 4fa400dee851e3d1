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
  whose put was refused (which deletes those before it). ``delete_thread``, ``prune``
  and ``delete_for_runs`` take the lease (a new epoch) first: a run's later writes are
  refused. A write refused after some of its commits (over one transaction) deletes
  what they stored.

:class:`Fenced` stages those actions in a saver's commits (:class:`Fence`: a write's run).

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
from datetime import timedelta
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import Checkpoint

from dynaorm import ConditionFailedError, F, LeaseError, OutcomeUnknownError
from dynaorm_langgraph.rows import Op, Rows

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
_SLACK = 4 / 3  # (a lease is renewed this much longer, and so a third of it less often)



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
    conf = config.get("configurable") or {}
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


@dataclass(frozen=True)
class Fence:
    """A single-writer saver's write: the thread's key, the holder it writes as, and the
    run's tenure (``None``: a write without a run)."""

    thread: dict[str, str]
    holder: str
    tenure: Tenure | None


class Fenced(Rows):
    """A single-writer saver's writes: each commit with its action on the thread's lease
    (see the module)."""

    single_writer: bool
    tenures: Tenures

    def _fence(self, config: RunnableConfig) -> Fence | None:
        """The run a write of ``config`` belongs to, with its tenure (``None``: the
        saver is not single-writer)."""
        if not self.single_writer:
            return None
        conf = config["configurable"]
        thread = self._pk(conf["thread_id"])
        found = holder_of(config)
        if found is None:
            return Fence(thread, f"{NONCE[0]}:once:{uuid.uuid4().hex}", None)  # (its own)
        return Fence(thread, found[0], self.tenures.of(thread, *found, uuid.uuid4().hex))

    def _guard(self, s: Any, fence: Fence | None, parks: str | None,
               extends: tuple[str | None] | None, head: str | None
               ) -> tuple[float | None, Any]:
        """Stage the lease's action of a write in its commit (see the fence module). A
        root put ``extends`` the thread's head (the root checkpoint last written; any,
        when none is known yet) and moves it: a checkpoint whose parent is not the head is
        refused, so a run that read the thread before another moved it on never forks it
        (a time travel's ``fork``/``update`` is a fork meant: not checked); the head
        already this checkpoint is a put again (its answer lost), accepted. A task's
        writes are not: LangGraph may store them before their checkpoint. A run renews
        its lease (``lease`` and a third more, from now) when it acquires it, or writes a
        third of ``lease`` or more after it last renewed it: its lease lapses no sooner than
        ``lease`` after its last write. A write that changes the lease row the run knows
        whole puts it, on the condition of its epoch (a put costs a commit less than an
        update); one that changes nothing checks it. Returns the time it renewed at
        (``None``: did not) and the lease row as the commit leaves it (``None``: not known
        whole)."""
        if fence is None:
            return None, None
        t, zero = fence.tenure, timedelta(0)
        values = {**self._stamp(), **({} if head is None else {"head": head})}
        # the condition a put that extends the thread's head stages on the lease row
        # (None: none): the head is the parent named (or none yet), or this very one
        where = None
        if extends is not None:
            where = F("head").not_exists()
            if extends[0] is not None:
                where |= F("head") == extends[0]
            if head is not None:  # (or the head is this very one: the put again, its
                where |= F("head") == head  # first answer lost)
        if t is None:  # (a write of no run: its own, acquired and let go at once)
            s.lease(self.lease_row, holder=fence.holder, duration=zero, values=values,
                    where=where, **fence.thread)
            return None, None
        now = float(self.lease_row.clock())
        if not t.held:
            got = s.lease(self.lease_row, holder=fence.holder, duration=zero if parks is not
                          None else self.lease * _SLACK, epoch=t.epoch, values=values,
                          where=where, **fence.thread)
            return now, got if head is not None else None
        return self._held(s, fence, t, parks, head, values, where, now)

    def _held(self, s: Any, fence: Fence, t: Tenure, parks: str | None, head: str | None,
              values: dict[str, Any], where: Any, now: float) -> tuple[float | None, Any]:
        """:meth:`_guard`'s action of a run that holds the lease already."""
        stays = self._stays(t, parks, head, now)
        until = 0 if parks is not None else None if stays else int(
            (now + self.lease.total_seconds() * _SLACK) * 1000)
        if t.row is not None and (head is not None or until is not None):
            row = self.lease_row.model_construct(**{**dict(t.row), **values, **(
                {} if until is None else {"until": until})})  # (a new object: a plain put)
            held = F("epoch") == t.epoch
            s.save(row, overwrite=True, condition=held if where is None else held & where)
            return (None if until is None or parks is not None else now), row
        known = t.row or self.lease_row(**fence.thread, holder=fence.holder, epoch=t.epoch)
        if parks is not None:
            got = s.lease(known, release=True, values=values, where=where)
        elif stays:
            s.lease(known, values=values, where=where)  # (parked it stays; or renewed lately)
            return None, t.row if head is None else None
        else:
            got = s.lease(known, duration=self.lease * _SLACK, values=values, where=where)
        return (None if parks is not None else now), got if (
            t.row is not None or head is not None) else None

    def _stays(self, t: Tenure, parks: str | None, head: str | None, now: float) -> bool:
        """Whether a write of a run holding the lease leaves it as it is (no park, no
        renewal): parked it stays, or it renewed lately."""
        return parks is None and ((t.parked is not None and (head is None or head <= t.parked))
                                  or now - t.renewed < self.lease.total_seconds() * (_SLACK - 1))

    def _commit(self, s: Any, fence: Fence | None, parks: str | None,
                extends: tuple[str | None] | None = None, head: str | None = None) -> Op:
        """``s``'s commit, with the lease's action when single-writer (``parks``: the
        root checkpoint the write parks the lease at): refused by the lease, a
        :class:`ThreadBusyError`; the tenure as the outcome leaves it."""
        renewed, row = self._guard(s, fence, parks, extends, head)
        t = fence.tenure if fence else None
        try:
            yield s.commit
        except LeaseError as exc:
            raise _busy(fence, exc) from exc
        except OutcomeUnknownError:
            if t:  # (maybe acquired: from now on the run holds by its epoch, or is refused)
                t.held, t.row = True, None
            raise
        if t:
            t.held, t.row = True, row
            if renewed is not None:
                t.renewed = renewed
            if parks is not None:  # (parked, it is renewed by the next take-up: a
                t.parked, t.renewed = max(t.parked or "", parks), 0.0  # parked acquire too)
            elif head is not None and t.parked is not None and head > t.parked:
                t.parked = None  # (a later checkpoint: the run goes on)


def _first_root(fence: Fence | None, cid: str | None) -> bool:
    """Whether writes of ``fence`` on root checkpoint ``cid`` are a run's first (they
    acquire the thread); those of a refused put find the thread busy."""
    t = fence.tenure if fence else None
    first = t is not None and not t.held and cid is not None
    if first and cid in t.refused:  # type: ignore[union-attr]
        raise _busy(fence, ConditionFailedError(f"checkpoint {cid!r} was refused"))
    return first


def _busy(fence: Any, exc: ConditionFailedError) -> ThreadBusyError:
    """The :class:`ThreadBusyError` of a write of ``fence`` (a :class:`Fence`: a
    single-writer saver's) refused (``exc``)."""
    busy = ThreadBusyError(f"thread {fence.thread['thread_id']!r} is another run's ({exc})",
                           entity=exc.entity, key=exc.key, item=exc.item,
                           failures=exc.failures)
    busy.thread_id = fence.thread["thread_id"]
    return busy

