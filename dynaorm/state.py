"""Per-object persistence state: what the stored item looked like when last seen.

State objects are immutable; a successful commit replaces an object's state, a failed one
leaves it untouched (never mutate-then-undo).
"""

from __future__ import annotations

from typing import NamedTuple

from ._types import AttributeValue, Item, PlainKey

__all__ = ["InstanceState"]


class InstanceState(NamedTuple):
    """A persisted object's snapshot: stored primary key, stored item, version read."""

    key: PlainKey
    item: Item
    version: int | None = None


def changed_attributes(old: Item, new: Item) -> tuple[dict[str, AttributeValue], list[str]]:
    """Attributes to SET (new or different) and to REMOVE (gone) going from old to new."""
    to_set = {k: v for k, v in new.items() if old.get(k) != v}
    to_remove = [k for k in old if k not in new]
    return to_set, to_remove
