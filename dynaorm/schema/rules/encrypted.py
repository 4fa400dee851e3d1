"""Field-level encryption (contract 20): ``Encrypted[T]`` fields stored as AES-GCM
ciphertext (the ``cryptography`` package, extra ``dynaorm[encryption]``) under a data key
that a keyring wraps, bound to the table, the item key and the field.

A stored value is ``B``: ``1 | len(key id) | key id | len(wrapped) (2) | wrapped data key |
nonce (12) | AES-GCM of the value's DynamoDB JSON``; the additional data is the table name,
the item key, the attribute and everything before the nonce, so a ciphertext copied to
another item, field or table, or edited anywhere, is :class:`~dynaorm.DecryptionError`.

Sealing and opening are pure: they read what the keyring (:mod:`dynaorm.schema.rules.keyrings`)
holds. What they will need is asked for first, as protocol steps the client sends:
:meth:`Encryption.prepare` (the data key of new values, the data keys of stored ones)
before rows are encoded or decoded; the unique rule asks for the MACs a commit or a
``find`` renders into guard keys the same way, before it plans. The keyrings cache what
they got, so a steady-state commit or read makes no KMS call.
"""

from __future__ import annotations

import base64
import json
import os
from collections.abc import Generator, Mapping
from dataclasses import dataclass
from typing import Annotated, Any, TypeVar, cast

from dynaorm._types import AttributeValue, Item, PlainKey
from dynaorm.errors import DecryptionError, DynaormError, ForgottenError
from dynaorm.schema.rules import Declaration, Rule, Values, no_values, refuse_stored, register
from dynaorm.schema.rules.keyrings import NotPrepared, aesgcm, keyring_of
from dynaorm.schema.rules.tenants import tenant_keys
from dynaorm.values.codec import binary_from_json
from dynaorm.values.tree import holding

T = TypeVar("T")
#: the format of a sealed value bound to the row it is stored in (0.6): a version row's
#: ciphertext does not decrypt as its latest copy's. Format 1 (0.5) was bound to the
#: entity's key, shared by its latest copy and version rows; it still reads.
ROW_BOUND = 2
#: The metadata that marks a field encrypted (``Encrypted[T]`` is ``Annotated[T, ENCRYPTED]``).
ENCRYPTED = "dynaorm:encrypted"
Encrypted = Annotated[T, ENCRYPTED]
"""A field annotated ``Encrypted[str]`` (any type the codec stores) is stored encrypted."""


def _aad(table: str, key: Mapping[str, Any], attr: str, header: bytes) -> bytes:
    return repr((table, sorted(key.items(), key=str), attr)).encode() + b"\0" + header


def seal_value(keyring: Any, av: AttributeValue, table: str, key: Mapping[str, Any],
               attr: str) -> AttributeValue:
    """``av`` encrypted for attribute ``attr`` of the item ``key`` of ``table``."""
    (data_key, header), nonce = keyring.data_key(), os.urandom(12)
    header = bytes([ROW_BOUND]) + header[1:]  # (the keyring's header, in this format)
    text = json.dumps(av, default=lambda b: base64.b64encode(b).decode()).encode()
    return {"B": header + nonce + aesgcm(data_key).encrypt(nonce, text, _aad(
        table, key, attr, header))}


def open_value(keyring: Any, av: AttributeValue, table: str, key: Mapping[str, Any],
               attr: str, field: str, legacy: Mapping[str, Any] | None = None
               ) -> AttributeValue:
    """The value :func:`seal_value` sealed for the row ``key``; a value of format 1
    (0.5's) was bound to its entity's key ``legacy`` (a version row's: its latest copy's);
    anything else is :class:`DecryptionError`, which names the key only from a header laid
    out as one (a value stored in the clear is no header: its bytes are never shown)."""
    key_id = "?"
    try:
        if (header := header_of(av)) is None:
            raise ValueError("not a sealed value")
        blob, n = bytes(av["B"]), av["B"][1]
        key_id, end = header[0], 4 + n + len(header[1])
        bound = key if blob[0] == ROW_BOUND else legacy or key
        text = aesgcm(keyring.unwrap(key_id, blob[4 + n:end])).decrypt(
            blob[end:end + 12], blob[end + 12:], _aad(table, bound, attr, blob[:end]))
        return cast(AttributeValue, binary_from_json(json.loads(text)))
    except (NotPrepared, ForgottenError):
        raise
    except Exception as exc:
        raise DecryptionError(f"field {field!r} does not decrypt under key {key_id!r} (missing "
                              f"or wrong key, or a value not written here: {exc!r})",
                              field=field, key_id=key_id) from exc


def header_of(av: Any) -> tuple[str, bytes] | None:
    """``(key id, wrapped data key)`` of a value :func:`seal_value` sealed (any format),
    or ``None`` for anything else."""
    try:
        blob = av["B"]  # (not copied: a large binary value is only looked at)
        n = blob[1]
        end = 4 + n + int.from_bytes(blob[2 + n:4 + n], "big")
        if blob[0] not in (1, ROW_BOUND) or len(blob) < end:
            return None
        return bytes(blob[2:2 + n]).decode(), bytes(blob[4 + n:end])
    except (KeyError, IndexError, TypeError, ValueError):
        return None


@register
@dataclass(frozen=True, slots=True, eq=False)
class Encryption(Rule):
    """``Encrypted[T]`` fields: sealed on every row written (bound to that row's key),
    opened on every row read, refused where a ciphertext cannot be compared (conditions,
    keys, indexes, ``add``/``append``), and never shown in a message."""

    #: stored attribute name -> field name, of every ``Encrypted`` field
    fields: Mapping[str, str]
    table: Any
    versioned: bool
    entity: type[Any]
    #: the stored attribute of the table's ``key_scope`` field (``None``: no key_scope):
    #: each row's values are sealed under its tenant's key
    scope_attr: str | None
    name = "encrypted"
    order = 50
    answers = {
        "save": "each encrypted attribute sealed (AES-GCM) bound to the table, the row's own "
                "key and the attribute; an unchanged value keeps its ciphertext",
        "update": "set() of an encrypted field is sealed bound to the item's key; add, "
                  "append and conditions on it are refused before sending",
        "delete": "nothing of its own (a unique encrypted field's guard goes, by its MAC)",
        "get": "opened with the table's keyring; a missing or wrong key is DecryptionError",
        "query": "filters naming it are refused; results are opened",
        "values": "values() of an encrypted field are the plaintext, opened",
        "scan": "as query",
        "stream": "images are opened where the keyring is at hand (Change.entity)",
        "history": "each version row's ciphertext is bound to that version row: it does "
                   "not decrypt as the latest copy's",
        "migrate": "a row moved to a new key is sealed anew for it",
        "backfill": "fn sees plaintext; a changed value is sealed anew (jobs.reencrypt: every "
                    "value not under the keyring's current key, history included)",
        "check": "never compares ciphertexts with plaintext",
        "export": "left out (encrypted='omit'), or written as plaintext ('decrypt')",
        "search": "a vector field cannot be encrypted (refused at class definition)",
        "messages": "an encrypted field's value is shown as <encrypted>",
        "logs": "as messages",
        "spans": "as messages: no span attribute holds a plaintext",
    }

    @classmethod
    def build(cls, decl: Declaration) -> Encryption | None:
        fields = {decl.attr(n): n for n in holding(decl.trees, ENCRYPTED)}
        decl.uncompared("Encrypted", fields.values())
        if not fields:
            return None
        scope = decl.table.key_scope
        if scope is not None and (scope not in decl.field_names or scope in fields.values()):
            raise DynaormError(
                f"{decl.owner}: Encrypted {sorted(fields.values())} on table "
                f"{decl.table.name!r} (key_scope={scope!r}) need the field {scope!r}, "
                "not encrypted: its value chooses the tenant key each row is sealed under")
        return cls(fields, decl.table, bool(decl.meta.get("versioned")), decl.cls,
                   None if scope is None else decl.attr(scope))

    def _keys(self) -> Any:
        """The tenants' keys of the table (``key_scope``), else ``None``."""
        if self.scope_attr is None:
            return None
        return tenant_keys(self.table, keyring_of(self.table))

    def _opener(self) -> Any:
        """What opens a stored value: the tenants' keys (which open a value sealed before
        ``key_scope`` with the table's keyring), else the table's keyring."""
        return self._keys() or keyring_of(self.table)

    def tenant(self, item: Mapping[str, Any]) -> str | None:
        """The tenant of the row ``item`` (its ``key_scope`` field's value, as text;
        ``None``: no key_scope, or none stored)."""
        av = item.get(self.scope_attr or "") or {}
        found = av.get("S", av.get("N"))
        return None if found is None else str(found)

    def _sealer(self, item: Mapping[str, Any]) -> Any:
        """The keyring a value of the row ``item`` is sealed with: its tenant's (a
        forgotten one raises :class:`~dynaorm.ForgottenError`), else the table's."""
        keys = self._keys()
        return keyring_of(self.table) if keys is None else keys.sealer(self, item)

    def prepare(self, items: tuple[Item, ...], writing: bool,
                values: Values = no_values) -> Generator[Any, Any, None]:
        """The keyring's data keys of the values sealed in ``items`` (any row, any
        attribute: under an old layout's name too; a value under a key the keyring does
        not hold is skipped), and, ``writing``, one for new values. With ``key_scope``:
        the keys of the tenants those values are sealed under, and, ``writing``, of the
        tenants of the rows written (made where a tenant has none)."""
        wrapped = dict.fromkeys(found for item in items for av in item.values()
                                if isinstance(av, dict) and "B" in av  # (a malformed member:
                                and (found := header_of(av)) is not None)  # decode says)
        origins = (self.entity,)
        keys = self._keys()
        if keys is not None:
            yield from keys.prepare_rows(self, items, wrapped, writing, values, origins)
        elif wrapped or writing:
            yield from keyring_of(self.table).prepare(wrapped, writing=writing,
                                                      origins=origins)

    def renamed(self, attributes: Mapping[str, str]) -> Encryption:
        """This rule for rows whose fields are stored under other attribute names
        (``attributes``: stored name -> field name; a previous layout's)."""
        return Encryption({a: n for a, n in attributes.items() if n in self.fields.values()},
                          self.table, self.versioned, self.entity, next((
                              a for a, n in attributes.items() if n == self.table.key_scope),
                              self.scope_attr))  # (no key_scope: no scope_attr, None)

    def reads(self, touched: frozenset[str]) -> bool:
        """With ``key_scope``, an update by key of an encrypted field, or of the
        ``key_scope`` field itself, is read first (the row's tenant chooses the key its
        values are sealed under: a row moved to another tenant is sealed anew under that
        tenant's, or forgetting it would leave them readable)."""
        return self.scope_attr is not None and (not touched.isdisjoint(
            self.fields.values()) or self.table.key_scope in touched)

    def _bound(self, item: Mapping[str, AttributeValue]) -> dict[str, Any]:
        """The row key a ciphertext stored in ``item`` is bound to."""
        return {a: item[a] for a in (self.table.pk, self.table.sk) if a}

    def _legacy(self, bound: dict[str, Any]) -> dict[str, Any]:
        """The key a 0.5 ciphertext in the row ``bound`` was bound to (its entity's)."""
        sk = self.table.sk
        if not self.versioned or sk is None:
            return bound
        return {**bound, sk: {"S": str(bound[sk]["S"]).partition("_")[2]}}

    def _open(self, keyring: Any, av: AttributeValue, bound: dict[str, Any], attr: str
              ) -> AttributeValue:
        return open_value(keyring, av, self.table.name, bound, attr, self.fields[attr],
                          self._legacy(bound))

    def encode(self, item: Item, key: PlainKey, stored: Item | None) -> None:
        if self.fields.keys().isdisjoint(item):
            return
        keyring, opener, bound = self._sealer(item), self._opener(), self._bound(item)
        same = stored if stored is not None and self._bound(stored) == bound else {}
        for attr in self.fields.keys() & item.keys():
            old = same.get(attr)
            if old is None or not _current(keyring, old) or self._open(
                    opener, old, bound, attr) != item[attr]:
                old = seal_value(keyring, item[attr], self.table.name, bound, attr)
            item[attr] = old

    def rebind(self, row: Item, source: Item) -> None:
        if self.fields.keys().isdisjoint(row):
            return
        keyring, opener = self._sealer(row), self._opener()
        bound, was = self._bound(row), self._bound(source)
        for attr in self.fields.keys() & row.keys():
            row[attr] = seal_value(keyring, self._open(opener, row[attr], was, attr),
                                   self.table.name, bound, attr)

    def decode(self, item: Item) -> Item:
        if self.fields.keys().isdisjoint(item):  # (none stored: no keyring needed)
            return item
        keyring, bound = self._opener(), self._bound(item)
        tenant = self.tenant(item)  # (a value sealed for another tenant than the one its
        if tenant is not None:  # row names never opens in it; a projection may name none)
            for attr in self.fields.keys() & item.keys():
                found = header_of(item[attr])
                if found is not None and not keyring.sealed_for(found[0], tenant):
                    raise DecryptionError(
                        f"field {self.fields[attr]!r} is sealed under another tenant's key "
                        f"({found[0]!r}) than its row's ({self.table.key_scope}={tenant!r})",
                        field=self.fields[attr], key_id=found[0])
        return {a: v if a not in self.fields else self._open(keyring, v, bound, a)
                for a, v in item.items()}

    def resealed(self, item: Item) -> Item:
        """The ciphertexts of ``item``, a stored row (its values kept in S3 put back),
        that are not of this format under the keyring's current key (with ``key_scope``:
        its tenant's), each sealed anew for the row (``jobs.reencrypt``: rotation to the
        end); a value that is no ciphertext raises :class:`~dynaorm.DecryptionError`."""
        if self.fields.keys().isdisjoint(item):
            return {}
        keyring, opener, bound = self._sealer(item), self._opener(), self._bound(item)
        return {a: seal_value(keyring, self._open(opener, av, bound, a), self.table.name,
                              bound, a)
                for a, av in item.items() if a in self.fields and not _current(keyring, av)}

    def refuse(self, use: str, name: str) -> None:
        if name in self.fields.values():  # (a value set is sealed at the item's key)
            refuse_stored(self.entity.__name__, "Encrypted", name, use,
                          "its stored value is ciphertext")

    def redact(self, name: str, value: Any) -> Any:
        return "<encrypted>" if name in self.fields.values() and value is not None else value

    def export(self, item: Item) -> Item | None:
        return {k: v for k, v in item.items() if k not in self.fields}


def _current(keyring: Any, av: AttributeValue) -> bool:
    """Whether a stored ciphertext is of this format and under the keyring's current key
    (else a write seals the value anew: rotation moves values to the new key)."""
    blob = bytes(av.get("B") or b"\0\0")
    return blob[0] == ROW_BOUND and blob[2:2 + blob[1]].decode(errors="replace") == str(
        keyring.key_id)
