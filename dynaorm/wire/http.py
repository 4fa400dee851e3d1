"""A small HTTP/1.1 client for DynamoDB's one kind of exchange: a ``POST`` with a body,
answered by a status, headers and a body, over keep-alive connections (TCP or TLS).

DynamoDB's requests never need what a general client carries (redirects, cookies,
compression, multipart, ``Expect``), so :class:`HTTPPool` writes the request in one
``sendall`` and feeds what ``recv`` returns to a parser: about a tenth of the client CPU
urllib3 and ``http.client`` spend on the same exchange (``email``-based header parsing,
per-request pool and timeout objects). Requests through a proxy keep urllib3
(:class:`~dynaorm.wire.SyncWire` chooses).

The answer is framed by one sans-I/O state machine both pools feed
(:class:`~dynaorm.wire.connection.AnswerReader`, llhttp through ``httptools``). Failures are
raised as five exceptions, each saying what is known of the request:

- :class:`ConnectFailed`: no connection (refused, DNS, TLS handshake): nothing was sent;
- :class:`SendFailed`: the request could not be sent whole (the connection broke, or the
  server stopped reading for longer than the read timeout): it cannot have been applied;
- :class:`AnswerTimeout`: sent, and no complete answer within the read timeout (a deadline
  for the whole answer);
- :class:`ConnectionLost`: sent, and the connection broke before the answer was complete;
- :class:`BadAnswer`: sent, and answered with bytes that are not an acceptable HTTP/1.1
  answer (malformed framing, a head or body over the limits).

A pooled connection is reused only when its last answer ended cleanly, the server did not
ask to close, nothing came after the answer, and it is still idle and unread when taken
(a server that closed it makes it readable: it is dropped before use).
"""

from __future__ import annotations

import contextlib
import os
import select
import selectors
import socket
import ssl
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

from dynaorm.errors import (
    AnswerLostError,
    BadAnswerError,
    DynaormError,
    RequestError,
    RequestNotSentError,
)
from dynaorm.private_apis import stream_buffered
from dynaorm.wire.connection import AnswerReader, MalformedAnswer

if TYPE_CHECKING:  # asyncio loads with the first async request: a sync process never pays it
    import asyncio

__all__ = [
    "AnswerTimeout",
    "AsyncHTTPPool",
    "BadAnswer",
    "ConnectFailed",
    "ConnectionLost",
    "Destination",
    "HTTPPool",
    "SendFailed",
    "WireFailure",
    "tls_context",
]

T = TypeVar("T")


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
    """Seconds a request may take to send (without progress) and, from then, its whole
    answer (``None``: no limit)."""
    maxsize: int = 10
    """Idle connections kept at most."""

    def __str__(self) -> str:
        return f"{self.host}:{self.port}"


class WireFailure(OSError):
    """A failure of an exchange; :attr:`error` says what is known of the request."""

    error: type[RequestError] = AnswerLostError
    """The :class:`~dynaorm.RequestError` it is raised as: :class:`~dynaorm.RequestNotSentError`
    (it cannot have been applied), :class:`~dynaorm.AnswerLostError` (sent, no complete
    answer) or :class:`~dynaorm.BadAnswerError` (sent, answered with something that
    cannot be read)."""


class ConnectFailed(WireFailure):
    """No connection could be made: the request was not sent."""

    error = RequestNotSentError


class AnswerTimeout(WireFailure):
    """The request was sent and no complete answer came within the read timeout."""

    error = AnswerLostError


class SendFailed(WireFailure):
    """The request could not be sent whole: it cannot have been applied."""

    error = RequestNotSentError


class ConnectionLost(WireFailure):
    """The connection broke after the request went out: it may have been applied."""

    error = AnswerLostError


class BadAnswer(WireFailure):
    """The request went out and the answer is not an acceptable HTTP/1.1 answer: it may
    have been applied."""

    error = BadAnswerError


def _urllib3_major() -> int | None:
    """The major version of the urllib3 an import would load (read from its
    ``_version.py`` without importing it: importing it is ~40 ms of a cold start), or
    ``None`` when it cannot be told."""
    import importlib.util
    import re

    try:
        spec = importlib.util.find_spec("urllib3")
        origin = spec.origin if spec is not None else None
        if not origin:
            return None
        with open(os.path.join(os.path.dirname(origin), "_version.py"), encoding="utf-8") as f:
            text = f.read()
    except (OSError, ValueError, ImportError):
        return None
    found = re.search(r"""^__version__\s*=\s*(?:version\s*=\s*)?['"](\d+)\.""", text, re.M)
    return int(found.group(1)) if found else None


def _base_context() -> ssl.SSLContext:
    """botocore's ``create_urllib3_context()``; with urllib3 2 (no ``DEFAULT_CIPHERS``)
    made here as it makes it, without importing ``botocore.httpsession`` (urllib3 and
    botocore's compat: most of a cold start's first request). Compared with botocore's in
    ``tests/equivalence/test_plain_settings.py``."""
    if "botocore.httpsession" in sys.modules or _urllib3_major() in (None, 0, 1):
        from botocore.httpsession import create_urllib3_context

        made: ssl.SSLContext = create_urllib3_context()
        return made
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.options |= ssl.OP_NO_SSLv2 | ssl.OP_NO_SSLv3 | ssl.OP_NO_COMPRESSION | (
        ssl.OP_NO_TICKET)
    if getattr(context, "post_handshake_auth", None) is not None:
        context.post_handshake_auth = True
    context.verify_mode = ssl.CERT_REQUIRED
    context.check_hostname = False
    keylog = os.environ.get("SSLKEYLOGFILE")
    if keylog and not sys.flags.ignore_environment and hasattr(context, "keylog_filename"):
        context.keylog_filename = keylog
    return context


def tls_context(verify: bool | str, client_cert: str | tuple[str, str] | None = None
                ) -> ssl.SSLContext:
    """A TLS context made as botocore makes its own (``create_urllib3_context``): verified
    against the CA bundle ``verify`` (``False``: no verification), with an optional client
    certificate (a file, or ``(cert, key)``)."""
    context = _base_context()
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
    ``Content-Length``, body. A header value holding a line break (or anything not
    latin-1) is refused: no configuration or credential ever writes a header line."""
    head = [f"POST {path} HTTP/1.1", f"Host: {host_header}"]
    head += [f"{k}: {v}" for k, v in headers.items()]
    head.append(f"Content-Length: {len(body)}")
    text = "\r\n".join(head)
    if text.count("\n") != len(head) - 1 or text.count("\r") != len(head) - 1:
        raise DynaormError("a request header holds a line break: refused")
    try:
        return (text + "\r\n\r\n").encode("latin-1") + body
    except UnicodeEncodeError as exc:
        raise DynaormError(f"a request header is not latin-1: {exc}") from exc


if hasattr(select, "poll"):
    def _readable(sock: socket.socket) -> bool:
        """Whether ``sock`` has something to read (or was closed), asked without waiting
        (``poll``: no limit on descriptor numbers, unlike ``select``)."""
        poller = select.poll()
        poller.register(sock, select.POLLIN | select.POLLPRI)
        return bool(poller.poll(0))
else:  # pragma: no cover - Windows
    def _readable(sock: socket.socket) -> bool:
        """Whether ``sock`` has something to read (or was closed), asked without waiting."""
        with selectors.DefaultSelector() as chooser:
            chooser.register(sock, selectors.EVENT_READ)
            return bool(chooser.select(0))


def _quiet(sock: socket.socket) -> bool:
    """Nothing to read on the idle ``sock``: a keep-alive socket the server closed (or
    wrote to unasked) is readable, and must not carry another request."""
    try:
        return not _readable(sock)
    except (OSError, ValueError):
        return False


class _Connection:
    __slots__ = ("poller", "sock")

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        #: asks whether the idle socket has something to read (made once: one syscall
        #: per check); ``None`` where ``poll`` does not exist
        self.poller: select.poll | None = None
        if hasattr(select, "poll"):
            self.poller = select.poll()
            self.poller.register(sock, select.POLLIN | select.POLLPRI)

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.close()

    def idle(self) -> bool:
        """Still usable: open and with nothing to read (a closed or talking peer makes
        the socket readable)."""
        sock = self.sock
        if sock.fileno() < 0:
            return False
        if isinstance(sock, ssl.SSLSocket) and sock.pending():
            return False
        if self.poller is not None:
            try:
                return not self.poller.poll(0)
            except OSError:
                return False
        return _quiet(sock)


#: bytes asked of the socket per read
_CHUNK = 65536


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
    def post(self, path: str, body: bytes, headers: dict[str, str],
             accept: Callable[[int, dict[str, str], bytes], T]) -> T:
        """``POST`` ``body`` to ``path`` with ``headers`` (``Host`` and ``Content-Length``
        added); what ``accept`` makes of the answer's status, headers (lower-case names)
        and body. When ``accept`` raises a :class:`WireFailure` (an answer that cannot be
        trusted) the connection is closed; anything else it raises (an error answer)
        leaves a cleanly ended connection to the pool."""
        message = _message(path, self.destination.host_header, headers, body)
        conn = self._take()
        answer = AnswerReader()
        try:
            self._send(conn.sock, message, answer)
            if not answer.done:
                _receive(conn.sock, answer, self.destination.read_timeout)
            result = accept(answer.status, answer.headers, answer.body)
        except WireFailure:
            conn.close()
            raise
        except BaseException:
            self._finish(conn, answer.reusable)
            raise
        self._finish(conn, answer.reusable)
        return result

    def _finish(self, conn: _Connection, reusable: bool) -> None:
        if reusable:
            self._give_back(conn)
        else:
            conn.close()

    def _send(self, sock: socket.socket, message: bytes, answer: AnswerReader) -> None:
        """Send ``message`` (each wait bounded by the read timeout). A server may answer
        and close before reading the whole request (an early ``413``): that answer is
        read; otherwise a send that failed is :class:`SendFailed` (the request did not go
        out whole: it cannot have been applied)."""
        try:
            sock.settimeout(self.destination.read_timeout)
            sock.sendall(message)
        except (OSError, ssl.SSLError) as exc:
            answer.forbid_reuse()
            if _early_answer(sock, answer):
                return
            raise SendFailed(f"sending to {self.destination}: {exc}") from exc


def _early_answer(sock: socket.socket, answer: AnswerReader) -> bool:
    """Whether an answer the server sent before the request went out whole can be read
    from ``sock`` now, without waiting (then ``answer`` holds it)."""
    with contextlib.suppress(OSError, ssl.SSLError, MalformedAnswer):
        sock.settimeout(0)
        while True:
            data = sock.recv(_CHUNK)
            if not data:
                return answer.eof()
            if answer.feed(data):
                return True
    return False


def _receive(sock: socket.socket, answer: AnswerReader, timeout: float | None) -> None:
    """Read the answer from ``sock`` into ``answer``: complete within ``timeout`` seconds
    in all (a deadline for the whole answer, not for each read), else
    :class:`AnswerTimeout`; a connection that breaks or closes before the answer is
    complete is :class:`ConnectionLost`; bytes that are not an acceptable answer are
    :class:`BadAnswer`."""
    deadline = None if timeout is None else time.monotonic() + timeout
    try:
        while True:
            if deadline is not None:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError("the answer did not end in time")
                sock.settimeout(left)
            data = sock.recv(_CHUNK)
            if not data:
                if answer.eof():
                    return
                raise ConnectionLost("the connection closed before the answer was complete")
            if answer.feed(data):
                return
    except TimeoutError as exc:  # (socket.timeout)
        raise AnswerTimeout(f"no complete answer in {timeout} s: {exc}") from exc
    except MalformedAnswer as exc:
        raise BadAnswer(str(exc)) from exc
    except (ConnectionLost, BadAnswer):
        raise
    except (OSError, ssl.SSLError) as exc:
        raise ConnectionLost(f"{type(exc).__name__}: {exc}") from exc


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
        import asyncio

        dest = self.destination
        try:
            if dest.tls is not None and self._context is None:
                self._context = await asyncio.to_thread(dest.tls)  # (reads a CA bundle)
            async with asyncio.timeout(dest.connect_timeout):
                reader, writer = await asyncio.open_connection(
                    dest.host, dest.port, ssl=self._context,
                    server_hostname=dest.host if self._context is not None else None)
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

    async def post(self, path: str, body: bytes, headers: dict[str, str],
                   accept: Callable[[int, dict[str, str], bytes], T]) -> T:
        """As :meth:`HTTPPool.post`."""
        message = _message(path, self.destination.host_header, headers, body)
        conn = await self._take()
        answer = AnswerReader()
        try:
            await self._send(conn, message, answer)
            if not answer.done:
                await _receive_async(conn.reader, answer, self.destination.read_timeout)
            result = accept(answer.status, answer.headers, answer.body)
        except WireFailure:
            conn.abort()
            raise
        except BaseException:
            self._finish(conn, answer.reusable)
            raise
        self._finish(conn, answer.reusable)
        return result

    def _finish(self, conn: _AsyncConnection, reusable: bool) -> None:
        if reusable and len(self._idle) < self.destination.maxsize:
            self._idle.append(conn)
        else:
            conn.abort()

    async def _send(self, conn: _AsyncConnection, message: bytes,
                    answer: AnswerReader) -> None:
        """As :meth:`HTTPPool._send`: the whole send bounded by the read timeout. ``drain``
        fails only while the transport still holds bytes of the request (a transport that
        handed everything to the socket returns from it), or on a connection that was
        already dead: either way the request did not go out whole (:class:`SendFailed`)."""
        import asyncio

        writer = conn.writer
        try:
            async with asyncio.timeout(self.destination.read_timeout):
                writer.write(message)
                await writer.drain()
        except (OSError, ssl.SSLError) as exc:  # (TimeoutError included)
            answer.forbid_reuse()
            if await _early_answer_async(conn.reader, answer):
                return
            raise SendFailed(f"sending to {self.destination}: "
                             f"{exc or type(exc).__name__}") from exc


async def _early_answer_async(reader: asyncio.StreamReader, answer: AnswerReader) -> bool:
    """:func:`_early_answer` on a stream: what it holds already."""
    with contextlib.suppress(OSError, ssl.SSLError, MalformedAnswer):
        while stream_buffered(reader):
            if answer.feed(await reader.read(_CHUNK)):
                return True
        return reader.at_eof() and answer.eof()
    return False


async def _receive_async(reader: asyncio.StreamReader, answer: AnswerReader,
                         timeout: float | None) -> None:
    """:func:`_receive` on an asyncio stream."""
    import asyncio

    try:
        async with asyncio.timeout(timeout):
            while True:
                data = await reader.read(_CHUNK)
                if not data:
                    if answer.eof():
                        return
                    raise ConnectionLost(
                        "the connection closed before the answer was complete")
                if answer.feed(data):
                    return
    except TimeoutError as exc:
        raise AnswerTimeout(f"no complete answer in {timeout} s") from exc
    except MalformedAnswer as exc:
        raise BadAnswer(str(exc)) from exc
    except ConnectionLost:
        raise
    except (OSError, ssl.SSLError) as exc:
        raise ConnectionLost(f"{type(exc).__name__}: {exc}") from exc
