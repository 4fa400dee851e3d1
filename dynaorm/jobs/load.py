"""``dynaorm.jobs.load``: entities loaded into an existing table with DynamoDB's bulk put
items (``StartBulkPutItems``), through the model's rules (see :doc:`the loads guide
</guide/loads>`).

1. **Render.** Each entity of the source (objects, a Parquet dataset, an Iceberg table, a
   DynamoDB export) is planned as ``save`` plans a new object (:mod:`dynaorm.core.load`):
   its row (a versioned entity's latest copy and version row), its unique guards and every
   row its rules add, each with its condition (the key must be free), written as input
   records into gzipped JSON-lines parts of ``part_rows`` rows, each part uploaded to S3
   as soon as it is full (memory and local disk: one part), with an index beside it (each
   entity's type name and its number of rows, in order).
2. **Start.** ``StartBulkPutItems`` of the parts with a client token of the load's
   ``name`` (and round): an answer lost, or a process stopped and the load run again with
   the same name, starts one operation (DynamoDB repeats an operation for its token for 8
   hours; past them the rows' conditions refuse what is already written, and the load
   tells its own rows from others'). ``MaxWriteRequestUnits``: the job's ``rate.write``.
3. **Wait.** ``DescribeBulkOperation`` every ``poll`` seconds, ``progress(processed,
   rows)`` after each.
4. **Settle.** The report (``ERROR`` and ``CONDITION_CHECK_FAILURE`` records) names the
   rows that were not written; a row refused because it holds what the load wrote (an
   earlier run) counts as written. Each entity with a row not written gets the error a
   commit of its save would have raised (a unique clash names its field; an existing item
   is :class:`~dynaorm.ItemExistsError`), and its rows the load did write are deleted,
   each conditioned on being as written: no guard is left without its owner, nor an owner
   without its guards. When the service's report cannot be taken at its word (the
   operation was cancelled or failed, its counts and report disagree), every row is read
   back (consistently) instead. An entity an operation stopped before is
   :class:`~dynaorm.core.load.NotLoadedError`: running the load again (same ``name``)
   loads those in a new operation.

The load keeps its state in S3 (``<s3>/<name>/load.json``, the parts, the reports and
each round's failures): everything it needs to resume.
"""

from __future__ import annotations

import dataclasses
import gzip
import hashlib
import json
import os
import tempfile
import time
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any, Final

from dynaorm._types import Item
from dynaorm.client.table import Table
from dynaorm.core.load import (
    APPLIED,
    ERROR,
    FAILED,
    UNKNOWN,
    Found,
    Loaded,
    NotLoadedError,
    fresh,
    input_record,
    outcome_p,
    own_row,
    plan_load_p,
    rollback,
    row_is,
    settled,
)
from dynaorm.errors import (
    DynaormError,
    ItemExistsError,
    RequestError,
    UniqueConstraintError,
)
from dynaorm.jobs.exports import ExportError, _lines, _s3, _split, read_source
from dynaorm.protocol.hooks import Operation
from dynaorm.protocol.policy import Rate, held_to
from dynaorm.protocol.steps import Proto, call
from dynaorm.read.batches import batch_get_p
from dynaorm.schema.entity import Entity, spec_of
from dynaorm.values.keys import key_id, key_value
from dynaorm.values.records import Role
from dynaorm.values.state import undeclared
from dynaorm.wire import decode, render

__all__ = ["LoadFailure", "LoadReport", "NotLoadedError", "load"]

#: rows a part holds, at most (DynamoDB reads up to 50,000 objects of an operation, each
#: up to 5 GB: similar sizes load fastest)
PART_ROWS: Final = 100_000
_TERMINAL: Final = frozenset({"COMPLETED", "COMPLETED_WITH_ERRORS", "CANCELLED", "FAILED"})
_TRUSTED: Final = frozenset({"COMPLETED", "COMPLETED_WITH_ERRORS"})
_MIN_UNITS: Final = 1024
_STATE_VERSION: Final = 1


@dataclass(frozen=True)
class LoadFailure:
    """An entity a load did not store, and why (none of its rows is left)."""

    entity: type[Entity]
    """The entity class."""
    key: dict[str, Any]
    """Its primary key (table key attributes, plain values)."""
    error: DynaormError
    """What a commit of its save would have raised (a unique clash:
    :class:`~dynaorm.UniqueConstraintError`, naming the field; an item at its key:
    :class:`~dynaorm.ItemExistsError`; a row the table refused: the refusal, a
    :class:`~dynaorm.RequestError`), or :class:`~dynaorm.core.load.NotLoadedError` when
    the operation stopped before it (run the load again)."""


@dataclass
class LoadReport:
    """What :func:`load` did (every round of the load of ``name`` so far)."""

    name: str
    """The load's name (its S3 folder and its operations' token)."""
    status: str
    """The last operation's status (``COMPLETED``, ``COMPLETED_WITH_ERRORS``,
    ``CANCELLED``, ``FAILED``)."""
    operations: list[str] = field(default_factory=list)
    """The ARN of each bulk operation, one per round."""
    entities: int = 0
    """Entities the source held (rendered)."""
    rows: int = 0
    """Rows they make (input records)."""
    loaded: int = 0
    """Entities stored, every row of theirs."""
    failures: list[LoadFailure] = field(default_factory=list)
    """Entities not stored, by clash or refusal (not :attr:`pending` ones)."""
    pending: int = 0
    """Entities an operation stopped before (run the load again to load them)."""
    left: list[str] = field(default_factory=list)
    """Rows a failed entity left because another writer changed them since the load
    wrote them (``dynaorm check`` reports them)."""
    dropped: dict[str, int] = field(default_factory=dict)
    """The attributes of a DynamoDB export's items the model does not declare, left out
    (each entity is made anew), by ``Entity.attribute``: how many items held each."""

    @property
    def ok(self) -> bool:
        """Whether every entity was stored."""
        return not self.failures and not self.pending and not self.left

    def lines(self) -> list[str]:
        """The report, a line each (``dynaorm load`` prints them)."""
        out = [f"  {self.loaded} of {self.entities} entities loaded ({self.rows} rows, "
               f"{len(self.operations)} operation(s), last {self.status})"]
        out += [f"  failed: {type(f.error).__name__}: {_one_line(f.error)}"
                for f in self.failures[:100]]
        if len(self.failures) > 100:
            out.append(f"  ... and {len(self.failures) - 100} more failures")
        if self.pending:
            out.append(f"  {self.pending} entities not loaded (the operation stopped): run "
                       "the load again with the same name")
        out += [f"  left: {row} (changed by another writer during the load: run dynaorm "
                "check)" for row in self.left]
        if self.dropped:
            out.append(f"  dropped, not declared by the model: {_dropped(self.dropped)}")
        return out


def load(table: Table, source: Any, *, s3: str, entity: type[Entity] | None = None,
         entities: Iterable[type[Entity]] | None = None, name: str | None = None,
         rate: Rate | None = None, part_rows: int = PART_ROWS, poll: float = 10.0,
         progress: Callable[[int, int], object] | None = None,
         sleep: Callable[[float], object] = time.sleep,
         performance_tier: str | None = None) -> LoadReport:
    """Load the entities of ``source`` into ``table`` with DynamoDB's bulk put items, each
    stored exactly as ``save`` stores a new object, and return what became of each (see
    the module).

    ``source``: entity objects (an iterable); a Parquet dataset (a file, or a folder: one
    ``*.parquet`` dataset of ``entity``, or :func:`dynaorm.jobs.export`'s folder of a
    dataset per type name), local or ``s3://``; a pyiceberg table of ``entity``'s rows; or
    the ``s3://`` URL of a DynamoDB export (its ``.../AWSDynamoDB/<id>/`` folder: each
    entity's row, guards and version rows left out, made anew). ``entities``: the classes
    a folder or an export is read for (default: every entity of ``table``). ``s3``: the
    ``s3://bucket/prefix`` the load keeps its files under. ``name``: the load's (resume
    with the same name; default: one drawn from the table and a source given by its URL,
    a new one for objects). ``rate``: ``write`` sets ``MaxWriteRequestUnits`` (at least
    1,024: DynamoDB's least) and holds the settling's requests. ``poll``: seconds between
    ``DescribeBulkOperation`` calls (``sleep`` waits them); ``progress(processed, rows)``
    after each."""
    if not isinstance(table, Table):
        raise DynaormError(f"load: table must be a dynaorm Table, got {table!r}")
    if not isinstance(s3, str) or not s3.startswith("s3://") or len(s3) <= 5:
        raise DynaormError(f"load: s3= takes an s3://bucket/prefix URL, got {s3!r}")
    if isinstance(part_rows, bool) or not isinstance(part_rows, int) or part_rows < 1:
        raise DynaormError(f"load: part_rows must be an int >= 1, got {part_rows!r}")
    units = _units(rate)
    job = _Load(table, s3.rstrip("/"), name or _name(table, source), rate, units,
                part_rows, poll, progress, sleep, performance_tier)
    job.refuse_global_table()
    with held_to(rate):
        report = job.run(lambda: _objects(table, source, entity, entities, job.dropped),
                         _described(source))
    if report.dropped:
        warnings.warn(f"load {report.name!r}: the model declares none of "
                      f"{_dropped(report.dropped)}: left out of every entity loaded",
                      RuntimeWarning, stacklevel=2)
    return report


def _dropped(counts: Mapping[str, int]) -> str:
    return ", ".join(f"{name} ({n} items)" for name, n in counts.items())


def _units(rate: Rate | None) -> int | None:
    """``MaxWriteRequestUnits`` of a job's rate (``None``: the service's own pace)."""
    if rate is None or rate.write is None:
        return None
    if rate.write < _MIN_UNITS:
        raise DynaormError(f"load: rate.write={rate.write} is below 1,024 write units a "
                           "second, the least a bulk put items operation takes "
                           "(MaxWriteRequestUnits): give more, or none")
    return int(rate.write)


def _described(source: Any) -> str | None:
    """The source by its path, URL or Iceberg table name (``None``: objects, which the
    load cannot name)."""
    if isinstance(source, str | os.PathLike):
        return os.fspath(source)
    if hasattr(source, "scan") and hasattr(source, "name"):  # (a pyiceberg table)
        return f"iceberg:{source.name()}"
    return None


def _name(table: Table, source: Any) -> str:
    """A load's default name: drawn from the table and the source's URL or path (the same
    source loads again as the same load); objects: a new one."""
    described = _described(source)
    if described is None:
        return os.urandom(8).hex()
    return hashlib.sha256(f"{table.name}\n{described}".encode()).hexdigest()[:16]


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())


class _Load:
    """One run of a load (see the module): its state, kept in S3, and its rounds."""

    def __init__(self, table: Table, s3: str, name: str, rate: Rate | None,
                 units: int | None, part_rows: int, poll: float,
                 progress: Callable[[int, int], object] | None,
                 sleep: Callable[[float], object], tier: str | None) -> None:
        self.table, self.name, self.rate, self.units = table, name, rate, units
        self.bucket, prefix = _split(s3)
        self.prefix = f"{prefix.strip('/')}/{name}" if prefix.strip("/") else name
        self.part_rows, self.poll, self.progress, self.sleep = part_rows, poll, progress, sleep
        self.tier = tier
        self.s3 = _s3()
        self.operation = Operation("load", (table.name,))
        self.state: dict[str, Any] = {}
        self.failures: list[LoadFailure] = []  # (the rounds this run settled: as raised)
        self.settled: set[int] = set()
        self.left: list[str] = []
        self.dropped: dict[str, int] = {}  # (a DynamoDB export's undeclared attributes)
        self.deleted: set[Any] = set()  # (the rows this run's rollbacks took back)

    # -- requests and files ------------------------------------------------------------
    def send(self, operation: str, request: dict[str, Any]) -> dict[str, Any]:
        answer: dict[str, Any] = self.table.db.driver.run(call(operation, request),
                                                          self.operation)
        return answer

    def run_p(self, proto: Proto[Any]) -> Any:
        return self.table.db.driver.run(proto, self.operation)

    def key(self, rest: str) -> str:
        return f"{self.prefix}/{rest}"

    def put(self, rest: str, body: bytes) -> None:
        self.s3.put_object(Bucket=self.bucket, Key=self.key(rest), Body=body)

    def listed(self, rest: str) -> list[str]:
        keys, pages = [], {"Bucket": self.bucket, "Prefix": self.key(rest)}
        while True:
            out = self.s3.list_objects_v2(**pages)
            keys += [o["Key"] for o in out.get("Contents", [])]
            if not out.get("IsTruncated"):
                return keys
            pages["ContinuationToken"] = out["NextContinuationToken"]

    def lines(self, key: str) -> Iterator[bytes]:
        for _, chunk in _lines(self.s3, f"s3://{self.bucket}/{key}"):
            yield from chunk

    def save_state(self) -> None:
        self.put("load.json", json.dumps(self.state, sort_keys=True).encode())

    def read_state(self) -> dict[str, Any]:
        from botocore.exceptions import ClientError

        try:
            body = self.s3.get_object(Bucket=self.bucket, Key=self.key("load.json"))[
                "Body"].read()
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") in ("NoSuchKey", "404"):
                return {}
            raise
        found: dict[str, Any] = json.loads(body)
        if found.get("table") != self.table.name:
            raise DynaormError(f"load {self.name!r} under s3://{self.bucket}/{self.prefix} "
                               f"loads table {found.get('table')!r}, not {self.table.name!r}")
        return found

    # -- the load ----------------------------------------------------------------------
    def refuse_global_table(self) -> None:
        """A table bulk put items cannot take refused, with the reason."""
        described = self.send("DescribeTable", {"TableName": self.table.name})["Table"]
        replicas = [r.get("RegionName") for r in described.get("Replicas") or []]
        if replicas:
            raise DynaormError(
                f"load: table {self.table.name!r} is a global table (replicas in "
                f"{', '.join(map(str, replicas))}): DynamoDB's bulk put items does not "
                "support global tables; load it with Session.save_many or a backfill job")

    def run(self, source: Callable[[], Iterator[Entity]], named: str | None
            ) -> LoadReport:
        self.state = self.read_state()
        if self.state.get("rounds") and named is not None and "source" in self.state and (
                self.state["source"] != named):
            # (a name is one load: run again, it resumes that source, never reads another)
            raise DynaormError(
                f"load {self.name!r} under s3://{self.bucket}/{self.prefix} loaded "
                f"{self.state.get('source') or 'entity objects'}, not {named}: give "
                "this source a name of its own (a name is one load, resumed)")
        if not self.state.get("rounds"):
            self.state = {"version": _STATE_VERSION, "table": self.table.name,
                          "name": self.name, "rounds": [], "source": named,
                          "dropped": self.dropped}
            self.render(source(), 1)
        current = self.state["rounds"][-1]
        if not current.get("settled"):
            self.start(current)
            described = self.wait(current)
            self.settle(current, described)
        return self.report()

    def render(self, objs: Iterator[Entity], number: int) -> None:
        """Round ``number``'s input parts and indexes, from ``objs``, uploaded."""
        writer = _Parts(self, number)
        self.run_p(_render_p(self.table, objs, writer))
        writer.close()
        self.state["rounds"].append(writer.summary())
        self.save_state()

    def start(self, current: dict[str, Any]) -> None:
        number = current["round"]
        token = hashlib.sha256(f"{self.table.name}\n{self.name}\n{number}".encode()
                               ).hexdigest()[:32]
        request: dict[str, Any] = {
            "TableName": self.table.name, "ClientToken": f"dynaorm-{token}",
            "InputS3Configuration": {"S3Bucket": self.bucket,
                                     "S3KeyPrefix": self.key(f"round-{number}/input/"),
                                     "InputFormat": "DYNAMODB_JSON",
                                     "InputCompressionType": "GZIP"},
            "OutputS3Configuration": {"S3Bucket": self.bucket,
                                      "S3KeyPrefix": self.key(f"round-{number}/report"),
                                      "OutputType": ["ERROR", "CONDITION_CHECK_FAILURE"]}}
        if self.units is not None:
            request["MaxWriteRequestUnits"] = self.units
        if self.tier is not None:
            request["PerformanceTier"] = self.tier
        # (a lost answer is retried with the same token: one operation)
        described = self.send("StartBulkPutItems", request)["BulkOperationDescription"]
        if current.get("arn") != described["BulkOperationArn"]:
            current["arn"] = described["BulkOperationArn"]
            self.save_state()

    def wait(self, current: dict[str, Any]) -> dict[str, Any]:
        while True:
            described: dict[str, Any] = self.send("DescribeBulkOperation", {
                "BulkOperationArn": current["arn"]})["BulkOperationDescription"]
            if self.progress is not None:
                self.progress(int(described.get("ProcessedItemCount") or 0), current["rows"])
            if described.get("BulkOperationStatus") in _TERMINAL:
                return described
            self.sleep(self.poll)

    # -- settling ----------------------------------------------------------------------
    def settle(self, current: dict[str, Any], described: dict[str, Any]) -> None:
        """Each entity's outcome (see the module); pending ones into the next round."""
        status = str(described["BulkOperationStatus"])
        number = current["round"]
        report = _Report(self, number)
        trusted = status in _TRUSTED and report.readable and int(
            described.get("ProcessedItemCount") or 0) == current["rows"] and (
            report.errors == int(described.get("FailedItemCount") or 0))
        after = _Parts(self, number + 1)
        loaded = failed = pending = 0
        failures: list[dict[str, Any]] = []
        for part in range(current["parts"]):
            groups = _groups(self, number, part)
            read_back = not trusted or part in report.unreadable_parts
            self.heard = report.failed if report.readable and (
                part not in report.unreadable_parts) else None
            for outcome in self.settle_part(groups, report, read_back):
                kind, records, error = outcome
                if kind == "loaded":
                    loaded += 1
                elif isinstance(error, NotLoadedError):
                    pending += 1
                    after.add_records(records[0], records[1])
                else:
                    failed += 1
                    failures.append(_failure_record(error, records))
                    self.failures.append(_failure(self.table, error, records))
        after.close()
        current.update(status=status, settled=True, loaded=loaded, failed=failed,
                       pending=pending)
        self.settled.add(number)
        self.put(f"round-{number}/failures.json.gz", gzip.compress(
            b"".join(json.dumps(f).encode() + b"\n" for f in failures)))
        if pending:
            self.state["rounds"].append(after.summary())
        self.save_state()

    def settle_part(self, groups: Iterator[tuple[type[Entity], list[dict[str, Any]]]],
                    report: _Report, read_back: bool
                    ) -> Iterator[tuple[str, tuple[type[Entity], list[dict[str, Any]]],
                                        DynaormError | None]]:
        """``(kind, (entity class, its records), error)`` of each entity of a part."""
        batch: list[tuple[type[Entity], list[dict[str, Any]]]] = []
        for group in groups:
            batch.append(group)
            if len(batch) >= 100:
                yield from self.judge(batch, report, read_back)
                batch = []
        yield from self.judge(batch, report, read_back)

    def judge(self, batch: list[tuple[type[Entity], list[dict[str, Any]]]],
              report: _Report, read_back: bool
              ) -> Iterator[tuple[str, tuple[type[Entity], list[dict[str, Any]]],
                                  DynaormError | None]]:
        if not batch:
            return
        # (read back: every row, when the report cannot be taken at its word; else the
        # rows it says a condition refused, a claim no count checks: what holds their key
        # is the table's to say, never a report object's)
        said = {key_id(_key_of(self.table, r["Item"])): (APPLIED, None) if read_back else
                report.failed.get(key_id(_key_of(self.table, r["Item"])), (APPLIED, None))
                for _, records in batch for r in records}
        keys = [_key_of(self.table, r["Item"]) for _, records in batch for r in records
                if read_back or said[key_id(_key_of(self.table, r["Item"]))][0] == FAILED]
        stored = self.run_p(batch_get_p(self.table.name, keys, consistent=True)
                            ) if keys else {}
        for cls, records in batch:
            found = self.found(records, said, stored, read_back)
            if all(what == APPLIED for what, _ in found):
                yield "loaded", (cls, records), None
                continue
            error = self.outcome(cls, records, found)
            yield ("loaded" if error is None else "failed"), (cls, records), error

    def found(self, records: list[dict[str, Any]], said: dict[Any, Found],
              stored: dict[Any, Any], read_back: bool) -> list[Found]:
        """What became of each of an entity's rows: the report's word, or (read back,
        or a refusal the report claims) what the table holds at its key."""
        found: list[Found] = []
        for record in records:
            ident = key_id(_key_of(self.table, record["Item"]))
            if read_back or said[ident][0] == FAILED:  # (an item there: as if its
                # condition refused it; unless this settling took it back since it was
                # read: a clash with an entity of the load that was not stored is none)
                now = None if ident in self.deleted else stored.get(ident)
                found.append((FAILED, now) if now is not None else (UNKNOWN, None))
            else:
                found.append(said[ident])
        return found

    def outcome(self, cls: type[Entity], records: list[dict[str, Any]],
                found: list[Found]) -> DynaormError | None:
        """The error of an entity with a row not written (its written rows deleted)."""
        planned = self.replanned(cls, records)
        if isinstance(planned, DynaormError):
            return planned
        at_of = {key_id(_key_of(self.table, r["Item"])): n for n, r in enumerate(records)}
        order = [at_of.get(key_id(_key_of(self.table, input_record(planned, n)["Item"])))
                 for n in range(len(planned.plan.ops))]
        if None in order or len(order) != len(records):
            return DynaormError(f"{cls.__name__} {planned.key}: its rows no longer plan as "
                                "the load rendered them (the model changed?): not settled")
        planned = dataclasses.replace(planned, written=tuple(
            records[at]["Item"] for at in order if at is not None))
        ordered: list[Found] = [found[at] for at in order if at is not None]
        assert planned.written is not None
        if self.heard is not None:  # (an entity's row the report does not name as refused,
            ordered = [(APPLIED, got) if what == FAILED and own_row(op) and (  # found as
                key_id(_key_of(self.table, item)) not in self.heard) and row_is(  # written)
                self.table, item, got) else (what, got) for op, item, (what, got) in zip(
                planned.plan.ops, planned.written, ordered, strict=True)]
        ordered = settled(self.table, planned.written, ordered,
                          [own_row(op) for op in planned.plan.ops],
                          self.claimed(cls, planned, ordered))
        if all(what == APPLIED for what, _ in ordered):
            return None
        error: DynaormError | None = self.run_p(outcome_p(planned, ordered))
        self.roll_back(rollback(planned, ordered))
        return error

    def replanned(self, cls: type[Entity], records: list[dict[str, Any]]
                  ) -> Loaded | DynaormError:
        """The load's plan of an entity from its rendered rows (its own row, at the
        revision it holds), or the error saying it no longer plans."""
        rev_attr = self.table.revision_attribute
        own = next((r["Item"] for r in records if rev_attr and rev_attr in r["Item"]),
                   records[0]["Item"])
        try:
            planned: Loaded = self.run_p(plan_load_p(fresh(cls, own), key_value(
                own[rev_attr]) if rev_attr and rev_attr in own else None))
        except DynaormError as exc:  # (the model changed since the load's input was made)
            return DynaormError(f"{cls.__name__}: its row no longer plans as rendered: {exc}")
        return planned

    def roll_back(self, deletes: list[tuple[bool, dict[str, Any]]]) -> None:
        """Delete the written rows of an entity not loaded (each conditioned as written);
        a row changed since is left, and listed (its owner row: every row of it)."""
        for at, (owner, delete) in enumerate(deletes):
            try:
                self.send("DeleteItem", delete)
                self.deleted.add(key_id(delete["Key"]))
            except RequestError as exc:
                if exc.code != "ConditionalCheckFailedException":
                    raise
                if not exc.item:  # (gone: deleted since, or by an earlier run of this)
                    continue
                if owner:  # (changed since: the entity lives on, every row of it kept)
                    self.left += [f"{d['TableName']} {d['Key']}" for _, d in deletes[at:]]
                    break
                self.left.append(f"{delete['TableName']} {delete['Key']}")

    def claimed(self, cls: type[Entity], planned: Loaded, found: list[Found]
                ) -> set[Any] | None:
        """The keys (:func:`~dynaorm.values.keys.key_id`) of the rows of ``planned`` the
        item at the entity's own key claims, read back (``found``): none when there is no
        item there; its guards (planned from it) and every other row of the entity when
        there is one; ``None`` when that is not known (its row the load's own, refused as
        an item, or an item that does not plan)."""
        own = [n for n, op in enumerate(planned.plan.ops) if own_row(op)]
        if len(own) != 1:
            return None
        what, item = found[own[0]]
        if what == UNKNOWN:
            return set()
        if what != FAILED or not isinstance(item, dict):
            return None
        try:  # (its guards as its own save would render them)
            theirs: Loaded = self.run_p(plan_load_p(fresh(cls, item)))
        except (DynaormError, ValueError, TypeError, KeyError):
            return None
        guards = {key_id(op.key) for op in theirs.plan.ops if op.origin.role is Role.GUARD}
        return guards | {key_id(op.key) for op in planned.plan.ops
                         if op.origin.role is not Role.GUARD}

    def report(self) -> LoadReport:
        rounds = self.state["rounds"]
        first = rounds[0]
        ended = [r["status"] for r in rounds if r.get("status")]
        out = LoadReport(self.name, ended[-1] if ended else "IN_PROGRESS",
                         operations=[r["arn"] for r in rounds if r.get("arn")],
                         entities=first["entities"], rows=first["rows"],
                         loaded=sum(r.get("loaded", 0) for r in rounds),
                         pending=rounds[-1]["entities"] if not rounds[-1].get("settled")
                         else rounds[-1].get("pending", 0), left=self.left,
                         dropped=dict(self.state.get("dropped", {})))
        out.failures = list(self.failures)
        for r in rounds:
            if r.get("settled") and r.get("failed") and r["round"] not in self.settled:
                body = self.s3.get_object(Bucket=self.bucket, Key=self.key(
                    f"round-{r['round']}/failures.json.gz"))["Body"].read()
                out.failures += [_failure_of(self.table, json.loads(line))
                                 for line in gzip.decompress(body).splitlines() if line]
        return out


def _render_p(table: Table, objs: Iterator[Entity], writer: _Parts) -> Proto[None]:
    """Each of ``objs`` planned (``save``'s insert) and written as its records."""
    entities = {id(c) for c in table.entities.values()}
    for obj in objs:
        if id(type(obj)) not in entities:
            raise DynaormError(f"load: {type(obj).__name__} is not an entity of table "
                               f"{table.name!r}")
        loaded = yield from plan_load_p(obj)
        writer.add(loaded)


class _Parts:
    """A round's input parts and their indexes, written a part at a time."""

    def __init__(self, job: _Load, number: int) -> None:
        self.job, self.number = job, number
        self.dir = Path(tempfile.mkdtemp(prefix="dynaorm-load-"))
        self.part = self.rows = self.entities = self.in_part = 0
        self.data: Any = None
        self.index: Any = None

    def _open(self) -> None:
        # (closed by _flush, once the part is full or the round ends)
        self.data = gzip.open(self.dir / "data.gz", "wb", compresslevel=1)  # noqa: SIM115
        self.index = gzip.open(self.dir / "index.gz", "wb", compresslevel=1)  # noqa: SIM115

    def add(self, loaded: Loaded) -> None:
        """One entity's records."""
        records = [input_record(loaded, n) for n in range(len(loaded.plan.ops))]
        self.add_records(type(loaded.obj), records)

    def add_records(self, cls: type[Entity], records: Sequence[Mapping[str, Any]]) -> None:
        if self.data is None:
            self._open()
        self.data.write(b"".join(render(dict(r)) + b"\n" for r in records))
        self.index.write(json.dumps([spec_of(cls).type_name, len(records)]).encode() + b"\n")
        self.rows += len(records)
        self.in_part += len(records)
        self.entities += 1
        if self.in_part >= self.job.part_rows:
            self._flush()

    def _flush(self) -> None:
        if self.data is None:
            return
        self.data.close()
        self.index.close()
        name = f"part-{self.part:05d}.json.gz"
        self.job.put(f"round-{self.number}/input/{name}", (self.dir / "data.gz").read_bytes())
        self.job.put(f"round-{self.number}/index/{name}", (self.dir / "index.gz").read_bytes())
        self.part, self.in_part, self.data, self.index = self.part + 1, 0, None, None

    def close(self) -> None:
        self._flush()
        for leftover in self.dir.iterdir():
            leftover.unlink()
        self.dir.rmdir()

    def summary(self) -> dict[str, Any]:
        return {"round": self.number, "parts": self.part, "rows": self.rows,
                "entities": self.entities}


def _groups(job: _Load, number: int, part: int
            ) -> Iterator[tuple[type[Entity], list[dict[str, Any]]]]:
    """Each entity of a part with its records, read back from S3 (index and data in
    step)."""
    classes = {spec_of(c).type_name: c for c in job.table.entities.values()}
    name = f"part-{part:05d}.json.gz"
    data = job.lines(job.key(f"round-{number}/input/{name}"))
    for line in job.lines(job.key(f"round-{number}/index/{name}")):
        type_name, count = json.loads(line)
        records = [decode(next(data)) for _ in range(count)]
        cls = classes.get(type_name)
        if cls is None:
            raise DynaormError(f"load {job.name!r}: its input holds entity {type_name!r}, "
                               f"which table {job.table.name!r} no longer has")
        yield cls, records


def _key_of(table: Table, item: Item) -> Item:
    """The table key of ``item`` (wire form)."""
    return {a: item[a] for a in (table.pk, table.sk) if a is not None and a in item}


class _Report:
    """A round's report, read: the failed rows by key, the parts it cannot place."""

    def __init__(self, job: _Load, number: int) -> None:
        self.failed: dict[Any, tuple[str, Any]] = {}
        self.unreadable_parts: set[int] = set()
        self.errors = 0
        self.readable = True
        for key in job.listed(f"round-{number}/report"):
            if not (key.endswith(".json.gz") or key.endswith(".json")) or key.endswith(
                    "manifest.json"):
                continue
            try:  # (bytes from S3: a file or record that is not the report's, not trusted)
                for line in job.lines(key):
                    self.record(job, decode(line))
            except (ExportError, ValueError, TypeError, AttributeError, KeyError,
                    DynaormError):
                self.readable = False

    def record(self, job: _Load, record: dict[str, Any]) -> None:
        if not isinstance(record, dict):
            raise ValueError("a report record is a JSON object")
        kind, item = record.get("OutputType"), record.get("Item")
        if kind == "ERROR":
            self.errors += 1
        if not isinstance(item, dict) or kind not in ("ERROR", "CONDITION_CHECK_FAILURE"):
            where = str(record.get("InputObject") or "")
            name = where.rsplit("/", 1)[-1]
            if name.startswith("part-") and name[5:10].isdigit():
                self.unreadable_parts.add(int(name[5:10]))
            else:
                self.readable = False
            return
        ident = key_id(_key_of(job.table, item))
        if kind == "CONDITION_CHECK_FAILURE":  # (what holds the key is read back)
            self.failed[ident] = (FAILED, None)
        else:
            self.failed[ident] = (ERROR, record.get("ErrorMessage") or record.get(
                "ErrorCode") or "refused")


def _failure_record(error: DynaormError | None, group: tuple[type[Entity], list[Any]]
                    ) -> dict[str, Any]:
    """A failure as the load keeps it in S3 (to report it again when run again): the
    entity's primary key is its row's (a versioned entity's: its latest copy's)."""
    cls, records = group
    spec = spec_of(cls)
    rev = spec.table.revision_attribute
    own = next((r["Item"] for r in records if rev is not None and rev in r["Item"]),
               records[0]["Item"])
    key = {a: key_value(own[a]) for a in (spec.table.pk, spec.table.sk)
           if a is not None and a in own}
    out: dict[str, Any] = {"entity": spec.type_name, "key": key,
                           "error": type(error).__name__, "message": str(error)}
    if isinstance(error, UniqueConstraintError):
        out["fields"] = [[f, str(v)] for f, v in error.violations]
    return out


def _failure(table: Table, error: DynaormError | None,
             group: tuple[type[Entity], list[Any]]) -> LoadFailure:
    """An entity's failure as this run met it."""
    kept = _failure_record(error, group)
    assert error is not None
    return LoadFailure(group[0], dict(kept["key"]), error)


def _failure_of(table: Table, kept: dict[str, Any]) -> LoadFailure:
    """A failure kept in S3, as a :class:`LoadFailure` (its error of the same kind)."""
    cls = next(c for c in table.entities.values() if spec_of(c).type_name == kept["entity"])
    key = dict(kept["key"])
    kinds: dict[str, Callable[[], DynaormError]] = {
        "UniqueConstraintError": lambda: UniqueConstraintError(
            cls, [(f, v) for f, v in kept.get("fields", [])], key=key),
        "ItemExistsError": lambda: ItemExistsError(kept["message"], entity=cls, key=key),
        "NotLoadedError": lambda: NotLoadedError(kept["message"]),
        "RequestError": lambda: RequestError("StartBulkPutItems", "ValidationException",
                                             kept["message"])}
    return LoadFailure(cls, key, kinds.get(kept["error"], lambda: DynaormError(
        kept["message"]))())


# -- sources ---------------------------------------------------------------------------
def _objects(table: Table, source: Any, entity: type[Entity] | None,
             entities: Iterable[type[Entity]] | None, dropped: dict[str, int]
             ) -> Iterator[Entity]:
    """The entity objects of ``source`` (see :func:`load`), one at a time."""
    classes = list(entities) if entities is not None else list(table.entities.values())
    if isinstance(source, str | os.PathLike):
        text = os.fspath(source)
        if "/AWSDynamoDB/" in text or text.rstrip("/").endswith("manifest-summary.json"):
            yield from _from_export(table, text, classes, dropped)
        else:
            yield from _from_parquet(text, entity, classes)
    elif hasattr(source, "scan") and hasattr(source, "schema"):  # (a pyiceberg table)
        if entity is None:
            raise DynaormError("load: an Iceberg table's rows are one entity's: give entity=")
        reader = source.scan().to_arrow_batch_reader()
        for batch in reader:
            yield from _rows(entity, batch)
    else:
        for obj in source:
            if not isinstance(obj, Entity):
                raise DynaormError(f"load: the source holds {obj!r}, not an entity object")
            yield obj


def _from_export(table: Table, url: str, classes: list[type[Entity]],
                 dropped: dict[str, int]) -> Iterator[Entity]:
    """The entities of a DynamoDB export: each entity's row or latest copy, as a new
    object (its guards and version rows are made anew); the attributes its model does not
    declare counted in ``dropped``."""
    from dynaorm.schema.entity import prepare_rows

    files, kind, _ = read_source(url)
    if kind != "full":
        raise DynaormError(f"load: {url} is an incremental export: load a full one")
    specs = [spec_of(c) for c in classes]
    s3 = _s3()
    for data in files:
        for _, chunk in _lines(s3, data):
            for line in chunk:
                item = decode(line).get("Item")
                if not isinstance(item, dict):
                    raise DynaormError(f"load: {data}: a line without an Item")
                spec = next((s for s in specs if s.owns(item)), None)
                if spec is None:
                    continue
                parsed = spec.rules.sort_keys.parse(key_value(item.get(
                    spec.table.sk or "", {"S": ""})))
                if parsed is not None and parsed[0]:  # (a version row: made anew)
                    continue
                if spec.rules.preparers:
                    table.db.driver.run(prepare_rows((spec,), (item,)), Operation(
                        "load", (table.name,), (spec.cls,)))
                for attr in undeclared(spec, item).keys() - {table.revision_attribute}:
                    dropped[f"{spec.name}.{attr}"] = dropped.get(f"{spec.name}.{attr}", 0) + 1
                yield fresh(spec.cls, item)


def _from_parquet(path: str, entity: type[Entity] | None,
                  classes: list[type[Entity]]) -> Iterator[Entity]:
    """The entities of a Parquet dataset (a file or folder of ``entity``), or of a folder
    of datasets named by type name (as :func:`dynaorm.jobs.export` writes them)."""
    import pyarrow.parquet as pq

    for cls, files in _datasets(path, entity, classes):
        for file in files:
            with _local(file) as local:
                for batch in pq.ParquetFile(local).iter_batches(batch_size=10_000):
                    yield from _rows(cls, batch)


def _datasets(path: str, entity: type[Entity] | None, classes: list[type[Entity]]
              ) -> list[tuple[type[Entity], list[str]]]:
    """Each dataset of ``path``: its entity class and its Parquet files."""
    files = _files(path)
    if entity is not None:
        return [(entity, [f for f in files if f.endswith(".parquet")])]
    by_name = {spec_of(c).type_name: c for c in classes}
    root = path.rstrip("/") + "/"
    found: dict[str, list[str]] = {}
    for f in files:
        folder = f.removeprefix(root).split("/", 1)[0] if f.startswith(root) else ""
        if f.endswith(".parquet") and folder in by_name and "/." not in f:
            found.setdefault(folder, []).append(f)
    if not found:
        raise DynaormError(f"load: no dataset under {path} is named by a type name of "
                           f"{sorted(by_name)} (give entity= for one entity's dataset)")
    return [(by_name[n], sorted(fs)) for n, fs in sorted(found.items())]


def _files(path: str) -> list[str]:
    """The files of a local or ``s3://`` path (itself, when it is one)."""
    if path.startswith("s3://"):
        bucket, prefix = _split(path)
        s3, keys, pages = _s3(), [], {"Bucket": bucket, "Prefix": prefix}
        while True:
            out = s3.list_objects_v2(**pages)
            keys += [f"s3://{bucket}/{o['Key']}" for o in out.get("Contents", [])]
            if not out.get("IsTruncated"):
                return sorted(keys)
            pages["ContinuationToken"] = out["NextContinuationToken"]
    local = Path(path)
    if local.is_file():
        return [str(local)]
    return sorted(str(p) for p in local.rglob("*.parquet"))


class _local:
    """A Parquet file where ``pyarrow`` reads it: itself, or an S3 object downloaded into
    a temporary file (removed after)."""

    def __init__(self, path: str) -> None:
        self.path: str = path
        self.temp: str | None = None

    def __enter__(self) -> str:
        if not self.path.startswith("s3://"):
            return self.path
        bucket, key = _split(self.path)
        fd, name = tempfile.mkstemp(suffix=".parquet", prefix="dynaorm-load-")
        os.close(fd)
        self.temp = name
        _s3().download_file(bucket, key, name)
        return name

    def __exit__(self, *exc: object) -> None:
        if self.temp is not None:
            os.unlink(self.temp)


def _rows(cls: type[Entity], batch: Any) -> Iterator[Entity]:
    """The objects of an Arrow record batch of ``cls``'s columns (as an export writes
    them: maps as pairs, JSON text for fields of no Arrow type)."""
    from dynaorm.jobs.arrow import columns

    json_fields = {c.name for c in columns(cls) if c.json}
    kinds = {f.name: f.type for f in batch.schema}
    names = [n for n in batch.schema.names if n in cls.model_fields]
    for row in batch.to_pylist():
        values = {n: _plain(kinds[n], row[n]) for n in names}
        for n in json_fields & values.keys():
            if isinstance(values[n], str):
                values[n] = json.loads(values[n])
        yield cls.model_validate(values)


def _plain(kind: Any, value: Any) -> Any:
    """``value`` of Arrow type ``kind`` as pydantic validates it (a map's pairs as a
    dict, within lists and structs too)."""
    import pyarrow as pa

    if value is None:
        return None
    if pa.types.is_map(kind):
        return {k: _plain(kind.item_type, v) for k, v in value}
    if pa.types.is_list(kind) or pa.types.is_large_list(kind):
        return [_plain(kind.value_type, v) for v in value]
    if pa.types.is_struct(kind):
        return {f.name: _plain(f.type, value.get(f.name)) for f in kind}
    if pa.types.is_decimal(kind):  # (its column's scale: 0.25 read as 0.250000000000000000)
        trimmed = value.normalize()
        return trimmed.quantize(Decimal(1)) if trimmed.as_tuple().exponent > 0 else trimmed
    return value

