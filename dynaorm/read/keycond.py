"""Planning a query's key condition from entity templates (pure).

Range conditions are kept inside the entity's own sort-key prefix with ``BETWEEN`` so that
other item types sharing the partition are never read by a ``<`` or ``>``; strict bounds
are made exact by dropping the bound's own key client-side (a filter expression cannot
name key attributes).
"""

import itertools
import os
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from dynaorm._types import AttributeValue
from dynaorm.errors import DynaormError, KeyTemplateError
from dynaorm.schema.spec import EntitySpec
from dynaorm.schema.table import GSI
from dynaorm.schema.templates import SHARD_FIELD, KeyTemplate
from dynaorm.values.codec import encode_value
from dynaorm.values.keys import key_av, key_order, key_value
from dynaorm.values.limits import check_key_value

#: Sorts after any character a key will hold (UTF-8 order of code points).
HIGH = "\U0010ffff"


@dataclass(frozen=True)
class SortCondition:
    op: str  # eq, lt, lte, gt, gte, between, begins_with
    args: tuple[Mapping[str, Any], ...]


@dataclass(frozen=True)
class KeyPlan:
    """What one query reads: partition values (one per shard) and a sort-key condition."""

    index: str | None
    pk_attr: str
    sk_attr: str | None
    pk_values: tuple[str, ...]
    sk_op: str | None = None          # "=", "<", "<=", ">", ">=", "BETWEEN", "begins_with"
    sk_values: tuple[str, ...] = ()
    exclude: str | None = None        # drop the item whose sort key equals this
    history_base: str | None = None   # history: keep only v<n>_<base> rows, n >= 1
    nothing: bool = False             # the condition names only rows another type's key wins
    extra: tuple[tuple[str, str], ...] = ()  # a native index: more attributes, each ``=``

    def conditions(self, i: int) -> list[tuple[str, str, tuple[AttributeValue, ...]]]:
        """Stream ``i``'s key condition as data, what the request renders and what a
        cursor's position is checked against: ``(attribute, operator, values)``, the
        partition's ``=`` first, then the sort key's condition if any."""
        out: list[tuple[str, str, tuple[AttributeValue, ...]]] = [
            (self.pk_attr, "=", (key_av(self.pk_values[i]),))]
        out += [(attr, "=", (key_av(value),)) for attr, value in self.extra]
        if self.sk_op is not None and self.sk_attr is not None:
            out.append((self.sk_attr, self.sk_op, tuple(map(key_av, self.sk_values))))
        return out

    @property
    def empty(self) -> bool:
        return self.nothing or (self.sk_op == "BETWEEN" and bool(
            key_order(self.sk_values[0]) > key_order(self.sk_values[1])))


def _pre(prefix: str, text: str) -> str:
    """``prefix + text``, keeping a typed key value (a number key has no prefix) as is."""
    return prefix + text if prefix else text


def _templates(spec: EntitySpec, index: str | None) -> tuple[KeyTemplate, KeyTemplate | None,
                                                              str, str | None, str]:
    if index is None:
        return spec.pk, spec.sk, spec.table.pk, spec.table.sk, "primary"
    for idx in spec.indexes:
        if idx.name == index:
            return idx.pk, idx.sk, idx.pk_attr, idx.sk_attr, idx.name
    raise DynaormError(f"{spec.name} declares no keys for index {index!r} "
                       f"(Meta.indexes has: {', '.join(i.name for i in spec.indexes) or 'none'})")


def partition_values(spec: EntitySpec, pk: KeyTemplate, target: str, index: str | None,
                     fields: Mapping[str, Any], shard: int | None) -> tuple[str, ...]:
    """The partition key values a query of ``pk`` (the template of ``index``, the
    ``target`` of its shards) reads: one, or one per shard (``shard``: just it)."""
    missing = [f for f in pk.fields if f != SHARD_FIELD and f not in fields]
    if missing:
        raise KeyTemplateError(f"{spec.name}: query needs partition key field(s) {missing} "
                               f"of {pk.source!r}")
    if SHARD_FIELD in pk.fields:
        rule = spec.shards[target]
        values = rule.values if shard is None else (rule.check_value(shard, spec.name, target),)
        return tuple(pk.render({**fields, SHARD_FIELD: i}, spec.name) for i in values)
    if shard is not None:
        raise KeyTemplateError(f"{spec.name}: the partition key {pk.source!r} of "
                               f"{index or 'the table'} is not sharded; shard= does not apply")
    return (pk.render(fields, spec.name),)


def plan_keys(spec: EntitySpec, index: str | None, fields: Mapping[str, Any],
              cond: SortCondition | None, *, latest: bool = False,
              history: bool = False, shard: int | None = None) -> KeyPlan:
    """Plan the key condition of ``s.query(Entity, index=..., **fields)`` plus ``cond``;
    where another entity's literal sort key outranks this one's template in the partition
    (a table without a type attribute), the condition leaves it out when it is one of its
    ends (:func:`skip_literals`; elsewhere in the range the read drops it)."""
    gsi = spec.table.native(index)
    if gsi is not None and not history and shard is None:  # (else: refused, no templates)
        return _native_plan(spec, gsi, fields, cond)
    plan = _plan_keys(spec, index, fields, cond, latest=latest, history=history, shard=shard)
    if index is None and spec.table.type_attribute is None and spec.literal_claims():
        return skip_literals(spec, plan)
    return plan


def _native_value(spec: EntitySpec, name: str, value: Any) -> str:
    """A query's value of field ``name``, as its key value."""
    try:
        dumped, kind = spec.dump_field(name, value), spec.kinds.get(name)
        return key_value(encode_value(dumped) if kind is None else kind.encode(dumped))
    except (ValueError, DynaormError) as exc:
        raise KeyTemplateError(f"{spec.name}: {name}={value!r}: {exc}", field=name) from exc


def _native_plan(spec: EntitySpec, gsi: GSI, fields: Mapping[str, Any],
                 cond: SortCondition | None) -> KeyPlan:
    """The key condition of a query of a native index: ``=`` on every partition attribute
    and on a leading run of sort attributes (``fields``, by field name), then ``cond`` on
    the sort attribute after them. Anything DynamoDB would refuse is refused here."""
    names = spec.stored_fields
    given, after, bounds = _native_shape(spec, gsi, fields, cond)
    values = [_native_value(spec, names[a], fields[names[a]]) for a in given]
    ends = tuple(_native_value(spec, names[a], b[a]) for b in bounds for a in b)
    keyed = zip((*given, *(a for b in bounds for a in b)), (*values, *ends), strict=True)
    for attr, value in keyed:  # each value, as DynamoDB Local refuses it (not their sum)
        check_key_value(names[attr], key_av(value), "sort" if attr in gsi.range_keys else
                        "partition", entity=f"{spec.name} (index {gsi.name!r})", key=fields)
    return KeyPlan(gsi.name, given[0], after, (values[0],), None if cond is None else _OPS.get(
        cond.op, cond.op), ends, extra=tuple(zip(given[1:], values[1:], strict=True)))


def _native_shape(spec: EntitySpec, gsi: GSI, fields: Mapping[str, Any],
                  cond: SortCondition | None
                  ) -> tuple[tuple[str, ...], str | None, list[dict[str, Any]]]:
    """The attributes a query of native index ``gsi`` gives with ``=`` (every partition
    attribute, a leading run of sort attributes), the sort attribute after them, and
    ``cond``'s bounds by attribute; refused unless DynamoDB takes that shape."""
    attrs = [spec.attr(f) for f in fields if f in spec.field_names]
    run = len(list(itertools.takewhile(attrs.__contains__, gsi.range_keys)))
    given, after = (*gsi.hash_keys, *gsi.range_keys[:run]), (*gsi.range_keys, None)[run]
    bounds = [] if cond is None else [{spec.attr(f): v for f, v in b.items()} for b in cond.args]
    if len(fields) != len(given) or set(attrs) != set(given) or any(
            set(b) != {after} for b in bounds) or (cond is not None and cond.op == "begins_with"
                                                   and spec.table.key_type(after) != "S"):
        raise _native_refusal(spec, gsi, fields, cond)
    return given, after, bounds


def _native_refusal(spec: EntitySpec, gsi: GSI, fields: Mapping[str, Any],
                    cond: SortCondition | None) -> KeyTemplateError:
    """The error of a query of native index ``gsi`` in a shape DynamoDB does not take:
    what it takes, and the fields it named that are none of the index's."""
    name = {a: spec.stored_fields.get(a, a) for a in (*gsi.hash_keys, *gsi.range_keys)}
    unknown = {*fields, *(f for b in (cond.args if cond else ()) for f in b)} - {
        *name.values()}
    return KeyTemplateError(
        f"{spec.name}: a query of native index {gsi.name!r} takes "
        f"{[name[a] for a in gsi.hash_keys]}, a leading run of "
        f"{[name[a] for a in gsi.range_keys]} and a condition on the next one "
        "(begins_with: a string)" + (f"; not among them: {sorted(unknown)}" * bool(
            unknown)))


_OPS = {"eq": "=", "lt": "<", "lte": "<=", "gt": ">", "gte": ">=", "between": "BETWEEN"}


def skip_literals(spec: EntitySpec, plan: KeyPlan) -> KeyPlan:
    """``plan`` without the rows of literal sort keys that outrank ``spec``'s template
    where the key condition can say so cheaply: ``= L`` reads nothing, ``>= L`` becomes
    ``> L`` and ``<= L`` becomes ``< L``."""
    literals = {sk.render({}) for _, pk, sk in spec.literal_claims()
                if sk is not None and sk.is_literal
                and all(pk.parse_key(v) is not None for v in plan.pk_values)}
    if not plan.sk_values or plan.sk_values[0] not in literals:
        return plan
    if plan.sk_op == "=":
        return replace(plan, nothing=True)
    if plan.sk_op in (">=", "<="):
        return replace(plan, sk_op=plan.sk_op[0])
    return plan


def _check_fields(spec: EntitySpec, fields: Mapping[str, Any], pk: KeyTemplate,
                  sk: KeyTemplate | None) -> None:
    """Refuse query keywords that are not fields of the key templates, and ``shard``
    (computed, never passed)."""
    unknown = set(fields) - set(pk.fields) - set(sk.fields if sk else ())
    if SHARD_FIELD in fields or unknown:
        bad = sorted(unknown | ({SHARD_FIELD} & set(fields)))
        raise KeyTemplateError(f"{spec.name}: {bad} are not key template fields here "
                               "(the shard is computed, never passed)")


def _leading_fields(spec: EntitySpec, sk: KeyTemplate, fields: Mapping[str, Any],
                    keywords: Mapping[str, Any]) -> dict[str, Any]:
    """The sort-key fields known from the query's fields (partition fields reused in the
    sort key too), as far as they lead the template; the sort-key ``keywords`` must all
    be among them."""
    given = {k: v for k, v in fields.items() if k in sk.fields}
    lead = sk.leading_fields(frozenset(given))
    if set(keywords) - set(lead):
        raise KeyTemplateError(f"{spec.name}: sort-key fields {sorted(keywords)} must be "
                               f"leading fields of {sk.source!r}")
    return {k: given[k] for k in lead}


def _history_plan(spec: EntitySpec, index: str | None, sk: KeyTemplate,
                  fields: Mapping[str, Any], base: KeyPlan) -> KeyPlan:
    """The version rows (``n >= 1``) of one versioned entity: through
    ``Meta.history_index`` when it has one (a query of the table), else by the range of
    version-row sort keys in the partition (kept to the entity's by ``history_base``)."""
    full = sk.render(fields, spec.name)
    history = spec.history_index if index is None else None  # (only this entity's rows)
    index, attr = history or (index, base.sk_attr)
    return KeyPlan(index, base.pk_attr, attr, base.pk_values, "BETWEEN",
                   spec.rules.sort_keys.bounds(full, history is not None), history_base=full)


@dataclass(frozen=True)
class _SortQuery:
    """The sort key of one query: its template, the query's fields, the leading sort-key
    fields among them, the version prefix its keys carry (``latest``: ``v0_``) and the
    plan without a sort-key condition. Turns a :class:`SortCondition` into a plan."""

    spec: EntitySpec
    sk: KeyTemplate
    fields: Mapping[str, Any]
    sk_fields: Mapping[str, Any]
    vprefix: str
    base: KeyPlan

    def make(self, op: str, *vals: str, exclude: str | None = None) -> KeyPlan:
        """The plan with the sort-key condition ``op`` on ``vals``."""
        b = self.base
        return KeyPlan(b.index, b.pk_attr, b.sk_attr, b.pk_values, op, vals, exclude)

    def prefix(self) -> str:
        """The sort-key prefix the leading fields give (empty: no prefix)."""
        return _pre(self.vprefix, self.sk.render_prefix(self.sk_fields, self.spec.name))

    def without_condition(self, exact: bool) -> KeyPlan:
        """No condition: the one item the keywords name (``exact``: they name the whole
        sort key), else every item under the leading fields' prefix."""
        if exact:
            return self.make("=", _pre(self.vprefix, self.sk.render(self.sk_fields,
                                                                    self.spec.name)))
        prefix = self.prefix()
        return self.make("begins_with", prefix) if prefix else self.base

    def merged_with(self, values: Mapping[str, Any]) -> dict[str, Any]:
        """The condition's fields after the keywords'; refuses anything else."""
        sk, name = self.sk, self.spec.name
        extra = set(values) - set(sk.fields)
        if extra:
            raise KeyTemplateError(f"{name}: {sorted(extra)} are not fields of sort key "
                                   f"{sk.source!r}")
        again = set(values) & (set(self.sk_fields) | set(self.fields))
        if again:
            raise KeyTemplateError(f"{name}: {sorted(again)} already given to query(); "
                                   "a condition takes the sort-key fields that follow")
        merged = {**self.sk_fields, **values}
        if not values or not set(values) <= set(sk.leading_fields(frozenset(merged))):
            raise KeyTemplateError(f"{name}: condition fields {sorted(values)} must "
                                   f"follow the leading fields of {sk.source!r}")
        return merged

    def bound(self, values: Mapping[str, Any]) -> tuple[str, bool]:
        """A bound's sort key (or prefix), and whether it is the whole key."""
        merged = self.merged_with(values)
        sk = self.sk
        complete = all(f in merged for f in sk.fields if f != SHARD_FIELD)
        text = _pre(self.vprefix, sk.render(merged, self.spec.name) if complete
                    else sk.render_prefix(merged, self.spec.name))
        return text, complete

    def with_condition(self, cond: SortCondition) -> KeyPlan:
        """The plan of a sort-key condition: ``begins_with``, ``between``, ``eq``, or a
        comparison (:meth:`compare`)."""
        prefix = self.prefix()
        op = cond.op
        if op == "begins_with":
            (values,) = cond.args
            merged = self.merged_with(values)
            order = [f for f in self.sk.fields if f in values]
            text = _pre(self.vprefix, self.sk.render_prefix(merged, self.spec.name,
                                                            partial=order[-1]))
            return self.make("begins_with", text)
        if op == "between":
            (lo, _), (hi, hi_complete) = self.bound(cond.args[0]), self.bound(cond.args[1])
            return self.make("BETWEEN", lo, hi if hi_complete else hi + HIGH)
        (values,) = cond.args
        value, complete = self.bound(values)
        if op == "eq":
            return self.make("=", value) if complete else self.make("begins_with", value)
        return self.compare(op, prefix, value, complete)

    def compare(self, op: str, prefix: str, value: str, complete: bool) -> KeyPlan:
        """``lt``/``lte``/``gt``/``gte`` of ``value`` (a whole key, or a prefix when not
        ``complete``): the native operator when the entity's keys have no prefix, else a
        ``BETWEEN`` kept inside ``prefix`` (a strict bound's own key dropped client-side)."""
        upper = value if complete else value + HIGH
        if not prefix:  # nothing to keep inside: the native operators are exact
            native = {"lt": ("<", value), "lte": ("<=", upper), "gt": (">", upper),
                      "gte": (">=", value)}[op]
            return self.make(*native)
        top = prefix + HIGH
        if op == "lt":
            return self.make("BETWEEN", prefix, value, exclude=value)
        if op == "lte":
            return self.make("BETWEEN", prefix, upper)
        if op == "gt":
            return self.make("BETWEEN", upper, top, exclude=upper)
        return self.make("BETWEEN", value, top)  # gte


def _plan_keys(spec: EntitySpec, index: str | None, fields: Mapping[str, Any],
               cond: SortCondition | None, *, latest: bool,
               history: bool = False, shard: int | None = None) -> KeyPlan:
    pk, sk, pk_attr, sk_attr, target = _templates(spec, index)
    _check_fields(spec, fields, pk, sk)
    pk_values = partition_values(spec, pk, target, index, fields, shard)
    base = KeyPlan(index, pk_attr, sk_attr, pk_values)
    keywords = {k: v for k, v in fields.items() if k not in pk.fields}
    if sk is None:
        if keywords or cond:
            raise DynaormError(f"{spec.name}: index {index!r} has no sort key to condition")
        return base
    sk_fields = _leading_fields(spec, sk, fields, keywords)
    if history:
        return _history_plan(spec, index, sk, fields, base)
    query = _SortQuery(spec, sk, fields, sk_fields, spec.rules.sort_keys.latest * latest, base)
    if cond is None:
        whole = set(sk.fields) - {SHARD_FIELD} <= sk_fields.keys()
        # the keywords name the whole sort key: one item, exactly
        return query.without_condition(whole and bool(keywords))
    return query.with_condition(cond)


def widen(a: KeyPlan, b: KeyPlan) -> KeyPlan:
    """A plan of ``a``'s partition that reads what both plans read (multi-entity queries
    carry no sort condition: each plan is a ``begins_with`` of its type's prefix or none)."""
    common = os.path.commonprefix(  # noqa: RUF071 (of the text: character by character)
        [p.sk_values[0] if p.sk_op == "begins_with" else "" for p in (a, b)])
    if common:
        return replace(a, sk_op="begins_with", sk_values=(common,))
    return replace(a, sk_op=None, sk_values=())
