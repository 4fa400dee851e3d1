"""A small HTTP/1.1 client for DynamoDB's one kind of exchange: a ``POST`` with a body,
answered by a status, headers and a body, over keep-alive connections (TCP or TLS).

DynamoDB's requests never need what a general client carries (redirects, cookies,
compression, multipart, ``Expect``), so :class:`HTTPPool` writes the request in one
``sendall`` and reads the answer with a buffered reader: about a tenth of the client CPU
urllib3 and ``http.client`` spend on the same exchange (``email``-based header parsing,
per-request pool and timeout objects). Requests through a proxy keep urllib3
(:class:`~dynaorm.wire.SyncWire` chooses).

Failures are raised as three exceptions, each saying what is known of the request:

- :class:`ConnectFailed`: no connection (refused, DNS, TLS handshake): nothing was sent;
- :class:`AnswerTimeout`: sent, and no complete answer within the read timeout;
- :class:`ConnectionLost`: the connection broke while sending or reading the answer.

A pooled connection is reused only while it is idle and unread (a server that closed it
makes it readable: it is dropped before use, as urllib3 does).
"""

from __future__ import annotations

import asyncio
import contextlib
import select
import socket
import ssl
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import IO

from dynaorm.private_apis import stream_buffered

__all__ = [
    "AnswerTimeout",
    "AsyncHTTPPool",
    "ConnectFailed",
    "ConnectionLost",
    "Destination",
    "HTTPPool",
    "tls_context",
]

#: the longest status or header line read (an answer with a longer one is refused)
MAX_LINE = 65536
#: the most header lines an answer may have
MAX_HEADERS = 100


@dataclass(frozen=True, slots=True)
class Destination:
    """Where a pool's connections go and how they behave (both pools take one)."""

    host: str
    """The host connected to (and the TLS server name)."""
    port: int
    """The TCP port."""
    host_header: str
    """The ``Host`` header sent (as the request was signed: default ports dropped)."""
    tls: Callable[[], ssl.SSLContext] | None
    """Makes the TLS context on the first connection (a bad CA bundle fails there, as it
    does with botocore); ``None`` for plain TCP."""
    connect_timeout: float | None
    """Seconds to connect (``None``: no limit)."""
    read_timeout: float | None
    """Seconds to wait for a complete answer (``None``: no limit)."""
    maxsize: int = 10
    """Idle connections kept at most."""

    def __str__(self) -> str:
        return f"{self.host}:{self.port}"


class ConnectFailed(OSError):
    """No connection could be made: the request was not sent."""


class AnswerTimeout(OSError):
    """The request was sent and no complete answer came within the read timeout."""


class ConnectionLost(OSError):
    """The connection broke after the request started to go out: it may have arrived."""


def tls_context(verify: bool | str, client_cert: str | tuple[str, str] | None = None
                ) -> ssl.SSLContext:
    """A TLS context made as botocore makes its own (``create_urllib3_context``): verified
    against the CA bundle ``verify`` (``False``: no verification), with an optional client
    certificate (a file, or ``(cert, key)``)."""
    from botocore.httpsession import create_urllib3_context

    context: ssl.SSLContext = create_urllib3_context()
    if verify is False:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    else:
        context.check_hostname = True
        context.verify_mode = ssl.CERT_REQUIRED
        if verify is not True:
            context.load_verify_locations(verify, None, None)
        else:
            context.load_default_certs()
    if client_cert:
        if isinstance(client_cert, str):
            context.load_cert_chain(client_cert)
        else:
            context.load_cert_chain(client_cert[0], client_cert[1])
    return context


def _message(path: str, host_header: str, headers: dict[str, str], body: bytes) -> bytes:
    """The request as it goes out: request line, ``Host``, ``headers``,
    ``Content-Length``, body."""
    head = [f"POST {path} HTTP/1.1", f"Host: {host_header}"]
    head += [f"{k}: {v}" for k, v in headers.items()]
    head.append(f"Content-Length: {len(body)}")
    return ("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + body


def _status(line: bytes) -> tuple[bytes, int]:
    """The HTTP version and status code of a status line."""
    parts = line.split(None, 2)
    if len(parts) < 2 or not parts[0].startswith(b"HTTP/1."):
        raise ConnectionLost(f"not an HTTP answer: {line[:80]!r}")
    return parts[0], int(parts[1])


def _head(block: bytes) -> tuple[bytes, int, dict[str, str]]:
    """The HTTP version, status and headers (lower-case names) of an answer's head: its
    status line and header lines, up to the empty line."""
    lines = block.splitlines()
    version, status = _status(lines[0] if lines else b"")
    headers: dict[str, str] = {}
    for line in lines[1:]:
        if not line:
            break
        name, _, value = line.decode("latin-1").partition(":")
        headers[name.strip().lower()] = value.strip()
    if len(headers) > MAX_HEADERS:
        raise ConnectionLost("too many header lines in the answer")
    return version, status, headers


def _framing(version: bytes, status: int, headers: dict[str, str]) -> tuple[str, int, bool]:
    """How the body of an answer is framed: ``("chunked", 0, keep)``, ``("length", n,
    keep)``, ``("none", 0, keep)`` or ``("close", 0, False)`` (it runs to the end of the
    connection), and whether the connection may serve another request."""
    keep = version == b"HTTP/1.1" and headers.get("connection", "").lower() != "close"
    if "chunked" in headers.get("transfer-encoding", "").lower():
        return "chunked", 0, keep
    if "content-length" in headers:
        return "length", int(headers["content-length"]), keep
    if status in (204, 304):
        return "none", 0, keep
    return "close", 0, False


def _quiet(sock: socket.socket) -> bool:
    """Nothing to read on the idle ``sock``: a keep-alive socket the server closed (or
    wrote to unasked) is readable, and must not carry another request."""
    try:
        readable, _, _ = select.select([sock], [], [], 0)
    except (OSError, ValueError):
        return False
    return not readable


class _Connection:
    __slots__ = ("reader", "sock")

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.reader: IO[bytes] = sock.makefile("rb")

    def close(self) -> None:
        for part in (self.reader, self.sock):
            with contextlib.suppress(OSError):
                part.close()

    def idle(self) -> bool:
        """Still usable: open and with nothing to read (a closed or talking peer makes
        the socket readable)."""
        sock = self.sock
        if sock.fileno() < 0:
            return False
        if isinstance(sock, ssl.SSLSocket) and sock.pending():
            return False
        return _quiet(sock)


class HTTPPool:
    """Keep-alive connections to one ``host:port`` (thread-safe: a connection serves one
    exchange at a time; at most ``maxsize`` idle ones are kept)."""

    def __init__(self, destination: Destination) -> None:
        #: where the connections go
        self.destination = destination
        self._context: ssl.SSLContext | None = None
        self._idle: list[_Connection] = []
        self._lock = threading.Lock()

    # -- connections -----------------------------------------------------------------
    def _connect(self) -> _Connection:
        dest = self.destination
        try:
            sock = socket.create_connection((dest.host, dest.port), dest.connect_timeout)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if dest.tls is not None:
                if self._context is None:
                    self._context = dest.tls()
                sock = self._context.wrap_socket(sock, server_hostname=dest.host)
        except (OSError, ssl.SSLError) as exc:
            raise ConnectFailed(f"cannot connect to {dest}: {exc}") from exc
        sock.settimeout(dest.read_timeout)
        return _Connection(sock)

    def _take(self) -> _Connection:
        while True:
            with self._lock:
                conn = self._idle.pop() if self._idle else None
            if conn is None:
                return self._connect()
            if conn.idle():
                return conn
            conn.close()

    def _give_back(self, conn: _Connection) -> None:
        with self._lock:
            if len(self._idle) < self.destination.maxsize:
                self._idle.append(conn)
                return
        conn.close()

    def close(self) -> None:
        """Close every idle connection."""
        with self._lock:
            idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()

    # -- one exchange ----------------------------------------------------------------
    def post(self, path: str, body: bytes, headers: dict[str, str]
             ) -> tuple[int, dict[str, str], bytes]:
        """``POST`` ``body`` to ``path`` with ``headers`` (``Host`` and ``Content-Length``
        added); the answer's status, headers (lower-case names) and body."""
        message = _message(path, self.destination.host_header, headers, body)
        conn = self._take()
        try:
            try:
                conn.sock.sendall(message)
            except OSError as exc:
                raise ConnectionLost(f"sending to {self.destination}: {exc}") from exc
            status, answer, data, keep = _read_answer(conn.reader)
        except BaseException:
            conn.close()
            raise
        if keep:
            self._give_back(conn)
        else:
            conn.close()
        return status, answer, data

def _line(reader: IO[bytes]) -> bytes:
    line = reader.readline(MAX_LINE + 1)
    if len(line) > MAX_LINE:
        raise ConnectionLost("an answer line is too long")
    if not line:
        raise ConnectionLost("the connection closed before the answer was complete")
    return line


def _read_answer(reader: IO[bytes]) -> tuple[int, dict[str, str], bytes, bool]:
    """One answer: status, headers, body and whether the connection may be reused."""
    try:
        while True:  # (1xx answers are skipped)
            lines = [_line(reader)]
            while lines[-1] not in (b"\r\n", b"\n") and len(lines) <= MAX_HEADERS + 1:
                lines.append(_line(reader))
            version, status, headers = _head(b"".join(lines))
            if status >= 200:
                break
        framing, length, keep = _framing(version, status, headers)
        if framing == "chunked":
            data = _read_chunked(reader)
        elif framing == "length":
            data = reader.read(length)
            if len(data) != length:
                raise ConnectionLost("the connection closed in the middle of the answer")
        elif framing == "none":
            data = b""
        else:
            data = reader.read()
    except TimeoutError as exc:  # (socket.timeout)
        raise AnswerTimeout(f"no complete answer in time: {exc}") from exc
    except ValueError as exc:  # a malformed status or length
        raise ConnectionLost(f"a malformed answer: {exc}") from exc
    except (ssl.SSLError, ConnectionError) as exc:
        raise ConnectionLost(str(exc)) from exc
    except OSError as exc:
        if isinstance(exc, ConnectionLost):
            raise
        raise ConnectionLost(str(exc)) from exc
    return status, headers, data, keep


def _read_chunked(reader: IO[bytes]) -> bytes:
    parts: list[bytes] = []
    while True:
        size = int(_line(reader).split(b";", 1)[0].strip(), 16)
        if size == 0:
            while _line(reader) not in (b"\r\n", b"\n"):  # trailers
                pass
            return b"".join(parts)
        chunk = reader.read(size)
        if len(chunk) != size:
            raise ConnectionLost("the connection closed in the middle of a chunk")
        parts.append(chunk)
        _line(reader)  # the chunk's CRLF


# -- the same on asyncio ------------------------------------------------------------------
class _AsyncConnection:
    __slots__ = ("reader", "writer")

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer

    def idle(self) -> bool:
        """Still usable: open, not at its end, nothing unread, and a socket with nothing to
        read (the loop may not have run since the server closed it: its FIN is seen on the
        socket before the stream knows)."""
        if self.writer.is_closing() or self.reader.at_eof() or stream_buffered(self.reader):
            return False
        sock = self.writer.get_extra_info("socket")
        return sock is None or _quiet(sock)

    def abort(self) -> None:
        self.writer.transport.abort()

    async def close(self) -> None:
        self.writer.close()
        with contextlib.suppress(OSError, ssl.SSLError):
            await self.writer.wait_closed()


class AsyncHTTPPool:
    """:class:`HTTPPool` on asyncio streams, for one event loop (the connections belong to
    the loop that opened them)."""

    def __init__(self, destination: Destination) -> None:
        #: where the connections go
        self.destination = destination
        self._context: ssl.SSLContext | None = None
        self._idle: list[_AsyncConnection] = []

    async def _connect(self) -> _AsyncConnection:
        dest = self.destination
        try:
            if dest.tls is not None and self._context is None:
                self._context = await asyncio.to_thread(dest.tls)  # (reads a CA bundle)
            async with asyncio.timeout(dest.connect_timeout):
                reader, writer = await asyncio.open_connection(
                    dest.host, dest.port, ssl=self._context,
                    server_hostname=dest.host if self._context is not None else None,
                    limit=MAX_LINE + 2)
        except (OSError, ssl.SSLError) as exc:  # (TimeoutError included)
            raise ConnectFailed(f"cannot connect to {dest}: {exc}") from exc
        return _AsyncConnection(reader, writer)

    async def _take(self) -> _AsyncConnection:
        while self._idle:
            conn = self._idle.pop()
            if conn.idle():
                return conn
            conn.abort()
        return await self._connect()

    async def close(self) -> None:
        """Close every idle connection."""
        idle, self._idle = self._idle, []
        for conn in idle:
            await conn.close()

    async def post(self, path: str, body: bytes, headers: dict[str, str]
                   ) -> tuple[int, dict[str, str], bytes]:
        """As :meth:`HTTPPool.post`."""
        message = _message(path, self.destination.host_header, headers, body)
        conn = await self._take()
        try:
            try:
                conn.writer.write(message)
                await conn.writer.drain()
            except (OSError, ssl.SSLError) as exc:
                raise ConnectionLost(f"sending to {self.destination}: {exc}") from exc
            try:
                async with asyncio.timeout(self.destination.read_timeout):
                    status, answer, data, keep = await _read_answer_async(conn.reader)
            except TimeoutError as exc:
                raise AnswerTimeout(f"no complete answer in time: {exc}") from exc
        except BaseException:
            conn.abort()
            raise
        if keep and len(self._idle) < self.destination.maxsize:
            self._idle.append(conn)
        else:
            conn.abort()
        return status, answer, data


async def _line_async(reader: asyncio.StreamReader, end: bytes = b"\n") -> bytes:
    try:
        line = await reader.readuntil(end)
    except asyncio.IncompleteReadError as exc:
        raise ConnectionLost("the connection closed before the answer was complete") from exc
    except asyncio.LimitOverrunError as exc:
        raise ConnectionLost("an answer line is too long") from exc
    return line


async def _read_answer_async(reader: asyncio.StreamReader
                             ) -> tuple[int, dict[str, str], bytes, bool]:
    """:func:`_read_answer` on an asyncio stream (the caller bounds it in time)."""
    try:
        while True:  # (1xx answers are skipped)
            version, status, headers = _head(await _line_async(reader, b"\r\n\r\n"))
            if status >= 200:
                break
        framing, length, keep = _framing(version, status, headers)
        if framing == "chunked":
            parts: list[bytes] = []
            while True:
                size = int((await _line_async(reader)).split(b";", 1)[0].strip(), 16)
                if size == 0:
                    while await _line_async(reader) not in (b"\r\n", b"\n"):  # trailers
                        pass
                    break
                parts.append(await reader.readexactly(size))
                await _line_async(reader)
            data = b"".join(parts)
        elif framing == "length":
            data = await reader.readexactly(length)
        elif framing == "none":
            data = b""
        else:
            data = await reader.read()
    except asyncio.IncompleteReadError as exc:
        raise ConnectionLost("the connection closed in the middle of the answer") from exc
    except ValueError as exc:  # a malformed status or length
        raise ConnectionLost(f"a malformed answer: {exc}") from exc
    except (ssl.SSLError, ConnectionError) as exc:
        raise ConnectionLost(str(exc)) from exc
    return status, headers, data, keep
