"""Key templates (contract section 2): rendering rules, format specs, conversions, errors,
round trips (hypothesis). No I/O: the index keys they give on a table are in
tests/integration/test_indexes.py."""

from __future__ import annotations

import enum
from datetime import UTC, date, datetime, timedelta, timezone
from typing import Any

import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

from dynaorm import GSI, Entity, KeyTemplateError, Table, keys
from dynaorm.core.scope import Scope
from dynaorm.schema.entity import spec_of
from dynaorm.schema.rules.versioned import version_sk
from dynaorm.schema.templates import KeyTemplate, render_value
from tests.support.examples import examples
from tests.support.models import app


class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


class Level(enum.IntEnum):
    LOW = 1
    HIGH = 2


class TplEvent(Entity):
    class Meta:
        table = app
        pk = "EVT#{kind}#{level}#{flag}"
        sk = "AT#{at}#DAY#{day}#N#{n:08d}#M#{at:%Y-%m}"
        indexes = {"gsi1": ("COLOR#{color}", "NAME#{name!u}#{alias!l}")}

    kind: str
    level: Level
    flag: bool
    at: datetime
    day: date
    n: int
    color: Color
    name: str
    alias: str


def _event(**overrides: Any) -> TplEvent:
    values: dict[str, Any] = {
        "kind": "boot", "level": Level.HIGH, "flag": True,
        "at": datetime(2024, 3, 9, 23, 30, 5, 123456, tzinfo=timezone(timedelta(hours=-2))),
        "day": date(2024, 3, 10), "n": 42, "color": Color.BLUE, "name": "Ada", "alias": "QUEEN",
    }
    values.update(overrides)
    return TplEvent(**values)


# -- rendering rules -----------------------------------------------------------------------
def test_render_value_types() -> None:
    assert render_value("abc") == "abc"
    assert render_value(42) == "42"
    assert render_value(-7) == "-7"
    assert render_value(True) == "true"
    assert render_value(False) == "false"
    assert render_value(date(2024, 1, 2)) == "2024-01-02"
    assert render_value(Color.RED) == "red"
    assert render_value(Level.HIGH) == "2"
    aware = datetime(2024, 1, 2, 3, 4, 5, tzinfo=timezone(timedelta(hours=2)))
    assert render_value(aware) == "2024-01-02T01:04:05.000000Z"
    assert render_value(datetime(2024, 1, 2, 3, 4, 5, tzinfo=UTC)) == "2024-01-02T03:04:05.000000Z"


def test_render_value_specs() -> None:
    assert render_value(42, "08d") == "00000042"
    aware = datetime(2024, 1, 1, 0, 30, tzinfo=timezone(timedelta(hours=2)))
    # the spec applies to the UTC value: 2023-12-31T22:30Z
    assert render_value(aware, "%Y-%m") == "2023-12"
    assert render_value(aware, "%Y-%m-%dT%H:%M:%S") == "2023-12-31T22:30:00"


def test_entity_keys_render_every_type() -> None:
    spec = spec_of(TplEvent)
    ev = _event()
    key = spec.primary_key(ev.__dict__)
    assert key == {
        "pk": "EVT#boot#2#true",
        "sk": "AT#2024-03-10T01:30:05.123456Z#DAY#2024-03-10#N#00000042#M#2024-03",
    }
    assert spec.index_keys(ev.__dict__) == {"gsi1pk": "COLOR#blue", "gsi1sk": "NAME#ADA#queen"}


def test_naive_datetime_is_taken_as_utc() -> None:
    spec = spec_of(TplEvent)
    naive = _event(at=datetime(2024, 3, 10, 1, 30, 5, 123456))
    assert spec.primary_key(naive.__dict__) == spec.primary_key(_event().__dict__)


def test_conversions_upper_and_lower() -> None:
    t = KeyTemplate.parse("NAME#{last!u}#{first!l}")
    assert t.render({"last": "McDonald", "first": "RONALD"}) == "NAME#MCDONALD#ronald"


def test_literal_template() -> None:
    t = KeyTemplate.parse("PROFILE")
    assert t.is_literal
    assert t.render({}) == "PROFILE"


# -- errors --------------------------------------------------------------------------------
@pytest.mark.parametrize("bad", ["", "a#b", "#"])
def test_bad_value_is_key_template_error_naming_entity_field_value(bad: str) -> None:
    ev = _event(kind=bad)
    with pytest.raises(KeyTemplateError) as err:
        spec_of(TplEvent).primary_key(ev.__dict__)
    msg = str(err.value)
    assert "TplEvent" in msg
    assert "'kind'" in msg
    assert repr(bad) in msg


def test_value_made_empty_by_format_is_refused() -> None:
    t = KeyTemplate.parse("X#{s:.0}")
    with pytest.raises(KeyTemplateError, match="empty"):
        t.render({"s": "abc"}, "Owner")


def test_value_that_does_not_fit_the_spec() -> None:
    t = KeyTemplate.parse("N#{n:08d}")
    with pytest.raises(KeyTemplateError, match="'n'"):
        t.render({"n": "not a number"}, "Owner")


def test_none_value_in_primary_key() -> None:
    t = KeyTemplate.parse("A#{a}")
    with pytest.raises(KeyTemplateError, match="None"):
        t.render({"a": None}, "Owner")


def test_unknown_field_at_class_definition() -> None:
    with pytest.raises(KeyTemplateError, match="nope"):
        class TplBroken(Entity):
            class Meta:
                table = app
                pk = "X#{nope}"
                sk = "X"

            real: str


def test_unknown_field_in_index_template_at_class_definition() -> None:
    with pytest.raises(KeyTemplateError, match="missing"):
        class TplBrokenIndex(Entity):
            class Meta:
                table = app
                pk = "X#{real}"
                sk = "X"
                indexes = {"gsi1": ("A#{missing}", "B")}

            real: str


def test_unknown_field_in_unique_scope_at_class_definition() -> None:
    from dynaorm import Unique

    with pytest.raises(KeyTemplateError, match="org"):
        class TplBrokenScope(Entity):
            class Meta:
                table = app
                pk = "X#{real}"
                sk = "X"
                unique = (Unique("real", scope="ORG#{org}"),)

            real: str


@pytest.mark.parametrize("source", ["A#{a!x}", "A#{a}{b}", "A#{a.b}", "A#{0}", "A#{a", ""])
def test_malformed_templates(source: str) -> None:
    with pytest.raises(KeyTemplateError):
        KeyTemplate.parse(source, owner="T")


# -- properties ----------------------------------------------------------------------------
_segment = st.text(
    st.characters(codec="utf-8", exclude_characters="#", exclude_categories=("Cs",)),
    min_size=1, max_size=20)
_TEMPLATE = KeyTemplate.parse("ORG#{org}#USER#{user}#AT#{n}")


@settings(max_examples=examples(50), deadline=None)
@given(org=_segment, user=_segment, n=st.integers(min_value=-10**12, max_value=10**12))
def test_render_parse_round_trip(org: str, user: str, n: int) -> None:
    key = _TEMPLATE.render({"org": org, "user": user, "n": n})
    assert _TEMPLATE.parse_key(key) == {"org": org, "user": user, "n": str(n)}


@settings(max_examples=examples(50), deadline=None)
@given(a=st.tuples(_segment, _segment), b=st.tuples(_segment, _segment))
def test_distinct_field_tuples_give_distinct_keys(a: tuple[str, str],
                                                  b: tuple[str, str]) -> None:
    t = KeyTemplate.parse("P#{x}#{y}")
    ka = t.render({"x": a[0], "y": a[1]})
    kb = t.render({"x": b[0], "y": b[1]})
    assert (ka == kb) == (a == b)


@settings(max_examples=examples(50), deadline=None)
@given(n=st.integers(min_value=0, max_value=10**8 - 1),
       m=st.integers(min_value=0, max_value=10**8 - 1))
def test_padded_numbers_sort_like_numbers(n: int, m: int) -> None:
    t = KeyTemplate.parse("R#{n:08d}")
    assert (t.render({"n": n}) < t.render({"n": m})) == (n < m)


@settings(max_examples=examples(50), deadline=None)
@given(at=st.datetimes(min_value=datetime(1971, 1, 1), max_value=datetime(2999, 1, 1),
                       timezones=st.sampled_from([UTC, timezone(timedelta(hours=5)),
                                                  timezone(timedelta(hours=-8))])))
def test_datetime_keys_round_trip_to_the_same_instant(at: datetime) -> None:
    t = KeyTemplate.parse("T#{at}")
    text = t.parse_key(t.render({"at": at}))
    assert text is not None
    assert text["at"].endswith("Z")
    assert datetime.fromisoformat(text["at"]) == at


def test_parse_key_rejects_foreign_keys() -> None:
    assert _TEMPLATE.parse_key("ORG#a#USER#b") is None
    assert _TEMPLATE.parse_key("XYZ#a#USER#b#AT#1") is None


# -- the grammar (contract 23, "Keys have a grammar") --------------------------------------
#: every printable character a literal may hold (braces are the template's own syntax)
_LITERAL_CHARS = st.characters(min_codepoint=0x20, max_codepoint=0x7E,
                               exclude_characters="{}")
_VALUE_CHARS = st.sampled_from("ab1-_.:|/ #xZ")


@st.composite
def _grammar_templates(draw: st.DrawFn) -> tuple[str, list[str]]:
    """A template of random literals (any printable separator, ``-``, ``_``, ``.``, ``:``,
    ``|``, ``/``, space, ``#``...) and 1-3 fields: ``L0{f0}L1{f1}...Ln``, every literal
    between two fields non-empty (a field's separator), the first and last maybe empty."""
    n = draw(st.integers(min_value=1, max_value=3))
    literal = st.text(_LITERAL_CHARS, min_size=1, max_size=3)
    parts = [draw(st.one_of(st.just(""), literal))]
    names = [f"f{i}" for i in range(n)]
    for i, name in enumerate(names):
        parts.append("{" + name + "}")
        parts.append(draw(literal) if i < n - 1 else draw(st.one_of(st.just(""), literal)))
    return "".join(parts), names


@settings(max_examples=examples(300))
@given(shape=_grammar_templates(), data=st.data())
def test_a_value_the_grammar_accepts_parses_back_exactly(
        shape: tuple[str, list[str]], data: st.DataObject) -> None:
    """Any values the grammar accepts render a key that ``parse_key`` gives back exactly;
    a value holding ``#`` or its field's separator is refused, naming the field and the
    character (a template that is exactly one field takes anything)."""
    source, names = shape
    template = KeyTemplate.parse(source, owner="Doc")
    values = {n: data.draw(st.text(_VALUE_CHARS, min_size=1, max_size=6), label=n)
              for n in names}
    bad = {n: sorted(c for c in template.separators(n) if c in v) for n, v in values.items()}
    first = next((n for n in names if bad[n]), None)
    if first is None:
        key = template.render(values, "Doc")
        assert template.parse_key(key) == values
        return
    with pytest.raises(KeyTemplateError) as info:
        template.render(values, "Doc")
    refused = str(info.value)
    assert refused.startswith("Doc:") and repr(first) in refused
    assert "'#'" in refused or any(repr(c) in refused for c in bad[first])


def test_a_template_that_is_one_field_takes_anything() -> None:
    template = KeyTemplate.parse("{id}")
    for value in ("a#b", "T-acme-corp", "x|y/z w"):
        assert template.parse_key(template.render({"id": value})) == {"id": value}
    assert template.separators("id") == frozenset()


def test_a_separator_is_the_first_character_of_the_literal_after_the_field() -> None:
    template = KeyTemplate.parse("T-{tenant_id}-{doc_id}")
    assert template.separators("tenant_id") == {"#", "-"}
    assert template.separators("doc_id") == {"#"}  # (the last field: no literal after it)
    # a doc id may hold '-': the tenant ends at the first '-', so the key reads one way
    assert template.parse_key("T-acme-corp-123") == {"tenant_id": "acme", "doc_id": "corp-123"}
    with pytest.raises(KeyTemplateError, match=r"Doc: field 'tenant_id' .*'-'"):
        template.render({"tenant_id": "acme-corp", "doc_id": "123"}, "Doc")


class ScopedDoc(Entity):
    """A tenant's document, its tenant followed by '-' in the key (no table is touched)."""

    class Meta:
        table = app
        pk = "T-{tenant_id}-{doc_id}"
        sk = "DOC"

    tenant_id: str
    doc_id: str


_TENANT = st.text(st.sampled_from("ab-_.:|/ #"), min_size=1, max_size=5)


@settings(max_examples=examples(300))
@given(mine=_TENANT, theirs=_TENANT, doc=st.text(st.sampled_from("ab-_.:1 "), min_size=1,
                                                 max_size=6))
def test_a_scope_admits_only_keys_that_parse_to_it(mine: str, theirs: str, doc: str) -> None:
    """``Scope.admits`` (pure): the key of another tenant's document, whatever document
    ids make it, is never admitted; the scope's own keys always are; a key the grammar
    cannot parse never is."""
    from dynaorm.core.scope import Scope
    from dynaorm.errors import ScopeError

    spec = spec_of(ScopedDoc)
    try:
        scope = Scope({"tenant_id": mine})
        scope.entity(spec)
    except ScopeError:
        assert "-" in mine or "#" in mine  # (a scope value holding a separator)
        return
    pk = app.pk

    def stored(tenant: str) -> dict[str, Any] | None:
        try:
            key = spec.primary_key({"tenant_id": tenant, "doc_id": doc})
        except KeyTemplateError:
            return None
        return {pk: {"S": key[pk]}}

    own = stored(mine)
    assert own is not None and scope.admits(spec, own)
    other = stored(theirs)
    if other is not None:
        assert scope.admits(spec, other) == (theirs == mine)
    # keys no template renders: never admitted
    for raw in (f"T-{mine}", f"X-{mine}-{doc}", f"T-{mine}-", "", f"T-{mine}#-{doc}"):
        assert not scope.admits(spec, {pk: {"S": raw}})
    assert not scope.admits(spec, {}) and not scope.admits(spec, {pk: {"N": "1"}})


#: a field as a template may write it: plain, converted, formatted (an int's, a str's)
_WRITTEN = st.sampled_from([("{%s}", "str"), ("{%s!u}", "str"), ("{%s!l:>4}", "str"),
                            ("{%s:05d}", "int"), ("{%s:+d}", "int"), ("{%s:x}", "int")])
#: literal pieces, braces escaped among them
_PIECES = st.lists(st.one_of(st.text(_LITERAL_CHARS, min_size=1, max_size=2),
                             st.sampled_from(["{{", "}}"])), min_size=1, max_size=3).map("".join)


@settings(max_examples=examples(300))
@given(data=st.data(), n=st.integers(min_value=1, max_value=3))
def test_a_prefix_through_a_field_is_the_template_as_written(data: st.DataObject,
                                                             n: int) -> None:
    """``prefix_through(f)`` is the template's source up to and through field ``f`` as
    written: it parses to the same segments (each field's conversion and format spec
    kept, escaped braces too), and renders, for any values, the leading part of the key
    the whole template renders."""
    shapes = [data.draw(_WRITTEN, label=f"f{i}") for i in range(n)]
    parts = [data.draw(st.one_of(st.just(""), _PIECES), label="lead")]
    for i, (shape, _) in enumerate(shapes):
        parts += [shape % f"f{i}", data.draw(_PIECES if i < n - 1 else st.one_of(
            st.just(""), _PIECES), label=f"after f{i}")]
    template = KeyTemplate.parse("".join(parts))
    values = {f"f{i}": data.draw(st.text(st.sampled_from("abZ1"), min_size=1, max_size=4)
                                 if kind == "str" else st.integers(0, 99999), label=f"v{i}")
              for i, (_, kind) in enumerate(shapes)}
    try:
        key = template.render(values)
    except KeyTemplateError:  # (a value holding its separator, a digit after {n:05d})
        key = None

    def written(t: KeyTemplate) -> list[Any]:
        return [s if isinstance(s, str) else (s.name, s.spec, s.conversion)
                for s in t.segments]
    for name in template.fields:
        source = template.prefix_through(name)
        assert source == "".join(parts[:2 * int(name[1:]) + 2])
        prefix = KeyTemplate.parse(source)
        assert written(prefix) == written(template)[:len(prefix.segments)]
        assert key is None or key.startswith(prefix.render(values))
    with pytest.raises(KeyTemplateError, match="has no field 'nope'"):
        template.prefix_through("nope")


# -- one checked render, one reading of the grammar (contract 24) ---------------------------
#: characters of literals and values: every separator a template may hold, and plain ones
_CHARS = "#-_:|.a1"
_NAMES = ("a", "b", "t", "u")
_TEXT = st.text(alphabet=_CHARS, min_size=1, max_size=4)


@st.composite
def _any_templates(draw: Any) -> KeyTemplate:
    """A key template of string keys: literals and fields (a field may be named twice),
    alternating; a field may carry ``!u``/``!l`` or a format; sometimes exactly one
    field; sometimes its fields also refuse another template's separators."""
    names = draw(st.lists(st.sampled_from(_NAMES), min_size=1, max_size=3))
    also = draw(st.dictionaries(st.sampled_from(names), st.frozensets(
        st.sampled_from("-_:|."), min_size=1, max_size=2), max_size=2))
    if len(names) == 1 and draw(st.booleans()):  # ("{a}", or the common "LIT{a}")
        head = draw(st.sampled_from(["", draw(_TEXT)]))
        return KeyTemplate.parse(head + "{" + names[0] + "}").refusing(also)
    out: list[str] = []
    if draw(st.booleans()):
        out.append(draw(_TEXT))
    for i, name in enumerate(names):
        extra = draw(st.sampled_from(["", "", "", "!u", "!l", ":>3"]))
        out.append("{" + name + extra + "}")
        if i < len(names) - 1 or draw(st.booleans()):
            out.append(draw(_TEXT))
    return KeyTemplate.parse("".join(out)).refusing(also)


def _slow_render(template: KeyTemplate, values: dict[str, Any]) -> str:
    """The template rendered field by field through its one checked function."""
    return "".join(s if isinstance(s, str) else template._render_field(s, values, "X")
                   for s in template.segments)


@settings(max_examples=examples(300), deadline=None)
@given(template=_any_templates(), data=st.data())
def test_every_render_path_checks_through_one_function(template: KeyTemplate,
                                                       data: st.DataObject) -> None:
    """``render``'s shortcuts (a literal then one field; plain str values) refuse exactly
    what rendering each field through its checked function refuses, and render the same
    key (``T#{tenant_id}`` beside ``{tenant_id}-{category}``: ``a-b`` is refused by both)."""
    values = {n: data.draw(st.text(alphabet=_CHARS, max_size=4)) for n in template.fields}
    try:
        slow: str | None = _slow_render(template, values)
    except KeyTemplateError:
        slow = None
    try:
        fast: str | None = template.render(values, "X")
    except KeyTemplateError:
        fast = None
    assert fast == slow, (template.source, [s for s in template.segments], values)


def test_a_field_refusing_another_template_s_separator_is_refused_on_the_shortcut() -> None:
    template = KeyTemplate.parse("T#{tenant_id}").refusing({"tenant_id": frozenset("-")})
    with pytest.raises(KeyTemplateError, match="another key template"):
        template.render({"tenant_id": "a-b"}, "Doc")
    assert template.render({"tenant_id": "ab"}, "Doc") == "T#ab"


def _keys(template: KeyTemplate, values: dict[str, str], draw: Any) -> str:
    """A key: the template's literals and, per field, the fixed value or another text;
    then perhaps cut, grown or replaced."""
    parts = []
    for seg in template.segments:
        if isinstance(seg, str):
            parts.append(seg)
        else:
            own = values.get(seg.name)
            parts.append(own if own is not None and draw(st.booleans()) else draw(_TEXT))
    key = "".join(parts)
    how = draw(st.sampled_from(["as is", "as is", "cut", "grown", "random"]))
    if how == "cut":
        key = key[:draw(st.integers(0, len(key)))]
    elif how == "grown":
        key = key + draw(_TEXT) if draw(st.booleans()) else draw(_TEXT) + key
    elif how == "random":
        key = draw(st.text(alphabet=_CHARS, max_size=12))
    return key


@settings(max_examples=examples(300), deadline=None)
@given(template=_any_templates(), data=st.data())
def test_the_matcher_is_the_parse_and_the_leading_text_holds(template: KeyTemplate,
                                                             data: st.DataObject) -> None:
    """``matcher(fixed)`` (a scoped read's test of a key) is truthy exactly when
    ``parse_key`` gives each fixed field its text, or is ``None`` where a fixed field is
    formatted or converted (then the parse decides); every key it matches holds what
    ``leading_text`` says (a scoped scan's server-side filter never leaves out a key the
    scope admits)."""
    chosen = data.draw(st.lists(st.sampled_from([*template.fields, "zz"]), min_size=1,
                                max_size=len(template.fields) + 1, unique=True))
    fixed = {n: data.draw(st.text(alphabet=_CHARS.replace("#", ""), min_size=1, max_size=3))
             for n in chosen}
    test = template.matcher(fixed)
    if test is None:
        assert any(not isinstance(s, str) and s.name in fixed and (s.spec or s.conversion)
                   for s in template.segments)
        return
    prefix, whole, inner = template.leading_text(fixed)
    for _ in range(6):
        key = _keys(template, fixed, data.draw)
        parsed = template.parse_key(key)
        says = parsed is not None and all(parsed.get(n) == v for n, v in fixed.items())
        assert bool(test(key)) is says, (template.source, fixed, key)
        if says:
            assert key == prefix if whole else key.startswith(prefix), (key, prefix)
            assert all(t in key for t in inner), (key, inner)


def test_the_cases_an_attacker_tries_are_named() -> None:
    """A tenant whose value extends ours, a key missing its tail, a tail holding ``#``,
    the one-field template. (``T-acme-corp-1`` parses as acme's doc ``corp-1``: its row's
    own fields decide whether it is acme's, see tests/integration/test_scope_keys.py.)"""
    template = KeyTemplate.parse("T-{tenant_id}-{doc_id}")
    test = template.matcher({"tenant_id": "acme"})
    assert test is not None
    assert test("T-acme-123") and test("T-acme-corp-1") and not test("T-acmecorp-1")
    assert not test("T-acme-") and not test("T-acme") and not test("T-acme-1#2")
    assert template.leading_text({"tenant_id": "acme"}) == ("T-acme-", False, ())
    memo = KeyTemplate.parse("TENANT#{tenant_id}")
    exact = memo.matcher({"tenant_id": "t1"})
    assert exact is not None and exact("TENANT#t1") and not exact("TENANT#t1x")
    assert memo.leading_text({"tenant_id": "t1"}) == ("TENANT#t1", True, ())
    single = KeyTemplate.parse("{tenant_id}").matcher({"tenant_id": "t1"})
    assert single is not None and single("t1") and not single("t1#x")
    inner = KeyTemplate.parse("DOC#{doc_id}#T#{tenant_id}")
    assert inner.leading_text({"tenant_id": "t1"}) == ("DOC#", False, ("t1",))
    assert KeyTemplate.parse("{n}", key_type="N").matcher({"n": "1"}) is None
    assert KeyTemplate.parse("A#{t}").matcher({"t": "a#b"})("A#a#b") is False  # type: ignore[misc]


@settings(max_examples=examples(300), deadline=None)
@given(template=_any_templates(), data=st.data())
def test_the_matcher_of_a_list_is_the_matcher_of_each(template: KeyTemplate,
                                                      data: st.DataObject) -> None:
    """``matcher_all`` (a scoped page's keys at once) is ``all`` of ``matcher`` (so of the
    parse): lists of keys some of which do not parse or parse to other values."""
    chosen = data.draw(st.lists(st.sampled_from([*template.fields, "zz"]), min_size=1,
                                max_size=len(template.fields) + 1, unique=True))
    fixed = {n: data.draw(st.text(alphabet=_CHARS.replace("#", ""), min_size=1, max_size=3))
             for n in chosen}
    test, every = template.matcher(fixed), template.matcher_all(fixed)
    assert (test is None) is (every is None)
    if test is None or every is None:
        return
    for _ in range(4):
        keys = [_keys(template, fixed, data.draw) for _ in range(data.draw(st.integers(0, 4)))]
        if keys and data.draw(st.booleans()):  # (a key holding the sentinel of a join)
            keys[0] = "\0".join([keys[0], *keys[1:2]])
        assert every(keys) is all(test(k) for k in keys), (template.source, fixed, keys)


# --- the public key grammar, as properties
# (moved from unit/test_red_team_80_keys.py:
# The red team of issue 80: ``dynaorm.keys``, the public key grammar, as properties over
# random templates and values. A key rendered from values parses back to the texts it
# rendered (and renders again to itself); the prefix that proves a scope value is never
# the start of a key of another value; a version row's sort key read back
# (:func:`dynaorm.keys.parse_version_sk`) is the inverse of the one dynaorm writes: it
# reads back only what it writes (Unicode digits were read as a version, or raised
# ``ValueError``), whatever text a stored item holds.)

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


# --- a one-field key beside an index template's separator
# (moved from unit/test_red_team_081_keys.py:
# The red team of issue 81: "every path that renders a key refuses a value holding a
# separator" (contract 24) for a partition key that is one field (``{tenant_id}``) beside an
# index template that gives the field a separator (``{tenant_id}-{category}``). Pure: the
# entity's templates, no engine.)

single = Table("red81_single", indexes=[GSI("gsi1", pk="gsi1pk", sk="gsi1sk")])


class Account(Entity):
    class Meta:
        table = single
        pk = "{tenant_id}"
        sk = "A#{account_id}"
        indexes = {"gsi1": ("{tenant_id}-{category}", "{account_id}")}

    tenant_id: str
    account_id: str
    category: str | None = None


def test_a_one_field_key_refuses_the_field_s_separator_in_another_template() -> None:
    """Tenant ``a-b``: the index refuses it (``-`` follows the field there) and no scope
    can name it (Scope refuses it); the partition key ``{tenant_id}`` must refuse it too,
    else a save that leaves the index out (no category) stores a tenant no scoped session
    can ever reach while the same save with a category is refused."""
    spec = Account.__dynaorm_spec__  # type: ignore[attr-defined]
    with pytest.raises(KeyTemplateError, match="'-'"):
        spec.primary_key({"tenant_id": "a-b", "account_id": "1"})
    with pytest.raises(KeyTemplateError, match="'-'"):
        spec.pk.render({"tenant_id": "a-b"})
    with pytest.raises(Exception, match="'-'"):
        Scope({"tenant_id": "a-b"}).entity(spec)
    # '#' is still a one-field key's to hold (nothing to split), where no template gives
    # the field '#' as a separator... here the index does not either: '#' is the grammar's
    assert spec.pk.render({"tenant_id": "a"}) == "a"


# --- KeyTemplate.prefix_through
# (moved from system/test_red_team_08f_templates.py:
# Red team 08f of ``KeyTemplate.prefix_through`` (merge ``lit69``): a template's source
# through a field, as written. Over templates with conversions, format specs (an int's, a
# str's, a datetime's with ``:`` inside), escaped braces and repeated fields, what must never
# happen: the prefix parses to other segments than the template's first ones, renders a key
# that is not the leading part of the whole key, or stops at a later repeat of the field.
# Pure: no engine.)

#: (written, kind) of a field named %s
_FIELD = st.sampled_from([("{%s}", "str"), ("{%s!u}", "str"), ("{%s!l:>4}", "str"),
                          ("{%s:05d}", "int"), ("{%s:x}", "int"),
                          ("{%s:%%Y-%%m-%%dT%%H:%%M}", "time"), ("{%s:%%H:%%M:%%S}", "time")])
_LIT = st.lists(st.one_of(st.sampled_from(["#", "A", "x-", "{{", "}}", ":", "!", "%"]),
                          st.text("QRS", min_size=1, max_size=2)),
                min_size=1, max_size=3).map("".join)
_VALUE = {"str": st.text("abZ1", min_size=1, max_size=4), "int": st.integers(0, 99999),
          "time": st.datetimes(datetime(2000, 1, 1), datetime(2030, 1, 1))}


def _written(t: KeyTemplate) -> list[Any]:
    return [s if isinstance(s, str) else (s.name, s.spec, s.conversion) for s in t.segments]


@pytest.mark.engines('moto')
@settings(max_examples=examples(400), deadline=None)
@given(data=st.data(), n=st.integers(1, 4))
def test_a_prefix_is_the_templates_leading_part_as_written(data: st.DataObject,
                                                          n: int) -> None:
    names = [data.draw(st.sampled_from("abc"), label=f"name{i}") for i in range(n)]
    shapes: dict[str, tuple[str, str]] = {}
    parts = [data.draw(st.one_of(st.just(""), _LIT), label="lead")]
    for i, name in enumerate(names):
        shape = shapes.setdefault(name, data.draw(_FIELD, label=f"shape {name}"))
        parts += [shape[0] % name, data.draw(_LIT if i < n - 1 else st.one_of(
            st.just(""), _LIT), label=f"after {i}")]
    source = "".join(parts)
    try:
        template = KeyTemplate.parse(source)
    except KeyTemplateError:
        event("refused")  # (a template may refuse it)
        return
    values = {name: data.draw(_VALUE[kind], label=f"v {name}")
              for name, (_, kind) in shapes.items()}
    try:
        key = template.render(values)
    except KeyTemplateError:
        key = None
    event(f"parsed, repeats={len(names) - len(set(names))}, key={key is not None}")
    for name in template.fields:
        first = names.index(name)
        prefix_source = template.prefix_through(name)
        assert prefix_source == "".join(parts[:2 * first + 2]), (source, name)
        prefix = KeyTemplate.parse(prefix_source)
        assert _written(prefix) == _written(template)[:len(prefix.segments)]
        assert [s for s in prefix.segments if not isinstance(s, str)][-1].name == name
        assert sum(1 for s in prefix.segments if not isinstance(s, str)
                   and s.name == name) == 1  # (through the first, never a later repeat)
        if key is not None:
            assert key.startswith(prefix.render(values)), (source, name, key)
