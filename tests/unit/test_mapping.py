"""Pure parts of mapping any table (contract 14): one-field templates, typed key values,
condition renaming, TTL values, literal-over-template precedence and the fields a key
gives back exactly (contract 18)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from decimal import Decimal

import pytest
from pydantic import BaseModel, Field

from dynaorm import F, InvalidValueError, KeyTemplateError
from dynaorm.schema.checks import literal_outranks, stored_names
from dynaorm.schema.templates import KeyTemplate
from dynaorm.values.expressions import Placeholders, rename_paths
from dynaorm.values.keys import BinaryKey, NumberKey, key_av, key_order, key_value
from dynaorm.values.ttl import encode_ttl, expired


def test_a_one_field_template_may_hold_hash() -> None:
    assert KeyTemplate.parse("{invoice}").render({"invoice": "I#1420"}) == "I#1420"
    assert KeyTemplate.parse("{invoice}").parse_key("I#1420") == {"invoice": "I#1420"}
    with pytest.raises(KeyTemplateError, match="contains '#'"):
        KeyTemplate.parse("INV#{invoice}").render({"invoice": "I#1420"})
    with pytest.raises(KeyTemplateError, match="is empty"):
        KeyTemplate.parse("{invoice}").render({"invoice": ""})


def test_typed_templates_render_typed_values() -> None:
    n = KeyTemplate.parse("{id}", key_type="N")
    assert isinstance(n.render({"id": 7}), NumberKey)
    assert key_av(n.render({"id": Decimal("1.50")})) == {"N": "1.50"}
    assert n.parse_key(NumberKey("12")) == {"id": "12"}
    assert n.parse_key("12") is None  # a string key never fits a number template
    with pytest.raises(KeyTemplateError, match="not a number"):
        n.render({"id": "abc"})
    with pytest.raises(KeyTemplateError, match="not a number key"):
        n.render({"id": True})
    b = KeyTemplate.parse("{d}", key_type="B")
    assert key_av(b.render({"d": b"\x01"})) == {"B": b"\x01"}
    with pytest.raises(KeyTemplateError, match="non-empty bytes"):
        b.render({"d": b""})
    with pytest.raises(KeyTemplateError, match="exactly one field"):
        KeyTemplate.parse("{id:05d}", key_type="N")


def test_key_values_round_trip_and_order() -> None:
    for av in ({"S": "a#b"}, {"N": "10"}, {"B": b"\x00"}):
        assert key_av(key_value(av)) == av
    values = [NumberKey("10"), NumberKey("9"), NumberKey("-1.5")]
    assert sorted(values, key=key_order) == ["-1.5", "9", "10"]
    assert key_order(BinaryKey(b"\x01")) < key_order(BinaryKey(b"\x02"))


def test_conditions_are_renamed_to_stored_names() -> None:
    cond = ((F("level") > 3) & ~F("tags.first").exists()) | F("name").is_in("a", "b")
    renamed = rename_paths(cond, {"level": "lvl", "tags": "t"})
    ph = Placeholders()
    text = renamed.render(ph)
    assert text == "((#n0 > :v0) AND (NOT (attribute_exists(#n1.#n2)))) OR (#n3 IN (:v1, :v2))"
    assert ph.names == {"#n0": "lvl", "#n1": "t", "#n2": "first", "#n3": "name"}
    assert rename_paths(cond, {}) is cond


def test_stored_names_come_from_alias_or_serialization_alias() -> None:
    class M(BaseModel):
        a: int = Field(alias="A")
        b: int = Field(serialization_alias="B")
        c: int = Field(validation_alias="C")  # reading only: not a stored name
        d: int = 0

    assert stored_names(M) == {"a": "A", "b": "B"}


def test_ttl_values() -> None:
    at = datetime(2030, 1, 1, 12, tzinfo=timezone(timedelta(hours=2)))
    assert encode_ttl(at, "E", "exp") == int(at.timestamp()) == 1893492000
    assert encode_ttl(5, "E", "exp") == 5 and encode_ttl(None, "E", "exp") is None
    with pytest.raises(InvalidValueError, match=r"E field 'exp'.*naive"):
        encode_ttl(datetime(2030, 1, 1), "E", "exp")
    with pytest.raises(InvalidValueError, match="epoch seconds"):
        encode_ttl("soon", "E", "exp")
    now = datetime.now(UTC).timestamp()
    assert expired({"exp": {"N": str(int(now) - 1)}}, "exp")
    assert not expired({"exp": {"N": str(int(now) + 60)}}, "exp")
    assert not expired({"exp": {"S": "x"}}, "exp") and not expired({}, "exp")
    assert not expired({"exp": {"N": "1"}}, None)


def _t(source: str | None) -> KeyTemplate | None:
    return None if source is None else KeyTemplate.parse(source)


@pytest.mark.parametrize(("a", "b", "wins"), [
    (("STORE#{id}", "METADATA"), ("STORE#{id}", "{timestamp}"), True),
    (("STORE#{id}", "{timestamp}"), ("STORE#{id}", "METADATA"), False),
    (("CONFIG", "{name}"), ("{tenant}", "{name}"), True),       # a literal partition key
    (("CONFIG", "{name}"), ("{tenant}", "LATEST"), False),      # each wins one part: neither
    (("{tenant}", "LATEST"), ("CONFIG", "{name}"), False),
    (("STORE#{id}", "ORDER#{o}"), ("STORE#{id}", "{any}"), False),  # two templates
    (("STORE#{id}", "METADATA"), ("STORE#{id}", "METADATA"), False),  # the same literal
    (("SETTINGS", None), ("{anything}", None), True),            # a table without a sort key
])
def test_a_literal_outranks_a_template(a: tuple[str, str | None], b: tuple[str, str | None],
                                       wins: bool) -> None:
    pk_a, sk_a = _t(a[0]), _t(a[1])
    pk_b, sk_b = _t(b[0]), _t(b[1])
    assert pk_a is not None and pk_b is not None
    assert literal_outranks(pk_a, sk_a, pk_b, sk_b) is wins


def test_exact_fields_are_those_a_key_gives_back_unchanged() -> None:
    assert KeyTemplate.parse("A#{a}#{b!u}#{c:06d}#{d:%Y}#{e:>4}").exact_fields == {"a", "c"}
    assert KeyTemplate.parse("{n}", key_type="N").exact_fields == {"n"}
    assert KeyTemplate.parse("PROFILE").exact_fields == frozenset()
