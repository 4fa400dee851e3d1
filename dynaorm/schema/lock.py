"""``Meta.lock``: the attribute another writer keeps as its optimistic lock (an N that
DynamoDBMapper's ``@DynamoDBVersionAttribute``, the Enhanced Client's
``VersionedRecordExtension`` and PynamoDB's ``VersionAttribute`` all start at 1 and move
by 1 per write, each conditioned on the value it loaded). Declared, every dynaorm write
keeps that writer's rule: a new item starts it at :attr:`Lock.first`, a write of a
loaded object moves it by :attr:`Lock.step` from the value loaded and is conditioned on
it (a delete too), so the other writer's lock protects both sides.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from dynaorm._types import Item
from dynaorm.errors import DynaormError

__all__ = ["Lock", "read_lock"]


@dataclass(frozen=True, slots=True)
class Lock:
    """``Meta.lock = Lock("version")`` (or just ``"version"``): field ``field`` (an
    ``int | None``) is another writer's optimistic lock, written ``first`` on a new item
    and ``loaded + step`` by each write of a loaded one."""

    field: str
    """The field (and attribute) the other writer keeps its lock in."""
    first: int = 1
    """The value a new item is written with."""
    step: int = 1
    """How much each write of a loaded item moves it."""

    @classmethod
    def enhanced(cls, field: str, start_at: int = 0, increment_by: int = 1) -> Lock:
        """The Enhanced Client's ``@DynamoDbVersionAttribute(startAt=, incrementBy=)``:
        ``startAt`` is never stored, its first value is ``startAt + incrementBy``."""
        return cls(field, start_at + increment_by, increment_by)

    def following(self, stored: Item) -> int:
        """The value a write of the item ``stored`` (as loaded; ``{}``: new) writes (a
        lock another tool stored as a string moves on from it, never back to ``first``)."""
        value = stored.get(self.field) or {}
        n = value.get("N", value.get("S"))
        return self.first if n is None else int(n) + self.step


def read_lock(cls: type[Any], meta: Mapping[str, Any], keyed: set[str]) -> Lock | None:
    """``Meta.lock`` of ``cls``, refused when the class is defined unless it names an
    ``int`` field (``int | None``) that no key, index key or unique value is built from
    (``keyed``), stored as it is, on an entity that is not ``Meta.versioned`` on it."""
    lock = meta.get("lock")
    if lock is None:
        return None
    owner = f"{cls.__name__}.Meta.lock"
    lock = Lock(lock) if isinstance(lock, str) else lock
    if not isinstance(lock, Lock) or lock.first < 0 or lock.step < 1:
        raise DynaormError(f"{owner}: a field name or Lock(field, first>=0, step>=1), "
                           f"got {lock!r}")
    if lock.field in keyed:
        raise DynaormError(f"{owner}: {lock.field!r} is part of a key or a unique value")
    info = cls.model_fields.get(lock.field)
    if info is None or info.annotation not in (int, int | None) or (
            info.metadata or info.alias or info.exclude):
        raise DynaormError(f"{owner}: {lock.field!r} must be a plain field of type int or "
                           "int | None (another writer's N)")
    if meta.get("versioned") and lock.field == "version":
        raise DynaormError(f"{owner}: 'version' of a Meta.versioned entity is dynaorm's own; "
                           "name another writer's lock otherwise")
    return lock


def moved(lock: Lock | None, stored: Item) -> tuple[tuple[str, int], ...]:
    """The ``(field, value)`` a write of the item ``stored`` (``{}``: new) sets: the
    lock's next value (none without a lock)."""
    return () if lock is None else ((lock.field, lock.following(stored)),)


def locked(lock: Lock | None) -> frozenset[str]:
    """The lock's attribute, which a write of a loaded object conditions on as loaded."""
    return frozenset(() if lock is None else (lock.field,))
