"""The layout of the rows dynaorm writes besides an entity's own: the sort keys of a
versioned entity's version rows (and of its ``Meta.history_index``), and the attributes of
a unique guard item. Streams, reads, the planner and the tools all read these, so they sit
below the entity spec.
"""

from __future__ import annotations

from dynaorm.errors import DynaormError

__all__ = ["GUARD_TYPE", "LATEST_PREFIX", "OWNER_PK", "OWNER_SK", "OWNER_TYPE", "REVISION",
           "UNIQUE_FIELD", "VERSION_TTL", "VERSION_WIDTH", "history_sk", "parse_version_sk",
           "version_sk"]

VERSION_WIDTH = 8
LATEST_PREFIX = "v0_"

#: the attributes of a guard item naming its owner row and the field it guards
OWNER_PK, OWNER_SK, OWNER_TYPE, UNIQUE_FIELD = "owner_pk", "owner_sk", "owner_type", "unique_field"
#: a guard item's type attribute value
GUARD_TYPE = "dynaorm:unique"
#: where a version row keeps the TTL value its entity had (never under the table's TTL
#: attribute: DynamoDB would expire history rows one by one, leaving gaps)
VERSION_TTL = "_version_ttl"
#: the revision every dynaorm write stamps on an entity's row (a fresh random value per
#: request): after an answer that may have been lost, a consistent read proves the write
#: applied (the row holds this write's revision) or not applied (it still holds the one
#: the object was loaded with: revisions never recur). See write/outcomes.py.
REVISION = "_rev"


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
