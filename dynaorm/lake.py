"""The analytics lake (contract 22): an export's datasets committed as Apache Iceberg tables.

``dynaorm.jobs.export(table, to, format="iceberg", catalog=..., namespace=...)`` runs the
export's tasks as a Parquet export does (each writes its data files under ``to``, typed
from the model); then the job's merge calls :func:`commit`, which makes each dataset an
Iceberg table ``<namespace>.<type name>`` (``<type name>_history`` for version rows) in
``catalog`` (a pyiceberg catalog, or its name in pyiceberg's configuration), one commit a
table:

- a full export (a scan, or a DynamoDB full export) replaces the table's rows: readers see
  the old rows or the new, never a mix;
- an incremental export applies its change set by the entity's key: every key it names is
  deleted and the last new image of each key not removed appended, in one commit, so the
  table equals the live entity as of the export's end;
- each commit records the export it applied (``dynaorm.export``, ``dynaorm.as-of`` and
  ``dynaorm.kind`` in its snapshot summary and the table's properties): an export applied
  already changes nothing, and a change set older than what the table holds, or starting
  after it (a window missed), is :class:`LakeError` and changes nothing;
- a column the model gained is added to the table (schema evolution; old rows read it as
  null), in the same commit;
- two merges at once: Iceberg's optimistic commit lets one win; the other reloads the
  table and applies its change again on top (or finds it applied), at most
  :data:`RETRIES` times, then fails with :class:`LakeError`, the table as the winner left it.

Types are the Parquet datasets' (:mod:`dynaorm.tools.arrow`), but a duration, which Iceberg
has not, is its microseconds (``long``). pyiceberg (``dynaorm[lake]``) writes the data
files; reading the staged parts is the caller's (``read``), so this module needs no S3.
"""

from __future__ import annotations

import contextlib
import functools
import os
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from dynaorm.errors import DynaormError

__all__ = ["RETRIES", "Dataset", "LakeError", "LakeJob", "Source", "commit", "exporting",
           "lake_job", "lake_schema", "load_catalog"]

#: how many times a merge that lost the race to commit applies its change again
RETRIES = 8
#: the snapshot summary's and table properties' keys a commit records its export under
EXPORT, AS_OF, KIND = "dynaorm.export", "dynaorm.as-of", "dynaorm.kind"


class LakeError(DynaormError):
    """An export cannot be committed to the lake: a change set out of order (older than
    what the table holds, or starting after it), a catalog that cannot be loaded, or a
    commit that lost the race :data:`RETRIES` times. The table is left as it was."""


@dataclass(frozen=True)
class LakeJob:
    """An export's :class:`~dynaorm.jobs.Job` whose merge then commits to the lake: its
    tasks are the export's, its merged report has ``tables``; every other attribute is
    the export job's."""

    job: Any
    finish: Callable[[Any], Any]

    def tasks(self, parallel: int | None = None) -> list[Any]:
        """The export's tasks."""
        return list(self.job.tasks(parallel))

    def run(self, task: Any) -> tuple[int, Any]:
        """Run one of the export's tasks here (it writes its data files)."""
        return tuple(self.job.run(task))

    def merge(self, results: Iterable[tuple[int, Any]]) -> Any:
        """The tasks' merged report, once each dataset is committed (one commit a table)."""
        return self.finish(self.job.merge(results))

    def __getattr__(self, name: str) -> Any:
        return getattr(self.job, name)


@dataclass(frozen=True)
class Dataset:
    """One dataset of an export and its Iceberg table."""

    name: str
    """The staged dataset's name (``"user"``, ``"order.history"``)."""
    table: str
    """The Iceberg table's name in the namespace (``"user"``, ``"order_history"``)."""
    schema: Any
    """The model's ``pyarrow.Schema`` of its rows (without ``_op`` and ``_time``)."""
    keys: tuple[str, ...]
    """The fields that make a row's key (a version row's: with ``version``)."""


@dataclass(frozen=True)
class Source:
    """What an export read: its kind, an id, and the time its rows are as of."""

    kind: str
    """``"scan"``, ``"full"`` or ``"incremental"``."""
    export: str
    """The export's id (a DynamoDB export's ARN, a scan job's id)."""
    as_of: str
    """ISO 8601 UTC time the rows are as of (an incremental export's end)."""
    since: str = ""
    """An incremental export's start (``""``: not known)."""


def exporting(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` (:func:`dynaorm.tools.export.export`), whose ``format="iceberg"`` jobs
    commit their datasets as :func:`lake_job` says (``dynaorm.jobs.export``); the rest
    it needs is of ``fn``'s module."""
    module = sys.modules[fn.__module__]

    @functools.wraps(fn)
    def export(table: Any, to: str | os.PathLike[str], **options: Any) -> Any:
        job = module.export(table, to, **options)
        if options.get("format") != "iceberg":
            return job
        return lake_job(job, options["catalog"], options["namespace"],
                        module.datasets_of(job), module.source_of(job), functools.partial(
                            module.read_parts, os.fspath(to), parts=job.template.segments))
    return export


def lake_job(job: Any, catalog: Any, namespace: str,
             datasets: Iterable[tuple[str, Any, tuple[str, ...]]],
             source: tuple[str, str, str, str], read: Callable[[str], Iterator[Any]]
             ) -> LakeJob:
    """``job`` (an export's) whose merge then commits its ``datasets`` (name, schema, key
    fields) read from ``source`` (kind, id, as of, since) to Iceberg tables (``read``:
    a dataset's staged parts): its report's ``tables`` say what each commit appended."""
    found = [Dataset(name, name.replace(".history", "_history"), schema, keys)
             for name, schema, keys in datasets]
    if len({d.table for d in found}) != len(found):
        raise LakeError(f"export: two datasets of {[d.name for d in found]} would be one "
                        "Iceberg table (a type name ending in '_history')")
    read_from = Source(*source)

    def finish(report: Any) -> Any:
        return replace(report, tables=commit(catalog, namespace, found, read_from, read))
    return LakeJob(job, finish)


def lake_schema(schema: Any) -> Any:
    """``schema`` as Iceberg holds it: durations as their microseconds (``int64``)."""
    import pyarrow as pa  # dynaorm[lake]

    return pa.schema([pa.field(f.name, _lake_type(f.type), f.nullable) for f in schema])


def _lake_type(kind: Any) -> Any:
    import pyarrow as pa

    if pa.types.is_duration(kind):
        return pa.int64()
    if pa.types.is_struct(kind):
        return pa.struct([pa.field(f.name, _lake_type(f.type), f.nullable) for f in kind])
    if pa.types.is_map(kind):
        return pa.map_(_lake_type(kind.key_type), _lake_type(kind.item_type))
    if pa.types.is_list(kind):
        return pa.list_(_lake_type(kind.value_type))
    return kind


def commit(catalog: Any, namespace: str, datasets: Sequence[Dataset], source: Source,
           read: Callable[[str], Iterator[Any]]) -> dict[str, int]:
    """Commit each dataset (its staged parts: ``read(name)`` gives them as
    ``pyarrow.Table``) to its Iceberg table; returns the rows each commit appended, by
    table (``0``: nothing to apply, or applied already)."""
    catalog = _catalog(catalog)
    with contextlib.suppress(_already()):
        catalog.create_namespace(namespace)
    return {f"{namespace}.{d.table}": _apply(catalog, (namespace, d.table), d, source, read)
            for d in datasets}


def _catalog(catalog: Any) -> Any:
    return load_catalog(catalog) if isinstance(catalog, str) else catalog


def load_catalog(catalog: str, warehouse: str | None = None) -> Any:
    """The pyiceberg catalog ``catalog`` names: a URI (``sqlite:///lake.db``,
    ``postgresql://...``, ``http(s)://`` for a REST catalog such as S3 Tables' or Glue's
    Iceberg endpoint, ``thrift://`` for a Hive metastore), else its name in pyiceberg's
    configuration (``~/.pyiceberg.yaml``, ``PYICEBERG_CATALOG__<NAME>__...``; a URI's
    catalog is named ``"dynaorm"``, which a SQL catalog keeps beside its tables);
    ``warehouse``: where its tables' files go (``file://...``, ``s3://...``), where the
    catalog does not say. :class:`LakeError` when it cannot be loaded."""
    from pyiceberg import catalog as catalogs

    uri = "://" in catalog
    props = {**({"uri": catalog} if uri else {}),
             **({"warehouse": warehouse} if warehouse else {})}
    try:
        return catalogs.load_catalog("dynaorm" if uri else catalog, **props)
    except (ValueError, KeyError, OSError, NotImplementedError, ImportError) as exc:
        raise LakeError(f"the lake's catalog {catalog!r} cannot be loaded: {exc}") from exc


def _already() -> type[Exception]:
    from pyiceberg.exceptions import NamespaceAlreadyExistsError

    return NamespaceAlreadyExistsError


def _apply(catalog: Any, ident: tuple[str, str], ds: Dataset, source: Source,
           read: Callable[[str], Iterator[Any]]) -> int:
    """Commit one dataset, again from the fresh table each time a commit loses the race."""
    from pyiceberg.exceptions import CommitFailedException

    schema = lake_schema(ds.schema)
    for _ in range(RETRIES):
        table = _own_retries(catalog.create_table_if_not_exists(ident, schema=schema))
        if not _due(table, ds, source):
            return 0
        tx = table.transaction()
        known = {f.name for f in table.schema().fields}
        if any(f.name not in known for f in schema):  # (a field the model gained)
            with tx.update_schema() as update:
                update.union_by_name(schema)
        props = {EXPORT: source.export, AS_OF: source.as_of, KIND: source.kind}
        tx.set_properties(props)
        target = tx.table_metadata.schema().as_arrow()
        rows = (_replace if source.kind != "incremental" else _merge)(
            tx, target, ds, read(ds.name), props)
        try:
            tx.commit_transaction()
        except CommitFailedException:
            continue
        return rows
    raise LakeError(f"{'.'.join(ident)}: {RETRIES} commits lost the race to other writers; "
                    f"export {source.export} is not applied (run the merge again)")


def _own_retries(table: Any) -> Any:
    """``table`` whose commits pyiceberg does not retry itself (here, in memory: the
    table's properties are left alone). Its retry replays the transaction's snapshots on
    the new one; :func:`_apply` instead asks again whether the export is due (a rival may
    have applied it) and plans its deletes on the rows as they are now."""
    metadata = table.metadata
    table.metadata = metadata.model_copy(update={"properties": {
        **metadata.properties, "commit.retry.num-retries": "0"}})
    return table


def _due(table: Any, ds: Dataset, source: Source) -> bool:
    """Whether ``source`` is still to apply to ``table`` (``False``: applied already);
    :class:`LakeError` for a change set out of order."""
    applied = {s.summary.additional_properties.get(EXPORT) for s in table.snapshots()
               if s.summary is not None}
    props = table.properties
    if source.export in applied or props.get(EXPORT) == source.export:
        return False
    held = props.get(AS_OF, "")
    if source.kind == "incremental" and held:
        if source.as_of < held:
            raise LakeError(f"{ds.table}: the change set of {source.export} ends at "
                            f"{source.as_of}, before the table's rows (as of {held}, "
                            f"{props.get(EXPORT)}): apply change sets in order")
        if source.since and source.since > held:
            raise LakeError(f"{ds.table}: the change set of {source.export} starts at "
                            f"{source.since}, after the table's rows (as of {held}): the "
                            "changes between are missing; apply the export before it first")
    return True


def _fit(part: Any, target: Any) -> Any:
    """A staged part as the table's columns (a column the part has not: null)."""
    import pyarrow as pa

    n = part.num_rows
    arrays = [part.column(f.name) if f.name in part.column_names else pa.nulls(n, f.type)
              for f in target]
    fields = [pa.field(f.name, f.type, f.nullable) for f in target]
    return pa.Table.from_arrays(arrays, names=[f.name for f in target]).cast(
        pa.schema(fields))


def _replace(tx: Any, target: Any, ds: Dataset, parts: Iterable[Any],
             props: Mapping[str, str]) -> int:
    """A full export: every row deleted, the parts appended (one part at a time)."""
    from pyiceberg.expressions import AlwaysTrue

    tx.delete(AlwaysTrue(), snapshot_properties=dict(props))
    rows = 0
    for part in parts:
        if part.num_rows:
            tx.append(_fit(part, target), snapshot_properties=dict(props))
            rows += part.num_rows
    return rows


def _merge(tx: Any, target: Any, ds: Dataset, parts: Iterable[Any],
           props: Mapping[str, str]) -> int:
    """An incremental export: every key it names deleted, the last new image of each key
    (by ``_time``, then as read) not removed appended."""
    import pyarrow as pa
    import pyarrow.compute as pc
    from pyiceberg.expressions import AlwaysTrue
    from pyiceberg.table.upsert_util import create_match_filter

    found = [p for p in parts if p.num_rows]
    if not found:
        return 0
    changes = pa.concat_tables(found, promote_options="default")
    changes = changes.append_column("_n", pa.array(range(changes.num_rows), pa.int64()))
    changes = changes.sort_by([("_time", "ascending"), ("_n", "ascending")])
    changes = changes.set_column(changes.column_names.index("_n"), "_n",
                                 pa.array(range(changes.num_rows), pa.int64()))
    if ds.keys:
        last = changes.group_by(list(ds.keys)).aggregate([("_n", "max")])
        changes = changes.take(last.column("_n_max"))
        match = create_match_filter(changes.select(list(ds.keys)), list(ds.keys))
    else:  # (one row: the last change is all)
        changes, match = changes.slice(changes.num_rows - 1), AlwaysTrue()
    tx.delete(match, snapshot_properties=dict(props))
    upserts = changes.filter(pc.not_equal(changes.column("_op"), "remove"))
    if upserts.num_rows:
        tx.append(_fit(upserts, target), snapshot_properties=dict(props))
    return int(upserts.num_rows)
