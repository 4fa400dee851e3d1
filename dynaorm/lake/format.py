"""The lake's export format, ``iceberg`` (:data:`ICEBERG`): what ``dynaorm.jobs.export(...,
format="iceberg", catalog=..., namespace=...)`` and ``dynaorm export --format iceberg``
find by its entry point (group ``dynaorm.export_formats``) and run: the export's job,
whose merge then commits its datasets to the lake (:func:`dynaorm.lake.lake_job`).
pyiceberg (extra ``dynaorm[lake]``) is imported only when a commit runs."""

import argparse
from collections.abc import Mapping
from typing import Any

from dynaorm.jobs import ExportError, Job, Staged
from dynaorm.lake.iceberg import LakeJob, lake_job, load_catalog

#: what ``format="iceberg"`` takes: ``catalog`` and ``namespace`` are needed
OPTIONS = ("catalog", "namespace", "warehouse")


class Iceberg:
    """The export format ``iceberg`` (a :class:`dynaorm.jobs.ExportFormat`): options
    ``catalog`` (a pyiceberg catalog, or its URI or name: :func:`~dynaorm.lake.load_catalog`),
    ``namespace`` (made if missing) and ``warehouse`` (where the tables' files go, if a
    catalog given by name does not say)."""

    def check(self, options: Mapping[str, Any]) -> None:
        """:class:`~dynaorm.jobs.ExportError` for an option the lake does not take, a
        catalog or namespace missing, or pyiceberg not installed."""
        if stray := sorted(set(options) - set(OPTIONS)):
            raise ExportError(f"export: format='iceberg' takes catalog=, namespace= and "
                              f"warehouse=, not {', '.join(f'{k}=' for k in stray)}")
        if options.get("catalog") is None or not options.get("namespace"):
            raise ExportError("export: format='iceberg' needs catalog= (a pyiceberg catalog "
                              "or its name) and namespace=")
        try:
            import pyiceberg  # noqa: F401 (dynaorm[lake])
        except ModuleNotFoundError as exc:
            raise ExportError('Iceberg exports need pyiceberg: pip install "dynaorm[lake]"'
                              ) from exc

    def job(self, job: Job, staged: Staged, options: Mapping[str, Any]) -> LakeJob:
        """``job``, whose merge then commits each dataset ``staged`` describes to its
        Iceberg table (the catalog loaded now, when given by its URI or name:
        :class:`~dynaorm.LakeError` if it cannot be)."""
        catalog = options["catalog"]
        if isinstance(catalog, str):
            catalog = load_catalog(catalog, options.get("warehouse"))
        return lake_job(job, catalog, options["namespace"], staged.datasets, staged.source,
                        staged.read)

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        """Add ``--catalog``, ``--warehouse`` and ``--namespace`` to ``dynaorm export``."""
        parser.add_argument("--catalog", metavar="URI|NAME", default=None,
                            help="--format iceberg: the Iceberg catalog, a URI "
                                 "(sqlite:///lake.db, postgresql://..., https://... REST, "
                                 "thrift://... Hive) or its name in pyiceberg's "
                                 "configuration (~/.pyiceberg.yaml)")
        parser.add_argument("--warehouse", metavar="URL", default=None,
                            help="--format iceberg: where the catalog's tables' files go "
                                 "(file://..., s3://...), if the catalog does not say")
        parser.add_argument("--namespace", metavar="NAME", default=None,
                            help="--format iceberg: the Iceberg namespace of the tables "
                                 "(made if missing)")

    def arguments(self, args: argparse.Namespace) -> dict[str, Any]:
        """``--catalog``, ``--namespace`` and ``--warehouse`` as :func:`dynaorm.jobs.export`
        takes them."""
        return {"catalog": args.catalog, "namespace": args.namespace,
                "warehouse": args.warehouse}


#: the lake's export format: the object the entry point ``iceberg`` names
ICEBERG = Iceberg()
