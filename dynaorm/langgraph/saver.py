"""LangGraph's checkpointer in the application's own table (contract 23; extra
``dynaorm[langgraph]``), written on dynaorm's public API alone.

A thread's rows share one partition, ``LG#[<scope values>#]<thread_id>``: a checkpoint
(sort key ``C#_<checkpoint_ns>#<checkpoint_id>#``: the namespace behind a ``_``, so the
root one is not empty) holds the whole checkpoint, its channel values inline and
compressed (:class:`dynaorm.Compressed`), and its metadata; each pending write
(``...#W#<task_id>#<idx>``, compressed) sorts right after its checkpoint, so one ``Query``
(newest first) reads a checkpoint with its writes. ``put`` is one write of one item (its
values are in it: no blob rows, so nothing to keep in step); on a table with ``offload=``
the values are ``Offloaded`` (a large one kept in S3 by the session, the deletes and copies
by commits); elsewhere a checkpoint whose compressed row passes DynamoDB's 400 KB is
refused with :class:`dynaorm.ItemTooLargeError` before anything is sent (no parts: a part
would cost a read of several items on every ``get_tuple``). ``put_writes`` is one commit
(past 100 rows, one a 100, read by no one until all are in); a task's retry writes the
same keys again.
Every call runs in one :class:`dynaorm.Session` (an :class:`dynaorm.AsyncSession` for the
``a...`` methods), scoped when ``scope=`` is given.

(0.9, contract 24) A ``DeltaChannel``'s history is one paged ``Query`` of the thread's
namespace, walked as its rows come (:class:`_Walk`); ``prune`` and ``delete_for_runs``
keep the ancestors a kept checkpoint's delta channels read (:meth:`Saver._needed`).
``single_writer=True`` adds the thread's lease row (``L#``, a :class:`dynaorm.Lease`) to
every write's commit (:mod:`dynaorm.langgraph.fence`); ``sealed=True`` declares the rows'
values ``Encrypted``.
"""

from __future__ import annotations

import time
import uuid
from collections import Counter
from collections.abc import AsyncIterator, Callable, Generator, Iterator, Mapping, Sequence
from contextlib import nullcontext, suppress
from dataclasses import dataclass
from datetime import timedelta
from functools import partial
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    WRITES_IDX_MAP,
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    DeltaChannelHistory,
    PendingWrite,
    get_checkpoint_id,
    get_serializable_checkpoint_metadata,
    writes_sort_key,
)
from langgraph.checkpoint.serde.base import SerializerProtocol
from langgraph.checkpoint.serde.types import _DeltaSnapshot

from dynaorm import (
    AsyncSession,
    Compressed,
    ConditionFailedError,
    ConflictError,
    DynaormError,
    Encrypted,
    Entity,
    F,
    ForgottenError,
    ItemExistsError,
    ItemNotFoundError,
    KeyringError,
    Lease,
    LeaseError,
    Offloaded,
    OutcomeUnknownError,
    Session,
    Table,
)
from dynaorm.langgraph.fence import (
    CONTROLLED,
    NONCE,
    Tenure,
    Tenures,
    ThreadBusyError,
    holder_of,
    idle,
    stops,
)

Op = Generator[Callable[[], Any], Any, Any]


@dataclass(frozen=True)
class Fence:
    """A single-writer saver's write: the thread's key, the holder it writes as, and the
    run's tenure (``None``: a write without a run)."""

    thread: dict[str, str]
    holder: str
    tenure: Tenure | None
_KEYS = ("thread_id", "ns", "checkpoint_id", "task_id", "idx")
_ROWS = 100  # (rows a transaction holds: a write is one row)
_PAGE = 1000  # (rows a history's request asks for at most: DynamoDB stops at 1 MB)
_FIRST = 100  # (and first, before the target's metadata says how far back to read)
_SLACK = 4 / 3  # (a lease is renewed this much longer, and so a third of it less often)


def rows(table: Table, scope: Sequence[str] = (), sealed: bool = False
         ) -> tuple[Any, Any, Any]:
    """The entities of ``table``'s checkpoints, pending writes and threads' leases
    (``LangGraphCheckpoint``, ``LangGraphWrite``, ``LangGraphLease``: a
    :class:`dynaorm.Lease`), declared on first use with ``scope``'s fields in their
    partition key, and with their values ``Encrypted`` when ``sealed``; every saver of
    the table shares them."""
    pk = "LG#" + "".join(f"{{{f}}}#" for f in scope) + "{thread_id}"
    if (found := table.entities.get("LangGraphCheckpoint")) is not None:
        if found.Meta.pk != pk:
            raise DynaormError(f"table {table.name!r} keeps LangGraph checkpoints under "
                               f"{found.Meta.pk!r}, not {pk!r}: give every saver of "
                               "the table the same scope fields")
        if found.__dynaorm_sealed__ != sealed:
            raise DynaormError(f"table {table.name!r} keeps LangGraph checkpoints "
                               f"{'sealed' if found.__dynaorm_sealed__ else 'in the clear'}: "
                               "give every saver of the table the same sealed=")
        return found, table.entities["LangGraphWrite"], table.entities["LangGraphLease"]
    blob: Any = Encrypted[Compressed[bytes]] if sealed else Compressed[bytes]
    meta: Any = Encrypted[bytes] if sealed else bytes
    if table.offload:  # (a large value goes to the table's S3, through the model's rule)
        large: Any = Offloaded  # (a generic alias, applied to a type made here)
        blob, meta = large[blob], large[meta]
    ttl = {table.ttl: int | None} if table.ttl else {}

    def entity(name: str, sk: str, fields: dict[str, Any], base: type[Entity] = Entity,
               keys: tuple[str, ...] = ("ns", "checkpoint_id"), **defaults: Any
               ) -> type[Entity]:
        meta = type("Meta", (), {"table": table, "pk": pk, "sk": sk, "type_name": name,
                                 "__qualname__": f"{name}.Meta"})
        return type(name, (base,), {
            "__module__": __name__, "__qualname__": name, "Meta": meta,
            "__dynaorm_internal__": True,  # (the saver's rows: no MCP tools)
            "__dynaorm_sealed__": sealed,
            **dict.fromkeys(ttl), **defaults,
            "__annotations__": {
                **dict.fromkeys((*scope, "thread_id", *keys), str),
                **fields, **ttl}})
    # (the writes and the lease first: a checkpoint entity is only ever declared beside
    # them)
    lease = entity("LangGraphLease", "L#", {"head": str | None}, base=Lease, keys=(),
                   head=None)
    write = entity("LangGraphWrite", "C#{ns}#{checkpoint_id}#W#{task_id}#{idx}", {
        "task_id": str, "idx": int, "channel": str, "path": str, "value": blob,
        "total": int | None}, total=None)
    return entity("LangGraphCheckpoint", "C#{ns}#{checkpoint_id}#", {
        "parent": str | None, "run_id": str | None,
        "meta": meta, "data": blob},
        parent=None, run_id=None), write, lease


_SAVER_TTL = {"default_ttl", "strategy", "sweep_interval_minutes"}
_STORE_TTL = {"default_ttl", "refresh_on_read", "omit_expired", "sweep_interval_minutes"}


def _positive(value: object, what: str) -> float:
    """``value`` as a positive number of units, else ``TypeError``/``ValueError``."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"{what} must be a number, not {type(value).__name__}")
    if not value > 0:
        raise ValueError(f"{what} must be positive, not {value!r}")
    return float(value)


def ttl_of(ttl: object, *, store: bool = False) -> Any:
    """The TTL a :class:`Saver` (a ``timedelta``) or a :class:`~dynaorm.langgraph.Store`
    (LangGraph's ``TTLConfig``) keeps, from what either accepts: a ``timedelta``, a number
    of seconds, or LangGraph's TTL config (a checkpointer's ``default_ttl`` minutes,
    ``strategy="delete"``, ``sweep_interval_minutes`` (DynamoDB sweeps by itself); a
    store's ``TTLConfig``). Anything else is refused now (``TypeError``, ``ValueError``),
    not at the first write."""
    if ttl is None:
        return None
    length: timedelta | None = None
    if isinstance(ttl, timedelta):
        length = ttl if ttl > timedelta(0) else None
        if length is None:
            raise ValueError(f"ttl must be positive, not {ttl!r}")
    elif isinstance(ttl, int | float) and not isinstance(ttl, bool):
        length = timedelta(seconds=_positive(ttl, "ttl (seconds)"))
    elif isinstance(ttl, Mapping):
        allowed = _STORE_TTL if store else _SAVER_TTL
        if unknown := sorted(map(str, set(ttl) - allowed)):
            raise ValueError(f"ttl: unknown keys {unknown} (LangGraph's TTL config of a "
                             f"{'store' if store else 'checkpointer'} has {sorted(allowed)})")
        if ttl.get("sweep_interval_minutes") is not None:
            _positive(ttl["sweep_interval_minutes"], "ttl's sweep_interval_minutes")
        if store:
            return _store_ttl(ttl)
        if ttl.get("strategy", "delete") != "delete":
            raise ValueError(f"ttl: strategy {ttl['strategy']!r}: a saver's rows expire "
                             "(DynamoDB's TTL deletes them); prune() keeps the latest")
        if "default_ttl" not in ttl:
            raise ValueError("ttl: LangGraph's TTL config needs default_ttl (minutes)")
        length = timedelta(minutes=_positive(ttl["default_ttl"], "ttl's default_ttl (minutes)"))
    else:
        raise TypeError(f"ttl must be a timedelta, seconds or LangGraph's TTL config (a "
                        f"dict), not {type(ttl).__name__}")
    if store:
        return {"default_ttl": length.total_seconds() / 60, "refresh_on_read": True}
    return length


def _store_ttl(ttl: Mapping[Any, Any]) -> dict[Any, Any]:
    """A store's ``TTLConfig``, its keys known (see :func:`ttl_of`), checked."""
    if ttl.get("default_ttl") is not None:
        _positive(ttl["default_ttl"], "ttl's default_ttl (minutes)")
    for flag in ("refresh_on_read", "omit_expired"):
        if not isinstance(ttl.get(flag, True), bool):
            raise TypeError(f"ttl's {flag} must be a bool")
    return dict(ttl)


class Runner:
    """Runs an op (a generator of calls, given a session of ``self.table`` in
    ``self.scope``) by :meth:`dynaorm.Session.run` (``_run``) or
    :meth:`dynaorm.AsyncSession.run` (``_arun``): one implementation for both, on the
    session's own runner. An exception a call raises is thrown into the op, for it to
    handle or let through."""

    table: Table
    scope: dict[str, str]

    def _bind(self, table: Table, scope: Mapping[str, str] | None, ttl: object,
              sealed: bool = False) -> None:
        """Keep ``table`` and ``scope``, refusing a table or a scope they cannot be used
        with (a scope no key can hold: refused now, not at every call; ``sealed`` without
        a keyring)."""
        if sealed and (table.keyring or getattr(table.db, "keyring", None)) is None:
            raise KeyringError(f"table {table.name!r}: sealed=True seals with the table's "
                               "keyring, and it has none (Table(keyring=...) or "
                               "Client(keyring=...))", key_id="?")
        if table.sk is None or not table.string_keys:
            raise DynaormError(f"table {table.name!r}: LangGraph's rows need string keys, "
                               "a sort key among them")
        if ttl is not None and not table.ttl:
            raise DynaormError(f"table {table.name!r} has no TTL attribute (Table(ttl=...)):"
                               " ttl= cannot expire its rows")
        self.table, self.scope = table, dict(scope or {})
        if self.scope:
            Session(table, scope=self.scope)

    def __deepcopy__(self, memo: Any) -> Any:
        """The saver or store itself: its state is its table's, so a deep copy of a
        compiled graph (or of a config holding it) keeps to the same rows (copying the
        table's client raised ``TypeError``). Pickling stays refused."""
        return self

    def _run(self, op: Callable[..., Op], *args: Any, lock: Fence | None = None) -> Any:
        with t.sync if (t := lock and lock.tenure) else nullcontext():  # (a run's writes)
            session = Session(self.table, scope=self.scope or None)
            return session.run(op(session, *args))

    async def _arun(self, op: Callable[..., Op], *args: Any, lock: Fence | None = None
                    ) -> Any:
        async with t.alock if (t := lock and lock.tenure) else nullcontext():
            session = AsyncSession(self.table, scope=self.scope or None)
            return await session.run(op(session, *args))


class Saver(Runner, BaseCheckpointSaver[int]):
    """A LangGraph checkpointer keeping its rows in ``table`` (see the module). ``scope``:
    a tenant scope (``{"tenant_id": "t1"}``), every call in a scoped session, so a saver
    never reads, lists, copies or deletes another scope's threads; ``ttl``: the rows it
    writes expire that long after (a ``timedelta``, seconds, or LangGraph's TTL config,
    ``{"default_ttl": minutes}``; the table must declare ``Table(ttl=...)``);
    ``single_writer=True``: one run writes a thread at a time, the others refused with
    :class:`~dynaorm.langgraph.ThreadBusyError` (see :mod:`dynaorm.langgraph.fence`), a
    run's hold lapsing ``lease`` after its last write; ``sealed=True``: every checkpoint,
    its metadata and every write stored sealed with the table's keyring (``Encrypted``),
    and a row it did not seal refused on read (:class:`~dynaorm.DecryptionError`)."""

    def __init__(self, table: Table, *, scope: Mapping[str, str] | None = None,
                 ttl: timedelta | float | Mapping[str, Any] | None = None,
                 serde: SerializerProtocol | None = None, single_writer: bool = False,
                 lease: timedelta = timedelta(minutes=5), sealed: bool = False):
        super().__init__(serde=serde)
        self.ttl: timedelta | None = ttl_of(ttl)
        self._bind(table, scope, self.ttl, sealed)
        self.cp, self.w, self.lease_row = rows(table, sorted(self.scope), sealed)
        if not isinstance(lease, timedelta) or lease <= timedelta(0):
            raise ValueError(f"lease must be a positive timedelta, not {lease!r}")
        self.single_writer, self.lease = single_writer, lease
        self.tenures = Tenures()

    def _pk(self, thread_id: str, **more: str) -> dict[str, Any]:
        return {**self.scope, "thread_id": str(thread_id), **more}

    def _at(self, conf: Mapping[str, Any]) -> dict[str, Any]:
        return self._pk(conf["thread_id"], ns="_" + conf.get("checkpoint_ns", ""))

    def _stamp(self) -> dict[str, Any]:
        return {self.table.ttl: int(time.time() + self.ttl.total_seconds())
                } if self.ttl and self.table.ttl else {}

    def _dump(self, value: Any) -> bytes:
        kind, data = self.serde.dumps_typed(value)
        return kind.encode() + b"\n" + data

    def _load(self, blob: bytes) -> Any:
        kind, _, data = blob.partition(b"\n")
        return self.serde.loads_typed((kind.decode(), data))

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
        where = None if extends is None else F("head").not_exists() if extends[
            0] is None else F("head").not_exists() | (F("head") == extends[0])
        if where is not None and head is not None:  # (or the head is this very one: the
            where = where | (F("head") == head)  # put again, its first answer lost)
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
            if parks is not None:
                t.parked = max(t.parked or "", parks)
            elif head is not None and t.parked is not None and head > t.parked:
                t.parked = None  # (a later checkpoint: the run goes on)

    def _put(self, s: Any, config: RunnableConfig, checkpoint: Checkpoint,
             metadata: CheckpointMetadata, fence: Fence | None = None) -> Op:
        conf, cid = config["configurable"], checkpoint["id"]
        md = get_serializable_checkpoint_metadata(config, metadata)
        meta, data = self._dump(md), self._dump(checkpoint)
        root = not conf.get("checkpoint_ns")
        # (time travel is a fork meant; a write of no run is a direct call, unless the
        # LangGraph installed names no run (fence.CONTROLLED): then a step of no run
        # extends the head too, but its input, which may be update_state(as_node=START))
        deliberate = md.get("source") in ("fork", "update") or (
            fence is not None and fence.tenure is None and (
                CONTROLLED or md.get("source") == "input"))
        # (an overwrite of an offloaded row reads what it replaces: there, a put inserts,
        # and only a put again of a stored checkpoint overwrites)
        for again in (False, True) if self.table.offload else (True,):
            s.save(self.cp(**self._at(conf), checkpoint_id=cid, parent=conf.get(
                "checkpoint_id"), run_id=str(md["run_id"]) if md.get("run_id") else None,
                meta=meta, data=data, **self._stamp()), overwrite=again)
            try:
                yield from self._commit(
                    s, fence, cid if fence and root and idle(checkpoint) else None, extends=(
                        conf.get("checkpoint_id"),) if root and not deliberate else None,
                    head=cid if root else None)
                break
            except ItemExistsError:
                if again:
                    raise
            except ThreadBusyError:
                yield from self._refused(s, fence, conf, cid, root)
                raise
        return {"configurable": {"thread_id": conf["thread_id"], "checkpoint_id": cid,
                                 "checkpoint_ns": conf.get("checkpoint_ns", "")}}

    def _refused(self, s: Any, fence: Fence | None, conf: Mapping[str, Any], cid: str,
                 root: bool) -> Op:
        """A put refused the thread: a run's root one has its checkpoint named refused,
        and its writes (stored before it) deleted unless the checkpoint is stored."""
        if not (fence and fence.tenure and root):
            return
        fence.tenure.refused.add(cid)
        found = yield s.query(self.cp, self.w, **self._at(conf)).begins_with(
            checkpoint_id=cid).all
        if not any(type(r) is self.cp for r in found):
            yield from self._drop(s, found)

    def _put_writes(self, s: Any, config: RunnableConfig, writes: Sequence[tuple[str, Any]],
                    task_id: str, task_path: str, fence: Fence | None = None) -> Op:
        """A task's regular writes (index >= 0) are inserted: the first kept, as by every
        LangGraph saver; its special ones (``__interrupt__``...) replaced. One commit; when
        some are there already (a retry, or its answer lost), those are left out. Past a
        transaction (100 rows), one commit a 100, each row holding the task's count of
        regular writes (``total``): a reader sees none of them until all are in (LangGraph
        takes a task with an output write as finished: part of them would lose the rest).
        A retry that finds every write stored after an unknown outcome, then the thread
        another run's, re-raises the unknown outcome (they may be the first attempt's)."""
        conf = config["configurable"]
        per = _ROWS - (fence is not None)  # (a commit holds the lease's action too)
        parks = conf["checkpoint_id"] if fence and not conf.get("checkpoint_ns") and stops(
            writes) else None
        rows = self._write_rows(conf, writes, task_id, task_path, per)
        kept: set[int] = set()
        unknown: OutcomeUnknownError | None = None
        for retry in (False, True):
            if retry:
                s = type(s)(self.table, scope=self.scope or None)
                kept = {w.idx for w in (yield s.query(self.w, **self._at(conf), checkpoint_id=
                        conf["checkpoint_id"], task_id=task_id).all) if w.idx >= 0}
            todo = [r for r in rows if r.idx not in kept]
            try:
                yield from self._save_writes(s, todo, per, fence, parks, None if conf.get(
                    "checkpoint_ns") else {**self._at(conf), "checkpoint_id": conf[
                        "checkpoint_id"]})
                return
            except ThreadBusyError:
                if unknown is not None and not todo:  # (all stored, maybe by the first
                    raise unknown from None  # attempt, which held the thread: not "none")
                raise
            except (ConflictError, OutcomeUnknownError) as exc:
                if retry:
                    raise
                unknown = exc if isinstance(exc, OutcomeUnknownError) else None

    def _write_rows(self, conf: Mapping[str, Any], writes: Sequence[tuple[str, Any]],
                    task_id: str, task_path: str, per: int) -> list[Any]:
        """A task's writes as rows, each holding the count of its regular writes
        (``total``) when they take more than one commit (``per`` rows)."""
        total = sum(WRITES_IDX_MAP.get(c, 0) >= 0 for c, _ in writes) if len(
            writes) > per else None
        return [self.w(**self._at(conf), checkpoint_id=conf["checkpoint_id"], task_id=task_id,
                       idx=WRITES_IDX_MAP.get(channel, i), channel=channel, path=task_path,
                       value=self._dump(value), total=total, **self._stamp())
                for i, (channel, value) in enumerate(writes)]

    def _save_writes(self, s: Any, todo: list[Any], per: int, fence: Fence | None,
                     parks: str | None, root: dict[str, Any] | None) -> Op:
        """Commit the rows ``todo``, ``per`` a commit (at least one: the lease's action),
        the last parking the lease at ``parks``. A run's first root writes (``root``: their
        checkpoint's key) acquire the thread on its head, else parked on a checkpoint not
        stored yet (the run's next checkpoint takes it up; a refused put deletes them); on any
        other, or one whose put was refused, nothing is stored nor acquired."""
        cid: str | None = root["checkpoint_id"] if root else None
        for at in range(0, max(len(todo), 1), per):
            first = _first_root(fence, cid)
            for again in (False, True) if first else (False,):
                for r in todo[at:at + per]:
                    s.save(r, overwrite=r.idx < 0)
                if again:
                    s.check(self.cp, condition=F("checkpoint_id").not_exists(), **(root or {}))
                try:
                    yield from self._commit(s, fence, cid if again else parks if (
                        at + per >= len(todo)) else None, (cid,) if first and not again else None)
                    break
                except ThreadBusyError:
                    if again or not first:
                        raise
                except ConditionFailedError as exc:  # (the checkpoint is stored)
                    if exc.entity is self.cp:
                        raise _busy(fence, exc) from exc
                    raise

    def _list(self, s: Any, config: RunnableConfig | None, filter: dict[str, Any] | None = None,
              before: RunnableConfig | None = None, limit: int | None = None) -> Op:
        conf = (config or {}).get("configurable", {})
        whole: bool | None = "thread_id" in conf or None  # (a scan: unordered)
        ns, cid, last = conf.get("checkpoint_ns"), conf.get("checkpoint_id"), (
            before and get_checkpoint_id(before))

        def near(r: Any) -> bool:
            return (type(r) is self.cp and (ns is None or r.ns == "_" + ns) and (
                not cid or r.checkpoint_id == cid) and (not last or r.checkpoint_id < last))
        if "thread_id" in conf:
            q = s.query(self.cp, self.w, **self._pk(conf["thread_id"]),
                        **({} if ns is None or cid else {"ns": "_" + ns})).reverse()
            if ns is not None and cid:  # (as fields, two types' prefixes widen to none)
                q, whole = q.begins_with(ns="_" + ns, checkpoint_id=cid), False
            elif ns is not None and limit == 1 and not filter and not last:
                # the latest: its newest row first (the checkpoint, or one of its writes,
                # which sort after it), then, if it has writes, just its own rows
                top = (yield partial(q.page_size(1).page, None)).items
                if not top or type(top[0]) is self.cp:
                    return self._tuples(top, near, {}, 1)
                cid, whole = top[0].checkpoint_id, False
                q = s.query(self.cp, self.w, **self._pk(conf["thread_id"])).reverse(
                    ).begins_with(ns="_" + ns, checkpoint_id=cid)
            q = q.page_size(_page_size(cid, limit))
        else:  # (unordered: read it all)
            q = s.scan(self.cp, self.w)
        limit_read = None if filter or "thread_id" not in conf else limit
        return (yield from self._pages(q, near, limit_read, filter or {}, limit, whole))

    def _pages(self, q: Any, near: Callable[[Any], bool], limit_read: int | None,
               filter: dict[str, Any], limit: int | None, whole: bool | None) -> Op:
        """:meth:`_list`'s pages of ``q`` read until ``limit_read`` checkpoints are near
        (``None``: all), as tuples. Unless ``whole`` is ``None`` (``q`` a scan), each
        tuple's config carries the rows read (:class:`_Seen`), to the thread's oldest when
        ``whole`` and ``q`` read to its end."""
        found: list[Any] = []
        cursor = None
        while True:  # (newest first: a checkpoint's writes have come before it)
            page = yield partial(q.page, cursor)
            found, cursor = found + page.items, page.cursor
            if cursor is None or (limit_read and sum(map(near, found)) >= limit_read):
                seen = _Seen(self.cp, self._pk(found[0].thread_id) if found else {},
                             found, bool(whole) and cursor is None, {}
                             ) if whole is not None else None
                return self._tuples(found, near, filter, limit, seen)

    def _tuples(self, found: list[Any], near: Callable[[Any], bool], filter: dict[str, Any],
                limit: int | None, seen: _Seen | None = None) -> list[CheckpointTuple]:
        writes: dict[tuple[str, str, str], list[Any]] = {}
        for r in found:
            if type(r) is self.w:
                writes.setdefault((r.thread_id, r.ns, r.checkpoint_id), []).append(r)
        out: list[CheckpointTuple] = []
        for r in sorted((r for r in found if near(r)), reverse=True,
                        key=lambda r: (r.thread_id, r.ns, r.checkpoint_id)):
            if limit is not None and len(out) >= limit:  # (none for 0, as InMemorySaver)
                break
            md = self._load(r.meta)
            if any(md.get(k) != v for k, v in filter.items()):
                continue
            ws = sorted(_whole(writes.get((r.thread_id, r.ns, r.checkpoint_id), [])),
                        key=lambda w: writes_sort_key(w.path, w.task_id, w.idx))
            config: Any = _config(r, r.checkpoint_id)
            data = self._load(r.data)
            if seen is not None:  # (what a history walk of it reads: get_state_history
                # asks one a checkpoint)
                config = _Listed(config)
                config.seen, config.at = seen, (r.ns, r.checkpoint_id)
                seen.opened[r.checkpoint_id] = (frozenset(data["channel_values"]), md.get(
                    "counters_since_delta_snapshot"))
            out.append(CheckpointTuple(
                config, data, md,
                r.parent and _config(r, r.parent),
                [(w.task_id, w.channel, self._load(w.value)) for w in ws]))
        return out

    def _thread(self, s: Any, thread_id: str, deleting: bool = False) -> Op:
        """Every row of a thread: its checkpoints, their writes, its lease. ``deleting``: of
        a forgotten tenant's thread, whose values cannot be opened, the keys of its rows
        (:class:`_Unread`: a delete needs no value)."""
        try:
            return (yield s.query(self.cp, self.w, self.lease_row, **self._pk(thread_id)).all)
        except ForgottenError:
            if not deleting:
                raise
        found = _Unread()
        for cls in self.cp, self.w, self.lease_row:
            keys = yield s.query(cls, **self._pk(thread_id)).keys
            found += [cls.model_construct(**key) for key in keys]
        return found

    def _drop(self, s: Any, found: list[Any], doomed: set[tuple[str, str]] | None = None) -> Op:
        """Delete the checkpoints ``doomed`` (``None``: every one ``found``) with their
        writes; a lease left naming a deleted checkpoint as the thread's head forgets it
        (the next run starts from what is left), unless a put moved the head since the
        thread was read."""
        for cls in self.cp, self.w:
            gone = [r for r in found if type(r) is cls and (
                doomed is None or (r.ns, r.checkpoint_id) in doomed)]
            if self.table.offload:  # (rows holding objects: deleted as read, by commits)
                yield from _each(s, gone, s.delete)
                continue
            keys = [{f: getattr(r, f) for f in (*self.scope, *_KEYS) if hasattr(r, f)}
                    for r in gone]
            if keys:
                yield partial(s.delete_many, cls, keys)
        for lease in (r for r in found if type(r) is self.lease_row):
            if doomed is not None and lease.head is not None and ("_", lease.head) in doomed:
                s.update(self.lease_row, **self._pk(lease.thread_id)).remove("head").where(
                    F("head") == lease.head)  # (a put since the read moved it: kept)
                with suppress(ItemNotFoundError, ConditionFailedError):
                    yield s.commit

    def _delete_thread(self, s: Any, thread_id: str) -> Op:
        """Every row of the thread. It takes the thread's lease first (a new epoch, its
        own, ``lease`` long, whoever held it): a run's write that landed before is read
        and deleted, any after is refused (its epoch is gone); then every row as read,
        and the lease last, while still its own."""
        mine = self.lease_row(**self._pk(thread_id), holder="delete", epoch=uuid.uuid4().hex,
                              until=int((self.lease_row.clock() + self.lease.total_seconds())
                                        * 1000), **self._stamp())
        s.save(mine, overwrite=True)
        yield s.commit
        found = yield from self._thread(s, thread_id, deleting=True)
        yield from self._drop(s, [r for r in found if type(r) is not self.lease_row])
        s.delete(mine, condition=F("epoch") == mine.epoch)
        with suppress(ItemNotFoundError, ConditionFailedError):
            yield s.commit

    def _delete_for_runs(self, s: Any, run_ids: Sequence[str]) -> Op:
        """A run's checkpoints with their writes, less those a checkpoint kept still
        reads its ``DeltaChannel`` values from (:meth:`_needed`)."""
        runs, hits = list(run_ids), []
        for at in range(0, len(runs), 100):  # (DynamoDB's IN takes at most 100 values; the
            # keys only: a forgotten tenant's runs are deleted too)
            hits += yield s.scan(self.cp).filter(F("run_id").is_in(runs[at:at + 100])).keys
        for thread_id in {h["thread_id"] for h in hits}:
            doomed = {(h["ns"], h["checkpoint_id"]) for h in hits
                      if h["thread_id"] == thread_id}
            found = yield from self._thread(s, thread_id, deleting=True)
            kept = {(r.ns, r.checkpoint_id) for r in found if type(r) is self.cp} - doomed
            yield from self._drop(s, found, doomed - self._needed(found, kept))

    def _copy_thread(self, s: Any, source: str, target: str) -> Op:
        """Every row of the thread (the whole parent chain, every namespace, each
        checkpoint's writes): the copy reads every ``DeltaChannel`` as the source does."""
        found = yield from self._thread(s, source)
        copies = [type(r)(**{**dict(r), "thread_id": target, **self._stamp()}) for r in found
                  if type(r) is not self.lease_row]  # (the copy is a thread of its own)
        if self.table.offload:  # (each copy uploads objects of its own)
            yield from _each(s, copies, partial(s.save, overwrite=True))
        elif copies:
            yield partial(s.save_many, copies)

    def _prune(self, s: Any, thread_ids: Sequence[str], strategy: str) -> Op:
        if strategy not in ("keep_latest", "delete"):
            raise DynaormError(f"prune: unknown strategy {strategy!r}")
        for thread_id in thread_ids:
            found = yield from self._thread(s, thread_id, deleting=True)
            latest: dict[str, str] = {}
            for r in found:
                if type(r) is self.cp:
                    latest[r.ns] = max(latest.get(r.ns, ""), r.checkpoint_id)
            kept = set() if strategy == "delete" else set(latest.items())
            kept |= self._needed(found, kept)
            yield from self._drop(s, found, {(r.ns, r.checkpoint_id) for r in found if
                                             type(r) is self.cp} - kept)

    def _needed(self, found: list[Any], kept: set[tuple[str, str]]) -> set[tuple[str, str]]:
        """The ancestors (``(ns, checkpoint_id)``) the checkpoints ``kept`` read their
        ``DeltaChannel`` values from: each one's parent chain back to the nearest
        checkpoint that stores the channel's value (its seed, whose writes count too),
        or to the root. A channel is a ``DeltaChannel`` of a checkpoint LangGraph wrote
        when its metadata counts it (``counters_since_delta_snapshot``); in a checkpoint
        without those counters (written by hand), when it has a version and no value,
        and the nearest value stored on the chain is a ``_DeltaSnapshot``, or none is
        and the chain holds writes of it."""
        if isinstance(found, _Unread):  # (a forgotten thread's: none can be read again)
            return set()
        rows = {(r.ns, r.checkpoint_id): r for r in found if type(r) is self.cp}
        written: dict[tuple[str, str], set[str]] = {}
        for r in found:
            if type(r) is self.w:
                written.setdefault((r.ns, r.checkpoint_id), set()).add(r.channel)
        values: dict[tuple[str, str], dict[str, Any]] = {}

        def stored(key: tuple[str, str]) -> dict[str, Any]:
            if key not in values:
                values[key] = self._load(rows[key].data)["channel_values"]
            return values[key]
        needed: set[tuple[str, str]] = set()
        for key in kept & rows.keys():
            needed.update(self._chain(key, rows, written, stored))
        return needed

    def _open(self, key: tuple[str, str], row: Any,
              stored: Callable[[tuple[str, str]], dict[str, Any]]) -> tuple[set[str], set[str]]:
        """The channels a checkpoint's metadata counts as ``DeltaChannel``s, and those of
        its channels it stores no value of (of the counted ones, when some are)."""
        versions = self._load(row.data)["channel_versions"]
        counted = set(self._load(row.meta).get("counters_since_delta_snapshot") or ())
        return counted, {c for c in versions if c not in stored(key) and (
            not counted or c in counted)}

    def _chain(self, key: tuple[str, str], rows: dict[tuple[str, str], Any],
               written: dict[tuple[str, str], set[str]],
               stored: Callable[[tuple[str, str]], dict[str, Any]]) -> list[tuple[str, str]]:
        """The ancestors of the checkpoint ``key`` it reads its ``DeltaChannel`` values
        from (see :meth:`_needed`)."""
        counted, open_ = self._open(key, rows[key], stored)
        path: list[tuple[str, str]] = []
        depth, at = 0, rows[key].parent
        while open_ and at is not None and (key[0], at) in rows:
            here = (key[0], at)
            path.append(here)
            for ch in [c for c in open_ if c in stored(here)]:
                open_.discard(ch)
                if counted or isinstance(stored(here)[ch], _DeltaSnapshot):
                    depth = len(path)
            at = rows[here].parent
        if (counted and open_) or any(ch in written.get(h, ()) for h in path
                                    for ch in open_):
            depth = len(path)  # (a channel without a seed: its history is the chain)
        return path[:depth]

    def _history(self, s: Any, config: RunnableConfig, channels: Sequence[str]) -> Op:
        """A ``DeltaChannel``'s history (see :meth:`get_delta_channel_history`): one paged
        ``Query`` of the namespace, newest first, walking the parent chain as its rows
        come (a checkpoint's writes sort right after it, so they have come before it)
        and stopping once every channel has its seed, or the chain its root."""
        if not channels:
            return {}
        conf = config["configurable"]
        ns, cid = "_" + conf.get("checkpoint_ns", ""), get_checkpoint_id(config)
        seen = getattr(config, "seen", None)
        if seen is not None and seen.cp is self.cp and seen.key == self._pk(
                conf["thread_id"]) and config.at == (ns, cid):  # type: ignore[attr-defined]
            walk = _Walk(self, cid, channels, ns, seen.opened)
            walk.read([r for r in seen.rows if r.ns == ns])
            if walk.done or seen.whole:  # (else read the thread: a list stopped short)
                return walk.result()
        q = s.query(self.cp, self.w, **self._pk(conf["thread_id"]), ns=ns).reverse()
        walk = _Walk(self, cid, channels, ns)
        cursor = None
        while True:
            page = yield partial(q.page_size(walk.want()).page, cursor)
            walk.read(page.items)
            if walk.done or (cursor := page.cursor) is None:
                return walk.result()

    # -- BaseCheckpointSaver --------------------------------------------------------------
    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        return next(iter(self._run(self._list, _one(config), None, None, 1)), None)

    def list(self, config: RunnableConfig | None, *, filter: dict[str, Any] | None = None,
             before: RunnableConfig | None = None,
             limit: int | None = None) -> Iterator[CheckpointTuple]:
        return iter(self._run(self._list, config, filter, before, limit))

    def put(self, config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata,
            new_versions: ChannelVersions) -> RunnableConfig:
        fence = self._fence(config)
        return self._run(self._put, config, checkpoint, metadata,  # type: ignore[no-any-return]
                         fence, lock=fence)

    def put_writes(self, config: RunnableConfig, writes: Sequence[tuple[str, Any]],
                   task_id: str, task_path: str = "") -> None:
        fence = self._fence(config)
        self._run(self._put_writes, config, writes, task_id, task_path, fence,
                  lock=fence)

    def delete_thread(self, thread_id: str) -> None:
        self._run(self._delete_thread, thread_id)

    def delete_for_runs(self, run_ids: Sequence[str]) -> None:
        self._run(self._delete_for_runs, run_ids)

    def copy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        self._run(self._copy_thread, source_thread_id, target_thread_id)

    def prune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        self._run(self._prune, thread_ids, strategy)

    def get_delta_channel_history(self, *, config: RunnableConfig, channels: Sequence[str]
                                  ) -> Mapping[str, DeltaChannelHistory]:
        """Each of ``channels``' writes on the parent chain of the checkpoint ``config``
        names (oldest first, its own excluded) back to the nearest ancestor that stores
        the channel's value (``seed``): LangGraph's contract, read in one paged ``Query``
        of the thread's namespace (``BaseCheckpointSaver``'s default reads a checkpoint
        at a time)."""
        return self._run(self._history, config, channels)  # type: ignore[no-any-return]

    async def aget_delta_channel_history(self, *, config: RunnableConfig,
                                         channels: Sequence[str]
                                         ) -> Mapping[str, DeltaChannelHistory]:
        """:meth:`get_delta_channel_history` on an ``AsyncSession``."""
        return await self._arun(self._history, config, channels)  # type: ignore[no-any-return]

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        return next(iter(await self._arun(self._list, _one(config), None, None, 1)),
                    None)

    async def alist(self, config: RunnableConfig | None, *,
                    filter: dict[str, Any] | None = None, before: RunnableConfig | None = None,
                    limit: int | None = None) -> AsyncIterator[CheckpointTuple]:
        for found in await self._arun(self._list, config, filter, before, limit):
            yield found

    async def aput(self, config: RunnableConfig, checkpoint: Checkpoint,
                   metadata: CheckpointMetadata, new_versions: ChannelVersions) -> RunnableConfig:
        fence = self._fence(config)
        return await self._arun(self._put, config, checkpoint,  # type: ignore[no-any-return]
                                metadata, fence, lock=fence)

    async def aput_writes(self, config: RunnableConfig, writes: Sequence[tuple[str, Any]],
                          task_id: str, task_path: str = "") -> None:
        fence = self._fence(config)
        await self._arun(self._put_writes, config, writes, task_id, task_path, fence,
                         lock=fence)

    async def adelete_thread(self, thread_id: str) -> None:
        await self._arun(self._delete_thread, thread_id)

    async def adelete_for_runs(self, run_ids: Sequence[str]) -> None:
        await self._arun(self._delete_for_runs, run_ids)

    async def acopy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        await self._arun(self._copy_thread, source_thread_id, target_thread_id)

    async def aprune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        await self._arun(self._prune, thread_ids, strategy)


class _Walk:
    """The parent chain of one checkpoint, walked over rows read newest first (pure):
    what :meth:`Saver.get_delta_channel_history` answers, as the rows come."""

    def __init__(self, saver: Saver, target: str | None, channels: Sequence[str],
                 ns: str, opened: dict[str, Any] | None = None) -> None:
        self.saver, self.channels, self.ns = saver, list(channels), ns
        self.opened = {} if opened is None else opened
        self.target = target
        self.at: str | None = None  # (the next ancestor to visit)
        self.started = False
        self.rows: dict[str, Any] = {}
        self.writes: dict[str, list[Any]] = {}
        self.remaining = set(channels)
        self.found: dict[str, list[PendingWrite]] = {c: [] for c in channels}
        self.seeds: dict[str, Any] = {}
        self.last: str | None = None  # (the sort key of the last row read)
        self.done = False
        self.depth: int | None = None  # (checkpoints to walk, as LangGraph counts them)
        self.visited = self.read_rows = 0

    def want(self) -> int:
        """Rows to ask for next: the first page ``_FIRST``; once the target's metadata
        counts the steps since each channel's snapshot, about what is left of the walk
        (rows a checkpoint, writes included, as read so far), else ``_PAGE``."""
        if not self.read_rows:
            return _FIRST
        if self.depth is None:
            return _PAGE
        per = self.read_rows / max(len(self.rows), 1)
        return max(25, min(_PAGE, int((self.depth - self.visited) * per * 1.5) + 20))

    def read(self, items: Sequence[Any]) -> None:
        self.read_rows += len(items)
        for r in items:
            if type(r) is self.saver.w:
                self.writes.setdefault(r.checkpoint_id, []).append(r)
                continue
            self.rows[r.checkpoint_id] = r
            self.last = r.checkpoint_id
            if not self.started and self.target in (None, r.checkpoint_id):
                self._start(r)
        if not self.started and self.last is not None and self.target is not None and _sk(
                self.ns, self.last) < _sk(self.ns, self.target):
            self.started = self.done = True  # (no such checkpoint: nothing to walk)
        while self.started and not self.done and self.at is not None and (
                self.at in self.rows):
            self._visit(self.rows[self.at])
        if self.started and not self.done and self.last is not None and _sk(
                self.ns, self.last) < _sk(self.ns, str(self.at)):
            self.done = True  # (read past where the parent sorts: it is not stored)

    def _start(self, r: Any) -> None:
        """Start the walk at ``r`` (the newest checkpoint, or the one named): its parent
        next, and as deep as its metadata counts, when it counts every channel."""
        self.started, self.at = True, r.parent
        self.done = r.parent is None
        counters = self._open(r)[1]
        if counters and all(c in counters for c in self.channels):
            self.depth = max(counters[c][1] for c in self.channels) + 2

    def _open(self, row: Any) -> tuple[frozenset[str], Any]:
        """The channels ``row`` stores a value of, and its metadata's counters since each
        delta snapshot: decoded once a walk (the list that read it decoded them)."""
        if (got := self.opened.get(row.checkpoint_id)) is None:
            got = self.opened[row.checkpoint_id] = (frozenset(self.saver._load(row.data)[
                "channel_values"]), self.saver._load(row.meta).get(
                "counters_since_delta_snapshot"))
        return got

    def _visit(self, row: Any) -> None:
        writes = sorted(_whole(self.writes.get(row.checkpoint_id, [])),
                        key=lambda w: writes_sort_key(w.path, w.task_id, w.idx))
        for w in reversed(writes):
            if w.channel in self.remaining:
                self.found[w.channel].append((w.task_id, w.channel, self.saver._load(w.value)))
        if seeded := [c for c in self.remaining if c in self._open(row)[0]]:
            channels = self.saver._load(row.data)["channel_values"]  # (its own objects:
            for ch in seeded:  # a reducer may change its input in place)
                self.seeds[ch] = channels[ch]
                self.remaining.discard(ch)
        self.at, self.visited = row.parent, self.visited + 1
        self.done = not self.remaining or row.parent is None

    def result(self) -> dict[str, DeltaChannelHistory]:
        out: dict[str, DeltaChannelHistory] = {}
        for ch in self.channels:
            entry: DeltaChannelHistory = {"writes": self.found[ch][::-1]}
            if ch in self.seeds:
                entry["seed"] = self.seeds[ch]
            out[ch] = entry
        return out


@dataclass
class _Seen:
    """The rows a ``list`` of one thread read (newest first, from its newest or the
    checkpoint named; ``whole``: to its oldest), and what it decoded of each checkpoint
    (``opened``: see :meth:`_Walk._open`): a ``DeltaChannel``'s history of a checkpoint it
    listed walks them, as the thread was when listed, with no ``Query`` of its own."""

    cp: Any
    key: dict[str, Any]
    rows: list[Any]
    whole: bool
    opened: dict[str, Any]


class _Listed(dict[str, Any]):
    """The config of a checkpoint ``list`` returned, carrying what it read (``seen``) and
    the checkpoint's ``(ns, checkpoint_id)`` (``at``). Copied or pickled, a plain config."""

    seen: _Seen
    at: tuple[str, str]

    def __reduce__(self) -> Any:
        return dict, (dict(self),)


def _first_root(fence: Fence | None, cid: str | None) -> bool:
    """Whether writes of ``fence`` on root checkpoint ``cid`` are a run's first (they
    acquire the thread); those of a refused put find the thread busy."""
    t = fence.tenure if fence else None
    first = t is not None and not t.held and cid is not None
    if first and cid in t.refused:  # type: ignore[union-attr]
        raise _busy(fence, ConditionFailedError(f"checkpoint {cid!r} was refused"))
    return first


def _busy(fence: Fence | None, exc: ConditionFailedError) -> ThreadBusyError:
    """The :class:`ThreadBusyError` of a write of ``fence`` refused (``exc``)."""
    assert fence is not None
    busy = ThreadBusyError(f"thread {fence.thread['thread_id']!r} is another run's ({exc})",
                           entity=exc.entity, key=exc.key, item=exc.item,
                           failures=exc.failures)
    busy.thread_id = fence.thread["thread_id"]
    return busy


def _page_size(cid: str | None, limit: int | None) -> int:
    """The page :meth:`Saver.list` reads a thread by: 500, or about what ``limit`` takes
    (a checkpoint and its writes) when no checkpoint is named."""
    return 500 if cid or not limit or limit < 1 else min(2 * limit + 1, 500)


class _Unread(list[Any]):
    """The rows of a forgotten tenant's thread, read by their keys only (objects holding
    just their key fields): what deleting them needs."""


def _each(s: Any, rows: Sequence[Any], stage: Callable[[Any], None]) -> Op:
    """Stage ``stage(row)`` for each of ``rows`` and commit, a transaction (100 rows) at a
    time: the path of a table with ``offload=``, whose rows ``save_many`` and
    ``delete_many`` refuse (they condition nothing, so cannot know what objects they
    replace). A row another writer deleted or changed since the read is left to it: that
    commit (or one whose outcome is unknown) is run again one row a commit, each proving
    its row's end, the rows it refuses left out."""
    for at in range(0, len(rows), _ROWS):
        chunk = rows[at:at + _ROWS]
        for r in chunk:
            stage(r)
        try:
            yield s.commit
        except (ConditionFailedError, ConflictError, ItemNotFoundError, OutcomeUnknownError):
            for r in chunk:
                stage(r)
                with suppress(ConditionFailedError, ConflictError, ItemNotFoundError):
                    yield s.commit


def _sk(ns: str, checkpoint_id: str) -> str:
    """A checkpoint's sort key (its entity's template): rows come in its order."""
    return f"C#{ns}#{checkpoint_id}#"


def _whole(writes: list[Any]) -> list[Any]:
    """A checkpoint's writes, less a task's written past one transaction and not all in
    yet (fewer regular rows than their ``total``: a ``put_writes`` stopped between its
    commits, to be run again)."""
    want: Counter[str] = Counter()
    have: Counter[str] = Counter()
    for w in writes:
        want[w.task_id] = max(want[w.task_id], w.total or 0)
        have[w.task_id] += w.idx >= 0
    return [w for w in writes if have[w.task_id] >= want[w.task_id]]


def _config(r: Any, checkpoint_id: str) -> RunnableConfig:
    return {"configurable": {"thread_id": r.thread_id, "checkpoint_ns": r.ns[1:],
                             "checkpoint_id": checkpoint_id}}


def _one(config: RunnableConfig) -> RunnableConfig:
    """``get_tuple``'s config: without a ``checkpoint_ns``, the root one (as in every
    LangGraph saver; ``list`` alone reads every namespace)."""
    return {**config, "configurable": {"checkpoint_ns": "", **config["configurable"]}}
