"""The codec (contract section 2, "Stored item"): hypothesis properties over
encode_value/decode_value, refused values. No I/O: every supported type saved and read back
on the engines is in tests/integration/test_stored_values.py."""

from __future__ import annotations

from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dynaorm.model.codec import decode_item, decode_value, encode_fields, encode_value

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


@settings(max_examples=50, deadline=None)
@given(value=_json)
def test_encode_decode_round_trip(value: Any) -> None:
    assert _same(decode_value(encode_value(value)), value)


@settings(max_examples=50, deadline=None)
@given(value=st.floats(allow_nan=False, allow_infinity=False))
def test_floats_round_trip_exactly(value: float) -> None:
    decoded = decode_value(encode_value(value))
    assert float(decoded) == value


@settings(max_examples=50, deadline=None)
@given(strings=st.sets(st.text(max_size=10), min_size=1, max_size=6),
       numbers=st.sets(st.integers(min_value=-10**9, max_value=10**9), min_size=1, max_size=6))
def test_sets_round_trip(strings: set[str], numbers: set[int]) -> None:
    assert decode_value(encode_value(strings)) == strings
    assert decode_value(encode_value(numbers)) == numbers


@settings(max_examples=50, deadline=None)
@given(data=st.dictionaries(st.text(min_size=1, max_size=8), _json, max_size=6))
def test_encode_fields_leaves_out_none(data: dict[str, Any]) -> None:
    item = encode_fields(data)
    assert set(item) == {k for k, v in data.items() if v is not None}
    decoded = decode_item(item)
    assert all(_same(decoded[k], data[k]) for k in item)


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), Decimal("NaN"), Decimal("-Infinity")])
def test_non_finite_numbers_are_refused(bad: Any) -> None:
    with pytest.raises(ValueError):
        encode_value(bad)


def test_unsupported_type_is_refused() -> None:
    with pytest.raises(TypeError):
        encode_value(object())


def test_datetime_encodes_as_iso_string() -> None:
    at = datetime(2024, 1, 2, 3, 4, 5, tzinfo=UTC)
    assert encode_value(at) == {"S": "2024-01-02T03:04:05+00:00"}
    assert encode_value(date(2024, 1, 2)) == {"S": "2024-01-02"}
