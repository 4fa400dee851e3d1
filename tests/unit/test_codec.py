"""The codec (contract section 2, "Stored item"): hypothesis properties over
encode_value/decode_value, refused values. No I/O: every supported type saved and read back
on the engines is in tests/integration/test_stored_values.py."""

from __future__ import annotations

import enum
from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dynaorm.errors import InvalidValueError
from dynaorm.values.codec import decode_item, decode_value, encode_fields, encode_value
from tests.support.examples import examples

_json = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-10**30, max_value=10**30)
    | st.text(max_size=20)
    | st.decimals(allow_nan=False, allow_infinity=False, places=6,
                  min_value=Decimal("-1e12"), max_value=Decimal("1e12")),
    lambda children: st.lists(children, max_size=5)
    | st.dictionaries(st.text(max_size=10), children, max_size=5),
    max_leaves=25,
)


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return isinstance(b, list) and len(a) == len(b) and all(map(_same, a, b))
    return bool(a == b)


@settings(max_examples=examples(50), deadline=None)
@given(value=_json)
def test_encode_decode_round_trip(value: Any) -> None:
    assert _same(decode_value(encode_value(value)), value)


@settings(max_examples=examples(50), deadline=None)
@given(value=st.floats(allow_nan=False, allow_infinity=False))
def test_floats_round_trip_exactly(value: float) -> None:
    decoded = decode_value(encode_value(value))
    assert float(decoded) == value


@settings(max_examples=examples(50), deadline=None)
@given(strings=st.sets(st.text(max_size=10), min_size=1, max_size=6),
       numbers=st.sets(st.integers(min_value=-10**9, max_value=10**9), min_size=1, max_size=6))
def test_sets_round_trip(strings: set[str], numbers: set[int]) -> None:
    assert decode_value(encode_value(strings)) == strings
    assert decode_value(encode_value(numbers)) == numbers


@settings(max_examples=examples(50), deadline=None)
@given(data=st.dictionaries(st.text(min_size=1, max_size=8), _json, max_size=6))
def test_encode_fields_leaves_out_none(data: dict[str, Any]) -> None:
    item = encode_fields(data)
    assert set(item) == {k for k, v in data.items() if v is not None}
    decoded = decode_item(item)
    assert all(_same(decoded[k], data[k]) for k in item)


NON_FINITE = [float("nan"), float("inf"), float("-inf"), Decimal("NaN"), Decimal("sNaN"),
              Decimal("Infinity"), Decimal("-Infinity")]


@pytest.mark.parametrize("bad", NON_FINITE, ids=repr)
def test_non_finite_numbers_are_refused_with_the_public_error(bad: Any) -> None:
    # (0.3) the public InvalidValueError, wherever the number sits: alone, in a list, a
    # map, a set
    for value in (bad, [1, bad], {"a": {"b": bad}}, {Decimal(1), bad} if isinstance(
            bad, Decimal) and not bad.is_nan() else [bad]):
        with pytest.raises(InvalidValueError, match="cannot store the number") as err:
            encode_value(value)
        assert type(err.value) is InvalidValueError  # not a private class


class _Opaque:
    def __repr__(self) -> str:
        raise RuntimeError("a hostile repr")


@pytest.mark.parametrize("bad", [object(), _Opaque(), complex(1, 2), range(3),
                                 [1, object()], {"k": object()}, {1, "mixed", 2.5j}],
                         ids=lambda v: type(v).__name__)
def test_unsupported_type_is_refused_with_the_public_error(bad: Any) -> None:
    with pytest.raises(InvalidValueError, match="cannot store a value of type") as err:
        encode_value(bad)
    assert type(err.value) is InvalidValueError


def test_encode_fields_names_the_field_of_a_refused_value() -> None:
    with pytest.raises(InvalidValueError, match=r"Thing field 'x': .*nan") as err:
        encode_fields({"a": 1, "x": float("nan")}, "Thing")
    assert type(err.value) is InvalidValueError
    long = {"blob": object(), "big": "x" * 1000}
    with pytest.raises(InvalidValueError, match="blob") as err:
        encode_fields(long, "Thing")
    assert len(str(err.value)) < 200


def test_datetime_encodes_as_iso_string() -> None:
    at = datetime(2024, 1, 2, 3, 4, 5, tzinfo=UTC)
    assert encode_value(at) == {"S": "2024-01-02T03:04:05+00:00"}
    assert encode_value(date(2024, 1, 2)) == {"S": "2024-01-02"}


class _Colour(enum.Enum):
    RED = "red"


@pytest.mark.parametrize("bad", [
    {1: "a", "1": "b"},       # two keys one string: one would be lost
    {(2, 3): "x"},
    {None: "x"},
    {b"k": "x"},
    {"outer": {1: "x"}},      # nested in a map
    [{2.5: "x"}],             # nested in a list
    {_Colour.RED: 1, "red": 2},  # an enum key and its value: one stored key twice
])
def test_a_map_with_a_key_that_is_not_a_string_is_refused(bad: Any) -> None:
    # (0.4) DynamoDB's map keys are strings; turning another key into one changed the
    # value silently ({1: "a", "1": "b"} was stored as {"1": "b"})
    with pytest.raises(InvalidValueError, match="map key"):
        encode_value(bad)


def test_string_and_string_enum_map_keys_are_stored_as_their_text() -> None:
    class Name(str):
        def __str__(self) -> str:
            return "not the text"

    assert encode_value({Name("a"): 1, _Colour.RED: 2}) == {
        "M": {"a": {"N": "1"}, "red": {"N": "2"}}}


def test_the_registry_finds_a_kind_by_value_and_by_annotation() -> None:
    # (0.5) one registry of kinds (dynaorm.values.codec): a value's kind encodes it, a
    # field annotation's kind says which update actions fit; a registered type is found
    # both ways, Optional and Annotated seen through
    from collections.abc import Sequence
    from typing import Annotated

    from dynaorm.values.codec import kind_of
    from tests.support.money import MONEY, Money

    assert encode_value(Money(5)) == {"N": "5"}
    assert encode_value([Money(1), {"m": Money(2)}]) == {
        "L": [{"N": "1"}, {"M": {"m": {"N": "2"}}}]}
    assert kind_of(Money) is MONEY and kind_of(Money | None) is MONEY
    assert kind_of(Annotated[Money | None, "x"]) is MONEY and "add" in MONEY.actions
    number = kind_of(int)
    assert number is not None and kind_of(int | Decimal | None) is number
    assert kind_of(bool) is not number and kind_of(str | int) is None
    assert set(kind_of(frozenset[str]).actions) == {"add", "discard"}  # type: ignore[union-attr]
    assert set(kind_of(Sequence[int]).actions) == {"append", "prepend"}  # type: ignore[union-attr]
    assert kind_of(tuple[int, ...]) is None  # (stored as a list, but no list actions)
