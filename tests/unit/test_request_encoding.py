"""The wire's request body and a receipt's JSON are encoded by the C encoder called directly
(issue 70: ``JSONEncoder.encode`` made a new one on every request): the bytes are exactly
``JSONEncoder.encode``'s with the same options, for any tree a request or a receipt holds
(text of any characters, numbers, binary, nested maps and lists, in any order)."""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from dynaorm.schema.rules import receipts
from dynaorm.wire import _blob, render

_LEAVES = st.one_of(st.text(), st.integers(), st.booleans(), st.none(), st.binary(max_size=40),
                    st.floats(allow_nan=True, allow_infinity=True))
_TREES = st.recursive(_LEAVES, lambda inner: st.one_of(
    st.lists(inner, max_size=5), st.dictionaries(st.text(max_size=12), inner, max_size=5)),
    max_leaves=40)


@settings(max_examples=100, deadline=None)
@given(st.dictionaries(st.text(max_size=12), _TREES, max_size=6))
def test_a_request_body_is_what_the_generic_encoder_makes(request: dict[str, Any]) -> None:
    generic = json.JSONEncoder(separators=(",", ":"), default=_blob, check_circular=False)
    assert render(request) == generic.encode(request).encode("utf-8")


@settings(max_examples=80, deadline=None)
@given(st.recursive(st.one_of(_LEAVES, st.decimals(allow_nan=False)), lambda inner: st.one_of(
    st.lists(inner, max_size=5), st.tuples(inner, inner),
    st.dictionaries(st.text(max_size=12), inner, max_size=5)), max_leaves=40))
def test_a_receipts_json_is_what_the_generic_encoder_makes(value: Any) -> None:
    generic = json.JSONEncoder(separators=(",", ":"), default=receipts._text,
                               check_circular=False)
    assert receipts._encoded(value) == generic.encode(value)


def test_what_json_cannot_encode_is_refused_alike() -> None:
    try:
        render({"x": object()})
    except TypeError as exc:
        assert "cannot render object" in str(exc)
    else:
        raise AssertionError("rendered an object JSON has no form for")
    assert receipts._encoded([Decimal("1.5"), b"\x00"]) == '["1.5","AA=="]'
