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

import contextlib
import select
import socket
import ssl
import threading
from collections.abc import Callable
from typing import IO

__all__ = ["AnswerTimeout", "ConnectFailed", "ConnectionLost", "HTTPPool", "tls_context"]

#: the longest status or header line read (an answer with a longer one is refused)
MAX_LINE = 65536
#: the most header lines an answer may have
MAX_HEADERS = 100


class ConnectFailed(OSError):
    """No connection could be made: the request was not sent."""


class AnswerTimeout(OSError):
    """The request was sent and no complete answer came within the read timeout."""


class ConnectionLost(OSError):
    """The connection broke after the request started to go out: it may have arrived."""


def tls_context(verify: bool | str, client_cert: str | tuple[str, str] | None = None
                ) -> ssl.SSLContext:
    """A TLS context that verifies against the CA bundle ``verify`` (``False``: no
    verification), with an optional client certificate (a file, or ``(cert, key)``)."""
    if verify is False:
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    else:
        context = ssl.create_default_context(cafile=None if verify is True else verify)
    if client_cert:
        if isinstance(client_cert, str):
            context.load_cert_chain(client_cert)
        else:
            context.load_cert_chain(client_cert[0], client_cert[1])
    return context


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
        try:
            readable, _, _ = select.select([sock], [], [], 0)
        except (OSError, ValueError):
            return False
        return not readable


class HTTPPool:
    """Keep-alive connections to one ``host:port`` (thread-safe: a connection serves one
    exchange at a time; at most ``maxsize`` idle ones are kept)."""

    def __init__(self, host: str, port: int, *, host_header: str,
                 tls: Callable[[], ssl.SSLContext] | None, connect_timeout: float | None,
                 read_timeout: float | None, maxsize: int = 10) -> None:
        self.host = host
        self.port = port
        #: the ``Host`` header sent (as the request was signed: default ports dropped)
        self.host_header = host_header
        #: makes the TLS context (on the first connection: a bad CA bundle fails there,
        #: as it does with botocore), ``None`` for plain TCP
        self.tls = tls
        self._context: ssl.SSLContext | None = None
        self.connect_timeout = connect_timeout
        self.read_timeout = read_timeout
        self.maxsize = maxsize
        self._idle: list[_Connection] = []
        self._lock = threading.Lock()

    # -- connections -----------------------------------------------------------------
    def _connect(self) -> _Connection:
        try:
            sock = socket.create_connection((self.host, self.port), self.connect_timeout)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if self.tls is not None:
                if self._context is None:
                    self._context = self.tls()
                sock = self._context.wrap_socket(sock, server_hostname=self.host)
        except (OSError, ssl.SSLError) as exc:
            raise ConnectFailed(f"cannot connect to {self.host}:{self.port}: {exc}") from exc
        sock.settimeout(self.read_timeout)
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
            if len(self._idle) < self.maxsize:
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
        head = [f"POST {path} HTTP/1.1", f"Host: {self.host_header}"]
        head += [f"{k}: {v}" for k, v in headers.items()]
        head.append(f"Content-Length: {len(body)}")
        message = ("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + body
        conn = self._take()
        try:
            try:
                conn.sock.sendall(message)
            except OSError as exc:
                raise ConnectionLost(f"sending to {self.host}:{self.port}: {exc}") from exc
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
            parts = _line(reader).split(None, 2)
            if len(parts) < 2 or not parts[0].startswith(b"HTTP/1."):
                raise ConnectionLost(f"not an HTTP answer: {b' '.join(parts)[:80]!r}")
            status = int(parts[1])
            headers: dict[str, str] = {}
            for _ in range(MAX_HEADERS + 1):
                line = _line(reader)
                if line in (b"\r\n", b"\n"):
                    break
                name, _, value = line.decode("latin-1").partition(":")
                headers[name.strip().lower()] = value.strip()
            else:
                raise ConnectionLost("too many header lines in the answer")
            if status >= 200:
                break
        keep = parts[0] == b"HTTP/1.1" and headers.get("connection", "").lower() != "close"
        if "chunked" in headers.get("transfer-encoding", "").lower():
            data = _read_chunked(reader)
        elif "content-length" in headers:
            length = int(headers["content-length"])
            data = reader.read(length)
            if len(data) != length:
                raise ConnectionLost("the connection closed in the middle of the answer")
        elif status in (204, 304):
            data = b""
        else:  # the body runs to the end of the connection
            data, keep = reader.read(), False
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
