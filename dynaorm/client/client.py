"""The :class:`Client`: where and how requests go, for any number of tables, threads and
sessions, sync and async alike.

A client holds the endpoint, the region and credentials (botocore's chain), a
``botocore.config.Config`` (timeouts, pool size, proxies, TLS, user agent: honoured on
every wire), the retry budget and consumed-capacity reporting, resolved once into one
immutable :class:`~dynaorm.protocol.policy.Policy` that both of its drivers
(:mod:`dynaorm.client.drivers`) read; its phase hooks (tracers, logging, request events,
fault injection); and its one :class:`~dynaorm.wire.Transport`, chosen at its first
request from the registry :data:`WIRES` (``wire=``), or moto's in-process backend while
one is on (:func:`in_process_mock`). The transport raises every failure as a
:class:`~dynaorm.RequestError`; the client decides nothing per request.

A new transport is added to the registry :data:`WIRES` (a name and a function of the
client that makes it). The tracers every client attaches outermost, each only while its
``active()`` says so, are found by entry point (group ``dynaorm.tracers``,
:mod:`dynaorm.plugins`: OpenTelemetry's :class:`~dynaorm.Tracing` is found so), never
imported here.
"""

from __future__ import annotations

import atexit
import dataclasses
import functools
import os
import threading
import warnings
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import TracebackType
from typing import TYPE_CHECKING, Any, Final, TypeVar

from dynaorm._types import Reader
from dynaorm.client.botocore import BotocoreWire
from dynaorm.client.drivers import AsyncDriver, SyncDriver
from dynaorm.client.settings import (
    CONFIG_DEFAULTS,
    configured_endpoint,
    credentials_for,
    default_session,
    enter_mock,
    in_process,
    in_process_mock_depth,
    resolve_max_attempts,
)
from dynaorm.errors import DynaormError, RequestError
from dynaorm.plugins import TRACERS, loaded
from dynaorm.private_apis import config_options, moto_active
from dynaorm.protocol.capacity import Meter
from dynaorm.protocol.events import RequestEvent
from dynaorm.protocol.hooks import DYNAMODB, HookLike, Listeners
from dynaorm.protocol.policy import Policy, Rate, budget_of
from dynaorm.schema.table import TableSchema

if TYPE_CHECKING:
    from dynaorm.wire import Transport
    from dynaorm.wire.endpoint import Endpoint

def _own_wire(client: Client) -> Transport:
    from dynaorm.wire import wire_for

    return wire_for(client._endpoint())


#: the wires a client may send over, by name (``Client(wire=...)``): each makes the
#: client's one transport when it first sends. Add a wire here: a name and a function of
#: the client that returns a :class:`~dynaorm.wire.Transport`
WIRES: dict[str, Callable[[Client], Transport]] = {
    "dynaorm": _own_wire,  # dynaorm's own (dynaorm.wire.Wire)
    "botocore": lambda client: client._boto,  # botocore's client (and aiobotocore's)
}
#: the name of the tracer ``client.tracing`` is (the entry point of the group
#: ``dynaorm.tracers`` dynaorm registers: OpenTelemetry's :class:`~dynaorm.Tracing`)
OPENTELEMETRY: Final = "opentelemetry"
#: ``ReturnConsumedCapacity`` modes a client may ask for
CAPACITY_MODES: Final = ("INDEXES", "TOTAL", "NONE")

_Hook = TypeVar("_Hook", bound=Callable[[RequestEvent], object])
_AnyHook = TypeVar("_AnyHook", bound=HookLike)
_LIVE: weakref.WeakSet[Client] = weakref.WeakSet()  # for dynaorm.aio.close()
_SWAP = threading.Lock()
#: what each client's transport is made of its botocore wire in the in-process mock blocks
#: open now (:func:`in_process_mock`; the innermost's holds, ``None``: the wire itself)
_IN_PROCESS: list[Callable[[BotocoreWire], Transport] | None] = []


def check_settings(owner: str, *, wire: object = "dynaorm", max_attempts: object = None,
                   max_wait: object = 10.0, return_consumed_capacity: object = None,
                   **_: object) -> None:
    """Refuse connection settings that cannot work (``owner`` names the client or table
    in the message): the one check of ``Client(...)`` and ``Table(...)``'s shorthands
    (the others, ``endpoint_url`` and ``region``, are judged by botocore when the client
    is made)."""
    if wire not in WIRES:
        raise DynaormError(f"{owner}: wire must be one of {list(WIRES)}, got {wire!r}")
    if max_attempts is not None and (not isinstance(max_attempts, int)
                                     or isinstance(max_attempts, bool) or max_attempts < 1):
        raise DynaormError(f"{owner}: max_attempts must be an int >= 1, got {max_attempts!r}")
    if isinstance(max_wait, bool) or not isinstance(max_wait, int | float) or max_wait < 0:
        raise DynaormError(f"{owner}: max_wait must be a number of seconds >= 0, "
                           f"got {max_wait!r}")
    if return_consumed_capacity not in (*CAPACITY_MODES, None):
        raise DynaormError(f"{owner}: return_consumed_capacity must be one of "
                           f"{list(CAPACITY_MODES)} or None, got {return_consumed_capacity!r}")


class Client:
    """Where and how DynamoDB requests go, shared by any number of tables, threads and
    sessions (sync and async). See :doc:`the client guide </guide/client>`.

    ``endpoint_url``, ``region``: as botocore resolves them when ``None``
    (``AWS_ENDPOINT_URL_DYNAMODB``, ``AWS_REGION``, the profile, ...). ``config``: a
    ``botocore.config.Config`` whose options are honoured on every wire (retries excepted:
    dynaorm retries). ``wire``: ``"dynaorm"`` (dynaorm's own HTTP, the default) or
    ``"botocore"`` (the botocore client's methods: for code that hooks that client).
    ``max_attempts``: attempts of one request in all (``None``: ``AWS_MAX_ATTEMPTS`` / the
    profile's ``max_attempts``, else 5); ``max_wait``: seconds all retries of one request
    may wait; ``return_consumed_capacity``: ``"INDEXES"``, ``"TOTAL"`` or ``"NONE"`` for
    every request that takes one (``None``: writes ask for ``INDEXES``, reads for nothing).
    ``keyring``: the keyring (:class:`~dynaorm.StaticKeyring`, :class:`~dynaorm.KmsKeyring`)
    of the ``Encrypted`` fields of its tables that have none of their own. ``receipts``:
    the table that keeps the receipts of its keyed commits (:attr:`receipts`).

    ``with Client() as db`` / ``async with Client() as db`` close its connections at the
    end (:meth:`close`, :meth:`aclose`); a later request opens new ones.
    """

    def __init__(self, endpoint_url: str | None = None, region: str | None = None, *,
                 config: Any = None, wire: str = "dynaorm", max_attempts: int | None = None,
                 max_wait: float = 10.0, return_consumed_capacity: str | None = None,
                 keyring: Any = None, rate: Rate | None = None,
                 verify: bool | str | None = None,
                 receipts: TableSchema | None = None):
        check_settings("Client", wire=wire, max_attempts=max_attempts, max_wait=max_wait,
                       return_consumed_capacity=return_consumed_capacity)
        if (verify is not None and not isinstance(verify, bool | str)) or verify == "":
            raise DynaormError(f"Client: verify must be False, True, None or the path of a "
                               f"CA bundle, got {verify!r}")
        self.verify = verify
        """How TLS is verified, as botocore's ``verify``: ``False`` (not at all), the path
        of a CA bundle, or ``None`` / ``True`` (as configured, else the default bundle)."""
        self.endpoint_url = endpoint_url
        """The endpoint given (``None``: the configured one, or AWS's for the region)."""
        self.region = region
        """The region given (``None``: the configured one)."""
        self._keyring: Any = None
        self._registries: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {}
        self.keyring = keyring
        self._receipts: TableSchema | None = None
        self.receipts = receipts
        self.config = config
        """The ``botocore.config.Config`` given (``None``: none)."""
        self.wire = wire
        """``"dynaorm"`` or ``"botocore"``: the wire requests go over (moto's in-process
        backend always gets the botocore client: it answers inside botocore)."""
        self.max_wait = float(max_wait)
        """The most seconds all retries of one request may wait in all."""
        self.return_consumed_capacity = return_consumed_capacity
        """``ReturnConsumedCapacity`` of every request that takes one (``None``: writes
        ask for ``INDEXES``, reads for nothing)."""
        self._max_attempts = max_attempts
        #: what messages call the client: ``"Client"``, or the tables that share it
        self._label = "Client"
        self._lock = threading.RLock()
        self._session: Any = None  # the botocore session the configuration is read from
        self._transport: Transport | None = None  # chosen by the first request
        self._boto: BotocoreWire = BotocoreWire(self)  # botocore's client and aiobotocore's
        self._hooks: tuple[HookLike, ...] = ()
        self._named: dict[str, Any] = {}  # the tracers found, by name (and in _tracers)
        self._left_out: dict[str, str] = {}  # those left out since, by name: why
        self._made_tracers()
        self._listeners: list[Callable[[RequestEvent], object]] = []
        self._listening: weakref.WeakSet[Any] = weakref.WeakSet()  # tables with on_request
        self._policy: Policy | None = None
        self._meter = Meter()
        self.rate = rate
        self._traced: dict[tuple[int, ...], Policy] = {}  # by the ids of the tracers active
        self._pointed: dict[tuple[str | None, str | None], Client] = {}
        self._origin: Client | None = None  # the client this one is pointed from
        #: per table name, the type-name registry its Table objects bound here share
        #: (made before its keyring is set, above)
        self.driver = SyncDriver(self)
        """The sync driver (what ``Session`` runs its protocols with)."""
        self.async_driver = AsyncDriver(self)
        """The async driver (what ``AsyncSession`` runs its protocols with)."""
        _LIVE.add(self)

    def __repr__(self) -> str:
        where = self.endpoint_url or "configured endpoint"
        return f"Client({where!r}, wire={self.wire!r})"

    @property
    def keyring(self) -> Any:
        """The keyring of ``Encrypted`` fields of its tables without one of their own. One
        that cannot serve an entity of such a table bound to the client (a unique
        encrypted field needs a MAC key) is refused when it is set
        (:class:`~dynaorm.KeyringError`)."""
        return self._keyring

    @keyring.setter
    def keyring(self, keyring: Any) -> None:
        check = getattr(keyring, "check", None)
        if check is not None:
            check(e for entities, _ in list(self._registries.values())  # (the entities of
                  for e in list(entities.values())  # tables without a keyring of their own)
                  if e.__dynaorm_spec__.table.keyring is None)
        self._keyring = keyring

    @property
    def receipts(self) -> TableSchema | None:
        """The table that keeps the receipts of this client's keyed commits (``None``:
        each keyed commit keeps one in every table it writes, 0.8's rule). With one, a
        keyed commit writes its one receipt there, in the same transaction, so a key is
        known to every table a keyed commit of this client writes (see
        :doc:`exactly once </guide/exactly-once>`). A table that cannot keep receipts
        (keys that are not strings, key or index attributes named as a receipt's) is
        refused when it is set."""
        return self._receipts

    @receipts.setter
    def receipts(self, table: TableSchema | None) -> None:
        if table is not None:
            if not isinstance(table, TableSchema):
                raise DynaormError(f"Client: receipts= takes the Table that keeps the "
                                   f"receipts of keyed commits, got {table!r}")
            why = table.receipts.keyed()[0]
            if why:
                raise DynaormError(f"Client: receipts= table {table.name!r}: {why}, so it "
                                   "cannot keep receipts")
        self._receipts = table

    # -- settings --------------------------------------------------------------------
    @property
    def configured_endpoint(self) -> str | None:
        """Where the client's DynamoDB requests go: ``endpoint_url``, else the endpoint
        configured for DynamoDB (``AWS_ENDPOINT_URL_DYNAMODB``, ``AWS_ENDPOINT_URL``, the
        profile's), else ``None``: AWS's own for the region (or an in-process moto, which
        answers inside botocore). The botocore session is read only when no endpoint is
        given."""
        return self.endpoint_url or configured_endpoint(None, self._botocore_session())

    def _botocore_session(self) -> Any:
        with self._lock:
            if self._session is None:
                self._session = default_session()
            return self._session

    @functools.cached_property
    def _plain(self) -> Endpoint | None:
        """The endpoint of the plain environment, resolved without a botocore session
        (:func:`~dynaorm.client.plain.plain_settings`), or ``None`` when the botocore
        session decides (read once)."""
        from dynaorm.client.plain import plain_settings

        if self.wire != "dynaorm":
            return None
        return plain_settings(self.endpoint_url, self.region, self.config)

    def _endpoint(self) -> Endpoint:
        """Where and how dynaorm's own wire sends: the plain environment's endpoint, else
        the one a botocore session tells without a client (:func:`~dynaorm.client.plain.
        light_settings`), else the botocore client's, made now."""
        plain = self._plain
        if plain is not None:
            return self._verified(plain)
        from botocore.exceptions import BotoCoreError

        from dynaorm.client.plain import light_settings
        from dynaorm.wire.endpoint import client_endpoint

        credentials = credentials_for(self.endpoint_url, self._botocore_session())
        try:
            light = light_settings(self.endpoint_url, self.region, owner=self._label,
                                   config=self.config, session=self._botocore_session(),
                                   credentials=credentials)
        except (BotoCoreError, ValueError):  # the client says how it fails
            light = None
        return self._verified(light) if light else client_endpoint(self.botocore, credentials)

    def _verified(self, endpoint: Endpoint) -> Endpoint:
        """``endpoint`` verified as ``verify=`` says (the botocore client is made so)."""
        verify = self.verify
        return endpoint if verify in (None, True) else dataclasses.replace(endpoint,
                                                                         verify=verify)

    @property
    def max_attempts(self) -> int:
        """Every request is attempted at most this many times in all (one retry layer):
        ``max_attempts=``, else ``AWS_MAX_ATTEMPTS`` / the profile's ``max_attempts`` (read
        as botocore reads them), else 5."""
        if self._max_attempts is None:
            from dynaorm.client.plain import configured_attempts

            self._max_attempts = resolve_max_attempts(  # (the plain path: no botocore session)
                None, None if self._plain else self._botocore_session(), self._label,
                configured_attempts if self._plain else None)
        return self._max_attempts

    @property
    def pool_size(self) -> int:
        """Connections kept open per wire (``Config(max_pool_connections=)``, else 64)."""
        size = config_options(self.config).get("max_pool_connections")
        return int(size or CONFIG_DEFAULTS["max_pool_connections"])

    # -- hooks -----------------------------------------------------------------------
    @property
    def policy(self) -> Policy:
        """The one immutable :class:`~dynaorm.protocol.policy.Policy` both drivers read
        (made anew when a hook or listener is added or removed), with the tracers that are
        active now (those found: group ``dynaorm.tracers``) outermost."""
        policy = self._policy
        if policy is None:
            with self._lock:
                hooks = self._hooks
                if self._listeners or any(t._listeners for t in self._listening):
                    hooks = (Listeners(self._listeners, self._table_listeners), *hooks)
                policy = self._policy = Policy(
                    max_attempts=self.max_attempts, max_wait=self.max_wait,
                    capacity=self.return_consumed_capacity, hooks=hooks,
                    budget=self._budget, meter=self._meter)
                self._traced = {}
        tracers, asked = self._tracers, None
        try:
            for i, asked in enumerate(tracers):  # the one check per operation while none
                if asked.active():  # is active (each asked once: those before said no)
                    active = [asked]
                    for asked in tracers[i + 1:]:
                        if asked.active():
                            active.append(asked)
                    break
            else:
                return policy
        except Exception as exc:  # (a tracer's switch that raises: said, left out)
            self._leave_out(asked, exc)
            return policy
        key = tuple(map(id, active))  # (by identity: a tracer's own == or hash is not asked)
        traced = self._traced.get(key)
        if traced is None:
            traced = dataclasses.replace(policy, hooks=(*active, *policy.hooks))
            self._traced[key] = traced
        return traced

    def _leave_out(self, tracer: Any, exc: Exception) -> None:
        """Leave ``tracer``, whose ``active()`` raised ``exc``, out of this client, said in
        a RuntimeWarning, as a tracer that cannot be made is (the operation that asked it
        runs untraced); :attr:`tracing` says so after, if it was that one."""
        with self._lock:
            name = next((n for n, t in self._named.items() if t is tracer), None)
            if name is None:  # (left out or replaced by another thread meanwhile)
                return
            self._named = {n: t for n, t in self._named.items() if n != name}
            self._tracers, self._traced = tuple(self._named.values()), {}
            self._left_out[name] = f"its active() raised {type(exc).__name__}: {exc}"
        warnings.warn(f"dynaorm: the tracer {name!r} is left out: {self._left_out[name]}",
                      RuntimeWarning, stacklevel=4)

    def capacity(self, reset: bool = False) -> dict[str, dict[str, float]]:
        """The capacity units this client's requests consumed, by entity and row role
        (``{"User": {"row": 4.0, "unique guard": 2.0, "index entry": 2.0, "read": 1.5}}``)
        as DynamoDB reported them, since it was made or last reset (``reset``: start
        again from 0). Writes report theirs; reads only with
        ``return_consumed_capacity`` set (see :mod:`dynaorm.protocol.capacity`), and a
        vector search then the bytes it examined, under the role ``vector search bytes``
        (bytes, not units)."""
        return self._meter.totals(reset)

    @property
    def rate(self) -> Rate | None:
        """The capacity budget of every request (``dynaorm.Rate``; ``None``: none), held
        from each response's ``ConsumedCapacity`` and adapting down on throttles."""
        return self._rate

    @rate.setter
    def rate(self, rate: Rate | None) -> None:
        with self._lock:
            self._rate, self._budget, self._policy = rate, budget_of(rate), None

    @property
    def tracing(self) -> Any:
        """The OpenTelemetry tracer (:class:`~dynaorm.Tracing`, the tracer found as
        ``opentelemetry``): one span per session operation and one per HTTP attempt while
        a tracer provider is configured (``tracing.tracer_provider = provider`` for this
        client alone, ``tracing.enabled = False`` to turn it off). Assign another to
        replace it. :class:`~dynaorm.DynaormError` where none is registered (dynaorm's
        entry points not installed)."""
        found = self._named.get(OPENTELEMETRY)
        if found is None and OPENTELEMETRY in self._left_out:
            raise DynaormError(f"the tracer {OPENTELEMETRY!r} was left out of this client: "
                               f"{self._left_out[OPENTELEMETRY]} (assign client.tracing "
                               "to put one in again)")
        if found is None:
            raise DynaormError(f"no tracer {OPENTELEMETRY!r} is registered (entry-point group "
                               "dynaorm.tracers): is dynaorm installed, not only on sys.path?")
        return found

    @tracing.setter
    def tracing(self, hook: Any) -> None:
        with self._lock:
            self._named = {**self._named, OPENTELEMETRY: self._routed(hook)}
            self._left_out.pop(OPENTELEMETRY, None)
            self._tracers, self._traced = tuple(self._named.values()), {}

    def _made_tracers(self) -> None:
        """Make the tracers found (group ``dynaorm.tracers``), each a function of this
        client, by name: each told how the client routes attempts, if it asks
        (``route``)."""
        self._named, self._left_out = {}, {}
        for name, make in loaded(TRACERS).items():
            try:
                self._named[name] = self._routed(make(self))
            except Exception as exc:  # (a package's tracer breaks no client: said, left out)
                warnings.warn(f"dynaorm: the tracer {name!r} cannot be made: "
                              f"{type(exc).__name__}: {exc}", RuntimeWarning, stacklevel=3)
        self._tracers = tuple(self._named.values())

    def _routed(self, hook: Any) -> Any:
        """``hook``, told (its ``route(routes, where)``, where it has one) whether this
        client's attempts go through botocore's client and where they go."""
        route = getattr(hook, "route", None)
        if route is not None:
            route(self._via_botocore, self._where)
        return hook

    def _where(self) -> tuple[str, str] | None:
        """The endpoint URL and region requests go to, once the transport knows them."""
        transport = self._transport
        return None if transport is None else transport.where()

    def _via_botocore(self, session: str) -> bool:
        """Whether attempts go through botocore's (or aiobotocore's) client: what
        OpenTelemetry's botocore instrumentation sees (the same for both kinds of
        ``session``)."""
        return self.transport.botocore

    def add_hook(self, hook: _AnyHook) -> _AnyHook:
        """Attach a phase hook (:class:`dynaorm.Hook`): it sees the start and end of every
        session operation and every HTTP attempt of this client. Hooks added later are
        nested inside earlier ones. Returns ``hook``."""
        with self._lock:
            self._hooks = (*self._hooks, hook)
            self._policy = None
        return hook

    def remove_hook(self, hook: HookLike) -> None:
        """Detach a hook added with :meth:`add_hook` (no error if it is not attached)."""
        with self._lock:
            self._hooks = tuple(h for h in self._hooks if h is not hook)
            self._policy = None

    def on_request(self, fn: _Hook) -> _Hook:
        """Call ``fn(event)`` after every attempt of every request of this client (a
        :class:`~dynaorm.RequestEvent`); returns ``fn``, so it works as a decorator.
        ``Table.on_request`` does the same for one table's requests."""
        with self._lock:
            self._listeners.append(fn)
            self._policy = None
        return fn

    def _detach_all(self) -> None:
        """Detach every hook and ``on_request`` listener (the client's and its tables'),
        and put the tracers back as they were made."""
        with self._lock:
            self._hooks = ()
            self._made_tracers()
            self._listeners.clear()
            for table in list(self._listening):
                table._listeners.clear()
            self._listening = weakref.WeakSet()
            self._policy = None

    def _listen(self, table: Any) -> None:
        """``table`` (bound to this client) has ``on_request`` listeners: tell them."""
        with self._lock:
            self._listening.add(table)
            self._policy = None

    def _table_listeners(self, name: str) -> list[Callable[[RequestEvent], object]]:
        return [fn for t in list(self._listening) if t.name == name for fn in t._listeners]

    def _pointed_at(self, endpoint_url: str | None, region: str | None) -> Client:
        """This client pointed at another endpoint (and region): the same settings and
        the hooks, tracer settings and listeners attached now, one per endpoint (what
        ``Table.connect`` binds a table given this client to, so that test fixtures keep
        its settings)."""
        with self._lock:
            key = (endpoint_url, region or self.region)
            found = self._pointed.get(key)
            if found is None:
                found = Client(endpoint_url, key[1], config=self.config, wire=self.wire,
                               max_attempts=self._max_attempts, max_wait=self.max_wait,
                               return_consumed_capacity=self.return_consumed_capacity,
                               verify=self.verify, keyring=self.keyring, rate=self.rate,
                               receipts=self.receipts)
                found._hooks = self._hooks
                for name, mine in self._named.items():  # (by name: one left out here is
                    theirs = found._named.get(name)  # not, there, until it raises there)
                    if theirs is not None:
                        vars(theirs).update({k: v for k, v in vars(mine).items()
                                             if not k.startswith("_")})  # (their settings)
                found._listeners = list(self._listeners)
                found._label, found._origin = self._label, self
                self._pointed[key] = found
            return found

    # -- the transport ---------------------------------------------------------------
    @property
    def transport(self) -> Transport:
        """The :class:`~dynaorm.wire.Transport` every request goes through, chosen once,
        by the first request: the wire :data:`WIRES` makes for ``wire=``, or botocore's
        while moto's in-process backend is on (:func:`in_process_mock`)."""
        found = self._transport
        if found is None:
            with self._lock:
                if self._transport is None:
                    self._transport = self._choose()
                found = self._transport
        return found

    def _choose(self) -> Transport:
        if moto_active() or (in_process_mock_depth() and in_process(
                configured_endpoint(self.endpoint_url, self._botocore_session()))):
            wrap = _IN_PROCESS[-1] if _IN_PROCESS else None  # (moto answers inside
            self._boto.in_process = True  # botocore's client: asend's go on a thread)
            return self._boto if wrap is None else wrap(self._boto)
        return WIRES[self.wire](self)

    def _transport_for(self, operation: str) -> Transport:
        """:attr:`transport`, the failure to choose it (a configuration that does not
        load) raised as the :class:`~dynaorm.RequestError` of ``operation``."""
        from botocore.exceptions import BotoCoreError

        try:
            return self.transport
        except BotoCoreError as exc:  # (credentials, a proxy's files, ...): nothing sent
            raise RequestError(operation, type(exc).__name__, str(exc)) from exc

    def _swap(self, state: tuple[Any, Any] | None) -> tuple[Any, Any]:
        """Put ``(transport, botocore wire)`` in place (``None``: none chosen, a fresh
        botocore wire), closing the sync side of the transport replaced; the state it
        had."""
        with self._lock:
            old = (self._transport, self._boto)
            self._transport, self._boto = state or (None, BotocoreWire(self))
        if old[0] is not None and (state is None or old[0] is not state[0]):
            old[0].close()
        return old

    @property
    def botocore(self) -> Any:
        """The botocore DynamoDB client (made on first use; safe to share by threads).
        Requests go through it with ``wire="botocore"`` (register botocore event handlers
        on ``client.botocore.meta.events`` then: on dynaorm's own wire they see nothing;
        :attr:`tracing` and hooks see every wire)."""
        return self._boto.client

    async def aiobotocore(self) -> Any:
        """This event loop's aiobotocore client (made once per loop; closed by
        :meth:`aclose`)."""
        return await self._boto.aio()

    @property
    def sync_wire(self) -> Any:
        """The :class:`~dynaorm.wire.SyncWire` sync requests go over (chosen on first
        use), or ``None`` when they go through the botocore client (``wire="botocore"``,
        moto's in-process backend)."""
        from dynaorm.wire import SyncWire

        transport = self.transport
        return transport if isinstance(transport, SyncWire) else None

    @property
    def async_wire(self) -> Any:
        """The running event loop's :class:`~dynaorm.wire.AsyncWire`, once a request
        opened it (``None`` before, after :meth:`aclose`, or when requests go through
        aiobotocore)."""
        from dynaorm.wire import Wire

        transport = self._transport
        return transport.async_wire() if isinstance(transport, Wire) else None

    def send(self, operation: str, request: dict[str, Any],
             reader: Reader | None = None,
             via: Any = None, service: str | None = None) -> dict[str, Any]:
        """Send one request once (no retry, no hook), blocking; a failure is raised as a
        :class:`~dynaorm.RequestError` (``reader``: see
        :class:`~dynaorm.protocol.steps.Send`; dynaorm's wire only). A request to another
        service (``"kms:Decrypt"``) goes through botocore's client of that service
        (``via``: the one to use, or a region name; ``None``: this client's own, made on
        first use from its botocore session, region, ``Config`` and ``verify``, the
        endpoint as configured for that service: ``AWS_ENDPOINT_URL_KMS``, ...).
        ``service``: the step's :attr:`~dynaorm.protocol.steps.Call.service` (``None``:
        told by the operation's name)."""
        if service != DYNAMODB if service is not None else ":" in operation:
            return self._boto.send_to(operation, request, via)
        return (self._transport or self._transport_for(operation)).send(
            operation, request, reader)

    async def asend(self, operation: str, request: dict[str, Any],
                    reader: Reader | None = None,
                    via: Any = None, service: str | None = None) -> dict[str, Any]:
        """Send one request once on the running event loop; a failure is raised as a
        :class:`~dynaorm.RequestError` (``reader``, ``via``: as for :meth:`send`; a
        request to another service is sent by botocore's client in a worker thread, off
        the loop)."""
        if service != DYNAMODB if service is not None else ":" in operation:
            import asyncio

            return await asyncio.to_thread(self._boto.send_to, operation, request, via)
        transport = self._transport
        if transport is None:  # the configuration may read files or ask a metadata
            import asyncio  # service: off the loop

            transport = await asyncio.to_thread(self._transport_for, operation)
        return await transport.asend(operation, request, reader)

    # -- closing -----------------------------------------------------------------------
    def close(self) -> None:
        """Close the sync connections (a later request opens new ones). Async
        connections belong to their event loop: close them with :meth:`aclose`."""
        if self._transport is not None:
            self._transport.close()

    async def aclose(self) -> None:
        """Close this event loop's connections and aiobotocore client (a later request
        opens new ones), and the sync ones."""
        transport = self._transport
        if transport is not None and transport is not self._boto:
            await transport.aclose()
        await self._boto.aclose()
        self.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    async def __aenter__(self) -> Client:
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None,
                        exc: BaseException | None, tb: TracebackType | None) -> None:
        await self.aclose()


def _forked() -> None:
    """In a child of ``os.fork()``: no client uses a connection (or a botocore client) its
    parent opened, on either wire; each chooses its transport again, and opens its own
    connections, at its next request. What it let go is collected: the child's copies of
    the parent's sockets closed, which sends nothing (their loops' keepers let go too:
    :mod:`dynaorm.wire.http`)."""
    for client in live_clients():
        client._lock = threading.RLock()  # (held, maybe, by a thread the child has not)
        client._transport, client._boto = None, BotocoreWire(client)
        client._meter.renew()  # (the child's own consumption, from 0)
        for tracer in client._tracers:  # (a lock, maybe held by a thread the child has not)
            renew = getattr(tracer, "renew", None)
            if renew is not None:
                renew()


if hasattr(os, "register_at_fork"):  # (not on Windows)
    os.register_at_fork(after_in_child=_forked)


def session_target(target: object, kind: str) -> tuple[Any, Client]:
    """What a session is made with: a :class:`~dynaorm.Table` (its client; entities of the
    client's other tables may be staged too) or a :class:`Client` (any of its tables)."""
    if isinstance(target, Client):
        return None, target
    client = target.db if isinstance(target, TableSchema) else None
    if isinstance(client, Client):
        return target, client
    raise DynaormError(f"{kind}() takes a dynaorm Table or Client, got {target!r}")


@atexit.register
def _close_live() -> None:
    """At exit, every client's sync connections closed (one left open is a
    ``ResourceWarning`` then: a script's, the CLI's, a job's worker process's)."""
    for client in list(_LIVE):
        client.close()


def live_clients() -> list[Client]:
    """Every client not yet collected (what ``dynaorm.aio.close()`` closes; a client let
    go with async connections open has them closed when their loop ends)."""
    return list(_LIVE)


@contextmanager
def in_process_mock(transport: Callable[[BotocoreWire], Transport] | None = None
                    ) -> Iterator[None]:
    """For the block, requests without an endpoint go to an in-process mock (moto's
    ``mock_aws``, which the caller starts) through the botocore client: every client
    chooses its transport anew inside the block (tables without an endpoint get moto's,
    with dummy credentials, so no credential provider is asked, and
    :data:`~dynaorm.client.settings.LOOPBACK_REGION` if no region is configured), and
    again after it (clients made before it get back the transport and botocore client
    they had). ``transport``: what each client's transport is made of its botocore wire
    (``None``: that wire; dynaorm's test backend puts itself in front). Blocks may nest:
    the outermost one swaps, the innermost one's ``transport`` holds."""
    with _SWAP:
        saved = {c: c._swap(None) for c in list(_LIVE)} if enter_mock(1) == 1 else None
        _IN_PROCESS.append(transport)
    try:
        yield
    finally:
        with _SWAP:
            _IN_PROCESS.pop()
            if enter_mock(-1) == 0:
                for client in list(_LIVE):
                    client._swap((saved or {}).get(client))
