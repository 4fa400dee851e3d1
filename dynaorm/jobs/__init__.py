"""Whole-table work split into tasks an engine runs: ``backfill``, ``migrate``, ``check``
and ``reencrypt`` and ``export`` as :class:`Job` objects, :func:`run_local` and
:func:`run_spark` (see :doc:`the jobs guide </guide/jobs>`, :doc:`the exports guide
</guide/exports>` and :doc:`the lake guide </guide/lake>`); ``load``, entities loaded with
DynamoDB's bulk put items through the rules (:doc:`the loads guide </guide/loads>`). An
export format besides Parquet (the lake's ``iceberg``) is an :class:`ExportFormat` found by
its name (:mod:`dynaorm.plugins`), never imported here."""

from dynaorm.jobs.exports import ExportError, ExportFormat, ExportReport, Staged, export
from dynaorm.jobs.job import (
    MARK,
    BackfillReport,
    Job,
    Task,
    backfill,
    check,
    migrate,
    run_local,
    run_spark,
)
from dynaorm.jobs.load import LoadFailure, LoadReport, NotLoadedError, load
from dynaorm.jobs.reencryption import ReencryptReport, reencrypt

__all__ = ["MARK", "BackfillReport", "ExportError", "ExportFormat", "ExportReport", "Job",
           "LoadFailure", "LoadReport", "NotLoadedError", "ReencryptReport", "Staged", "Task",
           "backfill", "check", "export", "load", "migrate", "reencrypt", "run_local",
           "run_spark"]
