"""DynamoDB's bulk put items and its filtered exports, answered in front of a test engine
(the :class:`~dynaorm.testing.emulation.emulator.Emulator` of dynaorm's embedded default and of its
moto server, and of any :func:`~dynaorm.testing.fault_proxy` given an S3), reading and
writing an S3 the emulator is given (moto's, in a test): moto has none of them, and its
``ExportTableToPointInTime`` ignores the filter and writes no manifest.

- ``StartBulkPutItems``, ``DescribeBulkOperation``, ``ListBulkOperations``,
  ``CancelBulkOperation`` as botocore's service model (1.43.124 and later) and the
  developer guide describe them: the input is DynamoDB JSON lines (``NONE`` or ``GZIP``),
  one record per line, ``{"Item": {...}}`` with an optional ``ConditionExpression``,
  ``ExpressionAttributeNames`` and ``ExpressionAttributeValues`` (PutItem's parameter
  names); each record is one conditional ``PutItem`` on the engine (never a transaction:
  moto keeps a copy of every table a ``TransactWriteItems`` names); a record whose condition
  is false is reported as ``CONDITION_CHECK_FAILURE`` with the item found, a record that
  is not an item of the table (malformed, a key missing or of another type, over 400 KB, a
  bad expression) as ``ERROR``; the token repeats an operation for 8 hours
  (``IdempotentParameterMismatchException`` for other parameters); a table with replicas
  (a global table) is refused. An operation moves on when the bulk API is asked anything:
  each request of the four moves every operation in progress on by up to
  :func:`bulk_pace` records (by default, to its end); ``CancelBulkOperation`` stops it at
  the next such request (``CANCELLED``, what was written stays).
- ``ExportTableToPointInTime`` (point-in-time recovery enabled, as DynamoDB asks), with its
  ``FilterSpecification`` evaluated by the engine itself (a consistent ``Query`` for a key
  condition, else a ``Scan``, with the filter and projection expressions), written as
  DynamoDB lays an export out (:mod:`dynaorm.testing.emulation.exports`); ``DescribeExport`` and
  ``ListExports``. The export is the table when it is asked for (``ExportTime`` is not
  gone back to); an incremental export or an ION one is refused.

What the developer guide's pages did not say (read as far as the stored copies go) is
decided here and written down in ``docs/guide/loads.md``: the report's layout (under the
output prefix, ``AWSDynamoDBBulkPut/<operation id>/manifest.json`` listing gzipped JSON
lines, one per failed record: ``OutputType``, ``Item`` (the attempted item),
``ExistingItem``, ``ErrorCode``, ``ErrorMessage``, ``InputObject``, ``LineNumber``), the
error codes of a failed operation, and the refusal of a global table
(``ValidationException``).
"""

import gzip
import hashlib
import io
import re
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Final

from dynaorm.errors import RequestError, TableNotFoundError
from dynaorm.values.limits import MAX_ITEM_BYTES, item_size
from dynaorm.wire import decode, render

#: the operations the bulk service answers
BULK_OPERATIONS: Final = frozenset({
    "StartBulkPutItems", "DescribeBulkOperation", "ListBulkOperations",
    "CancelBulkOperation", "ExportTableToPointInTime", "DescribeExport", "ListExports"})
#: those that move operations on (and so write items)
BULK_WRITES: Final = frozenset({"StartBulkPutItems", "DescribeBulkOperation",
                                "ListBulkOperations", "CancelBulkOperation"})
#: sends one request to the engine (as :data:`~dynaorm.testing.emulation.emulator.Forward`)
Own = Callable[[str, dict[str, Any]], dict[str, Any]]

_TOKEN_SECONDS: Final = 8 * 3600.0  # how long a bulk operation's token holds
_MIN_UNITS: Final = 1024
_REPORT_LINES: Final = 1000  # report records a data file holds, at most
_EXPORT_LINES: Final = 10_000  # items an export's data file holds, at most
_RECORD_KEYS: Final = frozenset({"Item", "ConditionExpression", "ExpressionAttributeNames",
                                 "ExpressionAttributeValues"})
_TOO_LARGE: Final = "Item size has exceeded the maximum allowed size"
_TERMINAL: Final = frozenset({"COMPLETED", "COMPLETED_WITH_ERRORS", "CANCELLED", "FAILED"})
_PACES: list[int] = []  # the bulk_pace blocks open now, innermost last
#: the service model's patterns (botocore's ``S3Bucket``, ``S3BucketOwner``,
#: ``BulkOperationNextToken``)
_BUCKET: Final = re.compile(r"^[a-z0-9A-Z]+[\.\-\w]*[a-z0-9A-Z]+$")
_OWNER: Final = re.compile(r"[0-9]{12}")
_NEXT_TOKEN: Final = re.compile(r"([0-9a-f]{16})+")


@contextmanager
def bulk_pace(records: int) -> Iterator[None]:
    """For the block, each request to the bulk API moves every bulk operation in progress
    on by at most ``records`` input records (outside any block: to its end), so a test sees
    an operation ``IN_PROGRESS``, cancels it half-way, or writes beside it."""
    if isinstance(records, bool) or not isinstance(records, int) or records < 1:
        raise ValueError(f"bulk_pace: records must be an int >= 1, got {records!r}")
    _PACES.append(records)
    try:
        yield
    finally:
        _PACES.remove(records)


def s3_factory(endpoint_url: str | None = None, region: str = "us-east-1"
               ) -> Callable[[], Any]:
    """A maker of the S3 client the bulk service reads and writes with: botocore's, with
    dummy credentials, to ``endpoint_url`` (a moto server), or (``None``) wherever
    botocore sends, which moto's in-process mock answers while it is on."""
    made: list[Any] = []
    lock = threading.Lock()

    def make() -> Any:
        with lock:
            if not made:
                import botocore.session

                made.append(botocore.session.get_session().create_client(
                    "s3", region_name=region, endpoint_url=endpoint_url,
                    aws_access_key_id="testing", aws_secret_access_key="testing"))
            return made[0]
    return make


def _invalid(operation: str, message: str) -> RequestError:
    return RequestError(operation, "ValidationException", message)


def _table_name(table: str) -> str:
    """A table's name, given its name or its ARN."""
    if table.startswith("arn:") and ":table/" in table:
        return table.split(":table/", 1)[1].split("/", 1)[0]
    return table


def _joined(prefix: str | None, rest: str) -> str:
    return f"{prefix.rstrip('/')}/{rest}" if prefix else rest


class _Counted(io.RawIOBase):
    """A stream's bytes, counted as they are read."""

    def __init__(self, body: Any):
        self.body, self.count = body, 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        data = self.body.read(len(buffer))
        self.count += len(data)
        buffer[:len(data)] = data
        return len(data)


@dataclass
class _Operation:
    """One bulk put operation and where it is."""

    arn: str
    token: str | None
    fingerprint: bytes
    table: str
    request: dict[str, Any]
    started: float  # epoch seconds
    since: float  # monotonic, for the token's window
    status: str = "IN_PROGRESS"
    ended: float | None = None
    objects: list[tuple[str, int]] | None = None  # (key, size), once sized
    at: int = 0  # the object being read
    line: int = 0  # lines of it read
    reader: Iterator[bytes] | None = None
    counted: _Counted | None = None
    done_bytes: int = 0  # of the objects read whole
    processed: int = 0
    failed: int = 0
    written_bytes: int = 0
    failure: tuple[str, str] | None = None
    pending: dict[str, list[bytes]] = field(default_factory=dict)
    files: list[dict[str, Any]] = field(default_factory=list)
    table_id: str | None = None  # (DescribeTable's TableId, where the engine gives one)

    @property
    def ident(self) -> str:
        return self.arn.rsplit("/", 1)[1]

    def description(self) -> dict[str, Any]:
        """Its ``BulkOperationDescription``."""
        out = {
            "BulkOperationArn": self.arn, "BulkOperationStatus": self.status,
            "TableDetails": [{"TableName": self.table, **(
                {"TableId": self.table_id} if self.table_id else {})}],
            "InputS3Configuration": self.request["InputS3Configuration"],
            "OutputS3Configuration": self.request["OutputS3Configuration"],
            "StartTime": self.started, "ProcessedItemCount": self.processed,
            "FailedItemCount": self.failed,
            "ProcessedInputBytes": self.done_bytes + (
                self.counted.count if self.counted is not None else 0),
            "PerformanceTier": self.request.get("PerformanceTier", "STANDARD"),
            "BulkOperationUsage": [{"TableName": self.table,
                    "BulkPutBytes": self.written_bytes,
                    "Table": {"BulkPutBytes": self.written_bytes}}]}
        if self.token is not None:
            out["ClientToken"] = self.token
        if "MaxWriteRequestUnits" in self.request:
            out["MaxWriteRequestUnits"] = self.request["MaxWriteRequestUnits"]
        if self.objects is not None:
            out["TotalInputBytes"] = sum(size for _, size in self.objects)
        if self.ended is not None:
            out["EndTime"] = self.ended
        if self.failure is not None:
            out["FailureCode"], out["FailureMessage"] = self.failure
        return out


@dataclass
class _Export:
    arn: str
    token: str | None
    fingerprint: bytes
    description: dict[str, Any]
    since: float


class BulkService:
    """The bulk API and filtered exports of one emulator, over the S3 ``s3()`` makes (see
    the module). :meth:`answer` answers one request; the engine is reached through the
    ``own`` it is given (conditional ``PutItem`` for each record, reads for an export)."""

    def __init__(self, s3: Callable[[], Any], replicas: dict[str, list[str]] | None = None
                 ):
        self._s3 = s3
        self._replicas = {} if replicas is None else replicas  # (the emulator's, by table)
        self._lock = threading.RLock()
        self._operations: dict[str, _Operation] = {}
        self._tokens: dict[str, str] = {}  # token -> arn
        self._exports: dict[str, _Export] = {}
        self._export_tokens: dict[str, str] = {}

    def forget(self) -> None:
        """Drop every operation and export (a new engine)."""
        with self._lock:
            self._operations.clear()
            self._tokens.clear()
            self._exports.clear()
            self._export_tokens.clear()

    def answer(self, operation: str, request: dict[str, Any], own: Own) -> dict[str, Any]:
        """The answer to one request of :data:`BULK_OPERATIONS` (a refusal raised as the
        :class:`~dynaorm.RequestError` DynamoDB answers)."""
        with self._lock:
            if operation == "ExportTableToPointInTime":
                return self._export(request, own)
            if operation == "DescribeExport":
                found = self._exports.get(str(request.get("ExportArn")))
                if found is None:
                    raise RequestError(operation, "ExportNotFoundException",
                                   f"Export not found: {request.get('ExportArn')}")
                found.description["ExportStatus"] = "COMPLETED"  # (written whole at its start)
                return {"ExportDescription": dict(found.description)}
            if operation == "ListExports":
                return self._list_exports(request)
            self._tick(own)  # (time passes as the bulk API is asked: the pace's records)
            return {"StartBulkPutItems": self._start, "DescribeBulkOperation": self._describe,
                    "CancelBulkOperation": self._cancel,
                    "ListBulkOperations": self._list}[operation](request, own)

    # -- bulk put items ----------------------------------------------------------------
    def _start(self, request: dict[str, Any], own: Own) -> dict[str, Any]:
        op = "StartBulkPutItems"
        _check_start(request)
        token = request.get("ClientToken")
        fingerprint = hashlib.sha256(render({k: v for k, v in request.items()
                                             if k != "ClientToken"})).digest()
        if token is not None:
            known = self._operations.get(self._tokens.get(token, ""))
            if known is not None and time.monotonic() - known.since < _TOKEN_SECONDS:
                if known.fingerprint != fingerprint:
                    raise RequestError(op, "IdempotentParameterMismatchException",
                                   "ClientToken was used with other parameters")
                return {"BulkOperationDescription": known.description()}
        name = _table_name(str(request["TableName"]))
        table = _described(op, name, own)
        if table.get("Replicas") or self._replicas.get(name):
            raise _invalid(op, f"Table {name} is part of a global table: bulk put items "
                               "does not support global tables")
        if table.get("TableStatus", "ACTIVE") != "ACTIVE":
            raise RequestError(op, "ResourceInUseException",
                           f"Table {name} is {table.get('TableStatus')}")
        arn = f"{table['TableArn']}/bulk-operation/{uuid.uuid4().hex}"
        found = _Operation(arn=arn, token=token, fingerprint=fingerprint, table=name,
                           request=request, started=time.time(), since=time.monotonic(),
                           table_id=table.get("TableId"))
        self._operations[arn] = found
        if token is not None:
            self._tokens[token] = arn
        return {"BulkOperationDescription": found.description()}

    def _describe(self, request: dict[str, Any], own: Own) -> dict[str, Any]:
        return {"BulkOperationDescription": self._found(
            "DescribeBulkOperation", request).description()}

    def _cancel(self, request: dict[str, Any], own: Own) -> dict[str, Any]:
        found = self._found("CancelBulkOperation", request)
        if found.status in _TERMINAL:
            raise _invalid("CancelBulkOperation", f"Bulk operation {found.arn} is "
                           f"{found.status}: only an operation in progress can be cancelled")
        found.status = "CANCELLING"
        return {"BulkOperationArn": found.arn, "BulkOperationStatus": found.status}

    def _list(self, request: dict[str, Any], own: Own) -> dict[str, Any]:
        limit = request.get("MaxResults", 10)
        if not isinstance(limit, int) or not 1 <= limit <= 25:
            raise _invalid("ListBulkOperations", f"1 validation error detected: Value "
                           f"'{limit}' at 'maxResults' failed to satisfy constraint: Member "
                           "must have value between 1 and 25")
        token = request.get("NextToken")
        if token is not None and (not isinstance(token, str) or len(token) > 1024
                                  or not _NEXT_TOKEN.fullmatch(token)):
            raise _invalid("ListBulkOperations", f"1 validation error detected: Value "
                           f"'{token}' at 'nextToken' failed to satisfy constraint: Member "
                           "must satisfy regular expression pattern: ([0-9a-f]{16})+")
        start = int(token, 16) if token else 0
        newest = sorted(self._operations.values(), key=lambda o: -o.started)
        page = newest[start:start + limit]
        answer: dict[str, Any] = {"BulkOperationsSummaryList": [
            {k: v for k, v in (("BulkOperationArn", o.arn), ("BulkOperationStatus", o.status),
                               ("StartTime", o.started), ("EndTime", o.ended))
             if v is not None} for o in page]}
        if start + limit < len(newest):
            answer["NextToken"] = f"{start + limit:016x}"
        return answer

    def _found(self, operation: str, request: dict[str, Any]) -> _Operation:
        arn = request.get("BulkOperationArn")
        if not isinstance(arn, str) or not 37 <= len(arn) <= 1024:  # (the model's shape)
            raise _invalid(operation, "1 validation error detected: Value at "
                           "'bulkOperationArn' failed to satisfy constraint: Member must "
                           "have length between 37 and 1024 (and is required)")
        found = self._operations.get(arn)
        if found is None:
            raise RequestError(operation, "ResourceNotFoundException",
                           f"Bulk operation not found: {request.get('BulkOperationArn')}")
        return found

    def _tick(self, own: Own) -> None:
        """Every operation in progress moved on (by the pace: :func:`bulk_pace`)."""
        for found in list(self._operations.values()):
            if found.status not in _TERMINAL:
                self._advance(found, own, _PACES[-1] if _PACES else None)

    def _advance(self, found: _Operation, own: Own, budget: int | None) -> None:
        if found.objects is None and not self._sized(found):
            return
        while budget is None or budget > 0:
            if found.status == "CANCELLING":
                self._end(found, "CANCELLED", ("BulkOperationCancelled",
                                               "The bulk operation was cancelled"))
                return
            line = self._next_line(found)
            if line is None:
                self._end(found, "COMPLETED_WITH_ERRORS" if found.failed else "COMPLETED")
                return
            try:
                self._apply(found, line, own)
            except RequestError as exc:  # (the engine failed: the operation fails)
                self._end(found, "FAILED", (exc.code, exc.message))
                return
            if budget is not None:
                budget -= 1

    def _sized(self, found: _Operation) -> bool:
        """The input objects listed (DynamoDB's initial input-size calculation); a
        bucket that does not exist or holds nothing under the prefix fails the operation."""
        conf = found.request["InputS3Configuration"]
        s3, objects = self._s3(), []
        pages = {"Bucket": conf["S3Bucket"], "Prefix": conf.get("S3KeyPrefix") or ""}
        try:
            while True:
                listed = s3.list_objects_v2(**pages)
                objects += [(o["Key"], int(o["Size"])) for o in listed.get("Contents", [])
                            if not o["Key"].endswith("/")]
                if not listed.get("IsTruncated"):
                    break
                pages["ContinuationToken"] = listed["NextContinuationToken"]
        except Exception as exc:  # (botocore's ClientError: no such bucket)
            self._end(found, "FAILED", ("S3NoSuchBucket", f"The input bucket cannot be "
                                        f"read: {exc}"))
            return False
        if not objects:
            self._end(found, "FAILED", ("InputNotFound", "No input objects under "
                                        f"s3://{conf['S3Bucket']}/{pages['Prefix']}"))
            return False
        found.objects = sorted(objects)
        return True

    def _next_line(self, found: _Operation) -> bytes | None:
        """The next non-empty line of the input (``None``: no more); an object that cannot
        be read whole is reported (``ERROR``) and left."""
        assert found.objects is not None
        while found.at < len(found.objects):
            key, size = found.objects[found.at]
            if found.reader is None:
                found.reader = self._lines(found, key)
            try:
                line = next(found.reader, None)
            except Exception as exc:  # (gone, a gzip stream cut or corrupt: botocore's or
                # gzip's errors, whatever reads it)
                self._report(found, "ERROR", {"ErrorCode": "InvalidInputObject",
                                              "ErrorMessage": f"cannot read the object: {exc}",
                                              "InputObject": key, "LineNumber": found.line})
                found.failed += 1
                line = None
            if line is None:
                found.at, found.line, found.reader, found.counted = found.at + 1, 0, None, None
                found.done_bytes += size
                continue
            found.line += 1
            if line.strip():
                return line
        return None

    def _lines(self, found: _Operation, key: str) -> Iterator[bytes]:
        conf = found.request["InputS3Configuration"]
        body = self._s3().get_object(Bucket=conf["S3Bucket"], Key=key)["Body"]
        found.counted = _Counted(body)
        raw = io.BufferedReader(found.counted)
        stream = gzip.GzipFile(fileobj=raw) if conf.get(
            "InputCompressionType") == "GZIP" else raw
        yield from stream

    def _apply(self, found: _Operation, line: bytes, own: Own) -> None:
        """One input record put (conditionally), or reported."""
        found.processed += 1
        assert found.objects is not None
        where = {"InputObject": found.objects[found.at][0], "LineNumber": found.line}
        try:
            record = decode(line)
        except ValueError as exc:
            return self._error(found, where, None, f"not a DynamoDB JSON record: {exc}")
        item, extra = record.get("Item"), set(record) - _RECORD_KEYS
        if not isinstance(item, dict) or not item or extra:
            return self._error(found, where, record, "a record holds an Item (a map of "
                               "attribute values) and optionally ConditionExpression, "
                               "ExpressionAttributeNames and ExpressionAttributeValues"
                               + (f", not {sorted(extra)}" if extra else ""))
        if item_size(item) > MAX_ITEM_BYTES:
            return self._error(found, where, item, _TOO_LARGE)
        put = {"TableName": found.table, **record,
               "ReturnValuesOnConditionCheckFailure": "ALL_OLD"}
        try:
            own("PutItem", put)
        except RequestError as exc:
            if exc.code == "ConditionalCheckFailedException":
                out = {**where, "Item": item}
                if exc.item:
                    out["ExistingItem"] = exc.item
                self._report(found, "CONDITION_CHECK_FAILURE", out)
                return None
            if exc.code in ("ValidationException", "SerializationException"):
                return self._error(found, where, item, exc.message, exc.code)
            raise
        except Exception as exc:  # (moto's expression parser failing on what it cannot
            # read: a KeyError, a ValueError; DynamoDB refuses such an expression)
            return self._error(found, where, item, f"Invalid expression: {exc!r}")
        found.written_bytes += item_size(item)
        return None

    def _error(self, found: _Operation, where: dict[str, Any], item: Any, message: str,
               code: str = "ValidationException") -> None:
        found.failed += 1
        out = {**where, "ErrorCode": code, "ErrorMessage": message}
        if item is not None:
            out["Item"] = item
        self._report(found, "ERROR", out)

    def _report(self, found: _Operation, kind: str, record: dict[str, Any]) -> None:
        """A failed record kept for the report (if asked for), written a file at a time."""
        if kind not in found.request["OutputS3Configuration"].get("OutputType", []):
            return
        lines = found.pending.setdefault(kind, [])
        lines.append(render({"OutputType": kind, **record}))
        if len(lines) >= _REPORT_LINES:
            self._flush(found, kind)

    def _flush(self, found: _Operation, kind: str) -> None:
        lines = found.pending.pop(kind, [])
        conf = found.request["OutputS3Configuration"]
        if not lines or not conf.get("S3Bucket"):
            return
        key = _joined(conf.get("S3KeyPrefix"), f"AWSDynamoDBBulkPut/{found.ident}/data/"
                      f"{kind.lower()}-{len(found.files):05d}.json.gz")
        self._s3().put_object(Bucket=conf["S3Bucket"], Key=key, **_sse(conf),
                              Body=gzip.compress(b"".join(line + b"\n" for line in lines)))
        found.files.append({"OutputType": kind, "Key": key, "ItemCount": len(lines)})

    def _end(self, found: _Operation, status: str,
             failure: tuple[str, str] | None = None) -> None:
        """The operation at its end: its report's last files and manifest written."""
        for kind in list(found.pending):
            self._flush(found, kind)
        conf = found.request["OutputS3Configuration"]
        if conf.get("S3Bucket"):
            key = _joined(conf.get("S3KeyPrefix"), f"AWSDynamoDBBulkPut/{found.ident}/"
                          "manifest.json")
            self._s3().put_object(Bucket=conf["S3Bucket"], Key=key, **_sse(conf),
                                  Body=render({"BulkOperationArn": found.arn,
                                               "BulkOperationStatus": status,
                                               "OutputFiles": found.files}))
        found.status, found.ended, found.failure = status, time.time(), failure
        found.reader = found.counted = None

    # -- exports -----------------------------------------------------------------------
    def _export(self, request: dict[str, Any], own: Own) -> dict[str, Any]:
        op = "ExportTableToPointInTime"
        for name in ("TableArn", "S3Bucket"):
            if not isinstance(request.get(name), str):
                raise _invalid(op, f"1 validation error detected: {name} is required")
        if request.get("ExportType", "FULL_EXPORT") != "FULL_EXPORT":
            raise _invalid(op, "the emulator exports full tables only (it keeps no history "
                               "of changes for an incremental export)")
        if request.get("ExportFormat", "DYNAMODB_JSON") != "DYNAMODB_JSON":
            raise _invalid(op, "the emulator writes DYNAMODB_JSON exports only")
        token = request.get("ClientToken")
        fingerprint = hashlib.sha256(render({k: v for k, v in request.items()
                                             if k != "ClientToken"})).digest()
        known = self._exports.get(self._export_tokens.get(token or "", ""))
        if known is not None and time.monotonic() - known.since < _TOKEN_SECONDS:
            if known.fingerprint != fingerprint:
                raise RequestError(op, "ExportConflictException",
                               "ClientToken was used with other parameters")
            return {"ExportDescription": dict(known.description)}
        name = _table_name(request["TableArn"])
        table = _described(op, name, own)
        try:
            backups = own("DescribeContinuousBackups", {"TableName": name})[
                "ContinuousBackupsDescription"]
        except RequestError as exc:  # (an engine without backups: DynamoDB Local)
            if exc.code != "UnknownOperationException":
                raise
            backups = {"PointInTimeRecoveryDescription": {
                "PointInTimeRecoveryStatus": "ENABLED"}}
        if backups.get("PointInTimeRecoveryDescription", {}).get(
                "PointInTimeRecoveryStatus") != "ENABLED":
            raise RequestError(op, "PointInTimeRecoveryUnavailableException",
                           f"Point in time recovery is not enabled for table '{name}'")
        filters = request.get("FilterSpecification") or {}
        _check_filter(filters)
        export_id = f"{int(time.time() * 1000):014d}-{uuid.uuid4().hex[:8]}"
        arn = f"{table['TableArn']}/export/{export_id}"
        now = time.time()
        folder, count, size = self._write_export(request, name, filters, export_id, arn,
                                                 own, tableArn=table["TableArn"],
                                                 tableId=table.get("TableId", ""),
                                                 exportTime=_iso(now), startTime=_iso(now),
                                                 endTime=_iso(now))
        description = {
            "ExportArn": arn, "ExportStatus": "IN_PROGRESS", "StartTime": now,
            "EndTime": now, "ExportTime": now, "TableArn": table["TableArn"],
            "TableId": table.get("TableId", ""), "S3Bucket": request["S3Bucket"],
            "S3Prefix": request.get("S3Prefix", ""),
            "S3SseAlgorithm": request.get("S3SseAlgorithm", "AES256"),
            "ExportFormat": "DYNAMODB_JSON", "ExportType": "FULL_EXPORT",
            "ExportManifest": f"{folder}/manifest-summary.json",
            "ItemCount": count, "BilledSizeBytes": size}
        if filters:
            description["FilterSpecification"] = filters
        if token is not None:
            description["ClientToken"] = token
            self._export_tokens[token] = arn
        self._exports[arn] = _Export(arn, token, fingerprint, description, time.monotonic())
        return {"ExportDescription": dict(description)}

    def _write_export(self, request: dict[str, Any], name: str, filters: dict[str, Any],
                      export_id: str, arn: str, own: Own, **summary: Any
                      ) -> tuple[str, int, int]:
        """The table's items the filter selects (the engine's own evaluation), written
        as an export: its folder, item count and size."""
        from dynaorm.testing.emulation.exports import (
            data_file,
            dynamodb_json,
            export_folder,
            write_manifests,
        )

        read = {"TableName": name, "ConsistentRead": True}
        for member in ("KeyConditionExpression", "FilterExpression", "ProjectionExpression",
                       "ExpressionAttributeNames", "ExpressionAttributeValues"):
            if filters.get(member):
                read[member] = filters[member]
        operation = "Query" if "KeyConditionExpression" in read else "Scan"
        s3, bucket = self._s3(), request["S3Bucket"]
        folder = export_folder(request.get("S3Prefix") or "", export_id)
        entries = []
        batch = []
        size = 0
        while True:
            try:
                page = own(operation, read)
            except RequestError as exc:  # (the filter refused: the export's refusal)
                raise RequestError("ExportTableToPointInTime", exc.code, exc.message
                                   ) from exc
            for item in page.get("Items", []):
                size += item_size(item)
                batch.append({"Item": dynamodb_json(item)})
                if len(batch) >= _EXPORT_LINES:
                    entries.append(data_file(s3, bucket, folder, batch))
                    batch = []
            if not page.get("LastEvaluatedKey"):
                break
            read["ExclusiveStartKey"] = page["LastEvaluatedKey"]
        if batch or not entries:
            entries.append(data_file(s3, bucket, folder, batch))
        write_manifests(s3, bucket, folder, entries, export_type="FULL_EXPORT", arn=arn,
                        billedSizeBytes=size, **summary)
        return folder, sum(e["itemCount"] for e in entries), size

    def _list_exports(self, request: dict[str, Any]) -> dict[str, Any]:
        table = request.get("TableArn")
        return {"ExportSummaries": [
            {"ExportArn": e.arn, "ExportStatus": "COMPLETED", "ExportType": "FULL_EXPORT"}
            for e in self._exports.values()
            if table is None or e.description["TableArn"] == table]}


def _described(operation: str, name: str, own: Own) -> dict[str, Any]:
    """The table ``name`` as ``DescribeTable`` describes it; none: ``operation``'s
    ``ResourceNotFoundException``."""
    try:
        table: dict[str, Any] = own("DescribeTable", {"TableName": name})["Table"]
    except TableNotFoundError as exc:
        raise TableNotFoundError(operation, exc.code, exc.message) from exc
    return table


def _iso(epoch: float) -> str:
    """``epoch`` as an export's manifest writes a time (ISO 8601, milliseconds, ``Z``)."""
    from datetime import UTC, datetime

    return datetime.fromtimestamp(epoch, UTC).isoformat(timespec="milliseconds").replace(
        "+00:00", "Z")


def _sse(conf: dict[str, Any]) -> dict[str, Any]:
    """The encryption of the report's objects, as the output configuration asks."""
    algorithm = conf.get("S3SseAlgorithm")
    if algorithm == "AES256":
        return {"ServerSideEncryption": "AES256"}
    if algorithm == "KMS":
        return {"ServerSideEncryption": "aws:kms", **(
            {"SSEKMSKeyId": conf["S3SseKmsKeyId"]} if conf.get("S3SseKmsKeyId") else {})}
    return {}


def _check_start(request: dict[str, Any]) -> None:
    """``StartBulkPutItems``'s parameters checked as DynamoDB checks them (what the
    emulator cannot read is refused: an ION or ZSTD input)."""
    op = "StartBulkPutItems"
    conf, out = request.get("InputS3Configuration"), request.get("OutputS3Configuration")
    if not isinstance(request.get("TableName"), str) or not isinstance(conf, dict) or (
            not isinstance(out, dict)):
        raise _invalid(op, "1 validation error detected: TableName, InputS3Configuration "
                           "and OutputS3Configuration are required")
    if not isinstance(conf.get("S3Bucket"), str):
        raise _invalid(op, "1 validation error detected: InputS3Configuration.S3Bucket is "
                           "required")
    if conf.get("InputFormat") not in ("DYNAMODB_JSON", "ION"):
        raise _invalid(op, f"1 validation error detected: Value '{conf.get('InputFormat')}' "
                           "at 'inputS3Configuration.inputFormat' failed to satisfy "
                           "constraint: Member must satisfy enum value set: [DYNAMODB_JSON, "
                           "ION]")
    _check_location(op, "inputS3Configuration", conf, required=True)
    _check_location(op, "outputS3Configuration", out, required=False)
    if not 1 <= len(request["TableName"]) <= 1024:
        raise _invalid(op, "1 validation error detected: Value at 'tableName' failed to "
                           "satisfy constraint: Member must have length between 1 and 1024")
    if out.get("S3SseAlgorithm") not in (None, "AES256", "KMS"):
        raise _invalid(op, f"1 validation error detected: Value '{out['S3SseAlgorithm']}' "
                           "at 'outputS3Configuration.s3SseAlgorithm' failed to satisfy "
                           "constraint: Member must satisfy enum value set: [AES256, KMS]")
    if conf["InputFormat"] == "ION":
        raise _invalid(op, "the emulator reads DYNAMODB_JSON input only")
    if conf.get("InputCompressionType", "NONE") not in ("GZIP", "NONE"):
        raise _invalid(op, "the emulator reads GZIP or uncompressed input only")
    kinds = out.get("OutputType")
    if not isinstance(kinds, list) or not kinds or any(
            k not in ("ERROR", "CONDITION_CHECK_FAILURE") for k in kinds):
        raise _invalid(op, "1 validation error detected: OutputType must list ERROR and/or "
                           "CONDITION_CHECK_FAILURE")
    _check_start_options(op, request)


def _check_start_options(op: str, request: dict[str, Any]) -> None:
    """:func:`_check_start`'s optional members: ``MaxWriteRequestUnits``,
    ``PerformanceTier``, ``ClientToken``."""
    units = request.get("MaxWriteRequestUnits")
    if units is not None and (isinstance(units, bool) or not isinstance(units, int)
                              or units < _MIN_UNITS):
        raise _invalid(op, f"1 validation error detected: Value '{units}' at "
                           "'maxWriteRequestUnits' failed to satisfy constraint: Member "
                           f"must have value greater than or equal to {_MIN_UNITS}")
    tier = request.get("PerformanceTier", "STANDARD")
    if tier not in ("STANDARD", "ACCELERATED"):
        raise _invalid(op, f"1 validation error detected: Value '{tier}' at "
                           "'performanceTier' failed to satisfy constraint: Member must "
                           "satisfy enum value set: [STANDARD, ACCELERATED]")
    token = request.get("ClientToken")
    if token is not None and (not isinstance(token, str) or not token or "$" in token):
        raise _invalid(op, "1 validation error detected: ClientToken must match ^[^$]+$")


def _check_location(op: str, where: str, conf: dict[str, Any], required: bool) -> None:
    """An S3 location's members as the model constrains them (``S3Bucket``'s pattern and
    length, ``S3KeyPrefix``'s length, ``S3BucketOwner``'s account id)."""
    bucket, prefix, owner = conf.get("S3Bucket"), conf.get("S3KeyPrefix"), conf.get(
        "S3BucketOwner")
    if (bucket is not None or required) and (
            not isinstance(bucket, str) or len(bucket) > 255 or not _BUCKET.fullmatch(bucket)):
        raise _invalid(op, f"1 validation error detected: Value '{bucket}' at "
                           f"'{where}.s3Bucket' failed to satisfy constraint: Member must "
                           "satisfy regular expression pattern: "
                           "^[a-z0-9A-Z]+[\\.\\-\\w]*[a-z0-9A-Z]+$")
    if prefix is not None and (not isinstance(prefix, str) or len(prefix) > 1024):
        raise _invalid(op, f"1 validation error detected: Value at '{where}.s3KeyPrefix' "
                           "failed to satisfy constraint: Member must have length less "
                           "than or equal to 1024")
    if owner is not None and (not isinstance(owner, str) or not _OWNER.fullmatch(owner)):
        raise _invalid(op, f"1 validation error detected: Value '{owner}' at "
                           f"'{where}.s3BucketOwner' failed to satisfy constraint: Member "
                           "must satisfy regular expression pattern: [0-9]{12}")


def _check_filter(filters: dict[str, Any]) -> None:
    """An export filter's limits (4 KB an expression); its meaning is the engine's."""
    for member in ("KeyConditionExpression", "FilterExpression", "ProjectionExpression"):
        text = filters.get(member)
        if text is not None and len(str(text).encode()) > 4096:
            raise _invalid("ExportTableToPointInTime",
                           f"{member} is longer than 4 KB")
