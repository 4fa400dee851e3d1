"""One HTTP/1.1 answer read from bytes, without I/O: the state machine both connection
pools of :mod:`dynaorm.wire.http` (sync sockets and asyncio protocols) feed.

The framing is llhttp's (Node.js's HTTP parser, through ``httptools``, as uvicorn uses
it): it refuses conflicting or overflowing ``Content-Length`` headers, ``Content-Length``
with ``Transfer-Encoding``, malformed chunking and bare-LF line ends, and it reads
``close`` anywhere in a ``Connection`` list. :class:`AnswerReader` adds what a client of
one service needs on top:

- a bounded head (:data:`MAX_HEAD` bytes, :data:`MAX_HEADERS` lines) and body
  (:data:`MAX_BODY` bytes), so that no server makes the client hold what it sends without
  end; the head's header lines are read at once when llhttp has validated it (no callback
  per line), as llhttp reads them (``tests/unit/test_wire_http.py`` compares the two);
- no transfer coding but ``chunked`` (the body must be the JSON sent), and trailers never
  taken for headers (llhttp parses them; nothing keeps them);
- ``1xx`` interim answers skipped;
- reuse decided once, when the answer ends: the connection may serve another request only
  if the answer ended cleanly, the server did not ask to close, and nothing came after the
  answer (a second answer, or any other byte, discards the connection: it is never handed
  to the next request). Blank lines alone in the read that ends the answer are the one
  exception: llhttp skips them, as HTTP/1.1 lets empty lines precede a message, and
  nothing is left over.

Every refusal is a :class:`MalformedAnswer`; the driver maps it (the request was sent and
answered with something that cannot be read: it may have been applied).
"""

from typing import Final

import httptools

#: the most bytes of an answer's status line and headers
MAX_HEAD: Final = 65536
#: the most header lines an answer may have (``http.client``'s limit)
MAX_HEADERS: Final = 100
#: the most bytes of an answer's body (DynamoDB's largest answer, a 16 MB
#: ``BatchGetItem``, is far below: JSON and base64 included)
MAX_BODY: Final = 64 * 1024 * 1024


class MalformedAnswer(ValueError):
    """The bytes received are not one acceptable HTTP/1.1 answer."""


class AnswerReader:
    """Reads one answer from the bytes given to :meth:`feed` (and :meth:`eof` when the
    connection closes). Once :attr:`done`, :attr:`status`, :attr:`headers` (lower-case
    names; a repeated header's values joined with ``", "``), :attr:`body` and
    :attr:`reusable` hold the answer."""

    __slots__ = (
        "_body",
        "_extra",
        "_fed",
        "_final",
        "_framed",
        "_keep",
        "_parser",
        "_pending",
        "_size",
        "_start",
        "body",
        "done",
        "headers",
        "status",
    )

    def __init__(self) -> None:
        # (the parser holds this reader's callbacks: it is let go when the answer ends,
        # so that a read answer is freed at once, its body with it, not left in a
        # reference cycle for the garbage collector)
        self._parser: httptools.HttpResponseParser | None = httptools.HttpResponseParser(self)
        self._body: list[bytes] = []
        self._size = 0  # body bytes so far
        self._fed = 0  # bytes fed before the final answer's head was complete
        self._pending = b""  # those bytes, the heads read from them when complete
        self._start = 0  # where in them the next head begins
        self._final = False  # the headers of the final (non-1xx) answer are complete
        self._framed = False  # its body has a length or chunks (else: until the close)
        #: whether the answer is complete
        self.done = False
        self._keep = False
        self._extra = False  # something came after the answer
        #: the answer's status code
        self.status = 0
        #: the answer's headers, names in lower case
        self.headers: dict[str, str] = {}
        #: the answer's body (dechunked), once it is complete
        self.body = b""

    # -- llhttp's callbacks ---------------------------------------------------------------
    def on_message_begin(self) -> None:
        if self.done:
            self._extra = True  # a second answer: discard the connection after this one
            return
        self._body = []
        self._size = 0

    def on_headers_complete(self) -> None:
        if self.done:
            return
        parser = self._parser
        assert parser is not None  # (let go only once the answer ended)
        status = parser.get_status_code()
        # the head as llhttp validated it (CRLF lines, no folding, no space in a name; the
        # empty lines it skips before a message skipped): its header lines read here, at
        # once, not one callback each; the headers of an interim answer are dropped
        pending, begin = self._pending, self._start
        while pending[begin] in b"\r\n":
            begin += 1
        end = pending.index(b"\r\n\r\n", begin)
        self._start = end + 4
        if status < 200:
            return  # an interim answer (100 Continue, 103 Early Hints): skipped
        lines = pending[begin:end].decode("latin-1").split("\r\n")[1:]  # (no status line)
        if len(lines) > MAX_HEADERS:
            raise MalformedAnswer(f"more than {MAX_HEADERS} header lines in the answer")
        if sum(map(len, lines)) > MAX_HEAD:
            raise MalformedAnswer(f"an answer head over {MAX_HEAD} bytes")
        headers: dict[str, str] = {}
        for line in lines:
            name, _, value = line.partition(":")
            key = name.lower()
            value = value.lstrip(" \t")  # (llhttp keeps the trailing whitespace)
            old = headers.get(key)
            headers[key] = value if old is None else f"{old}, {value}"
        self.headers = headers
        self._pending = b""
        self.status = status
        self._final = True
        coding = headers.get("transfer-encoding")
        if coding is not None and coding.strip().lower() != "chunked":
            # gzip and the like under or over chunked: the body would not be the JSON
            # sent (and "chunked, gzip" would run to the close)
            raise MalformedAnswer(f"an answer with Transfer-Encoding {coding[:40]!r}")
        self._framed = ("content-length" in headers or coding is not None
                        or status in (204, 304))
        length = headers.get("content-length")
        if length is not None and length.isdigit() and int(length) > MAX_BODY:
            raise MalformedAnswer(f"an answer of {length} bytes (at most {MAX_BODY})")

    def on_body(self, data: bytes) -> None:
        if self.done:
            return
        self._size += len(data)
        if self._size > MAX_BODY:
            raise MalformedAnswer(f"an answer body over {MAX_BODY} bytes")
        self._body.append(data)

    def on_message_complete(self) -> None:
        if self.done or not self._final:
            return
        self.done = True
        parser, self._parser = self._parser, None
        assert parser is not None  # (let go here, or by eof(): the answer ends once)
        self._keep = bool(parser.should_keep_alive()) and self._framed
        chunks = self._body
        self.body = chunks[0] if len(chunks) == 1 else b"".join(chunks)

    # -- fed by a driver ------------------------------------------------------------------
    def feed(self, data: bytes) -> bool:
        """Read ``data`` (the next bytes received); whether the answer is complete (then
        the connection's bytes after it, if any, made it not :attr:`reusable`)."""
        parser = self._parser
        if self.done or parser is None:
            self._extra = True
            return True
        if not self._final:
            self._fed += len(data)
            self._pending += data
        try:
            parser.feed_data(data)
        except httptools.HttpParserUpgrade as exc:
            if not self.done:
                raise MalformedAnswer("an answer switching protocols") from exc
            self._extra = True
        except httptools.HttpParserError as exc:
            if isinstance(exc.__context__, MalformedAnswer):  # raised by a callback
                raise exc.__context__ from None
            if not self.done:  # garbage after a complete answer only spoils reuse
                raise MalformedAnswer(f"a malformed answer: {exc}") from exc
            self._extra = True
        if not self._final and self._fed > MAX_HEAD + MAX_HEADERS * 4 + 1024:
            raise MalformedAnswer(f"an answer head over {MAX_HEAD} bytes")
        return self.done

    def eof(self) -> bool:
        """The connection closed: whether that completed the answer (a body that runs to
        the close); ``False`` when the answer was cut short (the caller raises)."""
        if self.done:
            return True
        if self._final and not self._framed:
            self.done = True
            self._keep = False
            self._parser = None
            self.body = b"".join(self._body)
            return True
        return False

    def forbid_reuse(self) -> None:
        """The connection must not carry another request, however the answer ended (the
        request could not be sent whole on it)."""
        self._extra = True

    @property
    def reusable(self) -> bool:
        """Whether the connection may carry another request: the answer ended cleanly, the
        server did not ask to close, nothing came after it."""
        return self.done and self._keep and not self._extra
