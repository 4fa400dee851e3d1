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
namespace, walked as its rows come, or the rows the ``list`` that returned its config read
(:class:`_Walk`: one ``Query`` a ``get_state_history``); ``prune`` and
``delete_for_runs`` keep the ancestors a kept checkpoint's delta channels read
(:mod:`dynaorm_langgraph.pruning`). ``single_writer=True`` adds the thread's lease row
(``L#``, a :class:`dynaorm.Lease`) to every write's commit (:mod:`dynaorm_langgraph.fence`);
``sealed=True`` declares the rows' values ``Encrypted`` (the rows:
:mod:`dynaorm_langgraph.rows`).
"""

from collections import Counter
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
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
    PendingWrite,
    get_checkpoint_id,
    get_serializable_checkpoint_metadata,
    writes_sort_key,
)
from langgraph.checkpoint.serde.base import SerializerProtocol

from dynaorm import (
    ConditionFailedError,
    ConflictError,
    F,
    ItemExistsError,
    OutcomeUnknownError,
    Table,
)
from dynaorm_langgraph.fence import (
    CONTROLLED,
    Fence,
    Fenced,
    Tenures,
    ThreadBusyError,
    _busy,
    _first_root,
    idle,
    stops,
)
from dynaorm_langgraph.pruning import Pruning
from dynaorm_langgraph.rows import _ROWS, Op, rows, ttl_of, twins


class Saver(Fenced, Pruning, BaseCheckpointSaver[int]):
    """A LangGraph checkpointer keeping its rows in ``table`` (see the module). ``scope``:
    a tenant scope (``{"tenant_id": "t1"}``), every call in a scoped session, so a saver
    never reads, lists, copies or deletes another scope's threads; ``ttl``: the rows it
    writes expire that long after (a ``timedelta``, seconds, or LangGraph's TTL config,
    ``{"default_ttl": minutes}``; the table must declare ``Table(ttl=...)``);
    ``single_writer=True``: one run writes a thread at a time, the others refused with
    :class:`~dynaorm_langgraph.ThreadBusyError` (see :mod:`dynaorm_langgraph.fence`), a
    run's hold lapsing ``lease`` after its last write; ``sealed=True``: every checkpoint,
    its metadata and every write stored sealed with the table's keyring (``Encrypted``),
    and a row it did not seal refused on read (:class:`~dynaorm.DecryptionError`)."""

    def __init__(self, table: Table, *, scope: Mapping[str, str] | None = None,
                 ttl: timedelta | float | Mapping[str, Any] | None = None,
                 serde: SerializerProtocol | None = None, single_writer: bool = False,
                 lease: timedelta = timedelta(minutes=5), sealed: bool = False):
        super().__init__(serde=serde)
        self.ttl = ttl_of(ttl)
        self._bind(table, scope, self.ttl, sealed)
        self.cp, self.w, self.lease_row = rows(table, sorted(self.scope), sealed)
        if not isinstance(lease, timedelta) or lease <= timedelta(0):
            raise ValueError(f"lease must be a positive timedelta, not {lease!r}")
        self.single_writer, self.lease = single_writer, lease
        self.tenures = Tenures()

    def _put(self, s: Any, config: RunnableConfig, checkpoint: Checkpoint,
             metadata: CheckpointMetadata, new_versions: ChannelVersions | None = None,
             fence: Fence | None = None) -> Op:
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
                    task_id: str, task_path: str = "", fence: Fence | None = None) -> Op:
        """A task's regular writes (index >= 0) are inserted: the first kept, as by every
        LangGraph saver; its special ones (``__interrupt__``...) replaced. One commit; when
        some are there already (a retry, or its answer lost), those are left out. Past a
        transaction (100 rows, or values past 3 MB), by commits, each row holding the task's
        count of regular writes (``total``): a reader sees none of them until all are in
        (LangGraph takes a task with an output write as finished: part of them would lose
        the rest). A retry keeps the rows stored of its own count; a stopped call's of
        another count (never shown) it deletes and writes anew. A retry that finds every
        write stored after an unknown outcome, then the thread another run's, re-raises the
        unknown outcome (they may be the first attempt's)."""
        conf = config["configurable"]
        values = [self._dump(value) for _, value in writes]
        per = min(_ROWS - 2 * (fence is not None), (3 << 20) // max(
            map(len, values), default=1) or 1)
        # (a commit holds the lease's action too, and the first root writes' check that
        # their checkpoint is not stored yet; and no more than 3 MB of values)
        parks = conf["checkpoint_id"] if fence and not conf.get("checkpoint_ns") and stops(
            writes) else None
        total = sum(WRITES_IDX_MAP.get(c, 0) >= 0 for c, _ in writes) if len(
            writes) > per else None
        rows = [self.w(**self._at(conf), checkpoint_id=conf["checkpoint_id"], task_id=task_id,
                       idx=WRITES_IDX_MAP.get(channel, i), channel=channel, path=task_path,
                       value=values[i], total=total, **self._stamp())
                for i, (channel, _) in enumerate(writes)]  # (``total``: of more than
        # one commit, each row holds the count of the task's regular writes)
        kept = set()
        unknown: OutcomeUnknownError | None = None
        for retry in (False, True):
            if retry:
                s = type(s)(self.table, scope=self.scope or None)
                kept = yield from self._kept(s, conf, task_id, total)
            todo = [r for r in rows if r.idx not in kept]
            try:
                yield from self._save_writes(s, todo, per, fence, parks, conf)
                return
            except ThreadBusyError:
                if unknown is not None and not todo:  # (all stored, maybe by the first
                    raise unknown from None  # attempt, which held the thread: not "none")
                raise
            except (ConflictError, OutcomeUnknownError) as exc:
                if retry:
                    raise
                unknown = exc if isinstance(exc, OutcomeUnknownError) else None

    def _kept(self, s: Any, conf: Mapping[str, Any], task_id: str, total: int | None) -> Op:
        """A retry's regular writes of the task stored already, of its count ``total``
        (left out); those of another count, a stopped call's (never shown), deleted."""
        found = [w for w in (yield s.query(self.w, **self._at(conf), checkpoint_id=conf[
            "checkpoint_id"], task_id=task_id).all) if w.idx >= 0]
        yield from self._drop(s, [w for w in found if w.total != total])
        return {w.idx for w in found if w.total == total}

    def _save_writes(self, s: Any, todo: list[Any], per: int, fence: Fence | None,
                     parks: str | None, conf: Mapping[str, Any]) -> Op:
        """Commit the rows ``todo``, ``per`` a commit (at least one: the lease's action),
        the last parking the lease at ``parks``. A run's first root writes (``conf``: their
        checkpoint's) acquire the thread on its head, else parked on a checkpoint not
        stored yet (the run's next checkpoint takes it up; a refused put deletes them); on any
        other, or one whose put was refused, nothing is stored nor acquired."""
        cid = None if conf.get("checkpoint_ns") else conf["checkpoint_id"]
        for at in range(0, max(len(todo), 1), per):
            first = _first_root(fence, cid)
            for again in (False, True) if first else (False,):
                for r in todo[at:at + per]:
                    s.save(r, overwrite=r.idx < 0)
                if again:
                    s.check(self.cp, condition=F("checkpoint_id").not_exists(),
                            **self._at(conf), checkpoint_id=cid)
                try:
                    yield from self._commit(s, fence, cid if again else parks if (
                        at + per >= len(todo)) else None, (cid,) if first and not again else None)
                    break
                except ThreadBusyError:
                    if again or not first:  # (a refused run stores nothing)
                        yield from self._drop(s, todo[:at])
                        raise
                except ConditionFailedError as exc:  # (the checkpoint is stored)
                    if exc.entity is self.cp:
                        raise _busy(fence, exc) from exc
                    raise

    def _list(self, s: Any, config: RunnableConfig | None, filter: dict[str, Any] | None = None,
              before: RunnableConfig | None = None, limit: int | None = None) -> Op:
        conf = (config or {}).get("configurable", {})
        ns, cid, last = conf.get("checkpoint_ns"), conf.get("checkpoint_id"), (
            before and get_checkpoint_id(before))

        def near(r: Any) -> bool:
            return (type(r) is self.cp and (ns is None or r.ns == "_" + ns) and (
                not cid or r.checkpoint_id == cid) and (not last or r.checkpoint_id < last))
        if "thread_id" in conf:
            q = s.query(self.cp, self.w, **self._pk(conf["thread_id"]),
                        **({} if ns is None or cid else {"ns": "_" + ns})).reverse()
            if ns is not None and cid:  # (as fields, two types' prefixes widen to none)
                q = q.begins_with(ns="_" + ns, checkpoint_id=cid)
            elif ns is not None and limit == 1 and not filter and not last:
                # the latest: its newest row first (the checkpoint, or one of its writes,
                # which sort after it), then, if it has writes, just its own rows
                top = (yield partial(q.page_size(1).page, None)).items
                if not top or type(top[0]) is self.cp:
                    return self._tuples(top, near, {}, 1)
                cid = top[0].checkpoint_id
                q = s.query(self.cp, self.w, **self._pk(conf["thread_id"])).reverse(
                    ).begins_with(ns="_" + ns, checkpoint_id=cid)
            q = q.page_size(_page_size(cid, limit))
        else:  # (unordered: read it all)
            q = s.scan(self.cp, self.w)
        limit_read = None if filter or "thread_id" not in conf else limit
        return (yield from self._pages(q, near, limit_read, filter or {}, limit, {} if (
            "thread_id" in conf) else None))

    def _pages(self, q: Any, near: Callable[[Any], bool], limit_read: int | None,
               filter: dict[str, Any], limit: int | None, opened: dict[Any, Any] | None
               ) -> Op:
        """:meth:`_list`'s pages of ``q`` read until ``limit_read`` checkpoints are near
        (``None``: all), as tuples (see :meth:`_tuples`)."""
        found: list[Any] = []
        cursor = None
        while True:  # (newest first: a checkpoint's writes have come before it)
            page = yield partial(q.page, cursor)
            found, cursor = found + page.items, page.cursor
            if cursor is None or (limit_read and sum(map(near, found)) >= limit_read):
                return self._tuples(found, near, filter, limit, opened)

    def _tuples(self, found: list[Any], near: Callable[[Any], bool], filter: dict[str, Any],
                limit: int | None, opened: dict[Any, Any] | None = None
                ) -> list[CheckpointTuple]:
        """The tuples of the checkpoints ``found`` that are ``near``. Unless ``opened`` is
        ``None`` (``found`` a scan's, unordered), each config carries the rows ``found``
        (read newest first, from the thread's newest or the checkpoint named) and what
        was decoded of each checkpoint (``opened``: see :meth:`_Walk._open`): a
        ``DeltaChannel``'s history of it (get_state_history asks one a checkpoint) walks
        them, as the thread was when listed, with no ``Query`` of its own."""
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
            ws = _whole(writes.get((r.thread_id, r.ns, r.checkpoint_id), []))
            config: Any = _config(r, r.checkpoint_id)
            data = self._load(r.data)
            if opened is not None and not self.cp.__dynaorm_sealed__:  # (sealed: the
                config = _Listed(config)  # history reads the table, a forget seen at once)
                config.rows, config.opened = found, opened
                config.at = self, r.thread_id, r.ns, r.checkpoint_id
                opened[r.ns, r.checkpoint_id] = (frozenset(data["channel_values"]), md.get(
                    "counters_since_delta_snapshot"))
            out.append(CheckpointTuple(
                config, data, md,
                r.parent and _config(r, r.parent),
                [(w.task_id, w.channel, self._load(w.value)) for w in ws]))
        return out

    def _history(self, s: Any, config: RunnableConfig, channels: Sequence[str]) -> Op:
        """``get_delta_channel_history``: each of ``channels``' writes on the parent chain
        of the checkpoint ``config`` names (oldest first, its own excluded) back to the
        nearest ancestor that stores the channel's value (``seed``), LangGraph's contract
        (``BaseCheckpointSaver``'s default reads a checkpoint at a time): one paged
        ``Query`` of the namespace, newest first, walking the parent chain as its rows
        come (a checkpoint's writes sort right after it, so they have come before it)
        and stopping once every channel has its seed, or the chain its root."""
        if not channels:
            return {}
        conf = config["configurable"]
        ns, cid = "_" + conf.get("checkpoint_ns", ""), get_checkpoint_id(config)
        if getattr(config, "at", None) == (self, str(conf["thread_id"]), ns, cid):
            walk = _Walk(self, cid, channels, config.opened)  # type: ignore[attr-defined]
            walk.read([r for r in config.rows if r.ns == ns])  # type: ignore[attr-defined]
            if walk.done:  # (else read the thread: the list stopped short of the seed)
                return walk.result()
        q = s.query(self.cp, self.w, **self._pk(conf["thread_id"]), ns=ns).reverse()
        walk = _Walk(self, cid, channels, {})
        cursor = None
        while True:
            page = yield partial(q.page_size(walk.want()).page, cursor)
            walk.read(page.items)
            if walk.done or (cursor := page.cursor) is None:
                return walk.result()

    def _get_tuple(self, s: Any, config: RunnableConfig) -> Op:
        """``get_tuple``: without a ``checkpoint_ns``, of the root one (as in every
        LangGraph saver; ``list`` alone reads every namespace)."""
        config = {**config, "configurable": {"checkpoint_ns": "", **config["configurable"]}}
        return next(iter((yield from self._list(s, config, None, None, 1))), None)

    # -- BaseCheckpointSaver: each method and its ``a...`` twin run one op ----------------
    get_tuple, aget_tuple = twins(_get_tuple)
    put, aput = twins(_put)
    put_writes, aput_writes = twins(_put_writes)
    delete_thread, adelete_thread = twins(Pruning._delete_thread)
    delete_for_runs, adelete_for_runs = twins(Pruning._delete_for_runs)
    copy_thread, acopy_thread = twins(Pruning._copy_thread)
    prune, aprune = twins(Pruning._prune)
    get_delta_channel_history, aget_delta_channel_history = twins(_history)

    def list(self, config: RunnableConfig | None, *, filter: dict[str, Any] | None = None,
             before: RunnableConfig | None = None,
             limit: int | None = None) -> Iterator[CheckpointTuple]:
        return iter(self._run(self._list, config, filter, before, limit))

    async def alist(self, config: RunnableConfig | None, *,
                    filter: dict[str, Any] | None = None, before: RunnableConfig | None = None,
                    limit: int | None = None) -> AsyncIterator[CheckpointTuple]:
        for found in await self._arun(self._list, config, filter, before, limit):
            yield found


def _page_size(cid: str | None, limit: int | None) -> int:
    """The page :meth:`Saver.list` reads a thread by: 500, or about what ``limit`` takes
    (a checkpoint and its writes) when no checkpoint is named."""
    return 500 if cid or not limit or limit < 1 else min(2 * limit + 1, 500)


def _config(r: Any, checkpoint_id: str) -> RunnableConfig:
    return {"configurable": {"thread_id": r.thread_id, "checkpoint_ns": r.ns[1:],
                             "checkpoint_id": checkpoint_id}}


# -- a DeltaChannel's history (contract 24): the parent chain of one checkpoint walked
# over its thread's rows read newest first (_Walk, pure), as a paged Query brings them or
# as a list read them (carried by the configs it returns, _Listed: get_state_history asks
# a history of each checkpoint it lists)
_PAGE = 1000  # (rows a history's request asks for at most: DynamoDB stops at 1 MB)

_FIRST = 100  # (and first, before the target's metadata says how far back to read)


class _Walk:
    """The parent chain of one checkpoint, walked over rows read newest first (pure):
    what :meth:`~dynaorm_langgraph.Saver.get_delta_channel_history` answers, as the rows come."""

    def __init__(self, saver: Any, target: str | None, channels: Sequence[str],
                 opened: dict[Any, Any]):
        self.saver, self.channels, self.opened = saver, list(channels), opened
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
        per = self.read_rows / len(self.rows)  # (a depth is known once a row started it)
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
        # (two sort keys of one namespace differ from its checkpoint id on, which "#"
        # ends: an id and its "#" order as the key)
        if not self.started and self.last is not None and self.target is not None and (
                self.last + "#" < self.target + "#"):
            self.started = self.done = True  # (no such checkpoint: nothing to walk)
        while self.started and not self.done and self.at is not None and (
                self.at in self.rows):
            self._visit(self.rows[self.at])
        if self.started and not self.done and self.last is not None and (
                self.last + "#" < f"{self.at}#"):
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
        if (got := self.opened.get(at := (row.ns, row.checkpoint_id))) is None:
            got = self.opened[at] = (frozenset(self.saver._load(row.data)[
                "channel_values"]), self.saver._load(row.meta).get(
                "counters_since_delta_snapshot"))
        return got

    def _visit(self, row: Any) -> None:
        for w in reversed(_whole(self.writes.get(row.checkpoint_id, []))):
            if w.channel in self.remaining:
                self.found[w.channel].append((w.task_id, w.channel, self.saver._load(w.value)))
        if seeded := [c for c in self.remaining if c in self._open(row)[0]]:
            channels = self.saver._load(row.data)["channel_values"]  # (its own objects:
            for ch in seeded:  # a reducer may change its input in place)
                self.seeds[ch] = channels[ch]
                self.remaining.discard(ch)
        self.at, self.visited = row.parent, self.visited + 1
        self.done = not self.remaining or row.parent is None

    def result(self) -> dict[str, Any]:
        """Each channel's ``DeltaChannelHistory``: its writes oldest first, and its seed
        when one was found."""
        return {ch: {"writes": self.found[ch][::-1], **(
            {"seed": self.seeds[ch]} if ch in self.seeds else {})} for ch in self.channels}


class _Listed(dict[str, Any]):
    """The config of a checkpoint ``list`` returned, carrying the rows it read (``rows``),
    what it decoded of them (``opened``: see :meth:`~dynaorm_langgraph.Saver._tuples`) and
    the checkpoint's ``(saver, thread_id, ns, checkpoint_id)`` (``at``): a history asked
    of another saver, thread or checkpoint reads its own. Copied or pickled, a plain
    config."""

    def __reduce__(self) -> Any:
        return dict, (dict(self),)


def _whole(writes: list[Any]) -> list[Any]:
    """A checkpoint's writes in LangGraph's order, less a task's written past one
    transaction and not all in yet (fewer regular rows than their ``total``: a
    ``put_writes`` stopped between its commits, to be run again)."""
    want: Counter[str] = Counter()
    have: Counter[str] = Counter()
    for w in writes:
        want[w.task_id] = max(want[w.task_id], w.total or 0)
        have[w.task_id] += w.idx >= 0
    return sorted((w for w in writes if have[w.task_id] >= want[w.task_id]),
                  key=lambda w: writes_sort_key(w.path, w.task_id, w.idx))

