"""DynamoDB exports to S3 made locally, to test incremental exports and the lake without AWS.

DynamoDB's ``ExportTableToPointInTime`` needs point-in-time recovery and has no local
engine (moto writes one data file and no manifest, and no incremental exports). These
write an export of a table's items into any S3 (moto's, in a test) as DynamoDB lays it
out (the developer guide's "DynamoDB table export output format"):
``<prefix>/AWSDynamoDB/<export id>/manifest-summary.json``, ``manifest-files.json`` and
``data/<name>.json.gz`` files of DynamoDB JSON lines. The URL each returns is a
``source=`` of ``dynaorm.jobs.export``::

    from dynaorm.testing import full_export, incremental_export

    before = db.scan_raw()                       # the table's items, wire form
    full = full_export(s3, "exports", "app", before, time="2026-01-01T00:00:00Z")
    ...                                          # the application writes
    inc = incremental_export(s3, "exports", "app", before, db.scan_raw(),
                             since="2026-01-01T00:00:00Z", until="2026-01-01T01:00:00Z")
    jobs.run_local(jobs.export(app, tmp, source=inc, format="iceberg", catalog=catalog,
                               namespace="app"))

:func:`incremental_export` writes one record per item that changed between ``before``
and ``after``, compacted as DynamoDB does (the ``OldImage`` it had before the window, with
``NEW_AND_OLD_IMAGES``; the ``NewImage`` it has after; none: deleted). Times are ISO 8601
text or datetimes; not given, ``2026-01-01T00:00:00Z`` (a full export's time, a window's
start) and ``2026-01-01T00:05:00Z`` (a window's end): give them for a sequence of exports,
each window starting where the last ended.
"""

import base64
import gzip
import hashlib
import json
import uuid
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any

Item = dict[str, Any]  # (an item to export: plain values, or DynamoDB JSON)

START, END = "2026-01-01T00:00:00.000Z", "2026-01-01T00:05:00.000Z"


def dynamodb_json(value: Any) -> Any:
    """An item or attribute value (wire form) in DynamoDB JSON (binary values as base64)."""
    if isinstance(value, bytes | bytearray):
        return base64.b64encode(value).decode()
    if isinstance(value, Mapping):
        return {k: dynamodb_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [dynamodb_json(v) for v in value]
    return value


def full_export(s3: Any, bucket: str, prefix: str, items: Iterable[Item], files: int = 2, *,
                time: datetime | str | None = None, arn: str | None = None) -> str:
    """A full export of ``items`` (a table's consistent scan, wire form) in ``files``
    data files under ``s3://bucket/prefix/``, as of ``time``: its folder's URL."""
    records = [{"Item": dynamodb_json(item)} for item in items]
    return _write(s3, bucket, prefix, records, files, "FULL_EXPORT", arn,
                  exportTime=_text(time, START))


def incremental_export(s3: Any, bucket: str, prefix: str, before: Iterable[Item],
                       after: Iterable[Item], keys: tuple[str, ...] = ("pk", "sk"),
                       micros: int | None = None, view: str = "NEW_AND_OLD_IMAGES",
                       files: int = 2, *, since: datetime | str | None = None,
                       until: datetime | str | None = None, arn: str | None = None) -> str:
    """An incremental export of the window ``since`` to ``until`` in which the table went
    from ``before`` to ``after`` (items, wire form, told apart by their ``keys``: the
    table's key attributes): one record per item that changed, written at ``micros``
    (microseconds since the epoch; default: the window's end). Its folder's URL."""
    end = _text(until, END)
    if micros is None:
        micros = int(datetime.fromisoformat(end.replace("Z", "+00:00")).timestamp() * 1e6)
    old = {_key_of(i, keys): i for i in before}
    new = {_key_of(i, keys): i for i in after}
    records = []
    for key in sorted(old.keys() | new.keys()):
        if old.get(key) == new.get(key):
            continue
        image = new.get(key) or old[key]
        record = {"Metadata": {"WriteTimestampMicros": {"N": str(micros)}},
                  "Keys": dynamodb_json({k: image[k] for k in keys})}
        if key in old and view == "NEW_AND_OLD_IMAGES":
            record["OldImage"] = dynamodb_json(old[key])
        if key in new:
            record["NewImage"] = dynamodb_json(new[key])
        records.append(record)
    return _write(s3, bucket, prefix, records, files, "INCREMENTAL_EXPORT", arn,
                  exportFromTime=_text(since, START), exportToTime=end,
                  outputView=view)  # (the summary's name of the view, as DynamoDB writes it)


def _text(when: datetime | str | None, default: str) -> str:
    if when is None:
        return default
    if isinstance(when, datetime):
        return when.astimezone(UTC).isoformat().replace("+00:00", "Z")
    return when


def _key_of(item: Item, keys: tuple[str, ...]) -> str:
    return json.dumps({k: dynamodb_json(item[k]) for k in keys if k in item}, sort_keys=True)


def _write(s3: Any, bucket: str, prefix: str, records: list[dict[str, Any]], files: int,
           export_type: str, arn: str | None, **more: Any) -> str:
    """The data files and manifests of an export of ``records``: its folder's URL."""
    folder = export_folder(prefix)
    entries = [data_file(s3, bucket, folder, records[n::files]) for n in range(files)]
    write_manifests(s3, bucket, folder, entries, export_type=export_type,
                    arn=arn or f"arn:aws:dynamodb:::export/{folder}", **more)
    return f"s3://{bucket}/{folder}/"


def export_folder(prefix: str, export_id: str | None = None) -> str:
    """The folder of an export under ``prefix`` (``<prefix>/AWSDynamoDB/<export id>``; a
    new id when none is given)."""
    export_id = export_id or f"{uuid.uuid4().hex[:14]}-{uuid.uuid4().hex[:8]}"
    return f"{prefix}/AWSDynamoDB/{export_id}" if prefix else f"AWSDynamoDB/{export_id}"


def data_file(s3: Any, bucket: str, folder: str, records: Iterable[dict[str, Any]]
              ) -> dict[str, Any]:
    """One gzipped data file of ``records`` (DynamoDB JSON lines) in ``folder``: its
    entry of ``manifest-files.json``."""
    lines = [json.dumps(r) for r in records]
    body = gzip.compress("".join(line + "\n" for line in lines).encode())
    key = f"{folder}/data/{uuid.uuid4().hex}.json.gz"
    s3.put_object(Bucket=bucket, Key=key, Body=body)
    md5 = hashlib.md5(body)
    return {"itemCount": len(lines), "md5Checksum": base64.b64encode(md5.digest()).decode(),
            "etag": md5.hexdigest(), "dataFileS3Key": key}


def write_manifests(s3: Any, bucket: str, folder: str, entries: list[dict[str, Any]], *,
                    export_type: str, arn: str, **more: Any) -> None:
    """``manifest-files.json`` listing ``entries`` and ``manifest-summary.json`` (with
    ``more``'s members) in ``folder``."""
    s3.put_object(Bucket=bucket, Key=f"{folder}/manifest-files.json",
                  Body="".join(json.dumps(e) + "\n" for e in entries).encode())
    prefix = folder.rsplit("/AWSDynamoDB/", 1)[0] if "/AWSDynamoDB/" in folder else ""
    summary = {"version": "2020-06-30", "exportArn": arn,
               "startTime": START, "endTime": END,
               "tableArn": "arn:aws:dynamodb:us-east-1:123456789012:table/t",
               "tableId": str(uuid.uuid4()), "exportTime": START,
               "s3Bucket": bucket, "s3Prefix": prefix, "s3SseAlgorithm": "AES256",
               "s3SseKmsKeyId": None, "manifestFilesS3Key": f"{folder}/manifest-files.json",
               "billedSizeBytes": 0, "itemCount": sum(e["itemCount"] for e in entries),
               "outputFormat": "DYNAMODB_JSON", "exportType": export_type, **more}
    s3.put_object(Bucket=bucket, Key=f"{folder}/manifest-summary.json",
                  Body=json.dumps(summary).encode())
    s3.put_object(Bucket=bucket, Key=f"{folder}/_started", Body=b"")
