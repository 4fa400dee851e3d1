"""The row revision (contract 20, 21): a fresh random value every dynaorm write stamps on
the rows it puts or updates, under ``Table(revision_attribute=...)`` (default ``"_rev"``).
After an answer that may have been lost, one consistent read proves the write applied (the
row holds this write's revision) or not applied (it still holds the one the object was
loaded with: revisions never recur). See :mod:`dynaorm.write.outcomes`. The values are
the table's (:mod:`dynaorm.values.revision`); the rule keeps them out of fields, version
rows and exports.
"""

from __future__ import annotations

from dataclasses import dataclass

from dynaorm._types import Item
from dynaorm.schema.rules import Declaration, Rule, register


@register
@dataclass(frozen=True, slots=True, eq=False)
class Revision(Rule):
    """The row revision of a table that keeps one (``Table(revision_attribute=...)``)."""

    attribute: str
    name = "revision"
    order = 10
    answers = {
        "save": "stamps a fresh revision on the row or latest copy a write puts or updates",
        "update": "stamps a fresh revision on the updated row",
        "delete": "conditions a loaded object's delete on the revision it was loaded with",
        "get": "read as an attribute of the row, never a field",
        "query": "never a field; a cursor never holds it",
        "values": "never a field: values() cannot name it",
        "scan": "never a field",
        "stream": "an attribute of the images, never a field",
        "history": "version rows carry none (only the row or latest copy is stamped)",
        "migrate": "a moved row gets a fresh revision",
        "backfill": "each change stamps a fresh revision, conditioned on the one read",
        "check": "never compared; a latest copy a repair rebuilds gets a fresh revision (a "
                 "write of an object loaded before the repair conflicts)",
        "export": "left out of exported rows",
        "search": "never a field",
        "messages": "an opaque random value, safe to show",
        "logs": "as messages",
        "spans": "as messages",
    }

    @classmethod
    def build(cls, decl: Declaration) -> Revision | None:
        attribute = decl.table.revision_attribute
        return None if attribute is None else cls(attribute)

    def attributes(self) -> frozenset[str]:
        return frozenset({self.attribute})

    def rebind(self, row: Item, source: Item) -> None:
        row.pop(self.attribute, None)  # (a version row carries none: only the row is stamped)

    def export(self, item: Item) -> Item | None:
        return {k: v for k, v in item.items() if k != self.attribute}
