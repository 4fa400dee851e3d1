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
import functools
import gc
import json
import os
import tempfile
import threading
import time
import uuid
import zlib
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from pydantic import BaseModel, ConfigDict, ValidationError, create_model
from pydantic_core import from_json

from dynaorm import DynaormError, Entity, F, Operation, Rate, Table
from dynaorm.core.scope import Scope
from dynaorm.jobs.audit import scan_pages
from dynaorm.jobs.job import Job, Task, job_of
from dynaorm.jobs.stored import stored_validator
from dynaorm.keys import key_value
from dynaorm.plugins import EXPORT_FORMATS, found
from dynaorm.schema.entity import prepare_rows, spec_of
from dynaorm.schema.spec import EntitySpec
from dynaorm.schema.streams import classify, normalize_item
from dynaorm.values.ttl import expired

Item = dict[str, Any]  # (a stored row, DynamoDB JSON)

if TYPE_CHECKING:
    import argparse

#: what ``encrypted=`` takes: leave encrypted fields out, or write their plaintext
ENCRYPTED = ("omit", "decrypt")
#: rows a part buffers before it writes them (one row group): a task's memory is bounded
#: by this, not by the size of its segment or file
BATCH = 20_000
#: a data file's lines read in one batch (the vector way: in one ``pyarrow.json`` call)
LINES = 5000
#: whether a full export's lines are decoded in Arrow where they can be
#: (:mod:`dynaorm.jobs.vector`; off: every line per row, the reference way)
VECTOR = True
#: the failures a task lists by name (it counts them all)
LISTED = 100
_OPS = {"NEW_AND_OLD_IMAGES": "insert", "NEW_IMAGE": "modify"}
#: what reading a row that does not fit its entity raises (a value of another type, an
#: attribute value that is not DynamoDB's): the row is left out and counted
_MALFORMED = (ValueError, TypeError, KeyError, AttributeError, ArithmeticError, DynaormError)


class ExportError(DynaormError):
    """An export's input cannot be read whole (a missing manifest, a truncated or corrupt
    data file, a format dynaorm does not read), or its options are wrong: the message names
    the file (and line). A task that raises it writes nothing."""


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


def _s3() -> Any:
    """An S3 client of the standard AWS configuration (credentials, region, profile,
    ``AWS_ENDPOINT_URL_S3``) as the environment says now: one a process for each setting
    of the ``AWS_*`` variables, as boto3's default session keeps one (a botocore client is
    thread-safe). Made once: a client a task cost 12 ms of CPU, a sixth of
    ``benchmarks/export.py``'s 5,000-item tasks."""
    key = (os.getpid(), tuple(sorted(
        (k, v) for k, v in os.environ.items() if k.startswith("AWS_"))))
    with _CLIENTS_LOCK:
        client = _CLIENTS.get(key)
        if client is None:
            import botocore.session

            if len(_CLIENTS) >= 16:  # (a process that keeps changing its configuration)
                _CLIENTS.clear()
            session = botocore.session.get_session()
            session.register_component("data_loader", _loader())
            client = _CLIENTS[key] = session.create_client("s3")
    return client


_CLIENTS: dict[tuple[Any, ...], Any] = {}  # (clients, not data: no cache of caches.py)
_CLIENTS_LOCK = threading.Lock()


@functools.cache
def _loader() -> Any:
    """botocore's data files, read once a process (what they say never changes)."""
    import botocore.loaders

    return botocore.loaders.create_loader()


def _split(url: str) -> tuple[str, str]:
    bucket, _, key = url.removeprefix("s3://").partition("/")
    return bucket, key


def _get(s3: Any, bucket: str, key: str) -> bytes:
    from botocore.exceptions import BotoCoreError, ClientError

    try:
        body: bytes = s3.get_object(Bucket=bucket, Key=key)["Body"].read()
    except (ClientError, BotoCoreError) as exc:
        raise ExportError(f"s3://{bucket}/{key} cannot be read: {exc}") from exc
    return body


def read_source(url: str) -> tuple[tuple[str, ...], str, str]:
    """The data files of the DynamoDB export at ``url`` (its ``.../AWSDynamoDB/<id>/``
    folder, or its ``manifest-summary.json``), as ``s3://`` URLs with the item count the
    manifest gives each (``#<count>``), its kind (``"full"`` or ``"incremental"``) and
    view type; :class:`ExportError` for a missing manifest or an ION export."""
    s3, (bucket, key) = _s3(), _split(url)
    where = key if key.endswith(".json") else f"{key.rstrip('/')}/manifest-summary.json"
    try:
        summary = json.loads(_get(s3, bucket, where))
        files = summary.get("manifestFilesS3Key") or where.replace("summary", "files")
        entries = [json.loads(line) for line in _get(s3, bucket, files).splitlines() if line]
        found = tuple(f"s3://{bucket}/{e['dataFileS3Key']}#{e.get('itemCount', '')}"
                      for e in entries)
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise ExportError(f"the manifest of the export at {url} is not DynamoDB's: {exc!r}"
                          ) from exc
    if summary.get("outputFormat", "DYNAMODB_JSON") != "DYNAMODB_JSON":
        raise ExportError(f"the export at {url} is {summary['outputFormat']}: dynaorm reads "
                          "DYNAMODB_JSON exports")
    kind = "incremental" if summary.get("exportType") == "INCREMENTAL_EXPORT" else "full"
    # (the view is the summary's ``outputView``, as DynamoDB writes it; ``exportViewType``
    # is the API's name of it, which 0.6 read: a file that has only that still reads)
    view = summary.get("outputView") or summary.get("exportViewType")
    return found, kind, str(view or "NEW_AND_OLD_IMAGES")


#: the longest line a data file or a report of DynamoDB's may hold (an item is at most
#: 400 KB; its DynamoDB JSON, base64 and all, and a report record's two items, far less)
_MAX_LINE = 16 << 20


def _lines(s3: Any, url: str) -> Iterator[tuple[Sequence[int], list[bytes]]]:
    """The lines of one data file (gzipped, as DynamoDB writes them), streamed a megabyte
    at a time: each megabyte's lines but blank ones, and their numbers;
    :class:`ExportError` naming the file when it is cut short or corrupt."""
    from botocore.exceptions import BotoCoreError, ClientError

    url, _, count = url.partition("#")
    bucket, key = _split(url)
    n = items = 0
    try:
        body = s3.get_object(Bucket=bucket, Key=key)["Body"]
        rest = b""
        for data in _unzipped(body.iter_chunks(1 << 20), key.endswith(".gz")):
            *lines, rest = (rest + data).split(b"\n")
            if len(rest) > _MAX_LINE:  # (bytes from S3: no line of an export is that long)
                raise ValueError(f"a line longer than {_MAX_LINE} bytes")
            kept = [line for line in lines if line.strip()]
            numbers: Sequence[int] = range(n + 1, n + 1 + len(lines)) if len(
                kept) == len(lines) else [n + 1 + i for i, line in enumerate(lines)
                                         if line.strip()]
            n, items = n + len(lines), items + len(kept)
            yield numbers, kept
        if rest.strip():
            items += 1
            yield [n + 1], [rest]
    except (ClientError, BotoCoreError, EOFError, OSError, ValueError, zlib.error) as exc:
        raise ExportError(f"{url}: cannot be read whole (truncated or corrupt after line "
                          f"{n}): {exc}") from exc
    if count and int(count) != items:
        raise ExportError(f"{url}: {items} items read, the manifest says {count}: the "
                          "file is truncated")


def _unzipped(chunks: Iterable[bytes], gzipped: bool) -> Iterator[bytes]:
    """``chunks`` of a file, gunzipped (every member of it); ``EOFError`` when the file
    ends inside a member."""
    if not gzipped:
        yield from chunks
        return
    unzip, fed = zlib.decompressobj(wbits=31), False
    for chunk in chunks:
        while True:  # (a megabyte out at most a step: a small hostile object may inflate
            fed = fed or bool(chunk)  # to gigabytes)
            out = unzip.decompress(chunk, 1 << 20)
            if out:
                yield out
            if unzip.eof:
                chunk = unzip.unused_data  # (the next member)
                unzip, fed = zlib.decompressobj(wbits=31), False
                if not chunk:
                    break
                continue
            chunk = unzip.unconsumed_tail
            if not chunk and len(out) < 1 << 20:
                break
    if fed:
        raise EOFError("the file ends inside a compressed member")


def _parse(line: bytes, where: str, record: Any = None) -> dict[str, Any]:
    """One line of a data file as JSON (``record``: as read already), its binary values
    as ``bytes``."""
    try:
        record = from_json(line) if record is None else record
        if b'"B"' in line or b'"BS"' in line:  # (base64 text in DynamoDB JSON: bytes)
            record = {k: normalize_item(v, where) if k in _IMAGES else v
                      for k, v in record.items()}
    except (ValueError, AttributeError, DynaormError) as exc:
        raise ExportError(f"{where}: not DynamoDB JSON: {exc}") from exc
    if not isinstance(record, dict):
        raise ExportError(f"{where}: not DynamoDB JSON: {line[:80]!r}")
    return record


def _item(line: bytes, record: Any, where: str) -> Item:
    """The ``Item`` of a full export's line (read as ``record``)."""
    item = _parse(line, where, record).get("Item")
    if not isinstance(item, dict):
        raise ExportError(f"{where}: no 'Item': not a full export's data file")
    return item


_IMAGES = ("Item", "Keys", "NewImage", "OldImage")
#: the rules (by name) whose export hooks only leave attributes out, and, with encrypted
#: fields left out, whose decoding is nothing (an entity with no other rule is read the
#: fast way)
_LEAVE_OUT = ("revision", "indexes", "encrypted")


def _rule(hook: Any) -> str | None:
    """The name of the rule whose bound method ``hook`` is."""
    return getattr(getattr(hook, "__self__", None), "name", None)


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
    kind = _export_format(format, options)
    try:
        import dynaorm.jobs.arrow  # noqa: F401 (dynaorm[export])
    except ModuleNotFoundError as exc:
        raise ExportError('exports need pyarrow: pip install "dynaorm[export]"') from exc
    if encrypted not in ENCRYPTED:
        raise ExportError(f"export: encrypted= is 'omit' or 'decrypt', not {encrypted!r}")
    classes = _exported_entities(table, entities)
    prefixes = None if scope is None else scope_prefixes(table, classes, scope)
    if start_export is not None:
        if source is not None:
            raise ExportError("export: source= and start_export= exclude each other")
        source = started_export(table, start_export, export_filter(
            table, classes, prefixes, entities is not None), poll, sleep)
    files, read, view = ((), "scan", "") if source is None else read_source(source)
    job = job_of("export", table, len(files) or (segments if source is None else 1), rate,
                 fn=_task, files=files, options=(
                     ("to", os.fspath(to)), ("entities", classes),
                     ("history", bool(history)), ("encrypted", encrypted), ("kind", read),
                     ("view", view), ("source", source or ""), ("scope", prefixes),
                     ("scope_values", None if scope is None else dict(scope))))
    if kind is None:
        return job
    return kind.job(job, Staged(os.fspath(to), tuple(datasets_of(job)), source_of(job),
                                job.template.segments), options)


def scope_prefixes(table: Table, classes: Sequence[type[Entity]], scope: Mapping[str, Any]
                   ) -> dict[str, tuple[str, bool]]:
    """Each entity's key prefix that proves its rows belong to ``scope`` (type name ->
    ``(prefix, exact)``: exact when the prefix is the whole partition key), from the key
    grammar (:meth:`~dynaorm.schema.templates.KeyTemplate.scope_prefix`); an entity whose
    partition key template proves none is :class:`ExportError`."""
    if not isinstance(scope, Mapping) or not scope:
        raise ExportError(f"export: scope= takes key fields and their values, got {scope!r}")
    out: dict[str, tuple[str, bool]] = {}
    for cls in classes:
        spec = spec_of(cls)
        proven = spec.pk.scope_prefix(scope.keys())
        if proven is None:
            raise ExportError(
                f"export: {cls.__name__}'s partition key {spec.pk.source!r} proves no "
                f"prefix of the scope {sorted(scope)} (its fields must lead it, unformatted)"
                ": export it without scope=, or leave it out of entities=")
        out[spec.type_name] = (spec.pk.render_prefix(scope, cls.__name__), proven[1])
    return out


def export_filter(table: Table, classes: Sequence[type[Entity]],
                  prefixes: Mapping[str, tuple[str, bool]] | None, chosen: bool
                  ) -> dict[str, Any] | None:
    """The ``FilterSpecification`` of an export of ``classes`` (``chosen``: fewer than all
    of the table's: their type names) within ``prefixes`` (:func:`scope_prefixes`):
    ``None`` when it would keep every item."""
    from dynaorm.values.expressions import Placeholders

    parts = []
    key_condition = None
    if prefixes:
        found = set(prefixes.values())
        if len(found) == 1 and next(iter(found))[1]:  # one whole partition: read it alone
            key_condition = next(iter(found))[0]
        else:  # (an exact prefix is the whole key: ``T#acme`` never selects ``T#acme-corp``)
            ors = [F(table.pk) == p if exact else F(table.pk).begins_with(p)
                   for p, exact in sorted(found)]
            parts.append(ors[0] if len(ors) == 1 else _any(ors))
    if chosen and table.type_attribute is not None:
        parts.append(F(table.type_attribute).is_in(sorted(spec_of(c).type_name
                                                          for c in classes)))
    condition = None
    for part in parts:
        condition = part if condition is None else condition & part
    if condition is None and key_condition is None:
        return None
    ph = Placeholders()
    spec: dict[str, Any] = {}
    if key_condition is not None:
        at = ph.value_av({"S": key_condition})
        spec["KeyConditionExpression"] = f"{ph.name(table.pk)} = {at}"
    if condition is not None:
        spec["FilterExpression"] = condition.render(ph)
    return ph.apply(spec)


def _any(conditions: list[Any]) -> Any:
    out = conditions[0]
    for more in conditions[1:]:
        out = out | more
    return out


def started_export(table: Table, to: str, filters: dict[str, Any] | None, poll: float,
                   sleep: Callable[[float], object]) -> str:
    """Start ``ExportTableToPointInTime`` of ``table`` into ``to`` (``s3://bucket/prefix``)
    with ``filters`` and wait for it: its ``manifest-summary.json`` URL."""
    from dynaorm.protocol.steps import call

    if not to.startswith("s3://") or len(to) <= 5:
        raise ExportError(f"export: start_export= takes an s3://bucket/prefix URL, got {to!r}")
    bucket, prefix = _split(to)
    operation = Operation("export", (table.name,))
    run = table.db.driver.run
    arn = run(call("DescribeTable", {"TableName": table.name}), operation)["Table"]["TableArn"]
    request: dict[str, Any] = {"TableArn": arn, "S3Bucket": bucket,
                               "ExportFormat": "DYNAMODB_JSON", "ExportType": "FULL_EXPORT",
                               "ClientToken": uuid.uuid4().hex}
    if prefix.strip("/"):
        request["S3Prefix"] = prefix.strip("/")
    if filters:
        request["FilterSpecification"] = filters
    done = run(call("ExportTableToPointInTime", request), operation)["ExportDescription"]
    while done.get("ExportStatus") == "IN_PROGRESS":
        sleep(poll)
        done = run(call("DescribeExport", {"ExportArn": done["ExportArn"]}), operation)[
            "ExportDescription"]
    if done.get("ExportStatus") != "COMPLETED":
        raise ExportError(f"export: DynamoDB's export {done.get('ExportArn')} ended "
                          f"{done.get('ExportStatus')}: {done.get('FailureCode')} "
                          f"{done.get('FailureMessage')}")
    return f"s3://{bucket}/{done['ExportManifest']}"


class ExportFormat(Protocol):
    """What an entry point of the group ``dynaorm.export_formats`` names (an object, such
    as the lake's ``dynaorm.lake:ICEBERG``): a format :func:`export` writes besides
    Parquet, found by its entry point's name (``format="NAME"``, ``dynaorm export
    --format NAME``). The export's tasks stage each dataset as Parquet parts; the format
    makes the job that runs them and does what it does with what they staged (the lake:
    its merge commits each dataset to an Iceberg table)."""

    def check(self, options: Mapping[str, Any]) -> None:
        """Refuse (:class:`ExportError`) options the format does not take or lacks, or
        a package it needs that is not installed, before anything is read."""

    def job(self, job: Job, staged: Staged, options: Mapping[str, Any]) -> Job:
        """The job :func:`export` returns: ``job`` (the export's: its tasks write the
        parts ``staged`` describes) with the format's work, given its ``options``."""

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        """Add the format's options to ``dynaorm export``'s parser (none: add nothing)."""

    def arguments(self, args: argparse.Namespace) -> dict[str, Any]:
        """The format's options as ``dynaorm export``'s parsed ``args`` give them (an
        option not given: ``None``), by the keyword :func:`export` takes."""


@dataclass(frozen=True)
class Staged:
    """What an export's tasks stage, for the :class:`ExportFormat` that runs on them."""

    to: str
    """Where the parts are written (a directory or an ``s3://`` URL)."""
    datasets: tuple[tuple[str, Any, tuple[str, ...]], ...]
    """Each dataset: its name (``"user"``, ``"order.history"``), the model's
    ``pyarrow.Schema`` of its rows and the fields of its key (a version row's: with
    ``version``)."""
    source: tuple[str, str, str, str]
    """What the export reads: its kind (``"scan"``, ``"full"``, ``"incremental"``), an
    id (a DynamoDB export's ARN, a scan's new id), the ISO time its rows are as of and an
    incremental export's start (``""``: none)."""
    parts: int
    """How many tasks write parts (one a task, ``part-00000`` on)."""

    def read(self, name: str) -> Iterator[Any]:
        """The staged parts of dataset ``name``, each a ``pyarrow.Table`` (once the tasks
        ran: in the job's merge)."""
        return read_parts(self.to, name, self.parts)


def _export_format(name: str, options: Mapping[str, Any]) -> ExportFormat | None:
    """The export format named ``name`` (``None``: Parquet alone), its ``options``
    checked; :class:`ExportError` for a format not found or its options wrong."""
    points = found(EXPORT_FORMATS)
    if name == "parquet":
        if options:
            taken = ", ".join(f"{k}=" for k in sorted(options))
            raise ExportError(f"export: {taken} {'is' if len(options) == 1 else 'are'} for "
                              f"another format= than 'parquet' (found: "
                              f"{', '.join(map(repr, points)) or 'none'})")
        return None
    point = points.get(name)
    if point is None:
        names = " or ".join(repr(n) for n in ("parquet", *points))
        raise ExportError(f"export: format= is {names}, not {name!r}")
    kind: ExportFormat = point.load()
    kind.check(options)
    return kind


def _task(task: Task, table: Any) -> ExportReport:
    """Run one task of an export (``job.run`` calls it, pointed at the task's table)."""
    return export_part(table, task.segment, task.segments, task.files, dict(task.options))


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


# -- where the parts go ---------------------------------------------------------------
class _Sink:
    """The export's destination: a directory, or an ``s3://`` URL (a part goes through a
    local temporary file, uploaded whole)."""

    def __init__(self, to: str, part: str, s3: Callable[[], Any]) -> None:
        self.to, self.part = to.rstrip("/"), part
        self.s3 = s3() if to.startswith("s3://") else None

    def temp(self, name: str) -> Path:
        """A new temporary file for dataset ``name``'s part (a dot file beside it)."""
        if self.s3 is not None:
            fd, path = tempfile.mkstemp(suffix=".parquet")
            os.close(fd)
            return Path(path)
        folder = Path(self.to) / name
        folder.mkdir(parents=True, exist_ok=True)
        return folder / f".{self.part}.{uuid.uuid4().hex}.tmp"

    def commit(self, name: str, temp: Path) -> None:
        """Put dataset ``name``'s part written to ``temp`` in place, whole."""
        if self.s3 is None:
            os.replace(temp, Path(self.to) / name / self.part)
            return
        bucket, key = _split(f"{self.to}/{name}/{self.part}")
        try:
            with temp.open("rb") as data:
                self.s3.put_object(Bucket=bucket, Key=key, Body=data)
        finally:
            temp.unlink(missing_ok=True)

    def remove(self, names: Iterable[str]) -> None:
        """Remove the parts of datasets ``names`` (an earlier run's, where there is one)."""
        names = list(names)
        if self.s3 is None:
            for name in names:
                (Path(self.to) / name / self.part).unlink(missing_ok=True)
        elif names:
            bucket, prefix = _split(self.to)
            self.s3.delete_objects(Bucket=bucket, Delete={"Objects": [
                {"Key": f"{prefix}/{name}/{self.part}".lstrip("/")} for name in names]})


class _Part:
    """One dataset's part file of a task: rows buffered, written as row groups."""

    def __init__(self, sink: _Sink, name: str, cols: list[Any]) -> None:
        self.sink, self.name, self.cols = sink, name, cols
        self.rows: list[dict[str, Any]] = []
        self.where: list[str] = []
        #: rows read as Arrow tables already (the vector way), and the rows before them
        self.tables: list[Any] = []
        self.held = 0
        self.written = 0
        self.temp: Path | None = None
        self.writer: Any = None

    def add(self, row: dict[str, Any], where: str, report: _Counts) -> None:
        self.rows.append(row)
        self.where.append(where)
        if len(self.rows) + self.held >= BATCH:
            self.flush(report)

    def add_table(self, table: Any, report: _Counts) -> None:
        """Add rows read as a table of the part's columns already (the vector way)."""
        self._settle(report)
        self.tables.append(table)
        self.held += table.num_rows
        if self.held >= BATCH:
            self.flush(report)

    def _settle(self, report: _Counts) -> None:
        """The buffered rows as a table (those a column refuses counted as failures)."""
        from dynaorm.jobs.arrow import table_of

        if self.rows:
            table, bad = table_of(self.cols, self.rows)
            for i, why in sorted(bad.items()):
                report.fail(f"{self.where[i]}: {why}")
            self.tables.append(table)
            self.held += table.num_rows
            self.rows, self.where = [], []

    def flush(self, report: _Counts) -> None:
        """Write the buffered rows (those a column refuses counted as failures)."""
        import pyarrow as pa

        from dynaorm.jobs.arrow import schema_of

        self._settle(report)
        table = pa.concat_tables(self.tables) if self.tables else schema_of(
            self.cols).empty_table()
        if self.writer is None:
            import pyarrow.parquet as pq

            self.temp = self.sink.temp(self.name)
            self.writer = pq.ParquetWriter(str(self.temp), schema_of(self.cols))
        if table.num_rows:
            self.writer.write_table(table)
        self.written += table.num_rows
        self.tables, self.held = [], 0
        gc.collect(1)  # (the collector is paused for the task: what cycles a batch left)

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()

    def discard(self) -> None:
        self.close()
        if self.temp is not None:
            self.temp.unlink(missing_ok=True)


class _Counts:
    """A task's counts, made into its :class:`ExportReport` at the end."""

    def __init__(self) -> None:
        self.unclaimed: dict[str, int] = {}
        self.failed = self.scanned = self.skipped = 0
        self.failures: list[str] = []

    def fail(self, why: str) -> None:
        self.failed += 1
        if len(self.failures) < LISTED:
            self.failures.append(why)


# -- reading a row as its entity ---------------------------------------------------------
class _Reader:
    """How an export reads the rows of one entity: its rules' export hooks, then as a read
    decodes them (encrypted fields left out, or opened), as the dataset's field values."""

    def __init__(self, spec: EntitySpec, decrypt: bool) -> None:
        self.spec = spec
        self.hooks = [h for h in spec.rules.exporters
                      if not (decrypt and _rule(h) == "encrypted")]
        self.omitted = frozenset() if decrypt else frozenset(spec.encrypted.values())
        #: the TTL attribute whose passed time leaves a row out, as reads skip it (an
        #: entity with a TTL field or timestamps)
        self.expires = spec.table.ttl if "stamps" in spec.rules.by_name else None
        layout = spec.previous
        self.old = None if layout is None else frozenset(
            a for a, n in layout.fields_by_attr.items() if n in self.omitted)
        fields: dict[str, Any] = {n: (f.annotation, f) for n, f in
                                  spec.cls.model_fields.items() if n not in self.omitted}
        self.model: type[BaseModel] = spec.cls if not self.omitted else create_model(
            spec.name, __config__=ConfigDict(populate_by_name=True), **fields)

    @property
    def fast(self) -> bool:
        """Whether a row of this entity is its stored attributes read as its fields, and
        nothing else (:mod:`dynaorm.jobs.stored` reads them): no rule decodes it (but an
        encrypted one whose fields are left out) or skips it (a TTL, ``keeps``), its export
        hooks only leave attributes out, no previous layout shares its type name, no
        field-level kind."""
        return self._plain()

    @property
    def vectored(self) -> bool:
        """Whether the vector way reads this entity's rows (:mod:`dynaorm.jobs.vector`):
        as the fast way, or a versioned entity's whose only other rule is its versions
        (its latest copies read so, its version rows told apart by their sort key)."""
        return self._plain("versioned")

    def _plain(self, *also: str) -> bool:
        """:attr:`fast`, the rules named ``also`` allowed too."""
        spec = self.spec
        rules = [_rule(h) for h in (*self.hooks, *spec.rules.decoders, *spec.rules.keepers)]
        return (not spec.kinds and spec.previous is None and self.expires is None and all(
            r in (*_LEAVE_OUT, *also) and not (r == "encrypted" and not self.omitted)
            for r in rules))

    def keeps(self, item: Item) -> bool:
        """Whether the stored row ``item`` of this entity is exported: neither past its
        TTL nor kept from the results by a rule (:meth:`~dynaorm.schema.rules.Rule.keeps`),
        as reads skip it."""
        return not expired(item, self.expires) and self.spec.rules.keeps(item)

    def columns(self) -> list[Any]:
        from dynaorm.jobs.arrow import columns

        return columns(self.model)

    def values(self, item: Item) -> dict[str, Any] | None:
        """The field values of stored row ``item`` (``None``: its rules export nothing)."""
        for hook in self.hooks:
            found = hook(item)
            if found is None:
                return None
            item = found
        spec = self.spec
        if self.old is not None and spec.rules.before.stores(spec, item):
            data = spec.rules.before.values(spec, {a: v for a, v in item.items()
                                                   if a not in self.old})
            return self.model.model_validate(data).__dict__
        return self.model.model_validate(spec.decode_fields(item)).__dict__


# -- one task -------------------------------------------------------------------------------
class _Export:
    """One task of an export: its datasets, and the counts of what it read."""

    def __init__(self, table: Any, segment: int, options: Mapping[str, Any]) -> None:
        self.table, self.segment = table, segment
        self.history, self.decrypt = options["history"], options["encrypted"] == "decrypt"
        self.changes = options["kind"] == "incremental"
        self.view = options.get("view", "NEW_AND_OLD_IMAGES")
        self.readers = {cls: _Reader(spec_of(cls), self.decrypt) for cls in options["entities"]}
        self.s3 = _s3  # (the process's client, made when first needed)
        self.sink = _Sink(str(options["to"]), f"part-{segment:05d}.parquet", self.s3)
        self.parts: dict[str, _Part] = {}
        self.counts = _Counts()
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
        names = {m: (r.spec.type_name, c) for c, r in self.readers.items()
                 for m, _ in fast.values() if m is r.model}
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

    def part(self, name: str, cls: type[Any]) -> _Part:
        if name not in self.parts:
            cols = self.readers[cls].columns()
            if self.changes:
                from dynaorm.jobs.arrow import CHANGES

                cols = [*CHANGES, *(dataclasses.replace(c, nullable=True) for c in cols)]
            self.parts[name] = _Part(self.sink, name, cols)
        return self.parts[name]

    def prepare(self, items: list[Item]) -> None:
        """Ask for the key material of ``items`` first (``encrypted="decrypt"``)."""
        if self.decrypt and items:
            specs = [r.spec for r in self.readers.values()]
            self.table.db.driver.run(prepare_rows(specs, items), Operation(
                "export", (self.table.name,), tuple(self.readers)))

    def rows(self, items: list[tuple[str, Item]]) -> None:
        """Export stored items, each with where it was read."""
        self.prepare([i for _, i in items])
        for where, item in items:
            self.row(where, item)

    def records(self, batch: _Batch) -> None:
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

    def _changes(self, batch: _Batch) -> None:
        """Export a batch of an incremental export's lines, each a change."""
        records = [(w, _parse(line, w)) for w, line in (
            (batch.where(n), line) for n, line in enumerate(batch.lines))]
        self.prepare([r["NewImage"] for _, r in records if r.get("NewImage")])
        for where, record in records:
            self.change(where, record)

    def _vectors(self, batch: _Batch) -> _Batch:
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

    def _fast(self, batch: _Batch) -> list[Any]:
        """The batch's lines, each an object of its entity where the fast way reads it,
        else its JSON; :class:`ExportError` naming the first line that is not JSON."""
        if self.fast is None:
            return [_parse(line, batch.where(n)) for n, line in enumerate(batch.lines)]
        try:
            return self.fast(b"[" + b",".join(batch.lines) + b"]")
        except ValidationError:
            for n, line in enumerate(batch.lines):
                _parse(line, batch.where(n))  # (raises, naming it)
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
            values = self._key_fields(reader.spec, change[2], version) if (
                change is not None and removed) else reader.values(item)
        except _MALFORMED as exc:
            counts.fail(f"{where}: {cls.__name__} {self._key(item)}: {_short(exc)}")
            return
        if values is None:
            counts.skipped += 1
            return
        if change is not None:
            values = {**values, "_op": change[0], "_time": change[1]}
        name = f"{reader.spec.type_name}{'.history' if role == 'version' else ''}"
        self.part(name, cls).add(values, f"{where} {self._key(item)}", counts)

    def _unclaimed(self, item: Item) -> None:
        """Count a row no entity claims, by its type attribute's value, unless the
        table's own (a receipt, a Powertools record: never exported)."""
        if self.table.own_row(item):
            return
        name = item.get(self.table.type_attribute or "", {}).get("S", "?")
        self.counts.unclaimed[name] = self.counts.unclaimed.get(name, 0) + 1

    def _exported(self, reader: _Reader, role: str | None, item: Item, removed: bool
                  ) -> bool:
        """Whether an entity's row is exported: never a guard nor another rule's row
        (an audit row: whoever owns it), a version row only with history, and a row
        whose TTL has passed is, as reads, gone (unless the change removes it)."""
        if role in ("guard", "rule") or (role == "version" and not self.history):
            return False
        return removed or reader.keeps(item)

    def _key(self, item: Item) -> dict[str, str]:
        return {a: key_value(item[a]) for a in (self.table.pk, self.table.sk) if a and a in item}

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
        try:
            for part in self.parts.values():
                part.flush(self.counts)
                part.close()
        except BaseException:
            for part in self.parts.values():
                part.discard()
            raise
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


def export_part(table: Any, segment: int, segments: int, files: tuple[str, ...],
                options: Mapping[str, Any]) -> ExportReport:
    """Run one task of an export: scan segment ``segment`` of ``segments`` of ``table``,
    or read the data files ``files`` of an export to S3 (``options["kind"]``), and write
    its parts."""
    run = _Export(table, segment, options)
    scoped = _in_scope(table, options.get("scope"), options.get("scope_values"),
                       options["entities"])
    try:
        with _collector_paused():
            if options["kind"] == "scan":
                where = f"segment {segment} of {segments}"
                for page, _ in scan_pages(table, None, None, "export", (segment, segments)):
                    run.rows([(where, item) for item in page
                              if scoped is None or scoped(item)])
            else:
                for url in files:
                    for batch in _records(run.s3(), url):
                        if scoped is not None:
                            batch = batch.only(n for n, line in enumerate(batch.lines)
                                               if scoped(_image(line, batch.where(n))))
                        run.records(batch)
            return run.finish()
    except BaseException:
        run.discard()
        raise


def _in_scope(table: Any, prefixes: Mapping[str, tuple[str, bool]] | None,
              values: Mapping[str, Any] | None = None, classes: Sequence[Any] = ()
              ) -> Callable[[Item | None], bool] | None:
    """Whether a stored item is in an export's scope (``None``: no scope): its partition
    key starts with its entity's proven prefix (:func:`scope_prefixes`; exact: is it),
    and its stored scope fields (``values``: the scope as given) are the scope's (a
    stale key's row, whose key parses into the scope while its fields name another
    tenant, is not: :meth:`~dynaorm.core.scope.Scope.stored`, as a scoped read skips
    it)."""
    if prefixes is None:
        return None
    kind, pk = table.type_attribute, table.pk
    anyone = sorted(set(prefixes.values()))
    held = None if not values else Scope(values)
    specs = {spec_of(c).type_name: spec_of(c) for c in classes}

    def stored(name: Any, item: Item) -> bool:
        if held is None:
            return True
        spec = specs.get(name) if isinstance(name, str) else None
        return all(held.stored(s, item) for s in (
            [spec] if spec is not None else specs.values()))

    def scoped(item: Item | None) -> bool:
        key = (item or {}).get(pk, {}).get("S")
        if not isinstance(key, str):
            return False
        name = (item or {}).get(kind, {}).get("S") if kind is not None else None
        mine = [prefixes[name]] if isinstance(name, str) and name in prefixes else (
            anyone if kind is None else [])
        return any(key == p if exact else key.startswith(p) for p, exact in mine) and (
            stored(name, item or {}))
    return scoped


def _image(line: bytes, where: str) -> Item | None:
    """The item a data file's line is about (a full export's ``Item``; a change's new
    image, else its old one, else its keys)."""
    record = _parse(line, where)
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


@dataclass(frozen=True)
class _Batch:
    """Lines of one data file read together, and their numbers in it (where each was
    read is made only for the lines that need it: the vector way's need none)."""

    name: str
    numbers: Sequence[int]
    lines: list[bytes]

    def where(self, n: int) -> str:
        """Where line ``n`` of the batch was read: its file and line."""
        return f"{self.name} line {self.numbers[n]}"

    def only(self, kept: Iterable[int]) -> _Batch:
        """The batch's lines ``kept`` (indices, in order)."""
        kept = list(kept)
        return _Batch(self.name, [self.numbers[n] for n in kept],
                      [self.lines[n] for n in kept])


def _records(s3: Any, url: str) -> Iterator[_Batch]:
    """The lines of one data file, in batches of :data:`LINES`."""
    name = url.partition("#")[0]
    numbers: list[int] = []
    lines: list[bytes] = []
    for more_numbers, more in _lines(s3, url):
        numbers += more_numbers
        lines += more
        while len(lines) >= LINES:
            yield _Batch(name, numbers[:LINES], lines[:LINES])
            numbers, lines = numbers[LINES:], lines[LINES:]
    if lines:
        yield _Batch(name, numbers, lines)


# -- what an export format's job needs (Staged) ---------------------------------------------
def datasets_of(job: Job) -> list[tuple[str, Any, tuple[str, ...]]]:
    """Each dataset ``job`` writes: its name, the model's ``pyarrow.Schema`` of its rows
    and the fields of its key (a version row's: with ``version``)."""
    from dynaorm.jobs.arrow import schema_of

    options = dict(job.template.options)
    decrypt = options["encrypted"] == "decrypt"
    out = []
    for cls in options["entities"]:
        spec = spec_of(cls)
        keys = tuple(dict.fromkeys((*spec.pk.fields, *(spec.sk.fields if spec.sk else ()))))
        cols = schema_of(_Reader(spec, decrypt).columns())
        out.append((spec.type_name, cols, keys))
        if options["history"] and spec.versioned:
            out.append((f"{spec.type_name}.history", cols, (*keys, "version")))
    return out


def source_of(job: Job) -> tuple[str, str, str, str]:
    """What ``job`` reads: its kind (``"scan"``, ``"full"``, ``"incremental"``), an id
    (a DynamoDB export's ARN, else its source URL; a scan: a new id), the ISO time its
    rows are as of (an incremental export's end) and an incremental export's start."""
    options = dict(job.template.options)
    if options["kind"] == "scan":
        return "scan", f"scan-{uuid.uuid4().hex}", datetime.now(UTC).isoformat(), ""
    source = str(options.get("source", ""))
    s3, (bucket, key) = _s3(), _split(source)
    where = key if key.endswith(".json") else f"{key.rstrip('/')}/manifest-summary.json"
    summary = json.loads(_get(s3, bucket, where))
    as_of = (summary.get("exportToTime") or summary.get("exportTime")
             or summary.get("endTime") or "")
    return (options["kind"], str(summary.get("exportArn") or source), _iso(as_of),
            _iso(summary.get("exportFromTime") or ""))


def _iso(value: Any) -> str:
    """A manifest's time (ISO text, or seconds since the epoch) as ISO 8601 UTC text."""
    if value in ("", None):
        return ""
    if isinstance(value, int | float):
        return datetime.fromtimestamp(value, UTC).isoformat()
    return datetime.fromisoformat(str(value).replace("Z", "+00:00")).astimezone(UTC).isoformat()


def read_parts(to: str, name: str, parts: int) -> Iterator[Any]:
    """The parts ``part-00000`` to ``part-<parts - 1>`` of dataset ``name`` an export
    wrote under ``to`` (a directory or an ``s3://`` URL), each a ``pyarrow.Table`` (a
    part a task left out, finding nothing: none)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    s3 = _s3() if to.startswith("s3://") else None
    for n in range(parts):
        part = f"{to.rstrip('/')}/{name}/part-{n:05d}.parquet"
        if s3 is None:
            if Path(part).exists():
                yield pq.read_table(part)
            continue
        from botocore.exceptions import ClientError

        bucket, key = _split(part)
        try:
            body = s3.get_object(Bucket=bucket, Key=key)["Body"].read()
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") in ("NoSuchKey", "404"):
                continue
            raise ExportError(f"{part} cannot be read: {exc}") from exc
        yield pq.read_table(pa.BufferReader(body))
