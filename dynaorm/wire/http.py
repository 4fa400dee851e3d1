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
from collections.abc import AsyncGenerator, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar, cast

from dynaorm.errors import (
    AnswerLostError,
    BadAnswerError,
    DynaormError,
    RequestError,
    RequestNotSentError,
)
from dynaorm.wire.connection import AnswerReader, MalformedAnswer

if TYPE_CHECKING:  # asyncio loads with the first async request: a sync process never pays it
    import asyncio

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
    """The request went out and the answer is not an acceptable HTTP/1.1 answer, or not
    one to trust (:func:`dynaorm.wire.checked_answer`): it may have been applied. A
    client raises it as :class:`~dynaorm.BadAnswerError`."""

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
    text = f"POST {path} HTTP/1.1\r\nHost: {host_header}\r\n"
    for name, value in headers.items():
        text += f"{name}: {value}\r\n"
    text += f"Content-Length: {len(body)}\r\n\r\n"
    lines = len(headers) + 4
    if text.count("\n") != lines or text.count("\r") != lines:
        raise DynaormError("a request header holds a line break: refused")
    try:
        return text.encode("latin-1") + body
    except UnicodeEncodeError as exc:
        raise DynaormError(f"a request header is not latin-1: {exc}") from exc


class _Selector:  # pragma: no cover - Windows: no poll
    """What :func:`_poller` uses of ``select.poll``, on a selector."""

    def __init__(self) -> None:
        self._chooser = selectors.DefaultSelector()

    def register(self, sock: socket.socket | int, events: int) -> None:
        self._chooser.register(sock, selectors.EVENT_READ)

    def poll(self, timeout: float) -> list[Any]:
        return self._chooser.select(timeout)


def _poller(sock: socket.socket | int) -> Any:
    """Asks whether ``sock`` has something to read, made once per connection (then one
    syscall per check): ``poll`` (no limit on descriptor numbers, unlike ``select``)."""
    poller = select.poll() if hasattr(select, "poll") else _Selector()
    poller.register(sock, select.POLLIN | select.POLLPRI)
    return poller


def _quiet(poller: Any) -> bool:
    """Nothing to read on an idle connection: a keep-alive socket the server closed (or
    wrote to unasked) is readable, and must not carry another request."""
    try:
        return not poller.poll(0)
    except (AttributeError, OSError, ValueError):  # (None: no socket to ask)
        return False


class _Connection:
    __slots__ = ("poller", "sock")

    def __init__(self, sock: socket.socket):
        self.sock = sock
        self.poller = _poller(sock)

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.close()


#: bytes asked of the socket per read
_CHUNK = 65536
#: bytes of a long request written at a time over TLS on asyncio (see _AsyncConnection)
_PIECE = 65536


#: every keeper not yet ended: its loop and itself, by what it closes (held here, so that
#: what it closes outlives its owner, a client collected mid-loop, until the loop ends)
_KEPT: dict[Callable[[], Any], tuple[Any, AsyncGenerator[None, None]]] = {}


async def _keeper(loop: asyncio.AbstractEventLoop, close: Callable[[], Any]
                  ) -> AsyncGenerator[None, None]:
    try:
        yield
    finally:
        import asyncio

        _KEPT.pop(close, None)
        closing = close()  # (what it holds is let go now; closed if the loop runs)
        try:
            here = asyncio.get_running_loop() is loop
        except RuntimeError:  # (no loop runs here)
            here = False
        if here:
            await closing
        else:
            closing.close()  # (a coroutine: never awaited)


async def loop_keeper(close: Callable[[], Any]) -> AsyncGenerator[None, None]:
    """An async generator, suspended in the running loop, that calls ``close()`` when it
    ends and awaits the coroutine it returns while the loop still runs: when the loop ends
    (``asyncio.run``, ``asyncio.Runner`` and every loop that shuts its async generators
    down), or when it is closed itself (``await keeper.aclose()``). What a wire holds of a
    loop is never kept after it: the keepers of loops closed without ending their async
    generators are let go (:func:`let_go`: ``close()`` is called, its coroutine closed
    unawaited), so ``close()`` drops what it holds before its first await."""
    import asyncio

    for old, kept in list(_KEPT.values()):
        if old.is_closed():
            let_go(kept)
    loop = asyncio.get_running_loop()
    keeper = _keeper(loop, close)
    _KEPT[close] = (loop, keeper)
    await keeper.__anext__()  # (registered with the loop, by its async generator hooks)
    return keeper


def let_go(keeper: AsyncGenerator[None, None]) -> None:
    """End ``keeper`` outside its loop (a loop closed without ending its async generators,
    or a parent's in a forked child), closing nothing: what it kept is freed (its
    sockets closed as they are collected); its loop is never asked to run anything."""
    with contextlib.suppress(StopIteration, RuntimeError):
        keeper.aclose().send(None)


def _forked() -> None:
    for _, keeper in list(_KEPT.values()):  # a forked child: no keeper of the parent's loops
        let_go(keeper)


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forked)


class HTTPPool:
    """Keep-alive connections to one ``host:port`` (thread-safe: a connection serves one
    exchange at a time; at most ``maxsize`` idle ones are kept)."""

    def __init__(self, destination: Destination):
        #: where the connections go
        self.destination = destination
        self._context: ssl.SSLContext | None = None
        self._idle: list[_Connection] = []
        self._lock = threading.Lock()

    def _connect(self) -> _Connection:
        dest = self.destination
        try:
            sock = socket.create_connection((dest.host, dest.port), dest.connect_timeout)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if dest.tls is not None:
                if self._context is None:
                    self._context = dest.tls()
                sock = self._context.wrap_socket(sock, server_hostname=dest.host)
            sock.settimeout(dest.read_timeout)  # (each send's wait, and the first read's)
        except (OSError, ssl.SSLError) as exc:
            raise ConnectFailed(f"cannot connect to {dest}: {exc}") from exc
        return _Connection(sock)

    def close(self) -> None:
        """Close every idle connection."""
        with self._lock:
            idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()

    def post(self, path: str, body: bytes, headers: dict[str, str],
             accept: Callable[..., T], *args: Any) -> T:
        """``POST`` ``body`` to ``path`` with ``headers`` (``Host`` and ``Content-Length``
        added); what ``accept(status, headers, body, *args)`` makes of the answer (headers:
        lower-case names). When ``accept`` raises a :class:`WireFailure` (an answer that
        cannot be trusted) the connection is closed; anything else it raises (an error
        answer) leaves a cleanly ended connection to the pool."""
        message = _message(path, self.destination.host_header, headers, body)
        while True:  # an idle connection still quiet (a closed one is readable), else a new one
            with self._lock:
                conn = self._idle.pop() if self._idle else None
            if conn is None:
                conn = self._connect()
                break
            sock = conn.sock
            if sock.fileno() >= 0 and not (isinstance(sock, ssl.SSLSocket) and sock.pending()
                                           ) and _quiet(conn.poller):
                break
            conn.close()
        answer = AnswerReader()
        sock = conn.sock
        try:
            try:  # (each wait bounded by the read timeout, the socket's)
                sock.sendall(message)
            except (OSError, ssl.SSLError) as exc:
                # a server may answer and close before reading the whole request (an early
                # 413): that answer is read; else the request did not go out whole
                answer.forbid_reuse()
                if not _early_answer(sock, answer):
                    raise SendFailed(f"sending to {self.destination}: {exc}") from exc
            if not answer.done:
                _receive(sock, answer, self.destination.read_timeout)
            result = accept(answer.status, answer.headers, answer.body, *args)
        except WireFailure:
            conn.close()
            raise
        except BaseException:  # (an error answer: its connection ended cleanly)
            self._finish(conn, answer)
            raise
        self._finish(conn, answer)
        return result

    def _finish(self, conn: _Connection, answer: AnswerReader) -> None:
        if answer.reusable:
            with self._lock:
                if len(self._idle) < self.destination.maxsize:
                    self._idle.append(conn)
                    return
        conn.close()


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
    in all (a deadline for the whole answer, not for each read; the socket's timeout is
    ``timeout`` when called, and is put back before a read that needs a shorter one
    returns), else :class:`AnswerTimeout`; a connection that breaks or closes before the
    answer is complete is :class:`ConnectionLost`; bytes that are not an acceptable answer
    are :class:`BadAnswer`."""
    deadline = None if timeout is None else time.monotonic() + timeout
    shortened = False
    try:
        while True:
            data = sock.recv(_CHUNK)
            if not data:
                if answer.eof():
                    break
                raise ConnectionLost("the connection closed before the answer was complete")
            if answer.feed(data):
                break
            if deadline is not None:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError("the answer did not end in time")
                sock.settimeout(left)
                shortened = True
    except TimeoutError as exc:  # (socket.timeout)
        raise AnswerTimeout(f"no complete answer in {timeout} s: {exc}") from exc
    except MalformedAnswer as exc:
        raise BadAnswer(str(exc)) from exc
    except (ConnectionLost, BadAnswer):
        raise
    except (OSError, ssl.SSLError) as exc:
        raise ConnectionLost(f"{type(exc).__name__}: {exc}") from exc
    if shortened:
        sock.settimeout(timeout)


# -- the same on asyncio ------------------------------------------------------------------
if TYPE_CHECKING:
    _Protocol = asyncio.Protocol
else:  # asyncio calls a protocol's methods; the base class only names them
    _Protocol = object


class _AsyncConnection(_Protocol):
    """One keep-alive connection on an event loop, as its ``asyncio`` protocol: the bytes
    the transport hands to :meth:`data_received` go straight to the :class:`AnswerReader` of
    the request on it, and the request ends by one future (:attr:`waiter`) and one deadline
    (:attr:`deadline`, watched by a ``call_at`` timer the connection's requests share), with
    no stream buffering, copying or waiting in between.

    Flow control says when the send is done: ``pause_writing`` is called as soon as the
    transport holds a byte of the request the kernel did not take, ``resume_writing`` when
    it holds none (:attr:`held`). On TLS it sees only the bytes above the encryption (the
    TLS layer hands its TCP transport all it has): a long request is written in pieces, the
    next one when nothing is held, so a server that stops reading pauses it too; up to the
    TCP transport's buffer and one piece of the request's end can be lost unseen, then read
    as a lost answer (maybe applied: the safe side). Between requests (no :attr:`answer`)
    any byte or end of the stream makes the connection :attr:`dead`: it never carries
    another request."""

    __slots__ = ("answer", "closed", "dead", "deadline", "destination", "failure", "held",
                 "loop", "poller", "timer", "transport", "unsent", "waiter")

    transport: asyncio.Transport

    def __init__(self, loop: asyncio.AbstractEventLoop, destination: Destination):
        self.loop = loop
        self.destination = destination
        #: the answer of the request on the connection (``None``: idle)
        self.answer: AnswerReader | None = None
        #: set when that request ends (answered, failed): its outcome is :attr:`failure`
        self.waiter: asyncio.Future[None] | None = None
        self.failure: WireFailure | None = None
        #: the request's deadline (the loop's clock): for the send, then from the end of
        #: the send for the whole answer (``None``: no request, or no read timeout)
        self.deadline: float | None = None
        #: the timer that watches :attr:`deadline`, due at or before it (see :meth:`_arm`)
        self.timer: asyncio.TimerHandle | None = None
        #: the transport holds bytes of the request the kernel has not taken
        self.held = False
        #: the pieces of a long request over TLS not yet written
        self.unsent: memoryview | None = None
        #: closed, closing, or spoken to while idle
        self.dead = False
        #: set when the transport is closed
        self.closed: asyncio.Future[None] = loop.create_future()
        self.poller: Any = None

    # -- asyncio's callbacks ---------------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport = cast("asyncio.Transport", transport)  # (a TCP or TLS one)
        # pause at the first byte held, resume at none: the selector transport pauses above
        # its high mark, the TLS one at it (TCP_NODELAY: asyncio sets it on TCP transports)
        transport.set_write_buffer_limits(high=0 if self.destination.tls is None else 1, low=0)
        sock = transport.get_extra_info("socket")
        if sock is not None:
            self.poller = _poller(sock.fileno())

    def data_received(self, data: bytes) -> None:
        answer = self.answer
        if answer is None:  # bytes nobody asked for: never the next request's answer
            self.dead = True
            self.transport.abort()
            return
        try:
            if answer.feed(data):
                self._settle(None)
        except MalformedAnswer as exc:
            failure = BadAnswer(str(exc))
            failure.__cause__ = exc
            self._settle(failure)

    def eof_received(self) -> None:
        # (returns None: the transport closes, once it handed the kernel what it holds)
        self.dead = True
        if self.answer is not None:
            self._ended(None, lost=False)

    def connection_lost(self, exc: Exception | None) -> None:
        self.dead = True
        self._stop_timer()
        if not self.closed.done():
            self.closed.set_result(None)
        if self.answer is not None:
            self._ended(exc, lost=True)

    def pause_writing(self) -> None:
        self.held = True

    def resume_writing(self) -> None:
        self.held = False
        if self.unsent is not None:
            self._write_more()
        waiter = self.waiter
        if (self.deadline is not None and waiter is not None and not waiter.done()
                and not self._sending()):
            self._arm()  # sent whole: the whole answer's deadline runs from here

    # -- one request -----------------------------------------------------------------------
    def send(self, message: bytes, answer: AnswerReader) -> asyncio.Future[None]:
        """Write ``message`` and read its answer into ``answer``; the future is set when the
        request ends (then :meth:`outcome`)."""
        self.answer = answer
        waiter = self.waiter = self.loop.create_future()
        if self.dead:  # closed since it was made or taken: nothing was written
            self._settle(SendFailed(f"sending to {self.destination}: the connection "
                                    f"closed before the request was written"))
            return waiter
        if self.destination.tls is None or len(message) <= _PIECE:
            self.transport.write(message)
        else:
            self.unsent = memoryview(message)
            self._write_more()
        self._arm()
        return waiter

    def _write_more(self) -> None:
        unsent = self.unsent
        while unsent is not None and not self.held:
            self.transport.write(unsent[:_PIECE])
            unsent = unsent[_PIECE:] or None
        self.unsent = unsent

    def _sending(self) -> bool:
        """Part of the request is still held by the transport, or not yet written."""
        return self.held or self.unsent is not None

    def outcome(self) -> None:
        """After the request's future was set: raise its failure, if it failed. An answer
        read before the request went out whole (a refusal that did not wait for the body)
        is the answer, and the connection is not reused."""
        self._disarm()
        if self._sending() and self.answer is not None:
            self.answer.forbid_reuse()
        failure, self.failure = self.failure, None
        if failure is not None:
            raise failure

    def rest(self) -> bool:
        """End the request on the connection; whether it may carry another one: its answer
        ended cleanly with nothing after it, and the connection is open and sent whole."""
        answer, self.answer, self.waiter = self.answer, None, None
        self._disarm()
        sent, self.unsent = self.unsent is None, None
        return (answer is not None and answer.reusable and sent and not self.held
                and not self.dead)

    def idle(self) -> bool:
        """Still usable: not closed, never spoken to since its last answer, and a socket
        with nothing to read (the loop may not have run since the server wrote or closed:
        the socket knows before the protocol)."""
        return not (self.dead or self.transport.is_closing()) and _quiet(self.poller)

    def abort(self) -> None:
        """Drop the connection at once (a request failed or was cancelled on it)."""
        self.dead = True
        self._disarm()
        self._stop_timer()
        self.transport.abort()

    # -- how a request ends ----------------------------------------------------------------
    def _settle(self, failure: WireFailure | None) -> None:
        waiter = self.waiter
        if waiter is not None and not waiter.done():
            self.failure = failure
            waiter.set_result(None)

    def _ended(self, exc: Exception | None, *, lost: bool) -> None:
        """The connection closed (``exc``: how, when it broke) during a request: an answer
        that runs to the close is complete; a request the transport still held bytes of
        was not sent whole (once the transport is gone: a close from the server first lets
        it hand over the rest); else the answer is lost."""
        answer = self.answer
        if answer is None or self.waiter is None or self.waiter.done():
            return
        if exc is None and answer.eof():
            self._settle(None)
        elif self._sending():
            if lost:
                self._settle(SendFailed(f"sending to {self.destination}: "
                                        f"{exc or 'the connection closed'}"))
        else:
            failure = ConnectionLost(
                f"{type(exc).__name__}: {exc}" if exc is not None
                else "the connection closed before the answer was complete")
            failure.__cause__ = exc
            self._settle(failure)

    def _arm(self) -> None:
        """Start the request's deadline (now + the read timeout). One timer serves the
        connection's requests: made when none is pending, it is moved on to the deadline
        only when it fires before it (requests end long before their timeout: no timer
        made, cancelled and left in the loop's heap per request)."""
        timeout = self.destination.read_timeout
        if timeout is not None:
            deadline = self.deadline = self.loop.time() + timeout
            if self.timer is None:
                self.timer = self.loop.call_at(deadline, self._expired)

    def _disarm(self) -> None:
        """The request ended: no deadline (a pending timer lapses when it fires)."""
        self.deadline = None

    def _stop_timer(self) -> None:
        timer, self.timer = self.timer, None
        if timer is not None:
            timer.cancel()

    def _expired(self) -> None:
        timer, self.timer = self.timer, None
        deadline = self.deadline
        if deadline is None:  # no request (the one it was made for ended): lapses
            return
        if timer is not None and deadline > timer.when():  # a later request's deadline
            self.timer = self.loop.call_at(deadline, self._expired)
            return
        self.deadline = None
        timeout = self.destination.read_timeout
        if self._sending():
            self._settle(SendFailed(f"sending to {self.destination}: the request was not "
                                    f"taken whole in {timeout} s"))
        else:
            self._settle(AnswerTimeout(f"no complete answer in {timeout} s"))


class AsyncHTTPPool:
    """:class:`HTTPPool` on asyncio, for one event loop (the connections belong to the loop
    that opened them): each connection is the transport's protocol
    (:class:`_AsyncConnection`), no streams in between."""

    def __init__(self, destination: Destination):
        #: where the connections go
        self.destination = destination
        self._context: ssl.SSLContext | None = None
        self._idle: list[_AsyncConnection] = []

    async def _connect(self) -> _AsyncConnection:
        import asyncio

        dest = self.destination
        loop = asyncio.get_running_loop()
        try:
            if dest.tls is not None and self._context is None:
                self._context = await asyncio.to_thread(dest.tls)  # (reads a CA bundle)
            async with asyncio.timeout(dest.connect_timeout):
                _, conn = await loop.create_connection(
                    lambda: _AsyncConnection(loop, dest), dest.host, dest.port,
                    ssl=self._context,
                    server_hostname=dest.host if self._context is not None else None)
        except (OSError, ssl.SSLError) as exc:  # (TimeoutError included)
            raise ConnectFailed(f"cannot connect to {dest}: {exc}") from exc
        return conn

    def _take(self) -> _AsyncConnection | None:
        idle = self._idle
        while idle:
            conn = idle.pop()
            if conn.idle():
                return conn
            conn.abort()
        return None

    async def close(self) -> None:
        """Close every idle connection."""
        idle, self._idle = self._idle, []
        for conn in idle:
            conn.transport.close()
        for conn in idle:
            await conn.closed

    async def post(self, path: str, body: bytes, headers: dict[str, str],
                   accept: Callable[..., T], *args: Any) -> T:
        """As :meth:`HTTPPool.post`. The request's send is bounded by the read timeout
        (a server that stops reading: :class:`SendFailed`), then its whole answer. A
        request cancelled before its answer ended drops its connection."""
        message = _message(path, self.destination.host_header, headers, body)
        conn = self._take() or await self._connect()
        answer = AnswerReader()
        try:
            await conn.send(message, answer)
            conn.outcome()
            result = accept(answer.status, answer.headers, answer.body, *args)
        except WireFailure:
            conn.abort()
            raise
        except BaseException:
            self._finish(conn)
            raise
        self._finish(conn)
        return result

    def _finish(self, conn: _AsyncConnection) -> None:
        if conn.rest() and len(self._idle) < self.destination.maxsize:
            self._idle.append(conn)
        else:
            conn.abort()
