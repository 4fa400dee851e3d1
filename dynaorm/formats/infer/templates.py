"""Key templates run backwards: the template of one key attribute for the items of one
entity (the literals they share, a slot where they differ), rendered back as the key
grammar (:mod:`dynaorm.keys`) writes it; and which global secondary indexes are keyed on
attributes as stored (native) rather than on templates."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from dynaorm.formats.infer.items import _LEAD, Table, _Group, _roles, _text

#: an attribute named as a key attribute (``GSI1PK``, ``gsi1_sk``, ``OG_PK``)
_KEYISH = re.compile(r"(?i)gsi|lsi|(^|[^a-z])(pk|sk|key)([^a-z]|$)|[a-z0-9](pk|sk)$")


@dataclass
class _Slot:
    """A field slot of a key template: its attribute, position, and the text it holds in
    each item (by the item's index in its group)."""

    attr: str
    pos: int
    tag: str | None
    values: dict[int, str]
    field: str = ""
    #: the literal every value of the slot starts with (``team_``), read off ``values``
    lead: str = ""


#: a key attribute's template for an entity: its segments, and the items (by their index
#: in the group) it holds
Found = tuple[list[str | _Slot], set[int]]

def _template(group: _Group, attr: str, plain: bool = False
              ) -> Found | None:
    """The segments of ``attr``'s template for ``group`` (literal tokens and slots, the
    ``#`` between them implied), and the items it holds; ``None`` when no item has it.
    ``plain``: an index key attribute holding a field as it is (one slot, whatever the
    sample holds: ``Operator``)."""
    if plain:
        values = {n: k[attr] for n, k in enumerate(group.keys) if attr in k}
        return ([_Slot(attr, 0, None, values)], set(values)) if values else None
    present = [(n, tuple(k[attr].split(group.sep))) for n, k in enumerate(group.keys)
               if attr in k]
    if not present:
        return None
    lengths = Counter(len(t) for _, t in present)  # (the token count: the group's fixed one
    width = group.widths.get(attr, 0)  # when an item has it, else the most common)
    width = width if lengths[width] else lengths.most_common(1)[0][0]
    fits = [(n, t) for n, t in present if len(t) == width]
    return _segments(group, attr, fits, width), {n for n, _ in fits}


def _segments(group: _Group, attr: str, fits: Sequence[tuple[int, tuple[str, ...]]],
              width: int) -> list[str | _Slot]:
    """The segments of ``attr``'s template from the token lists ``fits`` (``width`` each):
    a token every item holds alike as a literal word, else a slot."""
    parts: list[str | _Slot] = []
    roles = [_roles(t) for _, t in fits]
    tag = None  # (the literal just before, a slot's tag)
    for pos in range(width):
        seen = {t[pos] for _, t in fits}
        token = next(iter(seen))
        if len(seen) == 1 and all(r[pos] for r in roles) and not _held(group, fits, token):
            parts.append(token)
            tag = token
        else:
            parts.append(_led(_Slot(attr, pos, tag, {n: t[pos] for n, t in fits})))
            tag = None
    return parts


def _held(group: _Group, fits: Sequence[tuple[int, tuple[str, ...]]], token: str) -> bool:
    """Whether every item of ``fits`` holds ``token`` as the text of an attribute other
    than its key attributes (not its type name): a field's value, not a literal."""
    return bool(token) and token != group.type_name and all(
        any(_text(av) == token for a, av in group.items[n].items() if a not in group.keys[n])
        for n, _ in fits)


def _led(slot: _Slot) -> _Slot:
    """``slot`` with the literal its values all start with (``team_`` of ``team_green``,
    ``team_core``) read off as its lead."""
    values = list(slot.values.values())
    m = _LEAD.match(values[0])
    if m is None or not all(v.startswith(m.group()) and len(v) > m.end() for v in values):
        return slot
    lead = m.group()
    return _Slot(slot.attr, slot.pos, lead[:-1], {n: v[len(lead):] for n, v in
                                                  slot.values.items()}, lead=lead)


def _render(parts: Sequence[str | _Slot], sep: str) -> str:
    return sep.join(_escaped(p) if isinstance(p, str)
                    else _escaped(p.lead) + "{" + p.field + "}" for p in parts)


def _escaped(text: str) -> str:
    return text.replace("{", "{{").replace("}", "}}")


def _is_whole(parts: Sequence[str | _Slot]) -> bool:
    """Whether a template is one field, nothing around it."""
    return len(parts) == 1 and isinstance(parts[0], _Slot) and not parts[0].lead


def _native_attributes(table: Table, groups: Sequence[_Group]
                       ) -> tuple[set[str], frozenset[str]]:
    """Mark native each GSI keyed on entity attributes as stored (several attributes to a
    key part; or every item's value a whole field, no literal: ``Operator``, ``Date``,
    ``TransactionId``; or the table's own key attributes, an inverted index) and give the
    attributes they are keyed on; and the plain attributes of the other GSIs (a whole
    field in every item, beside a key attribute holding a template: ``Operator`` with
    ``GSI1SK`` = ``DATE#...``), each a field stored as itself that the index's template
    holds whole."""
    out: set[str] = set()
    plain: set[str] = set()
    table_keys = table["_keys"]
    for index in table["indexes"]:
        if index["kind"] != "gsi":
            continue
        attrs = [*index["pk"], *index["sk"]]
        own = [a for a in attrs if a not in table_keys]  # (none: the table's keys inverted,
        # a template index of the entities' own templates)
        whole = [a for a in own if all(_whole(g, a) for g in groups)]
        native = len(index["pk"]) > 1 or len(index["sk"]) > 1 or (bool(own) and (
            len(whole) == len(own)))
        if native:
            index["native"] = True
            out.update(a for a in attrs if a not in table_keys)
        else:
            plain.update(a for a in whole if not _KEYISH.search(a))
    return out, frozenset(plain - out)


def _whole(group: _Group, attr: str) -> bool:
    """Whether every value of ``attr`` in ``group`` is one field, no literal around it."""
    found = _template(group, attr)
    if found is None:
        return True
    parts = found[0]
    if len(parts) != 1:
        return False
    if isinstance(parts[0], _Slot):  # (a lead, ``txn_`` of ``txn_8f3a``, is a literal only
        # in an attribute named as a key's: ElectroDB's ``gsi1pk``)
        return _is_whole(parts) or _KEYISH.search(attr) is None
    # one text in every item: a value the sample holds once (``AgentB``), unless the
    # attribute is named as a key's (``GSI1PK`` = ``ALL_ORDERS``: a literal)
    return _KEYISH.search(attr) is None
