"""What a command of the ``dynaorm`` command line uses, its own or a package's (found by
its entry point, group ``dynaorm.commands``; ``dynaorm.cli`` exports these): the table
references it resolves (``MODULE:TABLE``, ``MODULE:ATTR``), the error for a bad one
(:class:`BadReference`: exit code 2, on one line), and the connection options every
command that reaches a table takes (:func:`connection_options`, :func:`connect`)."""

import argparse
import importlib
import os
import re
import sys
from types import ModuleType
from typing import Any
from urllib.parse import urlparse

from dynaorm.client.table import Table
from dynaorm.errors import DynaormError

_REGION = re.compile(r"[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?\Z")


class BadReference(DynaormError):
    """A command's argument that is wrong (a ``MODULE`` or ``MODULE:TABLE`` that does not
    name what it should, options that do not go together): the ``dynaorm`` command says it
    on one line and exits with code 2."""


def import_module(name: str) -> ModuleType:
    """The module ``name``, importable from the working directory as with ``python -m``
    (:class:`BadReference` naming why it cannot be imported)."""
    if not name:
        raise BadReference("empty module name")
    cwd = os.getcwd()
    if cwd not in sys.path and "" not in sys.path:
        sys.path.insert(0, cwd)  # like `python -m`: modules next to you are importable
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name and (name == exc.name or name.startswith(exc.name + ".")):
            raise BadReference(f"no module named {name!r} (looked in {cwd} and sys.path)"
                               ) from exc
        raise BadReference(f"cannot import {name!r}: {exc}") from exc
    except Exception as exc:
        raise BadReference(f"cannot import {name!r}: {type(exc).__name__}: {exc}") from exc


def find_tables(module: ModuleType) -> dict[str, Table]:
    """The :class:`Table` objects a module defines, by attribute name (each table once)."""
    out: dict[str, Table] = {}
    for attr, value in vars(module).items():
        if isinstance(value, Table) and all(value is not t for t in out.values()):
            out[attr] = value
    return out


def load_table(reference: str) -> Table:
    """Resolve ``"package.module:attr"`` to the :class:`Table` it names."""
    module_name, sep, attr = reference.partition(":")
    if not sep or not attr:
        raise BadReference(f"expected MODULE:TABLE (e.g. myapp.models:app), got {reference!r}")
    module = import_module(module_name)
    value = getattr(module, attr, None)
    if not isinstance(value, Table):
        known = ", ".join(find_tables(module)) or "none"
        what = "has no attribute" if value is None else "attribute is not a dynaorm Table:"
        raise BadReference(f"module {module_name!r} {what} {attr!r} (tables there: {known})")
    return value


def connect(table: Table, args: argparse.Namespace) -> Table:
    """The table, pointed where ``--endpoint-url`` / ``--region`` say (else as the
    application binds it: its client, or its connection keywords): ``args`` parsed by a
    parser :func:`connection_options` gave those options."""
    if args.endpoint_url is None and args.region is None:
        return table
    # Credentials and region come from the AWS configuration, as for the application; a
    # local engine with none configured gets dynaorm's dummy ones (client.settings).
    return table.connect(args.endpoint_url or table.endpoint_url, args.region or table.region)


def entity_named(table: Table, name: str) -> type[Any]:
    """The entity class of ``table`` named ``name`` (its class name; :class:`BadReference`
    naming the table's entities if it has none of that name)."""
    found = [c for c in table.entities.values() if c.__name__ == name]
    if not found:
        known = ", ".join(sorted(c.__name__ for c in table.entities.values())) or "none"
        raise BadReference(f"table {table.name!r} has no entity {name!r} (it has: {known})")
    return found[0]


def load_attribute(reference: str) -> object:
    """Resolve ``"package.module:attr"`` to what it names (:class:`BadReference` if it
    names nothing)."""
    module, _, attr = reference.partition(":")
    if not hasattr(found := import_module(module), attr):
        raise BadReference(f"module {module!r} has no attribute {attr!r}")
    return getattr(found, attr)


def endpoint_url(text: str) -> str:
    """``--endpoint-url``'s check: an http(s) URL with a host (and a valid port, if any)."""
    try:
        parsed = urlparse(text)
        port_ok = parsed.port is None or parsed.port > 0
    except ValueError:
        port_ok = False
        parsed = urlparse("")
    if parsed.scheme not in ("http", "https") or not parsed.hostname or not port_ok:
        raise argparse.ArgumentTypeError(
            f"invalid URL {text!r}: expected http(s)://HOST[:PORT], "
            "e.g. http://localhost:8000")
    return text


def region_name(text: str) -> str:
    """``--region``'s check: a syntactically valid AWS region name."""
    if not _REGION.match(text):
        raise argparse.ArgumentTypeError(f"invalid region {text!r}, e.g. eu-west-1")
    return text


def table_command(sub: Any, name: str, run: Any, **texts: str) -> Any:
    """Add the subcommand ``name`` (its ``help`` and ``description`` in ``texts``) to the
    subcommands ``sub``, running ``run(args, out)``, its first argument ``MODULE:TABLE``,
    with :func:`connection_options`."""
    p = sub.add_parser(name, **texts)
    p.add_argument("table", metavar="MODULE:TABLE", help="e.g. myapp.models:app")
    p.set_defaults(run=run)
    connection_options(p)
    return p


def connection_options(parser: argparse.ArgumentParser) -> None:
    """Add ``--endpoint-url`` and ``--region`` to ``parser`` (:func:`connect` reads them)."""
    parser.add_argument("--endpoint-url", metavar="URL", type=endpoint_url,
                        help="DynamoDB endpoint (DynamoDB Local, moto server); default: the "
                             "table's own, else botocore's resolution "
                             "(AWS_ENDPOINT_URL_DYNAMODB, AWS_ENDPOINT_URL, config)")
    parser.add_argument("--region", type=region_name,
                        help="AWS region (default: AWS_REGION / AWS_DEFAULT_REGION)")
