"""What a save of a loaded object writes, as a three-way merge (pure): the item as stored
(``stored``: whoever wrote it), the item dynaorm would write for the values the object was
loaded with (``old``) and the one it writes for its values now (``new``).

Only what the change touched is written: an attribute (or a map member) whose ``old`` and
``new`` forms agree was not touched, and keeps its stored form byte for byte (its type
tag, a number's spelling, members no model declares, a member the stored map lacks, which
``old`` and ``new`` render as ``NULL``). A changed map that is a map in all three is merged
member by member: the members that changed are written by their paths
(``SET prefs.theme = :v``), the members ``old`` held and ``new`` does not are removed, and
every other member is left as stored. Anything else that changed is written whole, as
``new`` renders it, but each member of a list of maps, or a model moved into a mapping, is
merged with the stored member it was read from (``origins``: by identity, wherever it was
read), never a neighbour's (contract 24). A member stored under its alias is written there
(:mod:`dynaorm.values.tree`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from dynaorm._types import AttributeValue, Item
from dynaorm.values.tree import Node, Where, nested

__all__ = ["MAX_MEMBER_PATHS", "Merged", "Origins", "Path", "Where", "merge_items"]

#: a member's document path: the attribute's name, then each map key (never split on dots)
Path = tuple[str, ...]
#: above this many member paths in one attribute, the merged map is written whole (an
#: update expression has a length limit; the write is conditioned on the map as read)
MAX_MEMBER_PATHS = 16
#: by the place in ``new`` of each member of a list or mapping of models the state knows:
#: where it was read (``None``: a new member)
Origins = Mapping[Where, Where | None]
_NONE: Mapping[Any, Any] = {}
#: member paths and what each writes (``None``: removes)
_Paths = list[tuple[Path, AttributeValue | None]]
#: a member's stored and old forms (``None``: a new one)
_Read = tuple[AttributeValue, AttributeValue] | None
#: the whole stored and old items, the origins, and the places of lists whose members
#: moved, and of what holds them (what a merge at any depth reads)
_Whole = tuple[Item, Item, Origins, set[Where]]


@dataclass(slots=True)
class Merged:
    """The merge of one item: what an update sets (whole attributes), removes (whole
    attributes) and writes by member path (``members``: a value, or ``None`` to remove),
    and ``item``, the whole item that results (what a put writes)."""

    set: Item
    remove: list[str]
    members: _Paths
    item: Item

    @property
    def touched(self) -> bool:
        """Whether the change writes anything."""
        return bool(self.set or self.remove or self.members)


def merge_items(stored: Item, old: Item, new: Item,
                drop: frozenset[str] | set[str] = frozenset(), origins: Origins = _NONE,
                node: Node | None = None, whole: frozenset[str] = frozenset()) -> Merged:
    """The merge of ``new`` into ``stored`` given ``old`` (see the module): the item a
    map, merged as one (:func:`_merge_map`), each member path that names an attribute
    alone set or removed whole, as is an attribute of many member paths or one no path
    names (``""``). An attribute only ``stored`` holds (another writer's, a ``NULL``
    dynaorm would leave out) is kept in :attr:`Merged.item`, unless in ``drop``
    (attributes the write leaves behind: a put writes the item without them).
    ``origins`` says where each member of a list was read (else: an unchanged member
    wherever it moved, a changed one at its place); ``node``: the item's value tree (a
    model whose members are the attributes); ``whole``: attributes never written by
    member path (values a rule may keep outside the table: it sees the whole value)."""
    paths: _Paths = []
    moved = {w[:n] for w, at in origins.items() if at not in (None, w) for n in range(1, len(w))}
    item = _merge_map(stored, old, new, (), paths, node, (), (stored, old, origins, moved))
    many: dict[str, int] = {}
    for path, _ in paths:
        many[path[0]] = many.get(path[0], 0) + 1
    merged = Merged({}, [], [], item)
    for path, av in paths:
        name = path[0]
        if path[1:] and "" not in path and many[name] <= MAX_MEMBER_PATHS and name not in whole:
            merged.members.append((path, av))
        elif name in item:  # (whole: many members, or one no path names, "")
            merged.set[name] = item[name]
        else:
            merged.remove.append(name)
    for name in drop:  # (most often none: no set is made)
        if name not in new and name not in old:
            item.pop(name, None)
    return merged


def _maps(*avs: AttributeValue) -> bool:
    """Whether every one of ``avs`` is a map."""
    return all(type(av) is dict and len(av) == 1 and type(av.get("M")) is dict for av in avs)


def _merge_map(stored: Item, old: Item, new: Item, path: Path,
               paths: _Paths, node: Node | None,
               where: Where, whole: _Whole) -> Item:
    """The members of a stored map (at ``where`` in ``new``) merged (see
    :func:`merge_items`), each write of a member appended to ``paths``; a member the
    stored map holds under its alias is written there."""
    out = dict(stored)  # (members left as stored, and those no model declares)
    model = node and nested(node)
    origins = whole[2]
    for name, av in new.items():
        before = old.get(name)
        if before == av and not origins:  # (no member read elsewhere: none moved in)
            continue  # untouched: as stored (a member the stored map lacks stays absent)
        place = (*where, name)
        read = _moved_in(whole, place)
        if before == av and not read and place not in whole[3]:
            continue
        alias = model.aliases.get(name, name) if model else name
        key = alias if alias in stored else name
        child = model.child(f".{name}") if model and ("M" in av or "L" in av) else None
        out[key] = _member(*(read or (stored.get(key), before)), av, (*path, key),
                           [] if read else paths, child, place, whole)
        if read:  # (moved in from elsewhere: written whole)
            paths.append(((*path, key), out[key]))
    for name in () if old.keys() <= new.keys() else sorted(old.keys() - new.keys() & stored.keys()):
        del out[name]
        paths.append(((*path, name), None))  # removed by the change
    return out


def _member(was: AttributeValue | None, before: AttributeValue | None, av: AttributeValue,
            at: Path, paths: _Paths, node: Node | None,
            where: Where, whole: _Whole) -> AttributeValue:
    """One member merged (``was`` as stored, ``before`` as old, ``av`` as new, at path
    ``at`` and place ``where``): alike, each known member of its lists in its place, as
    stored; a map in all three, merged by member; else ``av`` (a list: :func:`_merged`),
    written by its path."""
    if before == av and where not in whole[3]:
        return was or av
    if "M" in av and was is not None and before is not None and _maps(was, before, av):
        return {"M": _merge_map(was["M"], before["M"], av["M"], at, paths, node, where, whole)}
    if was is None and whole[2] and _maps(av):  # (a new map: its lists' known members)
        out = _member({"M": {}}, {"M": {}}, av, at, [], node, where, whole)
    else:
        out = _merged(was, before, av, node, where, whole) if "L" in av else av
    paths.append((at, out))
    return out


def _at(av: Any, steps: Where) -> Any:
    """The value at ``steps`` in ``av`` (``None``: none there)."""
    for step in steps:
        try:
            av = av["L" if type(step) is int else "M"][step]
        except (KeyError, IndexError, TypeError):
            return None
    return av


def _moved_in(whole: _Whole, place: Where) -> _Read:
    """The stored and old forms of the member now at ``place`` when it was read elsewhere
    (``None``: it was not, or is not in both)."""
    at = whole[2].get(place)
    return _read(whole, at) if at and at != place else None


def _read(whole: _Whole, at: Where, here: tuple[Where, Any, Any] = ((),) * 3) -> _Read:
    """The stored and old forms of the member at ``at`` (``None``: not in both), in the
    items, else (under an alias) in the list ``here`` (place, stored, old) it was read in."""
    found = [_at({"M": item}, at) for item in whole[:2]]
    if None in found and at[:-1] == here[0]:
        found = [_at(av, at[-1:]) for av in here[1:]]
    return None if None in found else (found[0], found[1])


def _merged(stored: AttributeValue | None, old: AttributeValue | None, new: AttributeValue,
            node: Node | None, where: Where, whole: _Whole) -> AttributeValue:
    """``new`` (a list, at ``where``), written whole, each member merged with the stored
    one it was read from (the origins', else :func:`_by_value`'s)."""
    now, origins = new["L"], whole[2]
    read = [_read(whole, at, (where, stored, old)) if (at := origins.get((*where, n))) else None
            for n in range(len(now))]
    if (*where, 0) not in origins:
        read = _by_value(stored, old, [None] * len(now) if any(  # (a list of known lists:
            w[:len(where)] == where for w in origins) else now)  # matched by place alone)
    return {"L": [_member(at and at[0], at and at[1], av, (), [], node, (*where, n), whole)
                  for n, (av, at) in enumerate(zip(now, read, strict=True))]}


def _by_value(stored: AttributeValue | None, old: AttributeValue | None,
              now: list[Any]) -> list[_Read]:
    """Where each member of ``now`` was read when no origin says: an unchanged one, its
    own place first, else wherever it moved; a changed one (a ``None``: any), its own
    place if free (none: lists not as long)."""
    was, before = (stored or {}).get("L") or [], (old or {}).get("L") or []
    if len(was) != len(before):
        was = before = []
    free = [True] * len(before)
    origin = []
    for n, av in enumerate(now):
        at = next((i for i in (n, *range(len(before))) if i < len(before) and free[i]
                   and before[i] == av), None)
        if at is not None:
            free[at] = False
        origin.append(at)
    for n, at in enumerate(origin):
        if at is None and n < len(before) and free[n]:
            origin[n] = n
    return [None if at is None else (was[at], before[at]) for at in origin]
