"""The row revision (contract 20, 21): a fresh random value every dynaorm write stamps on
the rows it puts or updates, under ``Table(revision_attribute=...)`` (default ``"_rev"``).
A table's attribute, not an entity rule's meaning: every phase that writes or reads a row
stamps or reads it alike (the revision rule, :mod:`~dynaorm.schema.rules.revision`, only
keeps it out of fields, version rows and exports)."""

import os
from typing import Any

from dynaorm._types import Item

#: the default revision attribute (``Table(revision_attribute=...)``): the revision every
#: dynaorm write stamps on an entity's row (a fresh random value per
#: request): after an answer that may have been lost, a consistent read proves the write
#: applied (the row holds this write's revision) or not applied (it still holds the one
#: the object was loaded with: revisions never recur). See write/outcomes.py.
REVISION = "_rev"


def new_revision() -> str:
    """A fresh revision: 16 random hex digits (never recurs)."""
    return os.urandom(8).hex()


def revision_of(table: Any, item: Item | None) -> str | None:
    """The revision ``item``, a stored row of ``table``, holds (``None``: no item, none
    stamped, or a table that keeps none)."""
    attribute = table.revision_attribute
    av = None if item is None or attribute is None else item.get(attribute)
    return None if av is None else av.get("S")


def stamp_of(table: Any, rev: str | None) -> Item:
    """The attribute a write to ``table`` stamps with revision ``rev`` (empty: none)."""
    attribute = table.revision_attribute
    return {} if attribute is None or rev is None else {attribute: {"S": rev}}
