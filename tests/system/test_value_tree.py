"""One value tree (contract 25), as a property: entity classes built at random from random
type trees (nested models, lists, mappings, sets, optionals, scalars, to depth 3), with
``Encrypted``, ``Compressed``, ``Offloaded`` and ``StoredAs`` at random places.

- **Definition**: a class is refused with a :class:`~dynaorm.DynaormError` naming the path
  exactly when a rule's kind sits where the field's rules do not reach it (this module's own
  statement of the rule, :func:`hidden`: a rule's kind is reached on the field itself, its
  ``Optional``'s arm or its type's first-level arguments, never below them nor on a nested
  model's fields); every other class is accepted.
- **Values**: for accepted classes (on a table with a keyring and ``offload=`` on moto's S3,
  with or without ``key_scope``), a hypothesis state machine runs random saves (new, and of
  a loaded object with some fields changed), updates of a field by key, updates by path into
  a nested model (refused where the field has a rule's kind), deletes, idempotent replays,
  re-encryption (``jobs.reencrypt``), keyring rotation (the old key kept, then dropped after a
  re-encryption) and ``forget`` of a tenant. After every step:

  (a) no plaintext of an ``Encrypted`` value (each string of one is a distinctive token) is
      in any attribute value or map key of any row of the table (rows, version rows,
      guards, receipts), in any S3 object, in an export (``encrypted="omit"``), in a log
      record of dynaorm's loggers or in an error raised;
  (b) every read (get, query, a versioned entity's history) gives what the model says;
  (c) a forgotten tenant's rows holding a sealed value raise ``ForgottenError`` on get,
      query and history, and a write sealing a value for it is refused, nothing written;
  (d) what a step did not change stays byte for byte: the attributes of the fields it did
      not set, every other row of the run.

On moto and DynamoDB Local (S3 from moto beside each). ``VALUE_TREE_EXAMPLES`` raises the
number of examples for a long run (default: a few, to keep each engine under a minute).

Defects the property found are narrowed to strict xfails at the end of the module, and
only their own step is left out of the machine (each place says which).
"""

from __future__ import annotations

import itertools
import logging
import os
import re
import tempfile
import types
import typing
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule
from pydantic import BaseModel, create_model

from dynaorm import (
    Attempt,
    Compressed,
    ConcurrentModificationError,
    DynaormError,
    Encrypted,
    Entity,
    F,
    ForgottenError,
    Hook,
    Offloaded,
    Session,
    StaticKeyring,
    StoredAs,
    Table,
    Versioned,
)
from dynaorm.jobs import export, reencrypt, run_local
from dynaorm.rules import call
from dynaorm.schema.rules.encrypted import header_of
from dynaorm.schema.rules.versioned import version_sk
from dynaorm.testing import TestBackend, use_tables, worker_suffix
from tests.conftest import wire_of
from tests.support.examples import examples
from tests.support.offload import Bucket, bucket

pytestmark = [pytest.mark.sync_only, pytest.mark.engines("moto", "local")]

EXAMPLES = int(os.environ.get("VALUE_TREE_EXAMPLES", "0"))
LIMIT = 200  # (offload_threshold: a value above it goes to S3)
RULE_KINDS = ("Encrypted", "Compressed", "Offloaded")
SCALARS = ("str", "int", "bytes", "time")
CONTAINERS = ("list", "set", "map", "optional", "model")
FORMATS = {"iso-z": StoredAs.ISO_Z, "iso-z-millis": StoredAs.ISO_Z_MILLIS,
           "epoch-seconds": StoredAs.EPOCH_SECONDS, "epoch-millis": StoredAs.EPOCH_MILLIS}
FIGURES: Counter[str] = Counter()
_names = itertools.count()

scoped_store = Table("value_tree_scoped", keyring=StaticKeyring(b"s" * 32), key_scope="tenant",
                     offload="s3://placeholder/v/", offload_threshold=LIMIT)
plain_store = Table("value_tree", keyring=StaticKeyring(b"p" * 32),
                    offload="s3://placeholder/v/", offload_threshold=LIMIT)
#: a table only classes are defined on (the definition property sends nothing)
definitions = Table("value_tree_definitions", keyring=StaticKeyring(b"d" * 32),
                    offload="s3://placeholder/d/")


# -- type trees ----------------------------------------------------------------------------
@dataclass(frozen=True)
class Node:
    """A node of a field's type tree: its shape, the rule kinds declared on it, a time's
    stored form, its children (a model's fields by name; a container's one member)."""

    shape: str
    kinds: tuple[str, ...] = ()
    stored: str | None = None  # (a name of FORMATS)
    children: tuple[tuple[str, Node], ...] = ()

    @property
    def child(self) -> Node:
        return self.children[0][1]

    def has(self, kind: str) -> bool:
        """Whether ``kind`` is declared anywhere in this tree."""
        return kind in self.kinds or any(c.has(kind) for _, c in self.children)


def hidden(node: Node, path: str, depth: int = 0, in_model: bool = False
           ) -> Iterator[tuple[str, str]]:
    """``(path, kind)`` of each rule kind of the tree its field's rules do not reach. The
    rule, stated plainly: a kind is reached on the field itself (depth 0) or its type's
    first-level arguments (depth 1), each through an ``Optional``'s arm (no level), and
    nowhere else: not deeper, and never on a nested model's fields (whatever their depth).
    (A kind reached on the field takes its whole value: the same kind below is no harm.)"""
    if in_model or depth > 1:
        yield from ((path, k) for k in node.kinds)
    for name, child in node.children:
        step = {"list": "[]", "set": "[]", "map": "{}", "optional": "",
                "model": f".{name}"}[node.shape]
        yield from hidden(child, path + step, depth + (node.shape != "optional"),
                          in_model or node.shape == "model")


def reached(node: Node, depth: int = 0) -> Iterator[str]:
    """The rule kinds a field's rules reach (where :func:`hidden` finds none)."""
    yield from node.kinds
    deeper = depth + (node.shape != "optional")
    if node.shape in ("list", "set", "map", "optional") and deeper <= 1:
        yield from reached(node.child, deeper)


def _kinds(reachable: bool, anywhere: bool) -> st.SearchStrategy[tuple[str, ...]]:
    if not (reachable or anywhere):
        return st.just(())
    return st.one_of(st.just(()), st.just(()), st.lists(
        st.sampled_from(RULE_KINDS), min_size=1, max_size=2, unique=True).map(tuple))


@st.composite
def trees(draw: st.DrawFn, anywhere: bool, depth: int = 0, in_model: bool = False,
          under_optional: bool = False, shapes: tuple[str, ...] = ()) -> Node:
    """A random type tree to depth 3 (of one of ``shapes``, if given); rule kinds where
    they are reached, or (``anywhere``) at any node."""
    kinds = draw(_kinds(depth <= 1 and not in_model, anywhere))
    shapes = shapes or SCALARS + (CONTAINERS if depth < 3 else ())
    if under_optional:  # (Optional[Optional[X]] is Optional[X]: one level, not two)
        shapes = tuple(s for s in shapes if s != "optional")
    shape = draw(st.sampled_from(shapes))
    if shape in SCALARS:
        stored = draw(st.sampled_from([None, *FORMATS])) if shape == "time" else None
        return Node(shape, kinds, stored)
    if shape == "set":  # (a set of strings: its member may carry kinds too)
        member = Node("str", draw(_kinds(depth + 1 <= 1 and not in_model, anywhere)))
        return Node(shape, kinds, children=(("", member),))
    if shape == "model":
        n = draw(st.integers(1, 2))
        return Node(shape, kinds, children=tuple(
            (f"a{i}", draw(trees(anywhere, depth + 1, True))) for i in range(n)))
    child = draw(trees(anywhere, depth + (shape != "optional"), in_model, shape == "optional"))
    return Node(shape, kinds, children=(("", child),))


def annotation(node: Node) -> Any:
    """The Python type of ``node`` (pydantic models made with ``create_model``)."""
    base: Any
    if node.shape == "time":
        base = datetime if node.stored is None else Annotated[datetime, FORMATS[node.stored]]
    elif node.shape in SCALARS:
        base = {"str": str, "int": int, "bytes": bytes}[node.shape]
    elif node.shape == "list":
        base = list[annotation(node.child)]  # type: ignore[misc]
    elif node.shape == "set":
        base = set[annotation(node.child)]  # type: ignore[misc]
    elif node.shape == "map":
        base = dict[str, annotation(node.child)]  # type: ignore[misc]
    elif node.shape == "optional":
        base = typing.Optional[annotation(node.child)]  # noqa: UP045
    else:
        fields: dict[str, Any] = {name: (annotation(c), ...) for name, c in node.children}
        base = create_model(f"M{next(_names)}", __base__=BaseModel, **fields)
    for kind in node.kinds:
        base = {"Encrypted": Encrypted, "Compressed": Compressed,
                "Offloaded": Offloaded}[kind][base]
    return base


def entity_class(table: Table, fields: dict[str, Node], versioned: bool) -> type[Any]:
    """An entity of ``table`` keyed by run, tenant and key, with ``fields``."""
    name = f"VTree{next(_names)}"
    meta = type("Meta", (), {"table": table, "pk": "VT#{run}#{tenant}#{key}", "sk": name,
                             "__qualname__": f"{name}.Meta", "__module__": __name__})
    namespace = {"__module__": __name__, "__qualname__": name, "Meta": meta,
                 "__annotations__": {"run": str, "tenant": str, "key": str,
                                     **{f: annotation(n) for f, n in fields.items()}}}
    return types.new_class(name, (Versioned if versioned else Entity,),
                           exec_body=lambda ns: ns.update(namespace))


FIELDS = st.integers(1, 3)


@st.composite
def field_trees(draw: st.DrawFn, anywhere: bool) -> dict[str, Node]:
    return {f"f{i}": draw(trees(anywhere)) for i in range(draw(FIELDS))}


@st.composite
def value_classes(draw: st.DrawFn) -> dict[str, Node]:
    """The fields of a class the machine runs (every kind reached): mostly one field sealed
    whole, often a plain nested model (updates by path go into it)."""
    fields = draw(field_trees(anywhere=False))
    if draw(st.integers(0, 3)):  # (sealed, and often offloaded: S3 holds ciphertext)
        f0, more = fields["f0"], {"Encrypted"} | ({"Offloaded"} if draw(st.booleans()) else set())
        fields["f0"] = Node(f0.shape, tuple(sorted({*f0.kinds, *more})), f0.stored,
                            f0.children)
    if draw(st.booleans()):
        model = draw(trees(False, shapes=("model",)))
        fields[f"f{len(fields)}"] = Node("model", (), None, model.children)
    return fields


# -- the definition property ---------------------------------------------------------------
_REFUSAL = re.compile(r"^(\w+)\.(\S+): (\w+) inside a field's value is not applied")


@settings(max_examples=examples(EXAMPLES or 150), deadline=None)
@given(fields=field_trees(anywhere=True), versioned=st.booleans())
def test_a_rule_kind_where_its_rules_do_not_reach_is_refused_naming_its_path(
        fields: dict[str, Node], versioned: bool) -> None:
    """Refused iff a rule's kind sits where the field's rules do not reach it (the error
    names one such path and kind); accepted otherwise, never silently."""
    expected = {(f"{name}{p}", k) for name, node in fields.items() for p, k in hidden(node, "")
                if k not in set(reached(node))}
    try:
        cls = entity_class(definitions, fields, versioned)
    except DynaormError as exc:
        found = _REFUSAL.match(str(exc))
        assert found, f"refused for another reason: {exc}"
        assert (found[2], found[3]) in expected, (str(exc), expected)
        event("refused")
        return
    assert not expected, f"{cls.__name__} accepted with {sorted(expected)} unreached"
    assert cls.__dynaorm_spec__ is not None
    event("accepted with a rule kind" if any(n.kinds for node in fields.values()
                                              for n in _nodes(node)) else "accepted")


def _nodes(node: Node) -> Iterator[Node]:
    yield node
    for _, child in node.children:
        yield from _nodes(child)


# -- values --------------------------------------------------------------------------------
TIMES = st.datetimes(min_value=datetime(2000, 1, 1), max_value=datetime(2040, 1, 1),
                     timezones=st.just(UTC)).map(lambda t: t.replace(microsecond=0))


class Values:
    """Random values of a tree, every string and byte string a distinctive token
    (``<run:n>``: never part of a key, a number or another token), so that a plaintext is
    found by looking for it."""

    def __init__(self, run: str) -> None:
        self.run = run
        self.count = itertools.count()

    def token(self) -> str:
        return f"<{self.run}:{next(self.count)}>"

    def of(self, node: Node, data: st.DataObject) -> Any:
        shape = node.shape
        if shape == "str":
            large = data.draw(st.integers(0, 4)) == 0  # (above the offload threshold)
            return self.token() + ("~" * (LIMIT + 100) if large else "")
        if shape == "bytes":
            return self.token().encode()
        if shape == "int":
            return data.draw(st.integers(-10**9, 10**9))
        if shape == "time":
            return data.draw(TIMES)
        if shape == "optional":
            return None if data.draw(st.booleans()) else self.of(node.child, data)
        if shape == "model":
            return {name: self.of(c, data) for name, c in node.children}
        n = data.draw(st.integers(0, 2))
        if shape == "list":
            return [self.of(node.child, data) for _ in range(n)]
        if shape == "set":
            return {self.token() for _ in range(n)}
        return {self.token(): self.of(node.child, data) for _ in range(n)}


def tokens(value: Any) -> Iterator[str]:
    """The tokens (strings, byte strings, map keys) of a value."""
    if isinstance(value, str):
        yield value.rstrip("~")
    elif isinstance(value, bytes):
        yield value.decode()
    elif isinstance(value, BaseModel):  # (its field names are no secret)
        for v in value.__dict__.values():
            yield from tokens(v)
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from tokens(k)
            yield from tokens(v)
    elif isinstance(value, list | set | tuple):
        for v in value:
            yield from tokens(v)


def _attribute_texts(av: Any) -> Iterator[str | bytes]:
    """Every text and byte string of a stored attribute value, map keys included."""
    if isinstance(av, dict) and len(av) == 1:
        (tag, v), = av.items()
        if tag in ("S", "B"):
            yield v if isinstance(v, str) else bytes(v)
        elif tag in ("SS", "BS"):
            yield from (x if isinstance(x, str) else bytes(x) for x in v)
        elif tag == "L":
            for x in v:
                yield from _attribute_texts(x)
        elif tag == "M":
            for k, x in v.items():
                yield k
                yield from _attribute_texts(x)


def shown(secrets: set[str], texts: Iterator[str | bytes]) -> set[str]:
    """The secrets found in ``texts`` (each text searched as text, or as bytes)."""
    if not secrets:
        return set()
    pattern = "|".join(map(re.escape, secrets))
    text, binary = re.compile(pattern), re.compile(pattern.encode())
    found: set[str] = set()
    for t in texts:
        found |= ({m.group() for m in text.finditer(t)} if isinstance(t, str)
                  else {m.group().decode() for m in binary.finditer(t)})
    return found


class Logs(logging.Handler):
    """Every record of dynaorm's loggers, formatted, with its arguments."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.texts: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.texts.append(record.getMessage() + repr(record.args) + repr(record.exc_info))


class Store(TestBackend):
    """The test's tables, emptied between runs."""

    def clear(self, table: Table) -> None:
        for item in self.scan_raw(table):
            key = {a: item[a] for a in (table.pk, table.sk)}
            table.db.driver.run(call("DeleteItem", {"TableName": table.name, "Key": key}))


def forgotten(read: Callable[[], Any]) -> bool:
    """Whether ``read`` raises ForgottenError (anything else it raises propagates)."""
    try:
        read()
    except ForgottenError:
        return True
    return False


# -- the state machine ---------------------------------------------------------------------
TENANTS = st.sampled_from(["a", "b"])
KEYS = st.sampled_from(["1", "2"])


class ValueTreeModel(RuleBasedStateMachine):
    """One run: a class of its own (its fields' trees drawn at random), its own tenants."""

    db: Store
    bucket: Bucket
    logs: Logs

    def __init__(self) -> None:
        super().__init__()
        self.run = uuid.uuid4().hex[:8]
        self.values = Values(self.run)
        self.expected: dict[tuple[str, str], dict[str, Any]] = {}
        self.versions: dict[tuple[str, str], list[dict[str, Any]]] = {}
        self.secrets: set[str] = set()
        self.errors: list[str] = []
        self.gone: set[str] = set()
        self.keys = [os.urandom(32)]
        self.stale = False  # (a rotation not yet followed by a re-encryption)
        self.rotated = False
        self.exports = 0
        #: a versioned entity's update by key seals its unchanged Encrypted values anew
        #: (a defect: test_a_versioned_update_by_key_keeps_unchanged_ciphertexts); (d) for
        #: them is left out of those steps only
        self.resealing = False

    # -- the class ---------------------------------------------------------------------
    @initialize(fields=value_classes(), versioned=st.booleans(),
                scoped=st.booleans())
    def define(self, fields: dict[str, Node], versioned: bool, scoped: bool) -> None:
        self.table = scoped_store if scoped else plain_store
        self.db.clear(self.table)  # (the scans of a run read its rows only)
        self.table.keyring = StaticKeyring(self.keys[0])
        self.fields, self.versioned, self.scoped = fields, versioned, scoped
        self.cls = entity_class(self.table, fields, versioned)
        self.secret_fields = {f for f, n in fields.items() if n.has("Encrypted")}
        FIGURES["classes"] += 1
        FIGURES["scoped" if scoped else "unscoped"] += 1
        for kind in RULE_KINDS:
            FIGURES[f"classes with {kind}"] += any(n.has(kind) for n in fields.values())

    @property
    def droppable(self) -> bool:
        """Whether the old keys may be dropped after a re-encryption. Not where a sealed
        value may be kept in S3 under the table's keyring: a DEFECT, the job skips those
        values (test_an_offloaded_sealed_value_reads_after_a_rotation_to_the_end); with
        ``key_scope`` they are sealed under the tenant's key, which the job re-wraps."""
        return self.scoped or not any(n.has("Offloaded") for f, n in self.fields.items()
                                      if f in self.secret_fields)

    def t(self, tenant: str) -> str:
        return f"{tenant}-{self.run}"

    def ident(self, tenant: str, key: str) -> dict[str, str]:
        return {"run": self.run, "tenant": tenant, "key": key}

    def fresh(self, data: st.DataObject, only: set[str] | None = None) -> dict[str, Any]:
        """New values for ``only`` (default: every field)."""
        return {f: self.values.of(n, data) for f, n in self.fields.items()
                if only is None or f in only}

    def sealing(self, values: dict[str, Any]) -> bool:
        """Whether writing ``values`` seals something (an Encrypted field not None)."""
        return any(values.get(f) is not None for f in self.secret_fields)

    def remember(self, obj: Any, fields: set[str] | dict[str, Any]) -> None:
        """The secrets of ``obj``'s ``fields``: the tokens of those declaring
        ``Encrypted``."""
        for f in self.secret_fields & set(fields):
            self.secrets |= set(tokens(getattr(obj, f)))

    def dump(self, obj: Any) -> dict[str, Any]:
        return {k: v for k, v in obj.model_dump().items() if k != "version"}

    # -- raw state -----------------------------------------------------------------------
    def rows(self) -> dict[tuple[str, str], dict[str, Any]]:
        """This run's rows, by (pk, sk)."""
        t = self.table
        return {(r[t.pk]["S"], r[t.sk]["S"]): r for r in self.db.scan_raw(t)
                if r[t.pk].get("S", "").startswith(f"VT#{self.run}#")}

    def row_key(self, tenant: str, key: str) -> tuple[str, str]:
        k = self.cls.__dynaorm_spec__.primary_key(self.ident(tenant, key))
        return (k[self.table.pk], k[self.table.sk])

    def _same(self, attr: str, old: Any, new: Any) -> bool:
        """Whether ``old`` and ``new`` of ``attr`` are the same stored value: byte for
        byte, or (an Encrypted field) sealed anew under another key by a save or a
        re-encryption after a rotation."""
        if old == new:
            return True
        if attr not in self.secret_fields:
            return False
        if self.resealing:  # (DEFECT, see test_a_versioned_update_by_key_keeps_...)
            return True
        before, after = header_of(old), header_of(new)
        if before is not None and after is not None:
            return before[0] != after[0]
        return self.rotated  # (an offloaded sealed value: re-sealed into a new object)

    def check_untouched(self, before: dict[tuple[str, str], dict[str, Any]],
                        changed: dict[tuple[str, str], set[str] | None]) -> None:
        """(d): every row of the run as it was, but the latest rows of ``changed``
        (entity -> the fields set: the others' attributes stay; ``None``: deleted)."""
        after = self.rows()
        latest = {self.row_key(*k): v for k, v in changed.items()}
        keep = {"run", "tenant", "key"}
        for key, old in before.items():
            if key in latest and latest[key] is None:
                continue  # (deleted)
            if key not in after:  # (a deleted entity's version rows, history=True)
                assert any(v is None and key[0] == k[0] for k, v in latest.items()), key
                continue
            new = after[key]
            names = ((keep | set(self.fields)) - latest[key] if key in latest and latest[
                key] is not None else set(old) | set(new))
            bookkeeping = (self.table.revision_attribute, "version")
            moved = [a for a in names if not self._same(a, old.get(a), new.get(a)) and (
                a not in bookkeeping or key not in latest)]
            assert not moved, f"{key}: {moved} changed by a step that did not change them"

    def attempt(self, write: Callable[[], None]) -> Exception | None:
        """Run ``write``; an error it raises is returned (its text kept for (a))."""
        try:
            write()
        except DynaormError as exc:
            self.errors += [str(exc), repr(exc), repr(exc.__cause__)]
            return exc
        return None

    def refused_for_gone(self, tenant: str, values: dict[str, Any],
                         write: Callable[[], None]) -> bool:
        """(c): a write sealing a value for a forgotten tenant is refused, nothing written
        (``True``: the tenant is forgotten, the write judged)."""
        if tenant not in self.gone:
            return False
        if self.sealing(values):
            before = self.rows()
            assert isinstance(self.attempt(write), ForgottenError)
            assert self.rows() == before
            FIGURES["writes refused (forgotten)"] += 1
        return True

    # -- steps ---------------------------------------------------------------------------
    def save(self, tenant: str, key: str, data: st.DataObject, overwrite: bool) -> None:
        """A new object (over the stored one with ``overwrite``), or a loaded one with some
        fields set anew."""
        tenant = self.t(tenant)
        values = self.fresh(data)
        obj = self.cls(**self.ident(tenant, key), **values)

        def write() -> None:
            s = Session(self.table)
            s.save(obj, overwrite=True)
            s.commit()

        if self.refused_for_gone(tenant, values, write):
            return
        current = self.expected.get((tenant, key))
        before = self.rows()
        if current is None or overwrite:
            write()
            changed: set[str] = set(self.fields)
        else:
            changed = set(data.draw(st.sets(st.sampled_from(sorted(self.fields)), min_size=1)))
            s = Session(self.table)
            loaded = s.get(self.cls, consistent=True, **self.ident(tenant, key))
            for f in changed:
                setattr(loaded, f, getattr(obj, f))
            s.save(loaded)
            s.commit()
            obj = loaded
        self.remember(obj, values)
        self.applied(tenant, key, self.dump(obj))
        self.check_untouched(before, {(tenant, key): changed})
        FIGURES["saves"] += 1

    def applied(self, tenant: str, key: str, dumped: dict[str, Any]) -> None:
        """``dumped`` stored (a versioned entity: its next version)."""
        if self.expected.get((tenant, key)) == dumped:
            return  # (a save that changes nothing writes no version)
        self.expected[(tenant, key)] = dumped
        self.versions.setdefault((tenant, key), []).append(dumped)

    def update_field(self, tenant: str, key: str, data: st.DataObject) -> None:
        """``s.update(Entity, **key).set(field=value)``: that field only changes."""
        tenant = self.t(tenant)
        current = self.expected.get((tenant, key))
        if current is None:
            return
        field = data.draw(st.sampled_from(sorted(self.fields)))
        values = self.fresh(data, {field})

        def write() -> None:
            s = Session(self.table)
            s.update(self.cls, **self.ident(tenant, key)).set(**values)
            s.commit()

        if self.refused_for_gone(tenant, values, write):
            return
        before = self.rows()
        write()
        merged = self.cls.model_validate({**current, **self.ident(tenant, key), **values})
        self.remember(merged, values)
        self.applied(tenant, key, self.dump(merged))
        self.resealing = self.versioned
        self.check_untouched(before, {(tenant, key): {field}})
        self.resealing = False
        FIGURES["updates"] += 1

    def update_path(self, tenant: str, key: str, data: st.DataObject) -> None:
        """``.set(F("field.a0.a1"), value)`` into a nested model: applied where the field
        declares no rule's kind, refused before anything is sent where it does."""
        tenant = self.t(tenant)
        current = self.expected.get((tenant, key))
        if current is None or tenant in self.gone:
            return
        models = sorted(f for f, n in self.fields.items() if n.shape == "model")
        if not models:
            return
        field = data.draw(st.sampled_from(models))
        node, value, path = self.fields[field], current[field], [field]
        while True:  # (down the models, to a member at random)
            name, child = data.draw(st.sampled_from(node.children))
            path.append(name)
            if child.shape != "model" or data.draw(st.booleans()):
                break
            node, value = child, value[name]
        new = self.values.of(child, data)
        s = Session(self.table)
        before = self.rows()
        if any(self.fields[field].has(k) for k in RULE_KINDS):
            error = self.attempt(lambda: s.update(self.cls, **self.ident(tenant, key)).set(
                F(".".join(path)), new))
            assert error is not None, f"a path into {field} (a rule's kind) was accepted"
            assert self.rows() == before
            FIGURES["paths refused"] += 1
            return
        s.update(self.cls, **self.ident(tenant, key)).set(F(".".join(path)), new)
        s.commit()
        changed = dict(current)
        target = changed[field] = _deep_copy(current[field])
        for name in path[1:-1]:
            target = target[name]
        target[path[-1]] = new
        merged = self.cls.model_validate({**changed, **self.ident(tenant, key)})
        self.applied(tenant, key, self.dump(merged))
        self.resealing = self.versioned
        self.check_untouched(before, {(tenant, key): {field}})
        self.resealing = False
        FIGURES["paths"] += 1

    def delete(self, tenant: str, key: str, history: bool) -> None:
        """A delete by key (a forgotten tenant's too: it seals nothing)."""
        tenant = self.t(tenant)
        if (tenant, key) not in self.expected:
            return
        before = self.rows()
        s = Session(self.table)
        s.delete(self.cls, history=history and self.versioned, **self.ident(tenant, key))
        s.commit()
        del self.expected[(tenant, key)]
        if history or not self.versioned:
            self.versions.pop((tenant, key), None)
        self.check_untouched(before, {(tenant, key): None})
        FIGURES["deletes"] += 1

    def replay(self, tenant: str, key: str, data: st.DataObject) -> None:
        """A commit under an idempotency key, made twice: the second applies nothing."""
        tenant = self.t(tenant)
        if tenant in self.gone:
            return
        values = self.fresh(data)
        idem = f"k-{self.run}-{next(self.values.count)}"
        for attempt in range(2):
            s = Session(self.table)
            obj = self.cls(**self.ident(tenant, key), **values)
            s.save(obj, overwrite=True)
            before = self.rows()
            result = s.commit(idempotency_key=idem)
            assert result.replayed == (attempt == 1)
            if attempt:
                self.check_untouched(before, {})
        self.remember(obj, values)
        self.applied(tenant, key, self.dump(obj))
        FIGURES["replays"] += 1
        # The replayed object saved again (it holds the state stored). Left out for an
        # entity with a sealed or offloaded field: a DEFECT, its save raises a false
        # ConcurrentModificationError (test_a_replayed_object_saves_again).
        if data.draw(st.booleans()) and not any(
                n.has(k) for n in self.fields.values() for k in ("Encrypted", "Offloaded")):
            field = data.draw(st.sampled_from(sorted(self.fields)))
            again = self.fresh(data, {field})
            setattr(obj, field, getattr(self.cls(**self.ident(tenant, key), **{
                **values, **again}), field))
            before = self.rows()
            s.save(obj)
            s.commit()
            self.remember(obj, again)
            self.applied(tenant, key, self.dump(obj))
            self.check_untouched(before, {(tenant, key): {field}})
            FIGURES["replayed objects saved"] += 1

    def reencrypt(self) -> None:
        """``jobs.reencrypt``: every value under the current key; nothing else changes."""
        before = self.rows()
        report = run_local(reencrypt(self.cls, segments=2))
        assert report.failed == [], report.failed
        self.stale = False
        self.check_untouched(before, {})
        FIGURES["reencrypts"] += 1

    def rotate(self) -> None:
        """A new key in front, the old ones kept."""
        self.keys.insert(0, os.urandom(32))
        self.table.keyring = StaticKeyring(self.keys[0], previous=self.keys[1:])
        self.stale = self.rotated = True
        FIGURES["rotations"] += 1

    def drop(self) -> None:
        """The old keys dropped, after a re-encryption: every value still reads."""
        del self.keys[1:]
        self.table.keyring = StaticKeyring(self.keys[0])
        FIGURES["drops"] += 1

    def forget(self, tenant: str) -> None:
        before = self.rows()
        self.table.forget(scope={"tenant": self.t(tenant)})
        self.gone.add(self.t(tenant))
        self.check_untouched(before, {})
        FIGURES["forgets"] += 1

    def exported(self) -> None:
        """An export (``encrypted="omit"``, version rows too) holds no secret (once a run:
        it costs a scan and a file)."""
        self.exports += 1
        with tempfile.TemporaryDirectory() as to:
            run_local(export(self.table, to, entities=[self.cls], history=self.versioned))
            import pyarrow.parquet as pq

            texts = [repr(pq.read_table(p).to_pylist()) for p in Path(to).rglob("*.parquet")]
        assert not shown(self.secrets, iter(texts))
        FIGURES["exports"] += 1

    @rule(op=st.sampled_from(["save", "save", "save", "update_field", "update_path",
                              "update_path", "delete", "replay"]),
          tenant=TENANTS, key=KEYS, data=st.data())
    def write(self, op: str, tenant: str, key: str, data: st.DataObject) -> None:
        """A write drawn at random (saves weigh most: the others need a stored entity)."""
        if op == "save":
            self.save(tenant, key, data, data.draw(st.booleans()))
        elif op == "delete":
            self.delete(tenant, key, data.draw(st.booleans()))
        else:
            getattr(self, op)(tenant, key, data)

    @rule(op=st.sampled_from(["reencrypt", "rotate", "to the end", "drop", "forget",
                              "exported"]),
          tenant=TENANTS)
    def keys_and_copies(self, op: str, tenant: str) -> None:
        """Re-encryption, rotation, dropping the old keys, forgetting a tenant, an export:
        each where it applies."""
        if op == "reencrypt" and self.secret_fields:
            self.reencrypt()
        elif op == "rotate":
            self.rotate()
        elif op == "drop" and len(self.keys) > 1 and not self.stale and self.droppable:
            self.drop()
        elif op == "to the end" and self.secret_fields:  # (as the encryption guide says)
            self.rotate()
            self.reads_are_the_model()
            self.reencrypt()
            if self.droppable:
                self.drop()
        elif op == "forget" and self.scoped:
            self.forget(tenant)
        elif op == "exported" and not self.exports:
            self.exported()

    # -- after every step ----------------------------------------------------------------
    @invariant()
    def no_plaintext_anywhere(self) -> None:
        """(a)"""
        if not hasattr(self, "cls"):
            return
        texts = (t for r in self.db.scan_raw(self.table) for k, av in r.items()
                 for t in itertools.chain((k,), _attribute_texts(av)))
        assert not shown(self.secrets, texts), "an Encrypted value stored in plaintext"
        bodies = (self.bucket.body(u) for u in self.bucket.uris())
        assert not shown(self.secrets, bodies), "an Encrypted value in S3 in plaintext"
        assert not shown(self.secrets, iter(self.logs.texts + self.errors)), (
            "an Encrypted value logged or raised")

    @invariant()
    def reads_are_the_model(self) -> None:
        """(b), (c)"""
        if not hasattr(self, "cls"):
            return
        r = Session(self.table)
        for (tenant, key), want in self.expected.items():
            ident = self.ident(tenant, key)
            get = lambda i=ident: r.get(self.cls, consistent=True, **i)  # noqa: E731
            query = lambda i=ident: r.query(self.cls, **i).all()  # noqa: E731
            history = lambda i=ident: list(r.history(self.cls, **i))  # noqa: E731
            if tenant in self.gone and self.sealing(want):
                assert forgotten(get) and forgotten(query)
                if self.versioned:
                    assert forgotten(history)
                FIGURES["forgotten reads"] += 1
                continue
            if tenant in self.gone:
                continue
            assert self.dump(get()) == want
            assert [self.dump(o) for o in query()] == [want]
            if self.versioned:
                assert [self.dump(o) for o in history()] == self.versions[(tenant, key)]
        FIGURES["invariants checked"] += 1


def _deep_copy(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _deep_copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_deep_copy(v) for v in value]
    return value


@pytest.fixture
def store(backend: str | None, request: pytest.FixtureRequest,
          monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Store, Bucket]]:
    tables = (scoped_store, plain_store)
    for t in tables:
        t.keyring = StaticKeyring(os.urandom(32))
    with bucket(backend, request, monkeypatch, *tables) as b, use_tables(
            *tables, endpoint_url=backend, name_suffix=worker_suffix(),
            wire=wire_of(request)) as tb:
        yield Store(tb.tables, tb.endpoint_url), b


def test_an_encrypted_value_is_never_shown_and_every_value_reads(
        store: tuple[Store, Bucket]) -> None:
    tb, b = store
    logs = Logs()
    logger = logging.getLogger("dynaorm")
    level = logger.level
    logger.addHandler(logs)
    logger.setLevel(logging.DEBUG)
    machine = type("Machine", (ValueTreeModel,), {"db": tb, "bucket": b, "logs": logs})
    machine.TestCase.settings = settings(  # type: ignore[attr-defined]
        max_examples=examples(EXAMPLES or 20), stateful_step_count=12, deadline=None,
        derandomize=True, suppress_health_check=list(HealthCheck), print_blob=True)
    FIGURES.clear()
    try:
        machine.TestCase().runTest()  # type: ignore[attr-defined]
    finally:
        logger.removeHandler(logs)
        logger.setLevel(level)
    print("\nvalue tree figures: " + ", ".join(f"{k}={v}" for k, v in sorted(
        FIGURES.items())))
    assert FIGURES["invariants checked"] > 0


# -- defects the property found, each narrowed to one case -----------------------------------
class Ledger(Versioned):
    """A versioned entity with a sealed field: the two defects below."""

    class Meta:
        table = plain_store
        pk = "LEDGER#{key}"
        sk = "LEDGER"

    key: str
    title: str = ""
    secret: Encrypted[str] = ""


def test_a_versioned_update_by_key_keeps_unchanged_ciphertexts(
        store: tuple[Store, Bucket]) -> None:
    """Read first and planned as a save, the update's object owns the state read: the
    latest copy keeps the ciphertext of the value it did not change (sealed anew before);
    the new version row, another row, holds it sealed for itself; the history reads."""
    tb, _ = store
    s = Session(plain_store)
    s.save(Ledger(key="1", secret="s3cret"))
    s.commit()
    row = lambda n: next(r for r in tb.scan_raw(plain_store)  # noqa: E731
                         if r["pk"] == {"S": "LEDGER#1"}
                         and r["sk"] == {"S": version_sk("LEDGER", n)})
    before, first = row(0), row(1)
    update = s.update(Ledger, key="1").set(title="changed")
    s.commit()
    latest, second = row(0), row(2)
    assert latest["title"] == second["title"] == {"S": "changed"}
    assert latest["secret"] == before["secret"] and row(1) == first
    assert header_of(second["secret"]) is not None
    assert [(v.version, v.title, v.secret) for v in Session(plain_store).history(
        Ledger, key="1").all()] == [(1, "", "s3cret"), (2, "changed", "s3cret")]
    assert update.result.version == 2


class Note(Entity):
    class Meta:
        table = plain_store
        pk = "NOTE#{key}"
        sk = "NOTE"

    key: str
    title: str = ""
    secret: Encrypted[str] = ""


@pytest.mark.parametrize(("cls", "field"), [(Ledger, "title"), (Note, "secret")])
def test_a_replayed_object_saves_again(store: tuple[Store, Bucket], cls: type[Any],
                                       field: str) -> None:
    """A versioned entity changing any field; a plain one changing its sealed field."""
    for _ in range(2):
        s = Session(plain_store)
        obj = cls(key="2", secret="s3cret")
        s.save(obj, overwrite=True)
        s.commit(idempotency_key="replayed-2")
    setattr(obj, field, "again")
    s.save(obj)
    s.commit()
    found = Session(plain_store).get(cls, key="2", consistent=True)
    assert found is not None and getattr(found, field) == "again"


class Archive(Entity):
    class Meta:
        table = plain_store
        pk = "ARCHIVE#{key}"
        sk = "ARCHIVE"

    key: str
    body: Offloaded[Encrypted[str]] = ""


def test_an_offloaded_sealed_value_reads_after_a_rotation_to_the_end(
        store: tuple[Store, Bucket]) -> None:
    old, new = os.urandom(32), os.urandom(32)
    plain_store.keyring = StaticKeyring(old)
    s = Session(plain_store)
    s.save(Archive(key="1", body="x" * (LIMIT + 100)))
    s.commit()
    plain_store.keyring = StaticKeyring(new, previous=[old])
    assert run_local(reencrypt(Archive)).failed == []
    plain_store.keyring = StaticKeyring(new)
    found = Session(plain_store).get(Archive, key="1", consistent=True)
    assert found is not None and found.body == "x" * (LIMIT + 100)


class Journal(Versioned):
    """A versioned entity whose sealed value is kept in S3, overwritten and replayed."""

    class Meta:
        table = plain_store
        pk = "JOURNAL#{key}"
        sk = "JOURNAL"

    key: str
    title: str = ""
    pages: Offloaded[Encrypted[list[str]]] = []


def test_a_replayed_overwrite_of_a_versioned_entity_with_an_offloaded_sealed_value(
        store: tuple[Store, Bucket]) -> None:
    """A loaded (or replayed) versioned entity whose sealed value is kept in S3 saves a
    change: its new version row binds the unchanged value anew (0.9 opened the S3
    reference the row held as if it were a ciphertext: DecryptionError)."""
    plain_store.keyring = StaticKeyring(os.urandom(32))
    for attempt in range(2):  # (the second a replay: planned on the row the first wrote)
        s = Session(plain_store)
        s.save(Journal(key="1", pages=["first" * LIMIT]), overwrite=True)
        assert s.commit(idempotency_key="journal-1").replayed == (attempt == 1)
    for attempt in range(2):  # (a second key over the first's row: a next version)
        s = Session(plain_store)
        journal = Journal(key="1", pages=["second" * LIMIT])
        s.save(journal, overwrite=True)
        assert s.commit(idempotency_key="journal-2").replayed == (attempt == 1)
    journal.title = "again"  # (the replayed object saved again: its history row rebound)
    s.save(journal)
    s.commit()
    found = Session(plain_store).get(Journal, key="1", consistent=True)
    assert found is not None and found.pages == ["second" * LIMIT]
    assert found.title == "again" and found.version == 3
    history = list(Session(plain_store).history(Journal, key="1"))  # (each version reads)
    assert [(j.version, j.pages, j.title) for j in history] == [
        (1, ["first" * LIMIT], ""), (2, ["second" * LIMIT], ""),
        (3, ["second" * LIMIT], "again")]


# -- the jobs reach every sealed node and every reference at the first level ------------------
class Wallet(Entity):
    """Sealed and offloaded values as a list's members and a mapping's values (the first
    level of a field: where a field's rules reach)."""

    class Meta:
        table = scoped_store
        pk = "WALLET#{tenant}#{key}"
        sk = "WALLET"

    tenant: str
    key: str
    cards: list[Encrypted[str]] = []
    docs: dict[str, Offloaded[Encrypted[bytes]]] = {}
    notes: dict[str, Offloaded[str]] = {}


class Purse(Entity):
    """A :class:`Wallet` on a table without ``key_scope`` (a rotation re-seals its values)."""

    class Meta:
        table = plain_store
        pk = "PURSE#{tenant}#{key}"
        sk = "PURSE"

    tenant: str
    key: str
    cards: list[Encrypted[str]] = []
    docs: dict[str, Offloaded[Encrypted[bytes]]] = {}
    notes: dict[str, Offloaded[str]] = {}


def _wallet(tenant: str, cls: type[Any] = Wallet) -> Any:
    return cls(tenant=tenant, key="1", cards=["4111-card", "5500-card"],
               docs={"passport": b"p" * (LIMIT + 50)}, notes={"n": "n" * (LIMIT + 50)})


def _row(tb: Store, table: Table, pk: str) -> dict[str, Any]:
    return next(r for r in tb.scan_raw(table) if r["pk"] == {"S": pk})


def test_reencrypt_and_a_rotation_reach_sealed_members_and_offloaded_mapping_values(
        store: tuple[Store, Bucket]) -> None:
    """The rotation to the end (the guide's): every sealed value under the new key (the
    list's sealed members in the row, the mapping's sealed value in a new object; the plain
    note's object kept), the old key dropped, each value read back."""
    tb, b = store
    old, new = os.urandom(32), os.urandom(32)
    plain_store.keyring = StaticKeyring(old)
    s = Session(plain_store)
    s.save(_wallet("t1", Purse))
    s.commit()
    row, objects = _row(tb, plain_store, "PURSE#t1#1"), b.uris()
    plain_store.keyring = StaticKeyring(new, previous=[old])
    report = run_local(reencrypt(Purse))
    assert report.failed == [] and report.resealed == 1
    after = _row(tb, plain_store, "PURSE#t1#1")
    assert after["cards"] != row["cards"] and after["docs"] != row["docs"]
    assert after["notes"] == row["notes"] and len(b.uris() - objects) == 1
    plain_store.keyring = StaticKeyring(new)
    found = Session(plain_store).get(Purse, tenant="t1", key="1", consistent=True)
    assert found == _wallet("t1", Purse)
    assert run_local(reencrypt(Purse)).current == 1


def test_a_forgotten_tenants_sealed_members_and_offloaded_values_read_as_forgotten(
        store: tuple[Store, Bucket]) -> None:
    del store  # (the fixture makes the tables and the bucket)
    s = Session(scoped_store)
    for tenant in ("t1", "t2"):
        s.save(_wallet(tenant))
    s.commit()
    scoped_store.forget(scope={"tenant": "t1"})
    with pytest.raises(ForgottenError):
        Session(scoped_store).get(Wallet, tenant="t1", key="1", consistent=True)
    assert Session(scoped_store).get(Wallet, tenant="t2", key="1") == _wallet("t2")
    report = run_local(reencrypt(Wallet))
    assert report.failed == [] and report.forgotten == 1


def test_check_reads_sealed_members_and_finds_a_reference_in_a_mapping_value_dangling(
        store: tuple[Store, Bucket]) -> None:
    """A check of healthy rows finds nothing; an object of a mapping's offloaded value
    removed behind dynaorm's back is a dangling reference of its row."""
    from dynaorm.jobs.checking import check_table

    tb, b = store
    s = Session(scoped_store)
    s.save(_wallet("t1"))
    s.commit()
    result = check_table(scoped_store)
    assert result.problems == [] and result.objects == 2
    b.remove(_row(tb, scoped_store, "WALLET#t1#1")["notes"]["M"]["dynaorm:offloaded"]["M"][
        "uri"]["S"])
    result = check_table(scoped_store)
    assert [p for p in result.problems if "dangling-ref" in p and "notes" in p], result.problems


# -- red team of issue 88: an update by key that reads first, and kinds at a field's first level
def _raw_texts(tb: Store, table: Table) -> str:
    """Every stored row of ``table``, as text (a plaintext held anywhere shows in it)."""
    return repr(tb.scan_raw(table))


@pytest.mark.engines("moto")
@pytest.mark.parametrize("to", ["s3cret", "n3w-secret"])
def test_a_versioned_update_by_key_of_a_sealed_value_stores_no_plaintext_and_its_history_reads(
        store: tuple[Store, Bucket], to: str) -> None:
    """An update by key setting the sealed value (to the same plaintext, or another), then
    another setting only the title: every row sealed, none holds a plaintext; the history
    reads each version's value and the latest copy reads the last."""
    tb, _ = store
    s = Session(plain_store)
    s.save(Ledger(key="1", secret="s3cret"))
    s.commit()
    sealed = _latest_secret(tb)
    s.update(Ledger, key="1").set(secret=to)
    s.commit()
    same = to == "s3cret"  # (no change: nothing written, the ciphertext kept)
    assert (_latest_secret(tb) == sealed) is same
    s.update(Ledger, key="1").set(title="t")
    s.commit()
    assert "s3cret" not in _raw_texts(tb, plain_store) and to not in _raw_texts(tb, plain_store)
    fresh = Session(plain_store)
    want = [(1, "", "s3cret"), *([] if same else [(2, "", to)])]
    want.append((len(want) + 1, "t", to))
    assert [(v.version, v.title, v.secret)
            for v in fresh.history(Ledger, key="1").all()] == want
    got = fresh.get(Ledger, key="1")
    assert got is not None and (got.version, got.title, got.secret) == (len(want), "t", to)


def _latest_secret(tb: Store) -> Any:
    return next(r for r in tb.scan_raw(plain_store) if r["pk"] == {"S": "LEDGER#1"}
                and r["sk"] == {"S": version_sk("LEDGER", 0)})["secret"]


class _AfterFirstRead(Hook):
    """Runs ``then`` once, right after the first read of ``table`` ends (another writer
    between an update's read and its write)."""

    def __init__(self, table: Table, then: Callable[[], None]) -> None:
        self.table, self.then, self.done = table, then, False

    def on_end(self, phase: Any, token: Any) -> object:
        if (not self.done and isinstance(phase, Attempt) and self.table.name in phase.tables
                and phase.operation in ("GetItem", "Query", "BatchGetItem",
                                        "TransactGetItems")):
            self.done = True
            self.then()
        return None


@pytest.mark.engines("moto")
@pytest.mark.parametrize("theirs", ["title", "secret"])
def test_a_versioned_update_by_key_with_a_writer_between_its_read_and_write_loses_nothing(
        store: tuple[Store, Bucket], theirs: str) -> None:
    """Another writer updates the row between the update's read and its write: the update
    raises a conflict (the row as the other writer left it) or lands on top of it; never
    a lost update, and the history holds each version once."""
    tb, _ = store
    s = Session(plain_store)
    s.save(Ledger(key="1", title="", secret="s3cret"))
    s.commit()

    def other() -> None:
        o = Session(plain_store)
        o.update(Ledger, key="1").set(**{theirs: "other-" + theirs})
        o.commit()

    plain_store.db.add_hook(_AfterFirstRead(plain_store, other))
    s.update(Ledger, key="1").set(secret="mine")
    try:
        s.commit()
        landed = True
    except ConcurrentModificationError:
        landed = False
    fresh = Session(plain_store)
    got = fresh.get(Ledger, key="1")
    history = [(v.version, v.title, v.secret)
               for v in fresh.history(Ledger, key="1").all()]
    them = {"title": "", "secret": "s3cret", theirs: "other-" + theirs}
    assert got is not None
    if landed:
        assert (got.version, got.title, got.secret) == (3, them["title"], "mine")
        assert history == [(1, "", "s3cret"), (2, them["title"], them["secret"]),
                           (3, them["title"], "mine")]
    else:
        assert (got.version, got.title, got.secret) == (2, them["title"], them["secret"])
        assert history == [(1, "", "s3cret"), (2, them["title"], them["secret"])]
    assert "mine" not in _raw_texts(tb, plain_store) and "s3cret" not in _raw_texts(
        tb, plain_store)


@pytest.mark.engines("moto")
def test_sealed_list_members_and_mapping_values_are_never_stored_in_plaintext(
        store: tuple[Store, Bucket]) -> None:
    """A list of sealed values and a mapping of sealed (offloaded) values, saved, changed
    member by member (appended, replaced, a key added) and saved again: no row and no
    object in the bucket holds a plaintext; every value reads back."""
    tb, b = store
    s = Session(plain_store)
    p = Purse(tenant="a", key="1", cards=["4111-card"], docs={"d": b"doc-plain" * 40},
              notes={"n": "note-plain" * 30})
    s.save(p)
    s.commit()
    loaded = s.get(Purse, tenant="a", key="1")
    assert loaded is not None
    loaded.cards.append("5500-card")
    loaded.cards[0] = "3400-card"
    loaded.docs["e"] = b"doc2-plain" * 40
    s.save(loaded)
    s.commit()
    texts = _raw_texts(tb, plain_store) + repr([b.body(uri) for uri in b.uris()])
    for plain in ("4111-card", "5500-card", "3400-card", "doc-plain", "doc2-plain"):
        assert plain not in texts, plain
    got = Session(plain_store).get(Purse, tenant="a", key="1")
    assert got is not None and got.cards == ["3400-card", "5500-card"]
    assert got.docs == {"d": b"doc-plain" * 40, "e": b"doc2-plain" * 40}


@pytest.mark.engines("moto")
@pytest.mark.parametrize("how", ["condition", "filter", "update"])
@pytest.mark.parametrize("path", ["cards[0]", "docs.d", "cards", "docs"])
def test_a_path_into_a_sealed_list_or_mapping_is_refused_naming_the_field(
        store: tuple[Store, Bucket], how: str, path: str) -> None:
    """A condition, a filter or an update by path on a sealed list member or mapping value
    (or the whole field, compared by value) is refused with a typed error naming the
    field, before anything is sent; the whole field set by an update is sealed."""
    s = Session(plain_store)
    s.save(Purse(tenant="a", key="1", cards=["4111-card"], docs={"d": b"x"}))
    s.commit()
    field = path.split("[")[0].split(".")[0]
    f = F(path)
    value = b"x" if field == "docs" and "." in path else "4111-card" if "[" in path else (
        ["4111-card"] if field == "cards" else {"d": b"x"})
    if how == "update" and path == field:  # (the whole field set: sealed as it is stored)
        value = ["9999-card"] if field == "cards" else {"d": b"9999-doc"}
        s.update(Purse, tenant="a", key="1").set(**{path: value})
        s.commit()
        assert "9999-" not in _raw_texts(store[0], plain_store)
        got = Session(plain_store).get(Purse, tenant="a", key="1")
        assert got is not None and getattr(got, field) == value
        return
    with pytest.raises(DynaormError) as err:
        if how == "condition":
            p = s.get(Purse, tenant="a", key="1")
            s.save(p, condition=f == value)
            s.commit()
        elif how == "filter":
            s.query(Purse, tenant="a", key="1").filter(f == value).all()
        else:
            s.update(Purse, tenant="a", key="1").set(**{path: value})
            s.commit()
    assert field in str(err.value), str(err.value)



class Card(BaseModel):
    """A nested model holding a sealed field (refused inside an entity's field: its rule
    works on whole fields; ``Encrypted[Card]`` seals it whole)."""

    pan: Encrypted[str]


@pytest.mark.engines("moto")
@pytest.mark.parametrize(("form", "value"), [
    ("list[Encrypted[str]] | None", ["opt-plain-1", "opt-plain-2"]),
    ("dict[str, Encrypted[str]] | None", {"k": "opt-plain-1"}),
    ("list[Encrypted[str] | None]", ["opt-plain-1", None]),
    ("dict[str, Encrypted[str] | None]", {"k": "opt-plain-1", "n": None}),
    ("set[Encrypted[str]] | None", {"opt-plain-1", "opt-plain-2"}),
    ("Encrypted[Card] | None", Card(pan="opt-plain-card")),
    ("list[Compressed[Encrypted[str]]] | None", ["opt-plain" * 40]),
    ("dict[str, Offloaded[Encrypted[str]] | None] | None", {"k": "opt-plain" * 40, "n": None}),
    ("Card | None", None), ("list[list[Encrypted[str]] | None] | None", None)])
def test_an_optional_arm_of_sealed_members_is_accepted_as_its_plain_form_is(
        store: tuple[Store, Bucket], form: str, value: Any) -> None:
    """A ``None`` arm is no level: each form has its plain form's verdict (without any
    ``| None``); accepted, its value and ``None`` are stored sealed (or a reference to a
    sealed object) or not at all, and read back; refused, the error names the same path."""
    verdicts = []
    for annotated in (form, form.replace(" | None", "")):
        n = next(_names)  # (a class of its own name and key on each run)
        try:
            exec(f"class OptionalArm{n}(Entity):\n    class Meta:\n        table = plain_store\n"
                 f"        pk = 'OA{n}#{{key}}'\n        sk = 'OA'\n    key: str\n"
                 f"    v: {annotated} = None\n", namespace := dict(globals()))
            verdicts.append(namespace[f"OptionalArm{n}"])
        except DynaormError as exc:
            verdicts.append(re.sub(r"OptionalArm\d+", "", str(exc)))
    cls, plain = verdicts
    assert isinstance(cls, type) is isinstance(plain, type) is (value is not None), verdicts
    if value is None:
        assert cls == plain, verdicts
        return
    s = Session(plain_store)
    for v in (value, None) if form.endswith("None") else (value,):
        s.save(cls(key="1", v=v), overwrite=True)
        s.commit()
        row = next(r for r in store[0].scan_raw(plain_store) if r["pk"]["S"].startswith("OA"))
        assert "opt-plain" not in repr([row, *map(store[1].body, store[1].uris())]), row
        assert v is None or header_of(row["v"]) or "dynaorm:offloaded" in row["v"]["M"], row
        got = Session(plain_store).get(cls, key="1")
        assert got is not None and got.v == v


class Tagged(Entity):
    """A set of sealed values (accepted: each member sealed)."""

    class Meta:
        table = plain_store
        pk = "TAGGED#{key}"
        sk = "TAGGED"

    key: str
    tags: set[Encrypted[str]] = set()


@pytest.mark.engines("moto")
def test_a_set_of_sealed_values_is_never_stored_in_plaintext_and_reads_back(
        store: tuple[Store, Bucket]) -> None:
    """Saved, a member added and saved again: no row holds a plaintext; the set reads."""
    tb, _ = store
    s = Session(plain_store)
    s.save(Tagged(key="1", tags={"tag-plain-1", "tag-plain-2"}))
    s.commit()
    o = s.get(Tagged, key="1")
    assert o is not None and o.tags == {"tag-plain-1", "tag-plain-2"}
    o.tags.add("tag-plain-3")
    s.save(o)
    s.commit()
    assert "tag-plain" not in _raw_texts(tb, plain_store)
    got = Session(plain_store).get(Tagged, key="1")
    assert got is not None and got.tags == {"tag-plain-1", "tag-plain-2", "tag-plain-3"}


@pytest.mark.engines("moto")
@pytest.mark.parametrize("op", ["contains cards", "contains tags", "begins cards[0]",
                                "in docs.d"])
def test_a_filter_on_sealed_members_is_refused_naming_the_field(
        store: tuple[Store, Bucket], op: str) -> None:
    """A filter comparing a sealed list, set or mapping member with a plaintext operand
    (it would match ciphertexts against it: never true, or telling) is refused with a
    typed error naming the field."""
    s = Session(plain_store)
    s.save(Purse(tenant="a", key="1", cards=["4111-card"], docs={"d": b"x"}))
    s.save(Tagged(key="1", tags={"tag-plain-1"}))
    s.commit()
    kind, path = op.split()
    f = F(path)
    cls, keys = (Tagged, {"key": "1"}) if path == "tags" else (
        Purse, {"tenant": "a", "key": "1"})
    condition = {"contains": lambda: f.contains("4111-card" if path == "cards" else "tag"),
                 "begins": lambda: f.begins_with("4111"),
                 "in": lambda: f.is_in(b"x")}[kind]()
    with pytest.raises(DynaormError) as err:
        s.query(cls, **keys).filter(condition).all()
    assert path.split("[")[0].split(".")[0] in str(err.value), str(err.value)


@pytest.mark.engines("moto")
@pytest.mark.parametrize("op", ["append", "prepend", "add", "discard"])
def test_an_update_of_sealed_members_is_refused_or_sealed_and_told_true(
        store: tuple[Store, Bucket], op: str) -> None:
    """Appending to a sealed list, adding to or discarding from a sealed set by update:
    refused with a typed error naming the field, or done (read back as asked) with no
    plaintext stored; never reported done and left undone."""
    tb, _ = store
    s = Session(plain_store)
    s.save(Purse(tenant="a", key="1", cards=["4111-card"]))
    s.save(Tagged(key="1", tags={"tag-plain-1", "tag-plain-2"}))
    s.commit()
    field = "cards" if op in ("append", "prepend") else "tags"
    value = ["9999-card"] if field == "cards" else {"tag-plain-1"} if op == "discard" else {
        "tag-plain-9"}
    cls, keys = (Purse, {"tenant": "a", "key": "1"}) if field == "cards" else (
        Tagged, {"key": "1"})
    try:
        getattr(s.update(cls, **keys), op)(**{field: value})
        s.commit()
    except DynaormError as err:
        assert field in str(err), str(err)
        return
    assert not re.search(r"9999-card|tag-plain", _raw_texts(tb, plain_store))
    got = Session(plain_store).get(cls, **keys)
    assert got is not None
    assert getattr(got, field) == {"append": ["4111-card", "9999-card"],
                                   "prepend": ["9999-card", "4111-card"],
                                   "add": {"tag-plain-1", "tag-plain-2", "tag-plain-9"},
                                   "discard": {"tag-plain-2"}}[op]


@pytest.mark.engines("moto")
@pytest.mark.parametrize("change", ["nothing", "docs", "cards", "tags", "reorder"])
def test_sealed_members_the_change_did_not_touch_stay_byte_for_byte(
        store: tuple[Store, Bucket], change: str) -> None:
    """A loaded object of sealed list, mapping and set members saved back: unchanged, its
    row stays byte for byte; one field changed, every other field's ciphertexts stay; a
    sealed list reordered reads back reordered, no plaintext stored."""
    tb, _ = store
    s = Session(plain_store)
    s.save(Purse(tenant="a", key="1", cards=["4111-card", "5500-card"],
                 docs={"d": b"x", "e": b"y"}))
    s.save(Tagged(key="1", tags={"tag-plain-1", "tag-plain-2"}))
    s.commit()
    rows = lambda: {r["pk"]["S"]: r for r in tb.scan_raw(plain_store)}  # noqa: E731
    before = rows()
    p, t = s.get(Purse, tenant="a", key="1"), s.get(Tagged, key="1")
    assert p is not None and t is not None
    if change == "docs":
        p.docs["d"] = b"z"
    elif change == "cards":
        p.cards[1] = "3400-card"
    elif change == "tags":
        t.tags.add("tag-plain-3")
    elif change == "reorder":
        p.cards.reverse()
    s.save(p)
    s.save(t)
    s.commit()
    after = rows()
    for pk, attr in (("PURSE#a#1", "cards"), ("PURSE#a#1", "docs"), ("TAGGED#1", "tags")):
        touched = change == attr or (change == "reorder" and attr == "cards")
        if not touched:
            assert after[pk][attr] == before[pk][attr], (pk, attr)
    if change == "nothing":
        assert after == before
    assert not re.search(r"\d{4}-card|tag-plain", repr(after))
    got = Session(plain_store).get(Purse, tenant="a", key="1")
    assert got is not None and got.cards == p.cards and got.docs == p.docs


# -- each member keeps its own attributes at every depth, as a property (issue 88) ----------
class Piece(BaseModel):
    sku: str = ""


class Bin(BaseModel):
    name: str = ""
    pieces: list[Piece] = []


members_table = Table("value-tree-members", pk="PK", sk="SK", type_attribute="_type")


class Cargo(Entity):
    """Lists of nested models at every depth: in a list, in a mapping's values, in a list
    member's model, and optional."""

    class Meta:
        table = members_table
        type_name = "Cargo"
        pk = "C#{cid}"
        sk = "C"

    cid: str
    grid: list[list[Piece]] = []
    by: dict[str, list[Piece]] = {}
    bins: list[Bin] = []
    opt: list[Piece] | None = None


_CARGO_KEY = {"PK": {"S": "C#1"}, "SK": {"S": "C"}}
#: what another writer stores beside a member's declared values (each member its own)
OWN = st.fixed_dictionaries({"serial": st.uuids().map(lambda u: {"S": u.hex[:8]})}, optional={
    "n": st.sampled_from([{"N": "7"}, {"N": "-1.5"}]),
    "tags": st.sets(st.sampled_from("abc"), min_size=1).map(lambda s: {"SS": sorted(s)}),
    "deep": st.just({"M": {"x": {"L": [{"NULL": True}, {"BOOL": False}]}}})})
#: every stored piece alike in its declared values: only identity tells them apart
PIECES = st.lists(OWN.map(lambda own: {"M": {**own, "sku": {"S": "p"}}}), max_size=3).map(
    lambda ms: {"L": ms})
STORED_CARGO = st.fixed_dictionaries({
    "grid": st.lists(PIECES, max_size=3).map(lambda ls: {"L": ls}),
    "by": st.dictionaries(st.sampled_from("abc"), PIECES, max_size=2).map(lambda m: {"M": m}),
    "bins": st.lists(st.tuples(OWN, PIECES).map(lambda t: {"M": {
        **t[0], "name": {"S": "b"}, "pieces": t[1]}}), max_size=2).map(lambda ls: {"L": ls}),
}, optional={"opt": PIECES, "other": st.just({"SS": ["x"]})})
EDITS = st.sampled_from(["delete", "move", "insert", "change", "reverse", "swap", "new list",
                         "drop list", "new key", "drop key", "new bin", "drop bin",
                         "opt none", "opt list"])


def _lists_of(o: Cargo) -> list[list[Piece]]:
    """Every list of pieces the object holds, in a fixed order."""
    return [*o.grid, *o.by.values(), *(b.pieces for b in o.bins),
            *([o.opt] if o.opt is not None else [])]


class _Owned:
    """The pure model: each member object's own stored form (what another writer stored for
    it beside its declared values), by identity; the item a save must leave."""

    def __init__(self, item: dict[str, Any]) -> None:
        self.item = item
        self.own: dict[int, dict[str, Any]] = {}
        self.alive: list[Any] = []  # (kept: an id is never reused while the run lasts)

    def read(self, o: Cargo, item: dict[str, Any]) -> None:
        """Each member of ``o`` owns the stored map at its place in ``item``."""
        self.item, self.own = item, {}
        stored = [*item["grid"]["L"], *(item["by"]["M"][k] for k in o.by),
                  *(b["M"]["pieces"] for b in item["bins"]["L"]),
                  *([item["opt"]] if o.opt is not None else [])]
        for objs, av in zip(_lists_of(o), stored, strict=True):
            self.own.update((id(p), m["M"]) for p, m in zip(objs, av["L"], strict=True))
        self.own.update((id(b), m["M"]) for b, m in zip(o.bins, item["bins"]["L"], strict=True))
        self.alive += [o, *(p for ps in _lists_of(o) for p in ps), *o.bins]

    def want(self, o: Cargo) -> dict[str, Any]:
        """The item the save of ``o`` must leave (no member placed twice)."""
        def piece(p: Piece) -> dict[str, Any]:
            return {"M": {**self.own.get(id(p), {}), "sku": {"S": p.sku}}}

        def pieces(ps: list[Piece]) -> dict[str, Any]:
            return {"L": [piece(p) for p in ps]}

        item = {**self.item, "grid": {"L": [pieces(ps) for ps in o.grid]},
                "by": {"M": {k: pieces(ps) for k, ps in o.by.items()}},
                "bins": {"L": [{"M": {**self.own.get(id(b), {}), "name": {"S": b.name},
                                      "pieces": pieces(b.pieces)}} for b in o.bins]}}
        item.pop("_rev", None)
        if o.opt is None:
            item.pop("opt", None)
        else:
            item["opt"] = pieces(o.opt)
        return item


def _edit(o: Cargo, edit: str, draw: Callable[[st.SearchStrategy[Any]], Any],
          fresh: Iterator[int]) -> None:
    """One user edit of ``o`` (skipped where it has nothing to edit)."""
    lists = _lists_of(o)
    full = [ps for ps in lists if ps]
    pick = lambda xs: xs[draw(st.integers(0, len(xs) - 1))]  # noqa: E731
    new = lambda: Piece(sku=f"n{next(fresh)}")  # noqa: E731  (never equal to a stored one)
    if edit in ("delete", "move", "change", "swap") and full:
        ps = pick(full)
        at = draw(st.integers(0, len(ps) - 1))
        if edit == "change":
            ps[at].sku = f"c{next(fresh)}"
        elif edit == "swap":
            other = draw(st.integers(0, len(ps) - 1))
            ps[at], ps[other] = ps[other], ps[at]
        elif edit == "move":
            to = pick(lists)
            to.insert(draw(st.integers(0, len(to))), ps.pop(at))
        else:
            del ps[at]
    elif edit == "insert" and lists:
        to = pick(lists)
        to.insert(draw(st.integers(0, len(to))), new())
    elif edit == "reverse" and lists:
        pick(lists).reverse()
        o.grid.reverse()
    elif edit == "new list":
        moved = [pick(full).pop(0)] if full and draw(st.booleans()) else [new()]
        o.grid.insert(draw(st.integers(0, len(o.grid))), moved)
    elif edit == "drop list" and o.grid:
        del o.grid[draw(st.integers(0, len(o.grid) - 1))]
    elif edit == "new key":
        o.by[f"k{next(fresh)}"] = [pick(full).pop(0)] if full else []
    elif edit == "drop key" and o.by:
        del o.by[pick(list(o.by))]
    elif edit == "new bin":
        o.bins.insert(draw(st.integers(0, len(o.bins))), Bin(
            name="new", pieces=[pick(full).pop(0)] if full else []))
    elif edit == "drop bin" and o.bins:
        del o.bins[draw(st.integers(0, len(o.bins) - 1))]
    elif edit == "opt none":
        if o.opt and o.grid:  # (its members moved out first)
            o.grid[0][:0] = o.opt
        o.opt = None
    elif edit == "opt list" and o.opt is None:
        o.opt = [pick(full).pop(0)] if full else []


@pytest.fixture
def cargo(backend: str | None, request: pytest.FixtureRequest) -> Iterator[TestBackend]:
    with use_tables(members_table, endpoint_url=backend, name_suffix=worker_suffix(),
                    wire=wire_of(request)) as tb:
        yield tb


def _raw_cargo() -> dict[str, Any]:
    found: dict[str, Any] = members_table.client.get_item(
        TableName=members_table.name, Key=_CARGO_KEY, ConsistentRead=True)["Item"]
    return found


@settings(max_examples=examples(EXAMPLES or 25), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(stored=STORED_CARGO, data=st.data())
def test_each_member_keeps_its_own_attributes_whatever_the_edits(
        cargo: TestBackend, stored: dict[str, Any], data: st.DataObject) -> None:
    """Another writer's item of lists of nested models at every depth (list of lists,
    mapping of lists, lists in list members' models, optional), each member alike in its
    declared values but for its own undeclared attributes; random rounds of random edits
    (delete, move anywhere, insert, change, reorder, swap equal members, new or dropped
    inner lists, keys and bins, optional set to ``None`` and back), each saved: the stored
    item is the pure model's, each member with exactly the attributes it was read with
    (identity decides, never value), every other attribute as stored; twice, the second
    round planned from what the first wrote, sometimes after a fresh load."""
    members_table.client.put_item(TableName=members_table.name, Item={
        **_CARGO_KEY, "_type": {"S": "Cargo"}, "cid": {"S": "1"}, **stored})
    fresh = itertools.count()
    s = cargo.session()
    o = s.get(Cargo, cid="1")
    assert o is not None
    model = _Owned({})
    model.read(o, _raw_cargo())
    for _ in range(data.draw(st.integers(1, 3), "rounds")):
        if data.draw(st.booleans(), "reload"):
            s = cargo.session()
            o = s.get(Cargo, cid="1")
            assert o is not None
            model.read(o, _raw_cargo())
        for edit in data.draw(st.lists(EDITS, min_size=1, max_size=4), "edits"):
            _edit(o, edit, data.draw, fresh)
        want = model.want(o)
        s.save(o)
        s.commit()
        got = _raw_cargo()
        got.pop("_rev", None)
        if got.get("opt") == {"NULL": True}:
            got.pop("opt")
        assert got == want
        model.read(o, _raw_cargo())
