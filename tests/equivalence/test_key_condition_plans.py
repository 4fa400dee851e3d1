"""How a query plans its key condition: refused field names stay refused, and a query
without a sort-key condition, planned by its shape (:func:`plan_keys` keeps what the
field *names* decide, per entity, index and names, and renders the values each time),
plans exactly what the plain planning plans -- the same :class:`KeyPlan`, or the same
error -- for generated queries of every kind of template, cold and warm, whatever values
the shape was first planned with."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dynaorm import GSI, Entity, Table, Versioned
from dynaorm.errors import DynaormError, KeyTemplateError
from dynaorm.read.keycond import KeyPlan, _plan_keys, plan_keys, skip_literals
from dynaorm.schema.entity import spec_of
from tests.support.alias_models import Game
from tests.support.examples import examples
from tests.support.models import SEvent, SOrder, User

#: a table with a type attribute, an index and a number sort key on another table
plans = Table("dynaorm-plans", indexes=[GSI("pgsi", pk="gpk", sk="gsk")])
numbered = Table("dynaorm-plans-n", key_types={"sk": "N"})
#: a table without a type attribute: a literal sort key outranks a template there
shapeless = Table("dynaorm-plans-shapeless", type_attribute=None,
                  indexes=[GSI("sgsi", pk="gpk", sk="gsk")])
#: a table without a sort key
flat = Table("dynaorm-plans-flat", sk=None)


class PlanRoomMsg(Entity):
    room: str
    day: str
    seq: int
    author: str

    class Meta:
        table = plans
        pk = "PROOM#{room}"
        sk = "MSG#{day}#{seq:05d}"
        indexes = {"pgsi": ("PAUTHOR#{author}", "{day}#{room}")}


class PlanDoc(Versioned):
    doc: str
    part: str

    class Meta:
        table = plans
        pk = "PDOC#{doc}"
        sk = "PART#{part}"


class PlanReading(Entity):
    group: str
    n: int

    class Meta:
        table = numbered
        pk = "PNUM#{group}"
        sk = "{n}"


class PlanShapeProfile(Entity):
    a: str

    class Meta:
        table = shapeless
        pk = "PSHAPE#{a}"
        sk = "PROFILE"


class PlanShapeAny(Entity):
    a: str
    b: str

    class Meta:
        table = shapeless
        pk = "PSHAPE#{a}"
        sk = "{b}"
        indexes = {"sgsi": ("PSHAPEB#{b}", "PROFILE")}


class PlanFlat(Entity):
    key: str

    class Meta:
        table = flat
        pk = "PFLAT#{key}"


#: an index that reuses the table's keys the other way round, typed keys of both kinds
inverted = Table("dynaorm-plans-inv", indexes=[GSI("inv", pk="sk", sk="pk")])
binary = Table("dynaorm-plans-b", key_types={"pk": "N", "sk": "B"})


class PlanInverted(Entity):
    """Conversions and format specs in both keys, the partition field reused in the sort
    key, and an index whose keys are the table's swapped."""

    a: str
    b: str
    n: int

    class Meta:
        table = inverted
        pk = "PINV#{a!u}"
        sk = "PINV#{a}#B#{b!l}#{n:03d}"
        key_only = ("a", "n")
        indexes = {"inv": ("PINV#{a}#B#{b!l}#{n:03d}", "PINV#{a!u}")}


class PlanVersionedIndexed(Versioned):
    """A versioned entity with an index (its latest copies are not what the index reads)."""

    who: str
    at: str

    class Meta:
        table = plans
        pk = "PVER#{who}"
        sk = "AT#{at}"
        indexes = {"pgsi": ("PVERAT#{at}", "{who}")}


class PlanBlob(Entity):
    """A number partition key and a binary sort key."""

    n: int
    digest: bytes

    class Meta:
        table = binary
        pk = "{n}"
        sk = "{digest}"


ENTITIES: list[tuple[type[Entity], list[str | None]]] = [
    (PlanRoomMsg, [None, "pgsi"]), (PlanDoc, [None]), (PlanReading, [None]),
    (PlanShapeProfile, [None]), (PlanShapeAny, [None, "sgsi"]), (PlanFlat, [None]),
    (SEvent, [None]), (User, [None, "gsi1"]), (SOrder, [None, "gsi1"]),
    (PlanInverted, [None, "inv"]), (PlanVersionedIndexed, [None, "pgsi"]),
    (PlanBlob, [None]), (Game, [None, "by_map"]),
]


def _names(entity: type[Entity]) -> list[str]:
    """The key template fields of ``entity`` (all its keys), ``shard`` and a stranger."""
    spec = spec_of(entity)
    templates = [spec.pk, spec.sk, *(t for i in spec.indexes for t in (i.pk, i.sk))]
    return sorted({f for t in templates if t is not None for f in t.fields} | {"shard",
                                                                                "other"})

VALUES = st.one_of(st.sampled_from(["r1", "2024-01", "PROFILE", "x#y", "", "v0_a", "AbC"]),
                   st.text(max_size=4), st.integers(-3, 100_000), st.none(),
                   st.binary(max_size=3), st.sampled_from([1.5, True, 10 ** 40]))


def _reference(entity: type[Entity], index: str | None, fields: dict[str, Any],
               latest: bool) -> KeyPlan:
    """The plain planning of ``plan_keys`` (no shape kept)."""
    spec = spec_of(entity)
    plan = _plan_keys(spec, index, fields, None, latest=latest)
    if index is None and spec.table.type_attribute is None and spec.literal_claims():
        return skip_literals(spec, plan)
    return plan


def _outcome(plan: Any) -> Any:
    """A plan, or the error it raised (class and message)."""
    try:
        return plan()
    except (DynaormError, TypeError, ValueError) as exc:
        return type(exc), str(exc)


@settings(max_examples=examples(600), deadline=None)
@given(data=st.data())
def test_a_query_planned_by_its_shape_plans_what_the_plain_planning_plans(
        data: st.DataObject) -> None:
    entity, indexes = data.draw(st.sampled_from(ENTITIES))
    index = data.draw(st.sampled_from(indexes))
    fields = data.draw(st.dictionaries(st.sampled_from(_names(entity)), VALUES, max_size=4))
    latest = data.draw(st.booleans()) and spec_of(entity).versioned
    spec = spec_of(entity)
    expected = _outcome(lambda: _reference(entity, index, fields, latest))
    for _ in range(2):  # cold (the shape made now, or by an earlier example), then warm
        assert _outcome(lambda: plan_keys(spec, index, fields, None, latest=latest)) == (
            expected)


def test_refused_field_names_stay_refused() -> None:
    spec = spec_of(User)
    for _ in range(2):
        with pytest.raises(KeyTemplateError, match="not key template fields"):
            plan_keys(spec, None, {"user_id": "u1", "email": "x"}, None)
        with pytest.raises(KeyTemplateError, match="needs partition key field"):
            plan_keys(spec, "gsi1", {"username": "ann"}, None)


def _redefined(source: str) -> type[Entity]:
    """A class ``PlanRedefined`` of this module, defined anew (it replaces the last one)."""

    class PlanRedefined(Entity):
        a: str
        b: str

        class Meta:
            table = plans
            pk = "PREDEF#{a}"
            sk = source

    return PlanRedefined


def test_a_class_defined_anew_plans_by_its_own_templates() -> None:
    """Shapes are kept per class: a class of the same name defined again in the same
    module (a notebook's cell run twice, a reloaded module) with other keys plans by its
    own, though the first one's shape for the same field names is kept."""
    first = _redefined("OLD#{b}")
    assert plan_keys(spec_of(first), None, {"a": "x", "b": "y"}, None).sk_values == (
        "OLD#y",)
    second = _redefined("NEW#{b}#")
    for _ in range(2):
        plan = plan_keys(spec_of(second), None, {"a": "x", "b": "y"}, None)
        assert (plan.sk_op, plan.sk_values) == ("=", ("NEW#y#",))
        assert plan == _reference(second, None, {"a": "x", "b": "y"}, False)
