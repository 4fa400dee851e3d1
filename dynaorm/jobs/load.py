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
import time
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from dynaorm._types import Item
from dynaorm.client.table import Table
from dynaorm.core.load import (
    APPLIED,
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
from dynaorm.jobs.load_files import (
    Group,
    LoadFiles,
    Parts,
    ServiceReport,
    described_as,
    entities_of,
    entity_groups,
    key_of,
)
from dynaorm.protocol.hooks import Operation
from dynaorm.protocol.policy import Rate, held_to
from dynaorm.protocol.steps import Proto, call
from dynaorm.read.batches import batch_get_p
from dynaorm.schema.entity import Entity, spec_of
from dynaorm.values.keys import key_id, key_value
from dynaorm.values.records import Role

__all__ = ["LoadFailure", "LoadReport", "NotLoadedError", "load"]

#: rows a part holds, at most (DynamoDB reads up to 50,000 objects of an operation, each
#: up to 5 GB: similar sizes load fastest)
PART_ROWS = 100_000
_TERMINAL = frozenset({"COMPLETED", "COMPLETED_WITH_ERRORS", "CANCELLED", "FAILED"})
_MIN_UNITS = 1024
_STATE_VERSION = 1


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
        out += [f"  failed: {type(f.error).__name__}: {' '.join(str(f.error).split())}"
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
        report = job.run(lambda: entities_of(table, source, entity, entities, job.dropped),
                         described_as(source))
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


def _name(table: Table, source: Any) -> str:
    """A load's default name: drawn from the table and the source's URL or path (the same
    source loads again as the same load); objects: a new one."""
    described = described_as(source)
    if described is None:
        return os.urandom(8).hex()
    return hashlib.sha256(f"{table.name}\n{described}".encode()).hexdigest()[:16]


class _Load(LoadFiles):
    """One run of a load (see the module): its state, kept in S3, and its rounds."""

    def __init__(self, table: Table, s3: str, name: str, rate: Rate | None,
                 units: int | None, part_rows: int, poll: float,
                 progress: Callable[[int, int], object] | None,
                 sleep: Callable[[float], object], tier: str | None):
        super().__init__(table, s3, name, part_rows)
        self.rate, self.units, self.poll, self.progress = rate, units, poll, progress
        self.sleep, self.tier = sleep, tier
        self.operation = Operation("load", (table.name,))
        self.state: dict[str, Any] = {}
        self.failures: list[LoadFailure] = []  # (the rounds this run settled: as raised)
        self.settled: set[int] = set()
        self.left: list[str] = []
        self.dropped: dict[str, int] = {}  # (a DynamoDB export's undeclared attributes)
        self.deleted: set[Any] = set()  # (the rows this run's rollbacks took back)

    # -- requests and state ------------------------------------------------------------
    def send(self, operation: str, request: dict[str, Any]) -> dict[str, Any]:
        answer: dict[str, Any] = self.run_p(call(operation, request))
        return answer

    def run_p(self, proto: Proto[Any]) -> Any:
        return self.table.db.driver.run(proto, self.operation)

    def save_state(self) -> None:
        self.put("load.json", json.dumps(self.state, sort_keys=True).encode())

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
        writer = Parts(self, number)
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
        report = ServiceReport(self, number)
        trusted = report.trusted(described, current["rows"])
        after = Parts(self, number + 1)
        loaded = pending = 0
        failures = []
        for part in range(current["parts"]):
            unplaced = part in report.unreadable_parts
            self.heard = report.failed if report.readable and not unplaced else None
            for group, error in self.settle_part(entity_groups(self, number, part), report,
                                                 not trusted or unplaced):
                if error is None:
                    loaded += 1
                elif isinstance(error, NotLoadedError):
                    pending += 1
                    after.add_records(*group)
                else:
                    failures.append(_failure_record(error, group))
                    self.failures.append(LoadFailure(group[0], dict(failures[-1]["key"]), error))
        after.close()
        current.update(status=status, settled=True, loaded=loaded, failed=len(failures),
                       pending=pending)
        self.settled.add(number)
        self.put(f"round-{number}/failures.json.gz", gzip.compress(
            b"".join(json.dumps(f).encode() + b"\n" for f in failures)))
        if pending:
            self.state["rounds"].append(after.summary())
        self.save_state()

    def settle_part(self, groups: Iterator[Group], report: ServiceReport, read_back: bool
                    ) -> Iterator[tuple[Group, DynaormError | None]]:
        """Each entity of a part and its error (``None``: loaded)."""
        batch = []
        for group in groups:
            batch.append(group)
            if len(batch) >= 100:
                yield from self.judge(batch, report, read_back)
                batch = []
        yield from self.judge(batch, report, read_back)

    def judge(self, batch: list[Group], report: ServiceReport, read_back: bool
              ) -> Iterator[tuple[Group, DynaormError | None]]:
        # (read back: every row, when the report cannot be taken at its word; else the
        # rows it says a condition refused, a claim no count checks: what holds their key
        # is the table's to say, never a report object's)
        keyed = {key_id(k): k for k in (key_of(self.table, r["Item"])
                                        for _, records in batch for r in records)}
        said = {i: report.failed.get(i, (APPLIED, None)) for i in keyed}
        keys = [k for i, k in keyed.items() if read_back or said[i][0] == FAILED]
        stored = self.run_p(batch_get_p(self.table.name, keys, consistent=True)
                            ) if keys else {}
        for cls, records in batch:
            yield (cls, records), self.outcome(cls, records, self.found(
                records, said, stored, read_back))

    def found(self, records: list[dict[str, Any]], said: dict[Any, Found],
              stored: dict[Any, Any], read_back: bool) -> list[Found]:
        """What became of each of an entity's rows: the report's word, or (read back,
        or a refusal the report claims) what the table holds at its key."""
        found = []
        for record in records:
            ident = key_id(key_of(self.table, record["Item"]))
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
        """The error of an entity with a row not written (its written rows deleted);
        ``None``: every row of it written."""
        if all(what == APPLIED for what, _ in found):
            return None
        replanned = self.replanned(cls, records)
        if isinstance(replanned, DynaormError):
            return replanned
        planned, order = replanned
        assert planned.written is not None
        ordered = self.heard_as_written(planned, [found[at] for at in order])
        ordered = settled(self.table, planned.written, ordered,
                          [own_row(op) for op in planned.plan.ops],
                          self.claimed(cls, planned, ordered))
        if all(what == APPLIED for what, _ in ordered):
            return None
        error: DynaormError | None = self.run_p(outcome_p(planned, ordered))
        self.roll_back(rollback(planned, ordered))
        return error

    def replanned(self, cls: type[Entity], records: list[dict[str, Any]]
                  ) -> tuple[Loaded, list[int]] | DynaormError:
        """The load's plan of an entity from its rendered rows (its own row, at the
        revision it holds) with its rows as written, and where each of them is among
        ``records``; or the error saying it no longer plans as rendered."""
        rev_attr = self.table.revision_attribute
        own = _own(records, rev_attr)
        try:
            planned = self.run_p(plan_load_p(fresh(cls, own), key_value(
                own[rev_attr]) if rev_attr and rev_attr in own else None))
        except DynaormError as exc:  # (the model changed since the load's input was made)
            return DynaormError(f"{cls.__name__}: its row no longer plans as rendered: {exc}")
        at_of = {key_id(key_of(self.table, r["Item"])): n for n, r in enumerate(records)}
        order = [at_of.get(key_id(key_of(self.table, input_record(planned, n)["Item"])))
                 for n in range(len(planned.plan.ops))]
        kept = [at for at in order if at is not None]
        if not len(kept) == len(order) == len(records):
            return DynaormError(f"{cls.__name__} {planned.key}: its rows no longer plan as "
                                "the load rendered them (the model changed?): not settled")
        return dataclasses.replace(planned, written=tuple(records[at]["Item"] for at in kept)
                                   ), kept

    def heard_as_written(self, planned: Loaded, found: list[Found]) -> list[Found]:
        """``found``, where an entity's own row the report does not name as refused is
        found as written: written."""
        if self.heard is None:
            return found
        assert planned.written is not None
        return [(APPLIED, got) if what == FAILED and own_row(op) and (
            key_id(key_of(self.table, item)) not in self.heard) and row_is(
            self.table, item, got) else (what, got) for op, item, (what, got) in zip(
            planned.plan.ops, planned.written, found, strict=True)]

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
        guards = self.guards(cls, item) if what == FAILED else None
        return None if guards is None else guards | {
            key_id(op.key) for op in planned.plan.ops if op.origin.role is not Role.GUARD}

    def guards(self, cls: type[Entity], item: Any) -> set[Any] | None:
        """The keys of the guards of the item ``item`` at an entity's key, as its own save
        would render them (``None``: no item, or one that does not plan)."""
        if not isinstance(item, dict):
            return None
        try:
            theirs = self.run_p(plan_load_p(fresh(cls, item)))
        except (DynaormError, ValueError, TypeError, KeyError):
            return None
        return {key_id(op.key) for op in theirs.plan.ops if op.origin.role is Role.GUARD}

    def report(self) -> LoadReport:
        rounds = self.state["rounds"]
        ended = [r["status"] for r in rounds if r.get("status")]
        last = rounds[-1]
        return LoadReport(self.name, ended[-1] if ended else "IN_PROGRESS",
                          operations=[r["arn"] for r in rounds if r.get("arn")],
                          entities=rounds[0]["entities"], rows=rounds[0]["rows"],
                          loaded=sum(r.get("loaded", 0) for r in rounds),
                          failures=[*self.failures, *self.kept_failures()],
                          pending=last.get("pending", 0) if last.get("settled") else (
                              last["entities"]), left=self.left,
                          dropped=dict(self.state.get("dropped", {})))

    def kept_failures(self) -> list[LoadFailure]:
        """The failures of the rounds an earlier run settled, as it kept them in S3."""
        out = []
        for r in self.state["rounds"]:
            if r.get("settled") and r.get("failed") and r["round"] not in self.settled:
                out += [_failure_of(self.table, json.loads(line)) for line in self.lines(
                    self.key(f"round-{r['round']}/failures.json.gz"))]
        return out


def _render_p(table: Table, objs: Iterator[Entity], writer: Parts) -> Proto[None]:
    """Each of ``objs`` planned (``save``'s insert) and written as its records."""
    entities = {id(c) for c in table.entities.values()}
    for obj in objs:
        if id(type(obj)) not in entities:
            raise DynaormError(f"load: {type(obj).__name__} is not an entity of table "
                               f"{table.name!r}")
        loaded = yield from plan_load_p(obj)
        writer.add(loaded)


def _own(records: list[dict[str, Any]], rev: str | None) -> Item:
    """An entity's own row among its rendered ``records`` (a versioned entity's: its latest
    copy, the one holding the revision attribute ``rev``)."""
    return next((r["Item"] for r in records if rev and rev in r["Item"]), records[0]["Item"])


def _failure_record(error: DynaormError, group: Group) -> dict[str, Any]:
    """A failure as the load keeps it in S3 (to report it again when run again): the
    entity's primary key is its row's (a versioned entity's: its latest copy's)."""
    cls, records = group
    spec = spec_of(cls)
    own = _own(records, spec.table.revision_attribute)
    key = spec.stored_key(own)
    out: dict[str, Any] = {"entity": spec.type_name, "key": key,
                           "error": type(error).__name__, "message": str(error)}
    if isinstance(error, UniqueConstraintError):
        out["fields"] = [[f, str(v)] for f, v in error.violations]
    return out


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
