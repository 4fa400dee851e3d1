"""The read path's decoding shortcuts give exactly what the plain way gives (issue 70): the
wire's decoding of an answer's bytes (a one-byte search before the longer ones for binary
tags, the top level's ``null`` members looked for among its values rather than in the
bytes) against the long way (both tags and ``null`` searched in the bytes, as 0.7 did).
Generated answers: binary values and strings or keys that look like their tags, ``null``
members, numbers in odd spellings, nested maps and lists, escaped keys, other spacing.
No engine: pure code."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from dynaorm.wire import decode
from tests.support.decoding import old_decode
from tests.support.examples import examples


def outcome(read: Callable[[bytes], dict[str, Any]], body: bytes) -> object:
    """What ``read`` makes of ``body``: the answer, or that it is refused (a
    ``ValueError``: not an object, a binary value that is not base64...)."""
    try:
        return read(body)
    except ValueError:
        return ValueError


def _b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode()


TEXT = st.sampled_from(["B", "BS", "N", "null", "Bob", '"B"', "", "x", "\u00e9B"]) | st.text(
    max_size=6)
NUMBER = st.sampled_from(["0", "-0", "1.50", "1E+2", "1e-130", "9" * 38, "0.100000001",
                          "-3.40282347e+38", "12345678901234567890"])


def values(depth: int = 2) -> st.SearchStrategy[Any]:
    """DynamoDB JSON attribute values, binary ones base64 encoded, and maps whose keys
    look like tags."""
    leaf = st.one_of(
        st.builds(lambda s: {"S": s}, TEXT), st.builds(lambda n: {"N": n}, NUMBER),
        st.builds(lambda b: {"B": _b64(b)}, st.binary(max_size=6)),
        st.builds(lambda bs: {"BS": [_b64(b) for b in bs]},
                  st.lists(st.binary(max_size=4), min_size=1, max_size=3, unique=True)),
        st.builds(lambda b: {"BOOL": b}, st.booleans()), st.just({"NULL": True}),
        st.builds(lambda ss: {"SS": ss}, st.lists(TEXT, min_size=1, max_size=3, unique=True)))
    if depth == 0:
        return leaf
    inner = values(depth - 1)
    return st.one_of(leaf, st.builds(lambda m: {"M": m}, st.dictionaries(TEXT, inner,
                                                                         max_size=3)),
                     st.builds(lambda xs: {"L": xs}, st.lists(inner, max_size=3)))


ITEMS = st.dictionaries(st.sampled_from(["pk", "sk", "_type", "B", "BS", "v", "n"]), values(),
                        max_size=5)
ANSWERS = st.one_of(
    st.builds(lambda item, cap: {"Item": item, "ConsumedCapacity": cap}, ITEMS,
              st.none() | st.just({"TableName": "app", "CapacityUnits": 0.5})),
    st.builds(lambda items, last: {"Items": items, "Count": len(items), "LastEvaluatedKey": last},
              st.lists(ITEMS, max_size=3), st.none() | ITEMS),
    st.builds(lambda hits, cap: {"SearchResults": [{"Item": i, "Score": s} for i, s in hits],
                                 "ConsumedCapacity": cap},
              st.lists(st.tuples(ITEMS, st.floats(0, 2)), max_size=3),
              st.none() | st.just({"VectorSearchRequestBytes": 1024.0})),
    st.dictionaries(TEXT, st.none() | st.integers() | TEXT | ITEMS, max_size=4))


@settings(max_examples=examples(400), deadline=None)
@given(answer=ANSWERS, ascii_only=st.booleans(), spaced=st.booleans())
def test_an_answers_bytes_decode_as_the_long_way_decodes_them(
        answer: dict[str, Any], ascii_only: bool, spaced: bool) -> None:
    body = json.dumps(answer, ensure_ascii=ascii_only,
                      separators=(", ", ": ") if spaced else (",", ":")).encode()
    assert outcome(decode, body) == outcome(old_decode, body)


@settings(max_examples=examples(200), deadline=None)
@given(answer=ANSWERS)
def test_an_escaped_tag_decodes_as_the_long_way_decodes_it(answer: dict[str, Any]) -> None:
    """A tag spelt with an escape (``"\\u0042"``) is a tag to either way, as to botocore."""
    body = json.dumps(answer).replace('"B"', '"\\u0042"').encode()
    assert outcome(decode, body) == outcome(old_decode, body)
