"""What a unit of work stages, as a commit sees it: the one protocol every staged write
implements (:class:`StagedWrite`), the reads a write may ask for while it is prepared
(:class:`Reads`), and the :class:`Outcome` an object takes if the commit succeeds.

A commit (:class:`dynaorm.core.commit.Commit`) knows no kind of write: for each staged
write it asks for ``_prepare`` (the stored state it is planned on, reading where its rules
need), ``_plan_ops`` (its actions and outcome, pure) and, after success, ``_finish``. Saves
and deletes (:mod:`dynaorm.write.entries`), ``s.update()`` and ``s.check()``
(:mod:`dynaorm.write.updates`) implement it; a new kind of write implements it too, and
nothing else changes. The methods are underscored so that the objects users hold
(``StagedUpdate``) show only their own API.
"""

from __future__ import annotations

from collections.abc import Generator, Hashable, Mapping
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

from dynaorm._types import Item, PlainKey
from dynaorm.model.entity import Entity
from dynaorm.model.state import InstanceState
from dynaorm.write.records import Op

if TYPE_CHECKING:
    from dynaorm.model.layouts import MovedState
    from dynaorm.model.spec import EntitySpec
    from dynaorm.model.table import TableSchema

__all__ = ["Outcome", "Prepared", "Reading", "Reads", "StagedWrite"]

#: a protocol's result (its steps are whatever the reads yield)
Reading = Generator[Any, Any, Any]


class Outcome(NamedTuple):
    """What an object becomes if the commit succeeds (``state=None``: deleted)."""

    obj: Entity
    state: InstanceState | None
    version: int | None = None
    #: ``Meta.timestamps`` the write set: ``(field, value)`` pairs, put on ``obj`` on success
    stamps: tuple[tuple[str, Any], ...] = ()


class Reads(Protocol):
    """The reads a staged write may ask for (protocols: a driver performs them)."""

    def item(self, table: TableSchema, key: PlainKey) -> Generator[Any, Any, Item | None]:
        """The item stored at ``key`` in ``table``, read consistently (``None``: none)."""
        ...  # pragma: no cover

    def last_version(self, obj: Entity) -> Generator[Any, Any, int]:
        """The highest stored version row of ``obj``'s key (0: no kept history)."""
        ...  # pragma: no cover

    def stored_now(self, spec: EntitySpec, state: MovedState, new_key: PlainKey
                   ) -> Generator[Any, Any, InstanceState | None]:
        """What an object read from its previous layout stands for now (see
        :func:`dynaorm.read.previous.stored_now_p`)."""
        ...  # pragma: no cover


class StagedWrite(Protocol):
    """One staged write of a unit of work (a save, a delete, an update, a check)."""

    @property
    def _obj(self) -> Entity | None:
        """The object whose state a successful commit settles (``None``: none)."""
        ...  # pragma: no cover

    @property
    def _entity(self) -> type[Entity]:
        """The entity class it writes."""
        ...  # pragma: no cover

    def _stage_key(self) -> Hashable:
        """Which stored item it stands for: staged writes with equal keys coalesce (the
        one staged last wins)."""
        ...  # pragma: no cover

    def _prepare(self, reads: Reads) -> Generator[Any, Any, Prepared]:
        """The write as it will be planned, and the stored state it is planned on (reading
        where its rules need: a protocol)."""
        ...  # pragma: no cover

    def _plan_ops(self, state: InstanceState | None, index: int
              ) -> tuple[list[Op], Outcome | None]:
        """Its actions (origins tagged with ``index``, its place in the commit) and what
        its object becomes on success (pure)."""
        ...  # pragma: no cover

    def _rereads(self, table: str | None, key: PlainKey | None,
                 state: InstanceState | None) -> bool:
        """Whether a conflict at ``key`` of ``table`` (``None``: not known) is planned again
        on a fresh read (an overwrite planned on what it read) rather than reported."""
        ...  # pragma: no cover

    def _finish(self, response: Mapping[str, Any], single: bool, reads: Reads
                ) -> Generator[Any, Any, None]:
        """After the commit succeeded: take its results (``response``: the answer of a
        ``single`` item write, or of the transaction; ``{}`` when a lost answer's write
        was applied)."""
        ...  # pragma: no cover


#: a staged write with the stored state it is planned on
Prepared = tuple[StagedWrite, InstanceState | None]
