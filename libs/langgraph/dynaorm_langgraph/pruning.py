"""What a saver deletes and copies (contract 23, 24): a thread's rows read whole
(:meth:`Pruning._thread`, by their keys alone when the tenant is forgotten), deleted by
``delete_thread``, ``delete_for_runs`` and ``prune`` (each taking the thread's lease
first, then letting it go) less the ancestors a kept checkpoint's ``DeltaChannel``
values are read from (:meth:`Pruning._needed`), and copied by ``copy_thread``. Deletes
and copies are commits of up to 100 rows (:func:`_each`)."""

import uuid
from collections.abc import Callable, Sequence
from contextlib import suppress
from functools import cache, partial
from typing import Any

from langgraph.checkpoint.serde.types import _DeltaSnapshot

from dynaorm import (
    ConditionFailedError,
    ConflictError,
    DynaormError,
    F,
    ForgottenError,
    ItemNotFoundError,
    OutcomeUnknownError,
    TransactionTooLargeError,
)
from dynaorm_langgraph.rows import _ROWS, Op, Rows


class Pruning(Rows):
    """A saver's deletes and copies of threads (see the module)."""

    def _thread(self, s: Any, thread_id: str, deleting: bool = False) -> Op:
        """Every row of a thread: its checkpoints, their writes, its lease; of a forgotten
        tenant's thread, whose values cannot be opened, when ``deleting``, the keys of its
        checkpoints and writes (:class:`_Unread`: a delete needs no value)."""
        pk = self._pk(thread_id)
        try:
            return (yield s.query(self.cp, self.w, self.lease_row, **pk).all)
        except ForgottenError:
            if not deleting:
                raise
        found = _Unread((yield s.query(self.lease_row, **pk).all))
        for cls in self.cp, self.w:
            keys = yield s.query(cls, **pk).keys
            found += [cls.model_construct(**key) for key in keys]
        return found

    def _drop(self, s: Any, found: list[Any], kept: set[tuple[str, str]] | None = None
              ) -> Op:
        """Delete the rows ``found`` but those of the checkpoints ``kept`` (``None``: none
        kept), of the ancestors they read (:meth:`_needed`) and, unless ``None``, writes
        ahead of a checkpoint not stored (a run's in flight), and let a lease ``found``
        (taken by :meth:`_thread`) go: deleted when no checkpoint is kept, else released,
        forgetting a head deleted (the next run starts from what is left)."""
        keep = set() if kept is None else kept | self._needed(found, kept) | _keys(
            found, self.w) - _keys(found, self.cp)  # (a refused put deletes its own)
        for cls in self.cp, self.w:
            yield from _each(s, [r for r in found if type(r) is cls and (
                r.ns, r.checkpoint_id) not in keep], s.delete)
        for lease in found:
            if type(lease) is not self.lease_row:
                continue
            if keep:
                s.update(lease).set(until=0, **{} if ("_", lease.head) in keep else {
                    "head": None}).where(F("epoch") == lease.epoch)
            else:
                s.delete(lease, condition=F("epoch") == lease.epoch)
            with suppress(ItemNotFoundError, ConditionFailedError):
                yield s.commit

    def _forget(self, s: Any, thread_id: str, kept: Callable[..., Any] = lambda _: None
                ) -> Op:
        """The thread's rows dropped (:meth:`_drop`) but the checkpoints ``kept(found)``,
        its lease taken first (a new epoch, its own, ``lease`` long, whoever held it; its
        head kept: a run's write that landed before is read, any after is refused, its
        epoch gone) and let go last, while still its own; released if the read or a
        delete fails (the next turn is accepted at once)."""
        pk, epoch = self._pk(thread_id), uuid.uuid4().hex
        s.update(self.lease_row, upsert=True, **pk).set(
            holder="delete", epoch=epoch, until=int((self.lease_row.clock(
            ) + self.lease.total_seconds()) * 1000), **self._stamp())
        yield s.commit
        try:
            found = yield from self._thread(s, thread_id, True)
            yield from self._drop(s, found, kept(found))
        except Exception:
            s.update(self.lease_row, **pk).set(until=0).where(F("epoch") == epoch)
            with suppress(DynaormError):
                yield s.commit
            raise

    def _delete_thread(self, s: Any, thread_id: str) -> Op:
        """Every row of the thread (see :meth:`_forget`)."""
        yield from self._forget(s, thread_id)

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
            yield from self._forget(s, thread_id, lambda found, doomed=doomed: _keys(
                found, self.cp) - doomed)

    def _copy_thread(self, s: Any, source_thread_id: str, target_thread_id: str) -> Op:
        """Every checkpoint of the thread with its writes (the whole parent chain, every
        namespace): the copy reads every ``DeltaChannel`` as the source does."""
        found = yield from self._thread(s, source_thread_id)
        stored = _keys(found, self.cp)
        copies = [type(r)(**{**dict(r), "thread_id": target_thread_id, **self._stamp()})
                  for r in found if type(r) is not self.lease_row and (
                      r.ns, r.checkpoint_id) in stored]  # (not the lease, nor a run's
        # writes ahead of its checkpoint)
        yield from _each(s, copies, partial(s.save, overwrite=True))
        s.update(self.lease_row, **self._pk(target_thread_id)).set(head=None)
        with suppress(ItemNotFoundError):  # (the target's lease forgets its head: its next
            yield s.commit  # turn extends the latest it reads)

    def _prune(self, s: Any, thread_ids: Sequence[str], strategy: str = "keep_latest") -> Op:
        if strategy not in ("keep_latest", "delete"):
            raise DynaormError(f"prune: unknown strategy {strategy!r}")
        for thread_id in thread_ids:
            yield from self._forget(s, thread_id, lambda found: set() if strategy == (
                "delete") else set(dict(sorted(_keys(found, self.cp))).items()))  # (each
            # namespace's greatest id)

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
        stored = cache(lambda key: self._load(rows[key].data)["channel_values"])
        needed: set[tuple[str, str]] = set()
        for key in kept & rows.keys():
            needed.update(self._chain(key, rows, written, stored))
        return needed

    def _chain(self, key: tuple[str, str], rows: dict[tuple[str, str], Any],
               written: dict[tuple[str, str], set[str]],
               stored: Callable[[tuple[str, str]], dict[str, Any]]) -> list[tuple[str, str]]:
        """The ancestors of the checkpoint ``key`` it reads its ``DeltaChannel`` values
        from (see :meth:`_needed`): the channels its metadata counts as ``DeltaChannel``s
        (``counted``), and those it stores no value of (of the counted ones, when some are:
        ``open_``)."""
        counted = set(self._load(rows[key].meta).get("counters_since_delta_snapshot") or ())
        open_ = {c for c in self._load(rows[key].data)["channel_versions"] if c not in stored(
            key) and (not counted or c in counted)}
        path = []
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


def _keys(found: list[Any], cls: Any) -> set[tuple[str, str]]:
    """The checkpoints (``(ns, checkpoint_id)``) of the rows ``found`` of type ``cls``."""
    return {(r.ns, r.checkpoint_id) for r in found if type(r) is cls}


class _Unread(list[Any]):
    """The rows of a forgotten tenant's thread, read by their keys only (objects holding
    just their key fields): what deleting them needs."""


def _each(s: Any, rows: Sequence[Any], stage: Callable[[Any], None]) -> Op:
    """Stage ``stage(row)`` for each of ``rows`` and commit, a transaction (100 rows) at a
    time: every delete and copy of a saver (one path: on a table with ``offload=``,
    ``save_many`` and ``delete_many`` refuse the rows, as they condition nothing, so
    cannot know what objects they replace). A row another writer deleted or changed
    since the read is left to it: that commit (or one whose outcome is unknown, or one
    past a transaction's 4 MB) is run again one row a commit, each proving its row's end,
    the rows it refuses left out."""
    for at in range(0, len(rows), _ROWS):
        chunk = rows[at:at + _ROWS]
        for r in chunk:
            stage(r)
        try:
            yield s.commit
        except (ConditionFailedError, ConflictError, ItemNotFoundError, OutcomeUnknownError,
                TransactionTooLargeError):
            for r in chunk:
                stage(r)
                with suppress(ConditionFailedError, ConflictError, ItemNotFoundError):
                    yield s.commit

