"""The condition evaluator (``dynaorm.values.expressions.holds``) follows DynamoDB's rules on an
encoded item. No I/O: that it agrees with the engines is in
tests/integration/test_conditions.py."""

from __future__ import annotations

from typing import Any

import pytest

from dynaorm import F
from dynaorm.values.codec import encode_value
from dynaorm.values.expressions import holds

ITEM = {k: encode_value(v) for k, v in {
    "n": 5, "s": "hello", "tags": {"a", "b"}, "l": ["x", 1], "m": {"k": "v"}, "z": None}.items()}


@pytest.mark.parametrize(("cond", "expected"), [
    (F("n") == 5, True), (F("n") == "5", False), (F("n") != 4, True), (F("n") < 6, True),
    (F("n") >= 6, False), (F("s") > "a", True), (F("s") < 3, False),
    (F("n").between(1, 5), True), (F("n").between(6, 9), False),
    (F("s").begins_with("he"), True), (F("s").contains("ll"), True),
    (F("tags").contains("a"), True), (F("tags").contains("c"), False),
    (F("l").contains("x"), True), (F("m.k") == "v", True), (F("m.q").exists(), False),
    (F("missing").not_exists(), True), (F("missing") != 1, True), (F("z").exists(), True),
    (F("n").is_in(1, 5), True), (F("tags") == {"b", "a"}, True),
    ((F("n") == 5) & (F("s") == "no"), False), ((F("n") == 5) | (F("s") == "no"), True),
    (~(F("n") == 5), False),
])
def test_evaluator_follows_dynamodb(cond: Any, expected: bool) -> None:
    assert holds(cond, ITEM) is expected


def test_evaluator_on_no_item() -> None:
    assert holds(F("n").not_exists(), None) is True
    assert holds(F("n") == 1, None) is False
