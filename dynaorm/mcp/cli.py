"""What ``dynaorm mcp`` runs (:mod:`dynaorm.tools.mcp_command` parses its arguments): the
server of :func:`dynaorm.mcp.server` over stdio, or streamable HTTP with ``--http``."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from types import ModuleType
from typing import Any, TextIO

import anyio

from dynaorm.mcp.server import server

__all__ = ["serve"]


def _options(cli: ModuleType, args: argparse.Namespace) -> dict[str, Any]:
    """The keywords of :func:`server` the arguments give (a usage error is BadReference)."""
    bad = cli.BadReference
    scope: dict[str, Any] | str | None = None
    if args.scope and args.http:
        if not args.tenant_header or args.tenant:
            raise bad("--scope with --http takes the tenant from --tenant-header HEADER "
                      "(a header your authenticating proxy sets), not --tenant")
        scope = args.scope
    elif args.scope:
        if not args.tenant:
            raise bad("--scope FIELD over stdio takes --tenant VALUE")
        scope = {args.scope: args.tenant}
    elif args.tenant or args.tenant_header:
        raise bad("--tenant and --tenant-header need --scope FIELD")
    embed: Callable[[str], Any] | None = None
    if args.embed:
        found = cli._attr(args.embed)
        if not callable(found):
            raise bad(f"--embed {args.embed!r} is not a function")
        embed = found
    writes = [w.strip() for w in args.writes.split(",") if w.strip()]
    return {"writes": writes, "scope": scope, "embed": embed,
            "tenant_header": args.tenant_header}


def serve(cli: ModuleType, args: argparse.Namespace, out: TextIO) -> int:
    """Run the server until its client goes (stdio) or the process is stopped (HTTP)."""
    table = cli._connect(cli.load_table(args.table), args)
    options = _options(cli, args)
    try:
        srv = server(table, **options)
    except ValueError as exc:
        raise cli.BadReference(str(exc)) from None
    if args.http:
        import uvicorn

        host, _, port = args.http.rpartition(":")
        if not host or not port.isdigit():
            raise cli.BadReference(f"--http takes HOST:PORT, got {args.http!r}")
        app = srv.streamable_http_app(host=host)
        uvicorn.run(app, host=host, port=int(port), log_level="warning")
        return 0

    async def stdio() -> None:
        from mcp.server.stdio import stdio_server

        async with stdio_server() as (read, write):
            await srv.run(read, write, srv.create_initialization_options())

    anyio.run(stdio)
    return 0
