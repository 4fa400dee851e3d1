"""Stored type names that no class claims: never invisible.

The type attribute of a stored item names the class that wrote it (its class name unless
``Meta.type_name`` says otherwise). Rename the class and its items carry a name that no
class of the table claims any more: a read for the new class does not return them. Such
an item is never silently dropped: a query counts it in ``Page.skipped``, a read that met
one logs one WARNING per table and type name on the ``dynaorm`` logger (naming the fix),
and ``dynaorm check`` reports every such item as ``unclaimed-type``. dynaorm's own rows
(receipts, Powertools records) are claimed, by dynaorm, whether the table has a type
attribute or not.

Pure apart from the once-per-name warning (the logging module, imported by the first
warning).
"""

from __future__ import annotations

import threading
from typing import Any

from dynaorm._types import Item
from dynaorm.protocol.hooks import logger
from dynaorm.schema.rules.receipts import OWN_TYPES, own_row
from dynaorm.schema.rules.unique import GUARD_TYPE

__all__ = ["claimed_names", "fix_hint", "note_unclaimed", "unclaimed_name", "unclaimed_shape"]

_lock = threading.Lock()
_warned: set[tuple[str, str]] = set()


def claimed_names(table: Any) -> frozenset[str]:
    """Every type name a class of ``table`` claims: its own ``type_name`` and the one its
    ``Meta.previous`` declares, plus dynaorm's own items (unique guards, receipts,
    Powertools records)."""
    names = {GUARD_TYPE, *OWN_TYPES, *table.entities}
    for cls in table.entities.values():
        previous = cls.__dynaorm_spec__.previous
        if previous is not None:
            names.add(previous.type_name)
    return frozenset(names)


def unclaimed_name(table: Any, item: Item) -> str | None:
    """The stored type name of ``item`` when no class of ``table`` claims it, else ``None``
    (also ``None`` on a table without a type attribute, or an item without one)."""
    attr = table.type_attribute
    if attr is None:
        return None
    value = item.get(attr)
    name = value.get("S") if isinstance(value, dict) else None
    if not isinstance(name, str) or name in table.entities or name == GUARD_TYPE:
        return None  # (most items: a class's or a guard; the rest looks at every class)
    return None if name in claimed_names(table) else name


def unclaimed_shape(table: Any, item: Item) -> bool:
    """Whether ``item``, an item of ``table`` (without a type attribute) whose key fits no
    entity's key templates, is one nobody claims: not one of dynaorm's own rows (a
    receipt, a Powertools record), which are claimed, by dynaorm, as on a table with a
    type attribute."""
    return not own_row(table, item)


def fix_hint(name: str) -> str:
    """What to do about items stored under type name ``name`` that no class claims."""
    return (f"if a class was renamed, give it back its stored name with "
            f"'class Meta: type_name = {name!r}', or declare "
            f"'Meta.previous = Previous(type_name={name!r})' and run 'dynaorm migrate'")


def note_unclaimed(table: Any, item: Item) -> bool:
    """Whether ``item`` carries a type name no class of ``table`` claims; the first time a
    name is met on a table, one WARNING on the ``dynaorm`` logger says so and how to fix."""
    name = unclaimed_name(table, item)
    if name is None:
        return False
    mark = (str(table.name), name)
    with _lock:
        if mark in _warned:
            return True
        _warned.add(mark)
    logger().warning("dynaorm: table %r holds items of type name %r that no class claims, so "
                     "reads skip them (counted in Page.skipped; 'dynaorm check' lists them): %s",
                     table.name, name, fix_hint(name))
    return True
