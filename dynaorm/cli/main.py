"""The ``dynaorm`` command: create tables, describe entities, audit data, migrate layouts,
run jobs (backfill, export), load entities in bulk, run the demo; and every command a
package adds by an entry point of the group ``dynaorm.commands`` (:mod:`dynaorm.plugins`:
``iam`` and ``mcp`` are found so), and every export format of ``dynaorm.export_formats``
(``export --format``).

Exit codes scripts can rely on:

- ``0``: success (``check``: the table is clean, or every problem was repaired);
- ``1``: ``check`` found problems (not repaired), ``migrate`` could not move everything
  (or ``check`` is not clean after it), ``backfill`` or ``export`` left an item out,
  ``load`` did not load an entity, or the operation failed;
- ``2``: usage error or bad input (an unknown option, an invalid ``--endpoint-url`` or
  ``--region``, a ``MODULE:TABLE`` reference that cannot be resolved), reported on one line.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import os
import sys
from collections.abc import Callable, Sequence
from datetime import timedelta
from types import ModuleType
from typing import TYPE_CHECKING, Any, NoReturn, TextIO, TypeVar, cast

from botocore.exceptions import BotoCoreError

from dynaorm import __version__, jobs
from dynaorm.cli.command import (
    BadReference,
    connect,
    connection_options,
    entity_named,
    find_tables,
    import_module,
    load_attribute,
    load_table,
    table_command,
)
from dynaorm.cli.forget import add_forget_command
from dynaorm.cli.load import add_load_command
from dynaorm.cli.model import add_model_commands
from dynaorm.client.table import Table
from dynaorm.errors import DynaormError, ModelFileError, RequestError
from dynaorm.jobs.checking import CheckResult, ProgressBar, check_table, item_count
from dynaorm.jobs.checkpoint import CheckpointError
from dynaorm.plugins import COMMANDS, EXPORT_FORMATS, found, loaded
from dynaorm.protocol.policy import Rate
from dynaorm.schema.entity import spec_of
from dynaorm.schema.spec import EntitySpec
from dynaorm.schema.templates import SHARD_FIELD, KeyTemplate
from dynaorm.schema.unclaimed import fix_hint

if TYPE_CHECKING:
    from dynaorm.jobs.migration import MigrationReport

EXIT_OK, EXIT_PROBLEMS, EXIT_USAGE = 0, 1, 2
_T = TypeVar("_T")


# -- describe ----------------------------------------------------------------------------
def _fields(template: KeyTemplate | None) -> list[str]:
    return [] if template is None else [f for f in template.fields if f != SHARD_FIELD]


def _sk_part(sk: KeyTemplate | None, after: Sequence[str]) -> str:
    rest = [f for f in _fields(sk) if f not in after]
    if not rest:
        return ""
    return " [, " + ", ".join([*rest[:-1], f"{rest[-1]} prefix/range"]) + "]"


def access_patterns(spec: EntitySpec) -> list[str]:
    """Plain-English access patterns an entity's templates and rules allow."""
    name = spec.name
    lookup = ", ".join(spec.lookup_fields) or "its fixed key"
    out = [f"get {name} by {lookup}" + (" [, version]" if spec.versioned else "")]
    for rule in spec.uniques:
        scope = _fields(rule.scope)
        out.append(f"find {name} by {rule.field}" + (
            f" within {', '.join(scope)}" if scope else ""))

    def query(on: str, pk: KeyTemplate, sk: KeyTemplate | None, target: str, more: str = ""
              ) -> None:
        keys = _fields(pk)
        shards = (f" (scatter-gather over {spec.shards[target].count} shards)"
                  if target in spec.shards else "")
        out.append(f"query {name}{on} by {', '.join(keys) or 'its fixed pk'}"
                   f"{_sk_part(sk, keys)}{more}{shards}")

    if spec.versioned or _fields(spec.sk):
        query("", spec.pk, spec.sk, "primary", " (latest copies)" * spec.versioned)
    if spec.versioned:
        out.append(f"history {name} by {lookup}")
    for idx in spec.indexes:
        query(f" on {idx.name}", idx.pk, idx.sk, idx.name)
    return out


def _normalize_name(fn: Callable[..., object] | None) -> str:
    if fn is None:
        return ""
    qual = getattr(fn, "__qualname__", None) or repr(fn)
    return f", normalize {qual}"


def _keys(layout: Any) -> str:
    """A layout's key templates, as ``describe`` shows them."""
    return f"pk {layout.pk.source}" + (f"   sk {layout.sk.source}" if layout.sk else "")


def _previous_rows(spec: EntitySpec) -> list[tuple[str, str]]:
    """``Meta.previous``: the layout items may still have during a migration window."""
    old = spec.previous
    if old is None:
        return []
    renamed = ", ".join(f"{name} as {attr}" for name, attr in sorted(old.renames.items()))
    return [("previous", _keys(old) + "   (a migration window: see dynaorm migrate)"),
            ("", f"type name {old.type_name}"),
            ("", f"stored names {renamed or 'unchanged'}")]


def _index_rows(spec: EntitySpec) -> list[tuple[str, str]]:
    """The entity's template indexes, and the native indexes that key its attributes."""
    rows = [(idx.name, f"{_keys(idx)}   ({'LSI' if idx.local else 'GSI'})")
            for idx in spec.indexes]
    stored = {spec.attr(f) for f in spec.field_names - spec.unstored}
    for name in spec.table.indexes:  # a native index: every entity with all its attributes
        if (gsi := spec.table.native(name)) and {*gsi.hash_keys, *gsi.range_keys} <= stored | {
                spec.table.pk, spec.table.sk}:
            rows.append((name, f"native GSI pk {gsi.hash_keys}   sk {gsi.range_keys}"))
    return rows


def _unique_rows(spec: EntitySpec) -> list[tuple[str, str]]:
    """The entity's unique rules, one row each (``-`` for none)."""
    rows = [("unique" if i == 0 else "", f"{rule.field} (prefix {rule.prefix}"
             f"{_normalize_name(rule.normalize)}"
             f"{f', scope {rule.scope.source}' if rule.scope else ''})")
            for i, rule in enumerate(spec.uniques)]
    return rows or [("unique", "-")]


def describe_entity(spec: EntitySpec) -> list[str]:
    """The lines ``dynaorm describe`` prints for one entity."""
    named = spec.type_name + ("   (the class name: renaming the class renames it; keep "
                              "it with Meta.type_name)" if spec.type_name == spec.name else "")
    rows = [("type name", named),
            ("primary", _keys(spec) + ("   (latest copy v0_<sk>, versions v<n>_<sk>)"
                                       if spec.versioned else "")),
            *_index_rows(spec), *_unique_rows(spec),
            ("versioned", "yes (field 'version')" if spec.versioned else "no"),
            ("shards", ", ".join(f"{k}: {n.count}" for k, n in spec.shards.items()) or "-"),
            *(("access" if i == 0 else "", pattern)
              for i, pattern in enumerate(access_patterns(spec))),
            *_previous_rows(spec), *_vector_rows(spec)]
    width = max(len(label) for label, _ in rows)
    return [f"  {label:<{width}}  {text}" for label, text in rows]


def _vector_rows(spec: EntitySpec) -> list[tuple[str, str]]:
    """The vector indexes an entity's rows land in (by its :class:`~dynaorm.Vector`
    fields): one row each."""
    rows = []
    for index in spec.table.vector_indexes.values():
        name = spec.stored_fields.get(index.attribute)
        if name is not None:
            schema = (f"   partition {index.partition}" if index.partition else "") + (
                f"   filters {', '.join(index.filters)}" if index.filters else "")
            rows.append((index.name, f"vector {name} ({index.dimensions}, {index.distance})"
                                     f"{schema}"))
    return rows


def describe_module(module: ModuleType, only: str | None) -> str:
    """Every entity registered on every table the module defines, as plain text
    (``only``: just the table bound to that attribute name)."""
    tables = find_tables(module)
    if only is not None:  # (an alias of a table found under another name too)
        value = getattr(module, only, None)
        tables = {only: value} if isinstance(value, Table) else {}
    if not tables:
        return f"module {module.__name__!r} defines no dynaorm Table\n"
    lines = []
    for attr, table in tables.items():
        indexes = ", ".join(
            [f"{i.name} ({'LSI' if i.is_local else 'GSI'})" for i in table.indexes.values()]
            + [f"{name} (vector)" for name in table.vector_indexes])
        lines += [f"{module.__name__}:{attr}  table {table.name!r}  pk={table.pk} "
                  f"sk={table.sk or '-'}  indexes: {indexes or '-'}", ""]
        if not table.entities:
            lines += ["  (no entities registered)", ""]
        for cls in table.entities.values():
            spec = cls.__dynaorm_spec__
            lines += [spec.name, *describe_entity(spec), ""]
    return "\n".join(lines)


# -- commands ----------------------------------------------------------------------------
def cmd_create_table(args: argparse.Namespace, out: TextIO) -> int:
    table = connect(load_table(args.table), args)
    existed = table.exists()
    before = table.index_status() if existed else {}
    table.create()
    where = table.endpoint_url or "the default endpoint"
    status = table.index_status()
    shown = [name if before.get(name) != "MISSING" else f"{name} (added)" for name in status]
    verb = "already exists" if existed else "created"
    print(f"table {table.name!r} {verb} at {where} (pk={table.pk}, sk={table.sk or '-'}, "
          f"indexes: {', '.join(shown) or '-'})", file=out)
    for name, state in status.items():
        if state != "ACTIVE":
            print(f"  index {name!r} is {state}: queries on it fail until it is ACTIVE",
                  file=out)
    return EXIT_OK


def cmd_describe(args: argparse.Namespace, out: TextIO) -> int:
    module_name, sep, attr = args.module.partition(":")
    if sep:
        load_table(args.module)  # a clear error for a missing or wrong TABLE part
    out.write(describe_module(import_module(module_name), only=attr if sep else None))
    return EXIT_OK


def cmd_check(args: argparse.Namespace, out: TextIO) -> int:
    table = connect(load_table(args.table), args)
    if (args.page_size is not None and args.page_size < 1) or (args.engine and args.checkpoint):
        print("dynaorm check: error: --page-size must be at least 1, and --checkpoint goes "
              "without --engine", file=sys.stderr)
        return EXIT_USAGE
    if args.engine:
        result = _job(jobs.check(table, segments=args.segments, rate=_rate(args),
                                 fix=args.repair, page_size=args.page_size), args)
    else:
        result = _with_progress(args, table, lambda bar: check_table(
            table, fix=args.repair, checkpoint=args.checkpoint, page_size=args.page_size,
            progress=bar, orphan_age=timedelta(minutes=args.orphan_age)))
    if result.resumed:
        print(f"resumed from checkpoint {args.checkpoint}", file=out)
    from dynaorm.core.settings import drift_p

    drifted = [f"setting {line}" for line in table._run(drift_p(table), "describe_table")]
    problems = [*drifted, *result.problems]
    print(f"checked table {table.name!r}: {result.scanned} items, "
          f"{len(problems)} problem(s)", file=out)
    for line in problems:
        print(f"  {line}", file=out)
    for name, count in result.unclaimed.items():  # (stored type names no class claims)
        print(f"type name {name!r} is claimed by no class: {count} item(s) that every read "
              f"skips; {fix_hint(name)}", file=out)
    if not problems:
        return EXIT_OK
    if not args.repair:
        fixable = len(result.problems) - result.unrepairable
        print(f"{fixable} of {len(problems)} can be repaired: run again with --repair",
              file=out)
        return EXIT_PROBLEMS
    _repairs_summary(result, out)
    return EXIT_OK if not result.left and not drifted else EXIT_PROBLEMS


def _with_progress(args: argparse.Namespace, table: Table,
                   run: Callable[[ProgressBar | None], _T]) -> _T:
    """``run(bar)``: a progress bar on stderr over ``table``'s items when ``--progress``
    asks for one or stderr is a terminal (else ``None``), closed once ``run`` ends."""
    bar = (ProgressBar(sys.stderr, item_count(table))
           if args.progress or sys.stderr.isatty() else None)
    try:
        return run(bar)
    finally:
        if bar is not None:
            bar.close()


def _repairs_summary(result: CheckResult, out: TextIO) -> None:
    """One line per repair ``check --repair`` tried, then the count repaired and left."""
    for done in result.repairs:
        state = "fixed  " if done.ok else "skipped"
        note = f" ({done.message})" if done.message else ""
        print(f"  {state} {done.problem.kind} {done.problem.key[0]}{note}", file=out)
    resolved = f"; {result.resolved} resolved by live writers" if result.resolved else ""
    print(f"repaired {result.repaired}{resolved}; {result.left} problem(s) left", file=out)


def cmd_migrate(args: argparse.Namespace, out: TextIO) -> int:
    from dynaorm.jobs.migration import migrate

    table = connect(load_table(args.table), args)
    usage_error = _migrate_usage_error(args)
    if usage_error is not None:
        print(f"dynaorm migrate: error: {usage_error}", file=sys.stderr)
        return EXIT_USAGE
    if args.engine:
        report = _job(jobs.migrate(table, segments=args.segments, rate=_rate(args),
                                   dry_run=args.dry_run, page_size=args.page_size), args)
    else:
        report = _with_progress(args, table, lambda bar: migrate(
            table, dry_run=args.dry_run, checkpoint=args.checkpoint, resume=args.resume,
            rate=args.rate, page_size=args.page_size, max_pages=args.max_pages,
            concurrency=args.concurrency, progress=bar))
    if report.resumed:
        print(f"resumed from checkpoint {args.checkpoint}", file=out)
    print(f"migrate table {table.name!r}: scanned {report.scanned} items", file=out)
    _moves_summary(report, out)
    if report.skipped:
        print(f"  {report.skipped} moved or deleted by live writers first", file=out)
    for line in report.failed:
        print(f"  failed: {line}", file=out)
    if not report.done:
        print("stopped before the end of the table: run again with --resume", file=out)
        return EXIT_PROBLEMS
    if report.problems is not None:
        print(f"check: {len(report.problems)} problem(s)", file=out)
        for line in report.problems:
            print(f"  {line}", file=out)
    return EXIT_OK if report.ok else EXIT_PROBLEMS


def _moves_summary(report: MigrationReport, out: TextIO) -> None:
    """Per entity: how many items ``migrate`` found in a previous layout and moved (or would
    move), with a few sample keys; or that it found none."""
    verb = "would move" if report.dry_run else "moved"
    for name in sorted(report.found):
        done = report.found[name] if report.dry_run else report.moved.get(name, 0)
        print(f"  {name}: {report.found[name]} in the previous layout, {verb} {done}",
              file=out)
        for old_key, new_key in report.samples.get(name, []):
            print(f"    {old_key} -> {new_key}", file=out)
    if not report.found:
        print("  nothing in a previous layout", file=out)


def cmd_backfill(args: argparse.Namespace, out: TextIO) -> int:
    entity, fn = load_attribute(args.entity), load_attribute(args.fn)
    if not isinstance(entity, type) or not callable(fn):
        raise BadReference(f"{args.entity} is no entity class or {args.fn} no function")
    connect(cast(Table, spec_of(entity).table), args)
    report = _job(jobs.backfill(entity, fn, segments=args.segments, rate=_rate(args),
                                name=args.name, export=args.export), args)
    print(f"backfill {entity.__name__}: scanned {report.scanned} items, changed "
          f"{report.changed}, {report.conflicts} conflict(s) retried", file=out)
    for line in report.failed:
        print(f"  failed: {line}", file=out)
    return EXIT_PROBLEMS if report.failed else EXIT_OK


def cmd_export(args: argparse.Namespace, out: TextIO) -> int:
    table = connect(load_table(args.table), args)
    classes = None if args.entities is None else [entity_named(table, name) for name in
                                                   args.entities.split(",")]
    report = _job(jobs.export(
        table, args.to, source=args.source, entities=classes, history=args.history,
        segments=args.segments, rate=_rate(args),
        encrypted="decrypt" if args.decrypt else "omit", format=args.format,
        **_format_options(args)), args,
                  lambda done, total: print(f"export: {done} of {total} tasks done",
                                            file=sys.stderr, flush=True))
    print(f"exported table {table.name!r} to {args.to}: {report.scanned} items read",
          file=out)
    for line in report.lines():
        print(line, file=out)
    return EXIT_PROBLEMS if report.failed else EXIT_OK


def _format_options(args: argparse.Namespace) -> dict[str, Any]:
    """The options of ``--format``'s export format given on the command line, checked by
    it; a usage error for one it refuses, or given of another format (``args.formats``:
    those found, loaded)."""
    chosen = {}
    for name, kind in args.formats.items():
        given = {k: v for k, v in kind.arguments(args).items() if v is not None}
        if name == args.format:
            try:
                kind.check(chosen := given)
            except jobs.ExportError as exc:
                raise BadReference(str(exc)) from None
        elif given:
            raise BadReference(f"{', '.join(sorted(given))}: --format {name}'s option(s), "
                               f"not --format {args.format}'s")
    return chosen


def _minutes(text: str) -> float:
    """``--orphan-age``'s check: a number of minutes, at least 0."""
    try:
        found = float(text)
    except ValueError:
        found = -1.0
    if not found >= 0:
        raise argparse.ArgumentTypeError(f"a number of minutes >= 0, got {text!r}")
    return found


def _rate(args: argparse.Namespace) -> Rate | None:
    units = (args.read_units, args.write_units)
    return None if units == (None, None) else Rate(*units)


def _job(job: jobs.Job, args: argparse.Namespace,
         progress: Callable[[int, int], object] | None = None) -> Any:
    """Run ``job`` on ``--engine``: local processes, or Spark (the session the
    environment gives: a Glue or EMR job's, else a local one)."""
    if args.engine == "local":
        return jobs.run_local(job, workers=args.workers, progress=progress)
    from pyspark.sql import SparkSession

    return jobs.job.run_spark(job, SparkSession.builder.getOrCreate(), progress=progress)


def _engine(p: argparse.ArgumentParser) -> None:
    p.add_argument("--engine", choices=("local", "spark"),
                   help="run as a job of --segments tasks: in --workers local processes, "
                        "or on Apache Spark (check, migrate without it: one sequential scan)")
    p.add_argument("--segments", metavar="N", type=at_least_one, default=1)
    p.add_argument("--workers", metavar="N", type=at_least_one, default=1)
    p.add_argument("--read-units", metavar="R", type=float,
                   help="the job's read capacity units a second, all workers together")
    p.add_argument("--write-units", metavar="W", type=float)


def _scanning(p: argparse.ArgumentParser) -> None:
    """The options of the commands that scan the table (check, migrate)."""
    p.add_argument("--page-size", metavar="N", type=int,
                   help="items per Scan request (default: DynamoDB's 1 MB pages)")
    p.add_argument("--progress", action="store_true",
                   help="show a progress bar (total, rate, ETA) on stderr even when it is "
                        "not a terminal (default: only on a terminal)")
    _engine(p)


def _migrate_usage_error(args: argparse.Namespace) -> str | None:
    """What is wrong with ``migrate``'s numeric options, if anything (``None``: nothing)."""
    for name, value in (("--page-size", args.page_size), ("--max-pages", args.max_pages),
                        ("--concurrency", args.concurrency)):
        if value is not None and value < 1:
            return f"{name} must be at least 1"
    if args.rate is not None and args.rate <= 0:
        return "--rate must be positive"
    if args.engine and (args.checkpoint or args.resume or args.max_pages or args.rate):
        return "--checkpoint, --resume, --max-pages and --rate are the sequential run's"
    return None


def cmd_demo(args: argparse.Namespace, out: TextIO) -> int:
    if args.endpoint_url is None and importlib.util.find_spec("moto") is None:
        print('dynaorm demo: the in-process backend needs moto: pip install "dynaorm[testing]" '
              "(or pass --endpoint-url URL of a running DynamoDB Local)", file=sys.stderr)
        return EXIT_PROBLEMS
    from dynaorm.cli.demo import run_demo

    run_demo(args.endpoint_url, region=args.region, out=out)
    return EXIT_OK


# -- parser ------------------------------------------------------------------------------
def at_least_one(text: str) -> int:
    """``--segments``' and ``--workers``' check: a whole number of at least 1."""
    try:
        number = int(text)
    except ValueError:
        number = 0
    if number < 1:
        raise argparse.ArgumentTypeError(f"a whole number of at least 1, not {text!r}")
    return number


class _Parser(argparse.ArgumentParser):
    """An argument parser whose usage errors are one line on stderr, exit code 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The argument parser of the ``dynaorm`` command (``command``: the subcommand asked
    for, whose options alone need loading; ``None``: every command and option found)."""
    parser = _Parser(
        prog="dynaorm", description="dynaorm: DynamoDB single-table ORM tools.",
        epilog="exit codes: 0 ok, 1 problems found or operation failed, 2 usage error")
    parser.add_argument("--version", action="version", version=f"dynaorm {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    table_command(sub, "create-table", cmd_create_table,
                  help="create a table with all its indexes",
                  description="Create MODULE:TABLE (on-demand billing, every index); "
                              "no error if it exists.")
    add_forget_command(sub)
    p = sub.add_parser("describe", help="list entities, keys, unique rules, access patterns",
                      description="Print every entity registered on every Table in MODULE "
                                   "(or only on TABLE): key templates, unique rules, "
                                   "versioning, indexes, shards and the access patterns they "
                                   "allow.")
    p.add_argument("module", metavar="MODULE[:TABLE]", help="e.g. myapp.models or "
                                                           "myapp.models:app")
    connection_options(p)
    p.set_defaults(run=cmd_describe)
    add_model_commands(sub)
    p = table_command(sub, "check", cmd_check,
                      help="audit guards, latest copies and derived keys (--repair)",
                      description="Scan the table page by page and report orphan guard "
                                  "items, owners whose guard is missing (also after a unique "
                                  "rule was added), latest copies of versioned entities that "
                                  "differ from their newest version, index key attributes "
                                  "that no longer match their templates, items whose "
                                  "table key no longer matches (reported, never moved), "
                                  "and on a table with offload=, references to missing "
                                  "objects and objects no row references (--repair removes "
                                  "these). Exit 1 when problems remain.")
    p.add_argument("--repair", action="store_true",
                   help="fix what can be fixed as each page is checked, each fix one "
                        "transaction conditioned on the values it read")
    p.add_argument("--checkpoint", metavar="FILE",
                   help="record progress in FILE after every page; an unfinished run "
                        "recorded there continues where it stopped")
    p.add_argument("--orphan-age", metavar="MINUTES", type=_minutes, default=60,
                   help="an offloaded object no row references is reported (and removed "
                        "by --repair) only when written at least MINUTES before the check "
                        "began (default 60: a commit uploads before it writes its row)")
    _scanning(p)
    p = table_command(sub, "migrate", cmd_migrate,
                      help="move items from previous layouts (Meta.previous)",
                      description="Scan the table page by page and move every item stored "
                                  "in the previous layout of an entity (Meta.previous) to "
                                  "its current layout, guards and version rows included, "
                                  "each move one transaction conditioned on the state read "
                                  "(safe beside live writers). Ends with dynaorm check. "
                                  "Exit 1 when something could not be moved or check is "
                                  "not clean.")
    p.add_argument("--dry-run", action="store_true",
                   help="count the items per entity and show sample keys old -> new; "
                        "write nothing")
    p.add_argument("--checkpoint", metavar="FILE",
                   help="record the scan position and counts in FILE after every page")
    p.add_argument("--resume", action="store_true",
                   help="continue the unfinished run recorded in --checkpoint FILE")
    p.add_argument("--rate", metavar="N", type=float,
                   help="at most N moves per second (default: as fast as it goes)")
    p.add_argument("--concurrency", metavar="N", type=int, default=1,
                   help="moves in flight at once, each its own transaction (default 1)")
    p.add_argument("--max-pages", metavar="N", type=int,
                   help="stop after N pages (continue later with --resume)")
    _scanning(p)
    p = sub.add_parser("backfill", help="save FUNCTION(obj) for every item of ENTITY",
                      description="Pass every item of ENTITY to FUNCTION(obj) -> obj | None "
                                   "and save what it returns, never over a newer state, as "
                                   "a job (dynaorm.jobs.backfill). Exit 1 when an item "
                                   "failed.")
    p.add_argument("entity", metavar="MODULE:ENTITY", help="e.g. myapp.models:User")
    p.add_argument("fn", metavar="MODULE:FUNCTION", help="e.g. myapp.fixes:add_plan")
    p.add_argument("--name",
                   help="the job's marker (run again with the same name to resume)")
    p.add_argument("--export", metavar="S3URI", help="a DynamoDB export: a task per file")
    connection_options(p)
    _engine(p)
    p.set_defaults(run=cmd_backfill, engine="local")
    p = table_command(sub, "export", cmd_export,
                      help="write one typed Parquet dataset per entity",
                      description="Write every entity of MODULE:TABLE as a Parquet dataset "
                                  "typed from its model, TO/<EntityName>/part-<task>.parquet "
                                  "(TO: a directory or s3://bucket/prefix), for DuckDB, "
                                  "Polars, Spark or Athena: latest copies only (--history: "
                                  "version rows too), never guard items, previous layouts "
                                  "as the current one, encrypted fields left out "
                                  "(--decrypt: their plaintext), as a job "
                                  "(dynaorm.jobs.export). Exit 1 when a row did not fit "
                                  "its entity.")
    p.add_argument("to", metavar="TO", help="a directory, or s3://bucket/prefix")
    p.add_argument("--source", metavar="S3URL",
                   help="a DynamoDB export to S3 (its .../AWSDynamoDB/<id>/ folder; full, or "
                        "incremental: change sets): a task per data file, no table read")
    p.add_argument("--entities", metavar="NAMES",
                   help="comma-separated entity class names (default: every entity)")
    p.add_argument("--history", action="store_true",
                   help="versioned entities' version rows too, as <EntityName>.history")
    p.add_argument("--decrypt", action="store_true",
                   help="write encrypted fields' plaintext (the table's keyring)")
    _export_formats(p, command in (None, "export"))
    _engine(p)
    p.set_defaults(engine="local")
    add_load_command(sub)
    p = sub.add_parser("demo", help="run the quickstart on an in-process DynamoDB",
                      description="Run the quickstart step by step on the embedded in-process "
                                   "backend (moto), or on --endpoint-url (it creates and then "
                                   "deletes the table 'dynaorm-demo' there).")
    connection_options(p)
    p.set_defaults(run=cmd_demo)
    _found_commands(sub, command)
    return parser


def _found_commands(sub: Any, command: str | None) -> None:
    """Add the commands found (group ``dynaorm.commands``) to ``sub``: only ``command``'s
    when it names one of them, none when it names one of this module's, else (help, an
    unknown command) every one, so the help lists them."""
    points = found(COMMANDS)
    if command in sub.choices:
        return
    for name, point in points.items():
        if command not in points or name == command:
            try:
                point.load()(sub)
            except Exception as exc:  # (a package's broken import, a name taken: said)
                print(f"dynaorm: the command {name!r} ({point.value}) cannot be added: "
                      f"{type(exc).__name__}: {_one_line(exc)}", file=sys.stderr)


def _export_formats(p: argparse.ArgumentParser, load: bool) -> None:
    """``export``'s ``--format``: ``parquet`` or an export format found (group
    ``dynaorm.export_formats``), each adding its options when ``load`` (the command is
    ``export``, or help is asked for)."""
    p.add_argument("--format", choices=("parquet", *found(EXPORT_FORMATS)), default="parquet",
                   help="parquet (the default), or an export format found: TO stages "
                        "its data files, and the format does the rest (its options below)")
    formats = loaded(EXPORT_FORMATS) if load else {}
    for kind in formats.values():
        kind.add_arguments(p)
    p.set_defaults(formats=formats)


def main(argv: list[str] | None = None) -> int:
    """Run the ``dynaorm`` command; returns the exit code."""
    given = sys.argv[1:] if argv is None else argv
    parser = build_parser(next((a for a in given if not a.startswith("-")), None))
    args = parser.parse_args(given)
    out = sys.stdout
    try:
        code: int = args.run(args, out)
    except (BadReference, CheckpointError, ModelFileError) as exc:
        print(f"dynaorm {args.command}: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except (DynaormError, RequestError, BotoCoreError, OSError) as exc:
        print(f"dynaorm {args.command}: failed: {_one_line(exc)}", file=sys.stderr)
        return EXIT_PROBLEMS
    except KeyboardInterrupt:
        print(f"dynaorm {args.command}: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # one line, never a traceback (DYNAORM_DEBUG=1 shows it)
        if os.environ.get("DYNAORM_DEBUG"):
            raise
        print(f"dynaorm {args.command}: failed: {type(exc).__name__}: {_one_line(exc)} "
              "(set DYNAORM_DEBUG=1 for the traceback)", file=sys.stderr)
        return EXIT_PROBLEMS
    return code


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())


if __name__ == "__main__":
    raise SystemExit(main())
