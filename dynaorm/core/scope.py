"""A session's tenant scope (pure): ``Session(table, scope={"tenant_id": "t1"})`` reads
and writes only items whose keys render the scope's fields with the scope's values.

What is inside the scope is decided by an item's **key**, never by its attributes:
:meth:`Scope.admits` parses the stored partition key with the entity's key template (the
grammar of :mod:`dynaorm.schema.templates`) and compares the fields it gives back with
the scope's values; a key the grammar cannot parse is never admitted. Every key a scoped
session renders is admitted before it is sent, and every item a scoped read returns is
admitted before it is decoded (a query of the table's own partition is admitted once, by
its partition key: every item it returns holds that key).

One check, in the session's planning (:class:`~dynaorm.core.stage.Stage` asks it), shared
by the sync and async sessions: every key a lookup, a query, a search or a staged write
renders is checked against the scope before anything is sent, and an entity whose
partition key does not carry every scope field, or a unique rule whose guard key is not
scoped by them, is refused. Scans are *filtered* (a ``FilterExpression`` on the scope's
fields: DynamoDB reads the whole table and returns only the scope's items); a vector
search is *scoped* through the index's partition attribute or a filter attribute, else
refused. Every refusal is a :class:`~dynaorm.ScopeError`.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from typing import Any, TypeVar

from dynaorm.errors import DynaormError, ScopeError
from dynaorm.schema.paths import field_adapter
from dynaorm.schema.spec import EntitySpec
from dynaorm.schema.templates import KeyTemplate, render_value
from dynaorm.values.expressions import F
from dynaorm.values.keys import key_value

__all__ = ["Scope"]

#: (entity class, *scope items) a scope covers (:meth:`Scope.entity`): the check is made
#: once, not once a session (a web service makes a scoped session a request)
_COVERED: set[tuple[Any, ...]] = set()
#: per entity class: its table's partition attribute and partition key templates (the
#: current layout's, and the previous one's under ``Meta.previous``): what
#: :meth:`Scope.admits` parses with
_PKS: dict[type[Any], tuple[str, tuple[KeyTemplate, ...]]] = {}


def _templates(spec: EntitySpec) -> tuple[str, tuple[KeyTemplate, ...]]:
    previous = getattr(spec.previous, "pk", None)
    found = _PKS[spec.cls] = (spec.table.pk, (spec.pk,) if previous is None
                              else (spec.pk, previous))
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


class Scope:
    """The fields a scoped session holds to fixed values (``values``: as keys render them;
    ``given``: as the caller gave them, for filters)."""

    __slots__ = ("_covered", "given", "selections", "values")

    def __init__(self, scope: Mapping[str, Any]) -> None:
        if not isinstance(scope, Mapping) or not scope:
            raise ScopeError("scope= takes a non-empty dict of field names to values, e.g. "
                             "{'tenant_id': 't1'}")
        values: dict[str, str] = {}
        for name, value in scope.items():
            text = None if value is None or not isinstance(name, str) else render_value(value)
            if not text or "#" in text:
                raise ScopeError(f"scope {name!r}={value!r}: a scope names a field and a "
                                 "non-empty value without '#'")
            values[name] = text
        self.given = dict(scope)
        self.values = values
        self._covered: set[type[Any]] = set()
        #: the scoped read selections of this scope (:func:`dynaorm.read.selection.selection`)
        self.selections: dict[Any, Any] = {}

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
        for name, text in self.values.items():  # (the grammar: no separator of the field)
            bad = sorted(c for c in spec.separators(name) if c in text)
            if bad:
                raise ScopeError(f"{spec.name}: scope {name}={text!r} holds {bad[0]!r}, a "
                                 f"separator of {name!r} in its key templates: no key of "
                                 "that entity can render it")
        # (exactly: a key that folds a tenant's value, '!l', is another tenant's too; a
        # previous layout's key is read when the current one holds nothing)
        previous = getattr(spec.previous, "pk", None)
        for pk in (spec.pk, *(() if previous is None else (previous,))):
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

    def index(self, spec: EntitySpec, index: str | None) -> None:
        """Refuse a query of a secondary index whose partition does not carry the scope."""
        if index is None:
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

    # -- keys: what is inside the scope -------------------------------------------------
    def admits(self, spec: EntitySpec, item: Mapping[str, Any]) -> bool:
        """Whether the stored item ``item`` of ``spec`` is inside the scope, by its table
        partition key alone (:meth:`admits_key`); a missing or malformed one is not."""
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
        return self._parses(found[1], text)

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

    # -- reads ------------------------------------------------------------------------
    def query(self, stage: Any, entities: tuple[type[Any], ...], index: str | None,
              fields: Mapping[str, Any]) -> None:
        """A query reads a partition of the scope, of an index partitioned by it."""
        for entity in entities:
            spec = stage.spec(entity)
            self.index(spec, index)
            self.fields(spec, fields, "a query")

    def scan(self, scan: S) -> S:
        """A scan filtered to the scope (``F(field) == value`` for each scope field: the
        server reads every item and returns only the scope's)."""
        for name, value in self.given.items():
            forms = [value]  # (and as each entity's field stores it: scope '1', N 1)
            for entity in getattr(scan, "_entities", ()):
                try:
                    typed = field_adapter(entity, name).validate_python(value)
                except (ValueError, TypeError, KeyError):
                    continue
                if (render_value(typed) == self.values[name]
                        and all(type(f) is not type(typed) or f != typed for f in forms)):
                    forms.append(typed)
            scan = scan.filter(F(name).is_in(*forms) if len(forms) > 1 else F(name) == value)
        return scan

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

