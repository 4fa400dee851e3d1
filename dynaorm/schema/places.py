"""Where a table keeps what is not in its rows (contract 24), as declared and checked when
the table is: ``offload=`` (an S3 prefix for the values of ``Offloaded`` fields above
``offload_threshold`` bytes) and ``key_scope=`` / ``key_table=`` (keys per tenant, kept in a
table of their own). Pure, a leaf of the schema: :mod:`dynaorm.schema.table` reads these
options with it."""

import re
from collections.abc import Generator, Sequence
from typing import Any

from dynaorm._types import Item
from dynaorm.errors import DynaormError
from dynaorm.protocol.steps import Call

#: the size from which an ``Offloaded`` value is kept in S3 (``offload_threshold=``): 64 KiB
OFFLOAD_THRESHOLD = 64 * 1024
_BUCKET = re.compile(r"[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]\Z")
_NAME = re.compile(r"[A-Za-z0-9_.-]{3,255}\Z")


def rows_at(table: str, keys: Sequence[Item], origins: tuple[Any, ...]
            ) -> Generator[Any, Any, list[Item]]:
    """The items stored at ``keys`` (wire form) in ``table``: consistent BatchGetItem
    requests of a hundred keys, each sent again for its unprocessed keys (a protocol)."""
    found = []
    for at in range(0, len(keys), 100):
        pending = {table: {"Keys": keys[at:at + 100], "ConsistentRead": True}}
        while pending:
            out = yield Call("BatchGetItem", {"RequestItems": pending}, origins)
            found += (out.get("Responses") or {}).get(table, [])
            pending = out.get("UnprocessedKeys") or {}
    return found


def checked_offload(table: str, uri: Any, threshold: Any) -> tuple[str | None, int]:
    """``offload=`` and ``offload_threshold=`` checked: an ``s3://BUCKET/PREFIX`` URI (the
    prefix may be empty) and a number of bytes from 1 on."""
    if type(threshold) is not int or threshold < 1:
        raise DynaormError(f"table {table!r}: offload_threshold takes a number of bytes "
                           f">= 1, got {threshold!r}")
    if uri is None:
        return None, threshold
    bucket = uri[5:].partition("/")[0] if isinstance(uri, str) and uri.startswith(
        "s3://") else ""
    if not _BUCKET.match(bucket):
        raise DynaormError(f"table {table!r}: offload takes 's3://BUCKET/PREFIX' (a bucket "
                           f"name of 3 to 63 characters a-z, 0-9, '.', '-'), got {uri!r}")
    return uri, threshold


def offload_location(uri: str) -> tuple[str, str]:
    """``(bucket, prefix)`` of an ``offload=`` URI, the prefix ending in ``/`` unless
    empty."""
    bucket, _, prefix = uri[5:].partition("/")
    return bucket, prefix if not prefix or prefix.endswith("/") else prefix + "/"


def checked_key_scope(table: str, field: Any, key_table: Any) -> tuple[str | None, str | None]:
    """``key_scope=`` (a field name) and ``key_table=`` (default ``<table>-keys``)
    checked."""
    if field is None:
        if key_table is not None:
            raise DynaormError(f"table {table!r}: key_table= needs key_scope=")
        return None, None
    if not isinstance(field, str) or not field.isidentifier():
        raise DynaormError(f"table {table!r}: key_scope names a field, got {field!r}")
    if key_table is not None:
        if not isinstance(key_table, str) or not _NAME.match(key_table):
            raise DynaormError(f"invalid table name {key_table!r}: DynamoDB needs 3 to 255 "
                               "characters from a-z, A-Z, 0-9, '_', '-' and '.'")
        if key_table == table:
            raise DynaormError(f"table {table!r}: key_table must be another table than the "
                               "one it keeps keys for (its backups would hold them)")
    return field, key_table
