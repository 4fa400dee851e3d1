"""Index membership: which secondary indexes an entity's rows land in. Template indexes
(``Meta.indexes``: :class:`IndexKeys`, key attributes rendered from fields), native
multi-attribute indexes (the fields themselves), and the rule that only an entity's own
row or latest copy is indexed (version rows and guard items never are).
"""

from __future__ import annotations

import typing
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from dynaorm._types import AttributeValue, Item
from dynaorm.errors import DynaormError, InvalidValueError
from dynaorm.schema.rules import Declaration, Rule, register
from dynaorm.schema.table import LSI, TableSchema
from dynaorm.schema.templates import SHARD_FIELD, KeyTemplate, field_template
from dynaorm.values.codec import Kind, kind_of


def _utc(value: Any) -> AttributeValue:
    """A time in a native index's key: a datetime in UTC (ordered by instant, as key
    templates render them; a naive one refused), a date or a time as it is."""
    if isinstance(value, datetime):
        if value.tzinfo is None:
            raise InvalidValueError(f"the naive datetime {value.isoformat()!r} cannot key a "
                                    "native index: give it a time zone (stored in UTC)")
        value = value.astimezone(UTC)
    return {"S": value.isoformat()}


#: the field-level kind of a native index's time attributes: how their fields are stored,
#: compared and queried (:attr:`Membership.kinds`)
UTC_TIME = Kind("utc time", (datetime,), "S", _utc)


@dataclass(frozen=True)
class IndexKeys:
    """An entity's key templates for one secondary index."""

    name: str
    pk_attr: str
    sk_attr: str | None
    pk: KeyTemplate
    sk: KeyTemplate | None
    local: bool

    @property
    def fields(self) -> tuple[str, ...]:
        return (*self.pk.fields, *(self.sk.fields if self.sk else ()))


def _check_reused_keys(owner: str, name: str, table: TableSchema, pk: KeyTemplate,
                       sk: KeyTemplate | None,
                       *pairs: tuple[str | None, KeyTemplate | None]) -> None:
    """An index key attribute that is a table key attribute (an inverted index) holds the
    table key as stored: a template given for it must be the table's own, else refused."""
    own = {table.pk: pk, table.sk: sk}
    for attr, template in pairs:
        if attr in own and template is not None:
            table_template = own[attr]
            if table_template is None or template.source != table_template.source:
                expected = None if table_template is None else table_template.source
                raise DynaormError(
                    f"{owner}.Meta.indexes[{name!r}]: attribute {attr!r} is a table key; its "
                    f"template must be the table's ({expected!r}), not {template.source!r} "
                    "(or leave the index out of Meta.indexes: it needs no templates)")


def declared_index(owner: str, table: TableSchema, field_names: frozenset[str], name: str,
                templates: Any, sharded: bool, pk: KeyTemplate, sk: KeyTemplate | None
                ) -> IndexKeys:
    """One entry of ``Meta.indexes`` (``name: (pk_template, sk_template)``) checked against
    the table's index: an LSI keeps the table's pk template, the sort key template is
    given exactly when the index has a sort key, a sharded index's templates hold
    ``{shard}``, and an attribute shared with the table key keeps the table's template."""
    index = table.index(name)
    if table.native(name) is not None:
        raise DynaormError(f"{owner}.Meta.indexes[{name!r}]: a native index takes no templates")
    if not isinstance(templates, tuple | list) or len(templates) != 2:
        raise DynaormError(f"{owner}.Meta.indexes[{name!r}] must be "
                           "(pk_template, sk_template)")
    pk_src, sk_src = templates
    pk_attr, sk_attr = table.key_attributes(name)
    if isinstance(index, LSI):
        if pk_src is not None and pk_src != pk.source:
            raise DynaormError(f"{owner}.Meta.indexes[{name!r}]: an LSI shares the table's "
                               f"partition key; its pk template must be {pk.source!r}")
        idx_pk = pk
    else:
        idx_pk = field_template(pk_src, f"index {name} pk", owner, field_names, sharded,
                           table.key_type(pk_attr))
    if (sk_src is None) != (sk_attr is None):
        raise DynaormError(f"{owner}.Meta.indexes[{name!r}]: the index "
                           f"{'has' if sk_attr else 'has no'} sort key")
    idx_sk = None if sk_src is None else field_template(sk_src, f"index {name} sk", owner,
                                                   field_names, sharded,
                                                   table.key_type(sk_attr))
    if sharded and SHARD_FIELD not in (*idx_pk.fields, *(idx_sk.fields if idx_sk else ())):
        raise DynaormError(f"{owner}.Meta.shards[{name!r}]: its templates need {{shard}}")
    _check_reused_keys(owner, name, table, pk, sk, (pk_attr, idx_pk), (sk_attr, idx_sk))
    return IndexKeys(name, pk_attr, sk_attr, idx_pk, idx_sk, isinstance(index, LSI))


@register
@dataclass(frozen=True, slots=True, eq=False)
class Membership(Rule):
    """Which secondary indexes an entity's rows land in: its template indexes' key
    attributes (rendered from fields, left off where a field is ``None``: a sparse index),
    and the table's native indexes (its own fields, by stored name). Only the entity's row
    (a versioned entity's latest copy) is ever indexed: version rows leave index
    attributes out (:func:`~dynaorm.schema.rules.versioned.version_row`), guard items have
    none."""

    indexes: tuple[IndexKeys, ...]
    native: frozenset[str]
    #: field name -> :data:`UTC_TIME`, for the time fields keying a native index
    kinds: dict[str, Kind]
    name = "indexes"
    order = 40
    answers = {
        "save": "writes the template indexes' key attributes (sparse where a field is None); "
                "a native index's datetimes in UTC (naive ones refused)",
        "update": "rewrites a derived index key whose fields change, conditioned on them",
        "delete": "the index entries go with the row",
        "get": "index keys are attributes of the row, never fields (native: fields)",
        "query": "index=name reads the index; items of other types there are skipped and "
                 "counted; a projected index reads missing attributes by key",
        "values": "as query",
        "scan": "scans read the table, not an index",
        "stream": "index keys are attributes of the images",
        "history": "version rows are never in an index (native attributes kept aside)",
        "migrate": "a moved row writes its index keys; an index added later is backfilled "
                   "by a change of its fields",
        "backfill": "a change rewrites the index keys it derives",
        "check": "index keys that do not match the fields are problems",
        "export": "index key attributes are left out (derived, not fields)",
        "search": "a vector index is the vectors rule's (a row holding a Vector field's "
                  "attribute is in it); secondary indexes are never searched",
        "messages": "index names and attributes, never values of encrypted fields",
        "logs": "as messages",
        "spans": "the index read is a span attribute",
    }

    @classmethod
    def build(cls, decl: Declaration) -> Membership | None:
        table = decl.table
        native = frozenset(a for i in table.indexes if table.native(i)
                           for a in table.key_names(i)) - {table.pk, table.sk}
        if not decl.indexes and not native:
            return None
        fields = {n: i for n, i in decl.cls.model_fields.items() if decl.attr(n) in native}
        for name, info in fields.items():  # a None it would have to store as NULL
            if type(None) in typing.get_args(info.annotation) and not (
                    info.default is None and info.default_factory is None):
                raise DynaormError(
                    f"{decl.owner}.{name}: None cannot be stored in native index key "
                    f"attribute {decl.attr(name)!r} (DynamoDB refuses NULL there; left out, "
                    "it would read back as the default): give it the default None")
        return cls(tuple(decl.indexes), native, {n: UTC_TIME for n, i in fields.items() if
                                                 getattr(kind_of(i.annotation), "name",
                                                         "") == "time"})

    def attributes(self) -> frozenset[str]:
        return frozenset(a for idx in self.indexes for a in (
            (idx.sk_attr,) if idx.local else (idx.pk_attr, idx.sk_attr)) if a)

    def export(self, item: Item) -> Item | None:
        derived = self.attributes()
        return {k: v for k, v in item.items() if k not in derived}
