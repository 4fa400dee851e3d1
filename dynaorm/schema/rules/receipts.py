"""Exactly-once receipts (contracts 22 "Exactly once across invocations" and 23 "Receipts
are rows of the plan"): the table-level rule a commit given an idempotency key runs,
answering at the hook points of :class:`~dynaorm.schema.rules.Rule` that fit a commit --

- ``rows`` (:meth:`Receipting.rows`): the rows the plan carries with the commit's own, so
  DynamoDB's limits count them once: a receipt (a Put) in every table the commit writes
  (type :data:`RECEIPT_TYPE`, keyed inside the session's scope by a hash of the scope and
  the key, with an expiry, the digest of all that was staged, what rebuilds the commit's
  result and what default factories made), and a check in every other table the session
  may write, each conditioned on no live receipt at its key: a key is known to every
  table a keyed commit may write. Its attributes are named under dynaorm's prefix
  (:data:`ATTRIBUTES`), never a key or index attribute (a table keyed on one is refused);
- ``prepare`` (:meth:`Receipting.settle`): the reads that settle a failed or lost answer
  (the receipt's key in each table, read consistently) and what they mean
  (:meth:`Receipting.explain`): applied by this very commit, replayed (an earlier commit
  of the same writes: every receipt's digest is this commit's) or a mismatch
  (:class:`~dynaorm.errors.IdempotencyMismatchError`: a receipt of other writes).

The digest compares what the caller gave: a new object's fields a default factory made
(:func:`made`) do not count; a replay puts them back as the first commit made them.

Pure. Phases never import this module: each table builds its own rule
(:class:`Receipts`, :attr:`~dynaorm.schema.table.TableSchema.receipts`), which a commit
reaches through the table of what it writes.
"""

from __future__ import annotations

import base64
import dataclasses
import enum
import hashlib
import json
import math
import os
import time
import warnings
from collections.abc import Callable, Generator, Iterable, Mapping, Sequence
from datetime import date, datetime, timedelta
from datetime import time as dtime
from decimal import Decimal
from typing import Any, Final, NamedTuple

from dynaorm._types import Item, PlainKey
from dynaorm.caches import cache
from dynaorm.errors import (
    DynaormError,
    IdempotencyMismatchError,
    RequestError,
    TransactionTooLargeError,
)
from dynaorm.protocol.events import RECORDER, CommitResult
from dynaorm.schema.rules.keyrings import keyring_of
from dynaorm.values.expressions import Condition, Placeholders
from dynaorm.values.keys import RECEIPT_TYPE, named
from dynaorm.values.limits import MAX_ITEM_BYTES, text_size
from dynaorm.values.records import Built, Fail, Op, Origin, Put, Role

#: a :class:`~dynaorm.schema.table.TableSchema` (not imported: the table builds this rule,
#: an import back would be a circle)
_Home = Any

#: the expiry attribute of a receipt 0.7 wrote on a table without a TTL attribute
EXPIRES: Final = "_expires"
#: a receipt's own attributes: named under dynaorm's prefix, so none is a key or index
#: attribute of a table that keeps receipts (one that is is refused: :meth:`Receipts.start`)
DIGEST, NONCE, REV, AT, RESULT, EXPIRY, MADE = (f"dynaorm:{a}" for a in (
    "digest", "nonce", "rev", "at", "result", "expires", "made"))
ATTRIBUTES: Final = frozenset({DIGEST, NONCE, REV, AT, RESULT, EXPIRY, MADE})


def own_row(table: Any, item: Item | None) -> bool:
    """Whether ``item``, a stored row of ``table`` (or its key), is one of the rows a table
    keeps beside its entities' (a receipt; a surface's, such as a Powertools record:
    :attr:`dynaorm.Table.row_kinds`): never a result, a finding or a
    change, on a table with a type attribute or without one. Told by its partition key,
    in the namespace an entity's key may never render (``{id}`` fits any text): the one
    test of it, which every place that tells an entity's item by its key shape asks
    (:meth:`~dynaorm.schema.spec.EntitySpec.outranked`)."""
    return bool(table.own_row(item))


def _text(value: Any) -> str:
    """A value JSON has no form for, as text (binary as base64)."""
    if isinstance(value, bytes | bytearray):
        return base64.b64encode(bytes(value)).decode()
    return str(value)


#: (what it encodes is built here, never cyclic: no check for cycles)
_JSON = json.JSONEncoder(separators=(",", ":"), default=_text, check_circular=False)


# -- the digest of what was staged ---------------------------------------------------------


def digest(staged: Sequence[Any]) -> str:
    """The digest of the staged writes of a commit: canonical (values by meaning, not by
    representation: a set in any order, a mapping in any order), and independent of the
    order writes were staged in (a commit's writes go to distinct items, atomically: their
    order means nothing). A write's own values count; what rules stamp on it when it is
    written (timestamps) and the version it was loaded at do not, so a second process that
    loads the item after the first commit and stages the same change digests the same;
    nor do the fields of a new object that a default factory made (:func:`made`)."""
    return _digest([_write(entry) for entry in staged])


def _digest(texts: list[str]) -> str:
    return hashlib.sha256("\n".join(sorted(texts)).encode()).hexdigest()


def made(obj: Any) -> frozenset[str]:
    """The fields of ``obj``, an entity object or a model nested in one, that a default
    factory made rather than the caller gave (an id, a time): of a new object (never
    stored), those left to a default factory (not in pydantic's ``model_fields_set``); of
    a loaded entity, none. Only what the caller cannot have changed is left out of the
    digest (:func:`_untouched`): a list a factory made and the caller appended to holds
    what the caller gave."""
    cls = type(obj)
    names = _FACTORIES.get(cls)
    if names is None:
        names = _FACTORIES[cls] = frozenset(
            n for n, f in cls.model_fields.items() if f.default_factory is not None)
    if not names or _state(obj) is not None:
        return frozenset()
    return frozenset(n for n in names.difference(obj.__pydantic_fields_set__)
                     if _untouched(getattr(obj, n, None)))


def _state(obj: Any) -> Any:
    """``obj._dynaorm_state`` (``None``: a new object, or a model that is no entity), an
    unset state slot (a new object's) read without pydantic's ``__getattr__``, where it
    falls otherwise (about 1 us: every keyed insert's objects are new)."""
    try:
        object.__getattribute__(obj, "_dynaorm_slot")
    except AttributeError:
        return None
    return getattr(obj, "_dynaorm_state", None)


def _untouched(value: Any) -> bool:
    """Whether a value a default factory made holds nothing the caller can have put in
    it: an immutable value (text, a number, a time: changing it is an assignment, which
    pydantic counts as given) or an empty container. A container holding something (a
    list appended to, a nested model) is what the caller gave, its own made values
    apart (:func:`_canon` leaves a nested model's out)."""
    if isinstance(value, list | tuple | dict | set | bytearray):
        return not value
    return not hasattr(type(value), "model_fields")


def made_paths(obj: Any) -> list[tuple[str | int, ...]]:
    """Where in ``obj`` (an entity object) the values :func:`made` tells are, its nested
    models' (in lists, tuples and mappings of names) included: each a path of field
    names, indexes and keys, ending at a field's name (what a replay puts back); an empty
    container made is left out (a replay's is empty too)."""
    if not made(obj) and _LEAVES.issuperset(map(type, obj.__dict__.values())):
        return []  # (nothing made, nothing inside: text and numbers, as most objects hold)
    return _paths(obj, ())


def _paths(value: Any, path: tuple[str | int, ...]) -> list[tuple[str | int, ...]]:
    if isinstance(value, list | tuple):
        return [p for i, v in enumerate(value) for p in _paths(v, (*path, i))]
    if isinstance(value, dict):
        return [p for k, v in value.items() if type(k) is str for p in _paths(v, (*path, k))]
    if not hasattr(type(value), "model_fields") or isinstance(value, type):
        return []
    names = made(value)
    found = []
    for name in type(value).model_fields:
        field = getattr(value, name, None)
        if name in names:
            if not isinstance(field, list | tuple | dict | set | bytearray):
                found.append((*path, name))
        elif type(field) not in _LEAVES and (  # (text, a number: nothing inside)
                isinstance(field, list | tuple | dict) or hasattr(type(field), "model_fields")):
            found.extend(_paths(field, (*path, name)))
    return found


#: the types of values that hold no values of their own (nothing inside for
#: :func:`_paths` to look into)
_LEAVES: frozenset[type] = frozenset({str, int, float, bool, type(None), bytes, Decimal})

#: the fields of each entity class a default factory fills
_FACTORIES: dict[type, frozenset[str]] = cache("receipts.factories")


def _write(entry: Any) -> str:
    """One staged write as canonical text: its kind and its own attributes."""
    cls = type(entry)
    names = _FIELDS.get(cls)
    if names is None:
        names = _FIELDS[cls] = tuple(f.name for f in dataclasses.fields(entry)) if (
            dataclasses.is_dataclass(entry)) else None
    fields = sorted(vars(entry)) if names is None else names
    return f"{cls.__qualname__}({','.join([f'{n}={_canon(getattr(entry, n))}' for n in fields])})"


#: the fields of each dataclass of staged writes, in order (``None``: not a dataclass)
_FIELDS: dict[type, tuple[str, ...] | None] = cache("receipts.fields")


def _canon(value: Any) -> str:
    """``value`` as text that equals another's exactly when the values do."""
    fast = _FAST.get(type(value))
    return fast(value) if fast is not None else _other(value)


def _sequence(value: Any) -> str:
    return f"[{','.join(map(_canon, value))}]"


def _mapping(value: Any) -> str:
    try:  # (names: in their order; anything else: by its canonical text)
        pairs = sorted(value.items()) if all(type(k) is str for k in value) else None
    except TypeError:
        pairs = None
    if pairs is None:
        return f"{{{','.join(sorted(f'{_canon(k)}:{_canon(v)}' for k, v in value.items()))}}}"
    return _named(pairs)


def _named(pairs: Iterable[tuple[str, Any]]) -> str:
    """Values by name, in the order given: :func:`_mapping`'s text of a mapping of names
    (sorted by the caller)."""
    texts = [f"{k!r}:{v!r}" if type(v) is str else f"{k!r}:{_canon(v)}" for k, v in pairs]
    return f"{{{','.join(texts)}}}"


def _set(value: Any) -> str:
    return f"<{','.join(sorted(map(_canon, value)))}>"


_FAST: dict[type, Any] = {
    str: repr, int: lambda v: f"i{v}", bool: lambda v: "T" if v else "F",
    type(None): lambda v: "N", float: lambda v: f"f{v!r}", list: _sequence, tuple: _sequence,
    dict: _mapping, set: _set, frozenset: _set,
}


def _other(value: Any) -> str:
    """:func:`_canon` of what is not plain data."""
    if hasattr(type(value), "__dynaorm_spec__"):
        return _entity(value)
    if isinstance(value, Decimal):
        return f"d{value.normalize() if value.is_finite() else value}"
    if isinstance(value, bytes | bytearray):
        return f"b{bytes(value).hex()}"
    if isinstance(value, datetime | date | dtime):
        return f"t{value.isoformat()}"
    if isinstance(value, timedelta):
        return f"D{value.total_seconds()!r}"
    if isinstance(value, enum.Enum):
        return f"e{type(value).__qualname__}.{_canon(value.value)}"
    if isinstance(value, str | int | float):  # (a subclass: stored as its plain value)
        return _canon(_plain(value))
    if isinstance(value, type):
        return f"c{value.__qualname__}"
    if isinstance(value, Mapping):
        return _mapping(value)
    if isinstance(value, set | frozenset):
        return _set(value)
    if isinstance(value, list | tuple):
        return _sequence(value)
    if isinstance(value, Condition):
        ph = Placeholders()
        body = {"e": value.render(ph)}
        ph.apply(body)
        return f"q{_canon(body)}"
    if dataclasses.is_dataclass(value):
        return _write(value)
    if hasattr(value, "model_dump"):  # a nested model (but the values factories made)
        fields = dict(value)
        for name in made(value):
            del fields[name]
        return f"p{type(value).__qualname__}{_mapping(fields)}"
    return f"?{type(value).__qualname__}"  # (a spec, a client: not what was staged)


def _plain(value: str | int | float) -> str | int | float:
    """A value of a subclass of ``str``, ``int`` or ``float`` as the plain value it is."""
    return str.__str__(value) if isinstance(value, str) else (
        int(value) if isinstance(value, int) else float(value))


def _entity(obj: Any) -> str:
    """An entity object: its class, the key it was loaded at, and its field values but
    those its rules pin to the version it was loaded at (per class) or stamp on this
    object's write (decided per object: a created time is stamped only where the object
    holds none, so one the caller gave counts)."""
    cls = type(obj)
    found = _PINNED.get(cls)
    if found is None:
        rules = cls.__dynaorm_spec__.rules
        found = _PINNED[cls] = (frozenset(f for f, _ in rules.pin(0)),
                                rules if rules.stampers else None)
    skip, stamping = found
    if stamping is not None:
        skip = skip.union(f for f, _ in (*stamping.stamp(obj, True),
                                         *stamping.stamp(obj, False)))
    state = _state(obj)
    if state is None and (factory := made(obj)):
        skip = skip | factory
    fields = obj.__dict__.items()  # (a model's: named by str, so sorted by name)
    values = sorted(fields if not skip else [(k, v) for k, v in fields if k not in skip])
    return (f"o{cls.__qualname__}{_named(values)}"
            f"@{'N' if state is None else _mapping(_loaded_at(cls, state))}")


def _loaded_at(cls: Any, state: Any) -> Mapping[str, str]:
    """The key an object was loaded at, in the current layout: one read from its previous
    layout (``Meta.previous``) stands for the key its move gives it, so a retry that
    loads it after the move stages the same write."""
    spec = cls.__dynaorm_spec__
    before = spec.rules.before  # (a stand-in stores no row)
    if before.stores(spec, state.item):
        key: Mapping[str, str] = spec.primary_key(before.values(spec, state.item))
        return key
    return state.key  # type: ignore[no-any-return]


def _short(text: str) -> str:
    """A short hash of a write's canonical text (which write of a replay is which)."""
    return hashlib.sha256(text.encode()).hexdigest()[:16]


#: per entity class, the fields its rules pin (left out of the digest) and its rules where
#: some stamp (what they stamp is asked of each object), else ``None``
_PINNED: dict[type, tuple[frozenset[str], Any]] = cache("receipts.pinned")


# -- the receipt ---------------------------------------------------------------------------


class Receipts:
    """The receipts rule of one table (:attr:`~dynaorm.schema.table.TableSchema.receipts`,
    built with the table): starts the receipts of a
    keyed commit (any written table's rule starts them alike: a receipt in each table
    written), and says whether its table can keep receipts (:meth:`keyed`)."""

    name: Final = "receipt"

    def __init__(self, table: _Home):
        self.table = table
        """The table whose rule it is."""
        self._keys: tuple[str, bool] | None = None  # (keyed(), asked once)

    def start(self, staged: Sequence[Any], key: str, scope: Mapping[str, str] | None = None,
              home: _Home | None = None) -> Receipting | None:
        """The receipts of a commit of ``staged`` with idempotency key ``key`` (checked by
        the commit): one in each table its writes go to (by name, so the same writes staged
        in any order find them), or one in ``home`` (the client's receipts table,
        ``Client(receipts=)``), keyed inside ``scope`` (a scoped session's fields and
        values, as keys render them); ``None`` when nothing was staged. A table that keeps
        them whose keys are not strings, or whose key or index attributes are named as a
        receipt's, is refused."""
        if not staged:
            return None
        written = {e._entity.__dynaorm_spec__.table.name: e._entity for e in staged}
        homes = [(written[name], written[name].__dynaorm_spec__.table)  # (each table's
                 for name in sorted(written)]  # entity, in the order of their names)
        if home is not None:
            homes = [(homes[0][0], home)]
        for _, table in homes:
            why = table.receipts.keyed()[0]
            if why:
                raise DynaormError(f"table {table.name!r}: {why}, so it cannot keep "
                                   "receipts (idempotency_key=)")
        texts = [_write(entry) for entry in staged]
        receipting = Receipting(homes, key, _digest(texts), scope)
        tables = {}  # (of the entities with Encrypted fields)
        for entry in staged:
            if (spec := entry._entity.__dynaorm_spec__).encrypted:
                tables[str(spec.table.name)] = spec.table
        if tables:  # (its digest keyed: a guess of an Encrypted value confirms nothing)
            table = tables[min(tables)]
            keyring = keyring_of(table)
            if keyring.mac_key_id is not None:
                receipting.keyring = keyring
            else:
                warnings.warn(
                    f"table {table.name!r}: {keyring!r} has no MAC key, so the receipt of "
                    "a keyed commit of Encrypted fields keeps an unkeyed digest, with which "
                    "a guess of a value is confirmed until it expires: give the keyring a "
                    "MAC key (mac_key=, mac_key_id=)", RuntimeWarning, stacklevel=2)
        for entry, text in zip(staged, texts, strict=True):
            obj = getattr(entry, "_obj", None)
            if obj is not None and (paths := made_paths(obj)):
                encrypted = set(obj.__dynaorm_spec__.encrypted.values())  # (field names)
                if sealed := sorted({str(p[0]) for p in paths if p[0] in encrypted}):
                    raise DynaormError(
                        f"{type(obj).__name__}: Encrypted {sealed} made by a default "
                        "factory cannot be kept by a keyed commit's receipt (it keeps them "
                        "as plaintext for a replay to put back): give the value")
                receipting.made.append((_short(text), obj, paths))
        return receipting


    def keyed(self) -> tuple[str, bool]:
        """Why the table cannot keep receipts (``""``: it can) and whether a receipt in
        it carries the type attribute (not where an index is keyed on it), asked once."""
        if self._keys is None:
            table = self.table
            keys = table.key_roles
            clash = ", ".join(map(repr, sorted(ATTRIBUTES.intersection(keys))))
            self._keys = ("its keys are not strings" if not table.string_keys else clash and
                          f"its key or index attributes {clash} are named as a receipt's",
                          bool(table.type_attribute) and table.type_attribute not in keys)
        return self._keys


class _Free(Condition):
    """No live receipt at the key: none there, or one expired by ``now`` (on a table
    without a TTL attribute, one 0.7 wrote expires by :data:`EXPIRES`)."""

    def __init__(self, pk: str, expiry: str, now: int):
        self.pk, self.expiry, self.args = pk, expiry, (now,)

    def render(self, ph: Placeholders) -> str:
        now = ph.value_av({"N": str(self.args[0])})
        old = f" OR {ph.name(EXPIRES)} <= {now}" if self.expiry == EXPIRY else ""
        return (f"attribute_not_exists({ph.segments((self.pk,))}) OR "  # (whole names)
                f"{ph.segments((self.expiry,))} <= {now}{old}")


def _built(table: Any, item: Item, expiry: str, now: int) -> Built:
    """The receipt ``item``'s Put in ``table`` (conditioned on no live receipt by ``now``,
    ``expiry`` its expiry attribute) as rendering and the gate would make it, built
    directly: its values are dynaorm's own (text, and whole numbers of plain digits), so
    its size is their length; its condition is rendered once per table
    (tests/equivalence/test_receipt_rows.py holds both to the generic path). A receipt
    keeps every key its commit writes, so a commit of many long keys can make one over
    400 KB: refused before sending (:class:`~dynaorm.errors.TransactionTooLargeError`: the
    commit is too large to keep a receipt of)."""
    size = 0
    for a, v in item.items():
        size += text_size(a) + (text_size(v["S"]) if "S" in v else _whole_size(v["N"]))
    if size > MAX_ITEM_BYTES:
        raise TransactionTooLargeError(
            f"the receipt of this keyed commit (idempotency_key=) in table "
            f"{table.name!r} would be {size} bytes, over DynamoDB's "
            f"{MAX_ITEM_BYTES} byte item limit (it keeps the keys of the commit's writes): "
            "commit fewer writes or shorter keys under one key")
    found = _CONDITIONS.get((table.pk, expiry))
    if found is None:  # (its value's placeholder is the first: the same whatever ``now``)
        ph = Placeholders()
        found = _CONDITIONS[(table.pk, expiry)] = (_Free(table.pk, expiry, 0).render(ph),
                                                   ph.names)
    value = str(now)
    return Built({"TableName": table.name, "Item": item, "ConditionExpression": found[0],
                  "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
                  "ExpressionAttributeNames": dict(found[1]),
                  "ExpressionAttributeValues": {":v0": {"N": value}}},
                 size + _whole_size(value))


def _whole_size(text: str) -> int:
    """:func:`~dynaorm.values.limits.number_size` of a whole number of at least 1 written
    in plain digits, counted from them: its pairs of digits below the top one's, trailing
    zero pairs dropped, plus 2."""
    return (len(text) - 1) // 2 - (len(text) - len(text.rstrip("0"))) // 2 + 2


#: the condition of a receipt's Put (its text and names) by partition key and expiry
#: attribute (:func:`_built`)
_CONDITIONS: dict[tuple[str, str], tuple[str, dict[str, str]]] = cache(
    "receipts.conditions")


class Receipting:
    """The receipts of one keyed commit (pure): one row in each table it writes, all
    carrying the digest of the whole commit (so a later commit under the key that writes
    any of those tables meets one, and a subset or superset of the writes mismatches), a
    check of each other table it may write; its token; and what stored receipts mean."""

    __slots__ = ("digest", "hashed", "homes", "key", "keyring", "made", "nonce", "now",
                 "plain", "sent", "token", "value")

    def __init__(self, homes: list[tuple[Any, _Home]], key: str, staged_digest: str,
                 scope: Mapping[str, str] | None = None):
        #: where its receipts go, in the order of the plan: ``(entity, table)``, an entity
        #: class written (its actions' origin) and the table that keeps the receipt (each
        #: table written; or the client's receipts table, one)
        self.homes = homes
        self.key = key
        self.digest = self.plain = staged_digest
        #: the keyring its digest is keyed with (:meth:`keyed_p`; ``None``: unkeyed, as a
        #: commit of no Encrypted field's is: its rows hold all it digests)
        self.keyring: Any = None
        # the receipt's key: the scope's values (by field name) and a hash of the scope
        # and the key, so two tenants never share one (unscoped: the hash of the key)
        fields = sorted((scope or {}).items())
        self.hashed = hashlib.sha256("\0".join(["dynaorm-receipt", *(
            f"{f}\0{v}" for f, v in fields), key]).encode()).hexdigest()[:40]
        self.value = "#".join([RECEIPT_TYPE, *(v for _, v in fields), self.hashed])
        #: the ``ClientRequestToken`` of the commit, derived from the key and the digest
        #: (the same writes under the same key send the same token within DynamoDB's ten
        #: minutes; other writes a different one, which the receipts refuse)
        self.token = hashlib.sha256(f"{self.value}\0{key}\0{self.digest}".encode()
                                    ).hexdigest()[:32]
        #: this commit's own mark (tells its own receipt from an earlier commit's)
        self.nonce = os.urandom(8).hex()
        self.now = int(time.time())
        #: the objects staged holding values a default factory made: each with the
        #: short hash of its write's canonical text and where those values are
        #: (:func:`made_paths`)
        self.made: list[tuple[str, Any, list[tuple[str | int, ...]]]] = []
        #: the requests the commit sent before its transaction (its reads)
        self.sent: list[tuple[str, dict[str, Any]]] = []

    def keyed_p(self) -> Generator[Any, Any, None]:
        """Key the digest with :attr:`keyring`'s MAC (a protocol: a KMS keyring asks for
        it), so a receipt row confirms no guess of what was staged without the key."""
        if self.keyring is not None:
            text = f"dynaorm-receipt\0{self.plain}"
            yield from self.keyring.prepare(macs=[text])
            self.digest = self.keyring.mac(text)
            self.token = hashlib.sha256(f"{self.value}\0{self.key}\0{self.digest}".encode()
                                        ).hexdigest()[:32]

    def where(self, table: _Home) -> PlainKey:
        """The receipt's key in ``table`` (what is read to settle a lost answer)."""
        value = self.value
        return {table.pk: value} if table.sk is None else {table.pk: value, table.sk: value}

    def item(self, rev: str, result: list[tuple[str, list[Any]]] | str, table: Any) -> Item:
        """The receipt row's item in ``table``: ``rev`` the revision the commit's rows are
        stamped with, ``result`` the requests of the commit, each operation with the keys
        it wrote or read, which a replay returns (or that as JSON, encoded once for every
        table's receipt)."""
        ttl = table.receipts_ttl
        item = {**{a: {"S": v} for a, v in self.where(table).items()},
                DIGEST: {"S": self.digest}, NONCE: {"S": self.nonce},
                REV: {"S": rev}, AT: {"N": str(self.now)},
                # (rounded up: a sub-second TTL must not make a receipt born expired)
                table.ttl or EXPIRY: {"N": str(math.ceil(
                    time.time() + ttl.total_seconds()))},
                RESULT: {"S": result if isinstance(result, str) else _JSON.encode(result)}}
        if self.made:  # (what the default factories made, which a replay puts back)
            item[MADE] = {"S": self._made()}
        # (not where an index is keyed on it: a receipt is in no index)
        if table.receipts.keyed()[1]:
            item[table.type_attribute] = {"S": RECEIPT_TYPE}
        return item

    def rows(self, ops: Sequence[Op]) -> list[Op]:
        """The rows the commit of ``ops`` adds: a receipt (a Put) in each table it writes,
        each conditioned on no live receipt at its key (a plan counts them with the other
        rows toward DynamoDB's limits)."""
        result = _JSON.encode([*((op, [body["Key"]] if "Key" in body else [])
                                 for op, body in self.sent),
                                ("TransactWriteItems", [op.key for op in ops])])
        rev, now = self.token[:16], int(time.time())
        rows: list[Op] = []
        for entity, table in self.homes:
            key = self.where(table)
            expiry = table.ttl or EXPIRY
            item = self.item(rev, result, table)
            kind = Origin if table is entity.__dynaorm_spec__.table else origin_in(table)
            rows.append(Put(key, item, _Free(table.pk, expiry, now),
                            kind(entity, key, Role.RECEIPT, Fail.EXISTS),
                            _built(table, item, expiry, now)))
        return rows

    def _made(self) -> str:
        """What the default factories made on the staged objects, as JSON: by the short
        hash of each write's canonical text, a list of its objects' made values, each
        ``[path, value]`` (:func:`made_paths`)."""
        kept: dict[str, list[Any]] = {}
        for text, obj, paths in self.made:
            values = []
            for path in paths:
                owner = _at(obj, path[:-1])
                name = str(path[-1])
                values.append([path, owner.model_dump(mode="json", include={name})[name]])
            kept.setdefault(text, []).append(values)
        return _JSON.encode(kept)

    def restore(self, stored: Item) -> bool:
        """Put the values the default factories made for the commit that wrote the
        receipt ``stored`` back on this commit's objects of the same writes, where they
        were made (nested models included: a replay's objects are as first committed);
        whether any was."""
        raw = named(stored, MADE)
        if raw is None or not self.made:
            return False
        kept = json.loads(raw)
        for text, obj, _ in self.made:
            values = (kept.get(text) or [[]]).pop(0)
            if isinstance(values, dict):  # (a receipt of an earlier 0.8 build: by name)
                values = [[[n], v] for n, v in values.items()]
            for path, value in values:
                owner = _at(obj, path[:-1])
                type(owner).__pydantic_validator__.validate_assignment(owner, path[-1], value)
        return True

    def live(self, item: Item | None, table: Any) -> Item | None:
        """``item``, a row read at the receipt's key in ``table``, if it is a receipt that
        has not expired, or this commit's own even expired (its nonce proves this commit
        applied); else ``None``: no receipt. A receipt 0.7 wrote (``digest``) is one of
        other writes (its digest is not this release's)."""
        if item is None or (DIGEST not in item and "digest" not in item):
            return None
        if named(item, NONCE) == self.nonce:
            return item
        expires = (item.get(table.ttl or EXPIRY) or item.get(EXPIRES, {})).get("N")
        return item if expires is None or int(expires) > time.time() else None

    def explain(self, stored: Sequence[tuple[Any, Item]]) -> Verdict:
        """What the live receipts ``stored`` (each with its table; at least one) mean for
        this commit: applied by it (:attr:`Verdict.APPLIED`: one is its own, so all its
        receipts were written with its writes), or by an earlier commit of the same
        writes (:attr:`Verdict.REPLAYED`: every one's digest is this commit's). A receipt
        of other writes -- a commit under the key of a subset, a superset or other writes,
        in any table -- raises :class:`~dynaorm.errors.IdempotencyMismatchError`."""
        if any(named(item, NONCE) == self.nonce for _, item in stored):
            return Verdict.APPLIED
        for table, item in stored:
            if named(item, DIGEST) not in (self.digest, self.plain):
                at = item.get(AT, {}).get("N", "?")
                raise IdempotencyMismatchError(
                    f"idempotency key {self.key!r:.80} was used at {at} (epoch seconds) by a "
                    f"commit of other writes (its receipt in table {table.name!r}); nothing "
                    "was written", key=self.key)
        return Verdict.REPLAYED

    @staticmethod
    def result(stored: Item) -> list[tuple[str, dict[str, Any]]]:
        """The requests the receipt's commit sent (its result), as it kept them: each
        operation with the keys it wrote or read (``{"Keys": [...]}``, plain values)."""
        raw = named(stored, RESULT)
        return [] if raw is None else [(str(op), {"Keys": keys}) for op, keys in json.loads(raw)]

    # -- settling a failed send (the reads after a lost answer) ------------------------------
    def settle(self, exc: RequestError, ops: Sequence[Op],
               read: Callable[[Any, PlainKey], Generator[Any, Any, Item | None]], step: Any,
               resent: bool = False) -> Generator[Any, Any, Any]:
        """What the failed send ``step`` of the commit's plan ``ops`` means, by its
        receipts: the response (``{}``: this commit's write was applied, its answer
        lost), a :class:`Replay` (an earlier commit of the same writes under the key:
        nothing applied), or ``None`` (a failure of the writes themselves: mapped as
        usual). Raises :class:`~dynaorm.IdempotencyMismatchError`, or ``exc`` when a lost
        answer's write was not applied. A token DynamoDB holds for other parameters (an
        earlier attempt of the key that applied nothing) is resent once with a fresh one
        (the receipts' conditions keep it at most once)."""
        reasons = exc.reasons if exc.code == "TransactionCanceledException" else []
        refused = [(op.origin.table, r.item) for op, r in zip(ops, reasons, strict=False)
                   if op.origin.role is Role.RECEIPT and getattr(r, "code", None) in _REFUSED]
        if refused:  # (a receipt whose condition passed holds nothing live: engines report
            stored = []  # every failed condition of a cancelled transaction)
            for table, item in refused:
                live = self.live(item, table)
                if live is None:  # (refused, not returned: read it)
                    live = self.live((yield from read(table, self.where(table))), table)
                if live is not None:
                    stored.append((table, live))
            if not stored:
                raise exc
            return self._verdict(stored)
        if not (exc.maybe_applied or exc.code in _SETTLE):
            return None
        try:
            stored = yield from self._read_all(ops, read)
        except RequestError as err:
            if exc.maybe_applied:  # (maybe applied, unsettled: mapped as usual, which reads
                return None        # the items back or says the outcome is unknown)
            raise DynaormError(f"{exc}; reading its receipt to settle it failed too "
                               f"({err.code})") from err
        if stored:
            return self._verdict(stored)
        if exc.code != "IdempotentParameterMismatchException" or resent:
            raise exc  # not applied (when read): committing again with the key is safe
        step.request["ClientRequestToken"] = os.urandom(16).hex()
        try:
            return (yield step)
        except RequestError as again:
            return (yield from self.settle(again, ops, read, step, True))

    def replayed(self, read: Callable[[Any, PlainKey], Generator[Any, Any, Item | None]]
                 ) -> Generator[Any, Any, Replay | None]:
        """The :class:`Replay` of an earlier commit of the same writes under the key, by
        the live receipts stored in the tables this commit writes (read consistently), for
        a commit that cannot be planned (a delete whose item that commit deleted);
        ``None``: no receipt. A receipt of other writes raises
        :class:`~dynaorm.errors.IdempotencyMismatchError`."""
        stored = []
        for _, table in self.homes:
            live = self.live((yield from read(table, self.where(table))), table)
            if live is not None:
                stored.append((table, live))
        found = self._verdict(stored) if stored else None
        return found if isinstance(found, Replay) else None

    def _read_all(self, ops: Sequence[Op],
                  read: Callable[[Any, PlainKey], Generator[Any, Any, Item | None]]
                  ) -> Generator[Any, Any, list[tuple[Any, Item]]]:
        """The live receipts of the key in the tables of the plan ``ops``, read
        consistently (stopping at this commit's own: the writes and all their receipts
        were one transaction)."""
        stored = []
        for op in ops:
            if op.origin.role is Role.RECEIPT:
                table = op.origin.table
                live = self.live((yield from read(table, op.key)), table)
                if live is not None:
                    stored.append((table, live))
                    if named(live, NONCE) == self.nonce:
                        break
        return stored

    def _verdict(self, stored: list[tuple[Any, Item]]) -> Any:
        """``{}`` when one of the live receipts ``stored`` is this commit's own (applied);
        a :class:`Replay` of an earlier commit's (or a mismatch, raised)."""
        if self.explain(stored) is Verdict.APPLIED:
            return {}
        # (its capacity: what this commit's own requests reported -- the reads it made, when
        # the client asks reads for it; DynamoDB's answer to the cancelled transaction reports
        # none, so what that consumed is not known, and not counted as nothing)
        recorded = RECORDER.get()
        return Replay(CommitResult(requests=self.result(stored[0][1]), replayed=True,
                                   consumed_capacity=dict(recorded.consumed_capacity)
                                   if recorded is not None else {}),
                      self.restore(stored[0][1]))


def origin_in(table: Any) -> type[Origin]:
    """The kind of :class:`~dynaorm.values.records.Origin` of an action that writes
    ``table`` whatever its entity's table is (a receipt kept in the client's receipts
    table, ``Client(receipts=)``): its ``table`` is ``table``. Made once per table."""
    kind = _ORIGINS.get(table)
    if kind is None:
        def held(_: Any) -> Any:
            return table

        kind = _ORIGINS[table] = type("OriginIn", (Origin,), {
            "__slots__": (), "table": property(held, doc="The table the action writes to.")})
    return kind


#: :func:`origin_in` of each table (the table kept: an entry is never another table's)
_ORIGINS: dict[Any, type[Origin]] = cache("receipts.origins")


def _at(obj: Any, path: Sequence[str | int]) -> Any:
    """The value at ``path`` (field names, indexes, keys) in ``obj``."""
    for step in path:
        obj = getattr(obj, str(step)) if hasattr(type(obj), "model_fields") else obj[step]
    return obj


class Replay(NamedTuple):
    """A keyed commit's key was used by an earlier commit of the same writes: nothing was
    applied; ``result`` is that commit's (its rows hold the revision this commit's would:
    both derive it from the key and the digest); ``restored``: the values default
    factories made were put back on the staged objects (they are planned again)."""

    result: CommitResult
    restored: bool


_REFUSED = ("ConditionalCheckFailed",)
_SETTLE = frozenset({"IdempotentParameterMismatchException", "TransactionInProgressException"})


class Verdict(enum.Enum):
    """What a stored receipt means for the commit that reads it."""

    APPLIED = "applied"    # this commit's own (its answer was lost)
    REPLAYED = "replayed"  # an earlier commit's, of the same writes
