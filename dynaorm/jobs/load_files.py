"""What a bulk load reads and keeps: the entities of its source (:func:`entities_of`:
entity objects, a Parquet dataset or a folder of them, local or ``s3://``, a pyiceberg
table, or a DynamoDB export, each entity's row or latest copy as a new object, one at a
time), and what it keeps in S3 under ``<s3>/<name>/`` (:class:`LoadFiles`): its state
(``load.json``), each round's input parts and their indexes (written by :class:`Parts`,
read back by :func:`entity_groups`) and the service's report of each round
(:class:`ServiceReport`)."""

import gzip
import json
import os
import shutil
import tempfile
from collections.abc import Iterable, Iterator, Mapping, Sequence
from decimal import Decimal
from pathlib import Path
from typing import Any

from dynaorm._types import Item
from dynaorm.client.table import Table
from dynaorm.core.load import ERROR, FAILED, Loaded, fresh, input_record
from dynaorm.errors import DynaormError
from dynaorm.jobs.export_files import (
    ExportError,
    data_lines,
    listed,
    read_source,
    s3_client,
    split_url,
)
from dynaorm.protocol.hooks import Operation
from dynaorm.schema.entity import Entity, prepare_rows, spec_of
from dynaorm.values.keys import key_id, key_value
from dynaorm.values.state import undeclared
from dynaorm.wire import decode, render

_TRUSTED = frozenset({"COMPLETED", "COMPLETED_WITH_ERRORS"})
#: an entity of a part: its class and its records (as the load rendered them)
Group = tuple[type[Entity], list[dict[str, Any]]]


class LoadFiles:
    """A load's table, name and files in S3 (see the module)."""

    def __init__(self, table: Table, s3: str, name: str, part_rows: int):
        self.table, self.name, self.part_rows = table, name, part_rows
        self.bucket, prefix = split_url(s3)
        self.prefix = f"{prefix.strip('/')}/{name}" if prefix.strip("/") else name
        self.s3 = s3_client()

    def key(self, rest: str) -> str:
        return f"{self.prefix}/{rest}"

    def put(self, rest: str, body: bytes) -> None:
        self.s3.put_object(Bucket=self.bucket, Key=self.key(rest), Body=body)

    def listed(self, rest: str) -> list[str]:
        return listed(self.s3, self.bucket, self.key(rest))

    def lines(self, key: str) -> Iterator[bytes]:
        for _, chunk in data_lines(self.s3, f"s3://{self.bucket}/{key}"):
            yield from chunk

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


class Parts:
    """A round's input parts and their indexes, written a part at a time."""

    def __init__(self, files: LoadFiles, number: int):
        self.files, self.number = files, number
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
        self.add_records(type(loaded.obj), [input_record(loaded, n) for n in range(len(
            loaded.plan.ops))])

    def add_records(self, cls: type[Entity], records: Sequence[Mapping[str, Any]]) -> None:
        if self.data is None:
            self._open()
        self.data.write(b"".join(render(dict(r)) + b"\n" for r in records))
        self.index.write(json.dumps([spec_of(cls).type_name, len(records)]).encode() + b"\n")
        self.rows += len(records)
        self.in_part += len(records)
        self.entities += 1
        if self.in_part >= self.files.part_rows:
            self._flush()

    def _flush(self) -> None:
        if self.data is None:
            return
        self.data.close()
        self.index.close()
        name = f"part-{self.part:05d}.json.gz"
        self.files.put(f"round-{self.number}/input/{name}", (self.dir / "data.gz").read_bytes())
        self.files.put(f"round-{self.number}/index/{name}", (self.dir / "index.gz").read_bytes())
        self.part += 1
        self.in_part, self.data, self.index = 0, None, None

    def close(self) -> None:
        self._flush()
        shutil.rmtree(self.dir)

    def summary(self) -> dict[str, Any]:
        return {"round": self.number, "parts": self.part, "rows": self.rows,
                "entities": self.entities}


def entity_groups(files: LoadFiles, number: int, part: int) -> Iterator[Group]:
    """Each entity of a part with its records, read back from S3 (index and data in
    step)."""
    classes = {spec_of(c).type_name: c for c in files.table.entities.values()}
    name = f"part-{part:05d}.json.gz"
    data = files.lines(files.key(f"round-{number}/input/{name}"))
    for line in files.lines(files.key(f"round-{number}/index/{name}")):
        type_name, count = json.loads(line)
        records = [decode(next(data)) for _ in range(count)]
        cls = classes.get(type_name)
        if cls is None:
            raise DynaormError(f"load {files.name!r}: its input holds entity {type_name!r}, "
                               f"which table {files.table.name!r} no longer has")
        yield cls, records


def key_of(table: Table, item: Item) -> Item:
    """The table key of ``item`` (wire form)."""
    return {a: item[a] for a in (table.pk, table.sk) if a in item}


class ServiceReport:
    """A round's report, read: the failed rows by key, the parts it cannot place."""

    def __init__(self, files: LoadFiles, number: int):
        self.failed: dict[Any, tuple[str, Any]] = {}
        self.unreadable_parts: set[int] = set()
        self.errors = 0
        self.readable = True
        for key in files.listed(f"round-{number}/report"):
            if not key.endswith((".json.gz", ".json")) or key.endswith("manifest.json"):
                continue
            try:  # (bytes from S3: a file or record that is not the report's, not trusted)
                for line in files.lines(key):
                    self.record(files, decode(line))
            except (ExportError, ValueError, TypeError, AttributeError, KeyError,
                    DynaormError):
                self.readable = False

    def trusted(self, described: Mapping[str, Any], rows: int) -> bool:
        """Whether the report can be taken at its word: the operation (``described``)
        completed, the report read whole, and its counts the operation's (every one of the
        ``rows`` processed, each failure reported)."""
        return described["BulkOperationStatus"] in _TRUSTED and self.readable and int(
            described.get("ProcessedItemCount") or 0) == rows and (
            self.errors == int(described.get("FailedItemCount") or 0))

    def record(self, files: LoadFiles, record: dict[str, Any]) -> None:
        if not isinstance(record, dict):
            raise ValueError("a report record is a JSON object")
        kind, item = record.get("OutputType"), record.get("Item")
        self.errors += kind == "ERROR"
        if not isinstance(item, dict) or kind not in ("ERROR", "CONDITION_CHECK_FAILURE"):
            where = str(record.get("InputObject") or "")
            name = where.rsplit("/", 1)[-1]
            if name.startswith("part-") and name[5:10].isdigit():
                self.unreadable_parts.add(int(name[5:10]))
            else:
                self.readable = False
            return
        ident = key_id(key_of(files.table, item))
        if kind == "CONDITION_CHECK_FAILURE":  # (what holds the key is read back)
            self.failed[ident] = (FAILED, None)
        else:
            self.failed[ident] = (ERROR, record.get("ErrorMessage") or record.get(
                "ErrorCode") or "refused")


def described_as(source: Any) -> str | None:
    """The source by its path, URL or Iceberg table name (``None``: objects, which the
    load cannot name)."""
    if isinstance(source, str | os.PathLike):
        return os.fspath(source)
    if hasattr(source, "scan") and hasattr(source, "name"):  # (a pyiceberg table)
        return f"iceberg:{source.name()}"
    return None


def entities_of(table: Table, source: Any, entity: type[Entity] | None,
                entities: Iterable[type[Entity]] | None, dropped: dict[str, int]
                ) -> Iterator[Entity]:
    """The entity objects of ``source`` (see :func:`~dynaorm.jobs.load`), one at a time."""
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
        for batch in source.scan().to_arrow_batch_reader():
            yield from _rows(entity, batch)
    else:
        yield from _objects(source)


def _objects(source: Iterable[Any]) -> Iterator[Entity]:
    """The entity objects of an iterable; :class:`DynaormError` for another object."""
    for obj in source:
        if not isinstance(obj, Entity):
            raise DynaormError(f"load: the source holds {obj!r}, not an entity object")
        yield obj


def _from_export(table: Table, url: str, classes: list[type[Entity]],
                 dropped: dict[str, int]) -> Iterator[Entity]:
    """The entities of a DynamoDB export: each entity's row or latest copy, as a new
    object (its guards and version rows are made anew); the attributes its model does not
    declare counted in ``dropped``."""
    files, kind, _ = read_source(url)
    if kind != "full":
        raise DynaormError(f"load: {url} is an incremental export: load a full one")
    specs = [spec_of(c) for c in classes]
    s3 = s3_client()
    for data in files:
        for _, chunk in data_lines(s3, data):
            for line in chunk:
                obj = _exported(table, specs, data, line, dropped)
                if obj is not None:
                    yield obj


def _exported(table: Table, specs: list[Any], data: str, line: bytes,
              dropped: dict[str, int]) -> Entity | None:
    """The entity of an export's line (of data file ``data``), as a new object (its key
    material asked for first); ``None``: a row of no entity of ``specs``, or a version
    row (made anew)."""
    item = decode(line).get("Item")
    if not isinstance(item, dict):
        raise DynaormError(f"load: {data}: a line without an Item")
    spec = next((s for s in specs if s.owns(item)), None)
    if spec is None:
        return None
    parsed = spec.rules.sort_keys.parse(key_value(item.get(spec.table.sk or "", {"S": ""})))
    if parsed is not None and parsed[0]:
        return None
    if spec.rules.preparers:
        table.db.driver.run(prepare_rows((spec,), (item,)), Operation(
            "load", (table.name,), (spec.cls,)))
    for attr in undeclared(spec, item).keys() - {table.revision_attribute}:
        dropped[f"{spec.name}.{attr}"] = dropped.get(f"{spec.name}.{attr}", 0) + 1
    return fresh(spec.cls, item)


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
        bucket, prefix = split_url(path)
        return sorted(f"s3://{bucket}/{k}" for k in listed(s3_client(), bucket, prefix))
    local = Path(path)
    if local.is_file():
        return [str(local)]
    return sorted(str(p) for p in local.rglob("*.parquet"))


class _local:
    """A Parquet file where ``pyarrow`` reads it: itself, or an S3 object downloaded into
    a temporary file (removed after)."""

    def __init__(self, path: str):
        self.path: str = path
        self.temp: str | None = None

    def __enter__(self) -> str:
        if not self.path.startswith("s3://"):
            return self.path
        bucket, key = split_url(self.path)
        fd, name = tempfile.mkstemp(suffix=".parquet", prefix="dynaorm-load-")
        os.close(fd)
        self.temp = name
        s3_client().download_file(bucket, key, name)
        return name

    def __exit__(self, *exc: object) -> None:
        if self.temp is not None:
            os.unlink(self.temp)


def _rows(cls: type[Entity], batch: Any) -> Iterator[Entity]:
    """The objects of an Arrow record batch of ``cls``'s columns (as an export writes
    them: maps as pairs, JSON text for fields of no Arrow type); a batch without a column
    of an ``Encrypted`` field refused (its default would be stored in its place)."""
    from dynaorm.jobs.arrow import columns

    json_fields = {c.name for c in columns(cls) if c.json}
    kinds = {f.name: f.type for f in batch.schema if f.name in cls.model_fields}
    if lost := sorted(set(spec_of(cls).encrypted.values()) - kinds.keys()):
        raise DynaormError(f"load: {cls.__name__}'s source has no column of its Encrypted "
                           f"field(s) {', '.join(lost)} (their defaults would be stored): an "
                           "export written with encrypted='omit' cannot be loaded back; "
                           "export with encrypted='decrypt'")
    for row in batch.to_pylist():
        values = {n: _plain(k, row[n]) for n, k in kinds.items()}
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

