"""Write-sharding rules: ``Shards(count, by=None, first=0)`` (pure).

A sharded key template holds ``{shard}``; the rule says which values that placeholder
takes (``first .. first+count-1``) and how an item picks one: by default a stable crc32
of the item's identity (its primary-key fields), else the int a field holds (``by="n"``)
or a function of the entity returns (``by=lambda e: e.request_id % 10 + 1``).
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

from dynaorm.errors import DynaormError, KeyTemplateError
from dynaorm.schema.rules import Declaration, Rule, register
from dynaorm.schema.table import TableSchema
from dynaorm.schema.templates import render_value


@dataclass(frozen=True)
class Shards:
    """How a key is write-sharded: ``count`` values from ``first``, chosen by ``by``.

    ``by`` is ``None`` (a stable hash of the item's primary-key fields), a field name (the
    field holds the shard value) or a function called with the entity (an object whose
    attributes are its fields) that returns the shard value. A value outside
    ``first .. first+count-1`` is a :class:`~dynaorm.KeyTemplateError`.
    """

    count: int
    """How many shard values there are."""
    by: str | Callable[[Any], int] | None = None
    """What picks an item's shard: ``None`` (a stable hash of its primary-key fields), a field
    name, or a function of the item."""
    first: int = 0
    """The first shard value (values are ``first .. first+count-1``)."""

    def __post_init__(self) -> None:
        if not isinstance(self.count, int) or isinstance(self.count, bool) or self.count < 1:
            raise DynaormError(f"Shards(count={self.count!r}): count must be an int >= 1")
        if not isinstance(self.first, int) or isinstance(self.first, bool):
            raise DynaormError(f"Shards(first={self.first!r}): first must be an int")
        if self.by is not None and not isinstance(self.by, str) and not callable(self.by):
            raise DynaormError(f"Shards(by={self.by!r}): by must be a field name or a function")

    @property
    def values(self) -> range:
        """Every shard value, in order."""
        return range(self.first, self.first + self.count)

    def pick(self, values: Mapping[str, Any], identity: tuple[str, ...], owner: str,
             target: str) -> int:
        """The shard value of the item whose fields are ``values``."""
        if self.by is None:
            ident = "\x1f".join(render_value(values[f]) for f in identity)
            return self.first + zlib.crc32(ident.encode()) % self.count
        if isinstance(self.by, str):
            if self.by not in values:
                raise KeyTemplateError(f"{owner}: shard of {target!r} needs field {self.by!r}")
            value = values[self.by]
        else:
            try:
                value = self.by(SimpleNamespace(**values))
            except AttributeError as exc:
                raise KeyTemplateError(f"{owner}: shard function of {target!r} used a field "
                                       f"it was not given ({exc}); for 'primary' it may use "
                                       "only the primary-key template fields") from exc
        if not isinstance(value, int) or isinstance(value, bool) or value not in self.values:
            raise KeyTemplateError(f"{owner}: shard value {value!r} of {target!r} is outside "
                                   f"{self.first}..{self.first + self.count - 1}")
        return value

    def check_value(self, value: Any, owner: str, target: str) -> int:
        """A caller-named shard (``query(..., shard=3)``), checked against the range."""
        if not isinstance(value, int) or isinstance(value, bool) or value not in self.values:
            raise KeyTemplateError(f"{owner}: shard={value!r} is not a shard of {target!r} "
                                   f"({self.first}..{self.first + self.count - 1})")
        return value


def as_shards(raw: Any, owner: str, target: str) -> Shards:
    """``Meta.shards`` values: a plain ``N`` is ``Shards(N)``."""
    if isinstance(raw, Shards):
        return raw
    if not isinstance(raw, int) or isinstance(raw, bool) or raw < 1:
        raise DynaormError(f"{owner}.Meta.shards[{target!r}] must be an int >= 1 or Shards(...)")
    return Shards(raw)


def shard_rules(meta: Mapping[str, Any], owner: str, table: TableSchema) -> dict[str, Shards]:
    """``Meta.shards`` read into one rule per target (``"primary"`` or an index name); an
    index target the table does not declare is refused (by ``table.index``)."""
    shard_rules = {target: as_shards(raw, owner, target)
                   for target, raw in dict(meta.get("shards") or {}).items()}
    for target in shard_rules:
        if target != "primary":
            table.index(target)
    return shard_rules


def check_shard_fields(owner: str, shard_rules: Mapping[str, Shards],
                        field_names: frozenset[str], identity: tuple[str, ...]) -> None:
    """Each ``Meta.shards`` rule's ``by=`` names a field, and the primary key's one of
    the key fields (``get()`` computes the shard from those alone)."""
    for target, rule in shard_rules.items():
        if isinstance(rule.by, str) and rule.by not in field_names:
            raise KeyTemplateError(f"{owner}.Meta.shards[{target!r}]: by={rule.by!r} is not "
                                   "a field")
        if target == "primary" and isinstance(rule.by, str) and rule.by not in identity:
            raise KeyTemplateError(f"{owner}.Meta.shards['primary']: by={rule.by!r} must be a "
                                   f"field of the primary-key templates {list(identity)}, so "
                                   "that get() can compute the shard from the key fields")


@register
@dataclass(frozen=True, slots=True, eq=False)
class Sharding(Rule):
    """``Meta.shards``: the primary key or an index key spread over N partitions."""

    rules: Mapping[str, Shards]
    name = "shards"
    order = 30
    answers = {
        "save": "renders {shard} into the sharded keys (a stable bucket, or by=)",
        "update": "a change of a field the shard is chosen by moves the item (primary) or "
                  "rewrites the index key",
        "delete": "deletes at the shard the key fields give",
        "get": "computes the shard from the key fields",
        "query": "fans out over every shard and merges in key order (shard= reads one)",
        "values": "as query",
        "scan": "the shard is part of the stored key, never a field",
        "stream": "the shard is parsed out of the key, never a field",
        "history": "versioned entities cannot be sharded on their primary key's history",
        "migrate": "a sharded entity cannot declare a previous layout",
        "backfill": "segments scan every shard",
        "check": "shard values outside first..first+count-1 are problems",
        "export": "the shard is left out (a key detail, not a field)",
        "search": "a vector index's partition is a field, not a shard",
        "messages": "shown as the key shows it",
        "logs": "as messages",
        "spans": "as messages",
    }

    @classmethod
    def build(cls, decl: Declaration) -> Sharding | None:
        rules = decl.shard_rules
        return None if not rules else cls(rules)
