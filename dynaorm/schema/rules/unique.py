"""The unique rule (``Meta.unique``): one guard item per unique value, claimed, re-pointed
and released in the same transaction as its owner's row (contract 5).

A guard lives at ``[scope#]prefix#value`` (both key parts), names its owner row
(:data:`OWNER_PK`, :data:`OWNER_SK`, :data:`OWNER_TYPE`) and the field it guards
(:data:`UNIQUE_FIELD`), carries its owner's TTL on a table with one (so DynamoDB expires it
with its owner), and is claimed on the condition
:func:`~dynaorm.values.expressions.free` (free, or held by an expired owner). An
encrypted unique field's guard holds a keyed MAC of the value, never the value
(:mod:`dynaorm.schema.rules.encrypted`).
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from dynaorm._types import Item, PlainKey
from dynaorm.errors import DynaormError, KeyTemplateError
from dynaorm.schema.rules import (
    Change,
    Declaration,
    Explained,
    Rows,
    Rule,
    Shape,
    Values,
    no_values,
    register,
)
from dynaorm.schema.rules.encrypted import ENCRYPTED
from dynaorm.schema.rules.keyrings import bound_keyring, check_macs, keyring_of
from dynaorm.schema.table import TableSchema
from dynaorm.schema.templates import KeyTemplate, field_template, render_value
from dynaorm.values.expressions import Condition, all_of, free, not_exists, raw_eq
from dynaorm.values.keys import GUARD_TYPE, named
from dynaorm.values.records import Delete, Fail, Op, Origin, Put, Role
from dynaorm.values.tree import holding
from dynaorm.values.ttl import encode_ttl


@dataclass(frozen=True)
class Unique:
    """A unique attribute: ``Unique("email", normalize=str.lower, prefix=..., scope=...)``."""

    field: str
    """The unique field's name."""
    prefix: str | None = None
    """The guard key's prefix (default: the field's name): ``"member_badge"`` gives
    ``"member_badge#1234"``."""
    normalize: Callable[[Any], Any] | None = None
    """Applied to the value before it goes into the guard key (``str.lower``: one value, any
    case)."""
    scope: str | None = None
    """A key template the value is unique within (``"ORG#{org_id}"``: one username per
    organisation); ``None``: unique in the whole table."""


@dataclass(frozen=True)
class UniqueRule:
    """A compiled :class:`Unique`: knows how to render its guard item's key."""

    field: str
    prefix: str
    normalize: Callable[[Any], Any] | None
    scope: KeyTemplate | None
    #: an encrypted field's: the table whose keyring MACs its values (the guard holds the
    #: MAC; ``None``: its value as it is)
    mac: Any

    def text(self, values: Mapping[str, Any], owner: str) -> str | None:
        """The value a guard key renders, as text (normalised; before its MAC), or
        ``None`` when the field is ``None``."""
        value = values.get(self.field)
        if value is None or isinstance(value, Shape):  # (a described write: the shape)
            return value
        if self.normalize is not None:
            value = self.normalize(value)
        text = render_value(value)
        if not text:
            raise KeyTemplateError(f"{owner}: unique field {self.field!r} is empty")
        return text

    def guard_key(self, values: Mapping[str, Any], owner: str) -> str | None:
        """``[scope#]prefix#value``, or ``None`` when the field is ``None`` (an encrypted
        field's value as its MAC, asked for first: :meth:`macs_p`)."""
        text = self.text(values, owner)
        if text is None:
            return None
        if self.mac is not None and not isinstance(text, Shape):
            text = str(keyring_of(self.mac).mac(text))
        key = f"{self.prefix}#{text}"
        if self.scope is not None:
            key = f"{self.scope.render(values, owner)}#{key}"
        return key

    @property
    def fields(self) -> tuple[str, ...]:
        return (self.field, *(self.scope.fields if self.scope else ()))

    def macs_p(self, values: Iterable[Mapping[str, Any]], owner: str,
               origins: tuple[Any, ...] = ()) -> Generator[Any, Any, None]:
        """The MACs the guard keys of ``values`` render (an encrypted field's), asked for
        as protocol steps (a keyring that makes them itself asks for nothing)."""
        if self.mac is None:
            return
        texts = {t for v in values if (t := self.text(v, owner)) is not None
                 and not isinstance(t, Shape)}
        if texts:
            yield from keyring_of(self.mac).prepare(macs=sorted(texts), origins=origins)

    # -- the reads of a guard (``find``) ------------------------------------------------
    def guard_key_p(self, values: Mapping[str, Any], owner: str, origins: tuple[Any, ...]
                    ) -> Generator[Any, Any, str | None]:
        """:meth:`guard_key` as a protocol: the MAC it renders asked for first."""
        yield from self.macs_p((values,), owner, origins)
        return self.guard_key(values, owner)

    @staticmethod
    def row_key(table: TableSchema, key: str) -> PlainKey:
        """The primary key of the guard item at ``key`` (the same text in both key parts)."""
        out = {table.pk: key}
        if table.sk is not None:
            out[table.sk] = key
        return out

    def item(self, spec: Owner, key: str, owner: PlainKey, ttl: int | None = None) -> Item:
        """The guard item at ``key`` owned by the row at ``owner`` (:func:`guard_item`)."""
        return guard_item(spec, self, key, owner, ttl)

    @staticmethod
    def owner_key(table: TableSchema, guard: Item | None, type_name: str) -> PlainKey | None:
        """The key of the row the guard item ``guard`` names as its owner, when that is a
        row of type ``type_name`` (else ``None``: no guard, or another type's)."""
        if guard is None or named(guard, OWNER_TYPE) != type_name:
            return None
        return guard_owner(table, guard)


#: the attributes of a guard item naming its owner row and the field it guards
OWNER_PK, OWNER_SK, OWNER_TYPE, UNIQUE_FIELD = "owner_pk", "owner_sk", "owner_type", "unique_field"


#: a guard item's type attribute value


# -- the guard items ------------------------------------------------------------------
class Owner(Protocol):
    """What the guard helpers read of the entity whose guards they build: its table and
    type name (an :class:`~dynaorm.schema.spec.EntitySpec`, or its :class:`Uniqueness`)."""

    @property
    def table(self) -> TableSchema: ...

    @property
    def type_name(self) -> str: ...


def guard_item(spec: Owner, rule: UniqueRule, key: str, owner: PlainKey,
               ttl: int | None = None) -> Item:
    """The unique guard item of ``rule`` at ``key``, owned by the row at ``owner`` of the
    entity of ``spec`` (attributes in order: key, type, owner, field, and the owner's TTL
    ``ttl`` on a table with a TTL attribute)."""
    table = spec.table
    item = {table.pk: {"S": key}}
    if table.sk is not None:
        item[table.sk] = {"S": key}
    item[table.type_attr] = {"S": GUARD_TYPE}
    item[OWNER_PK] = {"S": owner[table.pk]}
    if table.sk is not None:
        item[OWNER_SK] = {"S": owner[table.sk]}
    item[OWNER_TYPE] = {"S": spec.type_name}
    item[UNIQUE_FIELD] = {"S": rule.field}
    if ttl is not None and table.ttl is not None:
        item[table.ttl] = {"N": str(ttl)}
    return item


def owned_by(spec: Owner, owner: PlainKey) -> Condition:
    """The condition that a guard item still belongs to the row at ``owner``."""
    table = spec.table
    conds = [raw_eq(OWNER_PK, {"S": owner[table.pk]})]
    if table.sk is not None:
        conds.append(raw_eq(OWNER_SK, {"S": owner[table.sk]}))
    cond = all_of(conds)
    assert cond is not None
    return cond


def guard_owner(table: TableSchema, guard: Item | None) -> PlainKey | None:
    """The key of the row a stored guard item names (``None``: not a guard)."""
    if guard is None or OWNER_PK not in guard:
        return None
    owner = {table.pk: guard[OWNER_PK].get("S", "")}
    if table.sk is not None:
        owner[table.sk] = named(guard, OWNER_SK) or ""
    return owner


@register
@dataclass(frozen=True, slots=True, eq=False)
class Uniqueness(Rule):
    """``Meta.unique``: the entity's :class:`UniqueRule` s (one guard item per value)."""

    rules: tuple[UniqueRule, ...]
    #: every field a guard key is built from (unique fields and their scopes)
    fields: frozenset[str]
    table: TableSchema
    #: the entity's class name (messages) and type name (a guard names its owner's)
    owner: str
    type_name: str
    #: the entity's TTL field (``None``: none): its guards carry its value
    ttl_field: str | None
    #: the entity class (the origins of the requests its MACs take)
    entity: type[Any]
    name = "unique"
    order = 60
    answers = {
        "save": "claims a guard per unique value in the same transaction (conditioned on "
                "absence, or on an expired owner); a changed value releases the old guard",
        "update": "an update touching a unique field is planned as a save (guards moved)",
        "delete": "releases the entity's guards in the same transaction",
        "get": "guards are never entities; find() reads a guard, then its owner",
        "query": "guard items are skipped (their type is dynaorm:unique)",
        "values": "as query",
        "scan": "guard items are skipped",
        "stream": "a guard change is a Change of role 'unique guard'",
        "history": "guards belong to the latest copy, never to version rows",
        "migrate": "guards are re-pointed to the moved row in the same transaction",
        "backfill": "a change of a unique value moves its guard with the change",
        "check": "orphan, missing and foreign guards are problems (--repair fixes them)",
        "export": "guard items are never exported",
        "search": "guard items never hold a vector: never hits",
        "messages": "UniqueConstraintError names field and value (an encrypted field's "
                    "value redacted)",
        "logs": "as messages",
        "spans": "as messages",
    }

    @classmethod
    def build(cls, decl: Declaration) -> Uniqueness | None:
        rules = unique_rules(decl)
        if not rules:
            return None
        kind = Macs if any(r.mac is not None for r in rules) else cls
        return kind(rules, frozenset(f for r in rules for f in r.fields), decl.table,
                    decl.owner, decl.type_name,
                    getattr(decl.built.get("stamps"), "ttl_field", None), decl.cls)

    def reads(self, touched: frozenset[str]) -> bool:
        """An update is read first when it changes a field a guard key is built from, or
        the TTL field (the guards carry their owner's TTL: they follow it)."""
        return bool(touched & self.fields) or self.ttl_field in touched

    def rows(self, change: Change) -> Rows:
        """The guard writes that follow ``change``, from its old values owned at its old
        key to its new ones at its new key: each guard claimed, re-pointed (a moved or
        retyped owner: every guard kept is rewritten to name it, or finds and checks
        would not see it; a changed TTL: the guards carry it) or released."""
        old, new = change.old, change.new
        ttl = self._ttl(new)
        same_ttl = self.ttl_field is None or ttl == self._ttl(old)
        moved = change.old_key != change.new_key or change.retyped
        out = []
        for rule in self.rules:
            old_key = None if old is None else rule.guard_key(old, self.owner)
            new_key = None if new is None else rule.guard_key(new, self.owner)
            if old_key != new_key or moved or not (same_ttl or new_key is None):
                out += self._guard_rows(change, rule, old_key, new_key, ttl)
        return Rows((), tuple(out))

    def _guard_rows(self, change: Change, rule: UniqueRule, old_key: str | None,
                    new_key: str | None, ttl: int | None) -> list[Op]:
        """The writes of one rule's guard, from ``old_key`` to ``new_key``."""
        old_owner, new_owner = change.old_key, change.new_key
        value = None if change.new is None else change.new.get(rule.field)
        if old_key is not None and old_key == new_key and new_owner is not None:
            assert old_owner is not None
            # (re-pointed; or claimed: an owner stored before its rule, or its
            # normalisation, was declared has no guard there, which is no conflict)
            return [self._put(change, rule, new_key, new_owner, value, Fail.CONCURRENT,
                              owned_by(self, old_owner) | free(self.table.pk, self.table.ttl), ttl)]
        out: list[Op] = []
        if old_key is not None and old_owner is not None:
            old_value = None if change.old is None else change.old.get(rule.field)
            # (released if still its owner's; no guard at all is released already)
            out.append(Delete(UniqueRule.row_key(self.table, old_key), owned_by(self, old_owner)
                              | not_exists(self.table.pk), change.origin(
                                  Role.GUARD, Fail.CONCURRENT, rule.field, old_value),
                              guard_item(self, rule, old_key, change.owner)))
        if new_key is not None and new_owner is not None:  # free, or held by an expired
            out.append(self._put(change, rule, new_key, new_owner, value, Fail.UNIQUE,
                                 free(self.table.pk, self.table.ttl), ttl))  # owner
        return out

    def _put(self, change: Change, rule: UniqueRule, key: str, owner: PlainKey, value: Any,
             fail: Fail, condition: Condition, ttl: int | None) -> Put:
        return Put(UniqueRule.row_key(self.table, key),
                   guard_item(self, rule, key, owner, ttl), condition,
                   change.origin(Role.GUARD, fail, rule.field, value))

    def _ttl(self, values: Mapping[str, Any] | None) -> int | None:
        """The TTL (epoch seconds) an owner with field ``values`` gives its guards:
        ``None`` without a TTL field, or on a table without a TTL attribute."""
        field = self.ttl_field
        if field is None or values is None or self.table.ttl is None:
            return None
        value = values.get(field)
        return None if isinstance(value, Shape) else encode_ttl(value, self.owner, field)

    def explain(self, origin: Origin, reason: str, stored: Item | None) -> Explained | None:
        """A refused claim: a taken value, unless the guard names the claimant itself
        (another writer gave the owner that value since it was loaded: a change of the
        row); the row the guard names is the holder."""
        if origin.role is not Role.GUARD:
            return None
        holder = guard_owner(self.table, stored)
        if origin.fail is Fail.UNIQUE and holder is not None and holder == {
                a: origin.owner_key.get(a) for a in holder}:  # (the claimant's own)
            return Explained(Fail.CONCURRENT, holder)
        return Explained(origin.fail, holder)


@dataclass(frozen=True, slots=True, eq=False)
class Macs(Uniqueness):
    """:class:`Uniqueness` of an entity with a unique encrypted field (its guard keys hold
    MACs): asks for them before a commit is planned."""

    def prepare(self, items: tuple[Item, ...], writing: bool,
                values: Values = no_values) -> Generator[Any, Any, None]:
        """Before a commit is planned: the MACs its guard keys render (of the values
        written and of those stored), asked for once, so the commit is planned once."""
        if writing:
            for rule in self.rules:
                yield from rule.macs_p(values(), self.owner, (self.entity,))


def unique_rules(decl: Declaration) -> tuple[UniqueRule, ...]:
    """``Meta.unique`` read into its rules; an encrypted unique field's guard holds the
    MAC of its value (its table's keyring's): a keyring
    without a MAC key on its table is refused here."""
    raw, owner, fields = decl.meta.get("unique"), decl.owner, decl.field_names
    if isinstance(raw, str | Unique):
        raw = (raw,)
    rules = []
    for item in raw or ():
        spec = Unique(item) if isinstance(item, str) else item
        if not isinstance(spec, Unique):
            raise DynaormError(f"{owner}.Meta.unique: expected field names or Unique(...), "
                               f"got {item!r}")
        if spec.field not in fields:
            raise DynaormError(f"{owner}.Meta.unique names unknown field {spec.field!r}")
        scope = None if spec.scope is None else field_template(spec.scope, "unique scope",
                                                               owner, fields, False)
        mac = decl.table if spec.field in holding(decl.trees, ENCRYPTED) else None
        rules.append(UniqueRule(spec.field, spec.prefix or spec.field, spec.normalize, scope,
                                mac))
    if macs := [r.field for r in rules if r.mac is not None]:  # (a keyring bound later:
        check_macs(bound_keyring(decl.table), owner, macs)  # Keyring.check refuses it)
    return tuple(rules)
