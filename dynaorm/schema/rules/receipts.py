"""Exactly-once receipts (contract 22 "Exactly once across invocations"): the rule a commit
given an idempotency key runs. It is a rule of the commit, not of an entity: it answers at
the hook points of :class:`~dynaorm.schema.rules.Rule` that fit a commit --

- ``rows``: the receipt row the transaction carries (:meth:`Receipting.rows`): type
  :data:`RECEIPT_TYPE`, keyed by a hash of the key, with an expiry (the table's TTL
  attribute, or :data:`EXPIRES`), the digest of what was staged, and what rebuilds the
  commit's result; conditioned on no live receipt being there;
- ``reads``: the read that settles an answer lost after sending (:meth:`Receipting.where`:
  the receipt's key, read consistently);
- ``explain``: what a stored receipt means for this commit (:meth:`Receipting.explain`):
  applied by this very commit (a lost answer), applied by an earlier commit of the same
  writes (a replay) or of other writes (:class:`~dynaorm.errors.IdempotencyMismatchError`).

Pure. Phases never import this module: they ask :data:`~dynaorm.schema.rules.COMMIT_RULES`.
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
from collections.abc import Mapping, Sequence
from datetime import date, datetime, timedelta
from datetime import time as dtime
from decimal import Decimal
from types import SimpleNamespace
from typing import Any, Final

from dynaorm._types import Item, PlainKey
from dynaorm.errors import DynaormError, IdempotencyMismatchError
from dynaorm.values.expressions import Condition, Placeholders, free
from dynaorm.values.records import Fail, Origin, Put, Role

__all__ = ["DEFAULT_TTL", "EXPIRES", "OWN_TYPES", "POWERTOOLS_TYPE", "RECEIPT_TYPE",
           "Receipting", "Receipts", "digest", "own_row"]

#: the type name of a receipt row
RECEIPT_TYPE: Final = "dynaorm:receipt"
#: the type name of an AWS Lambda Powertools idempotency record kept by
#: :class:`dynaorm.powertools.DynaormPersistenceLayer`
POWERTOOLS_TYPE: Final = "dynaorm:idempotency"
#: dynaorm's own rows that no entity claims and no read returns
OWN_TYPES: Final = frozenset({RECEIPT_TYPE, POWERTOOLS_TYPE})
#: how long a table keeps receipts unless ``Table(receipts_ttl=...)`` says otherwise
DEFAULT_TTL: Final = timedelta(days=7)
#: the expiry attribute of a receipt on a table without a TTL attribute
EXPIRES: Final = "_expires"


def own_row(table: Any, item: Item | None) -> bool:
    """Whether ``item``, a stored row of ``table``, is one of dynaorm's own rows that no
    entity claims (a receipt, a Powertools record): never a result, a finding or a
    change."""
    if item is None:
        return False
    value = item.get(table.type_attribute or "")
    if isinstance(value, dict) and value.get("S") in OWN_TYPES:
        return True
    pk = item.get(table.pk)  # (a keys-only image, or a table without a type attribute)
    return isinstance(pk, dict) and str(pk.get("S", "")).startswith(_PREFIXES)


_PREFIXES = tuple(f"{t}#" for t in sorted(OWN_TYPES))


def _text(value: Any) -> str:
    """A value JSON has no form for, as text (binary as base64)."""
    if isinstance(value, bytes | bytearray):
        return base64.b64encode(bytes(value)).decode()
    return str(value)


_JSON = json.JSONEncoder(separators=(",", ":"), default=_text)


# -- the digest of what was staged ---------------------------------------------------------


def digest(staged: Sequence[Any]) -> str:
    """The digest of the staged writes of a commit: canonical (values by meaning, not by
    representation: a set in any order, a mapping in any order), and independent of the
    order writes were staged in (a commit's writes go to distinct items, atomically: their
    order means nothing). A write's own values count; what rules stamp on it when it is
    written (timestamps) and the version it was loaded at do not, so a second process that
    loads the item after the first commit and stages the same change digests the same."""
    parts = sorted(_write(entry) for entry in staged)
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()


def _write(entry: Any) -> str:
    """One staged write as canonical text: its kind and its own attributes."""
    cls = type(entry)
    names = _FIELDS.get(cls)
    if names is None:
        names = _FIELDS[cls] = tuple(f.name for f in dataclasses.fields(entry)) if (
            dataclasses.is_dataclass(entry)) else None
    pairs = sorted(vars(entry).items()) if names is None else [
        (n, getattr(entry, n)) for n in names]
    return f"{cls.__qualname__}({','.join([f'{n}={_canon(v)}' for n, v in pairs])})"


#: the fields of each dataclass of staged writes, in order (``None``: not a dataclass)
_FIELDS: dict[type, tuple[str, ...] | None] = {}


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
    return f"{{{','.join([f'{k!r}:{_canon(v)}' for k, v in pairs])}}}"


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
        body: dict[str, Any] = {"e": value.render(ph)}
        ph.apply(body)
        return f"q{_canon(body)}"
    if dataclasses.is_dataclass(value):
        return _write(value)
    if hasattr(value, "model_dump"):  # a nested model
        return f"p{type(value).__qualname__}{_mapping(dict(value))}"
    return f"?{type(value).__qualname__}"  # (a spec, a client: not what was staged)


def _entity(obj: Any) -> str:
    """An entity object: its class, the key it was loaded at, and its field values but
    those its rules stamp on a write or pin to the version it was loaded at."""
    cls = type(obj)
    skip = _SKIP.get(cls)
    if skip is None:
        rules = cls.__dynaorm_spec__.rules
        skip = _SKIP[cls] = frozenset(f for f, _ in (*rules.stamp(obj, True),
                                                     *rules.stamp(obj, False), *rules.pin(0)))
    state = getattr(obj, "_dynaorm_state", None)
    values = {k: v for k, v in obj.__dict__.items() if k not in skip} if skip else obj.__dict__
    return (f"o{cls.__qualname__}{_mapping(values)}"
            f"@{'N' if state is None else _mapping(state.key)}")


#: the fields each entity class's rules stamp or pin (left out of the digest)
_SKIP: dict[type, frozenset[str]] = {}


# -- the receipt ---------------------------------------------------------------------------


class Receipts:
    """The receipts rule (registered as ``COMMIT_RULES["receipt"]`` by
    :mod:`dynaorm.schema.rules`, which imports this module last): starts the receipt
    of one keyed commit."""

    name: Final = "receipt"

    def start(self, staged: Sequence[Any], key: str, tables: Sequence[Any]
              ) -> Receipting | None:
        """The receipt of a commit of ``staged`` with idempotency key ``key``, to be kept
        in one of ``tables`` (the tables its writes go to: the one of least name, so the
        same writes staged in any order find it); ``None`` when nothing was staged (the
        key is checked all the same)."""
        if not isinstance(key, str) or not key or len(key) > 2048:
            raise DynaormError(f"idempotency_key must be a non-empty str of at most 2048 "
                               f"characters, got {key!r:.80}")
        if not tables:
            return None
        table = min(tables, key=lambda t: t.name)
        if not table.string_keys:
            raise DynaormError(f"table {table.name!r}: its keys are not strings, so it "
                               "cannot keep receipts (idempotency_key=)")
        return Receipting(table, key, digest(staged))




def _origin_class(table: Any) -> type[Any]:
    """What the origins of a table's receipt rows name as their entity."""
    found = _ORIGINS.get(id(table))
    if found is None or found.__dynaorm_spec__.table is not table:
        found = type("Receipt", (), {"__dynaorm_spec__": SimpleNamespace(
            table=table, cls=None, name="Receipt")})
        _ORIGINS[id(table)] = found
    return found


_ORIGINS: dict[int, type[Any]] = {}


class Verdict(enum.Enum):
    """What a stored receipt means for the commit that reads it."""

    APPLIED = "applied"    # this commit's own (its answer was lost)
    REPLAYED = "replayed"  # an earlier commit's, of the same writes


class Receipting:
    """The receipt of one keyed commit (pure): its row, its token, and what a stored
    receipt means."""

    __slots__ = ("digest", "hashed", "key", "nonce", "now", "table")

    def __init__(self, table: Any, key: str, staged_digest: str) -> None:
        self.table = table
        self.key = key
        self.digest = staged_digest
        self.hashed = hashlib.sha256(f"dynaorm-receipt\0{key}".encode()).hexdigest()[:40]
        #: this commit's own mark (tells its own receipt from an earlier commit's)
        self.nonce = os.urandom(8).hex()
        self.now = int(time.time())

    @property
    def where(self) -> PlainKey:
        """The receipt's key (what is read to settle a lost answer)."""
        value = f"{RECEIPT_TYPE}#{self.hashed}"
        table = self.table
        return {table.pk: value} if table.sk is None else {table.pk: value, table.sk: value}

    @property
    def token(self) -> str:
        """The ``ClientRequestToken`` of the commit: derived from the key and the digest
        (the same writes under the same key send the same token within DynamoDB's ten
        minutes; other writes a different one, which the receipt refuses)."""
        return hashlib.sha256(f"{self.key}\0{self.digest}".encode()).hexdigest()[:32]

    def rows(self, rev: str, result: list[tuple[str, list[Any]]]) -> Put:
        """The receipt row the commit's transaction carries (``rev``: the revision its
        rows are stamped with; ``result``: the requests of the commit, each operation with
        the keys it wrote or read, which a replay returns), conditioned on no live receipt
        at its key."""
        origin = Origin(_origin_class(self.table), self.where, Role.RECEIPT, Fail.EXISTS)
        return Put(self.where, self.item(rev, result),
                   free(self.table.pk, self.table.ttl or EXPIRES), origin)

    def item(self, rev: str, result: list[tuple[str, list[Any]]]) -> Item:
        """The receipt row's item (see :meth:`rows`)."""
        table = self.table
        ttl: timedelta = getattr(table, "receipts_ttl", DEFAULT_TTL)
        item: Item = {**{a: {"S": v} for a, v in self.where.items()},
                      "digest": {"S": self.digest}, "nonce": {"S": self.nonce},
                      "rev": {"S": rev}, "at": {"N": str(self.now)},
                      # (rounded up: a sub-second TTL must not make a receipt born expired)
                      table.ttl or EXPIRES: {"N": str(math.ceil(
                          time.time() + ttl.total_seconds()))},
                      "result": {"S": _JSON.encode(result)}}
        if table.type_attribute:
            item[table.type_attribute] = {"S": RECEIPT_TYPE}
        return item

    def action(self, item: Item) -> dict[str, Any]:
        """The receipt row ``item`` as its ``TransactItems`` entry, conditioned as
        :meth:`rows` says, rendered as :func:`~dynaorm.write.render.render_op` would (by
        hand: one fixed condition)."""
        return {"Put": {
            "TableName": self.table.name, "Item": item,
            "ConditionExpression": "attribute_not_exists(#p) OR #e <= :n",
            "ExpressionAttributeNames": {"#p": self.table.pk, "#e": self.table.ttl or EXPIRES},
            "ExpressionAttributeValues": {":n": {"N": str(int(time.time()))}},
            "ReturnValuesOnConditionCheckFailure": "ALL_OLD"}}

    def live(self, item: Item | None) -> Item | None:
        """``item``, a row read at the receipt's key, if it is a receipt that has not
        expired, or this commit's own even expired (its nonce proves this commit applied);
        else ``None``: no receipt."""
        if item is None or "digest" not in item:
            return None
        if item.get("nonce", {}).get("S") == self.nonce:
            return item
        expires = item.get(self.table.ttl or EXPIRES, {}).get("N")
        return item if expires is None or int(expires) > time.time() else None

    def explain(self, stored: Item) -> Verdict:
        """What the live receipt ``stored`` means for this commit: applied by it
        (:attr:`Verdict.APPLIED`), by an earlier commit of the same writes
        (:attr:`Verdict.REPLAYED`); of other writes it raises
        :class:`~dynaorm.errors.IdempotencyMismatchError`."""
        if stored["digest"].get("S") != self.digest:
            at = stored.get("at", {}).get("N", "?")
            raise IdempotencyMismatchError(
                f"idempotency key {self.key!r:.80} was used at {at} (epoch seconds) by a "
                f"commit of other writes (table {self.table.name!r}); nothing was written",
                key=self.key)
        return Verdict.APPLIED if stored.get("nonce", {}).get("S") == self.nonce else (
            Verdict.REPLAYED)

    @staticmethod
    def revision(stored: Item) -> str | None:
        """The revision the receipt's commit stamped its rows with."""
        return stored.get("rev", {}).get("S")

    @staticmethod
    def result(stored: Item) -> list[tuple[str, dict[str, Any]]]:
        """The requests the receipt's commit sent (its result), as it kept them: each
        operation with the keys it wrote or read (``{"Keys": [...]}``, plain values)."""
        raw = stored.get("result", {}).get("S")
        return [] if raw is None else [(str(op), {"Keys": keys}) for op, keys in json.loads(raw)]
