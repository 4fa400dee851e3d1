"""dynaorm's own rows in a sample: a row kind's and LangGraph's (never entities), the
unique guards (``unique`` rules of the entities they name, scoped where their keys say
so), and values offloaded to S3 (where they went; their bytes read beside them)."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import suppress
from typing import Any, Final

from dynaorm.codec import GUARD_TYPE
from dynaorm.errors import DynaormError
from dynaorm.formats.infer.entities import _Entity
from dynaorm.formats.infer.items import Entry, Item, Table, _base_key, _text
from dynaorm.formats.infer.naming import _IDENT
from dynaorm.formats.infer.templates import _escaped
from dynaorm.keys import OWN_PREFIX, KeyTemplate
from dynaorm.schema.entity import spec_of
from dynaorm.schema.rules import offloaded
from dynaorm.schema.unclaimed import surface_hint

#: what a guard item of dynaorm holds beside its key (its owner and the field it guards)
_GUARD_ATTRS: Final = ("owner_pk", "owner_sk", "owner_type", "unique_field")


def _offload_at(items: Sequence[Item]) -> str | None:
    """Where most of the offloaded values of ``items`` went (``s3://BUCKET/PREFIX``, the
    printed table's ``offload=``; ``None``: none is)."""
    seen = Counter(r.location for i in items for r in offloaded.references(i).values())
    return seen.most_common(1)[0][0] if seen else None


def opened_values(items: Iterable[Mapping[str, Any]], entity_of: Callable[[Any], Any]
                  ) -> dict[int, Any]:
    """The plaintexts of the sealed values of ``items`` (each item's class: ``entity_of``)
    as its class's rules open them, by the identity of each value stored: with its
    table's keyring, not under a tenant's key nor a ``KmsKeyring``'s not asked for. The
    rules that keep a value outside the row or seal it are undone; a ``Compressed`` value
    inside stays as stored, for its kind to be seen."""
    opened: dict[int, Any] = {}
    for item in items:
        spec = (cls := entity_of(item)) and spec_of(cls)
        if spec and (sealing := spec.rules.by_name.get("encrypted")):
            with suppress(DynaormError, RuntimeError):  # (NotPrepared: a key not asked)
                plain = sealing.decode(spec.rules.unplace(dict(item)))
                opened.update((id(item[a]), plain[a]) for a in spec.encrypted.keys() & item.keys())
    return opened


def read_offloaded(items: Sequence[dict[str, Any]],
                   read: Callable[[list[offloaded.Reference]], Iterable[bytes | Exception]]
                   ) -> None:
    """Each reference to an offloaded value (``Offloaded``) of ``items`` with its object's
    bytes beside it, as a read puts them (``read``: each object's bytes, or the error
    reading it gave): the value is typed, and the printed model decodes it."""
    wanted = [(item, attr, ref) for item in items
              for attr, ref in offloaded.references(item).items()]
    for (item, attr, ref), body in zip(wanted, read([r for *_, r in wanted]), strict=True):
        item[attr] = offloaded.fetched(item[attr], ref, body)


def _own(item: Item, kind: str | None, table: Table) -> bool:
    """Whether ``item`` (of type value ``kind``) is one of dynaorm's own rows that no
    entity claims: a row kind's (a receipt, a Powertools record, a surface's:
    :class:`dynaorm.RowKind`), by its partition key in dynaorm's namespace, or a row a
    surface keeps (LangGraph's: :func:`~dynaorm.schema.unclaimed.surface_hint`)."""
    pk = _text(item.get(table["pk"]))
    return (pk is not None and pk.startswith(OWN_PREFIX)) or surface_hint(
        item, table["pk"], table["sk"], kind) is not None


def _sorted_items(items: Sequence[Item], table: Table, type_attr: str | None,
                  own: list[Item]) -> tuple[list[Entry],
                                            list[Item], list[Item]]:
    """The items of entities (with their key texts), dynaorm's unique guards, and those
    of no key it reads; dynaorm's own rows (receipts, LangGraph's) put in ``own``."""
    entries = []
    guards = []
    unplaced = []
    for item in items:
        kind = _text(item.get(type_attr)) if type_attr else None
        if _own(item, kind, table):
            own.append(item)
            continue
        if kind is not None and kind.startswith(OWN_PREFIX) and kind != GUARD_TYPE:
            unplaced.append(item)  # (dynaorm's prefix, no row of its: no entity's name)
            continue
        if kind == GUARD_TYPE or all(a in item for a in _GUARD_ATTRS[::2]):
            guards.append(item)
            continue
        base = _base_key(item, table)
        if base is None:
            unplaced.append(item)
        else:
            entries.append((item, *base))
    return entries, guards, unplaced


def _guards(entities: Sequence[_Entity], guards: Sequence[Item], unplaced: list[Item],
            table: Table) -> None:
    """dynaorm's unique guard items as ``unique`` rules of the entities they name (one
    rule for the guards of one owner's field: :func:`_rule`)."""
    by_type = {e.group.type_name or e.group.name: e for e in entities}
    found = defaultdict(list)
    for guard in guards:
        type_name, name, key = (_text(guard.get(a)) or "" for a in (
            "owner_type", "unique_field", table["pk"]))
        owner = by_type.get(type_name)
        if owner is None or name not in {f["name"] for f in owner.fields} or "#" not in key:
            unplaced.append(guard)
            continue
        found[(type_name, name)].append((key, guard))
    for (type_name, name), keyed in found.items():
        owner = by_type[type_name]
        for rule in _rules(owner, name, keyed, table):
            if rule not in owner.unique:
                owner.unique.append(rule)


def _rules(owner: _Entity, name: str, keyed: Sequence[tuple[str, Item]],
           table: Table) -> list[dict[str, Any]]:
    """The ``unique`` rules of ``owner``'s field ``name`` its guards (``keyed``: each
    guard's key text) hold: one scoped by a template of the owner's fields when the
    guards' keys render it (by the key grammar) before one prefix and it differs between
    them (``acme#email#a@x``, ``beta#email#b@x``: ``scope="{tenant_id}"``), else one of a
    literal prefix per prefix the keys hold."""
    heads = {key: key.rsplit("#", 1)[0] for key, _ in keyed}
    literal = [{"field": name, "prefix": p, "scope": None, "normalize": None}
               for p in dict.fromkeys(heads.values())]
    if len(literal) == 1:
        return literal
    values = {key: _owner_values(owner, guard, table) for key, guard in keyed}
    for scope in _scopes(owner):
        prefixes = set()
        leads = set()
        for key, head in heads.items():
            if values[key] is None:  # (its owner not sampled: its key parsed below)
                continue
            lead = _rendered(scope, values[key])
            if lead is None or not head.startswith(lead + "#"):
                break
            prefixes.add(head[len(lead) + 1:])
            leads.add(lead)
        else:
            if len(prefixes) != 1 or len(leads) < 2 or "" in prefixes:
                continue
            prefix = prefixes.pop()
            whole = KeyTemplate.parse(f"{scope.source}#{_escaped(prefix)}")
            if all(whole.parse_key(head) is not None for head in heads.values()):
                return [{"field": name, "prefix": prefix, "scope": scope.source,
                         "normalize": None}]
    return literal


def _owner_values(owner: _Entity, guard: Item, table: Table
                  ) -> dict[str, str] | None:
    """The field texts of the sampled item of ``owner`` the guard names as its owner (its
    stored attributes, and what its keys hold by the owner's templates); ``None`` when
    the sample does not hold it."""
    wanted = {a: _text(guard.get(o)) for a, o in ((table["pk"], "owner_pk"),
                                                  (table["sk"], "owner_sk")) if a}
    for item in owner.group.items:
        if all(_text(item.get(a)) == text for a, text in wanted.items()):
            out = {f["name"]: t for f in owner.fields if (t := _text(item.get(f["stored"])))}
            for attr, template in owner.parsed.items():
                text = _text(item.get(attr))
                parsed = template.parse_key(text) if text is not None else None
                out.update({k: v for k, v in (parsed or {}).items() if k not in out})
            return out
    return None


def _scopes(owner: _Entity) -> list[KeyTemplate]:
    """The scope templates a guard of ``owner`` may render before its prefix: each field
    alone (``{tenant_id}``), and each leading run of the owner's key templates that ends
    at a field (``ORG#{org_id}``)."""
    out: dict[str, KeyTemplate] = {}
    for f in owner.fields:
        if _IDENT.match(f["name"]):
            out.setdefault("{" + f["name"] + "}", KeyTemplate.parse("{" + f["name"] + "}"))
    for template in owner.parsed.values():
        for name in template.fields:  # (the leading part as written: a format spec kept)
            source = template.prefix_through(name)
            out.setdefault(source, KeyTemplate.parse(source))
    return sorted(out.values(), key=lambda t: -len(t.segments))


def _rendered(scope: KeyTemplate, values: Mapping[str, str] | None) -> str | None:
    """The text ``scope`` renders from ``values`` (``None``: a field it needs is missing,
    or its value is refused there)."""
    if values is None or not all(f in values for f in scope.fields):
        return None
    try:
        return scope.render(values)
    except DynaormError:
        return None
