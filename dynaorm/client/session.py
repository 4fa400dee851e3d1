"""What both kinds of session share besides their I/O (:class:`BaseSession`): a
:class:`~dynaorm.core.stage.Stage`, the client it sends through, and the staging methods,
the same plain methods in both. It stands on the client's floor: it asks its client for
the driver and for whether hooks listen, which the pure floors never do."""

from __future__ import annotations

import dataclasses
import inspect
import warnings
from collections.abc import Callable, Generator, Iterable, Mapping
from datetime import timedelta
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar, cast, overload

from dynaorm.client.botocore import aiobotocore
from dynaorm.client.client import Client, session_target
from dynaorm.core.stage import Stage, condition_given, describe
from dynaorm.errors import DynaormError, ScopeError
from dynaorm.protocol.hooks import Operation
from dynaorm.protocol.policy import Policy, Rate, budget_of
from dynaorm.protocol.steps import Proto, R, budgeted
from dynaorm.read.scan import check_segments
from dynaorm.schema.entity import Entity, T
from dynaorm.schema.table import TableSchema
from dynaorm.values.expressions import Condition

if TYPE_CHECKING:  # the write path loads with the first staged write (a program that
    # only reads never pays for it: tests/system/test_import.py)
    from dynaorm.client.table import Table
    from dynaorm.schema.lease import Lease
    from dynaorm.write.records import StagedWrite
    from dynaorm.write.updates import StagedUpdate

#: an operation written once for both kinds of session (:meth:`dynaorm.Session.run`): a
#: generator of steps, each a call of the session taking no argument, sent back what the
#: call returned; what it returns is the operation's result
Op = Generator[Callable[[], Any], Any, R]


def run_op(op: Op[R]) -> R:
    """``op`` driven to its end, each step called (:meth:`dynaorm.Session.run`). A step
    that answers an awaitable (an AsyncSession's call) is refused before it starts: its
    coroutine is closed unstarted, so nothing of it is sent."""
    driver = _drive(op)
    try:
        pending = driver.send(None)
    except StopIteration as done:
        return cast(R, done.value)
    close = getattr(pending, "close", None)
    if close is not None:
        close()  # (a coroutine never started: nothing of the step ran)
    driver.close()
    raise TypeError("Session.run: a step answered an awaitable (an AsyncSession's call: "
                    "run the operation with AsyncSession.run)")


async def arun_op(op: Op[R]) -> R:
    """``op`` driven to its end, each step called, and awaited when it answers an
    awaitable (:meth:`dynaorm.AsyncSession.run`). A step's exception is thrown into
    ``op``; an interrupt (a cancellation) closes it, then goes on."""
    driver = _drive(op)
    sent = None
    failed = None
    while True:
        try:
            pending = driver.send(sent) if failed is None else driver.throw(failed)
        except StopIteration as done:
            return cast(R, done.value)
        try:
            sent, failed = await pending, None
        except BaseException as exc:  # (thrown back: an interrupt closes op in _drive)
            sent, failed = None, exc


def _drive(op: Op[R]) -> Generator[Any, Any, R]:
    """The one runner of an operation: each step called, an exception it raises thrown
    into ``op``; an awaitable a step answers yielded to the driver (which awaits it, or
    refuses it). ``op`` runs once, from its start; an interrupt (a cancellation, a
    ``KeyboardInterrupt``) closes it and goes on, even when ``op`` will not close."""
    if not isinstance(op, Generator):
        raise TypeError(f"Session.run takes an operation, a generator of steps, not "
                        f"{type(op).__name__}")
    if inspect.isgenerator(op) and inspect.getgeneratorstate(op) != inspect.GEN_CREATED:
        raise ValueError("Session.run: this operation was already run (or is running): "
                         "an operation runs once, from its start")
    sent, failed = None, None
    while True:
        try:
            step = op.send(sent) if failed is None else op.throw(failed)
        except StopIteration as done:
            return cast(R, done.value)
        try:
            sent, failed = step(), None
            if inspect.isawaitable(sent):
                sent = yield sent
        except Exception as exc:
            sent, failed = None, exc
        except BaseException as interrupt:
            try:
                op.close()
            except Exception as exc:  # (op yielded or raised as it closed: said, not kept)
                interrupt.add_note(f"the operation did not close: {exc!r}")
            raise


L = TypeVar("L", bound="Lease")


class BaseSession:
    """What both kinds of session are besides their I/O: a :class:`Stage` (what they
    staged, on a table and every table bound to its client, or on every table of a
    client) and the staging methods, the same plain methods in both (``save``,
    ``delete``, ``update``, ``check``, ``rollback``). :class:`~dynaorm.Session` and
    ``AsyncSession`` add their client and the methods that do I/O, each one named
    protocol of :mod:`dynaorm.core` run through the client's driver."""

    #: whether the session runs its protocols through the client's async driver
    _async: ClassVar[bool] = False

    def __init__(self, target: Table | Client, *,
                 scope: Mapping[str, Any] | None = None,
                 idempotency_key: str | None = None):
        table, client = session_target(target, type(self).__name__)
        if self._async and client.wire == "botocore":  # (dynaorm's own wire needs none)
            aiobotocore()  # dynaorm[async] installed: said here, not at the first request
        self._stage = Stage(table, client if table is None else None, scope,
                            idempotency_key, client._receipts)

    def __del__(self) -> None:
        """Dropped with staged work neither committed nor rolled back: a
        ``ResourceWarning`` names what is lost (nothing of it was written)."""
        stage = getattr(self, "_stage", None)  # (a constructor that failed made none)
        if stage is None or not stage.writes:
            return
        lost = stage.staged()
        warnings.warn(f"{type(self).__name__} dropped with {len(lost)} staged write(s) "
                      f"never committed, so never written: {'; '.join(lost)} (commit() "
                      "them, or rollback() to drop them)", ResourceWarning, source=self,
                      stacklevel=2)

    @property
    def table(self) -> TableSchema | None:
        """The table the session was made with (``None``: made with a client)."""
        return self._stage.table

    @property
    def client(self) -> Client:
        """The :class:`~dynaorm.Client` the session sends through (its table's, as the
        table is bound now, or the one it was made with)."""
        return cast("Client", self._stage.client)

    @property
    def scope(self) -> Mapping[str, Any] | None:
        """The tenant scope the session holds to, as it was given (``scope=``; read-only),
        ``None`` when unscoped: ``Session(table, scope=other.scope)`` is held alike."""
        scope = self._stage.scope
        return None if scope is None else MappingProxyType(scope.given)

    @property
    def idempotency_key(self) -> str | None:
        """The key the session's commits apply at most once for, unless ``commit()``
        names another (``idempotency_key=``; read-only), ``None`` when it was given none."""
        return self._stage.idempotency_key

    @property
    def _driver(self) -> Any:
        client = self._stage.client
        return client.async_driver if self._async else client.driver

    def _bound(self, name: str, entities: Iterable[type[Any]]
               ) -> tuple[Any, Policy, Operation | None]:
        """What a session operation ``name`` on ``entities`` runs with: the session's
        driver, its client's policy (read once an operation: the tracer check is made
        once), and what the hooks are told the operation is (``None``: no hook to tell);
        the entities' tables checked first (a session of a client follows a table a test
        fixture pointed elsewhere: :meth:`~dynaorm.core.stage.Stage.spec`)."""
        stage = self._stage
        if stage.table is None:
            entities = [stage.spec(e).cls for e in entities]
        client = stage.client
        policy = client.policy
        return (client.async_driver if self._async else client.driver, policy,
                describe(name, entities) if policy.hooks else None)

    # -- the I/O both kinds run alike (an async session awaits what these return) -------
    def _send(self, proto: Proto[Any], name: str, entities: Iterable[type[Any]],
              rate: Rate | None = None) -> Any:
        """``proto`` run through the session's driver as the session operation ``name`` on
        ``entities``, held to ``rate``."""
        driver, policy, operation = self._bound(name, entities)
        run = budgeted(proto, budget_of(rate)) if rate else proto
        return driver.run(run, operation, policy=policy)

    def _plan(self) -> Any:
        from dynaorm.core.commit import plan_p

        return self._send(plan_p(self._stage.coalesced()), "plan",
                          (e._entity for e in self._stage.writes.values()))

    def _commit(self, idempotency_key: str | None) -> Any:
        """Everything staged sent as one atomic write (the stage cleared either way)."""
        from dynaorm.core.commit import commit_p

        staged = self._stage.take()
        driver, policy, operation = self._bound("commit", (e._entity for e in staged))
        return driver.run(commit_p(staged, policy.observed, self._stage.keyed,
                                   self._stage.idempotency_key if idempotency_key is None
                                   else idempotency_key, self._stage),
                          operation, policy=policy)

    def _save_many(self, objs: Iterable[Entity], concurrency: int, rate: Rate | None) -> Any:
        from dynaorm.core.bulk import save_many_p

        found = list(objs)
        return self._send(save_many_p(self._stage, found, concurrency,
                                      self.client.policy.observed),
                          "save_many", (type(o) for o in found), rate)

    def _delete_many(self, objs: Iterable[Entity] | type[Entity],
                     keys: Iterable[Mapping[str, Any]] | None, concurrency: int,
                     rate: Rate | None) -> Any:
        from dynaorm.core.bulk import delete_many_p

        found = objs if isinstance(objs, type) else list(objs)
        return self._send(delete_many_p(self._stage, found, keys, concurrency,
                                        self.client.policy.observed), "delete_many",
                          (found,) if isinstance(found, type) else (type(o) for o in found),
                          rate)

    # -- staging (no I/O) --------------------------------------------------------------
    def save(self, obj: Entity, *, overwrite: bool = False,
             condition: Condition | None = None) -> None:
        """Stage an insert (new object) or an update (persisted object); with
        ``condition=`` the commit also requires it on the stored item."""
        from dynaorm.write.save import SaveEntry

        given = condition_given(condition, obj)
        if overwrite and obj._dynaorm_state is None:  # (over an item never read)
            given = self._stage.by_key(obj, given)
        self._stage.add(SaveEntry(obj, overwrite, given))

    def delete(self, obj: Entity | type[Entity], /, *, history: bool = False,
               condition: Condition | None = None, **fields: Any) -> None:
        """Stage a delete of an object, or by key: ``s.delete(User, user_id="u1")`` (with
        ``history=True`` a versioned entity's rows go too; ``condition=`` must hold)."""
        from dynaorm.write.delete import DeleteEntry

        if isinstance(obj, type):
            self._stage.key(self._stage.spec(obj), fields)
            obj = obj.model_construct(**fields)  # only its key: entities with rules are
            # read at commit (consistently), like any never-loaded object
        elif fields:
            raise DynaormError("delete(obj) takes no key fields; delete(Entity, **key) does")
        given = condition_given(condition, obj)
        if obj._dynaorm_state is None:  # (by key: the stored item never read)
            given = self._stage.by_key(obj, given)
        self._stage.add(DeleteEntry(obj, history, given))

    @overload
    def update(self, target: type[T], /, *, upsert: bool = False,
               **fields: Any) -> StagedUpdate[T]: ...
    @overload
    def update(self, target: T, /, *, upsert: bool = False) -> StagedUpdate[T]: ...
    def update(self, target: type[T] | T, /, *, upsert: bool = False,
               **fields: Any) -> StagedUpdate[T]:
        """Stage an update expression by key (``s.update(User, user_id="u1")``) or by a
        loaded object; add actions to what it returns (see :class:`StagedUpdate`)."""
        from dynaorm.write.updates import StagedUpdate

        if isinstance(target, type):
            key = self._stage.key(self._stage.spec(target), fields)
            staged = StagedUpdate(target, fields, None, upsert, key)
            guard = self._stage.by_key(target, None)
            if guard is not None:  # (a scoped session: a stale key's row is not its)
                staged.where(guard)
                staged.scope_guard = guard
        else:
            if fields:
                raise DynaormError("update(obj) takes no key fields; update(Entity, **key) "
                                   "does")
            key_fields = {n: target.__dict__[n] for n in self._stage.spec(target).lookup_fields}
            staged = StagedUpdate(type(target), key_fields, target, upsert)
        self._stage.add(staged)
        return staged

    def check(self, entity: type[Entity], /, *, condition: Condition,
              **fields: Any) -> None:
        """Stage a ConditionCheck: the commit fails (ConditionFailedError) and writes
        nothing unless ``condition`` holds on that stored item."""
        from dynaorm.write.updates import StagedCheck

        key = self._stage.key(self._stage.spec(entity), fields)
        scope = self._stage.scope
        if isinstance(condition, Condition) and scope is not None:  # (asked of the
            condition = condition & scope.guard(self._stage.spec(entity))  # scope's row)
        self._stage.add(StagedCheck(entity, key, condition))

    @overload
    def lease(self, lease: type[L], /, *, holder: str, duration: timedelta,
              epoch: str | None = None, values: Mapping[str, Any] | None = None,
              where: Condition | None = None, **key: Any) -> L: ...
    @overload
    def lease(self, lease: L, /, *, duration: timedelta | None = None,
              release: bool = False, values: Mapping[str, Any] | None = None,
              where: Condition | None = None) -> L: ...
    def lease(self, lease: type[L] | L, /, *, holder: str | None = None,
              duration: timedelta | None = None, release: bool = False,
              epoch: str | None = None, values: Mapping[str, Any] | None = None,
              where: Condition | None = None, **key: Any) -> L:
        """Stage a :class:`~dynaorm.Lease`'s action in this commit, and return the lease
        as the commit stores it (see the guide's "Leases"):

        - ``s.lease(JobLease, holder="w1", duration=timedelta(seconds=30), job="j")``:
          acquire it, with a new epoch, until ``duration`` from now (the lease's
          ``clock``): the commit is refused with :class:`~dynaorm.LeaseError` while
          another holder's lease is live (``epoch=``: the new tenure's id, a fresh KSUID
          by default; give the same one to acquires that must be one tenure);
        - ``s.lease(held)``: hold it, the commit refused unless the lease is still at
          ``held.epoch`` (a ``ConditionCheck``); with ``duration=``, renewed that long
          from now;
        - ``s.lease(held, release=True)``: release it (lapsed now, the epoch kept: a
          holder that was superseded stays refused).

        ``values=``: more fields of the lease's own class the action sets (what the
        holder got to: a position, a cursor); ``where=``: a condition on the stored lease
        the action needs too (refused, the same :class:`~dynaorm.LeaseError`).
        Nothing is sent until the commit; the other writes staged beside it are stored
        only with it."""
        from dynaorm.schema.lease import stage

        return stage(self, lease, holder=holder, duration=duration, release=release,
                     epoch=epoch, values=values, where=where, key=key)

    def stage_write(self, write: StagedWrite) -> None:
        """Stage a write of one of dynaorm's own kinds as it is (a ``SaveEntry`` carrying
        a job's marker): the small internal surface :mod:`dynaorm.jobs` writes through.
        Applications use :meth:`save`, :meth:`delete`, :meth:`update` and :meth:`check`."""
        if (scope := self._stage.scope) is not None and write._obj is None:  # (by key)
            fields = getattr(write, "_key_fields", None)
            if fields is None:
                raise ScopeError("a scoped session stages a write by key through update() "
                                 "or check(), which check its key against the scope")
            spec = self._stage.spec(write._entity)
            scope.fields(spec, fields, "a staged write")
            # (and the key it will write, parsed back: it need not be its fields')
            scope.key(spec, getattr(write, "key", None) or {}, "a staged write")
        self._stage.add(write)

    def rollback(self) -> None:
        """Drop everything staged."""
        self._stage.writes.clear()

    # -- reads' builders (the session's kind of terminals over one scope) ---------------
    def _query(self, kind: type[Any], entities: tuple[type[Entity], ...], index: str | None,
               fields: Mapping[str, Any]) -> Any:
        self._stage.same_table(entities, "query")
        fields = dict(fields)
        shard = fields.pop("shard", None)
        if (scope := self._stage.scope) is not None:
            scope.query(self._stage.spec, entities, index, fields)
        return kind(entities, fields, index, _shard=shard, _driver=self._driver,
                    _scope=scope)

    def _scan(self, kind: type[Any], entities: tuple[type[Entity], ...], index: str | None,
              segment: int | None, segments: int | None, rate: Rate | None = None) -> Any:
        table = self._stage.same_table(entities, "scan")
        if index is not None:
            table.index(index)
        chosen = check_segments(segment, segments)
        scope = self._stage.scope
        return kind(entities, index, chosen, segments, _driver=self._driver,
                    _budget=budget_of(rate), _scope=scope,
                    _filter=None if scope is None else scope.key_filter(entities))

    def _search(self, kind: type[Any], entity: type[Entity], index: str, vector: Any,
                top: int, fields: Mapping[str, Any]) -> Any:
        from dynaorm.read.search import search_spec

        spec = self._stage.spec(entity)  # (an entity of a table bound to this client)
        search = search_spec(kind, entity, index, vector, top, fields, self._driver)
        if (scope := self._stage.scope) is None:
            return search
        return scope.search(spec, index, dataclasses.replace(search, _within=scope), fields)

    def _history(self, kind: type[Any], entity: type[Entity], fields: Mapping[str, Any]
                 ) -> Any:
        spec = self._stage.spec(entity)
        if not spec.rules.sort_keys.latest:  # (no history: the entity keeps one row)
            raise DynaormError(f"{spec.name} is not versioned")
        self._stage.key(spec, fields)
        return kind((entity,), dict(fields), None, _history=True, _driver=self._driver,
                    _scope=self._stage.scope)
