"""Keys per tenant (contract 24): a table declaring ``key_scope=FIELD`` seals every
``Encrypted`` value of a row under the data key of that row's tenant (the value of
``FIELD``), and ``table.forget(scope={FIELD: value})`` destroys that key.

**Where the keys are.** Each tenant's key (256 random bits) is wrapped by the table's
keyring (KMS ``GenerateDataKey``, or a :class:`~dynaorm.StaticKeyring`) and kept as one
item of a *key table* of its own (``Table(key_table=...)``, by default
``<table>-keys``): partition key ``tenant`` (``dynaorm:tenant#`` and 32 hex digits of
the SHA-256 of the tenant's value: dynaorm's own namespace, so inference and ``check``
count it as dynaorm's row, never an entity's), the
wrapped key, the id of the keyring key that wrapped it and of the tenant key itself, when
it was made. ``table.create()`` creates that table without point-in-time recovery, a
stream or a TTL, so the table's own backups, point-in-time restores, exports and lake
snapshots never hold a tenant key, and forgetting one (a tombstone replaces the item:
``forgotten``, the time) leaves no copy behind but the ones an operator made of the key
table itself (an on-demand backup of it, an AWS Backup plan naming it: don't).

**How values are sealed.** A value's data key (as any keyring's, used for up to
``max_uses`` values and ``max_age`` seconds) is wrapped (AES-GCM) under its tenant's key,
and the ciphertext's key id names it: ``tenant/<sha256 of the tenant value, 32 hex>/<the
tenant key's id>``. So a ciphertext says whose it is without its row (a projection, an
export, a backup): a read asks for that tenant's key, wherever the copy is.

**Requests.** A tenant's key is read (one ``GetItem`` of the key table, then one unwrap:
KMS ``Decrypt``) when a read or a write first needs it, and kept for ``max_age`` seconds
(:data:`TENANT_KEY_AGE`); it is made on first use by the commit that needs it, before
anything of the commit is written, with a condition (``attribute_not_exists``) so that two
writers never make two keys: the second reads the first's. Every request is a protocol
step the table's client sends. A forgotten tenant reads as
:class:`~dynaorm.ForgottenError` from then on (in another process: once its cached key is
older than :data:`TENANT_KEY_AGE`), and a write sealing a value for it is refused before
anything is sent.
"""

from __future__ import annotations

import hashlib
import os
import threading
import time
import warnings
import weakref
from collections.abc import Generator, Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final

from dynaorm.errors import DynaormError, ForgottenError, KeyringError, RequestError
from dynaorm.protocol.steps import Call, Proto
from dynaorm.schema.places import rows_at
from dynaorm.schema.rules.keyrings import Keyring, NotPrepared, aesgcm, keyring_of
from dynaorm.schema.table import TableSchema
from dynaorm.values.keys import OWN_PREFIX, named

#: the key table's partition key attribute
TENANT: Final = "tenant"
#: seconds a tenant's key (or that it was forgotten) is kept before it is read again
TENANT_KEY_AGE: Final = 300.0
_KEYS: weakref.WeakKeyDictionary[TableSchema, TenantKeys] = weakref.WeakKeyDictionary()
_MADE = threading.Lock()
#: the tenants this process knows forgotten (and until when it holds that), by key table
_FORGOTTEN: dict[tuple[Any, ...], dict[str, tuple[Forgotten, float]]] = {}


#: the start of the key id of a value sealed under a tenant's key
TENANT_PREFIX: Final = "tenant/"
#: the start of a key table item's key (then the tenant's token)
_ITEM: Final = f"{OWN_PREFIX}tenant#"


def _key(tok: str) -> dict[str, Any]:
    """The key of tenant ``tok``'s item in the key table."""
    return {TENANT: {"S": _ITEM + tok}}


def token(value: str) -> str:
    """A tenant ``value``'s name in key ids and in the key table (32 hex digits of its
    SHA-256: the key table holds no tenant value as its key)."""
    return hashlib.sha256(value.encode()).hexdigest()[:32]


def tokens_of(key_ids: Iterable[str]) -> set[str]:
    """The tenants the key ids of sealed values name (``tenant/<token>/<kid>``)."""
    return {kid[len(TENANT_PREFIX):].partition("/")[0] for kid in key_ids
            if kid.startswith(TENANT_PREFIX)}


def forgotten_here(table: TableSchema) -> dict[str, tuple[Forgotten, float]]:
    """The tenants this process knows forgotten in ``table``'s key table (by token: what
    the key table said, until when it is held), shared by every Table object that
    addresses that key table alike (its endpoint, region and name, as given): a forget
    through one is seen by the others at once. A fork's child keeps it (a tombstone stays
    in the key table); :meth:`Table.delete` of the key table clears it."""
    where = (getattr(table, "endpoint_url", None), getattr(table, "region", None),
             table.key_table)
    return _FORGOTTEN.setdefault(where, {})


def release(table: TableSchema) -> None:
    """Drop what this process holds of ``table``'s tenants (its keys, and those it knows
    forgotten): its key table was deleted, every key and tombstone with it."""
    forgotten_here(table).clear()
    _KEYS.pop(table, None)


def key_schema(table: TableSchema) -> TableSchema:
    """The key table of ``table`` (``key_scope``): a table of its own, keyed by
    ``tenant``, without point-in-time recovery, stream or TTL."""
    assert table.key_table is not None
    return TableSchema(table.key_table, pk=TENANT, sk=None, type_attribute=None,
                       revision_attribute=None)


class TenantRing(Keyring):
    """One tenant's keyring: data keys wrapped (AES-GCM) under the tenant's key, which
    it holds in memory (read from the key table and unwrapped by the table's keyring)."""

    def __init__(self, tok: str, kid: str, key: bytes):
        super().__init__()
        self.key_id = f"{TENANT_PREFIX}{tok}/{kid}"
        self.key_ids = frozenset((self.key_id,))
        self._key = key

    def __repr__(self) -> str:
        return f"TenantRing({self.key_id!r})"

    def __getstate__(self) -> dict[str, Any]:
        raise TypeError("a tenant's key does not pickle (it is read again where needed)")

    def _new(self, origins: tuple[Any, ...]) -> Proto[tuple[bytes, bytes]]:
        key, nonce = os.urandom(32), os.urandom(12)
        return key, nonce + aesgcm(self._key).encrypt(nonce, key, b"tenant-dk")
        yield  # (asks for nothing)

    def _unwrap(self, key_id: str, wrapped: bytes, origins: tuple[Any, ...]) -> Proto[bytes]:
        return bytes(aesgcm(self._key).decrypt(wrapped[:12], wrapped[12:], b"tenant-dk"))
        yield  # (asks for nothing)

    def _mac(self, text: str, origins: tuple[Any, ...]) -> Proto[str]:
        raise KeyringError("a tenant's keyring MACs nothing (unique encrypted values are "
                           "MAC'd by the table's keyring)", key_id=self.key_id)
        yield  # (asks for nothing)


@dataclass(frozen=True)
class Forgotten:
    """A forgotten tenant: ``scope`` (``{field: value}``, where known), when its key was
    destroyed (ISO-8601, UTC), whether this call destroyed it (``False``: it was
    already: ``forget`` is idempotent), and ``sealed``: ``False`` where this call found no
    key (nothing was ever sealed under it, so nothing became unreadable: it warns)."""

    scope: Mapping[str, str] | None
    forgotten_at: str
    now: bool = False
    sealed: bool = True


class TenantKeys:
    """The tenants' keys of one table, as one process holds them (see the module): a
    cache of rings (and of tenants forgotten) by token, each kept :data:`TENANT_KEY_AGE`
    seconds; :meth:`prepare` (a protocol) fills it, the rest reads it."""

    def __init__(self, table: TableSchema, base: Any):
        self.table = table
        self.base = base  # (the table's keyring: it wraps the tenants' keys)
        self._lock = threading.Lock()
        self._held: dict[str, tuple[TenantRing | Forgotten | None, float]] = {}
        #: the rings held, by their key id (what a sealed value's header names)
        self._rings: dict[str, TenantRing] = {}

    # -- reading the cache (pure) ----------------------------------------------------
    def _found(self, tok: str) -> TenantRing | Forgotten | None:
        entry = self._held.get(tok)
        if entry is None:
            raise NotPrepared(f"the key of tenant {tok} of table {self.table.name!r} was not "
                              "prepared: a read or write runs its entity's Rule.prepare first")
        return entry[0]

    def ring(self, value: str) -> TenantRing:
        """The keyring of the tenant ``value`` (prepared): a forgotten one raises
        :class:`~dynaorm.ForgottenError`."""
        tok = token(value)
        found = self._found(tok)
        if isinstance(found, TenantRing):
            return found
        raise self._gone(tok, found, {self.table.key_scope or "?": value})

    def _gone(self, tok: str, found: Forgotten | None, scope: Mapping[str, str] | None = None
              ) -> KeyringError:
        key_id = f"{TENANT_PREFIX}{tok}"
        if found is None:
            return KeyringError(f"table {self.table.name!r}: tenant {tok} has no key (its "
                                f"item in {self.table.key_table!r} is missing)", key_id=key_id)
        scope = dict(found.scope or scope or {})
        return ForgottenError(
            f"table {self.table.name!r}: the tenant {scope} was forgotten at "
            f"{found.forgotten_at}: its encrypted values are gone, and none is written for "
            "it", key_id=key_id, scope=scope, forgotten_at=found.forgotten_at)

    def unwrap(self, key_id: str, wrapped: bytes) -> bytes:
        """A value's data key (what :func:`~dynaorm.schema.rules.encrypted.open_value`
        asks of a keyring): under a tenant's key, its ring's; any other (a value sealed
        before the table declared ``key_scope``), the table's keyring's."""
        ring = self._rings.get(key_id)
        if ring is not None:
            return ring.unwrap(key_id, wrapped)
        if not key_id.startswith(TENANT_PREFIX):
            return bytes(self.base.unwrap(key_id, wrapped))
        tok = key_id[len(TENANT_PREFIX):].partition("/")[0]
        found = self._found(tok)
        if not isinstance(found, TenantRing):
            raise self._gone(tok, found)
        return bytes(found.unwrap(key_id, wrapped))

    def sealed_for(self, key_id: str, tenant: str) -> bool:
        """Whether a value sealed under ``key_id`` may be opened in a row of ``tenant``:
        one sealed under that tenant's key, or under the table's keyring (before the table
        declared ``key_scope``); never one sealed under another tenant's."""
        return not key_id.startswith(TENANT_PREFIX) or key_id.startswith(
            f"{TENANT_PREFIX}{token(tenant)}/")

    def sealer(self, rule: Any, item: Mapping[str, Any]) -> TenantRing:
        """The ring a value of the row ``item`` of ``rule``'s entity is sealed with: its
        tenant's (the row's ``key_scope`` field; a forgotten one raises
        :class:`~dynaorm.ForgottenError`)."""
        tenant = rule.tenant(item)
        if tenant is None:
            raise DynaormError(f"{getattr(rule.entity, '__name__', '?')}: an Encrypted value "
                               f"of table {self.table.name!r} is sealed under its tenant's "
                               f"key: the row needs its key_scope field {self.table.key_scope!r}")
        return self.ring(tenant)

    # -- preparing (a protocol) ------------------------------------------------------
    def prepare_rows(self, rule: Any, items: tuple[dict[str, Any], ...],
                     wrapped: Mapping[tuple[str, bytes], Any], writing: bool,
                     values: Any, origins: tuple[Any, ...]) -> Proto[None]:
        """What ``rule`` (the ``Encrypted`` rule of an entity) needs before ``items`` are
        decoded (the keys of the tenants the values of ``wrapped``, their headers, are
        sealed under; the table keyring's data keys of values sealed before the table
        declared ``key_scope``) and, ``writing``, before its rows are encoded: the keys of
        the stored rows' tenants, then of those ``values()`` render (made where none is)."""
        plain = [w for w in wrapped if not w[0].startswith(TENANT_PREFIX)]
        if plain:
            yield from keyring_of(self.table).prepare(plain, origins=origins)
        toks = tokens_of(kid for kid, _ in wrapped)
        yield from self.prepare(toks, origins=origins)
        for tok in toks:  # (each ring's data keys unwrapped once, kept as a keyring keeps
            found = self._held[tok][0]  # them: a read opens from its cache)
            if isinstance(found, TenantRing):
                yield from found.prepare([w for w in wrapped if w[0] in found.key_ids])
        if writing:  # (the stored rows' tenants first: values() decodes them)
            scope = self.table.key_scope
            tenants = {t for item in items if (t := rule.tenant(item)) is not None}
            tenants |= {str(v[scope]) for v in values() if v.get(scope) is not None}
            yield from self.prepare((), {token(t): t for t in tenants}, writing=True,
                                    origins=origins)

    def prepare(self, toks: Iterable[str], values: Mapping[str, str] | None = None, *,
                writing: bool = False, origins: tuple[Any, ...] = ()) -> Proto[None]:
        """The keys of the tenants ``toks`` (and of ``values``, each tenant's value by
        token: a write seals for them) that this process does not hold (or holds for
        longer than :data:`TENANT_KEY_AGE`), read from the key table (consistently) and
        unwrapped; with ``writing``, a tenant of ``values`` without one gets a new key,
        made under a condition (a second writer reads the first's). A write for a
        forgotten tenant raises :class:`~dynaorm.ForgottenError`."""
        values = dict(values or {})
        wanted = {*toks, *values}
        now = time.monotonic()
        known = forgotten_here(self.table)
        for tok in wanted & known.keys():  # (forgotten through another Table object)
            if known[tok][1] >= now:
                self._hold(tok, *known[tok])
        stale = sorted(t for t in wanted if (e := self._held.get(t)) is None or e[1] < now)
        if stale:
            rows = yield from self._read(stale, origins)
            for tok in stale:
                found = yield from self._held_from(rows.get(tok), tok, origins)
                if found is None and writing and tok in values:
                    found = yield from self._made(tok, values[tok], origins)
                self._hold(tok, found)
        if writing:
            for tok, value in values.items():
                found = self._found(tok)
                if found is None:
                    raise self._gone(tok, found, {self.table.key_scope or "?": value})
                if isinstance(found, TenantRing):  # (forgotten: a delete seals nothing,
                    # it goes; a write that would seal is refused there, by sealer())
                    yield from found.prepare(writing=True, origins=origins)

    def _read(self, toks: list[str], origins: tuple[Any, ...]
              ) -> Generator[Any, Any, dict[str, dict[str, Any]]]:
        """The key table's items of ``toks`` (consistent BatchGetItem, 100 a request)."""
        rows = yield from rows_at(str(self.table.key_table), list(map(_key, toks)), origins)
        return {str(item[TENANT]["S"]).removeprefix(_ITEM): item for item in rows}

    def _held_from(self, item: dict[str, Any] | None, tok: str, origins: tuple[Any, ...]
                   ) -> Generator[Any, Any, TenantRing | Forgotten | None]:
        """What a key table item says of tenant ``tok``: its ring (its key unwrapped by
        the table's keyring), that it was forgotten, or nothing (``None``)."""
        if item is None:
            return None
        if "forgotten" in item:
            scope = item.get("scope", {}).get("M")
            return Forgotten({k: str(next(iter(v.values()))) for k, v in scope.items()}
                             if scope else None, str(item["forgotten"]["S"]))
        key = yield from self.base.unwrapped(str(item["key_id"]["S"]),
                                             bytes(item["wrapped"]["B"]), origins)
        return TenantRing(tok, str(item["kid"]["S"]), key)

    def _made(self, tok: str, value: str, origins: tuple[Any, ...]
              ) -> Generator[Any, Any, TenantRing | Forgotten | None]:
        """A new key for tenant ``tok`` (of ``value``), put where none is; a second
        writer that made one first wins: its key is read and used."""
        key, wrapped = yield from self.base.new_key(origins)
        kid = os.urandom(8).hex()
        item = {**_key(tok), "kid": {"S": kid}, "key_id": {"S": str(self.base.key_id)},
                "wrapped": {"B": wrapped}, "created": {"S": _now()},
                "scope": {"M": {self.table.key_scope or "?": {"S": value}}}}
        try:
            yield Call("PutItem", {"TableName": self.table.key_table, "Item": item,
                                   "ConditionExpression": "attribute_not_exists(#t)",
                                   "ExpressionAttributeNames": {"#t": TENANT}},
                       origins, idempotent=False,
                       probe=Call("GetItem", {"TableName": self.table.key_table,
                                              "Key": _key(tok),
                                              "ConsistentRead": True}, origins),
                       unapplied=lambda stored: stored is None)
        except RequestError as exc:
            if exc.code != "ConditionalCheckFailedException" and not exc.maybe_applied:
                raise KeyringError(f"table {self.table.name!r}: a key for a tenant could "
                                   f"not be made: {exc}", key_id=f"{TENANT_PREFIX}{tok}"
                                   ) from exc
            rows = yield from self._read([tok], origins)  # (the first writer's, or ours)
            return (yield from self._held_from(rows.get(tok), tok, origins))
        return TenantRing(tok, kid, key)

    def rewrap(self, value: str, origins: tuple[Any, ...]) -> Proto[bool]:
        """Wrap the key of the tenant ``value`` anew under the table keyring's current
        key where a key of its ``previous`` wraps it (rotation): one conditioned update of
        its key table item (a forget, or another rewrap, meanwhile wins). Whether this
        call wrapped it (an update resent after its answer was lost fails its condition
        on what it wrote: it reads the item, and says so)."""
        tok = token(value)
        item = (yield from self._read([tok], origins)).get(tok)
        if item is None or "forgotten" in item or item["key_id"]["S"] == str(self.base.key_id):
            return False
        was_id, was = str(item["key_id"]["S"]), bytes(item["wrapped"]["B"])
        key = yield from self.base.unwrapped(was_id, was, origins)
        wrapped = yield from self.base.wrap(key, origins)
        try:
            yield Call("UpdateItem", {
                "TableName": self.table.key_table, "Key": _key(tok),
                "UpdateExpression": "SET #k = :k, #w = :w",
                "ConditionExpression": "#k = :was_k AND #w = :was_w",
                "ExpressionAttributeNames": {"#k": "key_id", "#w": "wrapped"},
                "ExpressionAttributeValues": {
                    ":k": {"S": str(self.base.key_id)}, ":w": {"B": wrapped},
                    ":was_k": {"S": was_id}, ":was_w": {"B": was}}}, origins)
        except RequestError as exc:
            if exc.code != "ConditionalCheckFailedException":
                raise
            now = (yield from self._read([tok], origins)).get(tok) or {}
            return now.get("wrapped") == {"B": wrapped}  # (a resent update: ours applied)
        return True

    def _hold(self, tok: str, found: TenantRing | Forgotten | None,
              until: float | None = None) -> None:
        """Hold what the key table says of tenant ``tok`` for :data:`TENANT_KEY_AGE` (or
        ``until``); a forgotten one for every Table object of the key table."""
        until = time.monotonic() + TENANT_KEY_AGE if until is None else until
        if isinstance(found, Forgotten):
            forgotten_here(self.table)[tok] = (found, until)
        with self._lock:
            self._held[tok] = (found, until)
            mine = f"{TENANT_PREFIX}{tok}/"
            for kid in [k for k in self._rings if k.startswith(mine)]:
                del self._rings[kid]
            if isinstance(found, TenantRing):
                self._rings[found.key_id] = found


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def tenant_keys(table: TableSchema, base: Any) -> TenantKeys:
    """The tenants' keys of ``table`` (one per table and keyring, made on first use)."""
    found = _KEYS.get(table)
    if found is None or found.base is not base:
        with _MADE:
            found = _KEYS.get(table)
            if found is None or found.base is not base:
                found = _KEYS[table] = TenantKeys(table, base)
    return found


def forget_p(table: TableSchema, base: Any, value: str, origins: tuple[Any, ...] = ()
             ) -> Proto[Forgotten]:
    """Destroy the key of the tenant ``value`` of ``table``: its key table item
    replaced by a tombstone saying when (the audit row), unless it is one already
    (idempotent: that one's time is kept). Returns what is recorded. The tombstone holds
    this call's own id (``by``): a put resent after its answer was lost fails its
    condition on the tombstone it wrote, and still says it forgot (``now``)."""
    tok, field = token(value), table.key_scope or "?"
    at, by = _now(), os.urandom(8).hex()
    scope = {field: value}
    request = {"TableName": table.key_table, "Item": {
        **_key(tok), "forgotten": {"S": at}, "by": {"S": by},
        "scope": {"M": {field: {"S": value}}}},
        "ConditionExpression": "attribute_not_exists(#f)",
        "ExpressionAttributeNames": {"#f": "forgotten"}, "ReturnValues": "ALL_OLD"}
    try:
        was = (yield Call("PutItem", request, origins)).get("Attributes") or {}
    except RequestError as exc:
        if exc.code != "ConditionalCheckFailedException":
            raise
        out = yield Call("GetItem", {"TableName": table.key_table,
                                     "Key": _key(tok), "ConsistentRead": True},
                         origins)
        stored = out.get("Item") or {}
        found = Forgotten(scope, named(stored, "forgotten") or at,
                          stored.get("by") == {"S": by})
    else:
        found = Forgotten(scope, at, True, "wrapped" in was)
        if not found.sealed:
            warnings.warn(f"table {table.name!r}: forget of {scope}: no key was found, so "
                          "nothing was sealed for this tenant: none of its values became "
                          "unreadable (only Encrypted values are forgotten)", RuntimeWarning,
                          stacklevel=2)
    tenant_keys(table, base)._hold(tok, found)  # (this process forgot it)
    return found


def _renewed() -> None:
    """In a fork's child: every lock anew (a thread of the parent may have held one); the
    keys held are kept."""
    global _MADE
    _MADE = threading.Lock()
    for keys in list(_KEYS.values()):
        keys._lock = threading.Lock()


if hasattr(os, "register_at_fork"):  # (not on Windows)
    os.register_at_fork(after_in_child=_renewed)
