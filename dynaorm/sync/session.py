"""The sync edge: :class:`Session`, a stage (:mod:`dynaorm.core.stage`) and its client:
each method that does I/O runs one protocol of :mod:`dynaorm.core` through the client's
sync driver, as one operation for the hooks."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any, cast, overload

from dynaorm.client.session import BaseSession, Op, run_op
from dynaorm.core.lookups import find_p, get_many_p, get_p
from dynaorm.protocol.events import CommitResult
from dynaorm.protocol.policy import Rate
from dynaorm.protocol.steps import Proto, R
from dynaorm.schema.entity import T2, T3, T4, Entity, T
from dynaorm.sync.reads import Query, Scan, Search

if TYPE_CHECKING:  # (the write path loads with the first write, not with the session)
    from dynaorm.write.render import WritePlan



class Session(BaseSession):
    """A unit of work (``Session(table)``, or ``Session(client)``): it stages entities of
    any table bound to one :class:`~dynaorm.Client` and commits them together. Cheap to
    create; not to be shared between threads. ``scope={"tenant_id": "t1"}`` holds it to
    one tenant: every key it renders is checked before sending (a
    :class:`~dynaorm.ScopeError` otherwise; scans are filtered to the scope)."""

    def _run(self, proto: Proto[R], name: str,
             entities: Iterable[type[Any]], rate: Rate | None = None) -> R:
        return cast(R, self._send(proto, name, entities, rate))

    def __enter__(self) -> Session:
        return self

    def run(self, op: Op[R]) -> R:
        """Run ``op``, an operation written once for both kinds of session: a generator
        that yields *steps*, each a call of this session taking no argument
        (``session.commit``, ``functools.partial(session.get, User, user_id="u1")``,
        ``query.all``), and is sent back what the step returned; an exception a step
        raises is thrown into it at that ``yield`` (to handle, or to let through). What
        the generator returns, ``run`` returns. Staging calls (``save``, ``delete``,
        ``update``) send nothing and need no step. :meth:`dynaorm.AsyncSession.run`
        drives the same generator, awaiting each step. An operation runs once; when it
        fails, what it staged since it began (or since its last commit) is dropped, so no
        later commit writes half of it::

            def rename(s, user_id, name):
                user = yield partial(s.get, User, user_id=user_id)
                user.name = name
                s.save(user)
                yield s.commit
                return user

            s = Session(app)
            user = s.run(rename(s, "u1", "Ada"))
            a = AsyncSession(app)  # in asyncio: the same operation
            user = await a.run(rename(a, "u1", "Ada"))
        """
        with self._stage.held():
            return run_op(op)

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if exc_type is None:
            self.commit()
        else:
            self.rollback()

    # -- commit --------------------------------------------------------------------
    def plan(self) -> WritePlan:
        """The write plan the next commit would send (reads stored state where needed)."""
        return cast("WritePlan", self._plan())

    def commit(self, *, idempotency_key: str | None = None) -> CommitResult:
        """Send everything staged as one atomic write; clears the stage either way.
        Returns what was sent (a :class:`~dynaorm.CommitResult`). With an
        ``idempotency_key`` (or the session's), the writes apply at most once for that key
        (a replay returns the first commit's result, ``replayed=True``; other writes under
        it raise :class:`~dynaorm.IdempotencyMismatchError`): see the guide's "Exactly
        once"."""
        return cast(CommitResult, self._commit(idempotency_key))

    # -- reads ---------------------------------------------------------------------
    def get(self, entity: type[T], *, consistent: bool = False, version: int | None = None,
            **fields: Any) -> T | None:
        """Read one entity by its key fields (``None`` if absent)."""
        return self._run(get_p(self._stage, entity, consistent, version, fields), "get",
                         (entity,))

    def get_many(self, entity: type[T], keys: Sequence[Mapping[str, Any]], *,
                 consistent: bool = False, snapshot: bool = False,
                 concurrency: int = 4, rate: Rate | None = None) -> list[T | None]:
        """Read many entities; results in input order. BatchGetItem, 100 keys a request,
        ``concurrency`` requests in flight; ``snapshot=True``: one TransactGetItems (a
        consistent snapshot of at most 100 distinct items; repeated keys read once)."""
        return self._run(get_many_p(self._stage, entity, keys, consistent, snapshot,
                                    concurrency), "get_many", (entity,), rate)

    def find(self, entity: type[T], *, consistent: bool = False, **fields: Any) -> T | None:
        """Read an entity through one of its unique attributes (the guard item); ``None``
        unless the owner, when read, still holds the value looked up."""
        return self._run(find_p(self._stage, entity, consistent, fields), "find", (entity,))

    # -- queries -------------------------------------------------------------------
    @overload
    def query(self, entity: type[T], /, *, index: str | None = None,
              **fields: Any) -> Query[T]: ...
    @overload
    def query(self, entity: type[T], other: type[T2], /, *, index: str | None = None,
              **fields: Any) -> Query[T | T2]: ...
    @overload
    def query(self, entity: type[T], other: type[T2], third: type[T3], /, *,
              index: str | None = None, **fields: Any) -> Query[T | T2 | T3]: ...
    @overload
    def query(self, entity: type[T], other: type[T2], third: type[T3], fourth: type[T4], /,
              *, index: str | None = None, **fields: Any) -> Query[T | T2 | T3 | T4]: ...
    @overload
    def query(self, entity: type[T], /, *more: type[Entity], index: str | None = None,
              **fields: Any) -> Query[Any]: ...
    def query(self, entity: type[T], /, *more: type[Entity], index: str | None = None,
              **fields: Any) -> Query[Any]:
        """A lazy query over the partition named by ``fields`` (section 6 of the docs)."""
        return cast(Query[Any], self._query(Query, (entity, *more), index, fields))

    @overload
    def scan(self, entity: type[T], /, *, index: str | None = None,
             segment: int | None = None, segments: int | None = None,
             rate: Rate | None = None) -> Scan[T]: ...
    @overload
    def scan(self, entity: type[T], other: type[T2], /, *, index: str | None = None,
             segment: int | None = None, segments: int | None = None,
             rate: Rate | None = None) -> Scan[T | T2]: ...
    @overload
    def scan(self, entity: type[T], other: type[T2], third: type[T3], /, *,
             index: str | None = None, segment: int | None = None,
             segments: int | None = None, rate: Rate | None = None) -> Scan[T | T2 | T3]: ...
    @overload
    def scan(self, entity: type[T], /, *more: type[Entity], index: str | None = None,
             segment: int | None = None, segments: int | None = None,
             rate: Rate | None = None) -> Scan[Any]: ...
    def scan(self, entity: type[T], /, *more: type[Entity], index: str | None = None,
             segment: int | None = None, segments: int | None = None,
             rate: Rate | None = None) -> Scan[Any]:
        """Every item of the given entity types in the table or ``index`` (section 13 of
        the docs); ``segments=N`` reads N segments concurrently, ``segment=i`` only one; ``rate=``
        holds it to a capacity budget (a :class:`~dynaorm.Rate`)."""
        return cast(Scan[Any], self._scan(Scan, (entity, *more), index, segment, segments, rate))

    def history(self, entity: type[T], **fields: Any) -> Query[T]:
        """The stored versions ``1..n`` of one versioned entity, in version order."""
        return cast(Query[T], self._history(Query, entity, fields))

    def search(self, entity: type[T], index: str, /, *, vector: Any, top: int = 10,
               **fields: Any) -> Search[T]:
        """The ``top`` (at most 100) entities nearest to ``vector`` in the table's vector
        index ``index`` (a :class:`~dynaorm.VectorIndex`), in the partition ``fields``
        name when the index has one (``tenant_id="t1"``); ``.where(F(...) == ...)``
        narrows it by the index's filters, ``.all()`` runs it: a list of
        :class:`~dynaorm.Hit` (``.item``, ``.score``), nearest first."""
        return cast(Search[T], self._search(Search, entity, index, vector, top, fields))

    # -- bulk ----------------------------------------------------------------------
    def save_many(self, objs: Iterable[Entity], *, concurrency: int = 4,
                  rate: Rate | None = None) -> None:
        """Bulk save: fast, not atomic, no rules. New objects go in BatchWriteItem puts
        (25 a request, ``concurrency`` requests in flight); loaded (persisted) objects go
        one request each, as ``save`` + ``commit`` sends them (only changed attributes,
        conditioned on their loaded values: another writer's newer state is never
        overwritten). A call that cannot finish raises :class:`~dynaorm.BulkWriteError`
        with what was written, what was not and what may have been."""
        self._save_many(objs, concurrency, rate)

    def delete_many(self, objs: Iterable[Entity] | type[Entity],
                    keys: Iterable[Mapping[str, Any]] | None = None, *,
                    concurrency: int = 4, rate: Rate | None = None) -> None:
        """Bulk delete (BatchWriteItem, 25 a request, ``concurrency`` requests in flight)
        of objects, or of one entity's keys: ``s.delete_many(User, [{"user_id": "u1"}])``.
        Not atomic, no rules (entities with unique or versioned rules are refused, as by
        ``save_many``). A loaded object goes as one DeleteItem conditioned on the item
        being as loaded (a newer state is never deleted silently; one already gone counts
        as deleted). A call that cannot finish raises :class:`~dynaorm.BulkWriteError`."""
        self._delete_many(objs, keys, concurrency, rate)
