"""The :class:`Client`: where and how requests go, for any number of tables, threads and
sessions, sync and async alike.

A client holds the endpoint, the region and credentials (botocore's chain), a
``botocore.config.Config`` (timeouts, pool size, proxies, TLS, user agent: honoured on
every wire), the wire, the retry budget and consumed-capacity reporting, resolved once into
one immutable :class:`~dynaorm.protocol.policy.Policy` that both of its drivers
(:mod:`dynaorm.client.drivers`) read; the phase hooks (tracing, logging, request events,
fault injection); and the connections: one botocore client (the ``wire="botocore"`` path,
and what configures dynaorm's own wire), one :class:`~dynaorm.wire.SyncWire`, and per event
loop one :class:`~dynaorm.wire.aio.AsyncWire` (or aiobotocore client). Everything is made on
first use. Every failure leaves :meth:`Client.send` / :meth:`Client.asend` as a
:class:`~dynaorm.RequestError` (:func:`dynaorm.client.errors.map_error`), never as a
botocore exception.
"""

from __future__ import annotations

import dataclasses
import threading
import weakref
from collections.abc import Callable, Iterable
from types import TracebackType
from typing import TYPE_CHECKING, Any, Final, NoReturn, TypeVar

from dynaorm.client.drivers import AsyncDriver, SyncDriver
from dynaorm.client.settings import (
    CONFIG_DEFAULTS,
    check_checksums,
    client_settings,
    configured_endpoint,
    create_client,
    credentials_for,
    default_session,
    in_process,
    local_only,
    resolve_max_attempts,
)
from dynaorm.core.stage import describe
from dynaorm.errors import DynaormError
from dynaorm.model.table import TableSchema
from dynaorm.private_apis import checked_aiohttp_session, config_options, moto_active
from dynaorm.protocol.events import RequestEvent
from dynaorm.protocol.hooks import HookLike, Listeners, Operation
from dynaorm.protocol.policy import DEFAULT_MAX_ATTEMPTS, Policy
from dynaorm.protocol.tracing import Tracing

if TYPE_CHECKING:  # asyncio is imported by the first async request, not by import dynaorm
    import asyncio

__all__ = ["CAPACITY_MODES", "INSTALL_HINT", "WIRES", "Client", "check_settings",
           "live_clients", "session_target"]

#: the wires a client may send over: dynaorm's own (:mod:`dynaorm.wire`) or botocore's
WIRES: Final = ("dynaorm", "botocore")
#: ``ReturnConsumedCapacity`` modes a client may ask for
CAPACITY_MODES: Final = ("INDEXES", "TOTAL", "NONE")
#: What to install for AsyncSession.
INSTALL_HINT: Final = 'pip install "dynaorm[async]"'

_Hook = TypeVar("_Hook", bound=Callable[[RequestEvent], object])
_AnyHook = TypeVar("_AnyHook", bound=HookLike)
_LIVE: weakref.WeakSet[Client] = weakref.WeakSet()  # for dynaorm.aio.close()
#: clients tables left (rebound) while they held async connections: kept until
#: ``dynaorm.aio.close()`` closes them, so none is collected with a connection open
_RETIRED: set[Client] = set()
_UNRESOLVED: Any = object()


def check_settings(owner: str, *, wire: object = "dynaorm", max_attempts: object = None,
                   max_wait: object = 10.0, return_consumed_capacity: object = None,
                   endpoint_url: object = None, region: object = None) -> None:
    """Refuse connection settings that cannot work (``owner`` names the client or table
    in the message): the one check of ``Client(...)`` and ``Table(...)``'s shorthands
    (``endpoint_url`` and ``region`` are judged by botocore when the client is made)."""
    if wire not in WIRES:
        raise DynaormError(f"{owner}: wire must be one of {list(WIRES)}, got {wire!r}")
    if max_attempts is not None and (not isinstance(max_attempts, int)
                                     or isinstance(max_attempts, bool) or max_attempts < 1):
        raise DynaormError(f"{owner}: max_attempts must be an int >= 1, got {max_attempts!r}")
    if isinstance(max_wait, bool) or not isinstance(max_wait, int | float) or max_wait < 0:
        raise DynaormError(f"{owner}: max_wait must be a number of seconds >= 0, "
                           f"got {max_wait!r}")
    if return_consumed_capacity is not None and (
            return_consumed_capacity not in CAPACITY_MODES):
        raise DynaormError(f"{owner}: return_consumed_capacity must be one of "
                           f"{list(CAPACITY_MODES)} or None, got {return_consumed_capacity!r}")


def _raise_mapped(operation: str, request: dict[str, Any], exc: Exception) -> NoReturn:
    """Raise what a failure of sending ``request`` is (:func:`~dynaorm.client.errors.
    map_error`), chained to it; ``exc`` itself when it is not a failure of the request."""
    from dynaorm.client.errors import map_error  # (loaded by the first failure)

    mapped = map_error(operation, request, exc)
    if mapped is exc:
        raise exc
    raise mapped from exc


def _aiobotocore() -> Any:
    try:
        import aiobotocore.config
        import aiobotocore.session
    except ModuleNotFoundError as exc:
        raise DynaormError(f"AsyncSession needs aiobotocore: {INSTALL_HINT}") from exc
    return aiobotocore


class _Loop:
    """What a client keeps per event loop: its async wire, its aiobotocore client, and
    what :meth:`Client.aclose` closes."""

    __slots__ = ("aio", "closers", "lock", "wire")

    def __init__(self) -> None:
        import asyncio

        self.wire: Any = None
        self.aio: asyncio.Future[Any] | None = None
        self.closers: list[Any] = []
        self.lock = asyncio.Lock()


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

    ``with Client() as db`` / ``async with Client() as db`` close its connections at the
    end (:meth:`close`, :meth:`aclose`); a later request opens new ones.
    """

    def __init__(self, endpoint_url: str | None = None, region: str | None = None, *,
                 config: Any = None, wire: str = "dynaorm", max_attempts: int | None = None,
                 max_wait: float = 10.0, return_consumed_capacity: str | None = None) -> None:
        check_settings("Client", wire=wire, max_attempts=max_attempts, max_wait=max_wait,
                       return_consumed_capacity=return_consumed_capacity)
        self.endpoint_url = endpoint_url
        """The endpoint given (``None``: the configured one, or AWS's for the region)."""
        self.region = region
        """The region given (``None``: the configured one)."""
        self.config = config
        """The ``botocore.config.Config`` given (``None``: none)."""
        self.wire = wire
        """``"dynaorm"`` or ``"botocore"``: the wire requests go over (moto's in-process
        mock always gets the botocore client: it answers inside botocore)."""
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
        self._configured: Any = _UNRESOLVED
        self._plain_found: Any = _UNRESOLVED  # plain_settings(), read once
        self._botocore: Any = None
        self._sync_wire: Any = None  # None: not opened yet; False: requests need botocore
        self._loops: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Loop] = (
            weakref.WeakKeyDictionary())
        self._hooks: tuple[HookLike, ...] = ()
        self._listeners: list[Callable[[RequestEvent], object]] = []
        self._listening: weakref.WeakSet[Any] = weakref.WeakSet()  # tables with on_request
        self._policy: Policy | None = None
        self._traced: Policy | None = None  # the policy with the tracing hook
        self._tracing = Tracing(routes=self._via_botocore, where=self._where)
        self._pointed: dict[tuple[str | None, str | None], Client] = {}
        self.driver = SyncDriver(self)
        """The sync driver (what ``Session`` runs its protocols with)."""
        self.async_driver = AsyncDriver(self)
        """The async driver (what ``AsyncSession`` runs its protocols with)."""
        _LIVE.add(self)

    def __repr__(self) -> str:
        where = self.endpoint_url or "configured endpoint"
        return f"Client({where!r}, wire={self.wire!r})"

    # -- settings --------------------------------------------------------------------
    def _botocore_session(self) -> Any:
        with self._lock:
            if self._session is None:
                self._session = default_session()
            return self._session

    def _plain(self) -> Any:
        """The settings and credentials of the plain environment, resolved without a
        botocore session (:func:`~dynaorm.client.plain.plain_settings`), or ``None`` when
        the botocore session decides (read once)."""
        found = self._plain_found
        if found is _UNRESOLVED:
            with self._lock:
                if self._plain_found is _UNRESOLVED:
                    from dynaorm.client.plain import plain_settings

                    self._plain_found = (plain_settings(self.endpoint_url, self.region,
                                                        self.config)
                                         if self.wire == "dynaorm" else None)
                found = self._plain_found
        return found

    @property
    def max_attempts(self) -> int:
        """Every request is attempted at most this many times in all (one retry layer):
        ``max_attempts=``, else ``AWS_MAX_ATTEMPTS`` / the profile's ``max_attempts`` (read
        as botocore reads them), else 5."""
        if self._max_attempts is None and self._plain() is not None:
            # (no AWS_MAX_ATTEMPTS, no profile: botocore's is None)
            self._max_attempts = DEFAULT_MAX_ATTEMPTS
        if self._max_attempts is None:
            self._max_attempts = resolve_max_attempts(None, self._botocore_session(),
                                                      self._label)
        return self._max_attempts

    @property
    def pool_size(self) -> int:
        """Connections kept open per wire (``Config(max_pool_connections=)``, else 64)."""
        size = config_options(self.config).get("max_pool_connections")
        return int(size or CONFIG_DEFAULTS["max_pool_connections"])

    @property
    def policy(self) -> Policy:
        """The one immutable :class:`~dynaorm.protocol.policy.Policy` both drivers read
        (made anew when a hook or listener is added or removed); while an OpenTelemetry
        tracer provider is configured, the one with :attr:`tracing` outermost."""
        policy = self._policy
        if policy is None:
            with self._lock:
                hooks = self._hooks
                if self._listeners or any(t._listeners for t in self._listening):
                    hooks = (Listeners(self._listeners, self._table_listeners), *hooks)
                policy = Policy(max_attempts=self.max_attempts, max_wait=self.max_wait,
                                capacity=self.return_consumed_capacity, hooks=hooks)
                self._traced = dataclasses.replace(policy, hooks=(self._tracing, *hooks))
                self._policy = policy
        if self._tracing.active():  # the one check per operation while no provider is
            traced = self._traced  # configured
            if traced is not None:
                return traced
        return policy

    @property
    def tracing(self) -> Tracing:
        """The OpenTelemetry hook (:class:`~dynaorm.protocol.tracing.Tracing`): one span
        per session operation and one per HTTP attempt while a tracer provider is
        configured (``tracing.tracer_provider = provider`` for this client alone,
        ``tracing.enabled = False`` to turn it off). Assign another to replace it."""
        return self._tracing

    @tracing.setter
    def tracing(self, hook: Tracing) -> None:
        with self._lock:
            hook.route(self._via_botocore, self._where)
            self._tracing = hook
            self._policy = None

    def _where(self) -> tuple[str, str] | None:
        """The endpoint URL and region requests go to, once a connection knows them (the
        sync or an async wire, the botocore or an aiobotocore client); ``None`` before."""
        sources = [self._sync_wire, *(here.wire for here in list(self._loops.values()))]
        for wire in sources:
            if wire:
                return str(wire.endpoint_url), str(wire.region)
        made = [self._botocore, *(here.aio.result() for here in list(self._loops.values())
                                  if here.aio is not None and here.aio.done()
                                  and here.aio.exception() is None)]
        for client in made:
            if client is not None:
                return str(client.meta.endpoint_url), str(client.meta.region_name)
        return None

    def _via_botocore(self, session: str) -> bool:
        """Whether attempts of a ``"sync"`` or ``"async"`` session go through botocore's
        (or aiobotocore's) client: what OpenTelemetry's botocore instrumentation sees."""
        if session == "async":
            return self._async_wire_name() == "botocore"
        return self.sync_wire is None

    def _pointed_at(self, endpoint_url: str | None, region: str | None) -> Client:
        """This client pointed at another endpoint (and region): the same settings and
        the hooks and listeners attached now, one per endpoint (what ``Table.connect``
        binds a table given this client to, so that test fixtures keep its settings)."""
        with self._lock:
            key = (endpoint_url, region or self.region)
            found = self._pointed.get(key)
            if found is None:
                found = Client(endpoint_url, key[1], config=self.config, wire=self.wire,
                               max_attempts=self._max_attempts, max_wait=self.max_wait,
                               return_consumed_capacity=self.return_consumed_capacity)
                found._hooks = self._hooks
                found._tracing.tracer_provider = self._tracing.tracer_provider
                found._tracing.enabled = self._tracing.enabled
                found._listeners = list(self._listeners)
                found._label = self._label
                self._pointed[key] = found
            return found

    def _retire(self) -> None:
        """A table left this client: keep it until ``dynaorm.aio.close()`` if it holds
        async connections (collected with them open, they would warn)."""
        if self._loops:
            _RETIRED.add(self)

    # -- hooks -----------------------------------------------------------------------
    def _operation(self, name: str, entities: Iterable[type[Any]]) -> Operation | None:
        """What the hooks are told a session operation on ``entities`` is (``None`` when
        no hook is attached: nothing to describe)."""
        if not self.policy.hooks:
            return None
        return describe(name, entities)

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
        and put :attr:`tracing` back as it was made."""
        with self._lock:
            self._hooks = ()
            self._tracing = Tracing(routes=self._via_botocore, where=self._where)
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

    # -- the botocore client -----------------------------------------------------------
    @property
    def botocore(self) -> Any:
        """The botocore DynamoDB client (made on first use; safe to share by threads).
        Requests go through it with ``wire="botocore"`` (register botocore event handlers
        on ``client.botocore.meta.events`` then: on dynaorm's own wire they see nothing;
        :attr:`tracing` and hooks see every wire); dynaorm's own wire is configured from
        it."""
        made = self._botocore
        if made is not None:
            return made
        with self._lock:
            if self._botocore is None:
                from botocore.exceptions import BotoCoreError

                try:
                    self._botocore = create_client(
                        self.endpoint_url, self.region, owner=self._label,
                        config=self.config, session=self._botocore_session())
                except (BotoCoreError, ValueError) as exc:  # a malformed endpoint, ...
                    raise DynaormError(
                        f"{self._label}: cannot create a DynamoDB client for endpoint "
                        f"{self.endpoint_url!r}: {exc}") from exc
            return self._botocore

    def _configured_endpoint(self) -> str | None:
        """The endpoint botocore resolves (read once: a botocore session is not cheap)."""
        found = self._configured
        if found is _UNRESOLVED and self._plain() is not None:
            # (no AWS_ENDPOINT_URL*, no profile: only the argument)
            found = self._configured = self.endpoint_url or None
        if found is _UNRESOLVED:
            found = self._configured = configured_endpoint(self.endpoint_url,
                                                           self._botocore_session())
        return found  # type: ignore[no-any-return]

    def _in_process(self) -> bool:
        """Whether requests go to moto's in-process mock (it answers inside botocore)."""
        return moto_active() or in_process(self._configured_endpoint())

    def _credentials(self) -> Any:
        return credentials_for(self.endpoint_url, self._botocore_session())

    # -- sync requests -----------------------------------------------------------------
    def _wire_settings(self, credentials: Any) -> Any:
        """What the own wire reads its settings from: the botocore client when it is made,
        else the same settings resolved without one (:func:`~dynaorm.client.endpoint.
        light_client`), else the botocore client, made now."""
        made = self._botocore
        if made is not None:
            return made
        from botocore.exceptions import BotoCoreError

        from dynaorm.client.endpoint import light_client

        try:
            light = light_client(self.endpoint_url, self.region, owner=self._label,
                                 config=self.config, session=self._botocore_session(),
                                 credentials=credentials)
        except (BotoCoreError, ValueError):  # the client says how it fails
            light = None
        return self.botocore if light is None else light

    def _settings_and_credentials(self) -> tuple[Any, Any]:
        """Everything a configuration decides for a wire, resolved as botocore does: in
        the plain environment without a botocore session, else through it."""
        plain = self._plain()
        if plain is not None:
            return plain.client, plain.credentials
        credentials = self._credentials()
        return self._wire_settings(credentials), credentials

    def _open_sync_wire(self) -> Any:
        with self._lock:
            if self._sync_wire is None:
                endpoint = self._configured_endpoint()
                if self.wire != "dynaorm" or in_process(endpoint):
                    self._sync_wire = False  # botocore's wire, or moto in-process
                else:
                    from dynaorm.wire import SyncWire

                    client, credentials = self._settings_and_credentials()
                    self._sync_wire = SyncWire(client, credentials)
            return self._sync_wire

    @property
    def sync_wire(self) -> Any:
        """The :class:`~dynaorm.wire.SyncWire` sync requests go over now (opened on first
        use), or ``None`` when they go through the botocore client (``wire="botocore"``,
        moto's in-process mock)."""
        wire = self._sync_wire
        if wire is None:
            wire = self._open_sync_wire()
        return None if wire is False or moto_active() else wire

    def send(self, operation: str, request: dict[str, Any],
             reader: Callable[[bytes], dict[str, Any] | None] | None = None
             ) -> dict[str, Any]:
        """Send one request once (no retry; the drivers retry), blocking; a failure is
        raised as a :class:`~dynaorm.RequestError` (``reader``: see
        :class:`~dynaorm.protocol.steps.Send`; dynaorm's wire only)."""
        try:
            wire = self._sync_wire
            if wire is None:
                wire = self._open_sync_wire()
            if wire is not False and not moto_active():
                answer: dict[str, Any] = wire.send(operation, request, reader)
                return answer
            from dynaorm.client.errors import method_name

            answer = getattr(self.botocore, method_name(operation))(**request)
            return answer
        except Exception as exc:
            _raise_mapped(operation, request, exc)

    # -- async requests ----------------------------------------------------------------
    def _loop(self) -> _Loop:
        import asyncio

        loop = asyncio.get_running_loop()
        found = self._loops.get(loop)
        if found is None:
            found = self._loops[loop] = _Loop()
        return found

    @property
    def async_wire(self) -> Any:
        """The running event loop's :class:`~dynaorm.wire.aio.AsyncWire`, once a request
        opened it (``None`` before, after :meth:`aclose`, or when requests go through
        aiobotocore)."""
        import asyncio

        found = self._loops.get(asyncio.get_running_loop())
        return None if found is None else found.wire

    def _async_wire_name(self) -> str:
        if self.wire == "dynaorm" and not self._in_process():
            return "dynaorm"
        return "botocore"

    async def aiobotocore(self) -> Any:
        """This event loop's aiobotocore client (made once per loop; closed by
        :meth:`aclose`)."""
        import asyncio

        here = self._loop()
        future = here.aio
        if future is None:
            future = here.aio = asyncio.get_running_loop().create_future()
            try:
                future.set_result(await self._make_aiobotocore(here))
            except BaseException as exc:
                here.aio = None
                future.set_exception(exc)
                future.exception()  # retrieved: no "never retrieved" warning
                raise
        return await asyncio.shield(future) if not future.done() else future.result()

    async def _make_aiobotocore(self, here: _Loop) -> Any:
        aio = _aiobotocore()
        session = aio.session.get_session()
        has = None
        if local_only(session, self.endpoint_url):
            has = await session.get_credentials() is not None
        kwargs, options = client_settings(session, self.endpoint_url, self.region,
                                          owner=self._label, config=self.config,
                                          has_credentials=has)
        try:
            context = session.create_client("dynamodb", config=aio.config.AioConfig(
                **options, http_session_cls=checked_aiohttp_session()), **kwargs)
            made = check_checksums(await context.__aenter__())
        except Exception as exc:  # a malformed endpoint, ...: never a botocore exception
            raise DynaormError(f"{self._label}: cannot create a DynamoDB client for "
                               f"endpoint {self.endpoint_url!r}: {exc}") from exc
        here.closers.append(context)
        return made

    async def _async_wire(self, here: _Loop) -> Any:
        import asyncio

        async with here.lock:
            if here.wire is None:
                from dynaorm.wire.aio import AsyncWire

                _aiobotocore()  # AsyncSession needs dynaorm[async] whatever the wire
                # the botocore client and the credential chain may read files or ask a
                # metadata service: off the loop
                client, creds = await asyncio.to_thread(self._settings_and_credentials)
                here.wire = AsyncWire(client, creds)
                here.closers.append(here.wire)
        return here.wire

    async def asend(self, operation: str, request: dict[str, Any],
                    reader: Callable[[bytes], dict[str, Any] | None] | None = None
                    ) -> dict[str, Any]:
        """Send one request once on the running event loop; a failure is raised as a
        :class:`~dynaorm.RequestError` (``reader``: as for :meth:`send`)."""
        import asyncio

        try:
            here = self._loops.get(asyncio.get_running_loop())
            wire = None if here is None else here.wire
            if wire is not None:  # the common case: this loop's wire is open
                answer: dict[str, Any] = await wire.send(operation, request, reader)
            elif self._async_wire_name() == "dynaorm":
                wire = await self._async_wire(self._loop())
                answer = await wire.send(operation, request, reader)
            else:
                from dynaorm.client.errors import method_name

                made = await self.aiobotocore()
                answer = await getattr(made, method_name(operation))(**request)
            return answer
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            _raise_mapped(operation, request, exc)

    # -- closing -----------------------------------------------------------------------
    def close(self) -> None:
        """Close the sync connections (a later request opens new ones). Async
        connections belong to their event loop: close them with :meth:`aclose`."""
        with self._lock:
            wire, self._sync_wire = self._sync_wire, None
        if wire:
            wire.close()

    async def aclose(self) -> None:
        """Close this event loop's connections and aiobotocore client (a later request
        opens new ones), and the sync ones."""
        import asyncio

        loop = asyncio.get_running_loop()
        here = self._loops.pop(loop, None)
        if not self._loops:
            _RETIRED.discard(self)
        if here is not None:
            for closer in here.closers:
                if hasattr(closer, "__aexit__"):
                    await closer.__aexit__(None, None, None)
                else:
                    await closer.close()
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


def session_target(target: object, kind: str) -> tuple[Any, Client]:
    """What a session is made with: a :class:`~dynaorm.Table` (its client; entities of the
    client's other tables may be staged too) or a :class:`Client` (any of its tables)."""
    if isinstance(target, Client):
        return None, target
    if isinstance(target, TableSchema) and isinstance(target.db, Client):
        return target, target.db
    raise DynaormError(f"{kind}() takes a dynaorm Table or Client, got {target!r}")


def live_clients() -> list[Client]:
    """Every client not yet collected, and every retired one holding async connections
    (what ``dynaorm.aio.close()`` closes)."""
    return list({*_LIVE, *_RETIRED})
