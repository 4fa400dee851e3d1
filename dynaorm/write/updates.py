"""``s.update(...)``: staged update expressions, and ``s.check(...)``: condition checks.

A :class:`StagedUpdate` collects actions (``set``, ``add``, ``discard``, ``append``,
``prepend``, ``remove``, ``set_default``) and an optional ``where`` condition; values are
validated through the entity's field types when the action is added. Planning is pure:

- Plain path: one ``UpdateItem`` (an :class:`~dynaorm.write.render.Update` carrying clauses),
  conditioned on ``attribute_exists(pk)`` (unless ``upsert=True``) and the caller's
  ``where``; no read.
- Rule path (the update touches a unique field or a field an index template uses, or the
  entity is versioned, or an upsert cannot render every index key): the stored item is
  read first (one consistent GetItem, or the loaded object's state), the actions are
  applied to it in Python, and the result is planned as a save of a persisted object
  (:func:`dynaorm.write.save.plan_save`): guard swaps, re-rendered index keys, version rows
  and the conditions on what was read come from there.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import replace
from decimal import Decimal
from typing import Any, Generic, TypeVar

from pydantic import ValidationError
from pydantic.fields import FieldInfo

from dynaorm._types import AttributeValue, PlainKey
from dynaorm.caches import cache
from dynaorm.errors import (
    ConditionFailedError,
    DynaormError,
    InvalidValueError,
    ItemNotFoundError,
)
from dynaorm.schema.checks import BOUND_OPS
from dynaorm.schema.entity import Entity, spec_of
from dynaorm.schema.paths import bounds, check_names, field_adapter, path_parts, path_type
from dynaorm.schema.templates import SHARD_FIELD
from dynaorm.values.codec import SET, Kind, encode_value, kind_of
from dynaorm.values.expressions import (
    Condition,
    F,
    Rule,
    all_of,
    exists,
    rename_paths,
    size_is,
    whole,
)
from dynaorm.values.keys import key_av
from dynaorm.values.records import Clause, ConditionCheck, Fail, Origin, Role, Update
from dynaorm.values.state import InstanceState
from dynaorm.values.times import now
from dynaorm.values.tree import kind_at
from dynaorm.write.conditions import expect_loaded_version
from dynaorm.write.records import Outcome, Planned, Prepared, Reading, Reads, StagedWrite
from dynaorm.write.save import SaveEntry, plan_save

__all__ = ["StagedCheck", "StagedUpdate"]

T = TypeVar("T", bound=Entity)

#: method name -> its update clause
_CLAUSES = {"set": "SET", "set_default": "DEFAULT", "add": "ADD", "discard": "DELETE",
            "append": "APPEND", "prepend": "PREPEND", "remove": "REMOVE"}


def _model_rules(cls: type[Entity]) -> bool:
    """Whether values of ``cls`` obey rules across fields that an update by key cannot judge
    alone: a model validator, a field validator that reads other fields (``info``), or a
    ``@computed_field`` (stored, so it must be computed from the stored item). An update
    of such a class reads the item first and validates the whole result."""
    found = _MODEL_RULES.get(cls)
    if found is None:
        decorators = cls.__pydantic_decorators__
        found = bool(decorators.model_validators or cls.model_computed_fields or any(
            _takes_info(d.func) for d in decorators.field_validators.values()))
        _MODEL_RULES[cls] = found
    return found


def _takes_info(func: Any) -> bool:
    """Whether a field validator takes pydantic's ``ValidationInfo`` (other fields' data)."""
    import inspect
    try:
        params = inspect.signature(func).parameters
    except (TypeError, ValueError):  # pragma: no cover - a builtin: assume it may
        return True
    return len([p for p in params.values() if p.name not in ("cls", "self")]) > 1


_MODEL_RULES: dict[type[Entity], bool] = cache("updates.model_rules")


def _has_validator(cls: type[Entity], name: str) -> bool:
    """Whether a field validator of ``cls`` applies to field ``name``."""
    return any(name in d.info.fields or "*" in d.info.fields
               for d in cls.__pydantic_decorators__.field_validators.values())


def _validate_field(cls: type[Entity], name: str, value: Any) -> Any:
    """``value`` as the model stores field ``name``: its type, constraints and field
    validators (pydantic's assignment validation on a blank object); a class with rules
    across fields (:func:`_model_rules`) is judged whole at planning."""
    if _model_rules(cls) or cls.model_fields[name].frozen:  # (set_default of a frozen one)
        return field_adapter(cls, name).validate_python(value)
    blank = cls.model_construct()
    cls.__pydantic_validator__.validate_assignment(blank, name, value)
    return blank.__dict__[name]


def _same(validated: Mapping[str, Any], given: Mapping[str, Any]) -> bool:
    """Whether validation kept every value as given (same type, equal: ``True`` and
    ``1`` are equal but render differently)."""
    return all(type(v) is type(given[n]) and v == given[n] for n, v in validated.items())


class StagedUpdate(StagedWrite, Generic[T]):
    """An update staged in a session by ``s.update(...)``. Its methods add actions and
    return it; ``result`` is the stored entity after the commit."""

    entity: type[T]

    def __init__(self, entity: type[T], key_fields: Mapping[str, Any], loaded: T | None,
                 upsert: bool, key: PlainKey | None = None):
        self.entity = entity
        """The entity class the update is for."""
        self.upsert = upsert
        """True: the update creates the item when it is absent (``upsert=True``)."""
        spec = self._spec = spec_of(entity)
        self._key_fields = {n: field_adapter(entity, n).validate_python(v)
                            for n, v in key_fields.items()}
        self._loaded = loaded
        self._actions: dict[str, tuple[str, Any]] = {}  # field -> (method, python value)
        self._where: Condition | None = None
        self.scope_guard: Condition | None = None
        """What the stored item must hold to be the session's scope's (a scoped update by
        key), asked of an item read first; ``None`` unscoped."""
        self._returning = False
        self._result: T | None = None
        self._known = False
        self._planned: T | None = None
        self._after_version: int | None = 0
        if loaded is not None and loaded._dynaorm_state is not None:
            key = loaded._dynaorm_state.key
            spec.rules.before.refuse(spec, loaded._dynaorm_state)
        elif key is None or not _same(self._key_fields, key_fields):
            key = spec.primary_key(self._key_fields)
        self.key: PlainKey = key
        """The stored item's table key (plain values)."""

    def __repr__(self) -> str:
        return f"<StagedUpdate {self._spec.name} {self.key} {list(self._actions)}>"

    # -- actions -------------------------------------------------------------------------
    def set(self, *path: Any, **values: Any) -> StagedUpdate[T]:
        """SET each field to a value (``None`` removes an optional field); a nested
        attribute by path, positionally: ``set(F("address.city"), "Paris")`` (every
        action takes a path so)."""
        return self._add("set", _given(path, values))

    def add(self, *path: Any, **values: Any) -> StagedUpdate[T]:
        """ADD: atomic increment of a number field, or union into a set field."""
        return self._add("add", _given(path, values))

    def discard(self, *path: Any, **values: Any) -> StagedUpdate[T]:
        """DELETE the given elements from a set field."""
        return self._add("discard", _given(path, values))

    def append(self, *path: Any, **values: Any) -> StagedUpdate[T]:
        """Append the given items at the end of a list field (``list_append``)."""
        return self._add("append", _given(path, values))

    def prepend(self, *path: Any, **values: Any) -> StagedUpdate[T]:
        """Insert the given items at the front of a list field (``list_append``)."""
        return self._add("prepend", _given(path, values))

    def set_default(self, *path: Any, **values: Any) -> StagedUpdate[T]:
        """SET each field only if the stored item does not have it (``if_not_exists``)."""
        return self._add("set_default", _given(path, values))

    def remove(self, *names: str | F) -> StagedUpdate[T]:
        """REMOVE fields (they load back as their default), or nested paths
        (``F("address.zip")``); required fields cannot go."""
        return self._add("remove", dict.fromkeys(n.path if isinstance(n, F) else n
                                                 for n in names))

    def where(self, condition: Condition) -> StagedUpdate[T]:
        """An extra condition (ANDed with earlier ones); if false: ConditionFailedError."""
        if not isinstance(condition, Condition):
            raise DynaormError(f"where() takes a condition built with F, got {condition!r}")
        check_names([self.entity], condition)
        self._where = condition if self._where is None else self._where & condition
        return self

    def returning(self) -> StagedUpdate[T]:
        """Read the stored entity back after a transactional commit (``result``)."""
        self._returning = True
        return self

    @property
    def result(self) -> T:
        """The stored entity after the commit (alone: from ``ALL_NEW``; in a transaction:
        only after ``returning()``)."""
        if not self._known or self._result is None:
            raise DynaormError(
                f"{self._spec.name} {self.key}: no result (not committed yet, or committed "
                "in a transaction without .returning())")
        return self._result

    def _where_err(self, field: str, message: str) -> InvalidValueError:
        return InvalidValueError(f"{self._spec.name} {self.key} field {field!r}: {message}")

    def _check_writable(self, path: str, method: str) -> Kind | None:
        """The kind of field (or nested path) ``path`` (:func:`~dynaorm.values.codec.kind_of`);
        refused when no update may write it (unknown, in the key, never stored, the
        version) or the kind takes no ``method``."""
        spec, name = self._spec, _head(path)
        if name not in spec.field_names:
            raise self._where_err(name, f"{spec.name} has no such field")
        if name in spec.lookup_fields:
            raise self._where_err(name, "a primary-key template uses it: it cannot be "
                                  "updated (load the object and save it to move it)")
        if name in spec.unstored:
            raise self._where_err(name, "it is never stored (Field(exclude=True)): an "
                                  "update cannot write it (save the object)")
        try:  # (a rule may keep a field out: an encrypted one but for set(), a vector from
            # append, a versioned entity's version from any)
            spec.rules.refuse(method if path == name else "path", name)
        except DynaormError as exc:
            raise self._where_err(name, str(exc)) from None
        annotation = path_type(self.entity, path)[2]
        kind = kind_of(annotation)
        if method not in ("set", "set_default", "remove") and (
                kind is None or method not in kind.actions):
            raise self._where_err(path, f"{method}() does not fit a field of type "
                                  f"{annotation!r}")
        return kind

    def _add(self, method: str, values: Mapping[str, Any]) -> StagedUpdate[T]:
        """``method``'s actions on ``values`` (path: value), each refusal its own rule, in
        the order the guide lists them (the path, overlaps, required, frozen, None), then
        the value's validation."""
        for name, value in values.items():
            kind = self._check_writable(name, method)
            owner, leaf, _ = path_type(self.entity, name)
            info = owner.model_fields[leaf] if owner else FieldInfo()
            frozen = info.frozen or self.entity.model_fields[_head(name)].frozen
            self._check_apart(name, method)
            if method == "remove":
                if owner is not None and info.is_required():
                    raise self._where_err(name, "a required field cannot be removed")
                if frozen:
                    raise self._where_err(name, "it is frozen (Field(frozen=True)): an "
                                          "update cannot remove it")
                self._actions[name] = (method, None)
                continue
            if value is None and method != "set":
                raise self._where_err(name, f"{method}() needs a value, not None")
            if frozen and method != "set_default":
                raise self._where_err(name, "it is frozen (Field(frozen=True)): an update "
                                      "cannot change it (set_default() sets it where "
                                      "the item has none)")
            self._actions[name] = (method, self._checked(method, name, owner, leaf, kind, value))
        return self

    def _check_apart(self, name: str, method: str) -> None:
        """Refuse a path that overlaps another of this update, or has another action."""
        if any(_overlap(name, n) for n in self._actions):
            raise self._where_err(name, "overlaps another path of this update")
        if name in self._actions and self._actions[name][0] != method:
            raise self._where_err(name, f"already has a {self._actions[name][0]}() "
                                  "in this update")

    def _checked(self, method: str, name: str, owner: type[Any] | None, leaf: str,
                 kind: Kind | None, value: Any) -> Any:
        """``value`` validated for ``method`` on path ``name`` (of field ``leaf`` of model
        ``owner``, of ``kind``), and accumulated with the action the path has already
        (discarding both: discarding their union)."""
        checked = self._validated(owner, leaf, name, method, value)
        if kind is SET and method in ("add", "discard") and not checked:
            raise self._where_err(name, f"{method}() needs a non-empty set")
        prev = self._actions.get(name)
        if prev is not None and kind is not None and method in kind.actions:
            checked = kind.actions["add" if method == "discard" else method](prev[1], checked)
        return checked

    def _validated(self, owner: Any, leaf: str, name: str, method: str, value: Any) -> Any:
        """``value`` validated for ``method`` on ``name``: pydantic's error where it is
        invalid, unless a rule redacts the field's values (an encrypted field: an
        :class:`InvalidValueError` that does not show it)."""
        try:
            return (_validate_field(owner, leaf, value) if owner is not None and method in (
                "set", "set_default") else field_adapter(self.entity, name, method not in (
                    "set", "set_default")).validate_python(value))
        except ValidationError as exc:
            shown = self._spec.rules.redact(_head(name), value)
            if shown is value:
                raise
            raise self._where_err(name, f"{shown!r} breaks its rules "
                                  f"({exc.errors()[0]['msg']})") from None

    # -- planning (pure) ---------------------------------------------------------------
    @property
    def _needs_read(self) -> bool:
        """Whether rules make this update read the item first and plan it as a save."""
        spec = self._spec
        touched = frozenset(map(_head, self._actions))
        if spec.rules.reads(touched) or _model_rules(self.entity) or spec.lock or (
                self._loaded is not None and any(self._actions.get(n, "-")[0] == "set"
                                                 and t.holds_lists for n, t in spec.trees.items())):
            return True  # (the rows a rule adds, another writer's lock: the values read; a
            # loaded object's lists set whole: its members merged, each with its own)
        if any(m not in ("set", "set_default", "remove") and (
                _has_validator(self.entity, _head(n)) or (m in ("add", "discard") and {
                    "min_length", "max_length"} & set(bounds(self.entity, n))))
               for n, (m, _) in self._actions.items()):
            return True  # a field validator (or a set's size) judges the combined value
        if not spec.indexes:
            return False  # no index key any update could touch
        known = set(spec.lookup_fields) | touched
        for idx in spec.indexes:
            fields = set(idx.fields) - {SHARD_FIELD}
            # (an upsert's created item would miss an index key it cannot render)
            if fields & touched or (self.upsert and not fields <= known):
                return True
        return False

    # -- the staged-write protocol (dynaorm.write.records.StagedWrite: by key, it settles
    # -- no object, is never coalesced with another, nor planned again after a conflict)
    def _prepare(self, reads: Reads, again: bool) -> Reading[Prepared]:
        """The stored state a rule-path update is planned on, as a protocol (a consistent
        GetItem); ``None`` for the plain path or an upsert of a missing item (which, for a
        versioned entity, continues the kept history ``reads.for_insert`` finds). Asks
        for no read when the update touches no rule, and its entity is not in a migration
        window (``Meta.previous``: an entity still stored in its old layout is refused,
        an update cannot move it)."""
        spec = self._spec
        old = spec.rules.before.key(self._key_fields, spec.name)
        if old is not None and self._loaded is None:
            yield from self._refuse_old_layout(old, reads)
        if not self._needs_read:
            return self, None
        if self._loaded is not None and self._loaded._dynaorm_state is not None:
            return self, self._loaded._dynaorm_state
        item = yield from reads.item(spec.table, self.key)
        if item is None or not spec.owns(item):
            if self.upsert:  # (a versioned entity's kept history: its next version)
                self._after_version = yield from reads.for_insert(spec,
                                                                  self._key_fields)
                return self, None
            raise ItemNotFoundError(f"{spec.name} {self.key} does not exist "
                                    "(s.update(..., upsert=True) creates it)",
                                    entity=self.entity, key=self.key)
        guard = self.scope_guard
        if guard is not None and not rename_paths(guard, spec.renames,
                                                  spec.kinds).holds(item):
            # (a stale key's row: its fields name another scope; planned on, its values
            # would be rendered into keys and errors)
            raise ConditionFailedError(f"{spec.name} {self.key}: the condition given "
                                       "did not hold", entity=self.entity, key=self.key)
        return self, self.entity._from_item(item, spec)._dynaorm_state

    def _refuse_old_layout(self, old: PlainKey, reads: Reads) -> Reading[None]:
        """By key in a migration window: the entity read under either layout; one still
        in its old layout raises (the update would miss it, or an upsert store it
        twice)."""
        spec = self._spec
        spec.rules.before.refuse(spec, (yield from spec.rules.before.either(
            spec, old, spec.primary_key(self._key_fields), reads.kit)))

    def _dump(self, name: str, value: Any) -> AttributeValue:
        python = field_adapter(self.entity, name).dump_python(value, mode="python")
        try:
            python = self._spec.rules.store(name, python, self._spec.name)
            kind = kind_at(self._spec.kinds, name)  # (a path's: its member's kind)
            return encode_value(python) if kind is None or python is None else kind.encode(python)
        except DynaormError as exc:
            raise self._where_err(name, str(exc)) from exc

    def _check_required(self) -> None:
        given = set(self._spec.lookup_fields) | {
            f for f, (m, _) in self._actions.items() if m in ("set", "set_default", "add")}
        missing = [n for n, info in self.entity.model_fields.items()
                   if info.is_required() and n not in given]
        if missing:
            raise InvalidValueError(
                f"{self._spec.name} {self.key}: an upsert must give every required field; "
                f"missing {sorted(missing)}")

    def _action_clauses(self) -> list[Clause]:
        """The staged actions as update clauses, by stored attribute name: ``set(x=None)``
        stores NULL where the field's ``None`` must be kept, else removes the attribute."""
        spec = self._spec
        clauses: list[Clause] = []
        for name, (method, value) in self._actions.items():
            clause = _CLAUSES[method]
            attr = self._attr(name)
            null = method == "set" and value is None
            if null and (name in spec.null_fields or name not in spec.field_names):  # (a path)
                clauses.append(("SET", attr, {"NULL": True}))
            elif null or clause == "REMOVE":
                clauses.append(("REMOVE", attr, None))
            else:
                clauses.append((clause, attr, self._dump(name, value)))
        return self._encoded(clauses) if spec.rules.encoders else clauses

    def _encoded(self, clauses: list[Clause]
                 ) -> list[Clause]:
        """``clauses`` with the values they set through the entity's rules, as a save
        writes them at the item's key (an encrypted value sealed bound to it)."""
        spec = self._spec
        fields = {c[1]: c[2] for c in clauses if c[0] in ("SET", "DEFAULT") and c[2] is not None
                  and c[1] in spec.stored_fields}
        row = {**fields, **{a: key_av(v) for a, v in self.key.items()}}
        spec.rules.encode(row, self.key)
        return [(kind, attr, row[attr] if attr in fields else av) for kind, attr, av in clauses]

    def _add_created_clauses(self, clauses: list[Clause]
                             ) -> None:
        """Add to ``clauses`` what an upsert's created item needs besides them: its key
        fields stored as attributes (not those the key alone holds), its type attribute,
        and the index keys the key fields render (those not set already)."""
        spec = self._spec
        table = spec.table
        own_keys = {table.pk, table.sk}
        for name in spec.lookup_fields:
            # (Meta.key_only / exclude=True, or a field that is the key: the key holds it)
            if name not in spec.unstored and spec.attr(name) not in own_keys:
                clauses.append(("SET", whole(spec.attr(name)),
                                self._dump(name, self._key_fields[name])))
        if table.type_attribute is not None:
            clauses.append(("SET", whole(table.type_attribute), {"S": spec.type_name}))
        set_attrs = {c[1] for c in clauses}
        for attr, text in spec.index_keys(self._key_fields).items():
            if attr not in set_attrs and attr not in own_keys:
                clauses.append(("SET", whole(attr), key_av(text)))

    def _timestamp_clauses(self) -> list[Clause]:
        """``Meta.timestamps``: the created time set if absent, the updated time set,
        unless the update sets the field itself."""
        spec = self._spec
        moment = now()
        return [(kind, whole(spec.attr(stamped)), self._dump(stamped, moment))
                for stamped, kind in zip(spec.timestamps, ("DEFAULT", "SET"), strict=True)
                if stamped is not None and stamped not in self._actions]

    def _plan_ops(self, state: InstanceState | None, index: int
                 ) -> Planned[Outcome | None]:
        """The actions of this update (the session passes what ``_prepare`` returned)."""
        if self.upsert and state is None:
            self._check_required()
        if self._needs_read:
            return self._plan_as_save(state, index)
        spec = self._spec
        clauses = self._action_clauses()
        if self.upsert:  # a created item needs its key fields, type and index keys too
            self._add_created_clauses(clauses)
        clauses += self._timestamp_clauses()
        where = None if self._where is None else rename_paths(self._where, spec.renames,
                                                              spec.kinds)
        where = all_of([c for c in (where, *self._result_rules()) if c is not None])
        own = None if self.upsert else exists(spec.table.pk)
        cond = all_of([c for c in (own, where) if c is not None])
        # by key without a read, an absent item is not found (it may never have existed);
        # planned on a loaded object, it is gone: another writer deleted it (a conflict)
        fail = Fail.CALLER if own is None else Fail.GONE if self._loaded is not None else (
            Fail.MISSING)
        origin = Origin(self.entity, self.key, Role.ROW, fail, staged=index, caller=where)
        self._planned = None
        loaded_state = None if self._loaded is None else self._loaded._dynaorm_state
        known = None if loaded_state is None else loaded_state.item
        return [Update(self.key, {}, (), cond, origin, tuple(clauses), known)], None

    def _result_rules(self) -> list[Condition]:
        """Conditions on the stored values that hold the result of each ``add``,
        ``append`` and ``prepend`` to its field's bounds (:func:`_bounds`) in the same
        request; a result decided by the operand alone is refused here. (A set's size
        after ``add``/``discard`` is judged on the read-first path: :attr:`_needs_read`.)"""
        rules: list[Condition] = []
        for name, (method, value) in self._actions.items():
            attr = self._attr(name)
            parent, _, index = attr.rpartition("[")
            if name not in self._spec.field_names:  # a path: where its parent is (DynamoDB
                # refuses a path into nothing, and sets an index past the end at the end)
                rules.append(Rule("AND", (size_is(parent, ">", int(index[:-1])) if attr[-1] == "]"
                                          else F(attr.rpartition(".")[0]).exists(),),
                                  f"{name!r}: its parent is not stored"))
            if method not in ("add", "append", "prepend"):
                continue
            for rule, limit in bounds(self.entity, name).items():
                if method == "add":  # a number: stored + d <op> limit, i.e. stored <op> limit - d
                    d, lim = Decimal(str(value)), Decimal(str(limit))
                    if rule == "multiple_of":  # (the stored value is one): decided here
                        if d % lim:
                            raise self._where_err(name, f"adding {value} breaks {rule}={limit}")
                        continue
                    alone = getattr(d, BOUND_OPS[rule])(lim)  # (the attribute absent)
                    cond = getattr(F(attr), BOUND_OPS[rule])(lim - d)
                else:  # a list: size(stored) + k <op> limit
                    op, k = ("<=" if rule == "max_length" else ">="), len(value)
                    alone = k <= limit if op == "<=" else k >= limit
                    if op == ">=" and alone:
                        continue  # never shorter than the operand
                    if not alone and op == "<=":
                        raise self._where_err(name, f"{method}() of {k} breaks {rule}={limit}")
                    cond = size_is(attr, op, limit - k)
                rules.append(Rule("AND", (F(attr).not_exists() | cond if alone else cond,),
                                  f"field {name!r}: the result of {method}() must keep "
                                  f"{rule}={limit}"))
        return rules

    def _attr(self, path: str) -> str:
        """The stored attribute path of a field or nested path."""
        head = _head(path)  # (a whole field's: its name whole, a dot in it too)
        return whole(self._spec.attr(head)) if head == path else self._spec.attr(
            head) + path[len(head):]

    def _apply(self, values: dict[str, Any]) -> dict[str, Any]:
        """The actions applied to ``values`` (field values; a nested path's field in its
        plain form, validated again whole by the caller)."""
        for name, (method, value) in self._actions.items():
            *parents, last = path_parts(name)
            scope: Any = values
            try:
                if parents:  # the field in its plain form (a nested model: a dict)
                    head = _head(name)
                    values[head] = field_adapter(self.entity, head).dump_python(values[head])
                for part in parents:
                    scope = scope[part]
                has = last in scope if isinstance(scope, dict) else int(last) < len(scope)
                if not (has or isinstance(scope, dict) or method == "remove"):
                    raise IndexError(last)  # (DynamoDB: a SET past the end appends)
            except (KeyError, IndexError, TypeError, ValueError) as exc:
                raise self._where_err(name, "its parent is not stored") from exc
            old = scope[last] if has else None
            if method == "set" or (method == "set_default" and not has):
                scope[last] = value
            elif method == "remove" and has:
                del scope[last]
            elif method not in ("set_default", "remove"):  # add, discard, append, prepend
                kind = kind_of(path_type(self.entity, name)[2])
                assert kind is not None
                scope[last] = kind.actions[method](old or kind.zero, value)
        return values

    def _saved(self, state: InstanceState | None) -> Any:
        """The object the update saves, planned on ``state`` (``None``: an upsert's
        insert), owning that state as a load would (its unchanged sealed values keep
        their ciphertexts)."""
        cls, spec = self.entity, self._spec
        if state is None:  # upsert of a missing item: an insert
            values = self._apply(dict(self._key_fields))
        else:
            read = cls._from_item(state.item, spec)
            if read == self._loaded:  # (the loaded object, as read: its own members kept)
                read = self._loaded
            values = {**self._apply(dict(read.__dict__)),
                      **dict(spec.rules.pin(state.version or 0))}  # (its version)
            if state.members:  # the members planned on are those read (a list a path
                # changes: its plain form validated again, left to the merge by value)
                paths = {_head(n) for n in self._actions if n != _head(n)}
                state = state.revised({})
                state.members = spec.members_of({n: v for n, v in read.__dict__.items()
                                                 if n not in paths})
        try:
            obj = cls.model_validate(values)
        except ValidationError as exc:
            raise InvalidValueError(
                f"{spec.name} {self.key}: the update would store what the model "
                f"refuses; nothing was sent: {exc}") from exc
        obj._dynaorm_state = state
        return obj

    def _renders(self, state: InstanceState | None) -> tuple[Mapping[str, Any], ...]:
        """Planned as a save: the values it saves, and those stored."""
        if not self._needs_read:
            return ()
        new = self._saved(state).__dict__
        return (new,) if state is None else (
            new, self.entity._from_item(state.item, self._spec).__dict__)

    def _plan_as_save(self, state: InstanceState | None, index: int
                      ) -> Planned[Outcome | None]:
        loaded = self._loaded
        if loaded is not None and state is not None:
            expect_loaded_version(self._spec, loaded, state)  # s.update(obj): its If-Match
        obj = self._saved(state)
        entry = SaveEntry(obj, condition=self._where, after_version=self._after_version)
        ops, outcome = plan_save(entry, obj._dynaorm_state, index)  # (its members: _saved)
        # the item was read (or found missing): any other outcome means it changed since
        ops = [replace(op, origin=op.origin._replace(fail=Fail.CONCURRENT))
               if op.origin.fail is Fail.EXISTS and op.origin.role is not Role.GUARD else op
               for op in ops]
        self._planned = obj
        return ops, outcome

    # -- after the commit --------------------------------------------------------------
    def _finish(self, response: Mapping[str, Any], single: bool, reads: Reads
                ) -> Reading[None]:
        """Set ``result`` after a successful commit (a protocol: the item is read back
        when the response does not carry it and ``returning()`` asked for it)."""
        spec = self._spec
        if self._planned is not None:
            self._result, self._known = self._planned, True
            return
        item = response.get("Attributes") if single else None
        # (alone: ALL_NEW, or, its answer lost but proved applied, the item that proved it)
        if item is None and (self._returning or single):
            item = yield from reads.item(spec.table, self.key)
        if item is not None:
            if spec.rules.preparers:  # (the answer's item: what its rules need)
                yield from reads.kit.prepare((spec,), (item,))
            self._result, self._known = self.entity._from_item(item, spec), True


class StagedCheck(StagedWrite):
    """A ``ConditionCheck`` staged by ``s.check(...)``: the commit fails with
    ConditionFailedError unless ``condition`` holds on the stored item."""

    def __init__(self, entity: type[Entity], key: PlainKey, condition: Condition):
        if not isinstance(condition, Condition):
            raise DynaormError(f"check() takes a condition built with F, got {condition!r}")
        check_names([entity], condition)
        self.entity = entity
        self.key = key
        self.condition = condition

    def _prepare(self, reads: Reads, again: bool) -> Reading[Prepared]:
        """A check reads nothing before the commit."""
        return self, None
        yield  # (a protocol that asks for nothing)

    def _plan_ops(self, state: InstanceState | None, index: int
                 ) -> Planned[Outcome | None]:
        """One ConditionCheck action."""
        spec = spec_of(self.entity)
        cond = rename_paths(self.condition, spec.renames, spec.kinds)
        origin = Origin(self.entity, self.key, Role.ROW, Fail.CALLER, None, None, index, cond)
        return [ConditionCheck(self.key, cond, origin)], None



def _head(path: str) -> str:
    """The field a path starts at (``"address.city"``: ``"address"``)."""
    return re.split(r"[.\[]", path, maxsplit=1)[0]


def _overlap(a: str, b: str) -> bool:
    """Whether two different paths overlap (one inside the other): DynamoDB refuses it."""
    return a != b and any(y[:len(x) + 1] in (x + ".", x + "[") for x, y in ((a, b), (b, a)))


def _given(path: tuple[Any, ...], values: dict[str, Any]) -> dict[str, Any]:
    """An action's ``(F(path), value)`` and keyword values as one mapping."""
    if path and (len(path) != 2 or not isinstance(path[0], F)):
        raise DynaormError(f"an update action takes F(path), value positionally, got {path!r}")
    return {path[0].path: path[1], **values} if path else values
