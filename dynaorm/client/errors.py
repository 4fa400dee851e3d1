"""Failures as dynaorm's: the one place a failure of sending a request (a botocore or
aiobotocore exception, dynaorm's own wire's connection failures, an error answer) is turned
into a :class:`~dynaorm.RequestError`, with the cancellation reasons in request order and
``maybe_applied`` set when the request may have been applied (an answer lost after
sending, a 5xx), which is what the retry rules and the outcome rules need.

A failure without an answer is one of three classes, the same on every wire:
:class:`~dynaorm.RequestNotSentError` (not applied), :class:`~dynaorm.AnswerLostError`
(sent, no complete answer: maybe applied) and :class:`~dynaorm.BadAnswerError` (sent,
answered with something that cannot be trusted: maybe applied); each has the code
``"ConnectionError"`` (retried).

botocore's exceptions are imported when the first failure is mapped (``import dynaorm``
loads no botocore module; both wires import them when a table first sends)."""

from __future__ import annotations

from typing import Any

from dynaorm.errors import (
    AnswerLostError,
    BadAnswerError,
    RequestError,
    RequestNotSentError,
    TableNotFoundError,
)
from dynaorm.protocol.events import Reason, table_of

__all__ = ["CONNECTION_ERROR", "answer_error", "connection_error", "map_error",
           "method_name"]

#: the ``code`` of every failure without an answer (retried by the retry rules)
CONNECTION_ERROR = "ConnectionError"


def connection_error(operation: str, kind: type[RequestError], message: str) -> RequestError:
    """A failure without a (trusted) answer: ``kind`` is
    :class:`~dynaorm.RequestNotSentError`, :class:`~dynaorm.AnswerLostError` or
    :class:`~dynaorm.BadAnswerError`."""
    return kind(operation, CONNECTION_ERROR, message)


def map_error(operation: str, request: dict[str, Any], exc: Exception) -> Exception:
    """What a failure of sending ``request`` once is raised as: a
    :class:`~dynaorm.RequestError` as it is (dynaorm's own wire raises them mapped); the
    :class:`~dynaorm.RequestError` for a botocore (or aiobotocore) exception; for an
    ``OSError`` (or a urllib3 or aiohttp failure) that no library wrapped, a lost answer
    (maybe applied); anything else (a bug, not a failure of the request) as it is."""
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

    if isinstance(exc, RequestError):
        return exc
    if type(exc).__module__.startswith("dynaorm.wire"):
        return _wire_error(operation, request, exc)
    if isinstance(exc, ClientError):
        return answer_error(operation, request, exc.response)  # type: ignore[arg-type]
    text = str(exc)
    if isinstance(exc, ChecksumError):
        return connection_error(operation, BadAnswerError, text)
    if isinstance(exc, EndpointConnectionError | ConnectTimeoutError |
                  ProxyConnectionError):  # (SSLError is an EndpointConnectionError)
        return connection_error(operation, RequestNotSentError, text)
    if isinstance(exc, HTTPClientError):  # sent, answer lost: a read timeout, a dropped line
        return connection_error(operation, AnswerLostError, text)
    if isinstance(exc, BotoCoreError):  # not sent: no connection, no credentials, ...
        if isinstance(exc, BotoConnectionError):
            return connection_error(operation, RequestNotSentError, text)
        return RequestError(operation, type(exc).__name__, text)
    if isinstance(exc, OSError) or _is_foreign_http(exc):  # sent or not: no one can say
        return connection_error(operation, AnswerLostError, f"{type(exc).__name__}: {exc}")
    return exc


def _wire_error(operation: str, request: dict[str, Any], exc: Exception) -> Exception:
    """The :class:`~dynaorm.RequestError` of a failure of dynaorm's own wire: an error
    answer as botocore's ``ClientError`` would be, a failed exchange as the error its
    class names."""
    from dynaorm.wire import ErrorAnswer
    from dynaorm.wire.http import WireFailure

    if isinstance(exc, ErrorAnswer):
        return answer_error(operation, request, exc.response)
    if isinstance(exc, WireFailure):
        return connection_error(operation, exc.error, str(exc))
    return exc


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


def answer_error(operation: str, request: dict[str, Any], response: dict[str, Any]
                 ) -> RequestError:
    """The :class:`~dynaorm.RequestError` of an error answer, given as botocore's
    ``ClientError.response`` (``Error``, modeled fields, ``ResponseMetadata``): the one
    mapping of both wires' error answers."""
    error = response.get("Error", {})
    code = str(error.get("Code", "Unknown"))
    message = str(error.get("Message", ""))
    raw: list[dict[str, Any]] = [r for r in response.get("CancellationReasons", ())
                                 if isinstance(r, dict)]
    reasons = [
        None if r.get("Code") in (None, "None") else
        Reason(str(r["Code"]), r.get("Message"), r.get("Item"))
        for r in raw
    ]
    item = response.get("Item")
    if code == "ResourceNotFoundException":
        err: RequestError = TableNotFoundError(
            operation, code, f"{message} (table {table_of(request)!r})", reasons)
    else:
        err = RequestError(operation, code, message, reasons,
                           item=item if isinstance(item, dict) else None)
    metadata = response.get("ResponseMetadata", {})
    err.request_id = str(metadata.get("RequestId") or "") or None
    status = int(metadata.get("HTTPStatusCode", 0) or 0)
    # a 5xx may come after the server applied the request; a 4xx was refused (throttling
    # included), except that an attempt of this token is still in progress
    err.maybe_applied = status >= 500 or code == "TransactionInProgressException"
    return err


def method_name(operation: str) -> str:
    """The botocore client method of a DynamoDB operation (``PutItem`` -> ``put_item``),
    the public way requests go through botocore's client (``wire="botocore"``)."""
    from botocore import xform_name

    return str(xform_name(operation))
