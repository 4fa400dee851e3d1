"""``dynaorm mcp MODULE:table``: the arguments of the command that runs the MCP server of
a table. The server is :mod:`dynaorm.mcp` (an edge above this floor, extra
``dynaorm[mcp]``): it is loaded by name when the command runs, so the command line loads
no MCP SDK for its other commands and this floor imports nothing above it."""

from __future__ import annotations

import argparse
import importlib
from types import ModuleType
from typing import Any, TextIO

__all__ = ["add_mcp_command"]


def add_mcp_command(sub: Any, cli: ModuleType) -> None:
    """Add ``mcp`` to the subcommands ``sub`` of the parser of ``cli``."""
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
    cli._common(p)
    p.set_defaults(run=lambda args, out: _run(cli, args, out))


def _run(cli: ModuleType, args: argparse.Namespace, out: TextIO) -> int:
    try:
        edge = importlib.import_module("dynaorm.mcp.cli")
    except ImportError as exc:
        raise cli.BadReference(f"the MCP server needs the extra: pip install "
                               f"'dynaorm[mcp]' ({exc})") from None
    code: int = edge.serve(cli, args, out)
    return code
