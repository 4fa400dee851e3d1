"""The analytics lake (contract 22): an export's datasets committed as Apache Iceberg tables.

``dynaorm.jobs.export(..., format="iceberg")`` finds the lake's export format
(:data:`dynaorm.lake.ICEBERG`, :mod:`dynaorm.lake.format`) by its entry point and runs the
export's tasks as a Parquet export does (each writes its data files under ``to``, typed
from the model); the job's merge then calls :func:`commit`, which makes each dataset an
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
  already changes nothing; an export older than the table's rows (a full one, or a change
  set ending before them), or a change set starting after them (a window missed), is
  :class:`LakeError` and changes nothing. The check is made again at each try of the
  commit, and the commit requires the table's snapshot it was planned on: an older export
  never lands after a newer one;
- the model's changes become Iceberg schema evolution in the same commit (a column added,
  made optional, widened; a removed field's column made optional), and a change Iceberg
  cannot follow is :class:`LakeError` naming the table and the column, found for every
  dataset before any table commits;
- two merges at once: Iceberg's optimistic commit lets one win; the other reloads the
  table and applies its change again on top (or finds it applied, or older), at most
  :data:`RETRIES` times, then fails with :class:`LakeError`, the table as the winner left it.

Types are the Parquet datasets' (:mod:`dynaorm.jobs.arrow`), but a duration, which Iceberg
has not, is its microseconds (``long``). pyiceberg (``dynaorm[lake]``) writes the data
files, imported when a commit runs.
"""

import contextlib
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from dynaorm import LakeError
from dynaorm.jobs import ExportReport, Job
from dynaorm.lake.private_apis import iceberg_require_snapshot

#: how many times a merge that lost the race to commit applies its change again
RETRIES = 8
#: the snapshot summary's and table properties' keys a commit records its export under
EXPORT, AS_OF, KIND = "dynaorm.export", "dynaorm.as-of", "dynaorm.kind"
#: what pyiceberg warns of when a delete finds no row: a lake's first export, an insert
QUIET = "Delete operation did not match any records"


@dataclass(frozen=True)
class LakeJob(Job):
    """An export's :class:`~dynaorm.jobs.Job` whose merge then commits to the lake: its
    tasks and runs are the export's, its merged report has ``tables``."""

    finish: Callable[[ExportReport], ExportReport] = lambda report: report
    """What the merged report goes through: the commits (:func:`lake_job`)."""

    def merge(self, results: Iterable[tuple[int, Any]]) -> ExportReport:
        """The tasks' merged report, once each dataset is committed (one commit a table)."""
        return self.finish(super().merge(results))


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


def lake_job(job: Job, catalog: Any, namespace: str,
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

    def finish(report: ExportReport) -> ExportReport:
        return replace(report, tables=commit(catalog, namespace, found, read_from, read))
    return LakeJob(job.template, job.rate, finish)


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
    table (``0``: nothing to apply, or applied already). A model change Iceberg cannot
    follow, in any dataset, is :class:`LakeError` before any table commits."""
    from pyiceberg.exceptions import NamespaceAlreadyExistsError, NoSuchTableError

    if isinstance(catalog, str):
        catalog = load_catalog(catalog)
    with contextlib.suppress(NamespaceAlreadyExistsError):
        catalog.create_namespace(namespace)
    for d in datasets:
        with contextlib.suppress(NoSuchTableError):
            held = catalog.load_table((namespace, d.table)).schema()
            _check_types(f"{namespace}.{d.table}", held, lake_schema(d.schema))
    return {f"{namespace}.{d.table}": _apply(catalog, (namespace, d.table), d, source, read)
            for d in datasets}


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
        iceberg_require_snapshot(tx)
        _evolve(tx, ".".join(ident), table.schema(), schema)
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
    :class:`LakeError` for an export out of order: older than the table's rows (a full
    export, or a change set ending before them), or a change set starting after them."""
    applied = {s.summary.additional_properties.get(EXPORT) for s in table.snapshots()
               if s.summary is not None}
    props = table.properties
    if source.export in applied or props.get(EXPORT) == source.export:
        return False
    held, name = props.get(AS_OF, ""), f"{'.'.join(table.name())}"
    if not held or not source.as_of:
        return True
    if _time(source.as_of) < _time(held):
        if source.kind == "incremental":
            raise LakeError(f"{name}: the change set of {source.export} ends at "
                            f"{source.as_of}, before the table's rows (as of {held}, "
                            f"{props.get(EXPORT)}): apply change sets in order")
        raise LakeError(f"{name}: the {source.kind} export {source.export} is as of "
                        f"{source.as_of}, before the table's rows (as of {held}, "
                        f"{props.get(EXPORT)}): a newer export is applied, and an older "
                        "one never replaces its rows; nothing changed")
    if source.kind == "incremental" and source.since and _time(source.since) > _time(held):
        raise LakeError(f"{name}: the change set of {source.export} starts at "
                        f"{source.since}, after the table's rows (as of {held}): the "
                        "changes between are missing; apply the export before it first")
    return True


def _time(iso: str) -> datetime:
    return datetime.fromisoformat(iso.replace("Z", "+00:00"))


# -- schema evolution: the model's changes as Iceberg allows them ----------------------------
#: the widenings Iceberg allows (besides a decimal's precision up at the same scale)
WIDER = {("int32", "int64"), ("float", "double")}


def _check_types(name: str, held: Any, model: Any) -> None:
    """:class:`LakeError` naming the column of Iceberg table ``name`` (its schema
    ``held``) whose type the model's ``pyarrow.Schema`` changes in a way Iceberg's
    schema evolution cannot follow (only a widening: int to long, float to double, a
    decimal's precision up)."""
    lake = held.as_arrow()
    for field in model:
        if field.name in lake.names:
            _check_type(name, held, (field.name,), lake.field(field.name).type, field.type)


def _check_type(name: str, held: Any, path: tuple[str, ...], old: Any, new: Any) -> None:
    import pyarrow as pa

    if pa.types.is_struct(old) and pa.types.is_struct(new):
        inner = {f.name: f.type for f in old}
        for f in new:
            if f.name in inner:
                _check_type(name, held, (*path, f.name), inner[f.name], f.type)
        return
    if pa.types.is_map(old) and pa.types.is_map(new):
        _check_type(name, held, (*path, "key"), old.key_type, new.key_type)
        _check_type(name, held, (*path, "value"), old.item_type, new.item_type)
        return
    if _is_list(old) and _is_list(new):
        _check_type(name, held, (*path, "element"), old.value_type, new.value_type)
        return
    if _leaf(old) == _leaf(new) or (str(old), str(new)) in WIDER or (
            pa.types.is_decimal(old) and pa.types.is_decimal(new)
            and old.scale == new.scale and old.precision <= new.precision):
        return
    column = ".".join(path)
    try:
        was = str(held.find_field(column).field_type)
    except ValueError:
        was = str(old)
    raise LakeError(
        f"{name}: column {column!r} is {was} in the lake and {new} in the model: Iceberg's "
        "schema evolution cannot make that change (a column's type may only widen: int to "
        "long, float to double, a decimal's precision up at the same scale); nothing was "
        "committed. Keep the field's type in the model, or change the lake's table first "
        "(pyiceberg's update_schema(): rename or delete the column) and export again")


def _is_list(kind: Any) -> bool:
    import pyarrow as pa

    return bool(pa.types.is_list(kind) or pa.types.is_large_list(kind))


def _leaf(kind: Any) -> Any:
    """A primitive type as Iceberg holds it (text, bytes and timestamps of any width)."""
    import pyarrow as pa

    if pa.types.is_large_string(kind):
        return pa.string()
    if pa.types.is_large_binary(kind):
        return pa.binary()
    if pa.types.is_timestamp(kind):
        return pa.timestamp(kind.unit, "UTC" if kind.tz else None)
    return kind


def _evolve(tx: Any, name: str, held: Any, model: Any) -> None:
    """The model's schema ``model`` (``pyarrow``) as schema evolution of the table
    (schema ``held``) in transaction ``tx``, when it differs: a field the model gained is
    a new optional column (old rows read null), a field made optional or widened is so
    in the table, a removed field's column is made optional (old rows keep their
    values); :class:`LakeError` for a change Iceberg cannot follow."""
    _check_types(name, held, model)
    gone = _gone(held.fields, {f.name: f.type for f in model}, ())
    from pyiceberg.exceptions import ValidationError

    try:  # (no change: no new schema)
        with tx.update_schema() as update:
            update.union_by_name(_loosen(model, held.as_arrow()))
            for column in gone:
                update.make_column_optional(column)
    except (ValidationError, ValueError) as exc:  # (what the checks above do not foresee)
        raise LakeError(f"{name}: the model's schema cannot be Iceberg schema evolution of "
                        f"the table's ({exc}); nothing was committed") from exc


def _gone(held: Any, model: Mapping[str, Any], path: tuple[str, ...]) -> list[str]:
    """The required columns of Iceberg fields ``held`` (at any depth: in structs, list
    elements and map values) the model's fields (``model``: their ``pyarrow`` types by
    name) have no more."""
    out = []
    for f in held:
        kind = model.get(f.name)
        if kind is None and f.required:
            out.append(".".join((*path, f.name)))
        elif kind is not None:
            out += _gone_within(f.field_type, kind, (*path, f.name))
    return out


def _gone_within(held: Any, kind: Any, path: tuple[str, ...]) -> list[str]:
    """:func:`_gone` inside one column: Iceberg type ``held``, the model's ``kind``."""
    import pyarrow as pa
    from pyiceberg.types import ListType, MapType

    if pa.types.is_struct(kind) and held.is_struct:
        return _gone(held.fields, {g.name: g.type for g in kind}, path)
    if _is_list(kind) and isinstance(held, ListType):
        return _gone_within(held.element_type, kind.value_type, (*path, "element"))
    if pa.types.is_map(kind) and isinstance(held, MapType):
        return _gone_within(held.value_type, kind.item_type, (*path, "value"))
    return []


def _loosen(model: Any, lake: Any) -> Any:
    """``model`` with each field the table has not (at any depth: in structs, list
    elements and map values) optional: Iceberg adds no required column to a table with
    rows."""
    import pyarrow as pa

    def field(f: Any, old: Any) -> Any:
        if old is None:
            return f.with_nullable(True)
        return f.with_type(inside(f.type, old.type))

    def inside(kind: Any, old: Any) -> Any:
        if pa.types.is_struct(kind) and pa.types.is_struct(old):
            held = {g.name: g for g in old}
            return pa.struct([field(g, held.get(g.name)) for g in kind])
        if _is_list(kind) and _is_list(old):
            return pa.list_(field(kind.value_field, old.value_field))
        if pa.types.is_map(kind) and pa.types.is_map(old):
            return pa.map_(kind.key_field, field(kind.item_field, old.item_field))
        return kind
    held = {f.name: f for f in lake}
    return pa.schema([field(f, held.get(f.name)) for f in model])


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

    _delete(tx, AlwaysTrue(), props)
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
    _delete(tx, match, props)
    upserts = changes.filter(pc.not_equal(changes.column("_op"), "remove"))
    if upserts.num_rows:
        tx.append(_fit(upserts, target), snapshot_properties=dict(props))
    return int(upserts.num_rows)


def _delete(tx: Any, match: Any, props: Mapping[str, str]) -> None:
    """``tx.delete``, without pyiceberg's warning when nothing matches (a lake's first
    export, a change set's inserts): no warning for a normal run (contract 23)."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", QUIET, UserWarning)
        tx.delete(match, snapshot_properties=dict(props))
