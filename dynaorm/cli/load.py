"""The ``dynaorm load`` command (:mod:`dynaorm.cli.main` adds it to its parser): entities
loaded into an existing table with DynamoDB's bulk put items, through the model's rules
(:func:`dynaorm.jobs.load`), with a progress bar."""

import argparse
import sys
from typing import Any, TextIO

from dynaorm.cli.command import connect, entity_named, load_table, table_command


def _load(args: argparse.Namespace, out: TextIO) -> int:
    from dynaorm.jobs.checking import ProgressBar
    from dynaorm.jobs.load import load
    from dynaorm.protocol.policy import Rate

    table = connect(load_table(args.table), args)
    entity = None if args.entity is None else entity_named(table, args.entity)
    classes = None if args.entities is None else [
        entity_named(table, name) for name in args.entities.split(",")]
    bar: list[ProgressBar] = []

    def progress(done: int, total: int) -> None:
        if not bar:
            bar.append(ProgressBar(sys.stderr, total, what=("loaded", "rows")))
        bar[0](done)

    try:
        report = load(table, args.source, s3=args.s3, entity=entity, entities=classes,
                      name=args.name, rate=None if args.write_units is None else Rate(
                          write=args.write_units), part_rows=args.part_rows,
                      poll=args.poll, progress=progress,
                      performance_tier=args.performance_tier)
    finally:
        if bar:
            bar[0].close()
    print(f"load {report.name!r} into table {table.name!r}:", file=out)
    for line in report.lines():
        print(line, file=out)
    return 0 if report.ok else 1


def add_load_command(sub: Any) -> None:
    """Add ``load`` to the subcommands ``sub`` of the ``dynaorm`` command's parser."""
    p = table_command(sub, "load", _load,
                      help="load entities with DynamoDB's bulk put items",
                      description="Load the entities of SOURCE into the existing table "
                                  "MODULE:TABLE with DynamoDB's bulk put items "
                                  "(StartBulkPutItems), each stored as a save stores a new "
                                  "object: its rows, unique guards and version rows, each "
                                  "conditioned on a free key. SOURCE: a Parquet dataset "
                                  "(a file or folder, local or s3://; a folder of datasets "
                                  "named by type name, as `dynaorm export` writes them), or "
                                  "a DynamoDB export's s3://.../AWSDynamoDB/<id>/ folder. "
                                  "Entities that clash (a unique value taken, an item at "
                                  "their key) are reported, none of their rows left. Run "
                                  "again with the same --name to resume. Exit 1 when an "
                                  "entity was not loaded.")
    p.add_argument("source", metavar="SOURCE", help="a Parquet dataset or a DynamoDB export")
    p.add_argument("--s3", metavar="S3URL", required=True,
                   help="s3://bucket/prefix: where the load keeps its input, reports and "
                        "state")
    p.add_argument("--name",
                   help="the load's name (default: drawn from the table and SOURCE); run "
                        "again with it to resume")
    p.add_argument("--entity", metavar="NAME",
                   help="the entity class of a single dataset's rows")
    p.add_argument("--entities", metavar="NAMES",
                   help="comma-separated entity class names read from a folder of datasets "
                        "or an export (default: every entity)")
    p.add_argument("--write-units", metavar="W", type=int,
                   help="MaxWriteRequestUnits, at least 1024 (default: the service's pace)")
    p.add_argument("--part-rows", metavar="N", type=int, default=100_000,
                   help="rows an input part holds, at most (default 100000)")
    p.add_argument("--poll", metavar="SECONDS", type=float, default=10.0,
                   help="seconds between DescribeBulkOperation calls (default 10)")
    p.add_argument("--performance-tier", choices=("STANDARD", "ACCELERATED"))
