"""Keys per tenant as a table offers them (contract 24), as protocols a table's client
runs (pure: no I/O): forgetting a tenant (:func:`forget_p`), and sealing and opening bytes
under a table's keyring, or its tenant's key where the table declares ``key_scope``
(:func:`seal_p`, :func:`open_p`: what ``Table.seal`` and ``Table.open`` run, for a
surface that stores sealed values of its own, as ``dynaorm.langgraph`` does). The rules
themselves live in :mod:`dynaorm.schema.rules.tenants` and
:mod:`dynaorm.schema.rules.encrypted`; the phases and the client reach them through here.
"""

from collections.abc import Mapping
from typing import Any

from dynaorm.errors import DecryptionError, DynaormError
from dynaorm.protocol.steps import Proto
from dynaorm.schema.rules.encrypted import header_of, open_value, seal_value
from dynaorm.schema.rules.keyrings import keyring_of
from dynaorm.schema.rules.tenants import (
    TENANT_PREFIX,
    Forgotten,
    key_schema,
    release,
    tenant_keys,
    token,
)
from dynaorm.schema.rules.tenants import forget_p as _forget_p
from dynaorm.schema.table import TableSchema

# (the phases' door to the tenants rule: client/ names no rule module)
__all__ = ["Forgotten", "forget_p", "key_schema", "open_p", "release", "rewrap_p",
           "seal_p", "tenant_of"]

#: the attribute name sealed bytes are bound to (with the table and the context)
_SEALED = "sealed"


def tenant_of(table: TableSchema, scope: Mapping[str, Any] | None,
              needed: bool = True) -> str | None:
    """The tenant ``scope`` names (``{key_scope field: value}``) on ``table``, as text;
    ``None`` for a table without ``key_scope`` (where ``scope`` must be ``None``), or
    none given where none is ``needed``. Anything else is refused."""
    field = table.key_scope
    if field is None or (scope is None and not needed):
        if scope:
            raise DynaormError(f"table {table.name!r} declares no key_scope: scope= names "
                               "no tenant there")
        return None
    if not isinstance(scope, Mapping) or set(scope) != {field} or scope[field] is None or (
            isinstance(scope[field], bool)):
        raise DynaormError(f"table {table.name!r}: scope= takes {{{field!r}: value}} (its "
                           f"key_scope), got {scope!r}")
    value = scope[field]
    if not isinstance(value, str | int):
        raise DynaormError(f"table {table.name!r}: a tenant is a string or a number, got "
                           f"{value!r}")
    return str(value)


def forget_p(table: TableSchema, scope: Mapping[str, Any]) -> Proto[Forgotten]:
    """Destroy the key of the tenant ``scope`` names (see
    :func:`dynaorm.schema.rules.tenants.forget_p`): idempotent, its tombstone (when) is
    the audit row."""
    tenant = tenant_of(table, scope)
    if tenant is None:
        raise DynaormError(f"table {table.name!r}: forget needs Table(key_scope=...): its "
                           "values are sealed under no tenant's key")
    return (yield from _forget_p(table, keyring_of(table), tenant))


def rewrap_p(table: TableSchema, tenant: str, origins: tuple[Any, ...]) -> Proto[bool]:
    """Wrap the key of ``tenant`` anew under ``table``'s keyring's current key where an
    older one wraps it (``jobs.reencrypt``); whether it did."""
    return (yield from tenant_keys(table, keyring_of(table)).rewrap(tenant, origins))


def _bound(context: str) -> dict[str, Any]:
    if not isinstance(context, str):
        raise DynaormError(f"context= takes a string, got {context!r}")
    return {"context": {"S": context}}


def seal_p(table: TableSchema, data: bytes, scope: Mapping[str, Any] | None,
           context: str) -> Proto[bytes]:
    """``data`` sealed (AES-GCM, as an ``Encrypted`` value is) under ``table``'s keyring,
    or under the key of the tenant ``scope`` names (made on first use; a forgotten
    tenant's is :class:`~dynaorm.ForgottenError`), bound to the table and ``context``:
    it opens with :func:`open_p` and the same ``context`` only."""
    if not isinstance(data, bytes | bytearray):
        raise DynaormError(f"seal takes bytes, got {type(data).__name__}")
    tenant = tenant_of(table, scope)
    base = keyring_of(table)
    if tenant is None:
        yield from base.prepare(writing=True)
        ring = base
    else:
        keys = tenant_keys(table, base)
        yield from keys.prepare((), {token(tenant): tenant}, writing=True)
        ring = keys.ring(tenant)
    sealed = seal_value(ring, {"B": bytes(data)}, table.name, _bound(context), _SEALED)
    return bytes(sealed["B"])


def open_p(table: TableSchema, blob: bytes, scope: Mapping[str, Any] | None,
           context: str) -> Proto[bytes]:
    """The bytes :func:`seal_p` sealed into ``blob`` for ``table`` and ``context``
    (``scope``, where given: the tenant it must be sealed for); anything else is
    :class:`~dynaorm.DecryptionError`, a forgotten tenant's
    :class:`~dynaorm.ForgottenError`."""
    tenant = tenant_of(table, scope, needed=False)
    av = {"B": bytes(blob)}
    header = header_of(av)
    if header is None:
        raise DecryptionError("the bytes given are not a sealed value", field=_SEALED,
                              key_id="?")
    base = keyring_of(table)
    if table.key_scope is None:
        yield from base.prepare([header])
        opener = base
    else:
        kid = header[0]
        if tenant is not None and not kid.startswith(f"{TENANT_PREFIX}{token(tenant)}/"):
            raise DecryptionError(f"the value was not sealed for the tenant {dict(scope or {})}",
                                  field=_SEALED, key_id=kid)
        opener = tenant_keys(table, base)
        if kid.startswith(TENANT_PREFIX):
            yield from opener.prepare([kid[len(TENANT_PREFIX):].partition("/")[0]])
        else:
            yield from base.prepare([header])
    opened = open_value(opener, av, table.name, _bound(context), _SEALED, _SEALED)
    return bytes(opened["B"])
