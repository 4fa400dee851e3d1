"""Whole-table work split into tasks an engine runs: ``backfill``, ``migrate``, ``check``
and ``reencrypt`` and ``export`` as :class:`Job` objects, and :func:`run_local` (see :doc:`the
jobs guide </guide/jobs>`, :doc:`the exports guide </guide/exports>` and :doc:`the lake
guide </guide/lake>`); ``load``, entities loaded with DynamoDB's bulk put items through the
rules (:doc:`the loads guide </guide/loads>`)."""

from dynaorm.jobs.exports import ExportError, ExportReport
from dynaorm.jobs.job import MARK, BackfillReport, Job, Task, backfill, check, migrate, run_local
from dynaorm.jobs.lake import export
from dynaorm.jobs.load import LoadFailure, LoadReport, NotLoadedError, load
from dynaorm.jobs.reencryption import ReencryptReport, reencrypt

__all__ = ["MARK", "BackfillReport", "ExportError", "ExportReport", "Job", "LoadFailure",
           "LoadReport", "NotLoadedError", "ReencryptReport", "Task", "backfill", "check",
           "export", "load", "migrate", "reencrypt", "run_local"]
