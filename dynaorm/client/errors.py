"""botocore's failures as dynaorm's: the one place a botocore (or aiobotocore) exception is
turned into a :class:`~dynaorm.RequestError`, with the cancellation reasons in request order
and ``maybe_applied`` set when the request may have been applied (an answer lost after
sending, a 5xx), which is what the retry rules and the outcome rules need.

botocore's exceptions are imported when the first failure is mapped (``import dynaorm``
loads no botocore module; both wires import them when a table first sends)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from dynaorm.errors import RequestError, TableNotFoundError
from dynaorm.protocol.events import Reason, table_of

if TYPE_CHECKING:
    from botocore.exceptions import ClientError

__all__ = ["map_error", "method_name"]


def map_error(operation: str, request: dict[str, Any], exc: Exception) -> Exception:
    """What a failure of sending ``request`` once is raised as: the
    :class:`~dynaorm.RequestError` for a botocore (or aiobotocore) exception; for an
    ``OSError`` that no library wrapped (an aiohttp or socket failure aiobotocore left
    as it was), a lost answer (``ConnectionError``, maybe applied); anything else (a bug,
    not a failure of the request) as it is."""
    from botocore.exceptions import BotoCoreError, ClientError, HTTPClientError
    from botocore.exceptions import ConnectionError as BotoConnectionError

    if isinstance(exc, RequestError):
        return exc
    if isinstance(exc, ClientError):
        return _client_error(operation, request, exc)
    if isinstance(exc, HTTPClientError):  # sent, answer lost: a read timeout, a dropped line
        err = RequestError(operation, "ConnectionError", str(exc))
        err.maybe_applied = True
        return err
    if isinstance(exc, BotoCoreError):  # not sent: no connection, no credentials, ...
        code = "ConnectionError" if isinstance(exc, BotoConnectionError) else (
            type(exc).__name__)
        return RequestError(operation, code, str(exc))
    if isinstance(exc, OSError) or _is_aiohttp(exc):  # sent or not: no one can say
        err = RequestError(operation, "ConnectionError", f"{type(exc).__name__}: {exc}")
        err.maybe_applied = True
        return err
    return exc


def _is_aiohttp(exc: Exception) -> bool:
    """Whether ``exc`` is an aiohttp client failure (aiohttp is imported only if it is)."""
    if not type(exc).__module__.startswith("aiohttp"):
        return False
    import aiohttp

    return isinstance(exc, aiohttp.ClientError)


def _client_error(operation: str, request: dict[str, Any], exc: ClientError) -> RequestError:
    error = exc.response.get("Error", {})
    code = str(error.get("Code", "Unknown"))
    message = str(error.get("Message", ""))
    raw: list[dict[str, Any]] = list(exc.response.get("CancellationReasons", ()))  # type: ignore[arg-type]
    reasons = [
        None if r.get("Code") in (None, "None") else
        Reason(str(r["Code"]), r.get("Message"), r.get("Item"))
        for r in raw
    ]
    item = exc.response.get("Item")
    if code == "ResourceNotFoundException":
        err: RequestError = TableNotFoundError(
            operation, code, f"{message} (table {table_of(request)!r})", reasons)
    else:
        err = RequestError(operation, code, message, reasons,
                           item=item if isinstance(item, dict) else None)
    status = int(exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0) or 0)
    # a 5xx may come after the server applied the request; a 4xx was refused (throttling
    # included), except that an attempt of this token is still in progress
    err.maybe_applied = status >= 500 or code == "TransactionInProgressException"
    return err


def method_name(operation: str) -> str:
    """The botocore client method of a DynamoDB operation (``PutItem`` -> ``put_item``),
    the public way requests go through botocore's client (``wire="botocore"``)."""
    from botocore import xform_name

    return str(xform_name(operation))
