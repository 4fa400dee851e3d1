"""Names: of entity classes and nested models (``USER#*`` -> ``User``), of fields
(``createdAt`` -> ``created_at``), each once in its scope (:class:`_Namer`); and of each
template slot's field (the attribute it always equals, another slot it always equals,
else its tag: ``USER`` -> ``user_id``)."""

from __future__ import annotations

import keyword
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

import pydantic

from dynaorm.formats.infer.items import _INTEGER, _WORDS, Shape, _text
from dynaorm.formats.infer.templates import _Slot

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


#: names a field of a pydantic model cannot take (or takes with a warning): its members
_MEMBERS: Final = frozenset(n for n in dir(pydantic.BaseModel) if not n.startswith("_"))

#: the values of each attribute of an entity's items, by the item's index in its group
Values = Mapping[str, Mapping[int, Mapping[str, Any]]]


def _shape_name(sig: Shape, table: str) -> str:
    """A class name for the entity of a key shape: its literals (``USER#*``, ``ORDER#*``
    -> ``UserOrder``), else its table's name (``prod-orders`` -> ``ProdOrder``)."""
    words = [t.strip('"$*:=_') for toks in sig for t in toks if t != "*"]
    literals = [w for w in dict.fromkeys(words) if w.lower() not in _WORDS] or words
    return _class_name("_".join(literals) or re.sub(r"(?<=[^su])s\Z", "", table))


def _class_name(text: str) -> str:
    words = [w for w in re.split(r"[^A-Za-z0-9]+|(?<=[a-z])(?=[A-Z])", text) if w]
    name = "".join(w[:1].upper() + w[1:].lower() if w.isupper() or w.islower()
                   else w[:1].upper() + w[1:] for w in words) or "Item"
    return name if name[0].isalpha() else f"E{name}"


def _snake(text: str) -> str:
    text = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", text)
    text = re.sub(r"[^A-Za-z0-9]+", "_", text).strip("_").lower() or "field"
    if text[0].isdigit() or text.startswith("model_"):
        text = f"f{text}"
    return text


class _Namer:
    """Names of fields and nested models, each once in its scope."""

    def __init__(self, taken: Iterable[str] = ()):
        self.taken = set(taken)
        #: the field name of each attribute named so far
        self.attrs: dict[str, str] = {}

    def __call__(self, wanted: str) -> str:
        while keyword.iskeyword(wanted) or wanted in _MEMBERS:  # (``class``, ``json``)
            wanted += "_"
        name = wanted
        n = 2
        while name in self.taken:
            name, n = f"{wanted}_{n}", n + 1
        self.taken.add(name)
        return name


def _name_slots(slots: Sequence[_Slot], attrs: Values, names: _Namer, whole: set[str]
                ) -> dict[str, None]:
    """Name each slot's field: the attribute it always equals, else a slot named before
    it that it always equals, else a new field after its tag (``USER`` -> ``user_id``) or
    its attribute. Returns the new fields, held in keys only (each once, in order)."""
    out: dict[str, None] = {}
    named: list[_Slot] = []
    # (the attributes' names first: a key-only field takes another; those named as
    # themselves before the rest, so no field is named as another's attribute)
    for attr in sorted(attrs, key=lambda a: _snake(a) != a):
        _attr_field_name(attr, names)
    for slot in slots:
        same = _same_attribute(slot, attrs)
        if same is not None:
            slot.field = _attr_field_name(same, names)
        else:
            twin = next((s for s in named if _agree(s, slot)), None)
            if twin is not None:
                slot.field = twin.field
            elif slot.attr in whole and _snake(slot.attr) not in names.attrs.values():
                # (the key attribute is the field, stored as itself: named after it)
                slot.field = _snake(slot.attr)
                names.taken.add(slot.field)
                out[slot.field] = None
            else:
                slot.field = names(f"{_snake(slot.tag)}_id" if slot.tag else _snake(slot.attr))
                out[slot.field] = None
        named.append(slot)
    return out


def _attr_field_name(attr: str, names: _Namer) -> str:
    """The field name of attribute ``attr`` (once per entity: :class:`_Namer` remembers)."""
    if attr not in names.attrs:
        names.attrs[attr] = names(_snake(attr))
    return names.attrs[attr]


def _same_attribute(slot: _Slot, attrs: Values
                    ) -> str | None:
    """The attribute ``slot`` holds the text of in every item (its lead too, which is
    then read back into the field: ``user_123`` is the ``user_id`` attribute's value)."""
    for lead in dict.fromkeys(("", slot.lead)):
        for attr, values in attrs.items():
            if all(_text(values.get(n)) == lead + v for n, v in slot.values.items()) and (
                    _one_tag(values.values())):
                if lead:
                    slot.values = {n: lead + v for n, v in slot.values.items()}
                    slot.lead = ""
                return attr
    return None


def _one_tag(avs: Iterable[Mapping[str, Any]]) -> bool:
    """Whether values held as key text are all strings, or all whole numbers spelled as a
    key renders them: a field of both (``S`` on some items, ``N`` on others) or of a
    number spelled otherwise (``05``) is not one a key template renders back."""
    avs = list(avs)
    tags = {next(iter(av)) for av in avs}
    return tags == {"S"} or (tags == {"N"} and all(
        _INTEGER.match(av["N"]) and str(int(av["N"])) == av["N"] for av in avs))


def _agree(a: _Slot, b: _Slot) -> bool:
    """Whether two slots hold one field: the same text in every item that has both, under
    the same tag (else in at least three items of different texts: not a coincidence)."""
    both = a.values.keys() & b.values.keys()
    if not both or any(a.values[n] != b.values[n] for n in both):
        return False
    return a.tag == b.tag or len({a.values[n] for n in both}) >= 3
