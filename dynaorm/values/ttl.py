"""DynamoDB's Time to Live: an item whose TTL attribute holds an epoch time that has
passed is expired. DynamoDB deletes it some time later; until then every read treats it
as gone (contract 14). A table's meaning, not an entity rule's: every item under the
table's TTL attribute expires alike, whichever entity wrote it (the stamps rule,
:mod:`~dynaorm.schema.rules.stamps`, only writes the values)."""

import time
from datetime import datetime
from typing import Any

from dynaorm._types import Item
from dynaorm.errors import InvalidValueError


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


def encode_ttl(value: Any, owner: str, field: str) -> int | None:
    """A TTL field's value as epoch seconds (aware datetime or int; naive is refused)."""
    if value is None:
        return None
    if isinstance(value, datetime):
        if value.tzinfo is None or value.utcoffset() is None:
            raise InvalidValueError(f"{owner} field {field!r}: the TTL attribute needs an "
                                    f"aware datetime (or epoch seconds), not naive {value!r}")
        return int(value.timestamp())
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    raise InvalidValueError(f"{owner} field {field!r}: a TTL is a datetime or epoch seconds, "
                            f"not {value!r}")
