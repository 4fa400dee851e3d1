"""The red team of issue 80: ``dynaorm.keys``, the public key grammar, as properties over
random templates and values. A key rendered from values parses back to the texts it
rendered (and renders again to itself); the prefix that proves a scope value is never
the start of a key of another value; a version row's sort key read back
(:func:`dynaorm.keys.parse_version_sk`) is the inverse of the one dynaorm writes: it
reads back only what it writes (Unicode digits were read as a version, or raised
``ValueError``), whatever text a stored item holds."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from dynaorm import KeyTemplateError, keys
from dynaorm.schema.rules.versioned import version_sk
from tests.support.examples import examples

ALPHABET = "A#-:_xK"
CONVERT = {"u": str.upper, "l": str.lower, None: lambda text: text}
literals = st.text(alphabet=ALPHABET + "{}", min_size=1, max_size=3).map(
    lambda s: s.replace("{", "{{").replace("}", "}}"))
values = st.text(alphabet=ALPHABET + "ab\u212a\u0130\u00df", max_size=4)


@st.composite
def templates(draw: Any) -> tuple[str, int]:
    """A template of 1 to 3 fields ``f0``, ``f1``..., each with or without ``!u``/``!l``,
    between literals of separators and letters (a leading or trailing literal or not)."""
    count = draw(st.integers(1, 3))
    parts = [draw(literals)] if draw(st.booleans()) else []
    for i in range(count):
        parts.append(f"{{f{i}{draw(st.sampled_from(['', '!u', '!l']))}}}")
        if i < count - 1 or draw(st.booleans()):
            parts.append(draw(literals))
    return "".join(parts), count


@settings(max_examples=examples(60), deadline=None)
@given(templates(), st.lists(values, min_size=3, max_size=3),
       st.lists(values, min_size=3, max_size=3))
def test_a_rendered_key_parses_back_and_a_scope_prefix_proves_its_value(
        template: tuple[str, int], one: list[str], other: list[str]) -> None:
    source, count = template
    parsed = keys.parse(source)
    fields = [s for s in parsed.segments if not isinstance(s, str)]
    a = {f"f{i}": one[i] for i in range(count)}
    b = {f"f{i}": other[i] for i in range(count)}
    try:
        key, key_b = parsed.render(a), parsed.render(b)
    except KeyTemplateError:
        return  # (a value holding a separator of its field, or empty: refused)
    texts = parsed.parse_key(key)
    assert texts == {f.name: CONVERT[f.conversion](a[f.name]) for f in fields}
    assert parsed.render(texts) == key
    proven = parsed.scope_prefix(("f0",))
    if proven is not None:
        parts, exact = proven
        head = CONVERT[fields[0].conversion]
        prefix = "".join(head(a["f0"]) if p == "{f0}" else p for p in parts)
        assert key.startswith(prefix)
        if head(b["f0"]) != head(a["f0"]):
            assert key_b != prefix if exact else not key_b.startswith(prefix)


@settings(max_examples=examples(60), deadline=None)
@given(st.one_of(
    st.text(alphabet="v0123456789_\u0661\u00b2x", max_size=14),
    st.builds("v{}_{}".format, st.text(alphabet="0123456789\u0661\u00b2", min_size=7,
                                       max_size=9), st.text(alphabet="x_v0", max_size=3))))
def test_a_version_sort_key_is_read_back_only_as_dynaorm_writes_it(sk: str) -> None:
    found = keys.parse_version_sk(sk)
    if found is not None:
        version, base = found
        assert version_sk(base, version) == sk


def test_unicode_digits_are_no_version() -> None:
    assert keys.parse_version_sk("v\u0660\u0660\u0660\u0660\u0660\u0660\u0660\u0661_x") is None
    assert keys.parse_version_sk("v0000000\u00b2_x") is None
    assert keys.parse_version_sk("v00000000_x") is None  # (the latest copy is v0_x)
    assert keys.parse_version_sk("v00000001_x") == (1, "x")
