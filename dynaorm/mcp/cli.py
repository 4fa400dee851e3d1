"""What ``dynaorm mcp`` runs (:mod:`dynaorm.mcp.command` parses its arguments): the
server of :func:`dynaorm.mcp.server` over stdio, or streamable HTTP with ``--http``.

Over stdio the server answers a client's ``initialize`` before it loads the ``mcp`` SDK
(whose import is most of a start: its protocol models, and the HTTP stack its server
module imports whatever the transport): the answer is the SDK's own (the same
capabilities, protocol version negotiation and instructions; a test holds them equal),
then the SDK is loaded, handed the ``initialize`` as it came, and its own answer to it
dropped (one that differs is reported on stderr, an error passed on).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any, TextIO

import anyio
import anyio.to_thread

from dynaorm._version import __version__
from dynaorm.cli import BadReference, connect, load_attribute, load_table
from dynaorm.client.table import Table
from dynaorm.mcp.server import instructions, prepare, server

#: the protocol versions the SDK's ``initialize`` handshake takes, oldest first; another
#: is answered with the last (``mcp_types.version.HANDSHAKE_PROTOCOL_VERSIONS``)
HANDSHAKE_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
#: the server's capabilities as the SDK states them: tools and resources, unchanging
CAPABILITIES = {"resources": {"listChanged": False, "subscribe": False},
                "tools": {"listChanged": False}}


def early_answer(line: bytes, name: str, said: str) -> tuple[int | str, bytes] | None:
    """(its id, the answer) to ``line`` if it is a plain ``initialize`` request, as the
    SDK answers it (server ``name``, instructions ``said``); else ``None``: the SDK
    answers it itself."""
    try:  # (as the SDK reads it: UTF-8 without BOM, no lone surrogate)
        msg = json.loads(line.decode())
        json.dumps(msg, ensure_ascii=False).encode()
    except ValueError:
        return None
    if not isinstance(msg, dict) or msg.get("jsonrpc") != "2.0" or (
            msg.get("method") != "initialize") or not msg.keys() <= _REQUEST:
        return None
    rid, params = msg.get("id"), msg.get("params")
    if isinstance(rid, bool) or not isinstance(rid, int | str) or not isinstance(params, dict):
        return None
    version = params.get("protocolVersion")
    if not isinstance(version, str) or not _plain_params(params):
        return None
    result = {"capabilities": CAPABILITIES, "instructions": said,
              "protocolVersion": version if version in HANDSHAKE_VERSIONS
              else HANDSHAKE_VERSIONS[-1],
              "serverInfo": {"name": name, "version": __version__}}
    answer = {"jsonrpc": "2.0", "id": rid, "result": result}
    return rid, (json.dumps(answer, separators=(",", ":")) + "\n").encode()


def _plain_params(params: dict[str, Any]) -> bool:
    """Whether an ``initialize``'s capabilities and ``clientInfo`` are of a shape the SDK
    is sure to take (anything else: the SDK answers, or refuses, it itself)."""
    caps, info = params.get("capabilities"), params.get("clientInfo")
    if "_meta" in params or not isinstance(caps, dict) or not isinstance(info, dict):
        return False
    return (all(isinstance(v, dict) and _plain(k, v) for k, v in caps.items())
            and _KNOWN_INFO.isdisjoint(info)
            and all(isinstance(info.get(k), str) for k in ("name", "version"))
            and isinstance(info.get("title", ""), str))


#: a request's members (one with ``result`` or ``error`` too the SDK may read as an answer)
_REQUEST = frozenset({"jsonrpc", "id", "method", "params"})
#: fields of the SDK's ``clientInfo`` the early answer leaves to it (it checks their shape)
_KNOWN_INFO = frozenset({"description", "websiteUrl", "icons"})


def _plain(key: str, value: dict[str, Any]) -> bool:
    """A client capability the SDK takes as it is (what it would refuse, or might: the
    early answer leaves it to the SDK, which then answers the ``initialize``)."""
    if key == "roots":
        return value.keys() <= {"listChanged"} and isinstance(
            value.get("listChanged", False), bool)
    if key in ("experimental", "extensions"):
        return all(isinstance(v, dict) for v in value.values())
    if key in ("sampling", "elicitation", "tasks"):
        return all(v == {} for v in value.values())
    return True  # (a capability the SDK does not know: ignored)


def _options(args: argparse.Namespace) -> dict[str, Any]:
    """The keywords of :func:`server` the arguments give (a usage error is BadReference)."""
    bad = BadReference
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
        found = load_attribute(args.embed)
        if not callable(found):
            raise bad(f"--embed {args.embed!r} is not a function")
        embed = found
    writes = [w.strip() for w in args.writes.split(",") if w.strip()]
    return {"writes": writes, "scope": scope, "embed": embed,
            "tenant_header": args.tenant_header}


def serve(args: argparse.Namespace, out: TextIO) -> int:
    """Run the server until its client goes (stdio) or the process is stopped (HTTP)."""
    table = connect(load_table(args.table), args)
    options = _options(args)
    try:
        _, fields = prepare(table, **options)
        srv = server(table, **options) if args.http else None
    except ValueError as exc:
        raise BadReference(str(exc)) from None
    if srv is None:
        _stdio(table, options, instructions(table, fields))
        return 0
    import uvicorn  # (a server is made first only with --http)

    host, _, port = args.http.rpartition(":")
    if not host or not port.isdigit():
        raise BadReference(f"--http takes HOST:PORT, got {args.http!r}")
    app = srv.streamable_http_app(host=host)
    uvicorn.run(app, host=host, port=int(port), log_level="warning")
    return 0


def _wire() -> tuple[int, int]:
    """The process's stdin and stdout as the wire (descriptors), read and written by the
    server alone: fd 0 then reads nothing and fd 1 writes to stderr (a stray print misses
    the wire), as the SDK's own stdio transport does."""
    wire_in, wire_out = os.dup(0), os.dup(1)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    sys.stdout.flush()
    os.dup2(2, 1)
    return wire_in, wire_out


def _first_line(fd: int) -> tuple[bytes, bytes]:
    """The first line read from ``fd``, and what was read after it."""
    data = bytearray()
    while b"\n" not in data:
        chunk = os.read(fd, _CHUNK)
        if not chunk:
            break
        data += chunk
    line, end, rest = bytes(data).partition(b"\n")
    return line + end, rest


def _stdio(table: Table, options: Mapping[str, Any], said: str) -> None:
    """Serve over stdio: an ``initialize`` first answered at once, then the SDK."""
    wire_in, wire_out = _wire()
    first, rest = _first_line(wire_in)
    early = early_answer(first, f"dynaorm-{table.name}", said) if first else None
    if early is not None:
        _write_all(wire_out, early[1])
    srv = server(table, **options)  # (the SDK is loaded here)

    async def run() -> None:
        from mcp.server.stdio import stdio_server

        out = _Out(wire_out, None if early is None else early[0],
                   None if early is None else json.loads(early[1])["result"])
        await out.open()
        lines = _Lines(first, rest, wire_in, out)
        try:
            async with stdio_server(lines, out) as (read, write):  # type: ignore[arg-type]
                await srv.run(read, write, srv.create_initialization_options())
        finally:  # (left open, its pipe is a ResourceWarning at exit)
            out.close()

    anyio.run(run)


#: how much is read from stdin at once
_CHUNK = 1 << 16


def _write_all(fd: int, data: bytes) -> None:
    while data:
        data = data[os.write(fd, data):]


class _Lines:
    """The SDK's stdin: the first line (an ``initialize`` answered early: what follows it
    waits for the SDK's own answer, as a client waits for the answer before it sends
    more), then the lines of the rest, read by the event loop where stdin is a pipe (no
    thread a message), else by a thread."""

    def __init__(self, first: bytes, buffered: bytes, fd: int, out: _Out):
        self.first, self.buffered, self.fd, self.out = first, buffered, fd, out

    async def __aiter__(self) -> AsyncIterator[str]:
        import asyncio

        if self.first:
            yield self.first.decode("utf-8", "replace")
            if self.out.answered is not None:
                await self.out.initialized.wait()
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader(limit=_CHUNK)
        read: Callable[[], Awaitable[bytes]]
        try:
            await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader),
                                         os.fdopen(self.fd, "rb", buffering=0, closefd=False))
            read = lambda: reader.read(_CHUNK)  # noqa: E731
        except (OSError, ValueError, NotImplementedError):  # (a file, a terminal)
            read = lambda: anyio.to_thread.run_sync(os.read, self.fd, _CHUNK)  # noqa: E731
        data = bytearray(self.buffered)
        while True:
            while (end := data.find(b"\n")) >= 0:
                yield data[:end + 1].decode("utf-8", "replace")
                del data[:end + 1]
            chunk = await read()
            if not chunk:
                break
            data += chunk
        if data:
            yield data.decode("utf-8", "replace")


class _Out:
    """The SDK's stdout (written by the event loop where it is a pipe, else by a thread),
    but for its own answer to the ``initialize`` already answered (dropped; one that says
    otherwise is reported on stderr, an error passed on)."""

    def __init__(self, fd: int, answered: int | str | None,
                 result: Mapping[str, Any] | None):
        self.fd, self.answered, self.result = fd, answered, result
        self.writer: Any = None
        #: set once the SDK has answered the ``initialize`` answered early
        self.initialized = anyio.Event()

    async def open(self) -> None:
        import asyncio

        loop = asyncio.get_running_loop()
        try:
            transport, protocol = await loop.connect_write_pipe(
                asyncio.streams.FlowControlMixin,
                os.fdopen(self.fd, "wb", buffering=0, closefd=False))
        except (OSError, ValueError, NotImplementedError):
            return  # (a file, a terminal)
        self.writer = asyncio.StreamWriter(transport, protocol, None, loop)

    async def write(self, text: str) -> None:
        if self.answered is not None:
            msg = json.loads(text)
            if isinstance(msg, dict) and msg.get("id") == self.answered and (
                    "result" in msg or "error" in msg):
                self.answered = None
                self.initialized.set()
                if msg.get("result") == self.result:
                    return
                print(f"dynaorm mcp: the SDK answers initialize otherwise than the early "
                      f"answer: {text.strip()[:2000]}", file=sys.stderr)
                if "result" in msg:
                    return
        if self.writer is not None:
            self.writer.write(text.encode())
        else:
            await anyio.to_thread.run_sync(_write_all, self.fd, text.encode())

    async def flush(self) -> None:
        if self.writer is not None:
            await self.writer.drain()

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
