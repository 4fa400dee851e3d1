"""Tables and their secondary indexes."""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from .errors import DynaormError
from .events import RequestEvent
from .transport import RequestFailed, Transport

if TYPE_CHECKING:
    from .entity import Entity
    from .streams import Change

__all__ = ["GSI", "LSI", "Table"]

Projection = str | Sequence[str]
_STREAM_VIEWS = frozenset({"NEW_AND_OLD_IMAGES", "NEW_IMAGE", "OLD_IMAGE", "KEYS_ONLY"})
_NAME = re.compile(r"[A-Za-z0-9_.-]{3,255}\Z")
_Hook = TypeVar("_Hook", bound=Callable[[RequestEvent], object])


def _check_name(kind: str, name: object) -> None:
    """DynamoDB's rule for table and index names (moto is laxer: check it here)."""
    if not isinstance(name, str) or not _NAME.match(name):
        raise DynaormError(f"invalid {kind} name {name!r}: DynamoDB needs 3 to 255 characters "
                           "from a-z, A-Z, 0-9, '_', '-' and '.'")


def _projection(projection: Projection, type_attribute: str | None = None) -> dict[str, Any]:
    if isinstance(projection, str):
        kind = projection.upper()
        if kind not in ("ALL", "KEYS_ONLY"):
            raise DynaormError(f"projection must be 'ALL', 'KEYS_ONLY' or a list of "
                               f"attribute names, got {projection!r}")
        return {"ProjectionType": kind}
    # (0.2) the type attribute rides along, so reads can select types on the server
    extra = [type_attribute] if type_attribute and type_attribute not in projection else []
    return {"ProjectionType": "INCLUDE", "NonKeyAttributes": [*projection, *extra]}


@dataclass(frozen=True)
class GSI:
    """A global secondary index: its own partition key and optional sort key attributes."""

    name: str
    pk: str
    sk: str | None = None
    projection: Projection = "ALL"

    @property
    def is_local(self) -> bool:
        """``False``: a GSI has its own partition key."""
        return False


@dataclass(frozen=True)
class LSI:
    """A local secondary index: the table's partition key with another sort key attribute."""

    name: str
    sk: str
    projection: Projection = "ALL"

    @property
    def is_local(self) -> bool:
        """``True``: an LSI shares the table's partition key."""
        return True


class Table:
    """A DynamoDB table shared by any number of entity types (single-table design)."""

    def __init__(self, name: str, pk: str = "pk", sk: str | None = "sk", *,
                 indexes: Sequence[GSI | LSI] = (), type_attribute: str = "_type",
                 endpoint_url: str | None = None, region: str | None = None,
                 max_attempts: int = 5, max_wait: float = 10.0,
                 cursor_secret: str | bytes | None = None,
                 stream: str | None = None,
                 transport: Transport | None = None) -> None:
        _check_name("table", name)
        if not isinstance(max_attempts, int) or isinstance(max_attempts, bool) or max_attempts < 1:
            raise DynaormError(f"table {name!r}: max_attempts must be an int >= 1, "
                               f"got {max_attempts!r}")
        if not isinstance(max_wait, int | float) or max_wait < 0:
            raise DynaormError(f"table {name!r}: max_wait must be a number of seconds >= 0, "
                               f"got {max_wait!r}")
        if stream is not None and stream not in _STREAM_VIEWS:
            raise DynaormError(f"table {name!r}: stream must be one of {sorted(_STREAM_VIEWS)}, "
                               f"got {stream!r}")
        #: every request is attempted at most this many times in all (one retry layer)
        self.max_attempts = max_attempts
        #: the most seconds all retries of one request may wait in all
        self.max_wait = float(max_wait)
        #: the key page cursors are signed with (else ``DYNAORM_CURSOR_SECRET``, else random)
        self.cursor_secret = cursor_secret
        #: the stream view type ``create()`` enables, if any
        self.stream = stream
        self.name = name
        self.pk = pk
        self.sk = sk
        self.type_attribute = type_attribute
        self.endpoint_url = endpoint_url
        self.region = region
        self.indexes: dict[str, GSI | LSI] = {}
        for index in indexes:
            _check_name("index", index.name)
            if index.name in self.indexes:
                raise DynaormError(f"table {name!r}: index {index.name!r} declared twice")
            if isinstance(index, LSI) and sk is None:
                raise DynaormError(f"table {name!r}: an LSI needs a table with a sort key")
            self.indexes[index.name] = index
        self.entities: dict[str, type[Entity]] = {}
        self._listeners: list[Callable[[RequestEvent], object]] = []
        self._transport = transport
        if transport is not None:
            transport.listeners = self._listeners

    # -- transport -----------------------------------------------------------------
    @property
    def transport(self) -> Transport:
        """The transport used by sessions on this table (created on first use)."""
        transport = self._transport
        if transport is None:
            transport = Transport(self.endpoint_url, self.region,
                                  max_attempts=self.max_attempts, max_wait=self.max_wait,
                                  table=self.name)
            transport.listeners = self._listeners
            self._transport = transport
        return transport

    @transport.setter
    def transport(self, transport: Transport) -> None:
        transport.listeners = self._listeners
        self._transport = transport

    @property
    def client(self) -> Any:
        """The botocore client sync sessions send through (one per table, created on
        first use; register botocore event handlers on ``client.meta.events``)."""
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
    def register(self, entity: type[Entity], type_name: str) -> None:
        """Record ``entity`` under ``type_name`` (called when an entity class is defined)."""
        other = self.entities.get(type_name)
        if other is not None and other.__qualname__ != entity.__qualname__:
            raise DynaormError(
                f"table {self.name!r}: type name {type_name!r} is used by both "
                f"{other.__name__} and {entity.__name__}; set Meta.type_name")
        self.entities[type_name] = entity

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
                             "Projection": _projection(index.projection, self.type_attribute)})
            else:
                attrs.add(index.sk)
                lsis.append({"IndexName": index.name, "KeySchema": [
                    {"AttributeName": self.pk, "KeyType": "HASH"},
                    {"AttributeName": index.sk, "KeyType": "RANGE"}],
                    "Projection": _projection(index.projection, self.type_attribute)})
        request: dict[str, Any] = {
            "TableName": self.name,
            "KeySchema": schema,
            "AttributeDefinitions": [{"AttributeName": a, "AttributeType": "S"}
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

    def exists(self) -> bool:
        """Whether the table exists on the configured endpoint."""
        return self._status() is not None

    def _status(self) -> str | None:
        try:
            out = self.transport.call("DescribeTable", {"TableName": self.name})
        except RequestFailed as exc:
            if exc.code == "ResourceNotFoundException":
                return None
            raise
        return str(out["Table"].get("TableStatus", "ACTIVE"))

    def create(self, wait: float = 300.0) -> None:
        """Create the table (on-demand billing) with every index; no error if it exists."""
        try:
            self.transport.call("CreateTable", self.definition())
        except RequestFailed as exc:
            if exc.code != "ResourceInUseException":
                raise
        self._wait(lambda status: status == "ACTIVE", wait)
        if self.stream is not None:
            self._enable_stream(wait)

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
        except RequestFailed as exc:
            raise DynaormError(f"cannot enable the stream of table {self.name!r}: {exc}"
                               ) from exc
        self._wait(lambda status: status == "ACTIVE", wait)

    def changes(self, records: Iterable[Mapping[str, Any]] | Mapping[str, Any]
                ) -> Iterator[Change]:
        """Classify DynamoDB Streams records of this table (a Lambda event's
        ``Records`` or boto3's GetRecords output) into :class:`~dynaorm.Change` objects."""
        from .streams import iter_changes

        return iter_changes(self, records)

    def delete(self, wait: float = 300.0) -> None:
        """Delete the table; no error if it does not exist."""
        try:
            self.transport.call("DeleteTable", {"TableName": self.name})
        except RequestFailed as exc:
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
