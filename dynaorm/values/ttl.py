"""DynamoDB's Time to Live: an item whose TTL attribute holds an epoch time that has
passed is expired. DynamoDB deletes it some time later; until then every read treats it
as gone (contract 14). A table's meaning, not an entity rule's: every item under the
table's TTL attribute expires alike, whichever entity wrote it (the stamps rule,
:mod:`~dynaorm.schema.rules.stamps`, only writes the values)."""

from __future__ import annotations

import time

from dynaorm._types import Item

__all__ = ["expired"]


def expired(item: Item, attr: str | None) -> bool:
    """Whether ``item``'s TTL attribute ``attr`` holds a time that has passed."""
    if attr is None:
        return False
    av = item.get(attr)
    if av is None or "N" not in av:
        return False
    try:
        return float(av["N"]) <= time.time()
    except ValueError:
        return False
