"""A write of an entity described rather than made: the :class:`~dynaorm.schema.rules.Change`
its rules' ``rows`` hooks are run on to say what rows they add (the model's row kinds,
the rule rows readers recognise). Below the model and the spec, which both ask it."""

from typing import Any

from dynaorm.schema.rules import Change, Shape
from dynaorm.schema.rules.versioned import version_sk


def described(spec: Any, write: str) -> Change:
    """A write of kind ``write`` (``"insert"``, ``"update"``, ``"move"``, ``"delete"``) of
    the entity, described: its values and keys are :class:`~dynaorm.schema.rules.Shape` s
    (every value changed by an update, none by a move to its current layout, a version
    row written by a save, no history taken by a delete)."""
    new = {f: Shape(f"{{{f}}}") for f in spec.field_names}
    old = {f: Shape(f"{{{f} before}}") for f in spec.field_names}
    key = own_key(spec)
    if write == "insert":
        return Change(spec.cls, key, None, new, None, key, {}, Shape("<n>"))
    if write == "update":
        return Change(spec.cls, key, old, new, key, key, {}, Shape("<n>"))
    if write == "move":  # (to another layout: its values as they were)
        return Change(spec.cls, key, new, new, key, key, {}, Shape("<n>"), retyped=True)
    return Change(spec.cls, key, old, None, key, None)


def own_key(spec: Any) -> dict[str, str]:
    """The key shape of the entity's own row: its key templates as declared (a versioned
    entity's latest copy under ``v0_``)."""
    key = {spec.table.pk: spec.pk.source}
    if spec.sk is not None and spec.table.sk is not None:
        key[spec.table.sk] = version_sk(spec.sk.source, None) if spec.versioned else (
            spec.sk.source)
    return key
