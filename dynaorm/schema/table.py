"""What a table is: its name, keys, indexes (secondary and vector), type attribute, TTL and
stream, and the entities mapped onto it (pure: a description; :class:`dynaorm.Table` binds
one to a client)."""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from dynaorm.caches import forget
from dynaorm.errors import DynaormError
from dynaorm.schema.places import (
    _NAME,
    OFFLOAD_THRESHOLD,
    checked_key_scope,
    checked_offload,
)
from dynaorm.schema.settings import Pair, TableSettings, check_index, create_params, settings_of
from dynaorm.values.keys import OWN_PREFIX

if TYPE_CHECKING:
    from dynaorm.schema.rows import RowKind

Projection = str | Sequence[str]
_STREAM_VIEWS = frozenset({"NEW_AND_OLD_IMAGES", "NEW_IMAGE", "OLD_IMAGE", "KEYS_ONLY"})
#: the distance functions of a vector index (DynamoDB's ``VectorDistanceFunction``)
DISTANCES = ("COSINE", "EUCLIDEAN", "DOT_PRODUCT")
#: the most dimensions a vector may have (``SearchVector`` holds at most 4,096 numbers)
MAX_DIMENSIONS = 4096



def check_name(kind: str, name: object) -> None:
    """DynamoDB's rule for table and index names (moto is laxer: check it here)."""
    if not isinstance(name, str) or not _NAME.match(name):
        raise DynaormError(f"invalid {kind} name {name!r}: DynamoDB needs 3 to 255 characters "
                           "from a-z, A-Z, 0-9, '_', '-' and '.'")


def _projection(projection: Projection, type_attribute: Sequence[str] = ()) -> dict[str, Any]:
    if isinstance(projection, str):
        kind = projection.upper()
        if kind not in ("ALL", "KEYS_ONLY"):
            raise DynaormError(f"projection must be 'ALL', 'KEYS_ONLY' or a list of "
                               f"attribute names, got {projection!r}")
        return {"ProjectionType": kind}
    # the type attribute rides along, so reads can select types on the server
    extra = [a for a in type_attribute if a not in projection]
    return {"ProjectionType": "INCLUDE", "NonKeyAttributes": [*projection, *extra]}


@dataclass(frozen=True)
class GSI:
    """A global secondary index: its own partition key and optional sort key attributes.

    Given as tuples (``pk=("tenant_id", "region"), sk=("created_at",)``), the index is
    *native*: keyed on up to four entity attributes each, as stored (no template renders
    them; every item that has them is in the index)."""

    name: str
    """The index name."""
    pk: str | tuple[str, ...]
    """The index's partition key attribute (a tuple: a native index's attributes)."""
    sk: str | tuple[str, ...] | None = None
    """The index's sort key attribute(s) (``None``: partition key only)."""
    projection: Projection = "ALL"
    """What the index holds: ``"ALL"``, ``"KEYS_ONLY"`` or the attribute names it includes."""
    warm_throughput: Pair | None = None
    """(read, write) units per second the index is pre-warmed for (``create()``)."""
    max_on_demand: Pair | None = None
    """(read, write) request units per second the index may use at most."""

    def __post_init__(self) -> None:
        check_index(self)

    @property
    def is_local(self) -> bool:
        """``False``: a GSI has its own partition key."""
        return False

    @property
    def hash_keys(self) -> tuple[str, ...]:
        """The partition key attribute(s), in order."""
        return self.pk if isinstance(self.pk, tuple) else (self.pk,)

    @property
    def range_keys(self) -> tuple[str, ...]:
        """The sort key attribute(s), in order (none: partition key only)."""
        return () if self.sk is None else self.sk if isinstance(self.sk, tuple) else (self.sk,)


@dataclass(frozen=True)
class LSI:
    """A local secondary index: the table's partition key with another sort key attribute."""

    name: str
    """The index name."""
    sk: str
    """The index's sort key attribute (its partition key is the table's)."""
    projection: Projection = "ALL"
    """What the index holds: ``"ALL"``, ``"KEYS_ONLY"`` or the attribute names it includes."""

    @property
    def is_local(self) -> bool:
        """``True``: an LSI shares the table's partition key."""
        return True


@dataclass(frozen=True)
class VectorIndex:
    """A vector index: similarity search (``SearchVectors``) over the vectors stored in
    ``attribute`` (an entity's ``Annotated[list[float], Vector(dimensions)]`` field), on an
    on-demand table. Its search schema: ``partition``, the attribute every search names
    one value of (``None``: the whole index is one partition), and ``filters``, the
    attributes a search may also require equal values of (``.where(F(a) == v)``); each is
    a string unless ``key_types`` says ``N`` or ``B``."""

    name: str
    """The index name."""
    attribute: str
    """The attribute holding each item's vector (a list of numbers)."""
    dimensions: int
    """How many numbers every vector holds (1 to 4,096)."""
    distance: str = "COSINE"
    """``"COSINE"`` (scores 0 to 2, lower is nearer), ``"EUCLIDEAN"`` (lower is nearer) or
    ``"DOT_PRODUCT"`` (higher is nearer)."""
    partition: str | None = None
    """The search schema's partition attribute (``HASH``), if any."""
    filters: tuple[str, ...] = ()
    """The search schema's filter attributes (``INLINE_FILTER``)."""
    projection: Projection = "ALL"
    """What the index holds besides the vector: ``"ALL"``, ``"KEYS_ONLY"`` or the
    attribute names it includes (a search reads the rest of each hit by key)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "filters", tuple(self.filters)
                           if isinstance(self.filters, list | tuple) else self.filters)
        check_name("index", self.name)
        dims, names = self.dimensions, (self.attribute, self.partition, *self.filters)
        problem = (
            "dimensions= takes a whole number from 1 to 4096" if type(dims) is not int
            or not 1 <= dims <= MAX_DIMENSIONS else
            f"distance= takes one of {DISTANCES}" if self.distance not in DISTANCES else
            "attribute=, partition= and filters= name attributes (non-empty strings), each "
            "once" if not isinstance(self.filters, tuple) or not all(
                isinstance(a, str) and a for a in names if a is not None)
            or len(set(names)) != len(names) else None)
        if problem is not None:
            raise DynaormError(f"vector index {self.name!r}: {problem}; got {self!r}")
        _projection(self.projection)

    @property
    def search_schema(self) -> tuple[str, ...]:
        """The attributes of its search schema: the partition first, then the filters."""
        return (*(() if self.partition is None else (self.partition,)), *self.filters)


class TableSchema:
    """What a DynamoDB table is, for the entities mapped onto it: name, keys, indexes, type
    attribute, key types, TTL attribute, stream, the cursor secret, and the entity classes
    registered on it. Pure: it sends nothing. :class:`dynaorm.Table` is a schema bound to a
    client (its administration and hooks); build tables with it."""

    def __init__(self, name: str, pk: str = "pk", sk: str | None = "sk", *,
                 indexes: Sequence[GSI | LSI] = (), type_attribute: str | None = "_type",
                 key_types: Mapping[str, str] | None = None, ttl: str | None = None,
                 cursor_secret: str | bytes | None = None,
                 stream: str | None = None, keyring: Any = None,
                 revision_attribute: str | None = "_rev",
                 vector_indexes: Sequence[VectorIndex] = (),
                 receipts_ttl: timedelta = timedelta(days=7), offload: str | None = None,
                 offload_threshold: int = OFFLOAD_THRESHOLD, key_scope: str | None = None,
                 key_table: str | None = None, **settings: Any):
        check_name("table", name)
        if not isinstance(receipts_ttl, timedelta) or receipts_ttl <= timedelta(0):
            raise DynaormError(f"table {name!r}: receipts_ttl must be a positive timedelta, "
                               f"got {receipts_ttl!r}")
        self.receipts_ttl = receipts_ttl
        """How long a commit's idempotency key holds: the receipts of idempotent commits
        (``commit(idempotency_key=...)``) expire after it (default 7 days)."""
        from dynaorm.schema.rules.receipts import Receipts  # (a rule module: below it)

        self.receipts: Receipts = Receipts(self)
        """The table's receipts rule: what a keyed commit writing to it asks."""
        if stream is not None and stream not in _STREAM_VIEWS:
            raise DynaormError(f"table {name!r}: stream must be one of {sorted(_STREAM_VIEWS)}, "
                               f"got {stream!r}")
        self.name = name
        """The table name."""
        self.pk = pk
        """The partition key attribute."""
        self.sk = sk
        """The sort key attribute (``None``: a table with a partition key only)."""
        self.type_attribute = type_attribute
        """The discriminator attribute; ``None``: items are matched to entities by key shape."""
        self.cursor_secret = cursor_secret
        """The key page cursors are sealed with (else ``DYNAORM_CURSOR_SECRET``; neither:
        they are checksummed, not sealed)."""
        self.stream = stream
        """The stream view type ``create()`` enables, if any."""
        self._keyring: Any = keyring  # (no entity yet: nothing to refuse it for)
        _check_revision(name, revision_attribute, {pk, sk, type_attribute})
        self.revision_attribute = revision_attribute
        """The attribute every write stamps with a fresh revision, which proves a lost
        answer's outcome (``None``: none is written; see failure-semantics.md)."""
        self.indexes: dict[str, GSI | LSI] = _indexes(name, sk, indexes)
        """The secondary indexes, by name."""
        key_attrs = {pk, sk} | {a for i in self.indexes.values() for a in
                                ((i.sk,) if isinstance(i, LSI) else (*i.hash_keys, *i.range_keys))}
        self.vector_indexes: dict[str, VectorIndex] = _vector_indexes(
            name, vector_indexes, self.indexes, key_attrs, (type_attribute, revision_attribute))
        """The vector indexes, by name."""
        key_attrs |= {a for v in self.vector_indexes.values() for a in v.search_schema}
        #: the attributes of the keys of the table and its indexes (and search schemas)
        self._key_attrs = key_attrs
        self.key_types: dict[str, str] = _key_types(name, key_types, key_attrs)
        """Key attribute -> ``"N"`` or ``"B"``, for the key attributes that are not strings."""
        _check_ttl(name, ttl, key_attrs | {type_attribute} | set(self.vector_attributes))
        self.ttl = ttl
        """The TTL attribute ``create()`` enables (UpdateTimeToLive), if any."""
        self.declared_settings: TableSettings = settings_of(f"table {name!r}", **settings)
        """The operational settings declared (``warm_throughput=``, ``max_on_demand=``,
        ``pitr_days=``, ``deletion_protection=``, ``contributor_insights=``, ``tags=``):
        ``create()`` applies them, ``Table.settings()`` reads the live ones."""
        self.offload, self.offload_threshold = checked_offload(name, offload, offload_threshold)
        """Where values of ``Offloaded`` fields above ``offload_threshold`` bytes are kept
        (``"s3://BUCKET/PREFIX"``; ``None``: nowhere, every value in its row)."""
        self.key_scope, self._key_table = checked_key_scope(name, key_scope, key_table)
        """The field whose value chooses the data key of each ``Encrypted`` value
        (``key_scope=``: a key per tenant, kept in the table :attr:`key_table`; ``None``:
        the keyring's keys for every row)."""
        self.entities: dict[str, type[Any]] = {}
        """The entity classes mapped onto this table, by type name."""
        self.retired: dict[str, type[Any]] = {}
        """Type names retired by a ``Meta.previous``: the class that declares each."""
        #: the classes declared on this object (``entities``, ``retired``): the same dicts,
        #: unless a client shares one registry between its Table objects of this table
        self._own = (self.entities, self.retired)
        self._client: Any = None
        self._kinds: dict[str, RowKind] = {}  # (a surface's row kinds: keeps)

    @property
    def key_table(self) -> str | None:
        """The table that keeps the tenants' keys (``key_table=``, by default
        ``<name>-keys``; ``None``: no ``key_scope``)."""
        if self.key_scope is None:
            return None
        return self._key_table or f"{self.name}-keys"

    @property
    def keyring(self) -> Any:
        """The keyring of its ``Encrypted`` fields (``None``: its client's). One that
        cannot serve an entity of the table (a unique encrypted field needs a MAC key) is
        refused when it is set (:class:`~dynaorm.KeyringError`)."""
        return self._keyring

    @keyring.setter
    def keyring(self, keyring: Any) -> None:
        check = getattr(keyring, "check", None)
        if check is not None:
            check(self.entities.values())
        self._keyring = keyring

    @property
    def db(self) -> Any:
        """The client this table is bound to (bound on first use; a bare schema has none:
        ``None``). Pure code only compares it: a session commits the tables of one
        client."""
        found = self._client
        if found is None:
            found = self._bind()
        return found

    def _bind(self) -> Any:
        """Bind the table to its client (:class:`dynaorm.Table` does; a schema cannot)."""
        return None

    # -- the rows it keeps for itself and for surfaces ------------------------------
    @property
    def row_kinds(self) -> tuple[RowKind, ...]:
        """The kinds of row the table keeps beside its entities' (:class:`~dynaorm.RowKind`):
        the receipts of idempotent commits, then those registered by :meth:`keeps`."""
        from dynaorm.schema.rows import receipts

        return (receipts(self.receipts_ttl), *self._kinds.values())

    def keeps(self, kind: RowKind) -> RowKind:
        """Describe a kind of row a surface keeps in this table (by its type: the same
        kind registered again is kept once; another kind under a type kept, the receipts'
        or the unique guards', is refused). ``dynaorm.powertools`` registers its records
        so."""
        from dynaorm.schema.rows import DYNAORM_TYPES

        kept = self._kinds.get(kind.type)
        if kind.type in DYNAORM_TYPES or kept not in (None, kind):
            raise DynaormError(f"table {self.name!r}: the row type {kind.type!r} is taken "
                               f"(by {DYNAORM_TYPES.get(kind.type) or kept}): give this "
                               "kind a type of its own")
        self._kinds[kind.type] = kind
        return kind

    def own_row(self, item: Mapping[str, Any] | None) -> bool:
        """Whether ``item``, a stored item of the table (DynamoDB JSON) or its key, is a
        row kept beside its entities' (:attr:`row_kinds`, or a kind this process has not
        registered: its partition key is in dynaorm's reserved namespace), never an
        entity's."""
        pk = None if item is None else item.get(self.pk)
        return isinstance(pk, dict) and str(pk.get("S", "")).startswith(OWN_PREFIX)

    # -- entity registry -----------------------------------------------------------
    def register(self, entity: type[Any], type_name: str, previous: str | None = None
                 ) -> None:
        """Record ``entity`` under ``type_name`` (called when an entity class is defined),
        and reserve ``previous``, the type name its ``Meta.previous`` declares: a type name
        used by a class or retired by one belongs to that class on this table (another
        class taking it would read, and ``migrate`` convert, the other's items). A class
        redefined (same module and name: a reload, a notebook) replaces the old one under
        every name it had."""
        for entities, retired in {id(self.entities): (self.entities, self.retired),
                                  id(self._own[0]): self._own}.values():  # (shared, own)
            self._claim(entities, retired, entity, type_name, previous)

    def _claim(self, entities: dict[str, type[Any]], retired: dict[str, type[Any]],
               entity: type[Any], type_name: str, previous: str | None) -> None:
        """:meth:`register` in the registry ``entities`` / ``retired``."""
        for name in (type_name, previous):
            if name is not None and name.startswith(OWN_PREFIX):
                raise DynaormError(f"table {self.name!r}: {_qualified(entity)}'s type name "
                                   f"{name!r} begins with {OWN_PREFIX!r}, reserved for "
                                   "dynaorm's own rows (guards, receipts, row kinds)")
            other = None if name is None else entities.get(name) or retired.get(name)
            if other is not None and _qualified(other) != _qualified(entity):
                gone = name in retired and name not in entities
                raise DynaormError(
                    f"table {self.name!r}: type name {name!r} is taken by "
                    f"{_qualified(other)}"
                    f"{' (retired by its Meta.previous)' if gone else ''}; give "
                    f"{_qualified(entity)} its own type name with 'class Meta: type_name "
                    "= \"...\"' (re-defining a class of the same module replaces it)"
                    + ("" if name == type_name else "; a previous type name belongs to "
                       "the class that used it"))
        for names in (entities, retired):  # a redefinition replaces the class everywhere,
            for name, old in list(names.items()):  # under its old names too
                if old is not entity and _qualified(old) == _qualified(entity):
                    del names[name]
                    forget(old)
        entities[type_name] = entity
        if previous is not None and previous != type_name:
            retired[previous] = entity

    def _share(self, registry: tuple[dict[str, type[Any]], dict[str, type[Any]]] | None
               ) -> None:
        """Use ``registry`` (``entities``, ``retired``), the one of every Table object of
        this table on a client, this object's classes claimed in it (one of another's type
        names: a :class:`DynaormError`); ``None``: leave it (its classes taken out), and
        use this object's own again."""
        own = self._own
        for mine, theirs in zip(own, (self.entities, self.retired), strict=True):
            for name in [n for n, c in mine.items() if theirs is not mine and theirs.get(n) is c]:
                del theirs[name]
        self.entities, self.retired = own
        if registry is not None:
            for name, cls in own[0].items():
                self._claim(*registry, cls, name, next((p for p, c in own[1].items() if c is cls),
                                                       None))
            self.entities, self.retired = registry

    def key_type(self, attr: str | None) -> str:
        """The DynamoDB type of a key attribute: ``"S"`` unless ``key_types`` says ``N``/``B``."""
        return "S" if attr is None else self.key_types.get(attr, "S")

    @property
    def string_keys(self) -> bool:
        """Whether the table's own key attributes are strings (unique rules, versioning and
        sharding need that)."""
        return self.key_type(self.pk) == "S" and self.key_type(self.sk) == "S"

    def index(self, name: str) -> GSI | LSI:
        """The index declared as ``name`` (a :class:`DynaormError` names the declared ones)."""
        try:
            return self.indexes[name]
        except KeyError:
            known = ", ".join(self.indexes) or "none"
            raise DynaormError(f"table {self.name!r} has no index {name!r} "
                               f"(declared: {known})") from None

    def vector_index(self, name: str) -> VectorIndex:
        """The vector index declared as ``name`` (a :class:`DynaormError` names the declared
        ones)."""
        try:
            return self.vector_indexes[name]
        except KeyError:
            known = ", ".join(self.vector_indexes) or "none"
            raise DynaormError(f"table {self.name!r} has no vector index {name!r} "
                               f"(declared: {known})") from None

    @property
    def vector_attributes(self) -> frozenset[str]:
        """The attributes the vector indexes read vectors from."""
        return frozenset(v.attribute for v in self.vector_indexes.values())

    def key_attributes(self, index: str | None = None) -> tuple[str, str | None]:
        """(partition attribute, sort attribute) of the table or of one index."""
        if index is None:
            return self.pk, self.sk
        spec = self.index(index)
        if isinstance(spec, LSI):
            return self.pk, spec.sk
        return spec.hash_keys[0], (spec.range_keys or (None,))[-1]

    def key_names(self, index: str | None = None) -> tuple[str, ...]:
        """Every key attribute of the table and (given) of one index, each once."""
        spec = None if index is None else self.index(index)
        more = () if spec is None else (spec.sk,) if isinstance(spec, LSI) else (
            *spec.hash_keys, *spec.range_keys)
        return tuple(a for a in dict.fromkeys((self.pk, self.sk, *more)) if a)

    def native(self, index: str | None) -> GSI | None:
        """The native index ``index`` names (see :class:`GSI`), else ``None``."""
        found = None if index is None else self.index(index)
        return found if isinstance(found, GSI) and isinstance(found.pk, tuple) else None

    @functools.cached_property
    def index_keys(self) -> dict[str, frozenset[str]]:
        """The key attributes of each secondary index (the table's own included), by
        index name: an item holding all of them is in the index."""
        return {name: frozenset(self.key_names(name)) for name in self.indexes}

    @functools.cached_property
    def key_roles(self) -> dict[str, str]:
        """Every key attribute of the table and of its indexes (a vector index's partition
        attribute included): name -> ``"partition"`` or ``"sort"`` (for DynamoDB's key
        limits; asked by the gate of every write action: kept, as :attr:`index_keys`)."""
        roles = {self.pk: "partition"}
        if self.sk:
            roles[self.sk] = "sort"
        for index in self.indexes.values():
            if isinstance(index, GSI):
                roles.update({a: "partition" for a in index.hash_keys if a not in roles})
            for a in (index.range_keys if isinstance(index, GSI) else (index.sk,)):
                roles.setdefault(a, "sort")
        for vector in self.vector_indexes.values():  # (a search names one partition value)
            if vector.partition is not None:
                roles.setdefault(vector.partition, "partition")
        return roles

    # -- schema --------------------------------------------------------------------
    def definition(self) -> dict[str, Any]:
        """The CreateTable request for this table and all its indexes."""
        gsis = []
        lsis = []
        for index in self.indexes.values():
            projection = _projection(index.projection, self._carried)
            if isinstance(index, GSI):
                gsis.append({"IndexName": index.name,
                             "KeySchema": _key_schema(index.hash_keys, index.range_keys),
                             "Projection": projection,
                             **create_params(TableSettings(), index.warm_throughput,
                                             index.max_on_demand)})
            else:
                lsis.append({"IndexName": index.name,
                             "KeySchema": _key_schema((self.pk,), (index.sk,)),
                             "Projection": projection})
        vectors = [self.vector_definition(v) for v in self.vector_indexes.values()]
        request: dict[str, Any] = {
            "TableName": self.name,
            "KeySchema": _key_schema((self.pk,), (self.sk,) if self.sk else ()),
            "AttributeDefinitions": [{"AttributeName": a, "AttributeType": self.key_type(a)}
                                     for a in sorted(filter(None, self._key_attrs))],
            "BillingMode": "PAY_PER_REQUEST",
        }
        if gsis:
            request["GlobalSecondaryIndexes"] = gsis
        if lsis:
            request["LocalSecondaryIndexes"] = lsis
        if vectors:
            request["VectorIndexes"] = vectors
        if self.stream is not None:
            request["StreamSpecification"] = {"StreamEnabled": True,
                                              "StreamViewType": self.stream}
        return request | create_params(self.declared_settings)

    def vector_definition(self, index: VectorIndex) -> dict[str, Any]:
        """The ``VectorIndexes`` entry of CreateTable (and ``Create`` of UpdateTable's
        ``VectorIndexUpdates``) for ``index``."""
        found: dict[str, Any] = {
            "IndexName": index.name, "VectorAttribute": {"AttributeName": index.attribute},
            "Dimensions": index.dimensions, "DistanceFunction": index.distance,
            "Projection": _projection(index.projection, self._carried)}
        schema = [{"AttributeName": a, "SearchSchemaElementType": "INLINE_FILTER"}
                  for a in index.filters]
        if index.partition is not None:
            schema.insert(0, {"AttributeName": index.partition, "SearchSchemaElementType": "HASH"})
        if schema:
            found["SearchSchema"] = schema
        return found

    @property
    def type_attr(self) -> str:
        """The type attribute's name (``""`` on a table without one: no item has it)."""
        return self.type_attribute or ""

    @property
    def _carried(self) -> tuple[str, ...]:
        """Attributes an INCLUDE projection always carries (the type, the TTL)."""
        return tuple(a for a in (self.type_attribute, self.ttl) if a)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r}, pk={self.pk!r}, sk={self.sk!r})"


def _key_schema(hash_keys: Sequence[str], range_keys: Sequence[str | None]
                ) -> list[dict[str, Any]]:
    """A ``KeySchema``: the ``hash_keys``, then the ``range_keys``."""
    return [{"AttributeName": a, "KeyType": "HASH"} for a in hash_keys] + [
        {"AttributeName": a, "KeyType": "RANGE"} for a in range_keys]


def _check_revision(name: str, revision_attribute: str | None, taken: set[Any]) -> None:
    """``revision_attribute=`` refused unless ``None`` or an attribute other than the
    keys and the type attribute (``taken``)."""
    if revision_attribute is not None and (not isinstance(revision_attribute, str) or not
                                           revision_attribute or revision_attribute in taken):
        raise DynaormError(f"table {name!r}: revision_attribute must name an attribute "
                           f"other than the keys and the type attribute, or be None; got "
                           f"{revision_attribute!r}")


def _check_ttl(name: str, ttl: str | None, taken: set[Any]) -> None:
    """``ttl=`` refused unless ``None`` or a non-key attribute (``taken``: the keys', the
    type attribute, the vector attributes)."""
    if ttl is not None and (not isinstance(ttl, str) or not ttl or ttl in taken):
        raise DynaormError(f"table {name!r}: ttl must name a non-key attribute, "
                           f"got {ttl!r}")


def _indexes(table: str, sk: str | None, indexes: Sequence[GSI | LSI]) -> dict[str, GSI | LSI]:
    """The declared indexes by name, checked (names, no twice, an LSI needs a sort key)."""
    found = {}
    for index in indexes:
        check_name("index", index.name)
        if index.name in found:
            raise DynaormError(f"table {table!r}: index {index.name!r} declared twice")
        if isinstance(index, LSI) and sk is None:
            raise DynaormError(f"table {table!r}: an LSI needs a table with a sort key")
        pk = index.pk if isinstance(index, GSI) else ""
        keys = (*index.hash_keys, *index.range_keys) if isinstance(index, GSI) else ()
        if tuple in map(type, (pk, index.sk)) and not (type(pk) is tuple and type(index.sk) is not
                str and 0 < len(pk) <= 4 >= len(keys) - len(pk) and len(set(keys)) == len(keys)):
            raise DynaormError(f"table {table!r}: native index {index.name!r} takes pk= a "
                               "tuple of 1 to 4 attributes and sk= a tuple of up to 4 "
                               "(or None), no attribute twice")
        found[index.name] = index
    return found


def _vector_indexes(table: str, declared: Sequence[VectorIndex],
                    indexes: Mapping[str, GSI | LSI], key_attrs: set[str | None],
                    own: tuple[str | None, ...]) -> dict[str, VectorIndex]:
    """The declared vector indexes by name, checked: vector indexes, no name twice (among
    the secondary indexes too), vectors never in a key or dynaorm's own attributes."""
    found = {}
    for index in declared:
        if not isinstance(index, VectorIndex):
            raise DynaormError(f"table {table!r}: vector_indexes= takes VectorIndex objects, "
                               f"got {index!r}")
        if index.name in found or index.name in indexes:
            raise DynaormError(f"table {table!r}: index {index.name!r} declared twice")
        taken = sorted(a for a in (index.attribute, *index.search_schema)
                       if a in own or (a == index.attribute and a in key_attrs))
        if taken:
            raise DynaormError(f"table {table!r}: vector index {index.name!r} names {taken}, "
                               "a key attribute or one dynaorm writes itself")
        found[index.name] = index
    return found


def _key_types(table: str, key_types: Mapping[str, str] | None, key_attrs: set[str | None]
               ) -> dict[str, str]:
    """``key_types`` checked: each names a key attribute, as ``"S"``, ``"N"`` or ``"B"``;
    the strings are left out (a key attribute is a string unless it says otherwise)."""
    found = {}
    for attr, kind in dict(key_types or {}).items():
        if kind not in ("S", "N", "B"):
            raise DynaormError(f"table {table!r}: key_types[{attr!r}] must be 'S', 'N' or "
                               f"'B', got {kind!r}")
        if attr not in key_attrs:
            raise DynaormError(f"table {table!r}: key_types names {attr!r}, which is not a "
                               "key attribute of the table or of an index")
        if kind != "S":
            found[attr] = kind
    return found


def _qualified(cls: type[Any]) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"
