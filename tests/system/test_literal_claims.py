"""A save never stores an item that reads back as something else (table without a type
attribute): where another entity's key wins over the saving entity's templates (a
literal key beside a template, ``Meta.overlaps = "literal"``), the write is refused with
:class:`~dynaorm.errors.KeyTemplateError` before sending, as a key a rule's row kind
claims is (``EntitySpec.primary_key``). The engine-driven paths (sync, async,
``save_many``, update, delete, get) are in ``integration/test_key_precedence.py``; this
is the property over random pairs of templates (moto: it does not depend on the engine)."""

from __future__ import annotations

from collections.abc import Iterator
from itertools import count
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import dynaorm
from dynaorm import DynaormError, Session, Table
from dynaorm.errors import KeyTemplateError
from dynaorm.schema.templates import KeyTemplate
from dynaorm.testing import moto_backend, use_tables, worker_suffix
from tests.support.examples import examples

pytestmark = pytest.mark.sync_only

#: partition and sort key templates that meet one another: literals that are a
#: template's keys (``USER#admin`` within ``USER#{a}``), templates within templates
PKS = ["USER#{a}", "USER#admin", "USER#{a}#{b}", "USER#admin#{b}", "{a}", "USER#{b}",
       "USER#{a}|{b}"]
SKS = ["PROFILE", "{c}", "PROFILE#{c}", "P#{c}", "{c}#PROFILE", "PROFILE#1"]
_value = st.one_of(st.sampled_from(["admin", "PROFILE", "1", "P", "USER", "admin#1",
                                    "admin|1", "PROFILE#1"]),
                   st.text(st.sampled_from("admin#PROFILE1|"), min_size=1, max_size=6))
_names = count()


@pytest.fixture(scope="module")
def moto() -> Iterator[None]:
    with moto_backend():
        yield


def _keyed(home: Table, name: str, pk: str, sk: str) -> type[Any]:
    """An entity of ``home`` keyed ``pk``/``sk`` (each field a ``str``)."""
    fields = dict.fromkeys((*KeyTemplate.parse(pk).fields, *KeyTemplate.parse(sk).fields), str)
    body = {"table": home, "pk": pk, "sk": sk, "__qualname__": f"{name}.Meta",
            "__module__": __name__}
    return type(name, (dynaorm.Entity,), {"__annotations__": fields, "__module__": __name__,
                                          "__qualname__": name,
                                          "Meta": type("Meta", (), body)})


def _read_back(home: Table, cls: type[Any], obj: Any) -> None:
    """``obj``, just saved, is read back as ``cls`` by a get and by a query of its
    partition, with equal values."""
    spec = cls.__dynaorm_spec__
    s = Session(home)
    keys = {f: getattr(obj, f) for f in spec.lookup_fields}
    got = s.get(cls, **keys)
    assert type(got) is cls and got == obj
    found = s.query(cls, **{f: keys[f] for f in spec.pk.fields}).all()
    assert obj in found and all(type(x) is cls for x in found)


@settings(deadline=None, suppress_health_check=list(HealthCheck), max_examples=examples(120))
@given(first=st.tuples(st.sampled_from(PKS), st.sampled_from(SKS)),
       second=st.tuples(st.sampled_from(PKS), st.sampled_from(SKS)),
       values=st.fixed_dictionaries({k: _value for k in "abc"}),
       order=st.booleans())
@example(first=("USER#{a}", "PROFILE"), second=("USER#admin", "PROFILE"),
         values={"a": "admin", "b": "1", "c": "1"}, order=True)
@example(first=("USER#{a}", "{c}"), second=("USER#{a}", "PROFILE"),
         values={"a": "admin", "b": "1", "c": "PROFILE"}, order=True)
def test_a_save_is_refused_or_read_back_as_the_same_entity(
        moto: None, first: tuple[str, str], second: tuple[str, str], values: dict[str, str],
        order: bool) -> None:
    """Two entities on a table without a type attribute, keyed by random templates (a
    pair no precedence ranks is refused when the class is defined): a save of either,
    with random values (the other's literal, separators), is refused with
    ``KeyTemplateError`` before sending, or the item reads back, by a get and by a
    query, as the same entity with equal values (``USER#{a}`` with ``a="admin"`` beside
    a literal ``USER#admin`` was stored, told it was, and read back as the literal's)."""
    n = next(_names)
    home = Table(f"lit-claims-{n}", pk="PK", sk="SK", type_attribute=None)
    try:
        classes = [_keyed(home, f"LitA{n}", *first), _keyed(home, f"LitB{n}", *second)]
    except DynaormError:
        return  # (no precedence tells the two apart: refused at definition)
    with use_tables(home, name_suffix=worker_suffix()):
        for cls in classes if order else classes[::-1]:
            obj = cls(**{f: values[f] for f in cls.model_fields})
            try:
                with Session(home) as s:
                    s.save(obj)
            except KeyTemplateError:
                continue  # (refused before sending: a key its templates cannot hold)
            _read_back(home, cls, obj)


def test_a_literal_defined_after_the_template_was_used_claims_its_key() -> None:
    """What may claim an entity's keys is found once per spec and the table's classes: a
    literal entity defined after the template's keys were rendered is seen by the next
    render (the claims found before it no longer hold), and one redefined without the
    literal releases the key."""
    home = Table("lit-claims-late", pk="PK", sk="SK", type_attribute=None)
    user = _keyed(home, "LitLateUser", "USER#{a}", "PROFILE").__dynaorm_spec__
    assert user.primary_key({"a": "admin"}) == {"PK": "USER#admin", "SK": "PROFILE"}
    _keyed(home, "LitLateAdmin", "USER#admin", "PROFILE")
    with pytest.raises(KeyTemplateError, match="is LitLateAdmin's literal key"):
        user.primary_key({"a": "admin"})
    assert user.primary_key({"a": "ada"}) == {"PK": "USER#ada", "SK": "PROFILE"}
    _keyed(home, "LitLateAdmin", "ADMIN#root", "PROFILE")  # (redefined: the same class name)
    assert user.primary_key({"a": "admin"}) == {"PK": "USER#admin", "SK": "PROFILE"}
