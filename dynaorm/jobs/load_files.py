"""What a bulk load keeps in S3 under ``<s3>/<name>/`` (:class:`LoadFiles`): its state
(``load.json``), each round's input parts and their indexes (written by :class:`Parts`,
read back by :func:`entity_groups`) and the service's report of each round
(:class:`ServiceReport`)."""

import gzip
import json
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from dynaorm._types import Item
from dynaorm.client.table import Table
from dynaorm.core.load import ERROR, FAILED, Loaded, input_record
from dynaorm.errors import DynaormError
from dynaorm.jobs.export_files import ExportError, data_lines, listed, s3_client, split_url
from dynaorm.schema.entity import Entity, spec_of
from dynaorm.values.keys import key_id
from dynaorm.wire import decode, render

_TRUSTED = frozenset({"COMPLETED", "COMPLETED_WITH_ERRORS"})
#: an entity of a part: its class and its records (as the load rendered them)
Group = tuple[type[Entity], list[dict[str, Any]]]


class LoadFiles:
    """A load's table, name and files in S3 (see the module)."""

    def __init__(self, table: Table, s3: str, name: str, part_rows: int) -> None:
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

    def __init__(self, files: LoadFiles, number: int) -> None:
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
        self.part, self.in_part, self.data, self.index = self.part + 1, 0, None, None

    def close(self) -> None:
        self._flush()
        for leftover in self.dir.iterdir():
            leftover.unlink()
        self.dir.rmdir()

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
    return {a: item[a] for a in (table.pk, table.sk) if a is not None and a in item}


class ServiceReport:
    """A round's report, read: the failed rows by key, the parts it cannot place."""

    def __init__(self, files: LoadFiles, number: int) -> None:
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
