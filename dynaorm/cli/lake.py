"""``dynaorm export --format iceberg``: the options of the export command that commit its
datasets to the lake (:mod:`dynaorm.jobs.lake`, extra ``dynaorm[lake]``, which imports
pyiceberg only when it commits)."""

from __future__ import annotations

import argparse
import functools
from collections.abc import Callable
from typing import Any

from dynaorm.jobs.lake import export as lake_export
from dynaorm.jobs.lake import load_catalog

__all__ = ["add_lake_options", "lake_options"]


def add_lake_options(p: argparse.ArgumentParser) -> None:
    """Add ``--format``, ``--catalog``, ``--warehouse`` and ``--namespace`` to ``p``."""
    p.add_argument("--format", choices=("parquet", "iceberg"), default="parquet",
                   help="iceberg: commit each dataset as the Iceberg table "
                        "NAMESPACE.<type name> in --catalog (TO stages the data files; "
                        "needs dynaorm[lake]); a full export replaces its rows, an "
                        "incremental one applies its changes, each in one commit")
    p.add_argument("--catalog", metavar="URI|NAME", default=None,
                   help="the Iceberg catalog: a URI (sqlite:///lake.db, postgresql://..., "
                        "https://... REST, thrift://... Hive) or its name in pyiceberg's "
                        "configuration (~/.pyiceberg.yaml)")
    p.add_argument("--warehouse", metavar="URL", default=None,
                   help="where the catalog's tables' files go (file://..., s3://...), if "
                        "the catalog does not say")
    p.add_argument("--namespace", metavar="NAME", default=None,
                   help="the Iceberg namespace of the tables (made if missing)")


def lake_options(args: argparse.Namespace, export: Callable[..., Any],
                 usage: type[Exception]) -> Callable[..., Any]:
    """The export function for ``args``: ``export`` without the lake's options; with
    ``--format iceberg``, :func:`dynaorm.jobs.lake.export` (whose merge commits: its report's
    ``tables``) given the catalog, loaded, and the namespace. ``usage`` (the command's
    usage error) when the lake's options come without ``--format iceberg``, or it without
    a catalog and a namespace."""
    if args.format != "iceberg" and not (args.catalog or args.namespace or args.warehouse):
        return export
    if args.format != "iceberg" or not args.catalog or not args.namespace:
        raise usage("--catalog, --namespace and --warehouse are --format iceberg's, "
                    "which needs --catalog and --namespace")
    catalog = load_catalog(args.catalog, args.warehouse)
    return functools.partial(lake_export, format="iceberg", catalog=catalog,
                             namespace=args.namespace)
