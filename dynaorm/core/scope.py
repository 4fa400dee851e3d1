"""A session's tenant scope (pure): ``Session(table, scope={"tenant_id": "t1"})`` reads
and writes only items whose keys render the scope's fields with the scope's values.

What is inside the scope is decided by an item's **key**: :meth:`Scope.admits` parses the
stored partition key with the entity's key template (the grammar of
:mod:`dynaorm.schema.templates`) and compares the fields it gives back with the scope's
values; a key the grammar cannot parse is never admitted. A row whose stored scope fields
disagree with its key's parse (a *stale key*: a row 0.7 wrote for tenant ``acme-corp`` at
``T-acme-corp-123`` parses as tenant ``acme``'s) is not admitted either
(:meth:`Scope.stored`, :meth:`Scope.holds`): a scoped read returns an object only when its
key and its own fields both say the scope. Every key a scoped session renders is admitted
before it is sent, and every item a scoped read returns is admitted before it is decoded
(a query of the table's own partition is admitted once, by its partition key: every item
it returns holds that key; its stored fields are still asked). A read whose answers are
read straight into objects admits each result by its partition key's text (the grammar's
own test, :meth:`~dynaorm.schema.templates.KeyTemplate.matcher`) and its objects' fields
(:meth:`Scope.holder`).

One check, in the session's planning (:class:`~dynaorm.core.stage.Stage` asks it), shared
by the sync and async sessions: every key a lookup, a query, a search or a staged write
renders is checked against the scope before anything is sent, and an entity whose
partition key does not carry every scope field, or a unique rule whose guard key is not
scoped by them, is refused. Scans are *filtered by key* (a ``FilterExpression`` every
partition key inside the scope satisfies, as the grammar says it); a vector
search is *scoped* through the index's partition attribute or a filter attribute, else
refused. Every refusal is a :class:`~dynaorm.ScopeError`.
"""

from __future__ import annotations

import contextlib
import functools
import operator
import re
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from dynaorm.caches import cache
from dynaorm.errors import DynaormError, ScopeError
from dynaorm.schema.spec import EntitySpec, annotation_adapter
from dynaorm.schema.templates import KeyTemplate, render_value
from dynaorm.values.codec import decode_value
from dynaorm.values.expressions import Condition, F, attribute
from dynaorm.values.keys import key_value

#: (entity class, *scope items) a scope covers (:meth:`Scope.entity`): the check is made
#: once, not once a session (a web service makes a scoped session a request)
_COVERED: set[tuple[Any, ...]] = set()
#: per entity class: its table's partition attribute and partition key templates (the
#: current layout's, and the previous one's under ``Meta.previous``): what
#: :meth:`Scope.admits` parses with
_PKS: dict[type[Any], tuple[str, tuple[KeyTemplate, ...]]] = cache("scope.partition_keys")


def _templates(spec: EntitySpec) -> tuple[str, tuple[KeyTemplate, ...]]:
    found = _PKS[spec.cls] = (spec.table.pk, (spec.pk, *spec.rules.before.pks))
    return found

S = TypeVar("S", bound=Any)
_INT = re.compile(r"-?[0-9]+", re.ASCII)


@functools.cache
def _padded(pk: KeyTemplate) -> frozenset[str]:
    """The fields ``pk`` renders with a format (an integer's zero padding, ``{n:04d}``,
    the only one a scope takes: :meth:`Scope.entity`): the key holds ``0005`` where the
    scope's text is ``5``."""
    return frozenset(s.name for s in pk.segments if not isinstance(s, str) and s.spec)


def _same_int(got: Any, want: str) -> bool:
    """Whether a key's text ``got`` of a zero-padded integer field is the integer
    ``want`` (ASCII digits only: an Arabic-Indic five is no ``5``)."""
    return (isinstance(got, str) and _INT.fullmatch(got) is not None
            and _INT.fullmatch(want) is not None and int(got) == int(want))

#: (entity class, *scope items) -> :meth:`Scope.admitter_all`'s decision on partition keys'
#: texts (built once per class and scope, not once a session)
_ADMITTERS: dict[tuple[Any, ...], Callable[[list[str]], bool]] = {}
#: (entity class, *scope items) -> :meth:`Scope.holder`
_HOLDERS: dict[tuple[Any, ...], Callable[[list[Any]], bool]] = {}
#: (scope items with their types) -> the :class:`Scope` of them (:meth:`Scope.of`)
_SCOPES: dict[tuple[Any, ...], Scope] = {}
#: (entity class, index, *scope items) whose queries a scope allows (:meth:`Scope.index`)
_INDEXED: set[tuple[Any, ...]] = set()


#: (entity classes, *scope items) -> :meth:`Scope.key_filter`
_KEY_FILTERS: dict[tuple[Any, ...], Condition | None] = {}


def _key_test(template: KeyTemplate, values: Mapping[str, str]
              ) -> tuple[str, tuple[str, ...]]:
    """What a partition key that ``template`` parses into the scope ``values`` holds, as
    the grammar says it (:meth:`KeyTemplate.leading_text`), as ``(op, texts)``: ``("=",
    (key,))``; ``("begins_with", (prefix, *inner))`` (and contains each of ``inner``);
    ``("contains", inner)``; ``("", ())`` (nothing said: no filter)."""
    prefix, whole, inner = template.leading_text(values)
    if whole:
        return "=", (prefix,)
    if prefix:
        return "begins_with", (prefix, *inner)
    return ("contains", inner) if inner else ("", ())


def _all_contain(pk: str, texts: tuple[str, ...]) -> Condition | None:
    """``contains(pk, text)`` for each of ``texts``, ANDed (``None``: none)."""
    found: Condition | None = None
    for text in texts:
        found = attribute(pk).contains(text) if found is None else (
            found & attribute(pk).contains(text))
    return found


def _key_condition(pk: str, op: str, texts: tuple[str, ...]) -> Condition:
    """The filter of one :func:`_key_test` (never ``("", ())``)."""
    if op == "=":
        return attribute(pk) == texts[0]
    if op == "begins_with":
        head = attribute(pk).begins_with(texts[0])
        inner = _all_contain(pk, texts[1:])
        return head if inner is None else head & inner
    found = _all_contain(pk, texts)
    assert found is not None
    return found


def _every(test: Callable[[str | None], object], keys: list[str]) -> bool:
    return all(map(test, keys))


class Scope:
    """The fields a scoped session holds to fixed values (``values``: as keys render them;
    ``given``: as the caller gave them, for filters)."""

    __slots__ = ("_covered", "given", "values")

    def __init__(self, scope: Mapping[str, Any]):
        if not isinstance(scope, Mapping) or not scope:
            raise ScopeError("scope= takes a non-empty dict of field names to values, e.g. "
                             "{'tenant_id': 't1'}")
        values = {}
        for name, value in scope.items():
            text = None if value is None or not isinstance(name, str) else render_value(value)
            if not text or "#" in text:
                raise ScopeError(f"scope {name!r}={value!r}: a scope names a field and a "
                                 "non-empty value without '#'")
            values[name] = text
        self.given = dict(scope)
        self.values = values
        self._covered: set[type[Any]] = set()

    @classmethod
    def of(cls, scope: Mapping[str, Any]) -> Scope:
        """The scope of ``scope`` (as :class:`Scope` makes it), one object shared by the
        sessions of the same scope (what it decides depends on its values alone; a web
        service makes a scoped session a request): kept for the 4,096 latest scopes of
        hashable values."""
        try:
            # (repr too: equal values may render other keys, Decimal('1') and
            # Decimal('1.0'), 0.0 and -0.0: each its own scope)
            known = tuple((k, type(v), v, repr(v)) for k, v in scope.items())
            found = _SCOPES.get(known)
        except (TypeError, AttributeError):  # (unhashable values; not a mapping)
            return cls(scope)
        if found is None:
            found = cls(scope)
            if len(_SCOPES) >= 4096:
                _SCOPES.pop(next(iter(_SCOPES)), None)
            _SCOPES[known] = found
        return found

    def __repr__(self) -> str:
        return ", ".join(f"{k}={v!r}" for k, v in self.values.items())

    # -- what the scope can cover -------------------------------------------------------
    def entity(self, spec: EntitySpec) -> None:
        """Refuse an entity the scope cannot cover: its partition key must carry every
        scope field, and so must every unique rule's guard scope."""
        if spec.cls in self._covered:
            return
        known = (spec.cls, *self.values.items())
        if known in _COVERED:  # (another session of the same scope covered it)
            self._covered.add(spec.cls)
            return
        self._separated(spec)
        # (exactly: a key that folds a tenant's value, '!l', is another tenant's too; a
        # previous layout's key is read when the current one holds nothing)
        for pk in (spec.pk, *spec.rules.before.pks):
            missing = [f for f in self.values if f not in pk.exact_fields]
            if missing:
                raise ScopeError(f"{spec.name}: its partition key {pk.source!r} does not "
                                 f"carry the scope field(s) {missing} exactly: a session "
                                 f"scoped to {self} cannot read or write it")
        for rule in spec.uniques:
            held = rule.scope.exact_fields if rule.scope is not None else ()
            if any(f not in held for f in self.values):
                want = "#".join(f"{f.upper()}#{{{f}}}" for f in self.values)
                raise ScopeError(
                    f"{spec.name}: the guard of unique {rule.field!r} is not scoped by "
                    f"{sorted(self.values)} (one value across every tenant): a scoped "
                    f"session refuses it; declare Unique({rule.field!r}, scope={want!r})")
        self._covered.add(spec.cls)
        if len(_COVERED) < 4096:
            _COVERED.add(known)

    def _separated(self, spec: EntitySpec) -> None:
        """Refuse a scope value holding a separator of its field in ``spec`` or in any
        other entity of its table (the grammar: a tenant one entity refuses is no tenant
        of the table, and ``dynaorm iam --scope``'s patterns rely on it)."""
        for other in (spec, *(c.__dynaorm_spec__ for c in spec.table.entities.values()
                              if c is not spec.cls)):
            for name, text in self.values.items():
                bad = sorted(c for c in other.separators(name) if c in text)
                if bad:
                    raise ScopeError(f"{other.name}: scope {name}={text!r} holds {bad[0]!r}, "
                                     f"a separator of {name!r} in its key templates: no key "
                                     "of that entity can render it, so it is no tenant of "
                                     f"table {spec.table.name!r}")

    def index(self, spec: EntitySpec, index: str | None) -> None:
        """Refuse a query of a secondary index whose partition does not carry the scope."""
        if index is None:
            return
        known = (spec.cls, index, *self.values.items())
        if known in _INDEXED:
            return
        native = spec.table.native(index)
        if native is not None:
            carried = {f for f in self.values if spec.attr(f) in native.hash_keys}
        else:
            found = next((i for i in spec.indexes if i.name == index), None)
            local = found is not None and found.local
            carried = set(self.values) if local else set(
                found.pk.exact_fields if found is not None else ())
        missing = sorted(set(self.values) - carried)
        if missing:
            raise ScopeError(f"{spec.name}: index {index!r} is not partitioned by the scope "
                             f"field(s) {missing}: a query of it could read another "
                             f"tenant's items, so a session scoped to {self} refuses it")
        if len(_INDEXED) < 4096:
            _INDEXED.add(known)

    # -- keys: what is inside the scope -------------------------------------------------
    def admits(self, spec: EntitySpec, item: Mapping[str, Any]) -> bool:
        """Whether the stored item ``item`` of ``spec`` is inside the scope: its table
        partition key is (:meth:`admits_key`; a missing or malformed one is not), and
        its stored scope fields agree with that key's parse (:meth:`stored`: a row whose
        attributes name another scope than its key, a stale key, is not)."""
        found = _PKS.get(spec.cls) or _templates(spec)
        av = item.get(found[0])
        if type(av) is not dict:
            return False
        text = av.get("S")
        if type(text) is not str:
            try:
                text = key_value(av)
            except DynaormError:  # (a malformed key attribute)
                return False
        return self._parses(found[1], text) and self.stored(spec, item)

    def stored(self, spec: EntitySpec, item: Mapping[str, Any]) -> bool:
        """Whether the stored scope fields of ``item`` (a row of ``spec`` whose partition
        key is inside the scope) hold the scope's values: each field's attribute, read as
        the entity reads it, renders the scope's text (a field stored only in the key,
        absent here, is the key's). A row 0.7 wrote for tenant ``acme-corp`` at
        ``T-acme-corp-123`` parses under the grammar as tenant ``acme``'s (its document
        ``corp-123``): it says ``acme-corp``, so it is no row of ``acme``'s (a stale
        key: ``dynaorm check`` reports it)."""
        for name, want in self.values.items():
            av = item.get(spec.attr(name))
            if av is None or (type(av) is dict and av.get("S") == want):
                continue
            try:
                value = annotation_adapter(spec.cls, name).validate_python(
                    decode_value(av))
            except (ValueError, TypeError, KeyError, AttributeError, ArithmeticError,
                    DynaormError):  # (a malformed attribute: no value of the scope's)
                return False
            if not self._same(name, value):
                return False
        return True

    def holds(self, obj: Any) -> bool:
        """Whether the entity object ``obj`` (read from a row whose key is inside the
        scope) holds the scope's values in its scope fields (:meth:`stored`'s decision,
        on the object: its fields were read from the row's attributes, or its key)."""
        values = obj.__dict__
        for name, want in self.values.items():
            value = values.get(name)
            if not (type(value) is str and value == want) and not self._same(name, value):
                return False
        return True

    def _same(self, name: str, value: Any) -> bool:
        """Whether the field value ``value`` renders as the scope's text of ``name``."""
        if value is None:
            return False
        try:
            return render_value(value) == self.values[name]
        except (ValueError, TypeError):
            return False

    def holder(self, spec: EntitySpec) -> Callable[[list[Any]], bool]:
        """:meth:`holds` of every object of a page read from the answer's bytes (each of
        ``spec``; truthy: all of them): a plain comparison of each scope field where its
        values are the scope's text, else :meth:`holds` of each. Kept per (class,
        scope)."""
        known = (spec.cls, *self.values.items())
        found = _HOLDERS.get(known)
        if found is not None:
            return found
        checks = [(operator.attrgetter(name), want) for name, want in self.values.items()]

        def hold(objs: list[Any]) -> bool:
            for get, want in checks:  # (each object's value the scope's text, counted)
                if list(map(get, objs)).count(want) != len(objs):
                    return all(self.holds(o) for o in objs)
            return True

        if len(_HOLDERS) < 4096:
            _HOLDERS[known] = hold
        return hold

    def admitter_all(self, spec: EntitySpec) -> Callable[[list[str]], bool]:
        """:meth:`admits_key` of a list of string partition keys' texts at once (``True``:
        every one is admitted): the grammar's own test of them
        (:meth:`KeyTemplate.matcher_all`) where the entity has one partition template of
        strings and the scope's fields are plain in it, else the parse of each (a
        previous layout's too, a padded integer). Kept per (class, scope)."""
        known = (spec.cls, *self.values.items())
        found = _ADMITTERS.get(known)
        if found is None:
            templates = (_PKS.get(spec.cls) or _templates(spec))[1]
            found = templates[0].matcher_all(self.values) if len(templates) == 1 else None
            if found is None:
                found = functools.partial(_every, functools.partial(self._parses, templates))
            if len(_ADMITTERS) < 4096:
                _ADMITTERS[known] = found
        return found

    def admits_key(self, spec: EntitySpec, value: str | None) -> bool:
        """Whether the partition key value ``value`` (as rendered: a ``str``, or a
        number or binary key) of ``spec`` is inside the scope: parsed with the entity's
        partition key template (and its previous layout's, under ``Meta.previous``: every
        template that parses it must give the scope's values, and one must), each scope
        field's text equal to the scope's. A key the grammar cannot parse (or ``None``)
        is not."""
        return self._parses((_PKS.get(spec.cls) or _templates(spec))[1], value)

    def _parses(self, templates: tuple[KeyTemplate, ...], value: str | None) -> bool:
        if not isinstance(value, str):  # (none: no key; a number or binary key is a str)
            return False
        admitted = False
        for pk in templates:
            parsed = pk.parse_key(value)
            if parsed is None:
                continue
            for name, want in self.values.items():
                got = parsed.get(name)
                if got != want and not (name in _padded(pk) and _same_int(got, want)):
                    return False
            admitted = True
        return admitted

    def key(self, spec: EntitySpec, key: Mapping[str, Any], what: str) -> None:
        """A rendered primary key (attribute -> value) parses back into the scope, else
        :class:`ScopeError` (nothing is sent)."""
        value = key.get(spec.table.pk)
        if value is None or not self.admits_key(spec, value):
            raise ScopeError(f"{spec.name}: {what} renders the partition key {value!r}, "
                             f"which does not parse back into this session's scope "
                             f"({self}); nothing was sent")

    # -- keys and objects ---------------------------------------------------------------
    def fields(self, spec: EntitySpec, fields: Mapping[str, Any], what: str) -> None:
        """The scope fields among ``fields`` (what a key renders) hold the scope's values."""
        for name, want in self.values.items():
            if name not in fields:
                continue
            got = fields[name]
            if got is None or render_value(got) != want:
                raise ScopeError(f"{spec.name}: {what} with {name}={got!r} is outside this "
                                 f"session's scope ({name}={want!r}); nothing was sent")

    def obj(self, spec: EntitySpec, obj: Any, what: str) -> None:
        """An object to write: its fields now are in the scope, and so is the stored key it
        was loaded from (a move from another scope would delete that row), by the key's
        grammar, whatever the row's attributes said."""
        self.fields(spec, obj.__dict__, what)
        state = getattr(obj, "_dynaorm_state", None)
        key = getattr(state, "key", None)
        if isinstance(key, Mapping):
            value = key.get(spec.table.pk)
            if value is None or not self.admits_key(spec, value):
                raise ScopeError(f"{spec.name}: {what} of an object loaded from the key "
                                 f"{value!r}, which is outside this session's scope "
                                 f"({self}); nothing was sent")

    def guard(self, spec: EntitySpec) -> Condition:
        """What a write by key (of an item the session never read: a delete or an update
        by key, a save that overwrites, a bulk delete) requires of the stored item: each
        scope field's attribute absent or the scope's value (as ``spec`` holds it). A
        stale key's row (its key
        parses into the scope, its fields name another: a row 0.7 wrote for ``acme-corp``
        at ``T-acme-corp-123``) is refused, as a scoped read skips it."""
        found: Condition | None = None
        for name, value in self.given.items():
            with contextlib.suppress(ValueError, TypeError):  # (the value as the entity
                # holds it: a scope may name an int as "5")
                value = annotation_adapter(spec.cls, name).validate_python(value)
            held = F(name).not_exists() | (F(name) == value)
            found = held if found is None else found & held
        assert found is not None  # (a scope names one field at least)
        return found

    # -- reads ------------------------------------------------------------------------
    def query(self, spec_of: Callable[[type[Any]], EntitySpec], entities: tuple[type[Any], ...],
              index: str | None, fields: Mapping[str, Any]) -> None:
        """A query reads a partition of the scope, of an index partitioned by it (each
        entity's spec as the session's ``spec_of`` gives it)."""
        for entity in entities:
            spec = spec_of(entity)
            self.index(spec, index)
            self.fields(spec, fields, "a query")

    def key_filter(self, entities: tuple[type[Any], ...]) -> Condition | None:
        """The ``FilterExpression`` that holds a scan of ``entities`` to the scope by the
        table's partition key, what every key :meth:`admits_key` admits satisfies, as the
        grammar says it (:meth:`KeyTemplate.leading_text`): per partition template (the
        previous layout's too), ``pk = key``, or ``begins_with(pk, prefix)`` and
        ``contains(pk, text)`` of each scope text after the prefix; ORed. ``None`` (no
        filter: the client's check alone) where a template says nothing (a key that is not
        of strings), or a field of some entity is stored under the partition key's name.
        Kept per (entities, scope). (A stale key's row passes it: the client skips it.)"""
        known = (entities, *self.values.items())
        if known in _KEY_FILTERS:
            return _KEY_FILTERS[known]
        tests = {}  # (op, texts), in order
        for entity in entities:
            spec = entity.__dynaorm_spec__
            pk, templates = _PKS.get(spec.cls) or _templates(spec)
            tests.update(dict.fromkeys(_key_test(t, self.values) for t in templates))
            if pk in spec.renames:  # (F(pk) would name that field's attribute)
                tests[("", ())] = None
        found: Condition | None = None
        if ("", ()) not in tests:
            for op, texts in tests:
                cond = _key_condition(pk, op, texts)
                found = cond if found is None else found | cond
        if len(_KEY_FILTERS) < 4096:
            _KEY_FILTERS[known] = found
        return found

    def search(self, spec: EntitySpec, index: str, search: S,
               fields: Mapping[str, Any]) -> S:
        """A vector search held to the scope: each scope field must be the index's
        partition (its value checked) or one of its filters (the search then requires
        ``F(field) == value``); else the index cannot hold the scope: refused."""
        found = spec.table.vector_index(index)
        for name in self.values:
            attr = spec.attr(name)
            if attr == found.partition:
                self.fields(spec, fields, "a search")
            elif attr in found.filters:
                search = search.where(F(name) == self.given[name])
            else:
                raise ScopeError(f"{spec.name}: vector index {index!r} neither partitions "
                                 f"nor filters by the scope field {name!r}: a search of it "
                                 f"could return another tenant's items, so a session "
                                 f"scoped to {self} refuses it")
        return search

