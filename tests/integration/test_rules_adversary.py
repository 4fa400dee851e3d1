"""The adversary of contract 20's "rules on every write": hypothesis makes models with
constrained fields (a bounded counter with ``multiple_of``, a list and a set with length
bounds, a nested model's bounded counter, a map of bounded numbers), plain (updated by
key) or versioned (read first, planned as saves), and random sequences of updates
(``add``, ``append``, ``prepend``, a set's ``add``/``discard``, nested paths, map keys
set, added to, removed, set by default). After each update, what is stored is exactly
what pydantic's own verdict on the result says: the result when pydantic accepts it, the
state before (and a typed error, never a raw one from the commit) when it refuses.
"""

from __future__ import annotations

import itertools
from typing import Annotated, Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, Field, ValidationError, create_model

from dynaorm import ConditionFailedError, Entity, F, InvalidValueError
from dynaorm.testing import TestBackend
from tests.support.examples import examples
from tests.support.models import app

_NAMES = itertools.count()
_LETTERS = st.text("abcd", min_size=1, max_size=1)


def _entity(lo: int | None, hi: int | None, mult: int | None, lmin: int | None,
            lmax: int | None, smin: int | None, smax: int | None, nlo: int | None,
            nhi: int | None, mge: int | None, versioned: bool) -> type[Entity]:
    i = next(_NAMES)
    inner: type[BaseModel] = create_model(f"AdvInner{i}", n=(int, Field(0, ge=nlo, le=nhi)))

    class Meta:
        table = app
        pk = f"ADV{i}#{{kid}}"
        sk = "ADV"

    Meta.versioned = versioned  # (its updates are read first and planned as saves)
    Meta.__qualname__ = f"Adv{i}.Meta"  # (pydantic leaves a class's own inner class alone)
    namespace: dict[str, Any] = {
        "__module__": __name__, "__qualname__": f"Adv{i}", "Meta": Meta,
        "__annotations__": {"kid": str, "c": int, "l": list[str], "s": set[str],
                            "inner": inner, "m": dict[str, Annotated[int, Field(ge=mge)]],
                            "version": int},
        "version": 0,
        "c": Field(0, ge=lo, le=hi, multiple_of=mult),
        "l": Field(default_factory=lambda: ["x"] * (lmin or 0), min_length=lmin,
                   max_length=lmax),
        "s": Field(default_factory=set, min_length=smin, max_length=smax),
        "inner": Field(default_factory=inner), "m": Field(default_factory=dict)}
    return type(f"Adv{i}", (Entity,), namespace)


MODELS = st.builds(
    _entity, lo=st.sampled_from([None, -4, 0]), hi=st.sampled_from([None, 0, 5]),
    mult=st.sampled_from([None, 2, 3]), lmin=st.sampled_from([None, 1]),
    lmax=st.sampled_from([None, 2, 3]), smin=st.sampled_from([None, 1]),
    smax=st.sampled_from([None, 2]), nlo=st.sampled_from([None, 0]),
    nhi=st.sampled_from([None, 3]), mge=st.sampled_from([None, 0]), versioned=st.booleans())

NUMBER = st.integers(-6, 6)
ACTION = st.one_of(
    st.tuples(st.just("add"), st.just("c"), NUMBER),
    st.tuples(st.sampled_from(["append", "prepend"]), st.just("l"),
              st.lists(_LETTERS, max_size=3)),
    st.tuples(st.sampled_from(["add", "discard"]), st.just("s"),
              st.sets(_LETTERS, min_size=1, max_size=3)),
    st.tuples(st.sampled_from(["add", "set"]), st.just("inner.n"), NUMBER),
    st.tuples(st.sampled_from(["add", "set", "set_default", "remove"]),
              st.sampled_from(["m.a", "m.b"]), NUMBER))


def _expected(before: dict[str, Any], method: str, path: str, value: Any) -> dict[str, Any]:
    """The result as Python computes it (what DynamoDB's action means)."""
    data = {**before, "l": list(before["l"]), "s": set(before["s"]),
            "inner": dict(before["inner"]), "m": dict(before["m"]), "version": 0}
    head, _, key = path.partition(".")
    scope, name = (data, head) if not key else (data[head], key)
    old = scope.get(name)
    if method == "remove":
        scope.pop(name, None)
    elif method == "set" or (method == "set_default" and old is None):
        scope[name] = value
    elif method == "add":
        scope[name] = (old or set()) | value if isinstance(value, set) else (old or 0) + value
    elif method == "discard":
        scope[name] = old - value
    elif method in ("append", "prepend"):
        scope[name] = old + value if method == "append" else value + old
    return data


@settings(max_examples=examples(60), deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(cls=MODELS, actions=st.lists(ACTION, min_size=1, max_size=5))
def test_what_is_stored_is_exactly_what_pydantic_accepts(
        db: TestBackend, cls: type[Entity], actions: list[tuple[str, str, Any]]) -> None:
    with db.session() as s:  # (an empty set is stored as an empty list: ADD cannot take it)
        s.save(cls(kid="k", s={"z"}))
    for method, path, value in actions:
        before = db.session().get(cls, kid="k")
        assert before is not None
        expected = _expected(before.model_dump(), method, path, value)
        try:
            verdict: Entity | None = cls.model_validate(expected)
        except ValidationError:
            verdict = None
        s = db.session()
        u = s.update(cls, kid="k")
        try:
            if method == "remove":
                u.remove(F(path))
            else:
                getattr(u, method)(F(path), value)
            s.commit()
            refused = None
        except (InvalidValueError, ConditionFailedError, ValidationError) as exc:
            refused = exc
        stored = db.session().get(cls, kid="k")
        if verdict is None:
            assert refused is not None, (method, path, value, expected, stored)
            assert stored == before, (method, path, value)
        else:
            assert refused is None, (method, path, value, expected, refused)
            assert stored is not None and u.result == stored, (method, path, value)
            assert stored.model_dump(exclude={"version"}) == verdict.model_dump(
                exclude={"version"}), (method, path, value)
