"""The analytics lake (extra ``dynaorm[lake]``): ``dynaorm.jobs.export(...,
format="iceberg")`` commits an export's datasets as Apache Iceberg tables, one commit a
table (:mod:`dynaorm.lake.iceberg`). The export format :data:`ICEBERG`
(:mod:`dynaorm.lake.format`) is found by its entry point (group
``dynaorm.export_formats``): ``dynaorm.jobs`` never imports the lake. ``LakeError`` is
:class:`dynaorm.LakeError`."""

from dynaorm import LakeError
from dynaorm.lake.format import ICEBERG, Iceberg
from dynaorm.lake.iceberg import (
    RETRIES,
    Dataset,
    LakeJob,
    Source,
    commit,
    lake_job,
    lake_schema,
    load_catalog,
)

__all__ = ["ICEBERG", "RETRIES", "Dataset", "Iceberg", "LakeError", "LakeJob", "Source",
           "commit", "lake_job", "lake_schema", "load_catalog"]
