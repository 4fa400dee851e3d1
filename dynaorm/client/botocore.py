"""botocore's wire: a client's requests through botocore's client methods (sync) and each
event loop's aiobotocore client (async), as ``Client(wire="botocore")`` sends them and
moto's in-process backend answers them (:func:`dynaorm.client.client.in_process_mock`).

The clients are made as every dynaorm client is (:func:`dynaorm.client.settings.
client_settings`: botocore's retries off, parameter validation off) and check each answer
as dynaorm's own wire does (:func:`check_checksums`). Their failures are mapped here, once,
to :class:`~dynaorm.RequestError` (:func:`botocore_error`): an error answer as its code,
message and modeled fields say; a failure without an answer as one of three classes, the
same as on dynaorm's own wire (:class:`~dynaorm.RequestNotSentError`,
:class:`~dynaorm.AnswerLostError`, :class:`~dynaorm.BadAnswerError`). botocore's modules
are imported when a table first sends, not by ``import dynaorm`` (nor is
:mod:`dynaorm.wire`, whose checks and error records this module shares).
"""

from __future__ import annotations

import functools
import threading
import weakref
from typing import TYPE_CHECKING, Any, NoReturn

from dynaorm.client.settings import (
    client_settings,
    local_only,
    service_settings,
)
from dynaorm.errors import (
    AnswerLostError,
    BadAnswerError,
    DynaormError,
    RequestError,
    RequestNotSentError,
)
from dynaorm.private_apis import checked_aiohttp_session

if TYPE_CHECKING:
    import asyncio

#: What to install for AsyncSession.
INSTALL_HINT = 'pip install "dynaorm[async]"'


@functools.cache
def method_name(operation: str) -> str:
    """The botocore client method of a DynamoDB operation (``PutItem`` -> ``put_item``),
    the public way requests go through botocore's client."""
    from botocore import xform_name

    return str(xform_name(operation))


def aiobotocore() -> Any:
    """The ``aiobotocore`` package (``dynaorm[async]``), or a :class:`~dynaorm.DynaormError`
    saying what to install."""
    try:
        import aiobotocore.config
        import aiobotocore.session
    except ModuleNotFoundError as exc:
        raise DynaormError(f"AsyncSession needs aiobotocore: {INSTALL_HINT}") from exc
    return aiobotocore


def botocore_error(operation: str, request: dict[str, Any], exc: Exception) -> Exception:
    """What a failure of sending ``request`` once through botocore's (or aiobotocore's)
    client is: a :class:`~dynaorm.RequestError` as it is; an error answer
    (``ClientError``) as its code, message and modeled fields; a checksum that does not
    match, a bad answer; no connection (``EndpointConnectionError``, a connect timeout, a
    proxy refused: TLS included), not sent; an answer lost after sending (a read timeout,
    a dropped line: ``HTTPClientError``), maybe applied; another botocore error (no
    credentials, ...) a request error with its class as code; an ``OSError`` (or an
    urllib3 or aiohttp failure) that no library wrapped, a lost answer; anything else (a
    bug, not a failure of the request) as it is."""
    from botocore.exceptions import (
        BotoCoreError,
        ChecksumError,
        ClientError,
        ConnectTimeoutError,
        EndpointConnectionError,
        HTTPClientError,
        ProxyConnectionError,
    )
    from botocore.exceptions import ConnectionError as BotoConnectionError

    from dynaorm.wire import CONNECTION_ERROR, request_error

    if isinstance(exc, RequestError):
        return exc
    if isinstance(exc, ClientError):
        response: dict[str, Any] = dict(exc.response)
        error = response.get("Error", {})
        metadata = response.get("ResponseMetadata", {})
        return request_error(operation, request, str(error.get("Code", "Unknown")),
                             str(error.get("Message", "")), response,
                             int(metadata.get("HTTPStatusCode", 0) or 0),
                             str(metadata.get("RequestId") or ""))
    text = str(exc)
    if isinstance(exc, ChecksumError):
        return BadAnswerError(operation, CONNECTION_ERROR, text)
    if isinstance(exc, EndpointConnectionError | ConnectTimeoutError | ProxyConnectionError
                  | BotoConnectionError):  # (SSLError is an EndpointConnectionError)
        return RequestNotSentError(operation, CONNECTION_ERROR, text)
    if isinstance(exc, HTTPClientError):  # sent, answer lost: a read timeout, a dropped line
        return AnswerLostError(operation, CONNECTION_ERROR, text)
    if isinstance(exc, BotoCoreError):  # not sent: no credentials, ...
        return RequestError(operation, type(exc).__name__, text)
    if isinstance(exc, OSError) or _is_foreign_http(exc):  # sent or not: no one can say
        return AnswerLostError(operation, CONNECTION_ERROR, f"{type(exc).__name__}: {exc}")
    if _parsing(exc):  # (an answer of another shape than the operation's: red team 08d)
        return BadAnswerError(operation, CONNECTION_ERROR, f"botocore cannot parse it: {exc!r}")
    return exc


def _parsing(exc: Exception) -> bool:
    """Whether ``exc`` was raised in botocore's (or aiobotocore's) response parser."""
    tb = exc.__traceback__
    while tb and tb.tb_next:
        tb = tb.tb_next
    return str(tb and tb.tb_frame.f_globals.get("__name__")).endswith("botocore.parsers")


def _raise(operation: str, request: dict[str, Any], exc: Exception) -> NoReturn:
    mapped = botocore_error(operation, request, exc)
    if mapped is exc:
        raise exc
    raise mapped from exc


def _is_foreign_http(exc: Exception) -> bool:
    """Whether ``exc`` is an aiohttp client failure or a urllib3 one (a body cut short
    under botocore's reader), each library imported only if it is."""
    module = type(exc).__module__
    if module.startswith("aiohttp"):
        import aiohttp

        return isinstance(exc, aiohttp.ClientError)
    if module.startswith("urllib3"):
        import urllib3

        return isinstance(exc, urllib3.exceptions.HTTPError)
    return False


# -- answers checked as dynaorm's own wire checks them --------------------------------------
def _checked(response_dict: dict[str, Any], operation_model: Any = None, **_: Any) -> None:
    """botocore's ``before-parse`` handler: the checks of dynaorm's own wire
    (:func:`dynaorm.wire.answer_problem`: ``x-amz-crc32``, encoding, status, length), and
    a successful answer must be a DynamoDB JSON object (:func:`dynaorm.wire.
    decoded_success`); else a :class:`~dynaorm.BadAnswerError`, before botocore parses
    what it cannot trust."""
    from dynaorm.wire import CONNECTION_ERROR, answer_problem, decoded_success
    from dynaorm.wire.http import BadAnswer

    status = int(response_dict.get("status_code") or 0)
    headers = response_dict.get("headers") or {}
    body = response_dict.get("body")
    data = body if isinstance(body, bytes) else b""
    problem = answer_problem(status, headers, data)
    if problem is None:
        if status >= 300:
            _error_body_as_object(response_dict, data)
        elif status >= 200:
            try:
                decoded_success(status, data)
            except BadAnswer as exc:
                problem = str(exc)
    if problem is not None:
        name = str(getattr(operation_model, "name", "") or "")
        raise BadAnswerError(name, CONNECTION_ERROR, problem)


def _error_body_as_object(response_dict: dict[str, Any], data: bytes) -> None:
    """An error answer whose body is JSON but not an object (``null``, a list, nested too
    deep) or not UTF-8 made what botocore makes of a body that is not JSON (the text as
    message, the status as code), instead of the ``AttributeError`` or
    ``UnicodeDecodeError`` botocore's parser raises."""
    import json

    try:
        data.decode("utf-8")
        parsed = json.loads(data) if data.strip() else {}
    except UnicodeDecodeError:  # (botocore decodes the body first, and raises)
        parsed = None
    except (ValueError, RecursionError):
        parsed = None if data.lstrip()[:1] in (b"[", b"{") else {}
    if not isinstance(parsed, dict):
        response_dict["body"] = json.dumps({"message": data.decode("utf-8", "replace")}).encode()


def check_checksums(client: Any) -> Any:
    """``client`` (a botocore or aiobotocore DynamoDB client) checking every answer as
    dynaorm's own wire does: against its ``x-amz-crc32`` first. botocore checks the crc32
    only as a retry condition, and dynaorm turns botocore's retries off (dynaorm retries):
    without this a cut or corrupted answer would be parsed. An answer that fails raises
    :class:`~dynaorm.BadAnswerError` (retried), as on dynaorm's own wire."""
    client.meta.events.register("before-parse.dynamodb", _checked,
                                unique_id="dynaorm-checked")
    return client


# -- the wire ------------------------------------------------------------------------------
class BotocoreWire:
    """The botocore wire of one :class:`~dynaorm.Client` (``owner``: its endpoint, region,
    ``Config``, name and botocore session): its botocore client, made on first use (what
    ``table.client`` returns, whichever wire the client sends over), and each event
    loop's aiobotocore client, made by the loop's first request."""

    botocore = True
    #: inside moto's in-process mock that the caller started (``mock_aws``): moto answers
    #: botocore's client only (aiobotocore's answers there are no awaitables: every
    #: ``AsyncSession`` request failed with a ``TypeError``), so :meth:`asend` sends on a
    #: worker thread, as the test backend's transport does
    in_process = False

    def __init__(self, owner: Any):
        self._owner = owner
        self._client: Any = None
        self._lock = threading.Lock()
        self._loops: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop,
                                               asyncio.Future[Any]] = (
            weakref.WeakKeyDictionary())
        #: per loop, what closes its aiobotocore client when the loop ends
        self._keepers: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Any] = (
            weakref.WeakKeyDictionary())
        #: the botocore clients of other services (KMS), by (service, region)
        self._services: dict[tuple[str, str | None], Any] = {}

    @property
    def client(self) -> Any:
        """The botocore DynamoDB client (made on first use; safe to share by threads)."""
        made = self._client
        if made is None:
            from botocore.exceptions import BotoCoreError

            with self._lock:
                if self._client is None:
                    owner = self._owner
                    try:  # (checking its answers: check_checksums)
                        session = owner._botocore_session()
                        kwargs, options = client_settings(
                            session, owner.endpoint_url, owner.region, owner=owner._label,
                            config=owner.config, verify=owner.verify)
                        import botocore.config

                        self._client = check_checksums(session.create_client(
                            "dynamodb", config=botocore.config.Config(**options), **kwargs))
                    except (BotoCoreError, ValueError) as exc:  # a malformed endpoint, ...
                        raise DynaormError(
                            f"{owner._label}: cannot create a DynamoDB client for endpoint "
                            f"{owner.endpoint_url!r}: {exc}") from exc
                made = self._client
        return made

    def service(self, name: str, region: str | None = None) -> Any:
        """The botocore client of another AWS service (``"kms"``) the owner's requests to
        it go through (``region``: of another region than the owner's), made on first use
        from the owner's botocore session, region, ``Config`` and ``verify``, its endpoint
        as botocore configures that service (:func:`~dynaorm.client.settings.
        service_settings`); shared by threads, as botocore's clients may be."""
        key = (name, region)
        made = self._services.get(key)
        if made is None:
            with self._lock:
                made = self._services.get(key)
                if made is None:
                    import botocore.config

                    owner = self._owner
                    session = owner._botocore_session()
                    kwargs, options = service_settings(
                        session, name, region or owner.region, endpoint_url=owner.endpoint_url,
                        owner=owner._label, config=owner.config, verify=owner.verify)
                    made = self._services[key] = session.create_client(
                        name, config=botocore.config.Config(**options), **kwargs)
        return made

    def send_to(self, operation: str, request: dict[str, Any], via: Any = None
                ) -> dict[str, Any]:
        """Send a request to another service (``operation`` named ``service:Name``) once,
        through ``via`` (a botocore client of that service; a region name: the owner's
        client of that region; ``None``: the owner's own): its failures mapped as
        DynamoDB's are (:func:`botocore_error`). A streamed body (S3's ``GetObject``) is
        read whole here, so the answer a protocol gets is plain data (its bytes)."""
        service, _, name = operation.partition(":")
        try:
            client = self.service(service, via) if via is None or isinstance(via, str) else via
            answer: dict[str, Any] = getattr(client, method_name(name))(**request)
            body: Any = answer.get("Body")
            if hasattr(body, "read"):
                with body:  # (its connection goes back to the pool)
                    answer["Body"] = body.read()
            return answer
        except Exception as exc:
            _raise(operation, request, exc)

    def where(self) -> tuple[str, str] | None:
        """The endpoint URL and region of a client made so far (``None``: none yet)."""
        made = [self._client, *(f.result() for f in list(self._loops.values())
                                if f.done() and f.exception() is None)]
        for client in made:
            if client is not None:
                return str(client.meta.endpoint_url), str(client.meta.region_name)
        return None

    def send(self, operation: str, request: dict[str, Any], reader: Any = None
             ) -> dict[str, Any]:
        """Send ``request`` once through the botocore client (``reader`` is ignored)."""
        try:
            answer: dict[str, Any] = getattr(self.client, method_name(operation))(**request)
            return answer
        except Exception as exc:
            _raise(operation, request, exc)

    async def aio(self) -> Any:
        """This event loop's aiobotocore client (made once per loop; closed by
        :meth:`aclose`)."""
        import asyncio

        loop = asyncio.get_running_loop()
        future = self._loops.get(loop)
        if future is None:
            future = self._loops[loop] = loop.create_future()
            try:
                future.set_result(await self._make_aio(loop))
            except BaseException as exc:
                del self._loops[loop]
                future.set_exception(exc)
                future.exception()  # retrieved: no "never retrieved" warning
                raise
        return await asyncio.shield(future) if not future.done() else future.result()

    async def _make_aio(self, loop: asyncio.AbstractEventLoop) -> Any:
        aio = aiobotocore()
        owner = self._owner
        session = aio.session.get_session()
        has = None
        if local_only(session, owner.endpoint_url):
            has = await session.get_credentials() is not None
        kwargs, options = client_settings(session, owner.endpoint_url, owner.region,
                                          owner=owner._label, config=owner.config,
                                          has_credentials=has, verify=owner.verify)
        try:
            context = session.create_client("dynamodb", config=aio.config.AioConfig(
                **options, http_session_cls=checked_aiohttp_session()), **kwargs)
            made = check_checksums(await context.__aenter__())
        except Exception as exc:  # a malformed endpoint, ...: never a botocore exception
            raise DynaormError(f"{owner._label}: cannot create a DynamoDB client for "
                               f"endpoint {owner.endpoint_url!r}: {exc}") from exc
        from dynaorm.wire.http import loop_keeper

        def end() -> Any:
            self._loops.pop(loop, None)  # (also when let go: see loop_keeper)
            self._keepers.pop(loop, None)
            return context.__aexit__(None, None, None)

        self._keepers[loop] = await loop_keeper(end)
        return made

    async def asend(self, operation: str, request: dict[str, Any], reader: Any = None
                    ) -> dict[str, Any]:
        """Send ``request`` once through this loop's aiobotocore client; inside moto's
        in-process mock that the caller started (:attr:`in_process`), through botocore's
        client on a worker thread."""
        import asyncio

        if self.in_process:
            return await asyncio.to_thread(self.send, operation, request)
        try:
            made = await self.aio()
            answer: dict[str, Any] = await getattr(made, method_name(operation))(**request)
            return answer
        except Exception as exc:  # (a cancellation is no Exception: it passes)
            _raise(operation, request, exc)

    def close(self) -> None:
        """Nothing to close: the botocore client keeps its own pool."""

    async def aclose(self) -> None:
        """Close this event loop's aiobotocore client."""
        import asyncio

        keeper = self._keepers.get(asyncio.get_running_loop())
        if keeper is not None:
            await keeper.aclose()

