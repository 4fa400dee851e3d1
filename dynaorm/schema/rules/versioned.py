"""The layout of the rows dynaorm writes besides an entity's own: the sort keys of a
versioned entity's version rows (and of its ``Meta.history_index``), and the attributes of
a unique guard item. Streams, reads, the planner and the tools all read these, so they sit
below the entity spec.
"""

from __future__ import annotations

from typing import Any

from dynaorm._types import Item
from dynaorm.errors import DynaormError

__all__ = ["LATEST_PREFIX", "VERSION_TTL", "VERSION_WIDTH", "history_sk", "parse_version_sk",
           "version_row", "version_sk"]

VERSION_WIDTH = 8
LATEST_PREFIX = "v0_"

#: where a version row keeps the TTL value its entity had (never under the table's TTL
#: attribute: DynamoDB would expire history rows one by one, leaving gaps)
VERSION_TTL = "_version_ttl"


def version_sk(base: str, version: int | None) -> str:
    """``v0_X`` for the latest copy, ``v00000003_X`` for version 3."""
    if not version:
        return LATEST_PREFIX + base
    if version >= 10 ** VERSION_WIDTH:
        raise DynaormError(f"version {version} exceeds {VERSION_WIDTH} digits")
    return f"v{version:0{VERSION_WIDTH}d}_{base}"


def parse_version_sk(sk: str) -> tuple[int, str] | None:
    """Inverse of :func:`version_sk`: ``(version, base)``, or ``None``."""
    if sk.startswith(LATEST_PREFIX):
        return 0, sk[len(LATEST_PREFIX):]
    head, sep, base = sk.partition("_")
    digits = head[1:]
    if not sep or not head.startswith("v") or len(digits) != VERSION_WIDTH or not digits.isdigit():
        return None
    return int(digits), base


def history_sk(base: str, version: int) -> str:
    """The ``Meta.history_index`` sort key of version ``version`` of ``base``."""
    return f"{base}#v{version:0{VERSION_WIDTH}d}"


def version_row(spec: Any, item: Item, sk: str) -> Item:
    """A version row: the item under its version key, left out of every secondary index
    (only the latest copy is indexed, or index queries would return every version) except
    one whose keys are the table's own: a table key attribute always stays.

    A version row never carries the table's TTL attribute (history outlives its entity
    until deleted with it: TTL never leaves gaps in it); the TTL value the entity had is
    kept aside under ``VERSION_TTL``, which reads put back (``EntitySpec.decode_fields``)."""
    keys = (spec.table.pk, spec.table.sk)
    indexed = _table_index_attributes(spec)
    row = {k: v for k, v in item.items() if k not in indexed or k in keys}
    ttl = spec.table.ttl
    if ttl is not None and ttl in row:
        row[VERSION_TTL] = row.pop(ttl)
    assert spec.table.sk is not None
    row[spec.table.sk] = {"S": sk}
    if spec.history_index is not None:  # versions of one entity, contiguous in that LSI
        parsed = parse_version_sk(sk)
        assert parsed is not None
        row[spec.history_index[1]] = {"S": history_sk(parsed[1], parsed[0])}
    return row


def _table_index_attributes(spec: Any) -> frozenset[str]:
    """Every secondary-index key attribute of the table (an undeclared one a newer model
    writes included): version rows stay out of every index."""
    table_wide = set().union(*(spec.table.key_names(name) for name in spec.table.indexes)
                             ) - {spec.table.pk, spec.table.sk}
    # (a field stored under an index's key attribute the entity does not use is a field)
    own: frozenset[str] = spec.index_attributes
    return own | frozenset(table_wide - set(spec.stored_fields))
