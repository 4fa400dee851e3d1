"""The MCP server of a table (the official ``mcp`` SDK's low-level ``Server``): the tools
of :mod:`dynaorm.mcp.tools`, the model as a resource, each call run by a session of its
own (scoped to the caller's tenant when the server is) without blocking the event loop:
a get or find by an :class:`~dynaorm.AsyncSession` on the loop, another call by a
:class:`~dynaorm.Session` in a worker thread, so concurrent calls do not wait on each
other. The SDK is imported
when a server is made, not with this module (``dynaorm mcp`` answers ``initialize`` over
stdio before it loads the SDK: :mod:`dynaorm.mcp.cli`)."""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

from dynaorm import AsyncSession, DynaormError, Entity, ScopeError, Session, Table, __version__
from dynaorm.mcp.tools import (
    KEYED_READS,
    Cursors,
    Embed,
    Tool,
    ToolError,
    check_arguments,
    message_of,
    run,
    tools_of,
)

if TYPE_CHECKING:
    import mcp_types as types
    from mcp.server import Server

__all__ = ["MODEL_URI", "server"]

#: The URI of the model resource.
MODEL_URI = "dynaorm://model"


def _tenant_of(ctx: Any, header: str) -> str:
    """The tenant an HTTP request names in ``header`` (set by the operator's
    authenticating proxy), else :class:`ScopeError`."""
    request = getattr(ctx, "request", None)
    headers = getattr(request, "headers", None)
    values = [] if headers is None else (
        headers.getlist(header) if hasattr(headers, "getlist") else [headers.get(header)])
    if len(values) > 1:  # (a proxy that appends its header after the client's: refused)
        raise ScopeError(f"this server is scoped per request: the request carries "
                         f"{len(values)} {header!r} headers, not one")
    value = str(values[0]).strip() if values and values[0] is not None else ""
    if not value:
        raise ScopeError(f"this server is scoped per request: the request carries no "
                         f"{header!r} header")
    return value


def _on_asyncio(table: Table) -> bool:
    """Whether a call can read through an :class:`~dynaorm.AsyncSession` here: on an
    asyncio loop (not trio), the table's client on dynaorm's own wire or botocore's with
    aiobotocore installed (``dynaorm[async]``)."""
    import asyncio

    try:
        asyncio.get_running_loop()
    except RuntimeError:  # (another async library's loop)
        return False
    return getattr(table.db, "wire", None) != "botocore" or _has_aiobotocore()


@functools.cache
def _has_aiobotocore() -> bool:
    import importlib.util

    return importlib.util.find_spec("aiobotocore") is not None


def prepare(table: Table, writes: Sequence[str | type[Entity]] = (),
            scope: Mapping[str, Any] | str | None = None, embed: Embed | None = None,
            tenant_header: str | None = None) -> tuple[dict[str, Tool], tuple[str, ...]]:
    """The tools of :func:`server` and the scope's fields, checked (no SDK: a wrong
    argument is refused before anything is served)."""
    if isinstance(scope, str):
        if not tenant_header:
            raise DynaormError("scope= a field name takes the tenant from each request: "
                               "give tenant_header= the header that carries it")
        fields: tuple[str, ...] = (scope,)
    else:
        fields = tuple(scope or ())
    return tools_of(table, writes, fields, embed), fields


def server(table: Table, *, writes: Sequence[str | type[Entity]] = (),
           scope: Mapping[str, Any] | str | None = None, embed: Embed | None = None,
           tenant_header: str | None = None, threads: bool = True) -> Server[Any]:
    """A Model Context Protocol server for ``table`` (see the guide "dynaorm for agents").

    Its tools come from the model: for each entity, one per access pattern (get, find by
    a unique field, a query of its partition and of each index it lands in, a history of
    a versioned entity, a search of each vector index it has, taking ``text`` too when
    ``embed`` turns text into a vector), and ``explain``; writes (``save_<entity>``,
    ``update_<entity>`` with the version as If-Match, ``delete_<entity>``) only for the
    entities named in ``writes``, each taking an ``idempotency_key``. Results are JSON
    (encrypted fields left out; ``bytes`` as base64 text, as arguments take them; pages
    with opaque cursors); a dynaorm error is a tool
    error with its message. The model is the resource ``dynaorm://model``.

    ``scope``: ``{"tenant_id": "t1"}`` holds every call to that tenant (a scoped
    :class:`~dynaorm.Session`); a field name (``"tenant_id"``) takes the value from each
    HTTP request's ``tenant_header`` instead (bind that header to the caller's
    authentication in front of the server). Entities a tenant scope cannot cover get no
    tools.

    ``threads=True`` runs no call on the event loop's thread: a get or find awaits an
    :class:`~dynaorm.AsyncSession` on the loop (on asyncio; on botocore's wire with
    aiobotocore), any other call runs in a worker thread, so concurrent calls overlap;
    ``False`` runs each call by a blocking :class:`~dynaorm.Session` on the event loop
    (one call at a time: a host that sends one call after another over stdio).
    """
    import anyio.to_thread
    import mcp_types as types
    from mcp.server import Server

    tools, fields = prepare(table, writes, scope, embed, tenant_header)
    cursors = Cursors(table)
    listed = [types.Tool(name=t.name, description=t.description, input_schema=t.input_schema,
                         annotations=types.ToolAnnotations(read_only_hint=not t.writes,
                                                           destructive_hint=t.kind == "delete"))
              for t in tools.values()]

    def scope_of(ctx: Any) -> dict[str, Any]:
        if isinstance(scope, str):
            return {scope: _tenant_of(ctx, tenant_header or "")}
        return dict(scope or {})

    def call(tool: Tool, args: dict[str, Any], tenant: dict[str, Any]) -> Any:
        session = Session(table, scope=tenant or None)
        return run(tool, args, session, tenant, embed, tools, cursors)

    async def answer(tool: Tool, args: dict[str, Any], tenant: dict[str, Any]) -> Any:
        if not threads:
            return call(tool, args, tenant)
        if tool.kind in KEYED_READS and _on_asyncio(table):  # (no thread: not blocking)
            return await run(tool, args, AsyncSession(table, scope=tenant or None), tenant,
                             embed, tools, cursors)
        return await anyio.to_thread.run_sync(call, tool, args, tenant)

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=listed)

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> dict[str, Any]:
        # (the result in its wire form: the SDK validates and shapes it once, as it does
        # any result; a CallToolResult made here would be validated and dumped first)
        try:
            tool = tools.get(params.name)
            if tool is None:
                raise ToolError(f"no tool {params.name[:100]!r} (tools: {sorted(tools)})")
            args = dict(params.arguments or {})
            check_arguments(tool, args)
            result = await answer(tool, args, scope_of(ctx))
        except Exception as exc:  # (a tool error with the message, never a traceback)
            return {"content": [{"type": "text", "text": message_of(exc)}], "isError": True,
                    "resultType": "complete"}
        return {"content": [{"type": "text", "text": json.dumps(
                    result, separators=(",", ":"), default=str)}],
                "structuredContent": result, "isError": False, "resultType": "complete"}

    async def list_resources(ctx: Any, params: Any) -> types.ListResourcesResult:
        return types.ListResourcesResult(resources=[types.Resource(
            uri=MODEL_URI, name="model", mime_type="application/json",
            description=f"The model of table {table.name!r}: entities, keys, indexes, "
                        "rules, access patterns")])

    async def read_resource(ctx: Any, params: types.ReadResourceRequestParams
                            ) -> types.ReadResourceResult:
        if str(params.uri) != MODEL_URI:
            raise ValueError(f"no resource {str(params.uri)[:200]!r}")
        text = json.dumps(table.model(), default=str, indent=1)
        return types.ReadResourceResult(contents=[types.TextResourceContents(
            uri=MODEL_URI, mime_type="application/json", text=text)])

    return Server(f"dynaorm-{table.name}", version=__version__,
                  instructions=instructions(table, fields),
                  # (a handler may answer a dict: the runner's HandlerResult)
                  on_list_tools=list_tools, on_call_tool=cast(Any, call_tool),
                  on_list_resources=list_resources, on_read_resource=read_resource)


def instructions(table: Table, scope: Sequence[str]) -> str:
    """What the server tells a client of itself when it initializes."""
    said = (f"Tools of the DynamoDB table {table.name!r}, generated by dynaorm from its "
            f"model (resource {MODEL_URI}). Reads: get_/find_/query_/history_/search_; "
            "writes where allowed: save_/update_/delete_ (pass version from the item read "
            "as If-Match, and an idempotency_key to retry safely). Pages return a cursor: "
            "pass it back unchanged. explain tells what a call would cost.")
    if scope:
        said += f" Every call is held to one tenant ({', '.join(scope)})."
    return said



