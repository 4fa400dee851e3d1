"""Whole-table work split into tasks an engine runs: ``backfill``, ``migrate``, ``check``
and ``reencrypt`` as :class:`Job` objects, and :func:`run_local` (see :doc:`the jobs guide
</guide/jobs>`)."""

from dynaorm.tools.jobs import MARK, BackfillReport, Job, Task, backfill, check, migrate, run_local
from dynaorm.tools.reencrypt import ReencryptReport, reencrypt

__all__ = ["MARK", "BackfillReport", "Job", "ReencryptReport", "Task", "backfill", "check",
           "migrate", "reencrypt", "run_local"]
