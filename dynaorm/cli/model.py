"""The ``dynaorm model`` and ``dynaorm explain`` commands (:mod:`dynaorm.cli.main` adds
them to its parser; they resolve ``MODULE:TABLE`` references with
:mod:`dynaorm.cli.command`)."""

import argparse
import json
import sys
from pathlib import Path
from typing import Any, TextIO

from dynaorm.cli.command import BadReference, find_tables, import_module, load_table
from dynaorm.errors import ModelFileError


def _model(args: argparse.Namespace, out: TextIO) -> int:
    from dynaorm import formats
    from dynaorm.formats.code import import_code

    given = [a for a in (args.table, args.import_file, args.infer) if a is not None]
    if len(given) != 1:
        raise BadReference("give one of MODULE:TABLE to export, --import FILE or "
                               "--infer TABLE")
    if args.infer is not None:
        return _infer(args, out)
    if args.format == "code":
        raise BadReference("--format code prints the model of --infer TABLE; "
                               "--import FILE prints code too")
    if args.import_file is not None:
        if args.format not in (readable := formats.READABLE):
            either = " or ".join(n for n in (", ".join(readable[:-1]), *readable[-1:]) if n)
            raise BadReference(f"--import reads {either}: a {args.format} file holds "
                                   "the table, not its entities")
        try:
            text = Path(args.import_file).read_bytes().decode("utf-8")
        except OSError as exc:
            raise BadReference(f"cannot read {args.import_file}: {exc.strerror}") from exc
        except UnicodeDecodeError as exc:
            raise ModelFileError(f"not UTF-8 text ({exc.reason})", place=f"byte {exc.start}"
                                 ) from None
        return _emit(import_code(text, args.format), args.output, out)
    model = load_table(args.table).model()
    if args.chart is not None:
        from dynaorm.formats.chart import chart_of

        Path(args.chart).write_text(chart_of(model), encoding="utf-8")
        print(f"wrote {args.chart}", file=out)
        return 0
    return _formatted(model, args, out)


def _infer(args: argparse.Namespace, out: TextIO) -> int:
    """``--infer TABLE``: the model of a live table, in ``--format`` (``code``: entity
    code, what it could not place in a comment at its end)."""
    from dynaorm.client.infer import infer_code, unplaced_note
    from dynaorm.formats.infer import InferenceError

    try:
        code, model = infer_code(args.infer, sample=args.sample, endpoint_url=args.endpoint,
                                 region=args.region, report=sys.stderr)
    except InferenceError as exc:
        raise BadReference(str(exc)) from exc
    note = unplaced_note(model)
    print(f"dynaorm model --infer: {note}", file=sys.stderr)
    if args.format == "code":
        return _emit(code + "\n" + "".join(f"# {line}\n" for line in note.splitlines()),
                     args.output, out)
    if args.format == "json":
        return _emit(json.dumps(model, indent=2) + "\n", args.output, out)
    return _formatted(model, args, out)


def _formatted(model: Any, args: argparse.Namespace, out: TextIO) -> int:
    """``model`` in ``--format`` (what the format has no place for said on stderr)."""
    from dynaorm import formats

    text, notes = formats.as_text(model, args.format)
    for note in notes:
        print(f"dynaorm model: {note}", file=sys.stderr)
    return _emit(text, args.output, out)


def _emit(text: str, path: str | None, out: TextIO) -> int:
    """``text`` to ``path`` (``None``: standard output)."""
    if path is None:
        out.write(text)
    else:
        Path(path).write_text(text, encoding="utf-8")
    return 0


def _explain(args: argparse.Namespace, out: TextIO) -> int:
    from dynaorm.cli.explain import explain_patterns

    if args.item_size is not None and args.item_size < 1:
        raise BadReference("--item-size must be at least 1")
    module_name, sep, attr = args.module.partition(":")
    tables = ({attr: load_table(args.module)} if sep else
              find_tables(import_module(module_name)))
    for table in tables.values():
        for pattern, found in explain_patterns(table, args.item_size):
            print(f"{pattern.entity.__name__} {pattern.name} ({pattern.operation})", file=out)
            text = found if isinstance(found, str) else str(found)
            print("\n".join(f"  {line}" for line in text.splitlines()), file=out)
            print(file=out)
    return 0


def add_model_commands(sub: Any) -> None:
    """Add ``model`` and ``explain`` to the subcommands ``sub`` of the ``dynaorm``
    command's parser (:mod:`dynaorm.cli.main`)."""
    from dynaorm.formats import FORMATS

    p = sub.add_parser("model", help="export the model (json, workbench, mcp, "
                                     "cloudformation, terraform), chart it, or "
                                     "import a model file as entity code",
                       description="Print MODULE:TABLE's model as dynaorm's JSON, a NoSQL "
                                   "Workbench model or the AWS DynamoDB MCP server's "
                                   "schema.json; --chart OUT.html draws it; --import FILE "
                                   "prints entity code that exports back to the same model.")
    p.add_argument("table", metavar="MODULE:TABLE", nargs="?",
                   help="e.g. myapp.models:app")
    p.add_argument("--format", choices=(*FORMATS, "code"), default="json",
                   help="code: entity code (with --infer)")
    p.add_argument("-o", "--output", metavar="FILE",
                   help="write to FILE (default: standard output)")
    p.add_argument("--chart", metavar="OUT.html",
                   help="write a self-contained HTML chart of the design instead")
    p.add_argument("--import", dest="import_file", metavar="FILE",
                   help="read a model file of --format and print entity code")
    p.add_argument("--infer", metavar="TABLE",
                   help="infer the model of the live table TABLE from a sample of its "
                        "items (reads only: DescribeTable, DescribeTimeToLive, Scan, and "
                        "GetObject of values kept in S3)")
    p.add_argument("--endpoint", "--endpoint-url", dest="endpoint", metavar="URL",
                   help="with --infer: the DynamoDB endpoint")
    p.add_argument("--region", metavar="R", help="with --infer: the region")
    p.add_argument("--sample", metavar="N", type=int, default=1000,
                   help="with --infer: read at most N items (default 1000)")
    p.set_defaults(run=_model)
    p = sub.add_parser("explain", help="what each access pattern sends and costs",
                       description="Explain each access pattern of every entity on every "
                                   "Table in MODULE (or only on TABLE): the requests, the "
                                   "index read, the rows written by role and their read and "
                                   "write units, on a sample item. Sends nothing.")
    p.add_argument("module", metavar="MODULE[:TABLE]", help="e.g. myapp.models")
    p.add_argument("--item-size", metavar="BYTES", type=int,
                   help="price on sample items of about this many bytes (default: small)")
    p.set_defaults(run=_explain)
