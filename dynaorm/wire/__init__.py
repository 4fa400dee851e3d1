"""The wires a :class:`~dynaorm.Client` sends over, and dynaorm's own.

A client sends every request through one :class:`Transport`, chosen once (the registry
is :data:`dynaorm.client.client.WIRES`): dynaorm's own wire (:class:`Wire`, the default)
or botocore's (:class:`dynaorm.client.botocore.BotocoreWire`, which moto's in-process
backend also answers through). Each maps its own failures to
:class:`~dynaorm.RequestError`, so retries, outcomes, logs and hooks see the same errors
whichever wire is under them.

dynaorm's own wire renders requests straight to JSON, signs them with SigV4
(:class:`~dynaorm.wire.sigv4.Signer`), sends them over keep-alive connections
(:mod:`dynaorm.wire.http`; urllib3 through a proxy), checks each answer
(:func:`answer_problem`) and decodes it with :func:`json.loads`. Where and how it connects
is one :class:`~dynaorm.wire.endpoint.Endpoint`, resolved once per client
(:meth:`dynaorm.Client._endpoint`). Failures are raised as dynaorm's own: an error answer
as the :class:`~dynaorm.RequestError` its status, headers and body make
(:func:`answer_error`), a failed exchange as what :mod:`dynaorm.wire.http` knows of it
(not sent, answer lost, answer not to be trusted). See ``docs/guide/wire.md``.

Public, for code that stands between a client and an engine (a fault proxy, an emulator,
an engine of your own): a request's body as the wire sends it (:func:`render`), a body
read back as a botocore client returns it (:func:`decode`), and an engine's answer judged
as a client judges it (:func:`checked_answer`, raising :class:`BadAnswer` for one not to
be trusted). The rest of this package is dynaorm's own.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import functools
import json
import os
import threading
import weakref
import zlib
from collections.abc import Awaitable, Mapping
from http.client import responses as _REASONS
from typing import TYPE_CHECKING, Any, Final, Protocol
from urllib.parse import urlsplit

from dynaorm._types import Reader
from dynaorm.errors import (
    AnswerLostError,
    RequestError,
    RequestNotSentError,
    TableNotFoundError,
    ThrottledError,
)
from dynaorm.protocol.events import Reason, ThrottlingReason, shape_problem, tables_of
from dynaorm.protocol.policy import THROTTLE_CODES
from dynaorm.values.codec import binary_from_json
from dynaorm.wire.endpoint import Endpoint, proxy_tls_context, trace_header
from dynaorm.wire.http import (
    AsyncHTTPPool,
    BadAnswer,
    Destination,
    HTTPPool,
    WireFailure,
    loop_keeper,
    tls_context,
)
from dynaorm.wire.sigv4 import Signer

if TYPE_CHECKING:
    import asyncio

__all__ = ["BadAnswer", "checked_answer", "decode", "render"]

#: the ``X-Amz-Target`` prefix of every DynamoDB operation
TARGET_PREFIX = "DynamoDB_20120810."
#: the ``code`` of every failure without an answer (retried by the retry rules)
CONNECTION_ERROR: Final = "ConnectionError"


class Transport(Protocol):
    """How one client's requests go, chosen once per client: ``send`` one request once
    (blocking) or ``asend`` it on the running event loop, the answer as a botocore client
    returns it, every failure a :class:`~dynaorm.RequestError`; ``close`` the sync
    connections, ``aclose`` the running loop's. ``botocore``: whether requests go through
    botocore's (or aiobotocore's) client, where its event handlers and OpenTelemetry's
    botocore instrumentation see them; ``where()``: the endpoint URL and region requests
    go to, once known."""

    botocore: bool

    def send(self, operation: str, request: dict[str, Any],
             reader: Reader | None = None
             ) -> dict[str, Any]: ...

    async def asend(self, operation: str, request: dict[str, Any],
                    reader: Reader | None = None
                    ) -> dict[str, Any]: ...

    def close(self) -> None: ...

    async def aclose(self) -> None: ...

    def where(self) -> tuple[str, str] | None: ...


# -- requests and answers -------------------------------------------------------------------
def _blob(value: object) -> str:
    if isinstance(value, (bytes, bytearray, memoryview)):
        return base64.b64encode(bytes(value)).decode("ascii")
    raise TypeError(f"cannot render {type(value).__name__} to DynamoDB JSON")


#: one encoder for every request (``json.dumps`` with options builds one per call); a
#: request is a tree built by dynaorm, never cyclic: no check for cycles
_ENCODER = json.JSONEncoder(separators=(",", ":"), default=_blob, check_circular=False)


def render(request: dict[str, Any]) -> bytes:
    """The JSON body of ``request`` (botocore-shaped parameters), binary values base64
    encoded as botocore encodes them."""
    return _ENCODER.encode(request).encode("utf-8")


def decode(body: bytes) -> dict[str, Any]:
    """The answer ``body`` as a botocore client returns it (binary values as ``bytes``,
    numbers as strings); a body that is not a JSON object raises ``ValueError``."""
    try:  # (as botocore reads it: UTF-8, no sniffing; an empty body, no members)
        data = json.loads(body.decode() or "{}")
        # (a one-byte search first, in C at memory speed: a longer one costs about 3 ns a
        # byte, 4 ms for each over the 1.6 MB of a search's 100 hits with their vectors;
        # a backslash: a tag may be spelt with an escape, "\u0042" is "B" to botocore too)
        if (b"B" in body and (b'"B"' in body or b'"BS"' in body)) or b"\\" in body:
            data = binary_from_json(data)
    except (binascii.Error, RecursionError) as exc:  # (a ValueError, or nesting too deep)
        raise ValueError(f"not a DynamoDB answer: {exc}") from exc
    if not isinstance(data, dict):
        raise ValueError(f"not a DynamoDB answer: a JSON {type(data).__name__}")
    if None in data.values():  # (botocore drops null members)
        data = {k: v for k, v in data.items() if v is not None}
    return data


def answer_problem(status: int, headers: Mapping[str, str], data: bytes) -> str | None:
    """What makes an answer untrustworthy, whichever HTTP stack read it (``None``:
    nothing): a body that does not match its ``x-amz-crc32`` (or a header that is not a
    number), a compressed body (dynaorm asks for ``identity``), an interim or protocol-
    switching status as the final answer, a body whose size is not its
    ``Content-Length``, or an empty successful answer framed by nothing (a close: DynamoDB
    always sends a length, and a head cut short reads so)."""
    crc = headers.get("x-amz-crc32")
    if crc is not None:
        actual = zlib.crc32(data) & 0xFFFFFFFF
        if not (crc.isascii() and crc.isdigit()) or int(crc) != actual:
            return f"x-amz-crc32 mismatch: {crc[:40]!r} != {actual}"
    encoding = headers.get("content-encoding", "identity").strip().lower()
    if encoding not in ("identity", ""):
        return f"an answer with Content-Encoding {encoding[:40]!r}"
    if status < 200:
        return f"a {status} answer as the final one"
    length = headers.get("content-length")
    if length is not None and not (length.isascii() and length.isdigit()
                                   and int(length) == len(data)):
        return f"a body of {len(data)} bytes with Content-Length {length[:40]!r}"
    if (not data and status < 300 and length is None
            and "chunked" not in str(headers.get("transfer-encoding", "")).lower()):
        return "an empty answer framed by nothing (cut in its head?)"
    return None


def decoded_success(status: int, data: bytes) -> dict[str, Any]:
    """A successful answer's body decoded (:func:`decode`), or :class:`~dynaorm.wire.http.
    BadAnswer` when it is not JSON, or not an object of DynamoDB's shape: a top-level
    member of another JSON type than DynamoDB sends (``"Item": "x"``), or an ``Items``
    entry that is not an object (deeper shapes are the readers' to judge). The check both
    wires make of a success (botocore's through its ``before-parse`` handler)."""
    try:
        answer = decode(data)
    except ValueError as exc:
        raise BadAnswer(f"a {status} answer that is not DynamoDB JSON: {exc}") from exc
    problem = shape_problem(answer)
    if problem is not None:
        raise BadAnswer(f"a {status} answer that is not DynamoDB's: {problem}")
    if "Table" in answer or "TableDescription" in answer:  # (administration only)
        _timestamps(answer)
    return answer


def _timestamps(value: Any) -> None:
    """Every ``...DateTime`` number in ``value`` made the ``datetime`` botocore's parser
    makes of it (``botocore.utils.parse_timestamp``): one shape on both wires."""
    from botocore.utils import parse_timestamp as parse  # (typed for strings alone)

    for key, member in (value.items() if isinstance(value, dict) else enumerate(value)):
        if isinstance(member, int | float) and str(key).endswith("DateTime"):
            value[key] = parse(str(member))
        elif isinstance(member, dict | list):
            _timestamps(member)


def request_error(operation: str, request: dict[str, Any], code: str, message: str,
                  fields: Mapping[str, Any], status: int, request_id: str | None
                  ) -> RequestError:
    """The :class:`~dynaorm.RequestError` of an error answer, whichever wire read it:
    ``code`` and ``message``, the modeled ``fields`` (a transaction's
    ``CancellationReasons``, in request order; a refused write's ``Item``; a throttle's
    ``ThrottlingReasons``, as a :class:`~dynaorm.ThrottledError`), the HTTP
    ``status`` and DynamoDB's ``request_id``. A 5xx may come after the server applied the
    request (``maybe_applied``); a 4xx was refused, throttling included, except that an
    attempt of this token is still in progress."""
    raw = fields.get("CancellationReasons")
    reasons = [None if r.get("Code") in (None, "None") else
               Reason(str(r["Code"]), r.get("Message"), r.get("Item"))
               for r in (raw if isinstance(raw, list) else ()) if isinstance(r, dict)]
    item = fields.get("Item")
    if code == "ResourceNotFoundException":  # (a transaction's: any of its tables, a
        names = tables_of(request)  # receipts table among them: each named)
        where = (f"table {names[0]!r}" if len(names) == 1 else
                 f"one of the tables {', '.join(map(repr, names))}" if names else "table None")
        err: RequestError = TableNotFoundError(operation, code, f"{message} ({where})",
                                               reasons)
    elif code in THROTTLE_CODES:  # (the member is throttlingReasons in a ThrottlingException)
        raw = fields.get("ThrottlingReasons", fields.get("throttlingReasons"))
        err = ThrottledError(operation, code, message, [
            ThrottlingReason(str(r.get("reason", "")), str(r.get("resource", "")))
            for r in (raw if isinstance(raw, list) else ()) if isinstance(r, dict)])
    else:
        err = RequestError(operation, code, message, reasons,
                           item=item if isinstance(item, dict) else None)
    err.request_id = request_id or None
    err.maybe_applied = status >= 500 or code == "TransactionInProgressException"
    return err


def _error_code(code: object) -> str:
    """An error answer's ``__type`` as botocore's JSON parser reads it: the part before a
    ``:`` (a ``:uri`` suffix), after the last ``#`` (a namespace)."""
    text = str(code)
    if ":" in text:
        text = text.split(":", 1)[0]
    if "#" in text:
        text = text.rsplit("#", 1)[1]
    return text


def _metadata(status: int, headers: dict[str, str]) -> dict[str, Any]:
    """The ``ResponseMetadata`` botocore puts in every answer (``RetryAttempts`` 0:
    dynaorm retries, one attempt per answer)."""
    meta: dict[str, Any] = {"HTTPStatusCode": status, "HTTPHeaders": headers,
                            "RetryAttempts": 0}
    request_id = headers.get("x-amzn-requestid")
    if request_id is not None:
        meta["RequestId"] = request_id
    return meta


def answer_error(operation: str, request: dict[str, Any], status: int,
                 headers: dict[str, str], data: bytes) -> RequestError:
    """The :class:`~dynaorm.RequestError` of an error answer (status 300 or more), read
    as botocore's JSON parser reads it: a 5xx without a body or with an HTML page has the
    status as code and its reason as message; a body that is not JSON is the message, the
    status the code; else the type (the ``X-Amzn-Errortype`` header, the body's ``code``
    or ``__type``, as awsJson1_0 resolves it, without namespace and ``:uri`` suffix; the
    status when absent) and ``message`` (or ``Message``), with its modeled fields. Its
    ``response`` holds the answer's ``ResponseMetadata``."""
    text = data.strip()
    fields = {}
    if status >= 500 and (not text or text.startswith(b"<html>")):
        code, message = str(status), _REASONS.get(status, "")
    else:
        try:
            fields = decode(data)
        except ValueError:  # (UnicodeDecodeError included) botocore: the page as message
            fields = {"message": data.decode("utf-8", "replace")}
        message = fields.pop("message", fields.pop("Message", ""))
        kind = fields.pop("__type", None)
        code = _error_code(headers.get("x-amzn-errortype") or fields.get("code") or kind
                           or status)
    err = request_error(operation, request, code, str(message or ""), fields, status,
                        headers.get("x-amzn-requestid"))
    err.response = {"ResponseMetadata": _metadata(status, headers)}
    return err


def checked_answer(status: int, headers: dict[str, str], data: bytes, operation: str = "",
                   request: dict[str, Any] | None = None,
                   reader: Reader | None = None
                   ) -> dict[str, Any]:
    """An answer to ``operation``'s ``request`` checked (:func:`answer_problem`) and
    decoded, as a botocore client returns it (with its ``ResponseMetadata``). An
    untrustworthy answer, or a successful one that is not DynamoDB's
    (:func:`decoded_success`), raises :class:`~dynaorm.wire.http.BadAnswer`; an error
    answer its :class:`~dynaorm.RequestError` (:func:`answer_error`). ``reader``: what
    a read reads the checked body's bytes into itself (its objects validated straight
    from them), else ``None`` (then the body decodes as always)."""
    problem = answer_problem(status, headers, data)
    if problem is not None:
        raise BadAnswer(problem)
    if status >= 300:
        raise answer_error(operation, request or {}, status, headers, data)
    answer = None if reader is None else reader(data)
    if answer is None:
        answer = decoded_success(status, data)
    answer["ResponseMetadata"] = _metadata(status, headers)
    return answer


def failed(operation: str, exc: WireFailure) -> RequestError:
    """The :class:`~dynaorm.RequestError` of a failed exchange (its class says what is
    known of the request: not sent, answer lost, answer not to be trusted)."""
    return exc.error(operation, CONNECTION_ERROR, str(exc))


# -- the wires -------------------------------------------------------------------------------
class WireSettings:
    """An :class:`~dynaorm.wire.endpoint.Endpoint` as a wire sends to it, with its signer:
    the one base of :class:`SyncWire` and :class:`AsyncWire` (each adds its pool)."""

    def __init__(self, endpoint: Endpoint):
        #: where and how the wire sends
        self.endpoint = endpoint
        self._credentials = endpoint.credentials
        self._user_agent = endpoint.user_agent
        self._signer = Signer(endpoint.url, endpoint.region)
        # AWS Lambda sets its variables before the process starts: whether this one runs
        # in a Lambda function is read once, here (outside Lambda, no request pays for
        # looking up a variable that is not there); the trace id, per request
        self._in_lambda = "AWS_LAMBDA_FUNCTION_NAME" in os.environ
        # the request target: the endpoint's path, "/" when it has none, and its query
        # string (signed and sent as botocore signs and sends it)
        parts = urlsplit(endpoint.url)
        self._path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        # the absolute URL a proxy is given: it must carry a path too
        self._url = endpoint.url if parts.path else parts._replace(path="/").geturl()

    def _destination(self) -> Destination:
        """Where dynaorm's own connections go (the endpoint, when no proxy is used)."""
        end = self.endpoint
        parts = urlsplit(end.url)
        https = parts.scheme == "https"
        return Destination(parts.hostname or "", parts.port or (443 if https else 80),
                           host_header=self._signer.host,
                           tls=functools.partial(tls_context, end.verify, end.client_cert)
                           if https else None, connect_timeout=end.connect_timeout,
                           read_timeout=end.read_timeout, maxsize=end.pool_size)

    def prepare(self, operation: str, request: dict[str, Any]) -> tuple[bytes, dict[str, str]]:
        """The rendered body of ``request`` and its signed headers, credentials frozen now
        (a refreshable set refreshes here when due, as botocore's signer does; none, or a
        refresh that fails: a :class:`~dynaorm.RequestError` with botocore's code). In AWS
        Lambda the trace id (:func:`trace_header`) is added, not signed, as botocore does."""
        body = _ENCODER.encode(request).encode("utf-8")
        credentials = self._credentials
        if credentials is None:
            raise RequestError(operation, "NoCredentialsError", "Unable to locate credentials")
        try:
            frozen = credentials.get_frozen_credentials()
        except Exception as exc:  # a refresh that failed: nothing was sent
            raise RequestError(operation, type(exc).__name__, str(exc)) from exc
        headers = self._signer.sign(body, TARGET_PREFIX + operation, self._user_agent, frozen)
        if self._in_lambda:
            trace = trace_header()
            if trace is not None:
                headers["X-Amzn-Trace-Id"] = trace
        return body, headers


class SyncWire(WireSettings):
    """Sends one client's DynamoDB requests, blocking, to its endpoint (thread-safe: each
    connection serves one request at a time)."""

    def __init__(self, endpoint: Endpoint):
        super().__init__(endpoint)
        # without a proxy: dynaorm's own keep-alive connections (dynaorm.wire.http);
        # through one: urllib3's ProxyManager (CONNECT tunnels, proxy authentication)
        self._direct: HTTPPool | None = None
        self._manager: Any = None
        end = endpoint
        if end.proxy is None:
            self._direct = HTTPPool(self._destination())
            return
        import urllib3

        self.timeout = urllib3.Timeout(connect=end.connect_timeout, read=end.read_timeout)
        tls: dict[str, Any] = ({"cert_reqs": "CERT_NONE"} if end.verify is False else
                               {"cert_reqs": "CERT_REQUIRED", "ca_certs": end.verify})
        cert = end.client_cert
        if cert:
            tls.update({"cert_file": cert} if isinstance(cert, str) else
                       {"cert_file": cert[0], "key_file": cert[1]})
        # the connection to the proxy: its own TLS context, as botocore builds it
        tls["proxy_ssl_context"] = proxy_tls_context(end.proxy, end.proxies_config, end.verify)
        forwarding = end.proxies_config.get("proxy_use_forwarding_for_https")
        if forwarding is not None:  # an https:// proxy gets the absolute URL, no CONNECT
            tls["use_forwarding_for_https"] = bool(forwarding)
        self._manager = urllib3.ProxyManager(end.proxy, maxsize=end.pool_size,
                                             proxy_headers=dict(end.proxy_headers), **tls)

    def send(self, operation: str, request: dict[str, Any],
             reader: Reader | None = None
             ) -> dict[str, Any]:
        """Send ``request`` once; the answer as a botocore client returns it (``reader``:
        see :func:`checked_answer`), or its :class:`~dynaorm.RequestError`."""
        try:
            body, headers = self.prepare(operation, request)
            if self._direct is not None:
                return self._direct.post(self._path, body, headers, checked_answer,
                                         operation, request, reader)
            return self._via_proxy(operation, request, body, headers)
        except WireFailure as exc:
            raise failed(operation, exc) from exc

    def _via_proxy(self, operation: str, request: dict[str, Any], body: bytes,
                   headers: dict[str, str]) -> dict[str, Any]:
        """Send through the proxy (urllib3): a timeout of the answer or a connection that
        broke after sending is a lost answer; any other failure (no connection, the proxy
        or TLS refused, a connect timeout) left the request unsent."""
        import urllib3

        errors = urllib3.exceptions
        try:
            resp = self._manager.urlopen("POST", self._url, body=body, headers=headers,
                                         timeout=self.timeout, retries=False,
                                         preload_content=True)
        except (errors.ReadTimeoutError, errors.ProtocolError) as exc:
            raise AnswerLostError(operation, CONNECTION_ERROR, _text(exc)) from exc
        except errors.HTTPError as exc:
            raise RequestNotSentError(operation, CONNECTION_ERROR, _text(exc)) from exc
        return checked_answer(resp.status, {k.lower(): v for k, v in resp.headers.items()},
                              resp.data, operation, request)

    def close(self) -> None:
        """Close the wire's idle connections."""
        if self._direct is not None:
            self._direct.close()
        if self._manager is not None:
            self._manager.clear()


def _text(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


class AsyncWire(WireSettings):
    """Sends one client's DynamoDB requests to its endpoint in one event loop: connections
    opened by :meth:`send` inside the running loop, closed by :meth:`close` (the client's
    ``aclose``; ``async with`` works too).

    Credentials are frozen for every request with the sync ``get_frozen_credentials()``:
    a refreshable set refreshes there when due, which may block the loop for the refresh
    (an STS or metadata call), as aiobotocore's own path does for botocore's non-async
    credential providers. Between refreshes it is a lock and a few attribute reads.
    """

    def __init__(self, endpoint: Endpoint):
        super().__init__(endpoint)
        self._proxied = None if endpoint.proxy is None else SyncWire(endpoint)
        self._direct = AsyncHTTPPool(self._destination()) if self._proxied is None else None

    @property
    def closed(self) -> bool:
        """Whether no connection is kept open (none made yet, or closed)."""
        if self._direct is not None:
            return not self._direct._idle
        return not len(self._proxied._manager.pools)  # type: ignore[union-attr]

    async def close(self) -> None:
        """Close the wire's connections (a later :meth:`send` opens new ones)."""
        if self._direct is not None:
            await self._direct.close()
        if self._proxied is not None:
            self._proxied.close()

    async def __aenter__(self) -> AsyncWire:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def send(self, operation: str, request: dict[str, Any],
                   reader: Reader | None = None
                   ) -> dict[str, Any]:
        """Send ``request`` once; the answer as an aiobotocore client returns it
        (``reader``: see :func:`~dynaorm.wire.checked_answer`), or its
        :class:`~dynaorm.RequestError`."""
        if self._direct is None:  # through a proxy: the sync wire, on a worker thread
            import asyncio

            return await asyncio.to_thread(self._proxied.send,  # type: ignore[union-attr]
                                           operation, request, reader)
        body, headers = self.prepare(operation, request)
        try:
            return await self._direct.post(self._path, body, headers, checked_answer,
                                           operation, request, reader)
        except WireFailure as exc:
            raise failed(operation, exc) from exc


class Wire(SyncWire):
    """dynaorm's own wire as a client's :class:`Transport`: the sync connections (it is the
    :class:`SyncWire`) and, per event loop, an :class:`AsyncWire` opened
    by the loop's first request (connections belong to the loop that opened them). Through
    a proxy, an async request is sent by the sync wire on a worker thread (urllib3's
    ``ProxyManager``): one way through proxies for both kinds of session. On AWS, a
    client's wire is a :class:`SearchingWire` (:func:`wire_for`)."""

    botocore = False

    def __init__(self, endpoint: Endpoint):
        super().__init__(endpoint)
        self._loops: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, AsyncWire] = (
            weakref.WeakKeyDictionary())

    def where(self) -> tuple[str, str]:
        """The endpoint URL and region requests go to."""
        return self.endpoint.url, self.endpoint.region

    def async_wire(self) -> AsyncWire | None:
        """The running loop's :class:`AsyncWire`, if a request opened it."""
        import asyncio

        return self._loops.get(asyncio.get_running_loop())

    async def asend(self, operation: str, request: dict[str, Any],
                    reader: Reader | None = None
                    ) -> dict[str, Any]:
        """Send ``request`` once on the running event loop (see :meth:`send`)."""
        import asyncio

        if self._direct is None:  # through a proxy
            return await asyncio.to_thread(self.send, operation, request, reader)
        loop = asyncio.get_running_loop()
        wire = self._loops.get(loop)
        if wire is None:  # the loop's first request: its wire, closed when the loop ends
            wire = self._loops[loop] = AsyncWire(self.endpoint)

            def end(wire: AsyncWire = wire) -> Awaitable[None]:
                self._loops.pop(loop, None)  # (also when let go: see loop_keeper)
                return wire.close()

            await loop_keeper(end)
        return await wire.send(operation, request, reader)

    async def aclose(self) -> None:
        """Close the running loop's connections, then the sync ones."""
        import asyncio

        wire = self._loops.pop(asyncio.get_running_loop(), None)
        if wire is not None:  # (its keeper, when the loop ends, finds it closed)
            await wire.close()
        self.close()


class SearchingWire(Wire):
    """A client's wire on AWS, where ``SearchVectors`` goes to the vector-search endpoint
    (:attr:`~dynaorm.wire.endpoint.Endpoint.search_url`) through a wire of its own, made
    by the first search; every other request as :class:`Wire` sends it."""

    def __init__(self, endpoint: Endpoint):
        super().__init__(endpoint)
        self._search: Wire | None = None
        self._search_lock = threading.Lock()

    def _searching(self) -> Wire:
        """The vector-search endpoint's wire."""
        url = self.endpoint.search_url
        assert url is not None  # (wire_for makes a SearchingWire only with one)
        with self._search_lock:
            if self._search is None:
                self._search = Wire(dataclasses.replace(self.endpoint, url=url,
                                                        search_url=None))
            return self._search

    def send(self, operation: str, request: dict[str, Any],
             reader: Reader | None = None) -> dict[str, Any]:
        """Send ``request`` once (a search to the vector-search endpoint)."""
        if operation == "SearchVectors":
            return self._searching().send(operation, request, reader)
        return super().send(operation, request, reader)

    async def asend(self, operation: str, request: dict[str, Any],
                    reader: Reader | None = None) -> dict[str, Any]:
        """Send ``request`` once on the running event loop (see :meth:`send`)."""
        if operation == "SearchVectors":
            return await self._searching().asend(operation, request, reader)
        return await super().asend(operation, request, reader)

    async def aclose(self) -> None:
        """Close the running loop's connections and the sync ones, the search endpoint's
        too."""
        if self._search is not None:
            await self._search.aclose()
        await super().aclose()

    def close(self) -> None:
        """Close the wire's idle connections, the search endpoint's too."""
        super().close()
        if self._search is not None:
            self._search.close()


def wire_for(endpoint: Endpoint) -> Wire:
    """A client's own wire to ``endpoint``: a :class:`SearchingWire` where searches go to
    an endpoint of their own (AWS), else a :class:`Wire`."""
    return Wire(endpoint) if endpoint.search_url is None else SearchingWire(endpoint)
