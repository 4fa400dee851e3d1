"""The interaction matrix's declarations (tests/system/test_rule_matrix.py).

:data:`DECLARED` says, for every entity rule of :data:`dynaorm.schema.rules.RULES` that
dynaorm defines and for the user's rule the matrix runs (:data:`USER_RULES`, registered
through ``dynaorm.register_rule`` by ``tests/support/user_rules.py``), how an entity
declares it: the ``Meta`` options, the fields and the table options it needs (two rules
marking one field mark it both: ``Encrypted`` and ``Compressed`` on ``secret``).
:func:`combinations` gives every rule alone and every pair; :func:`build` makes the entity
classes of one combination on a table of their own (with, for ``previous``, the class of
the old layout on a second ``Table`` object naming the same table). :class:`Matrix` holds
them and knows what the combination's rules imply of the stored rows
(:meth:`Matrix.assert_rows`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import importlib
import itertools
import json
import pkgutil
import typing
import zlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Annotated, Any

import dynaorm.schema.rules as rules_package
from dynaorm import (
    GSI,
    Client,
    Compressed,
    DynaormError,
    Encrypted,
    Entity,
    Offloaded,
    Previous,
    StaticKeyring,
    Table,
    Vector,
    VectorIndex,
)
from dynaorm._types import Item
from dynaorm.schema.entity import spec_of
from dynaorm.schema.rules import RULES, SURFACES, Rule
from dynaorm.schema.rules.encrypted import open_value
from dynaorm.schema.rules.offloaded import references
from dynaorm.schema.rules.vectors import float32, vector_values
from dynaorm.schema.rules.versioned import VERSION_KEYS, VERSION_TTL
from dynaorm.values.codec import binary_from_json, decode_value
from tests.support import user_rules
from tests.support.user_rules import REVERSED

__all__ = ["DECLARED", "KEYRING", "PAST", "REFUSED", "USER_RULES", "Declared", "Matrix",
           "answers_missing", "build", "combinations", "decompressed", "dynaorm_rules",
           "key_of", "label", "matrix_rules", "opens", "point_old", "vector_of", "with_fields"]

KEY = b"m" * 32
#: the keyring of every matrix table (``encrypted``)
KEYRING = StaticKeyring(KEY, mac_key=b"u" * 32)  # (unique encrypted fields: a MAC key)
#: the time every TTL of the matrix is set to (far ahead: nothing expires in a test)
EXPIRES = datetime(2100, 1, 1, tzinfo=UTC)
#: a TTL that has passed (an item DynamoDB has not deleted yet: every read skips it)
PAST = datetime(2000, 1, 1, tzinfo=UTC)


@dataclass(frozen=True)
class Declared:
    """How the matrix declares one rule on an entity: ``Meta`` options, fields
    (name -> (annotation, default; ``...``: required)), ``Table`` options, and what the
    partition key template gains (``{shard}``). ``{P}`` in a template is the
    combination's key prefix."""

    meta: Mapping[str, Any] = field(default_factory=dict)
    fields: Mapping[str, tuple[Any, Any]] = field(default_factory=dict)
    table: Mapping[str, Any] = field(default_factory=dict)
    pk: str = ""


#: every field of a matrix entity, before its rules change one: name -> (annotation, default)
BASE_FIELDS: dict[str, tuple[Any, Any]] = {
    "id": (str, ...), "note": (str, ""), "code": (str, ...), "secret": (str, ""),
    "zone": (str, "z1"), "n": (int, 0)}

DECLARED: dict[str, Declared] = {
    "revision": Declared(table={"revision_attribute": "_rev"}),
    "stamps": Declared(meta={"timestamps": ("created", "updated")},
                       fields={"expires": (datetime | None, None)}, table={"ttl": "expires"}),
    "shards": Declared(meta={"shards": {"primary": 2}}, pk="#{shard}"),
    "indexes": Declared(
        meta={"indexes": {"gsi1": ("ZONE#{zone}", "{P}#{id}")}},
        table={"indexes": (GSI("gsi1", pk="gsi1pk", sk="gsi1sk"),
                           GSI("by_zone", pk=("zone",), sk=("n",))),
               "key_types": {"n": "N"}}),
    "encrypted": Declared(fields={"secret": (Encrypted[str], ""), "code": (Encrypted[str], ...)},
                          table={"keyring": KEYRING}),
    "unique": Declared(meta={"unique": ("code",)}),
    "versioned": Declared(meta={"versioned": True}, fields={"version": (int, 0)}),
    # (the vector index's search schema: a partition and a filter of the plain fields)
    "vectors": Declared(
        fields={"vec": (Annotated[list[float], Vector(3)], ...)},
        table={"vector_indexes": (VectorIndex("by_vec", attribute="vec", dimensions=3,
                                              partition="zone", filters=("n",)),),
               "key_types": {"n": "N"}}),
    # (from 9 bytes on: "secret-a" is stored as it is, "secret-a2" compressed; on the
    # encrypted field of ``encrypted``: compressed, then sealed)
    "compressed": Declared(fields={"secret": (Annotated[str, Compressed(min_size=9)], "")}),
    # (above 8 bytes: "secret-a" stays in its row, "secret-a2" goes to S3; a ciphertext or
    # a compressed value always does; the bucket is the cell's: see tests/support/offload.py)
    "offloaded": Declared(fields={"secret": (Offloaded[str], "")},
                          table={"offload": "s3://placeholder/m/", "offload_threshold": 8}),
    # a user's rule (tests/support/user_rules.py: the text stored reversed)
    "reversed": Declared(fields={"motto": (Annotated[str, REVERSED], "")}),
    # (a class of that old layout writes the old items: see build)
    "previous": Declared(meta={"previous": Previous(
        pk="OLD{P}#{id}", type_name="OLD{P}", stored_names={"note": "memo", "secret": "sec"})}),
}

#: the pairs the model refuses when the class is defined, and the documented refusal
REFUSED = {frozenset({"shards", "previous"}): "a sharded entity cannot declare a previous layout"}
#: (``encrypted`` with ``vectors`` is no refused pair: the matrix's encrypted fields are not
#: its vector; an ``Encrypted`` vector field is refused as documented by its own test)


def dynaorm_rules() -> dict[str, type[Rule]]:
    """Every rule dynaorm registers: each module of :mod:`dynaorm.schema.rules` imported
    first (the previous-layout rule loads on first use), then the registry's rules that
    dynaorm defines (a rule an application or example registers is its own)."""
    for module in pkgutil.iter_modules(rules_package.__path__):
        importlib.import_module(f"{rules_package.__name__}.{module.name}")
    return {name: cls for name, cls in RULES.items()
            if cls.__module__.startswith(rules_package.__name__ + ".")}


#: the rules a user registers that the matrix runs (tests/support/user_rules.py)
USER_RULES = ("reversed",)


def matrix_rules() -> dict[str, type[Rule]]:
    """Every rule the matrix runs: dynaorm's (:func:`dynaorm_rules`) and a user's,
    registered through ``dynaorm.register_rule`` (:data:`USER_RULES`)."""
    return {**dynaorm_rules(), **{name: RULES[name] for name in USER_RULES
                                  if RULES[name].__module__ == user_rules.__name__}}


def combinations() -> list[tuple[str, ...]]:
    """Every rule alone and every pair, in registry order."""
    names = sorted(matrix_rules(), key=lambda n: RULES[n].order)
    return [(n,) for n in names] + list(itertools.combinations(names, 2))


def label(combo: tuple[str, ...]) -> str:
    return "+".join(combo)


# -- the classes of one combination ----------------------------------------------------
def _table(combo: tuple[str, ...], name: str) -> Table:
    options: dict[str, Any] = {"revision_attribute": None}
    for rule in combo:
        options.update(DECLARED[rule].table)
    return Table(name, **options)


def _prefixed(value: Any, prefix: str) -> Any:
    """A declared ``Meta`` value with ``{P}`` replaced by the combination's key prefix."""
    if isinstance(value, str):
        return value.replace("{P}", prefix)
    if isinstance(value, Previous):
        return dataclasses.replace(value, pk=_prefixed(value.pk, prefix),
                                   type_name=_prefixed(value.type_name, prefix))
    if isinstance(value, dict):
        return {k: _prefixed(v, prefix) for k, v in value.items()}
    if isinstance(value, tuple):
        return tuple(_prefixed(v, prefix) for v in value)
    return value


def _entity(name: str, table: Table, combo: tuple[str, ...], prefix: str,
            old: Previous | None = None, **changed: tuple[Any, Any]) -> type[Entity]:
    """The entity class of ``combo`` (``old``: the class of that previous layout, which
    wrote the items stored the old way: its key, type name and stored names; ``changed``:
    fields declared otherwise)."""
    fields = dict(BASE_FIELDS)
    meta: dict[str, Any] = {"table": table, "pk": f"{prefix}#{{id}}", "sk": "E"}
    for rule in combo:
        declared = DECLARED[rule]
        fields.update({n: _merged(fields.get(n), f) for n, f in declared.fields.items()})
        meta["pk"] += declared.pk
        meta.update(declared.meta)
    fields.update(changed)
    meta = {k: _prefixed(v, prefix) for k, v in meta.items()}
    if old is not None:
        meta.update(pk=old.pk, type_name=old.type_name)
        fields = {old.stored_names.get(n, n): f for n, f in fields.items()}
    annotations = {n: a for n, (a, _) in fields.items()}
    namespace: dict[str, Any] = {n: d for n, (_, d) in fields.items() if d is not ...}
    namespace.update(__annotations__=annotations, __module__=__name__,
                     Meta=type("Meta", (), {**meta, "__qualname__": f"{name}.Meta"}),
                     __qualname__=name)
    return type(name, (Entity,), namespace)


def _merged(old: tuple[Any, Any] | None, new: tuple[Any, Any]) -> tuple[Any, Any]:
    """Field ``new`` declared by a rule, with the markers another rule of the combination
    put on the same field (``Encrypted`` and ``Compressed`` on ``secret``)."""
    markers = (*getattr(old and old[0], "__metadata__", ()), *getattr(new[0], "__metadata__", ()))
    if old is None or not markers:
        return new
    return Annotated[(typing.get_args(new[0])[0], *markers)], new[1]  # type: ignore[return-value]


@dataclass
class Matrix:
    """One combination's classes, tables and expectations."""

    combo: tuple[str, ...]
    table: Table
    cls: type[Entity]
    prefix: str
    old_table: Table | None = None
    old_cls: type[Entity] | None = None
    #: the S3 bucket of ``offloaded`` (set by the cell that runs it)
    bucket: Any = None

    def has(self, rule: str) -> bool:
        return rule in self.combo

    @property
    def name(self) -> str:
        return label(self.combo)

    def variant(self, **changed: tuple[Any, Any]) -> type[Entity]:
        """The combination's class with ``changed`` fields (name -> (annotation, default)),
        on its table under a key prefix of its own (for a class the model refuses)."""
        return _entity("V" + self.cls.__name__, self.table, self.combo, "V" + self.prefix,
                       **changed)

    # -- objects ---------------------------------------------------------------------
    def new(self, ident: str, **values: Any) -> Entity:
        """A new object of the combination's class (its TTL set where it has one)."""
        data: dict[str, Any] = {"id": ident, "code": f"code-{ident}",
                                "secret": f"secret-{ident}", "note": "first", **values}
        return self.cls(**self._filled(ident, data))

    def old(self, ident: str, **values: Any) -> Entity:
        """A new object of the previous layout's class."""
        assert self.old_cls is not None
        renamed = self.cls.Meta.previous.stored_names  # type: ignore[attr-defined]
        data: dict[str, Any] = {"id": ident, "code": f"code-{ident}",
                                renamed["secret"]: f"secret-{ident}", renamed["note"]: "old",
                                **values}
        return self.old_cls(**self._filled(ident, data))

    def _filled(self, ident: str, data: dict[str, Any]) -> dict[str, Any]:
        """``data`` with the values its rules ask that it leaves out: a TTL, a vector, a
        reversed key's field."""
        if self.has("stamps"):
            data.setdefault("expires", EXPIRES)
        if self.has("vectors"):
            data.setdefault("vec", vector_of(ident))
        if self.has("reversed"):
            data.setdefault("motto", f"motto-{ident}")
        return data

    def key(self, ident: str, version: int | None = None) -> tuple[str, str]:
        """The table key of entity ``ident`` (its latest copy, or version ``version``)."""
        spec = spec_of(self.cls)
        key = spec.primary_key({"id": ident}, version)
        return key["pk"], key["sk"]

    def guard_pk(self, code: str) -> str:
        spec = spec_of(self.cls)
        text = spec.uniques[0].guard_key({"code": code}, spec.name)
        assert text is not None
        return text

    # -- what the rules imply of the stored rows --------------------------------------
    def row_attributes(self, version_row: bool = False) -> set[str]:
        """The attributes of the entity's row (latest copy), or of a version row."""
        attrs = {"pk", "sk", "_type", "id", "note", "code", "secret", "zone", "n"}
        if self.has("stamps"):
            attrs |= {"created", "updated"} | ({VERSION_TTL} if version_row else {"expires"})
        if self.has("versioned"):
            attrs.add("version")
        if self.has("vectors"):
            attrs.add("vec")
        if self.has("reversed"):
            attrs.add("motto")
        if version_row:  # native index fields and vectors kept aside, never indexed
            aside = ({"zone", "n"} if self.has("indexes") else set()) | (
                {"vec"} if self.has("vectors") else set())
            return (attrs - aside) | ({VERSION_KEYS} if aside else set())
        if self.has("indexes"):
            attrs |= {"gsi1pk", "gsi1sk"}
        if self.has("revision"):
            attrs.add("_rev")
        return attrs

    def guard_attributes(self) -> set[str]:
        attrs = {"pk", "sk", "_type", "owner_pk", "owner_sk", "owner_type", "unique_field"}
        return attrs | ({"expires"} if self.has("stamps") else set())

    def assert_rows(self, raw: list[Item], live: Mapping[str, Entity],
                    history: Mapping[str, list[dict[str, Any]]] | None = None,
                    extra: Mapping[tuple[str, str], set[str]] | None = None,
                    expired: Mapping[str, Entity] | None = None,
                    claimed: frozenset[str] = frozenset()) -> None:
        """The stored items are exactly what the rules imply for the ``live`` entities
        (id -> object as stored), those whose TTL has passed (``expired``: still stored,
        their guards held until another owner claims the value: ``claimed``) and their
        version rows
        (``history``: id -> each version's field values, 1..n; versioned only): rows,
        version rows and guards, each with exactly its attributes (``extra``: attributes
        a key carries besides, e.g. a backfill's marker), guards naming their owners,
        ciphertexts that open only in their own row."""
        rows = {**(expired or {}), **live}
        raw = self.unplaced(raw)
        by_key = {(key_of(i)): i for i in raw}
        want: dict[tuple[str, str], str] = {self.key(ident): "row" for ident in rows}
        holders: dict[str, str] = {}  # guard pk -> its owner's id (a live owner wins)
        for ident, obj in rows.items() if self.has("unique") else ():
            if ident not in claimed:
                holders[self.guard_pk(obj.code)] = ident  # type: ignore[attr-defined]
        want.update({(g, g): "guard" for g in holders})
        for ident, versions in (history or {}).items():
            for n in range(1, len(versions) + 1):
                want[self.key(ident, n)] = "version"
        assert sorted(by_key) == sorted(want), (self.name, sorted(by_key), sorted(want))
        for key, role in want.items():
            item = by_key[key]
            more = (extra or {}).get(key, set())
            if role == "guard":
                self._assert_guard(item, rows[holders[key[0]]], more)
                continue
            attrs = self.row_attributes(role == "version") | more
            assert set(item) == attrs, (self.name, key, sorted(item), sorted(attrs))
            ident = str(decode_value(item["id"]))
            values = (history or {}).get(ident, [{}])[int(decode_value(item["version"])) - 1] \
                if role == "version" else rows[ident].__dict__
            self._assert_fields(item, values)
        self.assert_sealed(raw)

    def unplaced(self, raw: list[Item]) -> list[Item]:
        """``raw`` with each reference to an offloaded value replaced by the value its
        object holds (read from the bucket behind dynaorm's back), after checking that
        the bucket holds exactly the objects the rows reference (no orphan, no dangling
        reference) and that the values above the threshold, and only those, are there."""
        if not self.has("offloaded"):
            return raw
        refs = {r.uri: r for item in raw for r in references(item).values()}
        assert self.bucket.uris() == set(refs), (self.name, sorted(self.bucket.uris()),
                                                 sorted(refs))
        out = []
        for item in raw:
            found = dict(item)
            for attr, ref in references(item).items():
                body = self.bucket.body(ref.uri)
                found[attr] = {"S": body.decode()} if ref.tag == "S" else {"B": body} if (
                    ref.tag == "B") else binary_from_json(json.loads(body))
            if "secret" in found and not self.has("encrypted") and not self.has("compressed"):
                inline = "secret" not in references(item)
                assert inline == (len(found["secret"].get("S", "").encode()) <= 8), (
                    self.name, item["secret"])
            out.append(found)
        return out

    def _assert_guard(self, item: Item, owner: Entity, more: set[str]) -> None:
        assert set(item) == self.guard_attributes() | more, (self.name, sorted(item))
        assert (item["owner_pk"]["S"], item["owner_sk"]["S"]) == self.key(
            owner.id)  # type: ignore[attr-defined]
        assert item["_type"] == {"S": "dynaorm:unique"} and item["pk"] == item["sk"]
        if self.has("stamps"):  # its owner's TTL: expires with it
            assert item["expires"] == {"N": str(int(owner.expires.timestamp()))}  # type: ignore[attr-defined]
        if self.has("encrypted"):  # a MAC, never the value
            assert owner.code not in item["pk"]["S"]  # type: ignore[attr-defined]

    def _assert_fields(self, item: Item, values: Mapping[str, Any]) -> None:
        """The stored fields of a row hold ``values`` (encrypted ones opened)."""
        for name in ("id", "note", "code", "secret", "zone", "n", "version", "vec", "motto"):
            if name not in values:
                continue
            av = item.get(name) or item.get(VERSION_KEYS, {}).get("M", {}).get(name)
            assert av is not None, (self.name, name, item)
            if self.has("encrypted") and name in ("code", "secret"):
                av = opens(self.table, item, name)
            if self.has("compressed") and name == "secret":
                av = decompressed(av, values[name])
            if name == "motto":  # (``reversed``: stored reversed)
                av = {"S": av["S"][::-1]}
            value = float32(vector_values(av) or ()) if name == "vec" else decode_value(av)
            assert value == values[name], (self.name, name, value, values[name])

    def assert_sealed(self, raw: list[Item]) -> None:
        """Every ciphertext of the table opens in its own row, and in no other row."""
        if not self.has("encrypted"):
            return
        rows = [i for i in raw if "secret" in i or "code" in i]
        for item in rows:
            for attr in ("code", "secret"):
                if attr not in item:
                    continue
                assert set(item[attr]) == {"B"}, (self.name, attr, item[attr])
                opens(self.table, item, attr)
                for other in rows:
                    if key_of(other) != key_of(item):
                        try:
                            opens(self.table, {**item, "pk": other["pk"], "sk": other["sk"]},
                                  attr)
                        except DynaormError:
                            continue
                        raise AssertionError(f"{self.name}: {attr} of {key_of(item)} opens "
                                             f"as {key_of(other)}'s")


def opens(table: Table, item: Item, attr: str) -> Any:
    """The plaintext attribute value of ciphertext ``attr`` of ``item``, bound to the
    item's own key (``DecryptionError`` otherwise)."""
    return open_value(KEYRING, item[attr], table.name, {"pk": item["pk"], "sk": item["sk"]},
                      attr, attr)


def decompressed(av: Any, value: str) -> Any:
    """A ``Compressed(min_size=9)`` string's stored value read back: binary (zlib of its
    DynamoDB JSON) exactly when the text is 9 bytes or more, else the text itself."""
    assert ("B" in av) == (len(value.encode()) >= 9), (av, value)
    return json.loads(zlib.decompress(bytes(av["B"]))) if "B" in av else av


def vector_of(ident: str) -> list[float]:
    """The vector of entity ``ident``: numbers a 32-bit float holds exactly (so a stored
    vector reads back equal), one of eight directions by its first letter."""
    return [1.0, (ord(ident[0]) % 8) / 4, 0.5]


def key_of(item: Item) -> tuple[str, str]:
    return str(decode_value(item["pk"])), str(decode_value(item["sk"]))


@functools.cache
def build(combo: tuple[str, ...]) -> Matrix:
    """The classes of ``combo`` (refused pairs raise as their class is defined)."""
    name = "M" + "".join(part.capitalize() for part in combo)
    prefix = "_".join(combo).upper()
    table = _table(combo, "matrix-" + ".".join(combo))
    cls = _entity(name, table, combo, prefix)
    if "previous" not in combo:
        return Matrix(combo, table, cls, prefix)
    previous = cls.Meta.previous  # type: ignore[attr-defined]  # (its prefix filled in)
    old_table = _table(combo, table.name)
    old = _entity(f"Old{name}", old_table, tuple(r for r in combo if r != "previous"),
                  f"OLD{prefix}", previous)
    return Matrix(combo, table, cls, prefix, old_table, old)


def with_fields(m: Matrix, **fields: tuple[Any, Any]) -> Matrix:
    """``m``'s combination with more ``fields`` (name -> (annotation, default)), on its
    tables under classes, type names and key prefixes of their own (the previous layout's
    class too)."""
    name, prefix = "F" + m.cls.__name__, "F" + m.prefix
    cls = _entity(name, m.table, m.combo, prefix, **fields)
    if m.old_table is None:
        return Matrix(m.combo, m.table, cls, prefix)
    previous = cls.Meta.previous  # type: ignore[attr-defined]  # (its prefix filled in)
    old = _entity(f"Old{name}", m.old_table, tuple(r for r in m.combo if r != "previous"),
                  f"OLD{prefix}", previous, **fields)
    return Matrix(m.combo, m.table, cls, prefix, m.old_table, old)


@contextlib.contextmanager
def point_old(m: Matrix, wire: str | None) -> Iterator[None]:
    """The old layout's table pointed where the current one is, on a client of its own
    (the previous release ran in another process), put back afterwards."""
    assert m.old_table is not None
    saved = (m.old_table.name, m.old_table.binding())
    m.old_table.name = m.table.name
    m.old_table.restore((None, {}, Client(m.table.endpoint_url, wire=wire or "dynaorm")))
    try:
        yield
    finally:
        m.old_table.name = saved[0]
        m.old_table.restore(saved[1])


def answers_missing() -> dict[str, list[str]]:
    """Rule name -> the surfaces of :data:`SURFACES` its ``answers`` leave out."""
    return {name: [s for s in SURFACES if not cls.answers.get(s)]
            for name, cls in matrix_rules().items()}
