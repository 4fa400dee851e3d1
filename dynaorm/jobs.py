"""Whole-table work split into tasks an engine runs: ``backfill``, ``migrate``, ``check``
and ``reencrypt`` and ``export`` as :class:`Job` objects, and :func:`run_local` (see :doc:`the
jobs guide </guide/jobs>` and :doc:`the exports guide </guide/exports>`)."""

from dynaorm.tools.export import ExportError, ExportReport, export
from dynaorm.tools.jobs import MARK, BackfillReport, Job, Task, backfill, check, migrate, run_local
from dynaorm.tools.reencrypt import ReencryptReport, reencrypt

__all__ = ["MARK", "BackfillReport", "ExportError", "ExportReport", "Job", "ReencryptReport",
           "Task", "backfill", "check", "export", "migrate", "reencrypt", "run_local"]
