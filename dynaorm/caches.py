"""dynaorm's module-level caches, declared in one place and cleared in one way.

A module declares its cache with :func:`cache` (a plain dict, registered under a name
that says what it holds) and reads and fills it as any dict; :func:`clear_caches` empties
every registered cache. A cache is only a memo: clearing it never changes a result, only
what the next use costs. Caches kept:

- ``state.shapes``: the attribute names shared by every loaded item of one shape (a
  loaded object's state keeps its values only: memory, not speed);
- ``spec.adapters`` and ``updates.adapters``: pydantic ``TypeAdapter``\\ s per
  (entity class, field or nested path), each milliseconds to build; ``save.checks``: per
  entity class, the validator of every field's type and constraints a save checks;
- ``fastload.validators``: per entity class (and schema), the validator that loads its
  items straight from their wire form, and per set of types the validator of a whole
  answer's bytes (:mod:`dynaorm.values.fastload`), or ``None``;
- ``read.selections``: per kind of read (entity types, source), the
  :class:`~dynaorm.read.selection.Selection` every such read shares;
  ``read.scoped_selections``: the same of scoped reads, per scope's values (the 4,096
  latest).
- ``expressions.absent`` and ``expressions.alone``: per key attribute, the condition that
  claims a key on a table without a TTL (every insert and guard claim makes one), and
  its text and names as the only expression of a request (rendered once);
- ``records.declared``: per entity class, the attributes it writes;
  ``updates.model_rules``: per entity class, whether an update touches its rules;
- ``receipts.factories``, ``receipts.fields``, ``receipts.pinned``: per entity (or staged
  write) class, what a keyed commit's digest leaves out or walks; ``receipts.conditions``:
  a receipt's condition text per key and expiry attribute; ``receipts.origins``: per
  table a receipt is kept in away from its entity's (``Client(receipts=)``), the kind of
  origin of its write;
- ``search.asked``: per (entity class, vector index), the attributes a search asks for.

A leaf module: it imports nothing of dynaorm.
"""

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

_REGISTRY: dict[str, dict[Any, Any]] = {}


def cache(name: str) -> dict[Any, Any]:
    """A new module-level cache, registered under ``name`` (one cache a name)."""
    if name in _REGISTRY:
        raise ValueError(f"a cache named {name!r} is already declared")
    memo: dict[Any, Any] = {}
    _REGISTRY[name] = memo
    return memo


def caches() -> Mapping[str, Mapping[Any, Any]]:
    """Every registered cache by name (read-only view)."""
    return MappingProxyType(_REGISTRY)


def clear_caches() -> None:
    """Empty every registered cache."""
    for memo in _REGISTRY.values():
        memo.clear()


def forget(obj: object) -> None:
    """Drop every cached entry whose key holds ``obj`` (in a tuple, at any depth): a class
    replaced by its redefinition is let go (nothing here keeps it alive)."""
    for memo in _REGISTRY.values():
        for key in [k for k in list(memo) if _holds(k, obj)]:
            memo.pop(key, None)


def _holds(key: object, obj: object) -> bool:
    return key is obj or (isinstance(key, tuple) and any(_holds(k, obj) for k in key))
