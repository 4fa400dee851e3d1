"""What both kinds of session are besides their I/O: a :class:`~dynaorm.core.stage.Stage`
(what they stage, and the table or client they were made with) and the client they send
through. Staging (``save``, ``delete``, ``update``, ``check``, ``rollback``) is the same
plain methods in both; :class:`~dynaorm.Session` and ``AsyncSession`` add the methods that
do I/O, each one named protocol of :mod:`dynaorm.core` run through their driver."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, TypeVar, overload

from dynaorm.client.client import Client, session_target
from dynaorm.core.stage import Stage, describe
from dynaorm.model.entity import Entity
from dynaorm.model.expressions import Condition
from dynaorm.model.table import TableSchema
from dynaorm.protocol.hooks import Operation

if TYPE_CHECKING:  # (the write path loads with the first write, not with the session)
    from dynaorm.write.updates import StagedUpdate

__all__ = ["BaseSession"]

T = TypeVar("T", bound=Entity)


class BaseSession:
    """A unit of work on one client's tables: its stage and its client (the base of both
    kinds of session)."""

    def __init__(self, target: Any) -> None:
        table, client = session_target(target, type(self).__name__)
        self._stage = Stage(table, client if table is None else None)

    @property
    def table(self) -> TableSchema | None:
        """The table the session was made with (``None``: made with a client)."""
        return self._stage.table

    @property
    def client(self) -> Client:
        """The :class:`~dynaorm.Client` the session sends through (its table's, as the
        table is bound now, or the one it was made with)."""
        found: Client = self._stage.client
        return found

    def _operation(self, name: str, entities: Iterable[type[Any]]) -> Operation | None:
        """What the hooks are told a session operation is (``None``: no hook to tell)."""
        return describe(name, entities) if self.client.policy.hooks else None

    # -- staging (no I/O) --------------------------------------------------------------
    def save(self, obj: Entity, *, overwrite: bool = False,
             condition: Condition | None = None) -> None:
        """Stage an insert (new object) or an update (persisted object); with
        ``condition=`` the commit also requires it on the stored item."""
        self._stage.save(obj, overwrite, condition)

    def delete(self, obj: Entity | type[Entity], /, *, history: bool = False,
               condition: Condition | None = None, **fields: Any) -> None:
        """Stage a delete of an object, or by key: ``s.delete(User, user_id="u1")`` (with
        ``history=True`` a versioned entity's rows go too; ``condition=`` must hold)."""
        self._stage.delete(obj, history, condition, fields)

    @overload
    def update(self, target: type[T], /, *, upsert: bool = False,
               **fields: Any) -> StagedUpdate[T]: ...
    @overload
    def update(self, target: T, /, *, upsert: bool = False) -> StagedUpdate[T]: ...
    def update(self, target: type[T] | T, /, *, upsert: bool = False,
               **fields: Any) -> StagedUpdate[T]:
        """Stage an update expression by key (``s.update(User, user_id="u1")``) or by a
        loaded object; add actions to what it returns (see :class:`StagedUpdate`)."""
        return self._stage.update(target, upsert, fields)

    def check(self, entity: type[Entity], /, *, condition: Condition,
              **fields: Any) -> None:
        """Stage a ConditionCheck: the commit fails (ConditionFailedError) and writes
        nothing unless ``condition`` holds on that stored item."""
        self._stage.check(entity, condition, fields)

    def rollback(self) -> None:
        """Drop everything staged."""
        self._stage.writes.clear()
