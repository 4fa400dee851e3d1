"""Whole-table work split into tasks an engine runs: ``backfill``, ``migrate``, ``check``
and ``reencrypt`` and ``export`` as :class:`Job` objects, and :func:`run_local` (see :doc:`the
jobs guide </guide/jobs>`, :doc:`the exports guide </guide/exports>` and :doc:`the lake
guide </guide/lake>`)."""

from __future__ import annotations

import dataclasses
import os
from typing import Any

from dynaorm.client.table import Table
from dynaorm.tools.export import ExportError, ExportReport, datasets_of, read_parts, source_of
from dynaorm.tools.export import export as _export
from dynaorm.tools.jobs import MARK, BackfillReport, Job, Task, backfill, check, migrate, run_local
from dynaorm.tools.reencrypt import ReencryptReport, reencrypt

__all__ = ["MARK", "BackfillReport", "ExportError", "ExportReport", "Job", "ReencryptReport",
           "Task", "backfill", "check", "export", "migrate", "reencrypt", "run_local"]

#: what ``format=`` takes
FORMATS = ("parquet", "iceberg")


def export(table: Table, to: str | os.PathLike[str], *, format: str = "parquet",
           catalog: Any = None, namespace: str | None = None, **options: Any) -> Job:
    """``table`` as one typed dataset per entity, named by its type name (see
    :func:`dynaorm.tools.export.export` for ``source``, ``entities``, ``history``,
    ``encrypted``, ``segments`` and ``rate``).

    ``format="parquet"`` (default): Parquet datasets under ``to``. ``format="iceberg"``:
    the tasks write their data files under ``to`` as Parquet datasets, and the job's merge
    commits each to the Apache Iceberg table ``<namespace>.<type name>``
    (``<type name>_history``) of ``catalog`` (a pyiceberg catalog, or its name in
    pyiceberg's configuration), one commit a table (:mod:`dynaorm.lake`): a full export
    replaces its rows, an incremental one applies its changes by key, an export applied
    already changes nothing. Give each export a ``to`` of its own."""
    if format not in FORMATS:
        raise ExportError(f"export: format= is 'parquet' or 'iceberg', not {format!r}")
    if format == "parquet":
        if catalog is not None or namespace is not None:
            raise ExportError("export: catalog= and namespace= are for format='iceberg'")
        return _export(table, to, **options)
    if catalog is None or not namespace:
        raise ExportError("export: format='iceberg' needs catalog= (a pyiceberg catalog or "
                          "its name) and namespace=")
    try:
        from dynaorm import lake
    except ModuleNotFoundError as exc:
        raise ExportError('Iceberg exports need pyiceberg: pip install "dynaorm[lake]"'
                          ) from exc
    job = _export(table, to, **options)
    found = datasets_of(job)
    datasets = [lake.Dataset(name, name.replace(".history", "_history"), schema, keys)
                for name, schema, keys in found]
    if len({d.table for d in datasets}) != len(datasets):
        raise ExportError(f"export: two datasets of {[d.name for d in datasets]} would be "
                          "one Iceberg table (a type name ending in '_history')")
    source = lake.Source(*source_of(job))
    where, parts = os.fspath(to), job.template.segments

    def commit(report: ExportReport) -> ExportReport:
        tables = lake.commit(catalog, namespace, datasets, source,
                             lambda name: read_parts(where, name, parts))
        return dataclasses.replace(report, tables=tables)
    return dataclasses.replace(job, finish=commit)
