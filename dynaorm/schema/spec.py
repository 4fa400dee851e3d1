"""Reading an entity's ``Meta`` into a frozen :class:`EntitySpec`, once, at class creation.

Every definition error (unknown template fields, a missing table, an index the table does
not declare, sharding without ``{shard}``) is raised here, when the class is defined.
The spec also holds the pure key arithmetic: rendering table and index keys, guard keys,
version-row keys and shard numbers from a mapping of field values.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import TypeAdapter

from dynaorm._types import Item, PlainKey
from dynaorm.caches import cache
from dynaorm.errors import DynaormError, KeyTemplateError
from dynaorm.schema.checks import (
    check_mapping,
    check_reserved,
    check_rules,
    key_attr_templates,
    overlap_policy,
    stored_names,
    unstored_fields,
)
from dynaorm.schema.lock import Lock, read_lock
from dynaorm.schema.rules import RULES, Declaration, Rules, build_rules
from dynaorm.schema.rules.encrypted import Encryption
from dynaorm.schema.rules.indexes import IndexKeys, Membership, declared_index
from dynaorm.schema.rules.receipts import own_row
from dynaorm.schema.rules.revision import Revision  # noqa: F401 (registers its rule)
from dynaorm.schema.rules.shards import Shards, check_shard_fields, shard_rules
from dynaorm.schema.rules.stamps import Stamping
from dynaorm.schema.rules.unique import Uniqueness, UniqueRule
from dynaorm.schema.rules.vectors import Vector, Vectors, vector_values
from dynaorm.schema.rules.versioned import (
    Versioning,
    parse_version_sk,
    version_sk,
)
from dynaorm.schema.table import TableSchema
from dynaorm.schema.templates import (
    SHARD_FIELD,
    KeyTemplate,
    field_template,
    literal_outranks,
    parse_keys,
)
from dynaorm.schema.unclaimed import check_rule_rows, claimant, refuse_claimed
from dynaorm.values.codec import Kind, decode_item
from dynaorm.values.keys import OWN_PREFIX, key_av, key_value, named
from dynaorm.values.tree import Node, check_hidden, compile_tree, field_kind, lists_in
from dynaorm.values.ttl import expired

if TYPE_CHECKING:
    from dynaorm.schema.rules.previous import Layout

# the rule modules imported above register their rules (every one builds for every
# entity); the previous-layout rule registers when the first entity declaring
# ``Meta.previous`` is built: its module is not loaded before

META_OPTIONS = ("table", "pk", "sk", "type_name", "unique", "versioned", "indexes", "shards",
                "history_index", "timestamps", "overlaps", "key_only", "previous", "lock")








#: per (entity class, field): a validator of the field's annotation (milliseconds to build)
_ADAPTERS: dict[tuple[type[Any], str], TypeAdapter[Any]] = cache("spec.adapters")


def annotation_adapter(cls: type[Any], name: str) -> TypeAdapter[Any]:
    """A validator of field ``name`` of ``cls``: its annotation, without the field's
    constraints but with its :class:`~dynaorm.Vector` (a vector's numbers are the 32-bit
    floats a read of the entity gives), cached per class and field."""
    key = (cls, name)
    if key not in _ADAPTERS:
        info = cls.model_fields[name]
        marker = next((m for m in info.metadata if isinstance(m, Vector)), None)
        annotation: Any = info.annotation if marker is None else Annotated[
            info.annotation, marker]
        _ADAPTERS[key] = TypeAdapter(annotation)
    return _ADAPTERS[key]


@dataclass(frozen=True)
class EntitySpec:
    """Everything dynaorm knows about one concrete entity class."""

    cls: type[Any]
    name: str
    type_name: str
    table: TableSchema
    pk: KeyTemplate
    sk: KeyTemplate | None
    indexes: tuple[IndexKeys, ...]
    #: ``Meta.shards``: the sharding rule of each sharded target ("primary", an index)
    shards: Mapping[str, Shards]
    field_names: frozenset[str]
    #: fields whose ``None`` must be stored (as NULL): leaving them out would reload the
    #: field's non-None default, or fail validation for a required field
    null_fields: frozenset[str]
    #: field name -> stored attribute name, for the fields stored under an alias
    renames: Mapping[str, str]
    #: ``Meta.overlaps``: "literal" (a literal key wins over another entity's template on
    #: a table without a type attribute) or "refuse"
    overlaps: str
    #: ``Meta.key_only``: fields stored only inside the table key (filled back on reads)
    key_only: frozenset[str]
    #: fields no write stores as their own attribute: ``key_only`` and ``exclude=True``
    unstored: frozenset[str]
    #: the entity's rules, one tuple per hook (:class:`~dynaorm.schema.rules.Rules`)
    rules: Rules
    #: field name -> its field-level :class:`~dynaorm.values.codec.Kind` (one given in the
    #: field's ``Annotated`` metadata): how its values are stored, whatever their class
    kinds: Mapping[str, Kind]
    #: field name -> its value tree (:mod:`dynaorm.values.tree`)
    trees: Mapping[str, Node]
    #: ``Meta.lock``: another writer's optimistic lock (:mod:`dynaorm.schema.lock`)
    lock: Lock | None

    # -- the rules' data, as the rules hold it (no copy: asked of them once) ----------
    @functools.cached_property
    def uniques(self) -> tuple[UniqueRule, ...]:
        """``Meta.unique``: the unique rule's rules, one per guarded field."""
        unique = self.rules.get(Uniqueness)
        return () if unique is None else unique.rules

    @functools.cached_property
    def versioned(self) -> bool:
        """``Meta.versioned``: whether the versioned rule keeps a latest copy and
        version rows."""
        return self.rules.get(Versioning) is not None

    @functools.cached_property
    def history_index(self) -> tuple[str, str] | None:
        """``Meta.history_index``: (LSI name, its sort-key attribute) holding version rows
        only, keyed ``<base>#v<n>`` so one entity's versions are contiguous."""
        versioning = self.rules.get(Versioning)
        return None if versioning is None else versioning.history_index

    @functools.cached_property
    def timestamps(self) -> tuple[str | None, str | None]:
        """``Meta.timestamps``: (created field or None, updated field or None)."""
        stamping = self.rules.get(Stamping)
        return (None, None) if stamping is None else stamping.fields

    @functools.cached_property
    def ttl_field(self) -> str | None:
        """The entity field stored as the table's TTL attribute, if any."""
        stamping = self.rules.get(Stamping)
        return None if stamping is None else stamping.ttl_field

    @functools.cached_property
    def previous(self) -> Layout | None:
        """``Meta.previous``: the layout its items had before a design change
        (migrations); the previous-layout rule's."""
        return getattr(self.rules.by_name.get("previous"), "before", None)

    def separators(self, name: str) -> frozenset[str]:
        """The characters the key grammar refuses in a value of field ``name``: ``#`` and
        the separator that follows it in any template it appears in (contract 23): the
        table key's, each index's, each unique guard's scope and the previous layout's."""
        before = self.previous
        found = [self.pk, self.sk, *(t for i in self.indexes for t in (i.pk, i.sk)),
                 *(r.scope for r in self.uniques),
                 *(() if before is None else (before.pk, before.sk))]
        return frozenset().union(*(t.separators(name) for t in found if t is not None))

    @functools.cached_property
    def encrypted(self) -> Mapping[str, str]:
        """``Encrypted`` fields: stored attribute name -> field name."""
        encryption = self.rules.get(Encryption)
        return {} if encryption is None else encryption.fields

    # -- stored names --------------------------------------------------------------
    def attr(self, name: str) -> str:
        """The stored attribute name of field ``name``."""
        return self.renames.get(name, name)

    def members_of(self, values: Mapping[str, Any]) -> dict[Any, Any] | None:
        """The members of ``values``' lists of nested models at any depth, by their place
        (``None``: none), as an object's state keeps them by identity, so each keeps what
        it was read with wherever it moves (:mod:`dynaorm.values.merge`)."""
        return {p: v for n, t in self.trees.items() if t.holds_lists
                for p, v in lists_in(t, values.get(n), (self.attr(n),))} or None

    @functools.cached_property
    def item_tree(self) -> Node:
        """A stored item's value tree: a model of the fields' trees by stored attribute
        name (what a save's merge walks: :mod:`dynaorm.values.merge`)."""
        return Node("model", children=[(f".{self.attr(n)}", t) for n, t in self.trees.items()])

    def dump_field(self, name: str, value: Any) -> Any:
        """``value`` validated as field ``name`` and dumped as a stored item holds it."""
        return (a := annotation_adapter(self.cls, name)).dump_python(a.validate_python(value))

    @functools.cached_property
    def table_key_attrs(self) -> tuple[str, ...]:
        """The table's key attributes: (pk,) or (pk, sk)."""
        table = self.table
        return (table.pk,) if table.sk is None else (table.pk, table.sk)

    def stored_key(self, item: Item) -> PlainKey:
        """The table key of a stored item (its key attributes, as rendered key values)."""
        return {a: key_value(item[a]) for a in self.table_key_attrs if a in item}

    @functools.cached_property
    def stored_fields(self) -> Mapping[str, str]:
        """Stored attribute name -> field name, for every field."""
        return {self.attr(n): n for n in self.field_names}

    @functools.cached_property
    def _fill_back(self) -> tuple[tuple[str, KeyTemplate], ...]:
        """Key attributes whose templates give fields back (items written by other tools,
        with or without a type attribute, may hold a field only in the key)."""
        return tuple((attr, t) for attr, t in key_attr_templates(  # (literals give nothing)
            self.table, self.pk, self.sk, self.indexes) if t.fields)

    @functools.cached_property
    def _plain_names(self) -> bool:
        """Every field stored under its name: the fast path (fields missing from the item
        are still filled back from its keys, see :meth:`fill_from_keys`)."""
        return not self.renames and not self._vectors

    @functools.cached_property
    def _vectors(self) -> Mapping[str, str]:
        """Stored attribute name -> field name of every :class:`~dynaorm.Vector` field
        (read straight to floats: :func:`~dynaorm.schema.rules.vectors.vector_values`)."""
        rule = self.rules.get(Vectors)
        return {} if rule is None else {a: n for a, (n, _) in rule.fields.items()}

    @functools.cached_property
    def plain_field_names(self) -> frozenset[str] | None:
        """:attr:`field_names` where :meth:`decode_fields` is ``fill_from_keys(item,
        decode_item(item, field_names))`` (every field stored under its name), else
        ``None`` (a loader may call ``decode_item`` itself: one call less per item; not
        for a versioned entity with a TTL field, whose version rows keep the TTL aside)."""
        return self.field_names if self._plain_names and not (
            self.rules.decoders or self._strict) else None

    @functools.cached_property
    def _strict(self) -> dict[str, TypeAdapter[Any]]:
        """Where the class's schema is strict anywhere (``Field(strict=True)``, a nested
        model's strict field, ``ConfigDict(strict=True)``), every field with a lax
        validator of its type: what it stores (an ISO date, a UUID's text) read back as
        it takes it, on every read path (else none)."""
        strict = "'strict': True" in repr(self.cls.__pydantic_core_schema__)
        return {n: annotation_adapter(self.cls, n) for n in self.cls.model_fields if strict}

    def decode_fields(self, item: Item, decoded: bool = False) -> dict[str, Any]:
        """The field values of a stored item, by field name (plain Python, to validate);
        ``decoded``: the item went through the rules' decoders already."""
        for decode in () if decoded else self.rules.decoders:  # (a plain entity has none)
            item = decode(item)
        if self._plain_names:
            data = decode_item(item, self.field_names)
        else:
            stored, vectors = self.stored_fields, self._vectors
            data = {stored[k]: v for k, v in decode_item(item, stored.keys() - vectors).items()}
            for attr, name in vectors.items():
                if attr in item:
                    data[name] = vector_values(item[attr])
        for name, lax in self._strict.items():
            if data.get(name) is not None:
                data[name] = lax.validate_python(data[name], strict=False)
        return self.fill_from_keys(item, data)

    @functools.cached_property
    def _key_fields(self) -> frozenset[str]:
        """Every field some key template of :attr:`_fill_back` holds."""
        return frozenset(f for _, t in self._fill_back for f in t.fields)

    def fill_from_keys(self, item: Item, data: dict[str, Any]) -> dict[str, Any]:
        """``data`` (decoded fields) with the fields it lacks parsed back from the item's
        key attributes, where a template holds them (a field stored only in its key)."""
        if self._key_fields <= data.keys():  # (the common case: every one is stored)
            return data
        for attr, template in self._fill_back:
            if all(f in data for f in template.fields):
                continue
            av = item.get(attr)
            text = None if av is None else key_value(av)
            if text is not None and self.versioned and attr == self.table.sk:
                base = parse_version_sk(text)  # a latest copy or a version row
                text = None if base is None else base[1]
            parsed = None if text is None else template.parse_key(text)
            for name, value in (parsed or {}).items():
                data.setdefault(name, value)
        return data

    # -- key arithmetic ------------------------------------------------------------
    def shard_of(self, values: Mapping[str, Any], target: str) -> int:
        """The shard value for ``target`` ("primary" or an index name); a plain ``N``
        gives a stable crc32 bucket in ``0..N-1``."""
        rule = self.shards[target]
        if target == "primary" and rule.by is not None:  # get() knows only the key fields
            values = {f: values[f] for f in self.lookup_fields if f in values}
        return rule.pick(values, self.lookup_fields, self.name, target)

    def _with_shard(self, values: Mapping[str, Any], target: str) -> Mapping[str, Any]:
        if target not in self.shards:
            return values
        return {**values, SHARD_FIELD: self.shard_of(values, target)}

    def primary_key(self, values: Mapping[str, Any], version: int | None = None) -> PlainKey:
        """The table key; for versioned entities the latest copy (or version ``version``)."""
        vals = self._with_shard(values, "primary") if self.shards else values
        key = {self.table.pk: self.pk.render(vals, self.name)}
        if self._may_render_own and key[self.table.pk].startswith(OWN_PREFIX):
            field = self.pk.fields[0]
            raise KeyTemplateError(
                f"{self.name}: field {field!r} value {values.get(field)!r} renders the key "
                f"{key[self.table.pk]!r}, reserved for dynaorm's own rows (receipts, "
                "Powertools records)", field=field)
        if self.sk is not None and self.table.sk is not None:
            sk = self.sk.render(vals, self.name)
            if self.versioned:
                sk = version_sk(sk, version)
            key[self.table.sk] = sk
        if self.table.type_attribute is None:
            refuse_claimed(self, key)  # (a key reads take for another's: never ours)
        return key

    def key_values(self, key: Mapping[str, Any]) -> dict[str, Any]:
        """The lookup fields a table key holds, as field values (validated through each
        field's type, as a read decodes them; the shard left out): the inverse of
        :meth:`primary_key`. Fields the key does not hold are left out."""
        item = {attr: key_av(text) for attr, text in key.items()}
        raw = self.fill_from_keys(item, {})
        out = {}
        for name, text in raw.items():
            if name == SHARD_FIELD or name not in self.cls.model_fields:
                continue
            try:
                out[name] = annotation_adapter(self.cls, name).validate_python(str(text))
            except ValueError:
                out[name] = text
        return out

    def index_keys(self, values: Mapping[str, Any]) -> dict[str, str]:
        """Key attributes of every index the item takes part in (sparse ones left off)."""
        out = {}
        for idx in self.indexes:
            if any(values.get(f) is None for f in idx.fields if f != SHARD_FIELD):
                continue
            vals = self._with_shard(values, idx.name)
            out[idx.pk_attr] = idx.pk.render(vals, self.name)
            if idx.sk is not None and idx.sk_attr is not None:
                out[idx.sk_attr] = idx.sk.render(vals, self.name)
        return out

    def derived_fields(self, attr: str) -> tuple[str, ...]:
        """The entity fields a derived key attribute is built from."""
        for idx in self.indexes:
            if attr == idx.pk_attr:
                return idx.pk.fields
            if attr == idx.sk_attr and idx.sk is not None:
                return idx.sk.fields
        return ()

    @functools.cached_property
    def lookup_fields(self) -> tuple[str, ...]:
        """Fields a caller passes to ``get``: those of the primary templates, minus shard
        (computed once: every write and lookup asks)."""
        return _identity(self.pk, self.sk)

    @functools.cached_property
    def has_rules(self) -> bool:
        """Whether the entity's rules add rows to its writes (unique guards, version rows,
        a registered rule's rows) or hold attributes of its row (:meth:`~dynaorm.schema.
        rules.Rule.holds`: an ``Offloaded`` field's reference): its writes then read or
        guard more than the row (a delete or an update by key reads it first, an overwrite
        reads it anew)."""
        return bool(self.rules.adders or self.rules.held)

    @functools.cached_property
    def unique_fields(self) -> frozenset[str]:
        """Every field a guard key is built from (unique fields and their scopes)."""
        return frozenset(f for rule in self.uniques for f in rule.fields)

    @functools.cached_property
    def index_attributes(self) -> frozenset[str]:
        """The secondary-index key attributes this entity writes (an LSI shares the pk)."""
        membership = self.rules.get(Membership)
        return frozenset() if membership is None else membership.attributes()

    def owns(self, item: Item | None) -> bool:
        """Whether a stored item is one of this entity's (by its discriminator, or by the
        shape of its table key on a table without one)."""
        if item is None:
            return False
        if self.table.ttl is not None and expired(item, self.table.ttl):
            return False  # its TTL has passed: DynamoDB will delete it; not a result
        if self.rules.keepers and not self.rules.keeps(item):
            return False  # a rule of the entity keeps it from the results
        if self.table.type_attribute is None:
            return self.fits(item)
        return named(item, self.table.type_attribute) == self.type_name

    def fits(self, item: Item) -> bool:
        """Whether the table key of ``item`` fits this entity's key templates, and no
        other entity's literal key claims it (:meth:`outranked`)."""
        return self.fits_layout(item, self.pk, self.sk) and not self.outranked(item)

    def outranked(self, item: Item) -> bool:
        """Whether another claim on ``item``'s key wins over this entity's templates: an
        entity whose literal key fits it (``Meta.overlaps``: the literal wins where a
        literal key and a template meet), a rule's row kind narrower than them (an audit
        row ``AUDIT#ORDER#{oid}`` within ``AUDIT#{kind}#{ref}``:
        :func:`~dynaorm.schema.unclaimed.ruled_over`), or dynaorm itself (a receipt, a
        Powertools record: :func:`~dynaorm.schema.rules.receipts.own_row`, never an
        entity's)."""
        return own_row(self.table, item) or claimant(self, item) is not None

    def literal_claims(self) -> tuple[tuple[EntitySpec, KeyTemplate, KeyTemplate | None], ...]:
        """Each layout ``(entity, pk, sk)`` of the table's other entities whose literal
        keys win over this one's templates, as the table is now: an entity's current key
        and, in its migration window, ``Meta.previous``'s (``USER#root`` before
        ``ADMIN#root``: its row not yet moved is its own, never a ``USER#{a}``'s)."""
        if not self._templated:
            return ()  # literal keys only: nothing outranks them
        # (not memoised: the table's entities may change; asked only where keys decide)
        return tuple((w, pk, sk) for e in self.table.entities.values()
                     if (w := e.__dynaorm_spec__).cls is not self.cls
                     for pk, sk in w.layouts if literal_outranks(pk, sk, self.pk, self.sk))

    @functools.cached_property
    def layouts(self) -> tuple[tuple[KeyTemplate, KeyTemplate | None], ...]:
        """The table key templates ``(pk, sk)`` the entity's rows are stored under: the
        current ones, then ``Meta.previous``'s (until migrated)."""
        before = self.previous
        return ((self.pk, self.sk), *(() if before is None else ((before.pk, before.sk),)))

    @functools.cached_property
    def _may_render_own(self) -> bool:
        """Whether the partition key template may render the key of one of dynaorm's own
        rows: a string key led by a field, or by a literal that begins ``dynaorm:``'s text
        (``"{id}"``, ``"{a}#{b}"``); a key led by any other literal never does (no cost)."""
        head = self.pk.segments[0]
        return self.pk.key_type == "S" and not self.pk.is_literal and (
            not isinstance(head, str) or OWN_PREFIX.startswith(head))

    @functools.cached_property
    def _templated(self) -> bool:
        """Whether a table key template of this entity has a field."""
        return not self.pk.is_literal or (self.sk is not None and not self.sk.is_literal)

    def fits_layout(self, item: Item, pk: KeyTemplate, sk: KeyTemplate | None) -> bool:
        """Whether the table key of ``item`` fits the templates ``pk``/``sk`` of one of
        the entity's :attr:`layouts` (a latest copy's sort key read under its prefix)."""
        return parse_keys(item, [(a, t, self.rules.sort_keys.latest * (a == self.table.sk))
                                 for a, t in ((self.table.pk, pk), (self.table.sk, sk))
                                 if a and t]) is not None


# -- building a spec from Meta -------------------------------------------------------------
def collect_meta(cls: type[Any]) -> dict[str, Any]:
    """Meta options, each from the nearest class in the MRO whose Meta sets it."""
    options: dict[str, Any] = {}
    # (and the options the registered rules read: :attr:`Rule.options`)
    known = (*META_OPTIONS, *(o for kind in RULES.values() for o in kind.options))
    for klass in cls.__mro__:
        meta = klass.__dict__.get("Meta")
        if meta is None:
            continue
        for name, value in vars(meta).items():
            if name.startswith("_"):
                continue
            if name not in known:
                raise DynaormError(f"{cls.__name__}.Meta: unknown option {name!r} "
                                   f"(known: {', '.join(known)})")
            options.setdefault(name, value)
    if getattr(cls, "__dynaorm_versioned__", False):  # a subclass of dynaorm.Versioned
        options.setdefault("versioned", True)
    return options














def _table_templates(meta: Mapping[str, Any], owner: str, table: TableSchema,
                     field_names: frozenset[str], sharded: bool
                     ) -> tuple[KeyTemplate, KeyTemplate | None]:
    """The table key templates ``(pk, sk)``: ``Meta.sk`` is required exactly when the
    table has a sort key; ``sharded``: ``Meta.shards`` shards the primary key."""
    pk = field_template(meta["pk"], "pk", owner, field_names, sharded, table.key_type(table.pk))
    sk_source = meta.get("sk")
    if table.sk is not None and sk_source is None:
        raise DynaormError(f"{owner}.Meta.sk is required: table {table.name!r} has a sort key")
    if table.sk is None and sk_source is not None:
        raise DynaormError(f"{owner}.Meta.sk given but table {table.name!r} has no sort key")
    sk = None if sk_source is None else field_template(sk_source, "sk", owner, field_names,
                                                  sharded, table.key_type(table.sk))
    return pk, sk




def _identity(pk: KeyTemplate, sk: KeyTemplate | None) -> tuple[str, ...]:
    """The fields of the table key templates, in order, without ``{shard}``: what
    ``get()`` is called with."""
    return tuple(dict.fromkeys(
        f for f in (*pk.fields, *(sk.fields if sk else ())) if f != SHARD_FIELD))






def _null_fields(cls: type[Any]) -> frozenset[str]:
    """The fields whose ``None`` must be stored as NULL: left out, they would reload as
    their non-None default, or fail validation when required."""
    return frozenset(
        name for name, info in cls.model_fields.items()
        if info.is_required() or info.default_factory is not None
        or info.default is not None)




def _refusing(meta: Mapping[str, Any], pk: KeyTemplate, sk: KeyTemplate | None,
              indexes: tuple[IndexKeys, ...]
              ) -> tuple[KeyTemplate, KeyTemplate | None, tuple[IndexKeys, ...]]:
    """The entity's key templates, each field refusing its separators in every template
    of the entity (contract 23): the table's, the indexes', the unique guards' scopes and
    the previous layout's (those two read here as text: their rules check them), so a
    write that renders only some keys (a sparse index) refuses what another would."""
    before = meta.get("previous")
    texts = [getattr(u, "scope", None) for u in meta.get("unique") or ()]
    texts += [getattr(before, "pk", None), getattr(before, "sk", None)]
    others = []
    for text in texts:
        try:
            others.append(KeyTemplate.parse(text) if isinstance(text, str) else None)
        except KeyTemplateError:
            continue  # (refused by the rule that owns it, with its own words)
    found = [pk, sk, *(t for i in indexes for t in (i.pk, i.sk)), *others]
    templates = [t for t in found if t is not None]
    refused = {name: frozenset().union(*(t.separators(name) for t in templates))
               for t in templates for name in t.fields}
    return pk.refusing(refused), None if sk is None else sk.refusing(refused), tuple(
        dataclasses.replace(i, pk=i.pk.refusing(refused),
                            sk=None if i.sk is None else i.sk.refusing(refused))
        for i in indexes)


def _check_primary_shard(owner: str, shards: Mapping[str, Shards], pk: KeyTemplate,
                         sk: KeyTemplate | None) -> None:
    """A table sharded on its primary key names ``{shard}`` in its pk or sk template."""
    if "primary" in shards and SHARD_FIELD not in (*pk.fields, *(sk.fields if sk else ())):
        raise DynaormError(f"{owner}.Meta.shards['primary']: pk or sk template needs {{shard}}")


def build_spec(cls: type[Any], field_names: frozenset[str]) -> EntitySpec | None:
    """Build the spec of ``cls``; ``None`` for an abstract entity (no ``pk``). The keys and
    stored names are read here; each rule of :data:`~dynaorm.schema.rules.RULES` reads its
    own ``Meta`` options (:meth:`~dynaorm.schema.rules.Rule.build`)."""
    meta = collect_meta(cls)
    owner = cls.__name__
    if meta.get("pk") is None:
        return None
    table = meta.get("table")
    if not isinstance(table, TableSchema):
        raise DynaormError(f"{owner}.Meta.table must be a dynaorm Table, got {table!r}")
    shards = shard_rules(meta, owner, table)
    pk, sk = _table_templates(meta, owner, table, field_names, "primary" in shards)
    indexes = tuple(declared_index(owner, table, field_names, name, templates, name in shards,
                                   pk, sk)
                    for name, templates in dict(meta.get("indexes") or {}).items())
    pk, sk, indexes = _refusing(meta, pk, sk, indexes)
    _check_primary_shard(owner, shards, pk, sk)
    renames = stored_names(cls)
    check_mapping(owner, table, field_names, renames, pk, sk, list(indexes), cls)
    type_name = str(meta.get("type_name") or owner)
    if meta.get("previous") is not None:
        import dynaorm.schema.rules.previous  # noqa: F401 (registers its rule)
    root = compile_tree(cls, {})
    check_hidden(owner, root)
    trees = {step[1:]: node for step, node in root.children}
    rules = build_rules(Declaration(cls, owner, meta, table, field_names, renames, pk, sk,
                                    type_name, indexes, shards, trees=trees))
    check_reserved(owner, table, renames, field_names, rules)
    uniques = getattr(rules.get(Uniqueness), "rules", ())
    key_only, unstored = unstored_fields(cls, meta.get("key_only"), pk, sk, list(indexes),
                                         {f for rule in uniques for f in rule.fields})
    check_shard_fields(owner, shards, field_names, _identity(pk, sk))
    spec = EntitySpec(
        cls=cls, name=owner, type_name=type_name, table=table, pk=pk, sk=sk,
        overlaps=overlap_policy(owner, meta.get("overlaps")), key_only=key_only,
        unstored=unstored, indexes=indexes, shards=shards, field_names=field_names,
        renames=renames, null_fields=_null_fields(cls), rules=rules,
        trees=trees, kinds={**getattr(rules.get(Membership), "kinds", {}), **{
            name: kind for name, node in trees.items() if (kind := field_kind(node))}},
        lock=read_lock(cls, meta, {*_identity(pk, sk), *(f for i in indexes for f in i.fields),
                                   *(f for rule in uniques for f in rule.fields)}),
    )
    check_rules(cls, table, spec.layouts, uniques=bool(uniques), versioned=spec.versioned,
                sharded=bool(shards), ttl_field=spec.ttl_field, timestamps=spec.timestamps,
                overlaps=spec.overlaps)
    check_rule_rows(spec)
    cls.__dynaorm_spec__ = spec  # (before the table holds it: each class it holds has its own)
    table.register(cls, spec.type_name, rules.before.type_name or None)
    return spec


