"""Timestamps (``Meta.timestamps``) and TTL values (``Table(ttl=...)``), contract 14.

- :func:`declare_timestamps` declares ``created``/``updated`` fields (``datetime | None =
  None``) that a class names in ``Meta.timestamps`` without declaring them;
- :meth:`Stamping.stamp` gives the times a write sets (created once, updated every
  write): the rule's ``stamp`` hook (:mod:`dynaorm.values.times` puts them on the object
  once the write succeeded);
- :func:`encode_ttl` turns a TTL field's value into DynamoDB's epoch seconds, and
  ``expired`` tells a stored item's TTL has passed: DynamoDB's TTL, whichever entity's row
  it is (:mod:`dynaorm.values.ttl`; ``encode_ttl`` re-exported).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from dynaorm.errors import DynaormError
from dynaorm.schema.rules import Declaration, Rule, register
from dynaorm.values.times import Stamps, now
from dynaorm.values.ttl import encode_ttl


def declare_timestamps(cls: type[Any], raw: Any) -> None:
    """Declare the ``Meta.timestamps`` fields the class does not (``datetime | None``)."""
    if not isinstance(raw, tuple | list):
        return
    annotations = cls.__dict__.get("__annotations__")  # noqa: RUF063 (must mutate)
    if annotations is None:
        annotations = {}
        cls.__annotations__ = annotations
    for name in raw:
        if not isinstance(name, str) or name in annotations:
            continue
        if any(name in getattr(b, "model_fields", {}) for b in cls.__mro__[1:]):
            continue
        annotations[name] = datetime | None
        setattr(cls, name, None)


def timestamp_fields(owner: str, raw: Any, field_names: frozenset[str]
                     ) -> tuple[str | None, str | None]:
    """``Meta.timestamps`` checked: (created field or None, updated field or None)."""
    if raw is None:
        return None, None
    if not isinstance(raw, tuple | list) or len(raw) != 2 or not all(
            v is None or isinstance(v, str) for v in raw):
        raise DynaormError(f"{owner}.Meta.timestamps must be (created_field, updated_field), "
                           f"either None, got {raw!r}")
    created, updated = raw
    for name in (created, updated):
        if name is not None and name not in field_names:
            raise DynaormError(f"{owner}.Meta.timestamps names unknown field {name!r}")
    if created is not None and created == updated:
        raise DynaormError(f"{owner}.Meta.timestamps: created and updated are both {created!r}")
    return created, updated


@register
@dataclass(frozen=True, slots=True, eq=False)
class Stamping(Rule):
    """``Meta.timestamps`` (created and updated times a commit sets) and the TTL field (the
    one stored under the table's ``ttl`` attribute, as epoch seconds)."""

    fields: tuple[str | None, str | None]
    ttl_field: str | None
    name = "stamps"
    order = 20
    answers = {
        "save": "sets the created time on insert and the updated time on every write that "
                "changes the item; a TTL field is stored as epoch seconds",
        "update": "sets the updated time; a TTL field's new value is stored as epoch seconds",
        "delete": "nothing of its own",
        "get": "an item whose TTL has passed reads as gone",
        "query": "items whose TTL has passed are not results",
        "values": "values() of a TTL field are its datetime; expired items are skipped",
        "scan": "items whose TTL has passed are not results (filtered on the server)",
        "stream": "a TTL deletion is a change of kind 'expired'",
        "history": "a version row keeps its TTL aside (never expires history one row at a "
                   "time)",
        "migrate": "times and TTL move with the row",
        "backfill": "a change sets the updated time",
        "check": "expired guards and rows are neither orphans nor conflicts",
        "export": "times as UTC timestamps (a TTL field as its type: a datetime's a "
                  "timestamp); a row whose TTL has passed is left out, as reads skip it",
        "search": "expired items are not hits",
        "messages": "times are not secrets: shown",
        "logs": "as messages",
        "spans": "as messages",
    }

    @classmethod
    def build(cls, decl: Declaration) -> Stamping | None:
        fields = timestamp_fields(decl.owner, decl.meta.get("timestamps"), decl.field_names)
        ttl = decl.table.ttl  # (the field stored as the table's TTL attribute, if any)
        ttl_field = next((f for f in decl.field_names if ttl is not None
                          and decl.attr(f) == ttl), None)
        if fields == (None, None) and ttl_field is None:
            return None
        return cls(fields, ttl_field)

    def store(self, name: str, value: Any, owner: str) -> Any:
        """The TTL field's value: as epoch seconds."""
        return encode_ttl(value, owner, name) if name == self.ttl_field else value

    def stamp(self, obj: Any, insert: bool) -> Stamps:
        """The created time (``insert``, when ``obj`` has none yet) and the updated time,
        one moment; nothing is changed on ``obj``: a commit writes them from a copy and
        sets them on the object only once it succeeded."""
        created, updated = self.fields
        if created is None and updated is None:
            return ()
        moment = now()
        out = []
        if created is not None and insert and getattr(obj, created) is None:
            out.append((created, moment))
        if updated is not None:
            out.append((updated, moment))
        return tuple(out)
