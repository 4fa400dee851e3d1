""":class:`Table`: a table's description bound to a :class:`~dynaorm.Client`, with its
administration (``create``, ``delete``, ``exists``) and its ``on_request`` hooks.

A table given ``client=`` uses that client. A table given none uses a shared one: the
process's default client (built from the environment on first use) or, when the table
says where or how to connect (``endpoint_url=``, ``region=``, ``wire=``, ``max_attempts=``,
``max_wait=``, ``return_consumed_capacity=``, or :meth:`Table.connect`), the client every
table with the same keywords shares (:mod:`dynaorm.client.shared`). So 0.3 code runs
unchanged, and tables that connect alike commit together.
"""

from __future__ import annotations

import importlib
import pickle
import sys
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from datetime import timedelta
from typing import TYPE_CHECKING, Any, TypeVar, Unpack

from dynaorm._types import Item
from dynaorm.client.client import Client, check_settings
from dynaorm.client.shared import shared_client
from dynaorm.client.tenancy import KeysPerTenant
from dynaorm.core.admin import create_p, delete_p, index_status_p, status_p
from dynaorm.errors import DynaormError
from dynaorm.protocol.events import RequestEvent
from dynaorm.protocol.hooks import Operation
from dynaorm.schema.entity import prepare_rows
from dynaorm.schema.places import OFFLOAD_THRESHOLD
from dynaorm.schema.settings import Declared, TableSettings
from dynaorm.schema.table import GSI, LSI, TableSchema, VectorIndex
from dynaorm.schema.tenancy import key_schema, release

if TYPE_CHECKING:
    from dynaorm.schema.model import AccessPattern
    from dynaorm.schema.streams import Change

_Hook = TypeVar("_Hook", bound=Callable[[RequestEvent], object])
#: ``Table``'s shorthands for the client it uses (``Client``'s keyword arguments)
CONNECTION_KEYWORDS = ("endpoint_url", "region", "wire", "max_attempts", "max_wait",
                       "return_consumed_capacity")


class _Setting:
    """A connection keyword read through a table: its client's value. Setting it binds the
    table to the shared client of its keywords with that one changed (refused for a table
    given ``client=``: change the client instead)."""

    def __set_name__(self, owner: type[Any], name: str) -> None:
        self.name = name

    def __get__(self, table: Table | None, owner: type[Any]) -> Any:
        if table is None:
            return self
        if self.name in table._settings:
            return table._settings[self.name]
        if table._given is None and self.name in ("endpoint_url", "region"):
            return None  # nothing given: botocore's configuration decides
        return getattr(table.db, self.name)

    def __set__(self, table: Table, value: Any) -> None:
        table._rebind({self.name: value})


class Table(TableSchema, KeysPerTenant):
    """A DynamoDB table shared by any number of entity types (single-table design),
    bound to a :class:`~dynaorm.Client`.

    ``client``: the client it sends through. Without one, the connection keywords
    (``endpoint_url``, ``region``, ``wire``, ``max_attempts``, ``max_wait``,
    ``return_consumed_capacity``: :class:`~dynaorm.Client`'s) choose a client shared by
    every table that gives the same ones; none at all: the process's default client.
    ``client=`` and connection keywords exclude each other. ``keyring``: the keyring of its
    ``Encrypted`` fields (``None``: its client's); ``indexes`` may hold native
    multi-attribute GSIs (``GSI(name, pk=(...), sk=(...))``); ``vector_indexes``: its
    :class:`~dynaorm.VectorIndex` es (searched with ``Session.search``). The operational
    settings ``create()`` applies and :meth:`settings` reads back: ``warm_throughput=``
    and ``max_on_demand=`` (``(reads, writes)``; a ``GSI`` takes them too), ``pitr_days=``
    (1-35), ``deletion_protection=``, ``contributor_insights=`` (``"accessed"`` or
    ``"throttled"``) and ``tags=`` (a bad value: :class:`~dynaorm.SettingsError`).
    ``offload=`` (``"s3://BUCKET/PREFIX"``) and ``offload_threshold=`` (bytes, 64 KiB by
    default): where the values of ``Offloaded`` fields above the threshold are kept
    (docs/guide/offloading.md). ``key_scope=`` (a field) and ``key_table=`` (default
    ``<name>-keys``): every ``Encrypted`` value sealed under its row's tenant's key, kept
    in that table of its own (:meth:`forget`, :meth:`seal`; docs/guide/tenants.md).
    """

    endpoint_url = _Setting()
    """The endpoint its client sends to (``None``: the configured one)."""
    region = _Setting()
    """The region its client signs for (``None``: the configured one)."""
    wire = _Setting()
    """``"dynaorm"`` or ``"botocore"``: the wire its client sends over."""
    max_attempts = _Setting()
    """Attempts of one request, at most (its client's)."""
    max_wait = _Setting()
    """Seconds all retries of one request may wait (its client's)."""
    return_consumed_capacity = _Setting()
    """``ReturnConsumedCapacity`` of every request that takes one (its client's)."""

    def __init__(self, name: str, pk: str = "pk", sk: str | None = "sk", *,
                 indexes: Sequence[GSI | LSI] = (), type_attribute: str | None = "_type",
                 key_types: Mapping[str, str] | None = None, ttl: str | None = None,
                 cursor_secret: str | bytes | None = None, stream: str | None = None,
                 keyring: Any = None, revision_attribute: str | None = "_rev",
                 client: Client | None = None, endpoint_url: str | None = None,
                 region: str | None = None, wire: str | None = None,
                 max_attempts: int | None = None, max_wait: float | None = None,
                 return_consumed_capacity: str | None = None,
                 vector_indexes: Sequence[VectorIndex] = (),
                 receipts_ttl: timedelta = timedelta(days=7), offload: str | None = None,
                 offload_threshold: int = OFFLOAD_THRESHOLD, key_scope: str | None = None,
                 key_table: str | None = None,
                 **settings: Unpack[Declared]):
        super().__init__(name, pk, sk, indexes=indexes, type_attribute=type_attribute,
                         key_types=key_types, ttl=ttl, cursor_secret=cursor_secret,
                         stream=stream, keyring=keyring,
                         revision_attribute=revision_attribute, vector_indexes=vector_indexes,
                         receipts_ttl=receipts_ttl, offload=offload,
                         offload_threshold=offload_threshold, key_scope=key_scope,
                         key_table=key_table, **settings)
        given = {k: v for k, v in zip(CONNECTION_KEYWORDS, (
            endpoint_url, region, wire, max_attempts, max_wait, return_consumed_capacity),
            strict=True) if v is not None}
        if client is not None and given:
            raise DynaormError(f"table {name!r}: client= and the connection keywords "
                               f"{sorted(given)} exclude each other (set them on the Client)")
        if client is not None and not isinstance(client, Client):
            raise DynaormError(f"table {name!r}: client= takes a dynaorm Client, got "
                               f"{client!r}")
        check_settings(f"table {name!r}", **given)
        self._given = client
        self._settings: dict[str, Any] = given
        self._client = client
        self._bind_lock = threading.Lock()
        self._listeners: list[Callable[[RequestEvent], object]] = []
        # (the module that made it: pickled, a table names it first; another module's
        # attribute may have been bound at run time, unbound in another process)
        self._home: str | None = sys._getframe(1).f_globals.get("__name__")
        if client is not None:
            self._attach(client)

    # -- the client ------------------------------------------------------------------
    db: Client  # (the property of TableSchema: bound on first use by _bind)
    """The :class:`~dynaorm.Client` this table sends through (its ``client=``, else the
    shared client of its connection keywords, chosen on first use)."""


    def __reduce__(self) -> tuple[Callable[[str, str], Table], tuple[str, str]]:
        """Pickled by reference, as a class is: the module attribute that holds it (a
        job's task names its table so; a worker process imports that module and gets its
        own table, its client its own). A table no module attribute holds does not pickle
        (a client never travels). The module that made it is asked first: another's
        attribute may be bound only at run time (a registry's ``current = table``)."""
        for module in filter(None, [self._home, *sys.modules]):
            held = sys.modules.get(module)
            for name, value in list(getattr(held, "__dict__", {}).items()):
                if value is self:
                    return _held, (module, name)
        raise pickle.PicklingError(f"table {self.name!r} is held by no module attribute: "
                                   "it pickles by reference (declare it in a module)")

    def __copy__(self) -> Table:
        """``copy.copy``: a table of its own, sharing the original's attributes (its
        client among them), as before tables pickled by reference; renaming or connecting
        it leaves the original alone."""
        twin = type(self).__new__(type(self))
        twin.__dict__.update(self.__dict__)
        return twin

    def changes(self, records: Iterable[Mapping[str, Any]] | Mapping[str, Any]
                ) -> Iterator[Change]:
        """Classify DynamoDB Streams records of this table (a Lambda event's
        ``Records`` or boto3's GetRecords output) into :class:`~dynaorm.Change` objects."""
        from dynaorm.schema.streams import iter_changes  # (loaded by the first stream read)

        return iter_changes(self, records, self._prepare_image)

    def _prepare_image(self, entity: type[Any], item: Item) -> None:
        """Ask for the key material a stream image of ``entity`` needs (its
        ``Encrypted`` fields' data keys), through this table's client (blocking: a
        ``Change`` decodes its images when they are first read)."""
        spec = getattr(entity, "__dynaorm_spec__", None)
        if spec is not None and spec.rules.preparers:
            self.db.driver.run(prepare_rows((spec,), (item,)),
                               Operation("stream", (self.name,), (entity,)))
    def _bind(self) -> Client:
        with self._bind_lock:  # threads racing to the first use get one client
            if self._client is None:
                client = shared_client(self._settings, self.name)
                self._attach(client)
                self._client = client
            found: Client = self._client
            return found

    def _attach(self, client: Client) -> None:
        """Bound to ``client``: tell it of the listeners, and share the type-name registry
        of the client's other Table objects of this table."""
        if self._listeners:
            client._listen(self)
        self._share(client._registries.setdefault(self.name, ({}, {})))  # (one, by name)

    def _rebind(self, changes: Mapping[str, Any]) -> None:
        """Bind to the shared client of this table's keywords with ``changes``."""
        if self._given is not None:
            raise DynaormError(
                f"table {self.name!r} was given client=; change {sorted(changes)} on that "
                "client (or give the table its own client)")
        settings = {k: v for k, v in {**self._settings, **changes}.items() if v is not None}
        check_settings(f"table {self.name!r}", **settings)
        self._settings = settings
        self._leave()

    def _leave(self) -> None:
        """Unbind from the current client (the next use binds again)."""
        self._client = None
        self._share(None)

    def binding(self) -> tuple[Any, ...]:
        """What the table is bound to now (its client, or the connection keywords it binds
        with), to :meth:`restore` later: a test fixture that points a module's table
        elsewhere for a while (:func:`dynaorm.testing.use_tables`)."""
        return self._given, dict(self._settings), self._client

    def restore(self, binding: tuple[Any, ...]) -> None:
        """Bind the table again as :meth:`binding` found it."""
        self._share(None)
        self._given, self._settings, self._client = binding
        if self._client is not None:
            self._attach(self._client)

    @property
    def client(self) -> Any:
        """The botocore client of the table's :class:`~dynaorm.Client` (made on first use).
        Requests go through it only with ``wire="botocore"``: botocore event handlers
        registered on ``client.meta.events`` (and tracers that patch botocore) see nothing
        on dynaorm's own wire (use its OpenTelemetry tracing, a :class:`~dynaorm.Hook` or
        ``on_request`` for that)."""
        return self.db.botocore

    def connect(self, endpoint_url: str | None = None, region: str | None = None) -> Table:
        """Point this table at another endpoint (DynamoDB Local, a test backend): it binds
        to the shared client of its connection keywords with this endpoint (and region).
        A table given ``client=`` binds to that client pointed at the endpoint: its
        ``Config``, wire, retries and the hooks attached now go with it (and tables of one
        client, connected alike, still share one)."""
        if self._given is not None:
            pointed = self._given._pointed_at(endpoint_url, region)
            self._leave()
            self._given = self._client = pointed
            self._attach(pointed)
            return self
        changes = {"endpoint_url": endpoint_url}
        if region is not None:
            changes["region"] = region
        self._rebind(changes)
        return self

    def on_request(self, fn: _Hook) -> _Hook:
        """Call ``fn(event)`` after every attempt of every request on this table (a
        :class:`~dynaorm.RequestEvent`); returns ``fn``, so it also works as a decorator."""
        self._listeners.append(fn)
        self.db._listen(self)
        return fn

    # -- the model as data ---------------------------------------------------------------
    def model(self) -> dict[str, Any]:
        """The model as plain JSON-ready data: the table, its indexes of every kind and the
        entities mapped onto it (:func:`dynaorm.schema.model.model_of`)."""
        from dynaorm.schema.model import model_of

        return model_of(self)

    def pattern(self, name: str, entity: type[Any], operation: str, *parameters: Any,
                **options: Any) -> AccessPattern:
        """Declare an access pattern of ``entity`` on this table (an
        :class:`~dynaorm.schema.model.AccessPattern`; ``options``: its ``index``,
        ``range_condition``, ``returns``, ``description``, ``pattern_id``): the model lists
        it, and ``dynaorm explain`` explains it."""
        from dynaorm.schema.model import AccessPattern

        found = AccessPattern(name, entity, operation, parameters, **options)
        self.__dict__.setdefault("patterns", []).append(found)
        return found

    # -- administration ----------------------------------------------------------------
    def _admin(self, name: str) -> Operation:
        return Operation(name, (self.name,))

    def _run(self, proto: Any, name: str) -> Any:
        """What the administration protocol ``proto`` returns, run as operation ``name``
        on this table through its client."""
        return self.db.driver.run(proto, self._admin(name))

    def exists(self) -> bool:
        """Whether the table exists on its client's endpoint."""
        return self._run(status_p(self), "describe_table") is not None

    def create(self, wait: float = 300.0) -> None:
        """Create the table (on-demand billing) with every index; no error if it exists.
        On an existing table it adds the declared global and vector indexes the table
        lacks (a vector index only on an on-demand table: a provisioned one is refused
        before anything is sent) and waits up to ``wait`` seconds for their backfill
        (:meth:`index_status` tells the rest).
        Safe to call from several processes at once: what another caller has done or is
        doing (an index, the stream, TTL) is waited for, not an error."""
        self._run(create_p(self, wait), "create_table")
        if self.key_scope is not None:  # (its tenants' keys: a table of its own)
            self._run(create_p(key_schema(self), wait), "create_table")

    def index_status(self) -> dict[str, str]:
        """Each index (vector indexes too) by name: ``"ACTIVE"``, ``"CREATING"``,
        ``"BACKFILLING"`` (queries or searches of it fail until it is ACTIVE),
        ``"UPDATING"``, ``"DELETING"``, ``"MISMATCHED"`` (keyed otherwise than declared),
        or ``"MISSING"`` (a declared index the table lacks: ``create()`` adds a global or
        vector one)."""
        found: dict[str, str] = self._run(index_status_p(self), "describe_table")
        return found

    def settings(self) -> TableSettings:
        """The live table's operational settings (DescribeTable, DescribeContinuousBackups,
        DescribeContributorInsights, ListTagsOfResource); those the endpoint has no API for
        are named in ``unknown``. ``dynaorm check`` compares them with
        ``declared_settings``."""
        from dynaorm.core.settings import settings_p

        found: TableSettings = self._run(settings_p(self), "describe_table")
        return found

    def delete(self, wait: float = 300.0) -> None:
        """Delete the table (and its key table, with ``key_scope``: every tenant's key
        with it); no error if it does not exist."""
        self._run(delete_p(self, wait), "delete_table")
        if self.key_scope is not None:
            self._run(delete_p(key_schema(self), wait), "delete_table")
            release(self)  # (its keys and tombstones went with it)



def _held(module: str, name: str) -> Table:
    """The table a module attribute holds (a pickled :class:`Table`)."""
    table = getattr(importlib.import_module(module), name)
    if not isinstance(table, Table):
        raise pickle.UnpicklingError(f"{module}.{name} is no Table")
    return table
