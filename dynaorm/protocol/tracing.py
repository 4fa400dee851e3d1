"""OpenTelemetry tracing on the phase hooks (pure: no I/O; OpenTelemetry's API is only
looked up, never imported by ``import dynaorm``).

Every :class:`~dynaorm.Client` carries one :class:`Tracing` hook (``client.tracing``): the
tracer :func:`tracer` makes, found by its entry point (``opentelemetry``, group
``dynaorm.tracers``) when a client is made. No module of the core imports this one (nor
``import dynaorm``: ``dynaorm.Tracing`` is loaded on first use).
While the program has neither an OpenTelemetry tracer provider nor a meter provider
configured (``opentelemetry`` not imported, or the API's default proxy / no-op provider),
it is not attached at all: the client checks once per operation (:meth:`Tracing.active`,
a few attribute reads) and hands its drivers the policy without it. With a meter provider
alone it records each attempt's metrics (:mod:`dynaorm.protocol.metrics`) and makes no
span. It reads no item of an answer (``wants_items = False``): a traced read decodes its
answer's bytes straight into objects as an untraced one does. Once a tracer provider is
configured (``trace.set_tracer_provider(...)``, or ``client.tracing.tracer_provider =
...``), each session operation is one span and each HTTP attempt one child span of it:

- an operation span, kind ``INTERNAL``, named ``dynaorm.<operation>`` (``dynaorm.commit``,
  ``dynaorm.get``, ``dynaorm.query`` for each page, ...), a child of the caller's current
  span when the operation starts;
- an attempt span, kind ``CLIENT``, named as OpenTelemetry's botocore instrumentation
  names it (``DynamoDB.PutItem``), with the attributes of its semantic conventions for
  AWS SDK and DynamoDB calls, a child of its operation's span (explicit parent contexts:
  nothing depends on a context variable surviving a generator's ``yield`` or a task
  switch, so concurrent attempts of one operation, threads or tasks, all nest right).

An operation span's sampler is asked with the attributes the span has from its start,
made once per kind of operation. An operation it drops makes no attempt span and builds
no attribute (its metrics are recorded all the same). On dynaorm's own wire, where
nothing runs under an attempt's span, the span is made when the attempt ends (started
when it started) with every attribute at once.

On ``wire="botocore"`` with OpenTelemetry's botocore (or aiobotocore) instrumentation
active, botocore's own span *is* the attempt's span: dynaorm makes none, and makes its
operation's span current while the attempt is sent, so botocore's span is its child (an
attempt a hook answered never reaches botocore: dynaorm's span stands for it). On that
wire an attempt's span (dynaorm's or botocore's) is the current span while it is sent,
so HTTP-client instrumentation below it nests too. Inside OpenTelemetry's
``suppress_instrumentation()`` no span is made.

See ``docs/guide/tracing.md`` for every span and attribute.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import sys
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Final

from dynaorm._version import __version__
from dynaorm.errors import ThrottledError
from dynaorm.protocol.hooks import Attempt, Hook, Operation
from dynaorm.protocol.metrics import _METRICS, SYSTEM, Metrics, roles

_TRACE: Final = "opentelemetry.trace"
_DYNAMODB: Final = "dynamodb"  # (Attempt.service of a request to DynamoDB)
_UNKNOWN: Final = object()
#: whether OpenTelemetry's API makes its global provider from the environment on first
#: use (``OTEL_PYTHON_TRACER_PROVIDER``, read once, as auto-instrumentation sets it)
_PROVIDER_BY_ENVIRONMENT: Final = "OTEL_PYTHON_TRACER_PROVIDER" in os.environ
#: whether an agent configures OpenTelemetry's provider when its API is imported (ddtrace
#: with ``DD_TRACE_OTEL_ENABLED``, or the environment's provider): then the first check
#: imports it, whether the application does or not
_IMPORT_API: Final = _PROVIDER_BY_ENVIRONMENT or os.environ.get(
    "DD_TRACE_OTEL_ENABLED", "").lower() in ("1", "true")
_INSTRUMENTATION: Final = "opentelemetry.instrumentation.botocore"
#: whether ``OTEL_SEMCONV_STABILITY_OPT_IN`` asks for the older database names too
#: (``database/dup``: ``db.system``, ``db.operation`` beside the stable ones)
_DUP = False
#: request parameters copied onto an attempt span, as the botocore instrumentation does
_REQUEST_ATTRIBUTES: Final = (
    ("ConsistentRead", "aws.dynamodb.consistent_read"),
    ("IndexName", "aws.dynamodb.index_name"),
    ("Limit", "aws.dynamodb.limit"),
    ("ProjectionExpression", "aws.dynamodb.projection"),
    ("Select", "aws.dynamodb.select"),
    ("ScanIndexForward", "aws.dynamodb.scan_forward"),
    ("Segment", "aws.dynamodb.segment"),
    ("TotalSegments", "aws.dynamodb.total_segments"),
)
_RESPONSE_ATTRIBUTES: Final = (
    ("Count", "aws.dynamodb.count"),
    ("ScannedCount", "aws.dynamodb.scanned_count"),
)


@dataclass(slots=True, eq=False)
class _Open:
    """An operation's span while it runs (``recording``: whether its sampler kept it; an
    operation it dropped makes no attempt span and sums nothing), and what its attempts
    add up to."""

    span: Any
    recording: bool
    tracer: Any  # the tracer its span was made with (its attempts' too)
    attempts: int = 0
    capacity: float = 0.0
    by_role: dict[str, float] = field(default_factory=dict)
    methods: dict[str, None] = field(default_factory=dict)
    current: Any = None  # a context with the span current (made for its first attempt)

    def context(self) -> Any:
        """A context holding the operation's span as the current one (the parent of its
        attempts), made once."""
        if self.current is None:
            self.current = _otel()[1].set_span_in_context(self.span)
        return self.current


@dataclass(slots=True, eq=False)
class _Sent:
    """An attempt's span (``None``: made when the attempt ends, as it started at
    ``started``, unless botocore's instrumentation made it: ``botocore`` and the attempt
    was sent; ``False``: none, metrics alone or an operation sampled out), the context
    token to detach at its end (``None``: nothing was attached), and its clock (for its
    duration metric)."""

    span: Any
    token: object
    started: int = 0
    botocore: bool = False
    clock: float = field(default_factory=time.perf_counter)
    tracer: Any = None  # the tracer a span made at its end is made with


@functools.cache
def _otel() -> Any:
    """OpenTelemetry's ``context`` and ``trace`` modules, imported once (when the first
    provider is seen: ``import dynaorm`` imports neither)."""
    from opentelemetry import context, trace

    return context, trace


#: ``server.address`` ... of an endpoint not known yet (never written to)
_NOWHERE: Final[dict[str, Any]] = {}


def _names(classes: Any) -> tuple[str, ...]:
    return tuple(dict.fromkeys(c.__name__ for c in classes if isinstance(c, type)))


def _attempt_outcome(attempt: Attempt) -> str:
    """``dynaorm.outcome`` of an attempt span: answered, refused (nothing applied), no
    answer that says (a lost answer or a 5xx: it may have been applied), or cut off."""
    if attempt.interrupted:
        return "interrupted"
    if attempt.error is None:
        return "ok"
    return "unknown" if attempt.error.maybe_applied else "failed"


def _operation_outcome(error: BaseException | None) -> str:
    """``dynaorm.outcome`` of an operation span (``unknown``: ``OutcomeUnknownError``)."""
    if error is None:
        return "ok"
    if not isinstance(error, Exception):
        return "cancelled"
    return "unknown" if type(error).__name__ == "OutcomeUnknownError" else "failed"


def _table_units(attempt: Attempt) -> float:
    """The capacity units an attempt's answer reports for its tables (0 for an answer
    whose ``ConsumedCapacity`` is not DynamoDB's shape)."""
    try:
        return sum(units for name, units in attempt.consumed_capacity.items()
                   if "/" not in name)
    except (AttributeError, TypeError, ValueError):
        return 0.0


def tracer(client: Any) -> Tracing:
    """The tracer every client attaches (the entry point ``opentelemetry`` of the group
    ``dynaorm.tracers``): a :class:`Tracing` hook with the global providers, which the
    client routes (:meth:`Tracing.route`)."""
    return Tracing()


class Tracing(Hook):
    """The OpenTelemetry hook every :class:`~dynaorm.Client` carries as
    ``client.tracing`` (see the module). ``tracer_provider``: the provider to trace with
    (``None``: OpenTelemetry's global one, whenever one is configured); ``enabled``:
    ``False`` turns it off (spans and metrics). ``routes(session)`` tells whether attempts
    of a ``"sync"`` or ``"async"`` session go through botocore's (or aiobotocore's)
    client; ``where()`` the endpoint URL and region requests went to (``None`` until a
    connection was opened). It is attached while a tracer provider or a meter provider
    (``metrics.meter_provider``, else OpenTelemetry's global one) is configured: with a
    meter provider alone, each attempt records its metrics and no span is made."""

    wants_origins = False
    """Tracing reads no ``origins``: attached, it costs a commit no work computing them."""
    wants_items = False
    """Nor a read's items: attached, it leaves a read decoding its answer's bytes straight
    into objects."""

    def __init__(self, tracer_provider: Any = None, *,
                 routes: Callable[[str], bool] | None = None,
                 where: Callable[[], tuple[str, str] | None] | None = None):
        self.tracer_provider: Any = tracer_provider
        """The provider spans are made with (``None``: OpenTelemetry's global one)."""
        self.enabled = True
        """Whether spans are made and metrics recorded at all when a provider is set."""
        self._routes = routes
        self._where = where
        self._destination: dict[str, Any] | None = None  # server.address, ... once known
        self._seen: Any = (None, None)  # (the provider, the tracer made with it)
        self._tracer: Any = None  # None: no provider configured (a proxy / no-op one)
        self._meters: Any = None  # the instruments while active (None: no metrics)
        self._open: dict[int, _Open] = {}  # id(operation) -> its span while it runs
        self._lock = threading.Lock()  # (concurrent attempts of one operation add up)
        self.metrics = Metrics()
        """The metrics recorded beside the spans (``metrics.meter_provider``: the provider,
        ``None``: OpenTelemetry's global one)."""

    def renew(self) -> None:
        """A lock of its own (in a child of ``os.fork()``: the parent's may be held by a
        thread the child has not)."""
        self._lock = threading.Lock()

    def route(self, routes: Callable[[str], bool],
              where: Callable[[], tuple[str, str] | None]) -> None:
        """Tell the hook how its client routes attempts and where to (see the class),
        unless it was made knowing it (a client does this when it is given the hook)."""
        self._routes = self._routes or routes
        self._where = self._where or where

    def _server(self) -> dict[str, Any]:
        """``server.address``, ``server.port`` and ``cloud.region`` of the endpoint, as
        the botocore instrumentation sets them (read once the client knows them)."""
        if self._destination is None and self._where is not None:
            known = self._where()
            if known is not None:
                from urllib.parse import urlsplit

                url, region = known
                parts = urlsplit(url)
                self._destination = {
                    "cloud.region": region, "server.address": parts.hostname or "",
                    "server.port": parts.port or (443 if parts.scheme == "https" else 80)}
        return self._destination or _NOWHERE

    # -- the check ---------------------------------------------------------------------
    def active(self) -> bool:
        """Whether spans are made or metrics recorded now: a real tracer provider or a
        meter provider is configured (the check a client makes once per operation, a few
        attribute reads while none is; OpenTelemetry is never imported here)."""
        if not self.enabled:
            return False
        provider = self.tracer_provider
        if provider is None:
            trace = sys.modules.get(_TRACE)
            if trace is None and _IMPORT_API:
                with contextlib.suppress(ImportError):
                    import opentelemetry.trace as trace
            # the global provider once set (what get_tracer_provider() returns then), read
            # without its look into os.environ; None: the API's proxy provider, nothing set
            provider = getattr(trace, "_TRACER_PROVIDER", _UNKNOWN)
            if trace is not None and provider in (None, _UNKNOWN) and (
                    _PROVIDER_BY_ENVIRONMENT or provider is _UNKNOWN
                    or trace.get_tracer_provider.__module__ != _TRACE):  # (a test's mock)
                provider = trace.get_tracer_provider()
            elif trace is None:
                provider = None
        seen = self._seen  # (provider, its tracer): one attribute, never paired wrongly
        if provider is not seen[0]:  # (by a thread switching provider)
            global _DUP  # (the conventions' opt-in, read when a provider is first seen)
            _DUP = "database/dup" in os.environ.get("OTEL_SEMCONV_STABILITY_OPT_IN", "")
            seen = self._seen = (provider, None if provider is None else self._tracer_of(
                provider))
        self._tracer = tracer = seen[1]
        meters = self.metrics.meter_provider or getattr(  # (else the global one, once set)
            getattr(sys.modules.get(_METRICS), "_internal", None), "_METER_PROVIDER", None)
        self._meters = meters = meters and self.metrics.instruments(meters)
        return tracer is not None or meters is not None

    @staticmethod
    def _tracer_of(provider: Any) -> Any:
        from opentelemetry import trace

        if isinstance(provider, trace.ProxyTracerProvider | trace.NoOpTracerProvider):
            return None
        tracer = provider.get_tracer("dynaorm", __version__)
        return None if isinstance(tracer, trace.NoOpTracer) else tracer

    # -- the hook ----------------------------------------------------------------------
    def on_start(self, phase: Operation | Attempt) -> object:
        """Start the span of an operation or of an attempt (with a meter provider alone:
        the attempt's clock; in an operation its sampler dropped: no span)."""
        tracer = self._tracer
        if isinstance(phase, Operation):
            if tracer is None or (caller := _caller()) is None:
                return None
            return self._start_operation(tracer, phase, caller)
        opened = self._open.get(id(phase.within))  # (None's id: never an operation's)
        if opened is not None:  # (with its operation's tracer, whatever is configured now)
            if not opened.recording:
                return self._unrecorded(opened, phase)
            return self._start_attempt(opened.tracer, phase, opened)
        if tracer is not None and phase.within is not None:
            return None  # its operation has no span: suppressed
        if _caller() is None:
            return None
        return _Sent(False, None) if tracer is None else self._start_attempt(tracer, phase)

    def on_end(self, phase: Operation | Attempt, token: Any) -> object:
        """End the span ``on_start`` started, with the outcome on it."""
        if token is None:  # (by the phase, not the token's class: after a reload of this
            return None  # module, a token made before it is of the class it replaced)
        if isinstance(phase, Operation):
            if self in phase.quiet:  # a quiet operation's (dropped) span: nothing to add;
                # quiet no longer (a tool runs one Operation again: asked anew then)
                phase.quiet = tuple(h for h in phase.quiet if h is not self)
                token.end()
            else:
                self._end_operation(phase, token)
        else:
            self._end_attempt(phase, token)
        return None

    # -- operations --------------------------------------------------------------------
    def _start_operation(self, tracer: Any, op: Operation, caller: Any) -> Any:
        """Start an operation's span: its sampler is asked with the attributes it has from
        its start, made once per kind of operation (nothing is built per call). Dropped,
        with no metrics to record and no botocore client or instrumentation to hand its
        context to, its attempts are not even reported to the hook (``Operation.quiet``)
        and its token is the span alone (its end ends it, nothing more). ``caller``: the
        caller's context, read once (the parent is looked up in it)."""
        found = _operation_start(op.name, op.session, op.tables, op.entities, _DUP)
        span = tracer.start_span(found[0], context=caller,
                                 kind=_otel()[1].SpanKind.INTERNAL, attributes=found[1])
        recording = span.is_recording()
        if recording or self._meters is not None or (  # (or any instrumentation)
                "opentelemetry.instrumentation" in sys.modules) or (
                self._routes is not None and self._routes(op.session)):
            opened = self._open[id(op)] = _Open(span, recording, tracer)
            return opened
        op.quiet += (self,)
        return span

    def _end_operation(self, op: Operation, opened: _Open) -> None:
        self._open.pop(id(op), None)
        span = opened.span
        try:
            if opened.recording and span.is_recording():
                attributes: dict[str, Any] = {
                    "dynaorm.attempts": opened.attempts,
                    "dynaorm.outcome": _operation_outcome(op.error)}
                if opened.capacity:
                    attributes["dynaorm.consumed_capacity"] = opened.capacity
                attributes.update(opened.by_role)
                if len(opened.methods) == 1:
                    attributes["rpc.method"] = next(iter(opened.methods))
                elif opened.methods:
                    attributes["dynaorm.rpc_methods"] = tuple(opened.methods)
                if op.error is not None:
                    attributes.update(_throttling(op.error))
                span.set_attributes(attributes)
                if op.error is not None:
                    _failed(span, type(op.error).__qualname__, str(op.error), op.error)
        finally:
            span.end()  # whatever the answer held

    # -- attempts ----------------------------------------------------------------------
    def _delegated(self, attempt: Attempt) -> tuple[bool, bool]:
        """Whether the attempt goes through botocore's client, and whether OpenTelemetry's
        botocore (sync) or aiobotocore (async) instrumentation of that client makes its
        span (the instrumentor is a singleton, looked up, never imported)."""
        session = attempt.within.session if attempt.within is not None else "sync"
        if attempt.service != _DYNAMODB:  # another service (KMS): botocore's client, in a
            session = "sync"  # worker thread under an async session
        elif self._routes is None or not self._routes(session):
            return False, False
        name = "AiobotocoreInstrumentor" if session == "async" else "BotocoreInstrumentor"
        instrumentor = getattr(sys.modules.get(_INSTRUMENTATION), name, None)
        instance = getattr(instrumentor, "_instance", None)
        return True, bool(instance is not None and instance.is_instrumented_by_opentelemetry)

    def _unrecorded(self, opened: _Open, attempt: Attempt) -> _Sent | None:
        """An attempt of an operation its sampler dropped: no span, no attribute. Through
        botocore's client its operation's (unsampled) span is current while it is sent, so
        botocore's or an HTTP client's instrumentation below drops its span too; its
        metrics are recorded all the same."""
        token = _otel()[0].attach(opened.context()) if self._delegated(attempt)[0] else None
        if token is None and self._meters is None:
            return None
        return _Sent(False, token)

    def _start_attempt(self, tracer: Any, attempt: Attempt, opened: _Open | None = None
                       ) -> _Sent:
        """Start an attempt's span. Through botocore's client it is the current span while
        the attempt is sent (HTTP-client instrumentation below nests under it), or, with
        botocore's instrumentation active, the operation's span is (botocore's span is the
        attempt's). On dynaorm's own wire, where nothing runs under it, the span is made
        when the attempt ends, as it started then, with every attribute at once."""
        via, instrumented = self._delegated(attempt)
        if not via:
            return _Sent(None, None, time.time_ns(), tracer=tracer)
        context, trace = _otel()
        parent = None if opened is None else opened.context()
        if instrumented:  # botocore's span is the attempt's: under the operation's
            token = None if parent is None else context.attach(parent)
            return _Sent(None, token, time.time_ns(), botocore=True, tracer=tracer)
        span = self._attempt_span(tracer, attempt, parent)
        return _Sent(span, context.attach(trace.set_span_in_context(span)))

    def _end_attempt(self, attempt: Attempt, sent: _Sent) -> None:
        if sent.token is not None:
            _otel()[0].detach(sent.token)
        found = roles(attempt)
        tables, server = attempt.tables, self._server()  # (read once: metrics', span's)
        if self._meters is not None:
            try:  # (a meter that fails loses its points, never the attempt's span)
                self.metrics.record(self._meters, attempt, sent.clock, server, found, tables)
            except Exception:
                import logging

                logging.getLogger("dynaorm").exception("recording the metrics of %s failed",
                                                       attempt.operation)
        span = sent.span
        if span is False or (span is None and sent.botocore and attempt.sent):
            return  # metrics alone, an operation sampled out; botocore's span
        by_role = {f"dynaorm.capacity.{entity}.{role}": units
                   for (entity, role), units in found.items()} if found else _NOWHERE
        opened = None if attempt.within is None else self._open.get(id(attempt.within))
        if opened is not None:  # counted into its operation's span (no role: no units)
            with self._lock:
                opened.attempts += 1
                opened.capacity += _table_units(attempt) if found else 0.0
                opened.methods[attempt.operation] = None
                for name, part in by_role.items():
                    opened.by_role[name] = opened.by_role.get(name, 0.0) + part
        where = (server, by_role) if attempt.service == _DYNAMODB else (
            _NOWHERE, _NOWHERE)  # (the endpoint known, the units: DynamoDB's)
        self._close_attempt(span, attempt, sent, opened, where, tables)

    def _close_attempt(self, span: Any, attempt: Attempt, sent: _Sent, opened: _Open | None,
                       where: tuple[dict[str, Any], dict[str, float]],
                       tables: tuple[str, ...]) -> None:
        """End an attempt's span with its answer's attributes (made now if it has none)."""
        try:
            if span is None:  # made now, every attribute at once (a span botocore never
                # saw: a hook answered the attempt, an injected fault; dynaorm's own wire):
                # the answer's written into the request's, one dict
                name, attributes = self._attempt_start(attempt, tables)
                span = sent.tracer.start_span(
                    name, context=None if opened is None else opened.context(),
                    kind=_otel()[1].SpanKind.CLIENT, start_time=sent.started,
                    attributes=_answer_attributes(attempt, *where, attributes))
            elif span.is_recording():
                span.set_attributes(_answer_attributes(attempt, *where, {}))
            if attempt.error is not None and span.is_recording():
                _failed(span, attempt.error.code, str(attempt.error), attempt.error)
            elif attempt.interrupted and span.is_recording():
                _failed(span, "interrupted", "interrupted in flight")
        finally:
            if span is not None:
                span.end()  # whatever the answer held

    def _attempt_span(self, tracer: Any, attempt: Attempt, parent: Any) -> Any:
        """Start an attempt's span now, with what it says from its start."""
        name, attributes = self._attempt_start(attempt, attempt.tables)
        return tracer.start_span(name, context=parent, kind=_otel()[1].SpanKind.CLIENT,
                                 attributes=attributes)

    def _attempt_start(self, attempt: Attempt, tables: tuple[str, ...]
                       ) -> tuple[str, dict[str, Any]]:
        """An attempt span's name and what it says from its start (the request): what
        depends only on the API, tables and entity types made once, the rest per attempt;
        of a request to another service (KMS), its service and method, attempt and entity
        types only."""
        at = (attempt.operation, tables, attempt.origins,
              () if attempt.within is None else attempt.within.entities, _DUP)
        try:
            found = _attempt_fixed(*at)
        except TypeError:  # (an origin's key unhashable: made for this attempt alone)
            found = _attempt_fixed.__wrapped__(*at)
        name, fixed = found
        attributes = {**fixed, "dynaorm.attempt": attempt.number}
        if ":" not in attempt.operation:  # (DynamoDB's)
            attributes["dynaorm.actions"] = attempt.actions
            request = attempt.request
            for parameter, attribute in _REQUEST_ATTRIBUTES:
                value = request.get(parameter)
                if value is not None:
                    attributes[attribute] = value
        return name, attributes


def _caller() -> Any:
    """The caller's current context, ``None`` where it suppressed instrumentation, as
    OpenTelemetry's instrumentations honour it (``opentelemetry.instrumentation.utils.
    suppress_instrumentation``; the context read once)."""
    context = _otel()[0]
    current = context.get_current()
    if current.get(getattr(context, "_SUPPRESS_INSTRUMENTATION_KEY", None)) or current.get(
            "suppress_instrumentation"):  # (the key: None in an older API, held by none)
        return None
    return current


def _span_attributes(own: dict[str, Any], tables: Any, entities: tuple[str, ...],
                     dup: bool) -> dict[str, Any]:
    """What a span says from its start: the service, ``own``, its tables and entity types
    (each when there are any)."""
    attributes = {"rpc.system": "aws-api", "rpc.service": "DynamoDB", "db.system.name": SYSTEM,
                  **own}
    if dup:
        attributes["db.system"] = "dynamodb"
    if tables:
        attributes["aws.dynamodb.table_names"] = tables
        if len(tables) == 1:
            attributes["db.collection.name"] = tables[0]
    if entities:
        attributes["dynaorm.entity_types"] = entities
    return attributes


@functools.lru_cache(maxsize=512)
def _operation_start(name: str, session: str, tables: tuple[str, ...],
                     entities: tuple[type[Any], ...], dup: bool
                     ) -> tuple[str, Mapping[str, Any]]:
    """An operation span's name and what it says from its start (made once each)."""
    return f"dynaorm.{name}", MappingProxyType(_span_attributes(
        {"dynaorm.operation": name, "dynaorm.session": session}, tables, _names(entities),
        dup))


@functools.lru_cache(maxsize=512)
def _attempt_fixed(operation: str, tables: tuple[str, ...], origins: tuple[Any, ...],
                   entities: tuple[type[Any], ...], dup: bool) -> tuple[str, dict[str, Any]]:
    """An attempt span's name and the attributes it has from its start that depend only
    on its API, tables and entity types (its origins', else its operation's), made once
    each; of a request to another service (KMS): its service, method and entity types."""
    service, _, method = operation.rpartition(":")
    name = f"{service.upper() or 'DynamoDB'}.{method}"
    names = _names(o[0] if isinstance(o, tuple) else o for o in origins) or _names(entities)
    if service:
        return name, {"rpc.system": "aws-api", "rpc.service": service.upper(),
                      "rpc.method": method,
                      **({"dynaorm.entity_types": names} if names else {})}
    own = {"rpc.method": operation, "db.operation.name": operation,
           **({"db.operation": operation} if dup else {})}
    return name, _span_attributes(own, tables, names, dup)


def _answer_attributes(attempt: Attempt, server: dict[str, Any],
                       by_role: dict[str, float], attributes: dict[str, Any]
                       ) -> dict[str, Any]:
    """What an attempt span says of its end (the answer or the failure; ``server``: where
    it went; ``by_role``: the capacity it consumed by entity and role), added to
    ``attributes`` (returned)."""
    attributes["dynaorm.outcome"] = _attempt_outcome(attempt)
    attributes.update(server)
    attributes.update(by_role)
    if not attempt.sent:
        attributes["dynaorm.sent"] = False
    request_id = attempt.request_id
    if request_id:
        attributes["aws.request_id"] = request_id
    status = attempt.status_code
    if status is not None:
        attributes["http.status_code"] = attributes["http.response.status_code"] = status
    response = attempt.response
    if response:
        raw = response.get("ConsumedCapacity")
        if raw:
            attributes["aws.dynamodb.consumed_capacity"] = [
                json.dumps(entry) for entry in (raw if isinstance(raw, list) else [raw])]
        for key, name in _RESPONSE_ATTRIBUTES:
            value = response.get(key)
            if value is not None:
                attributes[name] = value
    error = attempt.error
    if error is not None:
        attributes["dynaorm.maybe_applied"] = error.maybe_applied
        attributes.update(_throttling(error))
    return attributes


def _throttling(error: BaseException | None) -> dict[str, Any]:
    """The attributes of a throttle's ``ThrottlingReasons``: the reasons and, in the same
    order, the ARNs of the tables and indexes they name (none for other errors)."""
    reasons = error.reasons if isinstance(error, ThrottledError) else None
    if not reasons:
        return {}
    return {"dynaorm.throttling_reasons": tuple(r.reason for r in reasons),
            "dynaorm.throttled_resources": tuple(r.resource for r in reasons)}


def _failed(span: Any, kind: str, message: str, error: BaseException | None = None) -> None:
    """Mark ``span`` failed: ``error.type`` ``kind``, an exception event of ``error`` (if
    any), an error status saying ``message``."""
    trace = _otel()[1]
    span.set_attribute("error.type", kind)
    if error is not None:
        span.record_exception(error)
    span.set_status(trace.Status(trace.StatusCode.ERROR, message))
