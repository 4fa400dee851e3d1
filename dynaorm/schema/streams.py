"""DynamoDB Streams records -> :class:`Change` objects (pure: no I/O).

``table.changes(records)`` accepts both shapes a consumer meets:

- a Lambda event's ``Records`` (binary values as base64 strings, ``ApproximateCreationDateTime``
  as epoch seconds), and
- boto3's ``GetRecords`` output (binary as ``bytes``, times as ``datetime``).

Each record is classified the way dynaorm wrote it: an entity's row, the latest copy or a
version row of a versioned entity, a unique guard item (owner class and unique field
read from the guard), or a row another rule of an entity adds to its writes (role
``"rule"``, a rule a user registers included: :func:`~dynaorm.schema.unclaimed.rule_row`).
Items no entity owns come back with ``entity=None`` and role ``"row"``. Images are
decoded into entity objects exactly as a read would decode them.
"""

import base64
import binascii
import functools
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from dataclasses import field as _field
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any, Literal, Protocol

from dynaorm._types import AttributeValue, Item
from dynaorm.errors import DynaormError, InvalidValueError, ItemDecodeError
from dynaorm.schema.rules.receipts import own_row
from dynaorm.schema.rules.unique import OWNER_TYPE, UNIQUE_FIELD
from dynaorm.schema.rules.versioned import parse_version_sk
from dynaorm.schema.unclaimed import claimant, rule_row
from dynaorm.values.codec import decode_value
from dynaorm.values.keys import GUARD_TYPE, key_value, named

ChangeKind = Literal["insert", "modify", "remove"]
ChangeRole = Literal["row", "latest", "version", "guard", "rule"]

_KINDS: dict[str, ChangeKind] = {"INSERT": "insert", "MODIFY": "modify", "REMOVE": "remove"}
_TTL_PRINCIPAL = "dynamodb.amazonaws.com"


class StreamTable(Protocol):
    """What classifying a record reads of its :class:`~dynaorm.Table` (this module sits
    below the table and the entity spec: an entity's spec is read from the class's
    ``__dynaorm_spec__``)."""

    name: str
    pk: str
    sk: str | None
    type_attribute: str | None
    entities: dict[str, type[Any]]
    retired: dict[str, type[Any]]


@dataclass(frozen=True)
class Change:
    """One stream record, classified.

    ``kind`` is what happened to the item; ``entity`` the entity class it belongs to (for a
    guard or another rule's row: the entity whose writes carry it), or ``None`` for an item
    no entity owns; ``role`` which of the entity's items it is. ``old``/``new`` are entity
    objects decoded from the record's images (``None`` when the stream's view type does not
    carry that image, for guards and rules' rows, and for items no entity owns); they are
    decoded when first read, so a consumer that skips other entities' changes never pays
    for (or fails on) their images. ``field`` is the unique field of a guard, ``rule`` the
    name of the rule whose row it is (role ``"rule"``: its images in ``old_item`` and
    ``new_item``).
    """

    kind: ChangeKind
    """What happened to the item (``"insert"``, ``"modify"``, ``"remove"``)."""
    entity: type[Any] | None
    """The entity class the item belongs to (for a guard: its owner's), ``None`` for an item no
    entity owns."""
    role: ChangeRole
    """Which of the entity's items this is (the row, a guard, a version row, the latest copy,
    or ``"rule"``: a row another rule adds to the entity's writes, named by :attr:`rule`)."""
    field: str | None = None
    """The unique field of a guard item (``None`` for other roles)."""
    key: dict[str, Any] = _field(default_factory=dict)
    """The item's table key, plain values (``{"pk": "USER#1", "sk": "PROFILE"}``)."""
    version: int | None = None
    """For a version row (or a latest copy: 0), the version number its sort key carries."""
    old_item: Item | None = _field(default=None, repr=False)
    """The image before the change, wire form (binary as ``bytes``); ``None`` when not in the
    record."""
    new_item: Item | None = _field(default=None, repr=False)
    """The image after the change, wire form (binary as ``bytes``); ``None`` when not in the
    record."""
    time: datetime | None = None
    """``ApproximateCreationDateTime`` as an aware UTC datetime."""
    sequence_number: str | None = None
    """The record's ``SequenceNumber`` (orders records of one item)."""
    event_id: str | None = None
    """The record's ``eventID``."""
    expired: bool = False
    """True when DynamoDB's TTL process removed the item (not a user's delete)."""
    rule: str | None = None
    """For a rule's row (role ``"rule"``), the rule's name (``Rule.name``)."""
    prepare: Callable[[type[Any], Item], object] | None = _field(default=None, repr=False,
                                                                 compare=False)
    """What asks for the key material an image needs before it is decoded (an entity
    with ``Encrypted`` fields: ``Table.changes`` gives one that asks through the table's
    client; ``None``: nothing is asked)."""

    @functools.cached_property
    def old(self) -> Any:
        """The entity before the change (from ``OldImage``), or ``None``."""
        return self._decode(self.old_item)

    @functools.cached_property
    def new(self) -> Any:
        """The entity after the change (from ``NewImage``), or ``None``."""
        return self._decode(self.new_item)

    def _decode(self, item: Item | None) -> Any:
        cls = self.entity
        if cls is None or item is None or self.role in ("guard", "rule"):
            return None
        if self.prepare is not None:
            self.prepare(cls, item)
        try:
            spec = cls.__dynaorm_spec__
            before = spec.rules.before  # (a row of its previous layout reads as current)
            if before.stores(spec, item):
                return cls.model_validate(before.values(spec, item))
            return cls._from_item(item)
        except ValueError as exc:  # ItemDecodeError, or a value no key template takes
            raise ItemDecodeError(f"stream record {self.event_id or '?'}: the {cls.__name__} "
                                  f"image at {self.key} does not validate: {exc}",
                                  entity=cls, key=dict(self.key)) from exc


# -- normalising the two record shapes -----------------------------------------------------
def _binary(raw: Any, where: str) -> bytes:
    if isinstance(raw, bytes | bytearray | memoryview):
        return bytes(raw)
    if isinstance(raw, str):
        try:
            return base64.b64decode(raw, validate=True)
        except (binascii.Error, ValueError) as exc:
            raise InvalidValueError(f"{where}: binary value is not base64: {raw[:40]!r}"
                                    ) from exc
    raise InvalidValueError(f"{where}: binary value must be bytes or base64 text, got "
                            f"{type(raw).__name__}")


def normalize_value(av: Mapping[str, Any], where: str) -> AttributeValue:
    """One AttributeValue from either record shape in the wire form reads use
    (binary as ``bytes``, numbers as strings), nested maps, lists and sets included."""
    if len(av) != 1:
        raise InvalidValueError(f"{where}: not an AttributeValue: {dict(av)!r}")
    ((tag, raw),) = av.items()
    if tag == "B":
        return {"B": _binary(raw, where)}
    if tag == "BS":
        return {"BS": [_binary(v, where) for v in raw]}
    if tag == "M":
        return {"M": {k: normalize_value(v, f"{where}.{k}") for k, v in raw.items()}}
    if tag == "L":
        return {"L": [normalize_value(v, f"{where}[{i}]") for i, v in enumerate(raw)]}
    if tag == "N":
        return {"N": str(raw)}
    if tag == "NS":
        return {"NS": [str(v) for v in raw]}
    if tag in ("S", "BOOL", "NULL", "SS"):
        return {tag: raw}
    raise InvalidValueError(f"{where}: unknown AttributeValue type {tag!r}")


def normalize_item(item: Mapping[str, Any] | None, where: str = "image") -> Item | None:
    """An image or key from either record shape, in wire form (see :func:`normalize_value`)."""
    if item is None:
        return None
    return {name: normalize_value(av, f"{where} attribute {name!r}") for name, av in item.items()}


def _time(raw: Any) -> datetime | None:
    if raw is None:
        return None
    if isinstance(raw, datetime):
        return raw.replace(tzinfo=UTC) if raw.tzinfo is None else raw.astimezone(UTC)
    if isinstance(raw, int | float | Decimal | str):
        return datetime.fromtimestamp(float(raw), UTC)
    raise InvalidValueError(f"ApproximateCreationDateTime: unexpected {raw!r}")


# -- classification ------------------------------------------------------------------------
def _key(item: Item | None, attr: str | None) -> str | None:
    """A key attribute as a rendered key value (numbers and binary too)."""
    if item is None or attr not in item:
        return None
    try:
        return key_value(item[attr])
    except DynaormError:
        return None


def _specs(table: StreamTable) -> list[Any]:
    """The specs of the table's entities (each class's own ``__dynaorm_spec__``)."""
    return [cls.__dynaorm_spec__ for cls in table.entities.values()]


def _match_guard(table: StreamTable, pk: str) -> tuple[type[Any], str] | None:
    """The (owner class, unique field) whose guard key shape fits ``pk``, if exactly one."""
    found = []
    for spec in _specs(table):
        for rule in spec.uniques:
            rest = pk
            if rule.scope is not None:
                parts = pk.split("#")
                n = rule.scope.source.count("#") + 1
                if len(parts) <= n or rule.scope.parse_key("#".join(parts[:n])) is None:
                    continue
                rest = "#".join(parts[n:])
            if rest.startswith(rule.prefix + "#") and len(rest) > len(rule.prefix) + 1:
                found.append((spec.cls, rule.field))
    return found[0] if len(found) == 1 else None


def _match_row(table: StreamTable, image: Item, pk: str, sk: str | None) -> Any:
    """The one entity whose key templates fit a key (for records without a discriminator),
    as reads decide it: a row of a rule's kind narrower than an entity's templates is the
    rule's (:func:`~dynaorm.schema.unclaimed.ruled_over`), a literal key outranks a
    template (``Meta.overlaps``), a previous layout's literal key too (its unmigrated row
    is no other entity's: :func:`~dynaorm.schema.unclaimed.claimant`)."""
    found = []
    for spec in _specs(table):
        if spec.pk.parse_key(pk) is None:
            continue
        if spec.sk is not None and sk is not None:
            base = sk
            if spec.versioned:
                parsed = parse_version_sk(sk)
                if parsed is None:
                    continue
                base = parsed[1]
            if spec.sk.parse_key(base) is None:
                continue
        if claimant(spec, image) is None:  # (a rule's row, another's literal key: theirs)
            found.append(spec)
    if len(found) > 1:  # a literal key outranks a template where both fit (Meta.overlaps)
        found = [s for s in found if not any(w in found for w, *_ in s.literal_claims())]
    return found[0] if len(found) == 1 else None


def _kind(record: Mapping[str, Any], where: str) -> ChangeKind:
    """What happened to the item: the record's ``eventName``, refused unless known."""
    name = record.get("eventName")
    kind = _KINDS.get(str(name))
    if kind is None:
        raise DynaormError(f"{where}: unknown eventName {name!r} (a DynamoDB Streams record "
                           "has INSERT, MODIFY or REMOVE)")
    return kind


def _check_source(table: StreamTable, record: Mapping[str, Any], where: str) -> None:
    """Refuse a record whose ``eventSourceARN`` names another table."""
    arn = record.get("eventSourceARN")
    if isinstance(arn, str) and "/" in arn and arn.split("/")[1] != table.name:
        raise DynaormError(f"{where}: the record comes from table {arn.split('/')[1]!r}, "
                           f"not {table.name!r}")


def _plain_key(table: StreamTable, keys: Item, image: Item) -> dict[str, Any]:
    """The item's table key as plain values: the record's ``Keys``, else the key
    attributes of its image."""
    return {a: decode_value(av) for a, av in keys.items()} or {
        a: decode_value(image[a]) for a in (table.pk, table.sk) if a and a in image}


def _expired(record: Mapping[str, Any]) -> bool:
    """Whether DynamoDB's TTL process (not a user) removed the item."""
    identity = record.get("userIdentity") or {}
    return bool(identity.get("type") == "Service"
                and identity.get("principalId") == _TTL_PRINCIPAL)


def _guard_of(table: StreamTable, image: Item, type_name: str | None, pk: str | None,
              sk: str | None) -> tuple[type[Any] | None, str | None] | None:
    """For a unique guard item, ``(its owner's class, the unique field)``; ``None`` for
    any other item. A guard carries the guard type name; an item without a type name is
    one when its pk (equal to its sk, on a table with a sort key) has the guard key shape
    of exactly one unique rule."""
    if type_name == GUARD_TYPE:  # (its owner's type name: current, or a previous layout's)
        owner = named(image, OWNER_TYPE) or ""
        return table.entities.get(owner) or table.retired.get(owner), named(image, UNIQUE_FIELD)
    if type_name is not None or pk is None or (table.sk is not None and pk != sk):
        return None
    return _match_guard(table, pk)


def _row_spec(table: StreamTable, image: Item, type_name: str | None, pk: str | None,
              sk: str | None) -> Any:
    """The spec of the entity an item (not a guard) belongs to: by its type name, or, for
    an item without one, the one entity whose key templates fit its key; ``None``: no
    entity owns it."""
    if type_name is None:
        return None if pk is None else _match_row(table, image, pk, sk)
    # (a type name a class's Meta.previous retired: a row of its previous layout)
    cls = table.entities.get(type_name) or table.retired.get(type_name)
    return getattr(cls, "__dynaorm_spec__", None)


def _role(spec: Any, sk: str | None) -> tuple[ChangeRole, int | None]:
    """Which of the entity's items a sort key is, and the version it carries: a versioned
    entity's latest copy (version 0) or a version row, else the entity's row."""
    if spec.versioned and sk is not None and (parsed := parse_version_sk(sk)) is not None:
        return ("version" if parsed[0] else "latest"), parsed[0]
    return "row", None


def parse_change(table: StreamTable, record: Mapping[str, Any],
                 prepare: Callable[[type[Any], Item], object] | None) -> Change:
    """Classify one stream record (either shape) of ``table`` (``prepare``: see
    :attr:`Change.prepare`)."""
    event_id = record.get("eventID")
    where = f"stream record {event_id or '?'}"
    kind = _kind(record, where)
    _check_source(table, record, where)
    data = record.get("dynamodb")
    if not isinstance(data, Mapping):
        raise DynaormError(f"{where}: no 'dynamodb' section")
    # an empty image is no image (moto sends OldImage {} for an UpdateItem that creates)
    old_item = normalize_item(data.get("OldImage") or None, f"{where} OldImage")
    new_item = normalize_item(data.get("NewImage") or None, f"{where} NewImage")
    keys = normalize_item(data.get("Keys"), f"{where} Keys") or {}
    image = new_item or old_item or keys
    common: dict[str, Any] = {
        "key": _plain_key(table, keys, image), "old_item": old_item, "new_item": new_item,
        "time": _time(data.get("ApproximateCreationDateTime")),
        "sequence_number": data.get("SequenceNumber"), "event_id": event_id,
        "expired": _expired(record), "prepare": prepare,
    }
    entity, role, version, name = classify(table, image)
    if role == "rule":
        return Change(kind, entity, role, rule=name, **common)
    return Change(kind, entity, role, field=name, version=version, **common)


def classify(table: StreamTable, image: Item
             ) -> tuple[type[Any] | None, ChangeRole, int | None, str | None]:
    """Which row a stored item (or an image, or a key) of ``table`` is, the way dynaorm
    wrote it: ``(entity class, role, version, name)`` -- an entity's row, a versioned
    entity's latest copy (version 0) or version row, a unique guard (its owner's class,
    ``name`` its field), or a row another rule of an entity adds to its writes (role
    ``"rule"``, ``name`` the rule's: :func:`~dynaorm.schema.unclaimed.rule_row`);
    ``(None, "row", None, None)`` for an item no entity owns."""
    pk = _key(image, table.pk)
    sk = _key(image, table.sk)
    type_name = named(image, table.type_attribute)
    guard = _guard_of(table, image, type_name, pk, sk)
    if guard is not None:
        return guard[0], "guard", None, guard[1]
    # (an item without a type name is told by its key's shape: never an own row's)
    if type_name is None and own_row(table, image):
        return None, "row", None, None
    spec = _row_spec(table, image, type_name, pk, sk)
    if spec is None:
        ruled = rule_row(table, image)
        return (None, "row", None, None) if ruled is None else (
            ruled.entity, "rule", None, ruled.rule)
    role, version = _role(spec, sk)
    return spec.cls, role, version, None


def iter_changes(table: StreamTable, records: Iterable[Mapping[str, Any]] | Mapping[str, Any],
                 prepare: Callable[[type[Any], Item], object] | None = None
                 ) -> Iterator[Change]:
    """Classify each record; ``records`` may also be the whole event or GetRecords output
    (a mapping with ``"Records"``; ``prepare``: see :attr:`Change.prepare`)."""
    if isinstance(records, Mapping):
        if "Records" not in records:
            raise DynaormError("expected stream records, or a mapping with 'Records' "
                               "(a Lambda event or a GetRecords response)")
        records = records["Records"]
    for record in records:
        if not isinstance(record, Mapping):
            raise DynaormError(f"expected a stream record (a mapping), got {record!r}")
        change = parse_change(table, record, prepare)
        if change.entity is None and own_row(table, change.new_item or change.old_item or {
                a: {"S": v} for a, v in change.key.items() if isinstance(v, str)}):
            continue  # (a receipt, a Powertools record: dynaorm's own, nobody's change)
        yield change
