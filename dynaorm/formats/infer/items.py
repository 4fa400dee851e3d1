"""An item's key texts, as inference reads them: the table's separator, each key attribute's
text (a versioned sort key's prefix read off), its tokens and which of them may be literals,
and the items of one entity (:class:`_Group`)."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

_VERSION = re.compile(r"v(0|\d{8})_")


_TAG = re.compile(r"[A-Za-z][A-Za-z_-]*\Z")


#: a literal of another tool's keys: ``$taskapp``, ElectroDB's ``$tasks_1``
_DOLLAR = re.compile(r"\$[A-Za-z][A-Za-z0-9_-]*\Z")


#: a word that may be a literal where no tag comes before it (``follower``, ``"info"``)
_WORD = re.compile(r'"?[A-Za-z][A-Za-z_-]*"?\Z')


#: a literal that leads a value inside one token: ``team_`` of ``team_green``
_LEAD = re.compile(r"[A-Za-z][A-Za-z0-9]*[_:=]")


_WORDS: Final = frozenset({"root", "meta", "metadata", "profile", "details", "detail",
                           "info", "summary", "latest", "config", "settings", "stats"})


_INTEGER = re.compile(r"-?\d+\Z")


Item = Mapping[str, Mapping[str, Any]]
#: the model's ``table`` as inference reads it (:func:`dynaorm.formats.infer.table_of`, with
#: its key attributes ``_keys`` (the table key's one or two), their types ``_types`` and its
#: key texts' separator ``_sep``)
Table = Mapping[str, Any]
#: an item of an entity, its key texts (:func:`_base_key`) and whether it was versioned
Entry = tuple[Item, dict[str, str], bool]
#: a key's tokens, each key attribute's (the table key's: :func:`_shape`)
Shape = tuple[tuple[str, ...], ...]


def _is_tag(token: str) -> bool:
    """Whether ``token`` reads as a literal of a key (``USER``, ``root``, ``c``,
    ``Order``), not a value."""
    if _DOLLAR.match(token):
        return True
    if not _TAG.match(token):
        return False
    return (token.isupper() or (len(token) <= 3 and token.islower())
            or token.lower() in _WORDS or (token[0].isupper() and token[1:].islower()
                                           and len(token) >= 4))


def _text(av: Mapping[str, Any] | None) -> str | None:
    """The text of a string or number attribute value (``None`` for any other)."""
    value = av and av.get("S", av.get("N"))
    return value if isinstance(value, str) else None


#: the characters a table's keys may join their parts with, ``#`` first (a table whose
#: keys hold none of them is read with ``#``)
SEPARATORS: Final = ("#", "|")


def _separator(items: Sequence[Item], table: Table) -> str:
    """The separator of the table's keys: of :data:`SEPARATORS`, the one the most table
    key texts of the sample hold (``USER|123|ORDER|9``), ``#`` on a tie."""
    texts = [t for i in items for a in table["_keys"]
             for t in [_text(i.get(a))] if t]
    return max(SEPARATORS, key=lambda c: sum(c in t for t in texts))


@dataclass
class _Group:
    """The sampled items of one entity, with the version prefix of each read off its sort
    key (a versioned entity's latest copy and version rows)."""

    name: str
    type_name: str | None
    items: list[Item] = field(default_factory=list)
    keys: list[dict[str, str]] = field(default_factory=list)
    versioned: bool = False
    #: the separator of the table's keys (:func:`_separator`)
    sep: str = "#"
    #: the token count of each key attribute's template, when fixed (a merged group keeps
    #: the covering entity's: :func:`_untangled`); else the most common of its items
    widths: dict[str, int] = field(default_factory=dict)


def _base_key(item: Item, table: Table) -> tuple[dict[str, str], bool] | None:
    """The item's key texts by attribute (table key and index keys), the sort key's
    version prefix read off, and whether it had one; ``None`` when the table key is no
    string or number."""
    out = {}
    versioned = False
    for attr in _key_attrs(table):
        text = _text(item.get(attr))
        if text is None:
            if attr in table["_keys"]:
                return None
            continue
        if attr == table["sk"] and "N" not in item[attr]:
            m = _VERSION.match(text)
            if m is not None:
                text, versioned = text[m.end():], True
        out[attr] = text
    return out, versioned


def _key_attrs(table: Table) -> list[str]:
    return list(dict.fromkeys([*table["_keys"], *(
        a for i in table["indexes"] for a in (*i.get("pk", ()), *i.get("sk", ())))]))


def _shape(key: Mapping[str, str], table: Table) -> Shape:
    return tuple(tuple(key[a].split(table["_sep"])) for a in table["_keys"])


def _roles(tokens: tuple[str, ...]) -> tuple[bool, ...]:
    """Which tokens of a key may be literals: a tag, or a word (``follower``, ``"info"``)
    that does not follow a tag (after ``USER`` comes a value: ``USER#alice``)."""
    out = []
    after_tag = False
    for token in tokens:
        ok = not token or (not after_tag and (_is_tag(token) or _WORD.match(token) is not None))
        out.append(ok)
        after_tag = ok and _is_tag(token)
    return tuple(out)


def _lead(token: str) -> str:
    m = _LEAD.match(token)
    return "" if m is None or m.end() == len(token) else m.group()


def _add(group: _Group, item: Item, key: dict[str, str], versioned: bool) -> None:
    group.items.append(item)
    group.keys.append(key)
    group.versioned |= versioned
