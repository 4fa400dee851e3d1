"""A third party's package, written on dynaorm's public API alone (contract 24, "One public
door"): what ``tests/integration/test_public_door.py`` runs, and what
``tests/system/test_public_door.py`` proves takes no private name of dynaorm (its imports
are the top-level package and the documented modules; it reads no ``._name`` of dynaorm's
objects).

- operations written once for both kinds of session (:func:`upsert`, :func:`refused`,
  :func:`count`), run by ``Session.run`` or ``AsyncSession.run``;
- a session's scope and idempotency key, read to make a session held alike
  (:func:`sibling`);
- the key grammar (:func:`tenant_prefix`, :func:`fields_of_key`);
- a kind of row of its own, kept in the application's table beside its entities
  (:data:`NOTES`, :func:`keep_note`, :func:`notes`);
- an object's stored item both ways (:func:`stored`, :func:`loaded`).
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from datetime import timedelta
from functools import partial
from typing import Any

from dynaorm import (
    AsyncSession,
    Entity,
    Operation,
    RowKind,
    ScopeError,
    Session,
    Table,
    codec,
    keys,
)
from dynaorm.rules import call

#: an operation: a generator of steps (calls of its session taking no argument)
Op = Generator[Callable[[], Any], Any, Any]
AnySession = Session | AsyncSession

#: the rows this package keeps in an application's table (described where the table is:
#: ``table.model()``, ``dynaorm iam``, exports and ``check`` read it there)
NOTES = RowKind("extension note", "dynaorm:note", "{name}", ttl=timedelta(days=1),
                writer="tests.support.extension.keep_note")


def upsert(s: AnySession, entity: type[Entity], changes: dict[str, Any],
           **key: Any) -> Op:
    """The object of ``entity`` at ``key`` with ``changes`` set (made when absent), saved
    in one commit (under the session's idempotency key, if it has one)."""
    obj = yield partial(s.get, entity, consistent=True, **key)
    if obj is None:
        obj = entity(**key, **changes)
    else:
        for name, value in changes.items():
            setattr(obj, name, value)
    s.save(obj)
    done = yield s.commit
    return obj, done.replayed


def refused(s: AnySession, entity: type[Entity], **key: Any) -> Op:
    """``"refused"`` when the session's scope refuses a get of ``key`` (the error its step
    raised, thrown into the operation and handled here), else what the get found."""
    try:
        return (yield partial(s.get, entity, **key))
    except ScopeError:
        return "refused"


def count(s: AnySession, entity: type[Entity], cleanup: list[str], **partition: Any
          ) -> Op:
    """How many objects of ``entity`` one partition holds; ``cleanup`` is told when the
    operation ends, however it ends."""
    try:
        found = yield s.query(entity, **partition).all
        return len(found)
    finally:
        cleanup.append("closed")


def sibling(s: AnySession, idempotency_key: str | None = None) -> AnySession:
    """A session of the same kind on the same table, held to the same scope, with
    ``idempotency_key`` (else ``s``'s)."""
    return type(s)(s.table or s.client, scope=s.scope,
                   idempotency_key=idempotency_key or s.idempotency_key)


def tenant_prefix(template: str, field: str) -> str | None:
    """The literal start of ``template``'s keys before ``field``'s value, when the key
    grammar proves every key of one value of ``field`` begins so (else ``None``)."""
    found = keys.parse(template).scope_prefix((field,))
    if found is None:
        return None
    parts, _ = found
    return "".join(parts[:parts.index("{" + field + "}")])


def fields_of_key(template: str, item: dict[str, Any], attribute: str) -> dict[str, Any] | None:
    """The field texts ``template`` rendered into ``item``'s key ``attribute`` (DynamoDB
    JSON), ``None`` when it did not render it."""
    return keys.parse(template).parse_key(keys.key_value(item[attribute]))


def keep_note(table: Table, name: str, text: str) -> dict[str, Any]:
    """Write one note of this package into ``table`` (its kind registered there first),
    as dynaorm sends its own requests (retries, hooks, tracing); the item written."""
    table.keeps(NOTES)
    key = f"{NOTES.type}#{name}"
    item = {table.pk: {"S": key}, "text": {"S": text}}
    if table.sk is not None:
        item[table.sk] = {"S": key}
    if table.type_attribute:
        item[table.type_attribute] = {"S": NOTES.type}
    table.db.driver.run(call("PutItem", {"TableName": table.name, "Item": item}),
                        Operation("extension.note", (table.name,)))
    return item


def notes(table: Table, items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The items of ``items`` (DynamoDB JSON) that are rows the table keeps beside its
    entities (this package's notes among them)."""
    return [i for i in items if table.own_row(i)]


def stored(obj: Entity) -> dict[str, Any]:
    """The item ``obj`` is stored as."""
    return codec.item_of(obj)


def loaded(entity: type[Entity], item: dict[str, Any]) -> Entity:
    """A new object of ``entity`` holding what ``item`` stores."""
    return entity.model_validate(codec.fields_of(entity, item))
