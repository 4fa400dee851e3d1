"""Tables and their secondary indexes."""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from dynaorm.errors import DynaormError, RequestError
from dynaorm.model.streams import Change, iter_changes
from dynaorm.transport.config import default_session, resolve_max_attempts
from dynaorm.transport.events import RequestEvent
from dynaorm.transport.sync import Transport, check_wire

__all__ = ["GSI", "LSI", "Table"]

Projection = str | Sequence[str]
_STREAM_VIEWS = frozenset({"NEW_AND_OLD_IMAGES", "NEW_IMAGE", "OLD_IMAGE", "KEYS_ONLY"})
_NAME = re.compile(r"[A-Za-z0-9_.-]{3,255}\Z")
_Hook = TypeVar("_Hook", bound=Callable[[RequestEvent], object])


_CAPACITY_MODES = ("INDEXES", "TOTAL", "NONE")


def _check_capacity(table: str, value: object) -> None:
    if value is not None and value not in _CAPACITY_MODES:
        raise DynaormError(f"table {table!r}: return_consumed_capacity must be one of "
                           f"{list(_CAPACITY_MODES)} or None, got {value!r}")


def _check_name(kind: str, name: object) -> None:
    """DynamoDB's rule for table and index names (moto is laxer: check it here)."""
    if not isinstance(name, str) or not _NAME.match(name):
        raise DynaormError(f"invalid {kind} name {name!r}: DynamoDB needs 3 to 255 characters "
                           "from a-z, A-Z, 0-9, '_', '-' and '.'")


def _projection(projection: Projection, type_attribute: Sequence[str] = ()) -> dict[str, Any]:
    if isinstance(projection, str):
        kind = projection.upper()
        if kind not in ("ALL", "KEYS_ONLY"):
            raise DynaormError(f"projection must be 'ALL', 'KEYS_ONLY' or a list of "
                               f"attribute names, got {projection!r}")
        return {"ProjectionType": kind}
    # (0.2) the type attribute rides along, so reads can select types on the server
    extra = [a for a in type_attribute if a not in projection]
    return {"ProjectionType": "INCLUDE", "NonKeyAttributes": [*projection, *extra]}


@dataclass(frozen=True)
class GSI:
    """A global secondary index: its own partition key and optional sort key attributes."""

    name: str
    """The index name."""
    pk: str
    """The index's partition key attribute."""
    sk: str | None = None
    """The index's sort key attribute (``None``: partition key only)."""
    projection: Projection = "ALL"
    """What the index holds: ``"ALL"``, ``"KEYS_ONLY"`` or the attribute names it includes."""

    @property
    def is_local(self) -> bool:
        """``False``: a GSI has its own partition key."""
        return False


@dataclass(frozen=True)
class LSI:
    """A local secondary index: the table's partition key with another sort key attribute."""

    name: str
    """The index name."""
    sk: str
    """The index's sort key attribute (its partition key is the table's)."""
    projection: Projection = "ALL"
    """What the index holds: ``"ALL"``, ``"KEYS_ONLY"`` or the attribute names it includes."""

    @property
    def is_local(self) -> bool:
        """``True``: an LSI shares the table's partition key."""
        return True


class Table:
    """A DynamoDB table shared by any number of entity types (single-table design).

    ``wire``: how sync sessions send requests: ``"dynaorm"`` (the default) renders, signs
    (botocore's SigV4 and credentials), sends and decodes DynamoDB's JSON protocol itself
    (:mod:`dynaorm.wire`, configured from the table's botocore client, so every botocore
    configuration applies); ``"botocore"`` sends through the botocore :attr:`client`'s
    methods (needed when code hooks that client: event handlers, ``Stubber``, recorded
    fixtures). moto's in-process mock always gets the botocore client. Requests, retries,
    errors, logs and events are the same on both; see ``docs/guide/wire.md``.
    """

    def __init__(self, name: str, pk: str = "pk", sk: str | None = "sk", *,
                 indexes: Sequence[GSI | LSI] = (), type_attribute: str | None = "_type",
                 key_types: Mapping[str, str] | None = None, ttl: str | None = None,
                 endpoint_url: str | None = None, region: str | None = None,
                 max_attempts: int | None = None, max_wait: float = 10.0,
                 cursor_secret: str | bytes | None = None,
                 stream: str | None = None,
                 return_consumed_capacity: str | None = None,
                 transport: Transport | None = None, wire: str = "dynaorm") -> None:
        _check_name("table", name)
        self.wire = check_wire(name, wire)
        """``"dynaorm"`` or ``"botocore"``: the wire sessions send over (see above)."""
        if max_attempts is not None and (not isinstance(max_attempts, int)
                                         or isinstance(max_attempts, bool) or max_attempts < 1):
            raise DynaormError(f"table {name!r}: max_attempts must be an int >= 1, "
                               f"got {max_attempts!r}")
        if not isinstance(max_wait, int | float) or max_wait < 0:
            raise DynaormError(f"table {name!r}: max_wait must be a number of seconds >= 0, "
                               f"got {max_wait!r}")
        if stream is not None and stream not in _STREAM_VIEWS:
            raise DynaormError(f"table {name!r}: stream must be one of {sorted(_STREAM_VIEWS)}, "
                               f"got {stream!r}")
        _check_capacity(name, return_consumed_capacity)
        self._capacity = return_consumed_capacity
        self._max_attempts = max_attempts  # None: AWS_MAX_ATTEMPTS, the profile's, else 5
        self.max_wait = float(max_wait)
        """The most seconds all retries of one request may wait in all."""
        self.cursor_secret = cursor_secret
        """The key page cursors are signed with (else ``DYNAORM_CURSOR_SECRET``, else random)."""
        self.stream = stream
        """The stream view type ``create()`` enables, if any."""
        self.name = name
        """The table name."""
        self.pk = pk
        """The partition key attribute."""
        self.sk = sk
        """The sort key attribute (``None``: a table with a partition key only)."""
        self.type_attribute = type_attribute
        """The discriminator attribute; ``None``: items are matched to entities by key shape."""
        self.ttl = ttl
        """The TTL attribute ``create()`` enables (UpdateTimeToLive), if any."""
        self.endpoint_url = endpoint_url
        """The endpoint given (``None``: the configured one, or AWS's for the region)."""
        self.region = region
        """The region given (``None``: the configured one)."""
        self.indexes: dict[str, GSI | LSI] = {}
        """The secondary indexes, by name."""
        for index in indexes:
            _check_name("index", index.name)
            if index.name in self.indexes:
                raise DynaormError(f"table {name!r}: index {index.name!r} declared twice")
            if isinstance(index, LSI) and sk is None:
                raise DynaormError(f"table {name!r}: an LSI needs a table with a sort key")
            self.indexes[index.name] = index
        key_attrs = {pk, sk} | {a for i in self.indexes.values()
                                for a in ((i.sk,) if isinstance(i, LSI) else (i.pk, i.sk))}
        self.key_types: dict[str, str] = {}
        """Key attribute -> ``"N"`` or ``"B"``, for the key attributes that are not strings."""
        for attr, kind in dict(key_types or {}).items():
            if kind not in ("S", "N", "B"):
                raise DynaormError(f"table {name!r}: key_types[{attr!r}] must be 'S', 'N' or "
                                   f"'B', got {kind!r}")
            if attr not in key_attrs:
                raise DynaormError(f"table {name!r}: key_types names {attr!r}, which is not a "
                                   "key attribute of the table or of an index")
            if kind != "S":
                self.key_types[attr] = kind
        if ttl is not None and (not isinstance(ttl, str) or not ttl or ttl in key_attrs
                                or ttl == type_attribute):
            raise DynaormError(f"table {name!r}: ttl must name a non-key attribute, "
                               f"got {ttl!r}")
        self.entities: dict[str, type[Any]] = {}  # the Entity classes, by type name
        """The entity classes mapped onto this table, by type name."""
        self._listeners: list[Callable[[RequestEvent], object]] = []
        self._transport = transport
        self._transport_lock = threading.Lock()
        if transport is not None:
            transport.listeners = self._listeners
            transport.capacity = return_consumed_capacity

    @property
    def return_consumed_capacity(self) -> str | None:
        """``ReturnConsumedCapacity`` of every request that takes one (reads and writes):
        ``"INDEXES"``, ``"TOTAL"`` or ``"NONE"``; ``None`` (the default): writes ask for
        ``INDEXES`` (:class:`~dynaorm.CommitResult` sums them), reads for nothing. The units
        are in each :class:`~dynaorm.RequestEvent` and log record."""
        return self._capacity

    @return_consumed_capacity.setter
    def return_consumed_capacity(self, value: str | None) -> None:
        _check_capacity(self.name, value)
        self._capacity = value
        if self._transport is not None:
            self._transport.capacity = value

    # -- transport -----------------------------------------------------------------
    @property
    def transport(self) -> Transport:
        """The transport used by sessions on this table (created on first use)."""
        transport = self._transport
        if transport is not None:
            return transport
        with self._transport_lock:  # threads racing to the first use get one transport
            transport = self._transport
            if transport is None:
                attempts, session = self._max_attempts, None
                if attempts is None:  # botocore's max_attempts; the client reuses the session
                    session = default_session()
                    attempts = resolve_max_attempts(None, session, self.name)
                transport = Transport(self.endpoint_url, self.region,
                                      max_attempts=attempts, max_wait=self.max_wait,
                                      table=self.name, session=session, wire=self.wire)
                transport.listeners = self._listeners
                transport.capacity = self._capacity
                self._transport = transport
        return transport

    @transport.setter
    def transport(self, transport: Transport) -> None:
        transport.listeners = self._listeners
        self._transport = transport

    @property
    def max_attempts(self) -> int:
        """Every request is attempted at most this many times in all (one retry layer):
        ``Table(max_attempts=)``, else ``AWS_MAX_ATTEMPTS`` / the profile's ``max_attempts``
        (read as botocore reads them), else 5."""
        if self._max_attempts is not None:
            return self._max_attempts
        return self.transport.max_attempts

    @max_attempts.setter
    def max_attempts(self, value: int) -> None:
        self._max_attempts = value

    @property
    def client(self) -> Any:
        """The table's botocore client (one per table, created on first use). Sync sessions
        send through it with ``wire="botocore"`` (register botocore event handlers on
        ``client.meta.events`` then); dynaorm's own wire is configured from it."""
        return self.transport.client

    def on_request(self, fn: _Hook) -> _Hook:
        """Call ``fn(event)`` after every attempt of every request on this table (a
        :class:`~dynaorm.RequestEvent`); returns ``fn``, so it also works as a decorator."""
        self._listeners.append(fn)
        return fn

    def connect(self, endpoint_url: str | None = None, region: str | None = None) -> Table:
        """Point this table at another endpoint (DynamoDB Local, a test backend)."""
        self.endpoint_url = endpoint_url
        if region is not None:
            self.region = region
        self._transport = None
        return self

    # -- entity registry -----------------------------------------------------------
    def register(self, entity: type[Any], type_name: str) -> None:
        """Record ``entity`` under ``type_name`` (called when an entity class is defined)."""
        other = self.entities.get(type_name)
        if other is not None and (other.__module__, other.__qualname__) != (
                entity.__module__, entity.__qualname__):
            raise DynaormError(
                f"table {self.name!r}: type name {type_name!r} is taken by "
                f"{other.__module__}.{other.__qualname__}; give "
                f"{entity.__module__}.{entity.__qualname__} its own type name with "
                f"'class Meta: type_name = \"...\"' (re-defining a class of the same "
                f"module replaces it)")
        self.entities[type_name] = entity

    def key_type(self, attr: str | None) -> str:
        """The DynamoDB type of a key attribute: ``"S"`` unless ``key_types`` says ``N``/``B``."""
        return "S" if attr is None else self.key_types.get(attr, "S")

    @property
    def string_keys(self) -> bool:
        """Whether the table's own key attributes are strings (unique rules, versioning and
        sharding need that)."""
        return self.key_type(self.pk) == "S" and self.key_type(self.sk) == "S"

    def index(self, name: str) -> GSI | LSI:
        """The index declared as ``name`` (a :class:`DynaormError` names the declared ones)."""
        try:
            return self.indexes[name]
        except KeyError:
            known = ", ".join(self.indexes) or "none"
            raise DynaormError(f"table {self.name!r} has no index {name!r} "
                               f"(declared: {known})") from None

    def key_attributes(self, index: str | None = None) -> tuple[str, str | None]:
        """(partition attribute, sort attribute) of the table or of one index."""
        if index is None:
            return self.pk, self.sk
        spec = self.index(index)
        if isinstance(spec, LSI):
            return self.pk, spec.sk
        return spec.pk, spec.sk

    # -- schema --------------------------------------------------------------------
    def definition(self) -> dict[str, Any]:
        """The CreateTable request for this table and all its indexes."""
        attrs = {self.pk}
        schema = [{"AttributeName": self.pk, "KeyType": "HASH"}]
        if self.sk:
            attrs.add(self.sk)
            schema.append({"AttributeName": self.sk, "KeyType": "RANGE"})
        gsis: list[dict[str, Any]] = []
        lsis: list[dict[str, Any]] = []
        for index in self.indexes.values():
            if isinstance(index, GSI):
                keys = [{"AttributeName": index.pk, "KeyType": "HASH"}]
                attrs.add(index.pk)
                if index.sk:
                    keys.append({"AttributeName": index.sk, "KeyType": "RANGE"})
                    attrs.add(index.sk)
                gsis.append({"IndexName": index.name, "KeySchema": keys,
                             "Projection": _projection(index.projection,
                                                       self._carried)})
            else:
                attrs.add(index.sk)
                lsis.append({"IndexName": index.name, "KeySchema": [
                    {"AttributeName": self.pk, "KeyType": "HASH"},
                    {"AttributeName": index.sk, "KeyType": "RANGE"}],
                    "Projection": _projection(index.projection, self._carried)})
        request: dict[str, Any] = {
            "TableName": self.name,
            "KeySchema": schema,
            "AttributeDefinitions": [{"AttributeName": a, "AttributeType": self.key_type(a)}
                                     for a in sorted(attrs)],
            "BillingMode": "PAY_PER_REQUEST",
        }
        if gsis:
            request["GlobalSecondaryIndexes"] = gsis
        if lsis:
            request["LocalSecondaryIndexes"] = lsis
        if self.stream is not None:
            request["StreamSpecification"] = {"StreamEnabled": True,
                                              "StreamViewType": self.stream}
        return request

    @property
    def type_attr(self) -> str:
        """The type attribute's name (``""`` on a table without one: no item has it)."""
        return self.type_attribute or ""

    @property
    def _carried(self) -> tuple[str, ...]:
        """Attributes an INCLUDE projection always carries (the type, the TTL)."""
        return tuple(a for a in (self.type_attribute, self.ttl) if a)

    def exists(self) -> bool:
        """Whether the table exists on the configured endpoint."""
        return self._status() is not None

    def _status(self) -> str | None:
        try:
            out = self.transport.call("DescribeTable", {"TableName": self.name})
        except RequestError as exc:
            if exc.code == "ResourceNotFoundException":
                return None
            raise
        return str(out["Table"].get("TableStatus", "ACTIVE"))

    def create(self, wait: float = 300.0) -> None:
        """Create the table (on-demand billing) with every index; no error if it exists."""
        try:
            self.transport.call("CreateTable", self.definition())
        except RequestError as exc:
            if exc.code != "ResourceInUseException":
                raise
        self._wait(lambda status: status == "ACTIVE", wait)
        if self.stream is not None:
            self._enable_stream(wait)
        if self.ttl is not None:
            self._enable_ttl()

    def _enable_ttl(self) -> None:
        """Enable TTL on the declared attribute (nothing to do when it already is)."""
        try:
            out = self.transport.call("DescribeTimeToLive", {"TableName": self.name})
            current = out.get("TimeToLiveDescription") or {}
            if current.get("AttributeName") == self.ttl and current.get(
                    "TimeToLiveStatus") in ("ENABLED", "ENABLING"):
                return
            self.transport.call("UpdateTimeToLive", {
                "TableName": self.name,
                "TimeToLiveSpecification": {"Enabled": True, "AttributeName": self.ttl}})
        except RequestError as exc:
            raise DynaormError(f"cannot enable TTL on attribute {self.ttl!r} of table "
                               f"{self.name!r}: {exc}") from exc

    def _enable_stream(self, wait: float) -> None:
        """Enable the declared stream on a table that existed without one."""
        out = self.transport.call("DescribeTable", {"TableName": self.name})["Table"]
        current = out.get("StreamSpecification") or {}
        if current.get("StreamEnabled"):
            if current.get("StreamViewType") != self.stream:
                raise DynaormError(
                    f"table {self.name!r} has a {current.get('StreamViewType')} stream, not "
                    f"{self.stream}: disable it first (UpdateTable) to change its view type")
            return
        spec = {"StreamEnabled": True, "StreamViewType": self.stream}
        try:
            self.transport.call("UpdateTable", {"TableName": self.name,
                                                "StreamSpecification": spec})
        except RequestError as exc:
            raise DynaormError(f"cannot enable the stream of table {self.name!r}: {exc}"
                               ) from exc
        self._wait(lambda status: status == "ACTIVE", wait)

    def changes(self, records: Iterable[Mapping[str, Any]] | Mapping[str, Any]
                ) -> Iterator[Change]:
        """Classify DynamoDB Streams records of this table (a Lambda event's
        ``Records`` or boto3's GetRecords output) into :class:`~dynaorm.Change` objects."""
        return iter_changes(self, records)

    def delete(self, wait: float = 300.0) -> None:
        """Delete the table; no error if it does not exist."""
        try:
            self.transport.call("DeleteTable", {"TableName": self.name})
        except RequestError as exc:
            if exc.code != "ResourceNotFoundException":
                raise
        self._wait(lambda status: status is None, wait)

    def _wait(self, done: Any, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        delay = 0.05
        while not done(self._status()):
            if time.monotonic() > deadline:
                raise DynaormError(f"table {self.name!r} did not settle in {timeout}s")
            time.sleep(delay)
            delay = min(delay * 2, 2.0)

    def __repr__(self) -> str:
        return f"Table({self.name!r}, pk={self.pk!r}, sk={self.sk!r})"
