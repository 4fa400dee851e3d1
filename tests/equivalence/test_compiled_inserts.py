"""An insert planned with what is compiled once per entity class plans and renders exactly
what the long way does (pure, no I/O; issue 91).

What an insert computes from its class alone is computed once: the condition that claims
a key where no live item is (``free``: on a table without a TTL, one object per key
attribute) and its text as the first expression of a request (``render_first``, which
``render_op`` takes). Random entity
classes (unique fields with a normalisation, a prefix or a scope, versioning,
timestamps, a TTL, another writer's lock, index keys, a revision attribute or none) and
random values, saved new (or overwriting, or with a job's mark): the plan made with warm
caches, rendered with the compiled texts, equals the same plan rendered the long way once
every cache is cleared, and the plan made then, op by op and byte by byte."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from itertools import product
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dynaorm import GSI, Entity, Table, Unique
from dynaorm.caches import clear_caches
from dynaorm.schema.entity import spec_of
from dynaorm.values.expressions import RENDERED_ALONE, Placeholders, free, render_first
from dynaorm.write.render import compile_commit, render_op, stamps
from dynaorm.write.save import SaveEntry
from tests.support.examples import examples

#: the instant both plans are made at (timestamps, and a TTL table's claim condition)
NOW = datetime(2026, 11, 29, 7, 0, tzinfo=UTC)
#: every unique field a class may declare (each a way a guard key is rendered)
UNIQUES = (Unique("email", normalize=str.lower), Unique("handle", prefix="h"),
           Unique("code", scope="ORG#{org}"))
#: the features a class combines: unique fields (a bit mask of UNIQUES), versioned,
#: timestamps, TTL, lock, index keys, revision attribute
FEATURES = st.tuples(st.integers(0, 7), *[st.booleans()] * 6)
TEXT = st.text("abcXYZ019-_.", min_size=1, max_size=12)
_CLASSES: dict[tuple[Any, ...], type[Entity]] = {}
_TABLES: dict[tuple[bool, bool], Table] = {}


def _entity(features: tuple[Any, ...]) -> type[Entity]:
    """The entity class of ``features`` (one a combination, on a table of its TTL and
    revision attribute)."""
    if features in _CLASSES:
        return _CLASSES[features]
    mask, versioned, timestamps, ttl, lock, indexed, revision = features
    table = _TABLES.get((ttl, revision))
    if table is None:
        table = _TABLES[ttl, revision] = Table(
            f"compiled-{int(ttl)}{int(revision)}", ttl="expires" if ttl else None,
            revision_attribute="_rev" if revision else None,
            indexes=[GSI("gsi1", pk="gsi1pk", sk="gsi1sk")])
    meta: dict[str, Any] = {"table": table, "pk": "E#{eid}", "sk": "E",
                            "unique": tuple(u for at, u in enumerate(UNIQUES) if mask >> at & 1)}
    annotations: dict[str, Any] = {"eid": str, "org": str, "email": str, "handle": str,
                                   "code": str, "n": int}
    namespace: dict[str, Any] = {"n": 0}
    if versioned:
        meta["versioned"] = True
        annotations["version"] = int
        namespace["version"] = 0
    if timestamps:
        meta["timestamps"] = ("created", "updated")
    if ttl:
        annotations["expires"] = datetime | None
        namespace["expires"] = None
    if lock:
        meta["lock"] = "lock_n"
        annotations["lock_n"] = int | None
        namespace["lock_n"] = None
    if indexed:
        meta["indexes"] = {"gsi1": ("ORG#{org}", "H#{handle}")}
    name = "C" + "".join(str(int(f)) for f in features)
    namespace.update(__annotations__=annotations, __module__=__name__, __qualname__=name,
                     Meta=type("Meta", (), {**meta, "__qualname__": f"{name}.Meta"}))
    cls = _CLASSES[features] = type(name, (Entity,), namespace)
    return cls


def _plan(entry: SaveEntry) -> list[Any]:
    """The ops of ``entry``'s insert."""
    return list(compile_commit([(entry, None)])[0].ops)


def _sent(ops: list[Any]) -> list[str]:
    """Each op's rendered request (JSON, in order)."""
    return [json.dumps(render_op(op, "r" * 16 if stamps(op) else None)) for op in ops]


@settings(max_examples=examples(150), deadline=None)
@given(features=FEATURES, eid=TEXT, org=TEXT, email=TEXT, handle=TEXT, code=TEXT,
       n=st.integers(-10**6, 10**6), expires=st.none() | st.datetimes(
           min_value=datetime(2000, 1, 1), max_value=datetime(2100, 1, 1), timezones=st.just(UTC)),
       overwrite=st.booleans(), mark=st.booleans())
def test_a_compiled_insert_plans_and_renders_what_the_long_way_does(
        features: tuple[Any, ...], eid: str, org: str, email: str, handle: str, code: str,
        n: int, expires: datetime | None, overwrite: bool, mark: bool) -> None:
    cls = _entity(features)
    values: dict[str, Any] = {"eid": eid, "org": org, "email": email, "handle": handle,
                              "code": code, "n": n}
    if features[3]:
        values["expires"] = expires
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("dynaorm.schema.rules.stamps.now", lambda: NOW)
        patch.setattr("dynaorm.values.expressions.time.time", NOW.timestamp)

        def entry() -> SaveEntry:
            return SaveEntry(cls(**values), overwrite=overwrite,
                             mark={"_job": {"S": "j1"}} if mark else None)

        _plan(entry())  # (warm: what is compiled once is compiled)
        compiled = _plan(entry())
        sent = _sent(compiled)
        # (each claim took its compiled text: on a table without a TTL, every condition
        # of an insert is one; with one, none is: its claim compares with the time now)
        hits = [op.condition in RENDERED_ALONE for op in compiled if op.condition is not None]
        clear_caches()  # (the long way: a cache is a memo, cleared it changes no result)
        long_way = _sent(compiled)
        planned = _plan(entry())
        assert _sent(planned) == sent
    assert sent == long_way
    assert [(type(op), op.key, getattr(op, "item", None), op.origin) for op in compiled] == [
        (type(op), op.key, getattr(op, "item", None), op.origin) for op in planned]
    assert hits == [not features[3]] * len(hits)


def test_every_feature_combination_defines_a_class() -> None:
    """The classes the property draws are all valid definitions (a refused one would
    fail every example drawing it, not test it)."""
    for features in product(range(8), *[(False, True)] * 6):
        cls = _entity(features)
        assert spec_of(cls).cls is cls


def test_a_claim_after_another_expression_is_rendered_the_long_way() -> None:
    """A claim that is not the first expression of its request (an update's, after its
    clauses) takes the placeholders that follow theirs, never the text computed once."""
    claim = free("pk", None)
    after = Placeholders()
    after.name("a")
    assert render_first(claim, after) == "attribute_not_exists(#n1)"
    assert after.names == {"#n0": "a", "#n1": "pk"}
    first = Placeholders()
    assert render_first(claim, first) == "attribute_not_exists(#n0)"
    assert first.names == {"#n0": "pk"}


def test_a_name_allocated_after_a_compiled_claim_takes_the_next_placeholder() -> None:
    """After the compiled text, the request's placeholders know ``#n0`` is the key's: a
    name allocated next is ``#n1``, never ``#n0`` again (the wrong attribute named)."""
    free("pk", None)  # (compiled)
    ph = Placeholders()
    assert render_first(free("pk", None), ph) == "attribute_not_exists(#n0)"
    assert ph.name("a") == "#n1"
    assert ph.name("pk") == "#n0"
    assert ph.names == {"#n0": "pk", "#n1": "a"}
