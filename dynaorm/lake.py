"""The analytics lake's public name: :mod:`dynaorm.jobs.lake`, beside the exports it
drives, is the implementation (``from dynaorm.lake import LakeError, load_catalog`` keeps
working; ``LakeError`` is :class:`dynaorm.LakeError`)."""

from dynaorm.jobs.lake import (
    RETRIES,
    Dataset,
    LakeError,
    LakeJob,
    Source,
    commit,
    exporting,
    lake_job,
    lake_schema,
    load_catalog,
)

__all__ = ["RETRIES", "Dataset", "LakeError", "LakeJob", "Source", "commit", "exporting",
           "lake_job", "lake_schema", "load_catalog"]
