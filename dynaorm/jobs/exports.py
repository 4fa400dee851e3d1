"""Exports by entity (contract 21): a table's items as one typed Parquet dataset per entity.

:func:`export` (``dynaorm.jobs.export``) makes the :class:`~dynaorm.jobs.Job`; a task
(:func:`export_part`) reads its share -- one scan segment of the live table, or one data
file of a DynamoDB export to S3 (:func:`read_source`: the manifest names the files) -- and
writes, for each entity, ``to/<type name>/part-<task>.parquet`` (``to``: a directory or
an ``s3://`` URL; a part is one upload: over 5 GB, export in more segments), typed from
the model (:mod:`dynaorm.jobs.arrow`). A full export's lines of plain entities are read
the fast way (:mod:`dynaorm.jobs.stored`).

Each stored item is told apart as a stream record is (:func:`~dynaorm.schema.streams.
classify`): an entity's row or latest copy goes to its entity's dataset, a version row to
``<type name>.history`` (``history=True``; else left out), a unique guard or another
rule's row (an audit row) nowhere, an item no entity claims is counted by its type name.
A row passes through its entity's rules' export hooks
(:meth:`~dynaorm.schema.rules.Rule.export`: the revision, index keys and, with
``encrypted="omit"``, encrypted fields left out) and is read as a read reads it: a row of a
previous layout as the current layout, an encrypted field opened with the table's keyring
(``encrypted="decrypt"``: the key material asked for through the client first), a row
whose TTL has passed skipped. A row that does not fit its entity (or its column) is left
out and counted, with its file or segment and key; a file that cannot be read whole (a
missing manifest, a truncated or corrupt data file) is :class:`ExportError`, and the task
writes nothing.

An incremental export (change sets) writes each entity's changes with ``_op``
(``insert``, ``modify``, ``remove``: a new-images-only export cannot tell an insert from a
modify, both are ``modify``), ``_time`` (when the change was written) and the new values
(a ``remove``: the key fields only).

A task writes each part to a temporary file and puts it in place whole at its end (an
``os.replace``, or one S3 upload), and removes the part its earlier runs wrote for an
entity it found nothing of now: running a task again (or twice at once) rewrites its own
files, and a task killed half-way leaves nothing a reader takes for data (at most a
temporary file in a local directory, whose name starts with a dot: DuckDB's, Polars',
Spark's and Athena's readers skip it). Task 0 writes every dataset, empty ones too, so
each has its schema.
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import os
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from pydantic import ValidationError

from dynaorm.client.table import Table
from dynaorm.errors import DynaormError
from dynaorm.jobs.audit import scan_pages
from dynaorm.jobs.export_files import Batch, Item, batches, parse_line, read_source, s3_client
from dynaorm.jobs.export_files import ExportError as ExportError
from dynaorm.jobs.export_filter import export_filter, in_scope, scope_prefixes, started_export
from dynaorm.jobs.export_formats import ExportFormat as ExportFormat
from dynaorm.jobs.export_formats import Staged as Staged
from dynaorm.jobs.export_formats import datasets_of, export_format, source_of
from dynaorm.jobs.export_parts import Counts, Part, RowReader, Sink
from dynaorm.jobs.job import Job, Task, job_of
from dynaorm.jobs.stored import stored_validator
from dynaorm.protocol.hooks import Operation
from dynaorm.protocol.policy import Rate
from dynaorm.schema.entity import Entity, prepare_rows
from dynaorm.schema.model import spec_of
from dynaorm.schema.spec import EntitySpec
from dynaorm.schema.streams import classify
from dynaorm.values.keys import key_value, named

#: what ``encrypted=`` takes: leave encrypted fields out, or write their plaintext
ENCRYPTED = ("omit", "decrypt")
#: whether a full export's lines are decoded in Arrow where they can be
#: (:mod:`dynaorm.jobs.vector`; off: every line per row, the reference way)
VECTOR = True
_OPS = {"NEW_AND_OLD_IMAGES": "insert", "NEW_IMAGE": "modify"}
#: what reading a row that does not fit its entity raises (a value of another type, an
#: attribute value that is not DynamoDB's): the row is left out and counted
_MALFORMED = (ValueError, TypeError, KeyError, AttributeError, ArithmeticError, DynaormError)


@dataclass(frozen=True)
class ExportReport:
    """What an export wrote (merged: over all tasks)."""

    rows: dict[str, int] = field(default_factory=dict)
    """Rows written per dataset, by the entity's type name (``"user"``,
    ``"doc.history"``)."""
    unclaimed: dict[str, int] = field(default_factory=dict)
    """Items no entity claims, by their type name (``"?"``: none)."""
    failed: int = 0
    """Rows left out because they do not fit their entity or their column."""
    failures: list[str] = field(default_factory=list)
    """Why, with each one's file (and line) or segment, and key (at most 100 a task)."""
    scanned: int = 0
    """Items read."""
    skipped: int = 0
    """Items read and not written, by design: guards, version rows (without
    ``history=True``), rows whose TTL has passed, entities not asked for."""
    tables: dict[str, int] = field(default_factory=dict)
    """``format="iceberg"``: the rows each Iceberg table's commit appended, by its name
    (``"<namespace>.<type name>"``; ``0``: nothing to apply, or applied already)."""

    def lines(self) -> list[str]:
        """What the report says, a line each (``dynaorm export`` prints them): the rows of
        each dataset and each Iceberg table's commit, items no entity claims, rows left
        out and why."""
        return [*(f"  {name}: {rows} rows" for name, rows in sorted({
            **self.rows, **self.tables}.items())), *(
            f"  {count} item(s) of type {name!r} claimed by no entity"
            for name, count in self.unclaimed.items()), *(
            [f"  {self.failed} row(s) left out (they do not fit their entity):"]
            if self.failed else []), *(f"    {line}" for line in self.failures)]


def _item(line: bytes, record: Any, where: str) -> Item:
    """The ``Item`` of a full export's line (read as ``record``)."""
    item = parse_line(line, where, record).get("Item")
    if not isinstance(item, dict):
        raise ExportError(f"{where}: no 'Item': not a full export's data file")
    return item


def export(table: Table, to: str | os.PathLike[str], *, source: str | None = None,
           entities: Iterable[type[Entity]] | None = None, history: bool = False,
           encrypted: str = "omit", segments: int = 1, rate: Rate | None = None,
           format: str = "parquet", scope: Mapping[str, Any] | None = None,
           start_export: str | None = None, poll: float = 10.0,
           sleep: Callable[[float], object] = time.sleep, **options: Any) -> Job:
    """``table`` as one typed Parquet dataset per entity under ``to`` (a directory or an
    ``s3://`` URL): ``to/<type name>/part-<task>.parquet`` (named by the entity's type
    name, unique in its table: two classes of one name never write one dataset), an
    :class:`~dynaorm.jobs.exports.ExportReport` (see :mod:`dynaorm.jobs.exports`). One task
    per scan segment, or per data file of the DynamoDB export to S3 at ``source``
    (incremental: change sets). ``entities``: those only (default: every entity of the
    table); ``history``: version rows too (``<type name>.history``); ``encrypted``:
    ``"omit"`` leaves encrypted fields out, ``"decrypt"`` writes their plaintext.

    ``scope``: one tenant's rows only (key fields -> values, e.g. ``{"tenant_id":
    "acme"}``): each entity's partition key template must prove the scope by a key prefix
    (the key grammar's, as ``dynaorm iam --scope``), else :class:`ExportError` names it;
    rows outside it are never written. ``start_export`` (``s3://bucket/prefix``): the job
    starts DynamoDB's ``ExportTableToPointInTime`` there first and reads it (point-in-time
    recovery on), sending a server-side ``FilterSpecification`` built from the model: the
    entities' type names and the scope's key prefixes (a key condition when they name one
    partition), waiting ``poll`` seconds between ``DescribeExport`` calls.

    ``format``: another name than ``"parquet"`` is an :class:`ExportFormat` found by that
    name in the entry-point group ``dynaorm.export_formats`` (:mod:`dynaorm.plugins`), and
    ``options`` are its own: the job's tasks are the same, and the format makes what runs
    on their datasets (``format="iceberg"``, ``catalog=``, ``namespace=``: the lake,
    :mod:`dynaorm.lake`, whose merge commits each dataset to an Iceberg table)."""
    kind = _checked(format, options, encrypted)
    classes = _exported_entities(table, entities)
    prefixes = None if scope is None else scope_prefixes(classes, scope)
    if start_export is not None:
        if source is not None:
            raise ExportError("export: source= and start_export= exclude each other")
        source = started_export(table, start_export, export_filter(
            table, classes, prefixes, entities is not None), poll, sleep)
    files, read, view = ((), "scan", "") if source is None else read_source(source)
    job = job_of("export", table, len(files) or (segments if source is None else 1), rate,
                 fn=export_part, files=files, options=(
                     ("to", os.fspath(to)), ("entities", classes),
                     ("history", bool(history)), ("encrypted", encrypted), ("kind", read),
                     ("view", view), ("source", source or ""), ("scope", prefixes),
                     ("scope_values", None if scope is None else dict(scope))))
    if kind is None:
        return job
    return kind.job(job, Staged(os.fspath(to), tuple(datasets_of(job)), source_of(job),
                                job.template.segments), options)


def _checked(format: str, options: Mapping[str, Any], encrypted: str) -> ExportFormat | None:
    """The export format named ``format`` (:func:`export_format`), once the options are
    checked and pyarrow found."""
    kind = export_format(format, options)
    try:
        import dynaorm.jobs.arrow  # noqa: F401 (dynaorm[export])
    except ModuleNotFoundError as exc:
        raise ExportError('exports need pyarrow: pip install "dynaorm[export]"') from exc
    if encrypted not in ENCRYPTED:
        raise ExportError(f"export: encrypted= is 'omit' or 'decrypt', not {encrypted!r}")
    return kind


def _exported_entities(table: Table, entities: Iterable[type[Entity]] | None
                       ) -> tuple[type[Entity], ...]:
    """The entity classes an export writes (each once), each named by its type name
    (unique in a table); a type name that cannot name a folder is refused."""
    known = tuple(dict.fromkeys(c for c in table.entities.values() if spec_of(c).cls is c))
    chosen = known if entities is None else tuple(dict.fromkeys(entities))
    if stray := [c for c in chosen if c not in known]:
        raise ExportError(f"export: {stray} are not entities of table {table.name!r}")
    for cls in chosen:
        name = spec_of(cls).type_name
        if name.startswith(".") or set(name) & set("/\\\0"):
            raise ExportError(f"export: {cls.__name__}'s type name {name!r} cannot name a "
                              "dataset (a folder): no '/', no backslash, no leading '.'")
    return chosen


# -- one task -------------------------------------------------------------------------------
class _Export:
    """One task of an export: its datasets, and the counts of what it read."""

    def __init__(self, table: Any, segment: int, options: Mapping[str, Any]):
        self.table, self.segment = table, segment
        self.history, self.decrypt = options["history"], options["encrypted"] == "decrypt"
        self.changes = options["kind"] == "incremental"
        self.view = options.get("view", "NEW_AND_OLD_IMAGES")
        self.readers = {cls: RowReader(spec_of(cls), self.decrypt) for cls in options["entities"]}
        self.sink = Sink(str(options["to"]), f"part-{segment:05d}.parquet")
        self.parts: dict[str, Part] = {}
        self.counts = Counts()
        full = not self.changes and options["kind"] != "scan"  # (a full export's file)
        self.fast, self.fast_names = self._fast_way(full)
        self.vector, self.vector_names = self._vector_way(full)

    def _fast_way(self, full: bool) -> tuple[Callable[[bytes], list[Any]] | None,
                                             dict[type[Any], tuple[str, type[Any]]]]:
        """The fast way (:mod:`dynaorm.jobs.stored`) of reading a full export's lines,
        if any entity allows it, and the class each entity it reads is validated into ->
        its dataset (name, class)."""
        fast = {} if not full else {
            r.spec.type_name: (r.model, r.spec) for r in self.readers.values() if r.fast}
        names = {r.model: (r.spec.type_name, c) for c, r in self.readers.items()
                 if r.spec.type_name in fast}
        type_attribute = self.table.type_attribute
        return None if not fast or type_attribute is None else stored_validator(
            type_attribute, fast), names

    def _vector_way(self, full: bool) -> tuple[Callable[[Any], Any] | None,
                                               dict[str, tuple[str, type[Any]]]]:
        """The vector way (:mod:`dynaorm.jobs.vector`) of reading a full export's lines,
        of the entities the fast way reads and of versioned entities' latest copies, and
        for each entity it reads: type name -> its dataset (name, class)."""
        vector = {} if not full else {
            r.spec.type_name: (r.model, r.spec) for r in self.readers.values() if r.vectored}
        decoder = None
        type_attribute = self.table.type_attribute
        if vector and type_attribute is not None and VECTOR:
            from dynaorm.jobs.vector import vector_decoder

            decoder = vector_decoder(type_attribute, vector, self.table.sk, self.history)
        return decoder, {r.spec.type_name: (r.spec.type_name, c)
                         for c, r in self.readers.items() if r.spec.type_name in vector}

    def names(self) -> dict[str, tuple[type[Any], bool]]:
        """Every dataset this export writes: name -> (entity, history?)."""
        return {f"{spec_of(c).type_name}{'.history' if h else ''}": (c, h) for c in self.readers
                for h in ((False, True) if self.history and spec_of(c).versioned else (False,))}

    def part(self, name: str, cls: type[Any]) -> Part:
        if name not in self.parts:
            cols = self.readers[cls].columns()
            if self.changes:
                from dynaorm.jobs.arrow import CHANGES

                cols = [*CHANGES, *(dataclasses.replace(c, nullable=True) for c in cols)]
            self.parts[name] = Part(self.sink, name, cols)
        return self.parts[name]

    def prepare(self, items: list[Item]) -> None:
        """What the rules need before ``items`` are read, asked for first (as a scan's
        pages are: the values kept in S3; key material only to decrypt: else the binary
        values, sealed ones among them, are not shown)."""
        if items:
            specs = [r.spec for r in self.readers.values()]
            rows = items if self.decrypt else [{a: v for a, v in i.items() if "B" not in v}
                                               for i in items]
            self.table.db.driver.run(prepare_rows(specs, rows), Operation(
                "export", (self.table.name,), tuple(self.readers)))
            for item, row in zip(items, rows, strict=True):
                item.update(row)  # (the values kept in S3, fetched)

    def scan(self, segments: int, scoped: Callable[[Item], bool] | None) -> None:
        """Export this task's scan segment (of ``segments``): its items ``scoped`` keeps."""
        where = f"segment {self.segment} of {segments}"
        for page, _ in scan_pages(self.table, None, None, "export", (self.segment, segments)):
            self.rows([(where, item) for item in page if scoped is None or scoped(item)])

    def read(self, files: tuple[str, ...], scoped: Callable[[Item | None], bool] | None
             ) -> None:
        """Export the lines of the data files ``files``: those whose item ``scoped``
        keeps."""
        for url in files:
            for batch in batches(s3_client(), url):
                if scoped is not None:
                    batch = batch.only(n for n, line in enumerate(batch.lines)
                                       if scoped(_image(line, batch.where(n))))
                self.records(batch)

    def rows(self, items: list[tuple[str, Item]]) -> None:
        """Export stored items, each with where it was read."""
        self.prepare([i for _, i in items])
        for where, item in items:
            self.row(where, item)

    def records(self, batch: Batch) -> None:
        """Export a batch of a data file's lines: full-export items (the entities the fast
        way reads, read in one call: :mod:`dynaorm.jobs.stored`), or changes."""
        if self.changes:
            self._changes(batch)
            return
        if self.vector is not None:
            batch = self._vectors(batch)
            if not batch.lines:
                return
        found = self._fast(batch)
        for n, (line, record) in enumerate(zip(batch.lines, found, strict=True)):
            if type(record) is dict:  # (read the plain way)
                found[n] = _item(line, record, batch.where(n))
        self.prepare([i for i in found if type(i) is dict])
        for n, record in enumerate(found):
            if type(record) is dict:
                self.row(batch.where(n), record)
            else:  # (an entity's row, read by the fast way)
                self.counts.scanned += 1
                self.part(*self.fast_names[type(record)]).add(record.__dict__,
                                                             batch.where(n), self.counts)

    def _changes(self, batch: Batch) -> None:
        """Export a batch of an incremental export's lines, each a change."""
        records = [(w, parse_line(line, w)) for w, line in (
            (batch.where(n), line) for n, line in enumerate(batch.lines))]
        self.prepare([r["NewImage"] for _, r in records if r.get("NewImage")])
        for where, record in records:
            self.change(where, record)

    def _vectors(self, batch: Batch) -> Batch:
        """Export what the vector way reads of a batch of a full export's lines; the
        lines it leaves to be read otherwise."""
        assert self.vector is not None
        tables, left_out = self.vector(batch.lines)
        done = {i for _, lines in tables.values() for i in lines} | set(left_out)
        self.counts.scanned += len(left_out)  # (version rows, without history=True)
        self.counts.skipped += len(left_out)
        for name, (table, lines) in tables.items():
            self.counts.scanned += len(lines)
            if lines:
                self.part(*self.vector_names[name]).add_table(table, self.counts)
        return batch.only(i for i in range(len(batch.lines)) if i not in done)

    def _fast(self, batch: Batch) -> list[Any]:
        """The batch's lines, each an object of its entity where the fast way reads it,
        else its JSON; :class:`ExportError` naming the first line that is not JSON."""
        if self.fast is None:
            return [parse_line(line, batch.where(n)) for n, line in enumerate(batch.lines)]
        try:
            return self.fast(b"[" + b",".join(batch.lines) + b"]")
        except ValidationError:
            for n, line in enumerate(batch.lines):
                parse_line(line, batch.where(n))  # (raises, naming it)
            raise

    def change(self, where: str, record: Mapping[str, Any]) -> None:
        """Export one change of an incremental export: its new image, or (a remove) the
        key fields of its keys."""
        new, old, keys = record.get("NewImage"), record.get("OldImage"), record.get("Keys")
        if not isinstance(keys, dict):
            raise ExportError(f"{where}: no 'Keys': not an incremental export's data file")
        op = "remove" if not new else "modify" if old else _OPS.get(self.view, "insert")
        micros = (record.get("Metadata") or {}).get("WriteTimestampMicros")
        micros = micros.get("N") if isinstance(micros, dict) else micros
        when = None if micros is None else datetime.fromtimestamp(int(micros) / 1e6, UTC)
        self.row(where, new or {**(old or {}), **keys}, (op, when, keys))

    def row(self, where: str, item: Item,
            change: tuple[str, datetime | None, Item] | None = None) -> None:
        """Export one stored item (``change``: a change's op, time and keys)."""
        counts = self.counts
        counts.scanned += 1
        cls, role, version, _ = classify(self.table, item)
        if cls is None and role != "guard":
            self._unclaimed(item)
            return
        reader, removed = self.readers.get(cls), change is not None and change[0] == "remove"
        if cls is None or reader is None or not self._exported(reader, role, item, removed):
            counts.skipped += 1
            return
        try:
            values = self._values(reader, item, change, version)
        except _MALFORMED as exc:
            counts.fail(f"{where}: {cls.__name__} {self._key(item)}: {_short(exc)}")
            return
        if values is None:
            counts.skipped += 1
            return
        name = f"{reader.spec.type_name}{'.history' if role == 'version' else ''}"
        self.part(name, cls).add(values, f"{where} {self._key(item)}", counts)

    def _unclaimed(self, item: Item) -> None:
        """Count a row no entity claims, by its type attribute's value, unless the
        table's own (a receipt, a Powertools record: never exported)."""
        if self.table.own_row(item):
            return
        name = named(item, self.table.type_attribute) or "?"
        self.counts.unclaimed[name] = self.counts.unclaimed.get(name, 0) + 1

    def _exported(self, reader: RowReader, role: str | None, item: Item, removed: bool
                  ) -> bool:
        """Whether an entity's row is exported: never a guard nor another rule's row
        (an audit row: whoever owns it), a version row only with history, and a row
        whose TTL has passed is, as reads, gone (unless the change removes it)."""
        if role in ("guard", "rule") or (role == "version" and not self.history):
            return False
        return removed or reader.keeps(item)

    def _key(self, item: Item) -> dict[str, str]:
        return {a: key_value(item[a]) for a in (self.table.pk, self.table.sk) if a and a in item}

    def _values(self, reader: RowReader, item: Item,
                change: tuple[str, datetime | None, Item] | None, version: int | None
                ) -> dict[str, Any] | None:
        """The field values of a stored row (``None``: its rules export nothing); of a
        change, with its op and time (a remove: its key fields only)."""
        if change is None:
            return reader.values(item)
        op, when, keys = change
        values = self._key_fields(reader.spec, keys, version) if op == "remove" else (
            reader.values(item))
        return None if values is None else {**values, "_op": op, "_time": when}

    @staticmethod
    def _key_fields(spec: EntitySpec, keys: Item, version: int | None) -> dict[str, Any]:
        """A removed row's key fields (all a change set says of it without its image)."""
        values = spec.key_values({a: key_value(av) for a, av in keys.items()})
        return {**values, "version": version} if spec.versioned and version else values

    def finish(self) -> ExportReport:
        """Write every part, then put them in place (and remove this task's stale parts)."""
        names = self.names()
        if self.segment == 0:  # every dataset, empty or not: each has its schema
            for name, (cls, _) in names.items():
                self.part(name, cls)
        for part in self.parts.values():  # (a failure: export_part discards them all)
            part.flush(self.counts)
            part.close()
        for name, part in self.parts.items():
            assert part.temp is not None
            self.sink.commit(name, part.temp)
        self.sink.remove(n for n in names if n not in self.parts)
        c = self.counts
        return ExportReport({n: p.written for n, p in self.parts.items()}, c.unclaimed,
                            c.failed, c.failures, c.scanned, c.skipped)

    def discard(self) -> None:
        for part in self.parts.values():
            part.discard()


def _short(exc: BaseException) -> str:
    if isinstance(exc, ValidationError):
        return "; ".join(f"{'.'.join(map(str, e['loc'])) or '(item)'}: {e['msg']}"
                         for e in exc.errors()[:3])
    return " ".join(str(exc).split())


def export_part(task: Task, table: Any) -> ExportReport:
    """Run one task of an export (``job.run`` calls it, pointed at the task's table): scan
    its segment of ``table``, or read its data files of an export to S3
    (``options["kind"]``), and write its parts."""
    options = dict(task.options)
    run = _Export(table, task.segment, options)
    scoped = in_scope(table, options.get("scope"), options.get("scope_values"),
                       options["entities"])
    try:
        with _collector_paused():
            if options["kind"] == "scan":
                run.scan(task.segments, scoped)
            else:
                run.read(task.files, scoped)
            return run.finish()
    except BaseException:
        run.discard()
        raise


def _image(line: bytes, where: str) -> Item | None:
    """The item a data file's line is about (a full export's ``Item``; a change's new
    image, else its old one, else its keys)."""
    record = parse_line(line, where)
    found = record.get("Item") or record.get("NewImage") or record.get("OldImage") or (
        record.get("Keys"))
    return found if isinstance(found, dict) else None


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    """The process's cyclic garbage collector paused for a task (unless it was off).

    A task holds up to :data:`BATCH` rows a dataset, all alive: with the collector on,
    every 700 new objects start a collection that walks them again, and the full ones walk
    them all (measured on ``benchmarks/export.py``'s items: half a task's time; paused for
    each batch alone, the collections between batches still walked them all). A part
    collects the young generations each time it writes its rows (what cycles they left);
    reading and writing rows make none."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
