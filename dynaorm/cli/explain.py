"""``dynaorm explain MODULE[:TABLE]``: each access pattern of each entity (declared with
``table.pattern()``, else those its keys allow) explained with :func:`dynaorm.explain` on a
sample object of the entity (every field a small value of its type; ``item_size``: one
string field padded so that the stored item has about that many bytes). Nothing is sent.
"""

import dataclasses
import uuid
from collections.abc import Mapping
from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Annotated, Any

from dynaorm.client.table import Table
from dynaorm.core.explain import Explanation, explain
from dynaorm.errors import DynaormError
from dynaorm.schema.entity import Entity, encode_entity, spec_of
from dynaorm.schema.model import AccessPattern, describe_type, patterns_of
from dynaorm.sync.session import Session
from dynaorm.values.limits import item_size

_SCALARS: dict[str, Any] = {
    "string": "x", "integer": 1, "number": 1.5, "decimal": Decimal(1), "boolean": True,
    "binary": b"x", "datetime": datetime(2025, 1, 1, tzinfo=UTC), "date": date(2025, 1, 1),
    "uuid": uuid.UUID(int=1), "any": "x"}


def _value(desc: Mapping[str, Any]) -> Any:
    """A small value of a type the model describes."""
    kind = desc["type"]
    if kind in _SCALARS:
        return _SCALARS[kind]
    if kind == "enum":
        return desc["values"][0]
    if kind == "union":
        return _value(desc["of"][0])
    if kind == "object":
        return {f["name"]: _value(f) for f in desc.get("fields", ()) if f.get("required", True)}
    if desc.get("vector"):
        return [0.5] * int(desc["vector"])
    return [] if kind == "list" else set() if kind == "set" else {}


def sample(entity: type[Entity], item_size_: int | None = None) -> Entity:
    """An object of ``entity`` with a small value of its type in every field (padded to
    about ``item_size_`` stored bytes through its first string field not in a key)."""
    spec = spec_of(entity)
    values = {n: _value(describe_type(Annotated[(i.annotation, *i.metadata)] if i.metadata
                                      else i.annotation))  # (a Vector's marker is metadata)
              for n, i in entity.model_fields.items() if n not in spec.timestamps}
    obj = entity(**values)
    keyed = {f for t in (spec.pk, spec.sk, *(i.pk for i in spec.indexes),
                         *(i.sk for i in spec.indexes)) if t is not None for f in t.fields}
    pad = next((n for n, v in values.items() if v == "x" and n not in keyed
                and n not in spec.unique_fields), None)
    if item_size_ is not None and pad is not None:
        missing = item_size_ - item_size(encode_entity(obj, spec))
        if missing > 0:
            obj = entity(**{**values, pad: "x" * (missing + 1)})
    return obj


def _explain(session: Session, p: AccessPattern, obj: Entity) -> Explanation:
    """``p`` explained on ``obj``."""
    entity = type(obj)
    spec = spec_of(entity)
    named = [q if isinstance(q, str) else q[0] for q in p.parameters]
    given = {n: getattr(obj, n) for n in named if n in entity.model_fields}
    key = {n: getattr(obj, n) for n in spec.lookup_fields}
    if p.operation in ("GetItem", "BatchGetItem"):
        return explain(entity, items=[obj], **(given or key))
    if p.operation == "SearchVectors":
        index = spec.table.vector_index(p.index or "")
        vector = getattr(obj, spec.stored_fields[index.attribute])
        return explain(session.search(entity, index.name, vector=vector, **given),
                       items=[obj])
    if p.operation in ("Query", "Scan"):
        read = session.scan(entity) if p.operation == "Scan" else (
            session.history(entity, **key) if p.name.startswith("history_") and not p.index
            else session.query(entity, index=p.index, **given))
        return explain(read, items=[obj])
    return _write(session, p, obj)


def _write(session: Session, p: AccessPattern, obj: Entity) -> Explanation:
    """A write pattern ``p`` explained on ``obj``: a delete or an update of it as a read
    finds it (the read a real one by key makes first is named), else a save of it."""
    entity, spec = type(obj), spec_of(type(obj))
    loaded = entity._from_item(encode_entity(obj, spec), spec)  # (as a read would find it)
    if p.operation == "DeleteItem" or p.name.startswith("delete_"):
        session.delete(loaded)
    elif p.operation == "UpdateItem":
        field = next((n for n in entity.model_fields if n not in spec.lookup_fields), None)
        staged = session.update(loaded)
        if field is not None:
            staged.set(**{field: getattr(obj, field)})
    else:
        session.save(obj)
    try:
        found = explain(session)
    finally:
        session.rollback()
    if spec.has_rules and (p.operation in ("UpdateItem", "DeleteItem")
                           or p.name.startswith("delete_")):
        first = f"GetItem {spec.table.name} (consistent): by key, the item is read first"
        found = dataclasses.replace(found, reads_first=(first, *found.reads_first))
    return found


def explain_patterns(table: Table, item_size_: int | None = None
                     ) -> list[tuple[AccessPattern, Explanation | str]]:
    """Each access pattern of each entity of ``table`` with its explanation (or why it
    cannot be explained)."""
    session = Session(table)
    out: list[tuple[AccessPattern, Explanation | str]] = []
    for cls in table.entities.values():
        spec = spec_of(cls)
        try:
            obj = sample(cls, item_size_)
        except (DynaormError, ValueError, TypeError) as exc:
            out += [(p, f"no sample {cls.__name__}: {exc}") for p in patterns_of(spec)]
            continue
        for p in patterns_of(spec):
            try:
                out.append((p, _explain(session, p, obj)))
            except (DynaormError, ValueError, TypeError) as exc:
                out.append((p, f"cannot be explained: {exc}"))
    return out
