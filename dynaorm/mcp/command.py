"""``dynaorm mcp MODULE:table``: the command that runs the MCP server of a table, found by
its entry point (group ``dynaorm.commands``): the ``dynaorm`` command imports nothing of
the MCP edge. Adding the command loads no MCP SDK; the server (:mod:`dynaorm.mcp.cli`,
extra ``dynaorm[mcp]``) is imported when the command runs."""

import argparse
from typing import Any, TextIO

from dynaorm.cli import BadReference, connection_options


def add_mcp_command(sub: Any) -> None:
    """Add ``mcp`` to the subcommands ``sub`` of the ``dynaorm`` command's parser."""
    p = sub.add_parser("mcp", help="run a Model Context Protocol server of the table's model",
                       description="Serve MODULE:TABLE to agents: a tool per access pattern, "
                                   "explain, the model as a resource; writes only for the "
                                   "entities named in --writes. stdio by default.")
    p.add_argument("table", metavar="MODULE:TABLE", help="e.g. myapp.models:app")
    p.add_argument("--http", metavar="HOST:PORT", default=None,
                   help="serve streamable HTTP on HOST:PORT (path /mcp) instead of stdio")
    p.add_argument("--writes", metavar="ENTITY,...", default="",
                   help="entities the agent may save, update and delete")
    p.add_argument("--scope", metavar="FIELD", default=None,
                   help="hold every call to one tenant: the key field that names it")
    p.add_argument("--tenant", metavar="VALUE", default=None,
                   help="the tenant (stdio, with --scope)")
    p.add_argument("--tenant-header", metavar="HEADER", default=None,
                   help="the HTTP request header the tenant comes from (--http with "
                        "--scope; set it in an authenticating proxy, never by the client)")
    p.add_argument("--embed", metavar="MODULE:FUNCTION", default=None,
                   help="a function str -> list[float]: search tools then take text")
    connection_options(p)
    p.set_defaults(run=_run)


def _run(args: argparse.Namespace, out: TextIO) -> int:
    try:
        from dynaorm.mcp import cli
    except ImportError as exc:
        raise BadReference(f"the MCP server needs the extra: pip install 'dynaorm[mcp]' "
                           f"({exc})") from None
    return cli.serve(args, out)
