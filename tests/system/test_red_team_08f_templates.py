"""Red team 08f of ``KeyTemplate.prefix_through`` (merge ``lit69``): a template's source
through a field, as written. Over templates with conversions, format specs (an int's, a
str's, a datetime's with ``:`` inside), escaped braces and repeated fields, what must never
happen: the prefix parses to other segments than the template's first ones, renders a key
that is not the leading part of the whole key, or stops at a later repeat of the field.
Pure: no engine."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

from dynaorm.errors import KeyTemplateError
from dynaorm.schema.templates import KeyTemplate
from tests.support.examples import examples

pytestmark = pytest.mark.engines("moto")

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
