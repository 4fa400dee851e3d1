"""AWS Lambda Powertools, at home in the application's table (contract 22; extra
``dynaorm[powertools]``).

- :class:`DynaormPersistenceLayer` keeps Powertools' idempotency records as rows of the
  application's own table (no second table): ``@idempotent(persistence_store=
  DynaormPersistenceLayer(app))``. A record is a row of type :data:`POWERTOOLS_TYPE`
  keyed ``dynaorm:idempotency#<hashed key>`` (on both keys of a table with a sort key),
  with its expiry in the table's TTL attribute (else ``_expires``): never returned by a
  read, a query, a scan, ``check`` or a stream. Claiming a key is one conditional put
  with the condition Powertools' own DynamoDB layer uses: no record, or one whose expiry
  has passed, or one ``INPROGRESS`` whose in-progress expiry (the invocation's remaining
  time, in milliseconds) has passed.
- :func:`changes` turns a record of Powertools' ``DynamoDBStreamEvent`` (what its
  ``BatchProcessor(EventType.DynamoDBStreams)`` hands a record handler) into one typed
  :class:`~dynaorm.Change` of the table's entities (a row a rule adds to an entity's
  writes included: role ``"rule"``); a record no entity claims raises
  :class:`UnclaimedRecordError`, which the batch processor reports as a failed item of
  the batch (``batchItemFailures``), as Powertools reports partial failures. dynaorm's
  own rows (receipts, idempotency records) give ``None``.
"""

import time
from collections.abc import Mapping
from typing import Any

from aws_lambda_powertools.utilities.idempotency.exceptions import (
    IdempotencyItemAlreadyExistsError,
    IdempotencyItemNotFoundError,
    IdempotencyValidationError,
)
from aws_lambda_powertools.utilities.idempotency.persistence.base import BasePersistenceLayer
from aws_lambda_powertools.utilities.idempotency.persistence.datarecord import (
    STATUS_CONSTANTS,
    DataRecord,
)

from dynaorm import Change, DynaormError, Operation, RequestError, RowKind, Table
from dynaorm.rules import call

__all__ = ["POWERTOOLS_TYPE", "DynaormPersistenceLayer", "UnclaimedRecordError", "changes"]

#: the type name of a Powertools idempotency record (its partition key's start)
POWERTOOLS_TYPE = "dynaorm:idempotency"
#: the row kind of the records (:meth:`dynaorm.Table.keeps`: ``dynaorm iam``, exports and
#: ``check`` read it from the model)
RECORDS = RowKind("Powertools idempotency record", POWERTOOLS_TYPE, "{hashed key}",
                  writer="dynaorm.powertools.DynaormPersistenceLayer")
Item = dict[str, dict[str, Any]]
_STATUS, _DATA, _HASH, _IN_PROGRESS = "status", "data", "validation", "in_progress_expiration"
#: the expiry attribute of a record on a table without a TTL attribute
_EXPIRES = "_expires"


class UnclaimedRecordError(DynaormError):
    """A stream record that no entity of the table claims (a batch processor reports it
    as a failed item of the batch)."""


class DynaormPersistenceLayer(BasePersistenceLayer):
    """Powertools' idempotency records as rows of ``table`` (see the module)."""

    def __init__(self, table: Table):
        super().__init__()  # type: ignore[no-untyped-call]
        if not table.string_keys:
            raise DynaormError(f"table {table.name!r}: its keys are not strings, so it "
                               "cannot keep Powertools' idempotency records")
        self.table = table
        table.keeps(RECORDS)

    # -- the rows ----------------------------------------------------------------------
    def _key(self, idempotency_key: str) -> Item:
        value = {"S": f"{POWERTOOLS_TYPE}#{idempotency_key}"}
        t = self.table
        return {t.pk: value} if t.sk is None else {t.pk: value, t.sk: value}

    @property
    def _expiry(self) -> str:
        return self.table.ttl or _EXPIRES

    def _record(self, idempotency_key: str, item: Item) -> DataRecord:
        """The record a stored row holds."""
        def text(attr: str) -> str | None:
            return item.get(attr, {}).get("S")

        def number(attr: str) -> int | None:
            raw = item.get(attr, {}).get("N")
            return None if raw is None else int(raw)

        return DataRecord(idempotency_key=idempotency_key, status=text(_STATUS) or "",
                          expiry_timestamp=number(self._expiry),
                          in_progress_expiry_timestamp=number(_IN_PROGRESS),
                          response_data=text(_DATA) or "", payload_hash=text(_HASH) or "")

    def _send(self, operation: str, request: dict[str, Any]) -> dict[str, Any]:
        request = {"TableName": self.table.name, **request}
        answer = self.table.db.driver.run(
            call(operation, request), Operation(f"powertools.{operation}", (self.table.name,)))
        return answer

    # -- BasePersistenceLayer ----------------------------------------------------------
    def _get_record(self, idempotency_key: str) -> DataRecord:
        item = self._send("GetItem", {"Key": self._key(idempotency_key),
                                      "ConsistentRead": True}).get("Item")
        if item is None:
            raise IdempotencyItemNotFoundError
        return self._record(idempotency_key, item)

    def _put_record(self, data_record: DataRecord) -> None:
        key = data_record.idempotency_key
        item = {**self._key(key), _STATUS: {"S": data_record.status},
                self._expiry: {"N": str(data_record.expiry_timestamp)}}
        if self.table.type_attribute:
            item[self.table.type_attribute] = {"S": POWERTOOLS_TYPE}
        if data_record.in_progress_expiry_timestamp is not None:
            item[_IN_PROGRESS] = {"N": str(data_record.in_progress_expiry_timestamp)}
        if self.payload_validation_enabled and data_record.payload_hash:
            item[_HASH] = {"S": data_record.payload_hash}
        now = time.time()
        try:
            self._send("PutItem", {
                "Item": item,
                # (Powertools' own condition: no record, an expired one, or one in progress
                # whose in-progress expiry has passed)
                "ConditionExpression": "attribute_not_exists(#id) OR #expiry < :now OR "
                                       "(#status = :inprogress AND attribute_exists(#ipe) "
                                       "AND #ipe < :now_ms)",
                "ExpressionAttributeNames": {"#id": self.table.pk, "#expiry": self._expiry,
                                             "#status": _STATUS, "#ipe": _IN_PROGRESS},
                "ExpressionAttributeValues": {
                    ":now": {"N": str(int(now))}, ":now_ms": {"N": str(int(now * 1000))},
                    ":inprogress": {"S": STATUS_CONSTANTS["INPROGRESS"]}},
                "ReturnValuesOnConditionCheckFailure": "ALL_OLD"})
        except RequestError as exc:
            if exc.code != "ConditionalCheckFailedException":
                raise
            if not exc.item:
                raise IdempotencyItemAlreadyExistsError() from exc
            old = self._record(key, exc.item)
            try:
                self._validate_payload(data_payload=data_record, stored_data_record=old)
                self._save_to_cache(data_record=old)
            except IdempotencyValidationError as invalid:
                raise invalid from exc
            raise IdempotencyItemAlreadyExistsError(old_data_record=old) from exc

    def _update_record(self, data_record: DataRecord) -> None:
        names = {"#data": _DATA, "#expiry": self._expiry, "#status": _STATUS}
        values = {":data": {"S": data_record.response_data},
                  ":expiry": {"N": str(data_record.expiry_timestamp)},
                  ":status": {"S": data_record.status}}
        update = "SET #data = :data, #expiry = :expiry, #status = :status"
        if self.payload_validation_enabled:
            update += ", #validation = :validation"
            names["#validation"] = _HASH
            values[":validation"] = {"S": data_record.payload_hash}
        self._send("UpdateItem", {"Key": self._key(data_record.idempotency_key),
                                  "UpdateExpression": update,
                                  "ExpressionAttributeNames": names,
                                  "ExpressionAttributeValues": values})

    def _delete_record(self, data_record: DataRecord) -> None:
        self._send("DeleteItem", {"Key": self._key(data_record.idempotency_key)})


def changes(record: Any, table: Table) -> Change | None:
    """The typed change of one record of Powertools' ``DynamoDBStreamEvent`` (its
    ``DynamoDBRecord``, or the record's raw mapping) on ``table`` (contract 23): one
    :class:`~dynaorm.Change` -- of an entity's row (``.entity``, ``.old``, ``.new``), a
    versioned entity's latest copy or version row, a unique guard, or a row another rule
    adds to an entity's writes (role ``"rule"``, ``.rule`` its name: an audit row of a
    rule you registered; ``.old``/``.new`` ``None``, its images in ``.old_item`` and
    ``.new_item``) -- or ``None`` for a row of dynaorm's own (a receipt, an idempotency
    record). A record no entity or rule claims raises :class:`UnclaimedRecordError`: in
    a record handler of Powertools' ``BatchProcessor`` it is a failed item of the
    batch."""
    raw = getattr(record, "raw_event", record)
    if not isinstance(raw, Mapping):
        raise DynaormError(f"expected a DynamoDB stream record, got {record!r:.80}")
    change = next(iter(table.changes([raw])), None)
    if change is not None and change.entity is None:
        raise UnclaimedRecordError(
            f"stream record {raw.get('eventID', '?')} of table {table.name!r} "
            f"({change.key}) is no entity's: reported as a failed item of the batch")
    return change
