"""The unit of work: stage saves and deletes, commit them atomically, read entities back.

:class:`Session` is the sync driver of the protocols in :mod:`dynaorm.core.unit_of_work` (staging is
:mod:`dynaorm.core.staging`): each method runs one protocol through the table's transport.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from types import TracebackType
from typing import Any, TypeVar, overload

from dynaorm.core.unit_of_work import UnitOfWork
from dynaorm.model.entity import Entity
from dynaorm.read.query import Query
from dynaorm.read.scan import Scan
from dynaorm.sync.driver import run
from dynaorm.transport.events import CommitResult
from dynaorm.transport.retry import recording
from dynaorm.transport.sync import RequestFailed
from dynaorm.write.render import WritePlan

__all__ = ["Session"]

T = TypeVar("T", bound=Entity)


class Session(UnitOfWork):
    """A unit of work on one table (``Session(table)``). Cheap to create; not to be shared
    between threads."""

    @property
    def _transport(self) -> Any:
        return self.table.transport

    def __enter__(self) -> Session:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if exc_type is None:
            self.commit()
        else:
            self.rollback()

    # -- commit --------------------------------------------------------------------
    def plan(self) -> WritePlan:
        """The write plan the next commit would send (reads stored state where needed)."""
        return run(self._transport, self._plan_p())

    def commit(self) -> CommitResult:
        """Send everything staged as one atomic write; clears the stage either way.
        Returns what was sent (a :class:`~dynaorm.CommitResult`)."""
        direct = self._direct()
        if direct is None:  # nothing staged, or a read first: the commit protocol
            return run(self._transport, self._commit_p())
        # the common commit reads nothing: sent here (the protocol's steps, no driver)
        staged, plan, outcomes, call = direct
        transport = self._transport
        response: dict[str, Any] = {}
        with recording() as result:
            if call is not None:
                try:
                    response = transport.call(call.operation, call.request, call.origins,
                                              idempotent=call.idempotent)
                except RequestFailed as exc:
                    response = run(transport, self._failed_p(plan, exc))
        single, at = self._settle(staged, plan, outcomes, response)
        if at >= 0:  # an action's finish needs a read (a lost answer): the protocol reads
            run(transport, self._finish_p(staged, response, single, at))
        return result if call is not None else CommitResult()

    # -- reads ---------------------------------------------------------------------
    def get(self, entity: type[T], *, consistent: bool = False, version: int | None = None,
            **fields: Any) -> T | None:
        """Read one entity by its key fields (``None`` if absent)."""
        return run(self._transport, self._get_p(entity, consistent, version, fields))

    def get_many(self, entity: type[T], keys: Sequence[Mapping[str, Any]], *,
                 consistent: bool = False, snapshot: bool = False,
                 concurrency: int = 4) -> list[T | None]:
        """Read many entities; results in input order. BatchGetItem, 100 keys a request,
        ``concurrency`` requests in flight; ``snapshot=True``: one TransactGetItems (a
        consistent snapshot of at most 100 distinct items; repeated keys read once)."""
        return run(self._transport,
                   self._get_many_p(entity, keys, consistent, snapshot, concurrency))

    def find(self, entity: type[T], *, consistent: bool = False, **fields: Any) -> T | None:
        """Read an entity through one of its unique attributes (the guard item); ``None``
        unless the owner, when read, still holds the value looked up."""
        return run(self._transport, self._find_p(entity, consistent, fields))

    # -- queries -------------------------------------------------------------------
    @overload
    def query(self, entity: type[T], /, *, index: str | None = None,
              **fields: Any) -> Query[T]: ...
    @overload
    def query(self, entity: type[T], /, *more: type[Entity], index: str | None = None,
              **fields: Any) -> Query[Any]: ...
    def query(self, entity: type[T], /, *more: type[Entity], index: str | None = None,
              **fields: Any) -> Query[Any]:
        """A lazy query over the partition named by ``fields`` (section 6 of the docs)."""
        return self._query((entity, *more), index, dict(fields))

    @overload
    def scan(self, entity: type[T], /, *, index: str | None = None,
             segment: int | None = None, segments: int | None = None) -> Scan[T]: ...
    @overload
    def scan(self, entity: type[T], /, *more: type[Entity], index: str | None = None,
             segment: int | None = None, segments: int | None = None) -> Scan[Any]: ...
    def scan(self, entity: type[T], /, *more: type[Entity], index: str | None = None,
             segment: int | None = None, segments: int | None = None) -> Scan[Any]:
        """Every item of the given entity types in the table or ``index`` (section 13 of
        the docs); ``segments=N`` reads N segments concurrently, ``segment=i`` only one."""
        return self._scan((entity, *more), index, segment, segments)

    def history(self, entity: type[T], **fields: Any) -> Query[T]:
        """The stored versions ``1..n`` of one versioned entity, in version order."""
        return self._history(entity, dict(fields))

    # -- bulk ----------------------------------------------------------------------
    def save_many(self, objs: Iterable[Entity], *, concurrency: int = 4) -> None:
        """Bulk load (BatchWriteItem, 25 a request, ``concurrency`` requests in flight):
        fast, not atomic, no rules."""
        run(self._transport, self._save_many_p(objs, concurrency))

    def delete_many(self, objs: Iterable[Entity] | type[Entity],
                    keys: Iterable[Mapping[str, Any]] | None = None, *,
                    concurrency: int = 4) -> None:
        """Bulk delete (BatchWriteItem, 25 a request, ``concurrency`` requests in flight)
        of objects, or of one entity's keys: ``s.delete_many(User, [{"user_id": "u1"}])``.
        Not atomic, no rules (entities with unique or versioned rules are refused, as by
        ``save_many``)."""
        run(self._transport, self._delete_many_p(objs, keys, concurrency))
