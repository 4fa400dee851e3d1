"""Key templates' specificity (``KeyTemplate.covers``), which ranks a rule's row kinds
against an entity's templates: whatever it says covered must parse, every key of the
narrower template, under the wider one. Hypothesis draws both templates and the values.
No I/O."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st

from dynaorm.errors import KeyTemplateError
from dynaorm.schema.templates import KeyTemplate
from tests.support.examples import examples

#: literal pieces and separators the drawn templates are built from
_PIECES = st.sampled_from(["A", "AUDIT", "ORDER", "x", "#", "-", "#A#", "A-", "#ORDER#"])


@st.composite
def templates(draw: st.DrawFn) -> KeyTemplate:
    """A template of literals and fields (never two fields side by side)."""
    parts: list[str] = []
    for i in range(draw(st.integers(1, 5))):
        if draw(st.booleans()) and not (parts and parts[-1].startswith("{")):
            parts.append(f"{{f{i}}}")
        else:
            parts.append(draw(_PIECES))
    return KeyTemplate.parse("".join(parts))


def _values(draw: st.DrawFn, t: KeyTemplate) -> dict[str, str]:
    """Values for ``t``'s fields that it renders (none holding a character refused)."""
    alphabet = st.sampled_from("AORDx-#zUIT")
    out = {}
    for name in t.fields:
        text = draw(st.text(alphabet, min_size=1, max_size=4))
        out[name] = text
    return out


@settings(max_examples=examples(400), deadline=None)
@given(templates(), templates(), st.data())
def test_a_key_of_a_covered_template_always_parses_under_the_wider_one(
        wide: KeyTemplate, narrow: KeyTemplate, data: st.DataObject) -> None:
    values = _values(data.draw, narrow)
    try:
        key = narrow.render(values)
    except ValueError:
        assume(False)
        return
    if wide.covers(narrow):
        assert wide.parse_key(key) is not None, (wide.source, narrow.source, key)
    assert narrow.parse_key(key) is not None  # (the grammar gives its own keys back)


@settings(max_examples=examples(200), deadline=None)
@given(templates(), templates())
def test_covers_is_reflexive_and_narrower_is_one_way(a: KeyTemplate, b: KeyTemplate) -> None:
    assert a.covers(a)
    narrower = b.covers(a) and not a.covers(b)
    assert not (narrower and (a.covers(b) and not b.covers(a)))


@pytest.mark.parametrize(("wide", "narrow", "covered"), [
    ("AUDIT#{kind}#{ref}", "AUDIT#ORDER#{oid}", True),
    ("AUDIT#ORDER#{oid}", "AUDIT#{kind}#{ref}", False),
    ("AUDIT#ORDER#{ref}", "AUDIT#ORDER#{oid}", True),   # (equal: each covers the other)
    ("AUDIT#{kind}#1", "AUDIT#ORDER#{oid}", False),      # (they cross: neither covers)
    ("{id}", "ORDER#{oid}", True),                       # (one field: any key)
    ("ORDER#{oid}", "{id}", False),
    ("A-{x}", "A-{y}#B", False),     # (x, the last field, refuses the '#' of '#B')
    ("P#{x}-Q", "P#{y}-Q", True),
    ("P#{x}-Q", "P#{y}_-Q", False),  # (y may hold '-', which x refuses: 'P#a-b_-Q')
    ("K#{x}", "K#{y}-Z", True),
])
def test_covers_examples(wide: str, narrow: str, covered: bool) -> None:
    assert KeyTemplate.parse(wide).covers(KeyTemplate.parse(narrow)) is covered


# --- a covered template's keys all parse under the wider one
# (moved from system/test_red_team_08b.py:
# Red team of four changes merged for 0.8, by someone who wrote none of them: the MCP
# get/find calls on the event loop (issue 70, :func:`dynaorm.mcp.tools.run` by an AsyncSession), the
# receipt digest's shortcuts (key70), the ranking of rule rows by template specificity
# (r73, :meth:`KeyTemplate.covers`) and the separator of an inferred model (``_separator``).
# Each test states what must never happen. Nothing here depends on the engine: moto only.)

_QUICK = settings(deadline=None, suppress_health_check=list(HealthCheck))


# -- 3. rule rows: covers agrees with parse_key --------------------------------------------
_literal = st.sampled_from(["A", "AB", "A#", "AB#", "#", "|", "-", "A|", "A-", "#B", "B",
                            "A#B#", "AUDIT#ORDER#"])


_field = st.tuples(st.sampled_from("xyz"),
                   st.sampled_from(["", ":05d", "!u", "!l", ":>3", ":|>4", ":-<3", "!u:>2"]))


_template = st.lists(st.one_of(_literal, _field), min_size=1, max_size=5).map(
    lambda parts: "".join(p if isinstance(p, str) else "{" + p[0] + p[1] + "}"
                          for p in parts))


_key_value = st.one_of(st.text(st.sampled_from("a#|-1 A"), max_size=4), st.integers(-5, 200))


@pytest.mark.sync_only
@settings(_QUICK, max_examples=examples(400))
@given(wide=_template, narrow=_template,
       values=st.fixed_dictionaries({"x": _key_value, "y": _key_value, "z": _key_value}))
@example(wide="AUDIT#{x}#{y}", narrow="AUDIT#ORDER#{z}", values={"x": 0, "y": 0, "z": "1"})
@example(wide="A#{x}", narrow="A#{y}|B", values={"x": 0, "y": "a-b", "z": 0})
def test_a_covered_templates_keys_all_parse_under_the_wider_one(
        wide: str, narrow: str, values: dict[str, Any]) -> None:
    """Random pairs of templates (``#``, ``|``, ``-``; formats, conversions, fill
    characters that are separators; literals that prefix one another): when ``wide``
    covers ``narrow``, every key ``narrow`` renders parses under ``wide``."""
    try:
        a, b = KeyTemplate.parse(wide), KeyTemplate.parse(narrow)
        key = b.render(values)
    except KeyTemplateError:
        return
    assert b.parse_key(key) is not None
    if a.covers(b):
        assert a.parse_key(key) is not None, (wide, narrow, key)
