"""The sync I/O: one botocore client per table, and the sync driver of protocols.

The botocore client is created once per transport by
:func:`dynaorm.transport.config.create_client` with botocore's own retries off, so dynaorm's
retries and botocore's never multiply. Requests go over dynaorm's own wire
(:class:`dynaorm.wire.SyncWire`, configured from that client) unless the transport's
``wire`` is ``"botocore"`` or moto's in-process mock is on: then through the client's
public operation methods (``client.put_item``). Both raise the same botocore exceptions.

:meth:`Transport.run` drives a protocol (:mod:`dynaorm.transport.steps`) through the pump
:func:`~dynaorm.transport.steps.expand` and performs what it leaves: a ``Send`` is one
attempt through the client, a ``Wait`` a sleep, a ``Gather`` its protocols on threads (each
thread keeps the caller's context, so a commit's recording and the ``on_request`` hooks see
every request). Failures leave here only as :class:`~dynaorm.RequestError` (a missing table
as :class:`~dynaorm.TableNotFoundError`), never as botocore exceptions.
"""

from __future__ import annotations

import contextvars
import sys
import threading
import time
from collections.abc import Callable, Generator, Iterator, Sequence
from typing import Any, TypeVar

from dynaorm._types import Item
from dynaorm.errors import DynaormError
from dynaorm.transport import retry
from dynaorm.transport.config import create_client
from dynaorm.transport.errors import map_error, method_name
from dynaorm.transport.intercept import Interceptor
from dynaorm.transport.retry import Listener
from dynaorm.transport.steps import Emit, Gather, Send, Stream, Wait, call, captured, expand

__all__ = ["MAX_WORKERS", "WIRES", "Transport", "check_wire"]

R = TypeVar("R")
#: Threads running concurrent steps (shards, segments, batches) at once, at most.
MAX_WORKERS = 16
#: the wires a table may send over: dynaorm's own (:mod:`dynaorm.wire`) or botocore's client
WIRES = ("dynaorm", "botocore")


def check_wire(table: str, wire: object) -> str:
    """``wire`` if it names one of :data:`WIRES`, else a :class:`~dynaorm.DynaormError`."""
    if wire not in WIRES:
        raise DynaormError(f"table {table!r}: wire must be one of {list(WIRES)}, got {wire!r}")
    return str(wire)


def _moto_active() -> bool:
    """Whether moto's in-process mock (``mock_aws``) is on: it answers inside botocore's
    HTTP layer only, so requests must go through a botocore client then."""
    models = sys.modules.get("moto.core.models")
    stubber = getattr(models, "botocore_stubber", None)
    return bool(getattr(stubber, "enabled", False))


class Transport:
    """Sends a table's DynamoDB requests and drives its protocols. Swap ``send`` (or
    subclass) to intercept traffic in tests."""

    #: backoff of retry ``n``: uniform(0, min(max_delay, base_delay * 2**n)) seconds
    base_delay = 0.05
    max_delay = 5.0

    def __init__(self, endpoint_url: str | None = None, region: str | None = None,
                 sleep: Callable[[float], None] = time.sleep, *, max_attempts: int = 5,
                 max_wait: float = 10.0, table: str = "?", session: Any = None,
                 wire: str = "dynaorm") -> None:
        #: which wire sync requests go over: ``"dynaorm"`` (:mod:`dynaorm.wire`, the default)
        #: or ``"botocore"`` (the :attr:`client`'s methods); the in-process mock always gets
        #: the botocore client (moto answers inside botocore)
        self.wire = check_wire(table, wire)
        self.endpoint_url = endpoint_url
        self.region = region
        #: every request is attempted at most this many times in all
        self.max_attempts = max_attempts
        #: the most seconds the retries of one request wait in all
        self.max_wait = max_wait
        #: ``fn(event)`` hooks called after every attempt (``Table.on_request``)
        self.listeners: list[Listener] = []
        #: ``ReturnConsumedCapacity`` of every request that takes one (``None``: as built)
        self.capacity: str | None = None
        #: how a ``Wait`` step sleeps (a test injects a fake clock here)
        self.sleep = sleep
        self._table = table
        self._session: Any = session  # a botocore session to create the client from
        self._creds_session: Any = session  # the wire's credentials (dynaorm.wire)
        self._client: Any = None
        self._client_lock = threading.Lock()
        #: the interception point around every raw send (``None``: none); see
        #: :class:`~dynaorm.transport.intercept.Interceptor`. The async transport of the same
        #: table uses this one too, so a hook installed here sees both kinds of session.
        self.interceptor: Interceptor | None = None

    @property
    def client(self) -> Any:
        """The botocore client (created once, on first use; safe to share by threads)."""
        with self._client_lock:
            if self._client is None:
                from botocore.exceptions import BotoCoreError

                try:
                    self._client = create_client(self.endpoint_url, self.region,
                                                 table=self._table, session=self._session)
                    self._session = None
                except (BotoCoreError, ValueError) as exc:  # a malformed endpoint, ...
                    raise DynaormError(
                        f"table {self._table!r}: cannot create a DynamoDB client for "
                        f"endpoint {self.endpoint_url!r}: {exc}") from exc
            return self._client

    def backoff(self, attempt: int) -> float:
        """Full-jitter exponential backoff before retry ``attempt`` (1-based)."""
        return retry.backoff(attempt, self.base_delay, self.max_delay)

    def send(self, operation: str, request: dict[str, Any]) -> dict[str, Any]:
        """Send one request once; errors are mapped to :class:`~dynaorm.RequestError`.
        An :attr:`interceptor` is called around the raw send (it may answer, fail, or call
        the wire and then fail)."""
        interceptor = self.interceptor
        if interceptor is not None:
            return interceptor.send(operation, request,
                                    lambda: self._send(operation, request))
        return self._send(operation, request)

    # -- the wire: dynaorm's own (dynaorm.wire) or the botocore client's methods ----------
    _wire: Any = None  # the SyncWire once opened; False: this transport's requests need botocore

    def _open_wire(self) -> Any:
        from dynaorm.transport.config import configured_endpoint, is_local, is_loopback
        from dynaorm.wire import SyncWire, credentials_for

        client = self.client  # everything a configuration decides, resolved by botocore
        with self._client_lock:
            if self._wire is None:
                session = self._creds_session
                endpoint = configured_endpoint(self.endpoint_url, session)
                if is_local(self.endpoint_url, session) and not is_loopback(endpoint):
                    self._wire = False  # in_process_mock(): moto answers inside botocore
                else:
                    self._wire = SyncWire(client, credentials_for(self.endpoint_url, session))
            return self._wire

    @property
    def sync_wire(self) -> Any:
        """The :class:`~dynaorm.wire.SyncWire` requests go over (opened on first use);
        ``None`` when they go through the botocore :attr:`client` (``wire="botocore"``, the
        in-process mock)."""
        if self.wire != "dynaorm" or _moto_active():
            return None
        wire = self._wire
        if wire is None:
            wire = self._open_wire()
        return wire or None

    def _send(self, operation: str, request: dict[str, Any]) -> dict[str, Any]:
        try:
            if self.wire == "dynaorm":
                wire = self.sync_wire
                if wire is not None:
                    sent: dict[str, Any] = wire.send(operation, request)
                    return sent
            result: dict[str, Any] = getattr(self.client, method_name(operation))(**request)
            return result
        except Exception as exc:
            err = map_error(operation, request, exc)
            if err is None:
                raise
            raise err from exc

    # -- the driver ------------------------------------------------------------------
    def run(self, proto: Generator[Any, Any, R]) -> R:
        """Drive ``proto`` to its result (through :meth:`iterate`: one loop)."""
        box: list[R] = []
        for _ in self.iterate(captured(proto, box)):
            raise TypeError("run() drives protocols that emit no items; iterate a read")
        return box[0]

    def iterate(self, stream: Stream) -> Iterator[Sequence[Item]]:
        """The batches of items ``stream`` emits, in order, fetched lazily; closing the
        iterator closes the stream."""
        steps = expand(stream, self)
        value: Any = None
        error: Exception | None = None
        try:
            while True:
                try:
                    step = steps.send(value) if error is None else steps.throw(error)
                except StopIteration:
                    return
                value = error = None
                if isinstance(step, Emit):
                    yield step.items
                    continue
                try:
                    value = self._perform(step)
                except Exception as exc:
                    error = exc
        finally:
            steps.close()

    def call(self, operation: str, request: dict[str, Any],
             origins: tuple[Any, ...] = (), *, idempotent: bool = True) -> dict[str, Any]:
        """One request with the retry rules (the protocol :func:`~dynaorm.transport.steps.
        call`, driven here): for the table's own administration and for tools."""
        return self.run(call(operation, request, origins, idempotent=idempotent))

    def _perform(self, step: Any) -> Any:
        if isinstance(step, Send):
            return self.send(step.operation, step.request)
        if isinstance(step, Wait):
            self.sleep(step.seconds)
            return step.seconds
        if isinstance(step, Gather):
            return self._gather(step)
        raise TypeError(f"not a protocol step: {step!r}")  # pragma: no cover

    def _gather(self, step: Gather) -> list[Any]:
        from concurrent.futures import ThreadPoolExecutor  # (threads only where gathered)

        protos = list(step.protos)
        _ = self.client  # made once here, not by racing threads
        workers = min(step.concurrency, len(protos), MAX_WORKERS)
        contexts = [contextvars.copy_context() for _ in protos]
        with ThreadPoolExecutor(max_workers=workers) as pool:
            futures = [pool.submit(ctx.run, self.run, p)
                       for ctx, p in zip(contexts, protos, strict=True)]
            try:
                return [f.result() for f in futures]
            except BaseException:
                for f in futures:
                    f.cancel()
                raise
