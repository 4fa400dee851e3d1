"""Jobs (:mod:`dynaorm.jobs`) on Apache Spark: AWS Glue, EMR, or Spark's local mode
(extra ``dynaorm[spark]``; see :doc:`the jobs guide </guide/jobs>`)."""

from dynaorm.jobs import run_spark as run

__all__ = ["run"]
