"""How an export's task reads and where it writes: the rows of one entity
(:class:`RowReader`: its rules' export hooks, then as a read decodes them, as the fields of
its dataset), its destination (:class:`Sink`: a directory or an ``s3://`` URL, each part
put in place whole), one dataset's part (:class:`Part`: rows buffered, written as row
groups) and the task's counts (:class:`Counts`)."""

import gc
import os
import tempfile
import uuid
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, create_model

from dynaorm.jobs.export_files import Item, s3_client, split_url
from dynaorm.schema.spec import EntitySpec
from dynaorm.values.ttl import expired

#: rows a part buffers before it writes them (one row group): a task's memory is bounded
#: by this, not by the size of its segment or file
BATCH = 20_000
#: the failures a task lists by name (it counts them all)
LISTED = 100


class Counts:
    """A task's counts, made into its :class:`~dynaorm.jobs.ExportReport` at the end."""

    def __init__(self) -> None:
        self.unclaimed: dict[str, int] = {}
        self.failed = self.scanned = self.skipped = 0
        self.failures: list[str] = []

    def fail(self, why: str) -> None:
        self.failed += 1
        if len(self.failures) < LISTED:
            self.failures.append(why)


class Sink:
    """The export's destination: a directory, or an ``s3://`` URL (a part goes through a
    local temporary file, uploaded whole)."""

    def __init__(self, to: str, part: str):
        self.to, self.part = to.rstrip("/"), part
        self.s3 = s3_client() if to.startswith("s3://") else None

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
        bucket, key = split_url(f"{self.to}/{name}/{self.part}")
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
            bucket, prefix = split_url(self.to)
            self.s3.delete_objects(Bucket=bucket, Delete={"Objects": [
                {"Key": f"{prefix}/{name}/{self.part}".lstrip("/")} for name in names]})


class Part:
    """One dataset's part file of a task: rows buffered, written as row groups."""

    def __init__(self, sink: Sink, name: str, cols: list[Any]):
        self.sink, self.name, self.cols = sink, name, cols
        self.rows: list[dict[str, Any]] = []
        self.where: list[str] = []
        #: rows read as Arrow tables already (the vector way), and the rows before them
        self.tables: list[Any] = []
        self.held = 0
        self.written = 0
        self.temp: Path | None = None
        self.writer: Any = None

    def add(self, row: dict[str, Any], where: str, report: Counts) -> None:
        self.rows.append(row)
        self.where.append(where)
        if len(self.rows) + self.held >= BATCH:
            self.flush(report)

    def add_table(self, table: Any, report: Counts) -> None:
        """Add rows read as a table of the part's columns already (the vector way)."""
        self._settle(report)
        self.tables.append(table)
        self.held += table.num_rows
        if self.held >= BATCH:
            self.flush(report)

    def _settle(self, report: Counts) -> None:
        """The buffered rows as a table (those a column refuses counted as failures)."""
        from dynaorm.jobs.arrow import table_of

        if self.rows:
            table, bad = table_of(self.cols, self.rows)
            for i, why in sorted(bad.items()):
                report.fail(f"{self.where[i]}: {why}")
            self.tables.append(table)
            self.held += table.num_rows
            self.rows, self.where = [], []

    def flush(self, report: Counts) -> None:
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


#: the rules (by name) whose export hooks only leave attributes out, and, with encrypted
#: fields left out, whose decoding is nothing (an entity with no other rule is read the
#: fast way)
_LEAVE_OUT = ("revision", "indexes", "encrypted")


def _rule(hook: Any) -> str | None:
    """The name of the rule whose bound method ``hook`` is."""
    return getattr(getattr(hook, "__self__", None), "name", None)


def _model(spec: EntitySpec, omitted: frozenset[str]) -> type[BaseModel]:
    """The model of an entity's rows as exported: its class, or (fields ``omitted``) one
    of the other fields."""
    if not omitted:
        return spec.cls
    fields: dict[str, Any] = {n: (f.annotation, f) for n, f in spec.cls.model_fields.items()
                              if n not in omitted}
    return create_model(spec.name, __config__=ConfigDict(populate_by_name=True), **fields)


class RowReader:
    """How an export reads the rows of one entity: its rules' export hooks, then as a read
    decodes them (encrypted fields left out, or opened), as the dataset's field values."""

    def __init__(self, spec: EntitySpec, decrypt: bool):
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
        self.model = _model(spec, self.omitted)

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
