"""DynamoDB exports to S3 for the export tests (``dynaorm.jobs.export(..., source=)``),
written into moto's S3 as DynamoDB lays them out (the developer guide's "DynamoDB table
export output format"): ``<prefix>/AWSDynamoDB/<export id>/manifest-summary.json``,
``manifest-files.json`` (one JSON line per data file: ``itemCount``, ``md5Checksum``,
``etag``, ``dataFileS3Key``) and ``data/<name>.json.gz`` files of DynamoDB JSON lines.

A test makes the export from the table's items as DynamoDB would (the embedded default's
``ExportTableToPointInTime`` writes full exports only):
:func:`full_export` from a consistent scan (every item, in ``files`` data files, each
``{"Item": ...}``), :func:`incremental_export` from the items before and after a window
(one record per changed item, compacted as DynamoDB does: ``Keys``, the ``OldImage`` it had
before the window, the ``NewImage`` it has after, ``Metadata.WriteTimestampMicros``).
"""

from __future__ import annotations

import enum
import json
import uuid
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from dynaorm.testing.emulation.exports import dynamodb_json, full_export, incremental_export

__all__ = ["dynamodb_json", "full_export", "incremental_export", "plain", "read_back", "row_of"]


# -- reading an export back --------------------------------------------------------------
def read_back(folder: str | Path, dataset: str) -> list[dict[str, Any]]:
    """The rows of dataset ``dataset`` (``Profile``, ``Ledger.history``) of an export to
    ``folder``, read by DuckDB (timestamps in UTC), as dicts."""
    import duckdb

    con = duckdb.connect()
    try:
        con.execute("SET TimeZone='UTC'")
        cursor = con.execute(f"SELECT * FROM read_parquet('{Path(folder) / dataset}/*.parquet')")
        names = [d[0] for d in cursor.description]
        return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]
    finally:
        con.close()


def plain(value: Any) -> Any:
    """A field's value as an export's reader reads it back (written independently of the
    exporter's own conversion, from the values' classes): enums by value, sets as sorted
    lists, nested models as dicts, datetimes aware in UTC, UUIDs as text, durations as
    microseconds."""
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, BaseModel):
        return {k: plain(v) for k, v in value.__dict__.items()}
    if isinstance(value, set | frozenset):
        return sorted(plain(v) for v in value)
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, datetime):
        return (value if value.tzinfo else value.replace(tzinfo=UTC)).astimezone(UTC)
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, timedelta):  # (a duration: DuckDB reads its microseconds)
        return value // timedelta(microseconds=1)
    return value


def row_of(obj: BaseModel | Mapping[str, Any], omit: Iterable[str] = (),
           as_json: Iterable[str] = ()) -> dict[str, Any]:
    """What an export's row of ``obj`` (an entity, or its field values) reads back as:
    every field (but ``omit``) by name, :func:`plain`; the fields in ``as_json`` as the
    JSON text of their value (``None``: null)."""
    left_out, texts = set(omit), set(as_json)
    values = obj if isinstance(obj, Mapping) else obj.__dict__
    return {name: json.dumps(value, separators=(",", ":"))
            if name in texts and value is not None else plain(value)
            for name, value in values.items() if name not in left_out}
