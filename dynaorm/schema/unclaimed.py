"""Stored type names that no class claims: never invisible.

The type attribute of a stored item names the class that wrote it (its class name unless
``Meta.type_name`` says otherwise). Rename the class and its items carry a name that no
class of the table claims any more: a read for the new class does not return them. Such
an item is never silently dropped: a query counts it in ``Page.skipped``, a read that met
one logs one WARNING per table and type name on the ``dynaorm`` logger (naming the fix),
and ``dynaorm check`` reports every such item as ``unclaimed-type``. dynaorm's own rows
(receipts, Powertools records) are claimed, by dynaorm, whether the table has a type
attribute or not; so are the rows a rule adds to its entity's writes (a rule a user
registers included: an audit row), told by what the rule's ``rows`` hook writes on a
described write, as ``table.model()`` lists them (:func:`rule_row`).

Where a rule's row kind and an entity's key templates could fit one key, the more specific
shape wins, as a literal key wins over a template between entities: the row is the rule's
when its kind's templates are narrower than the entity's (:func:`ruled_over`, asked by
:meth:`~dynaorm.schema.spec.EntitySpec.outranked` and the stream reader alike), the
entity's when the entity's are; on a table without a type attribute a pair neither ranks
is refused when the class is defined (:func:`check_rule_rows`).

Pure apart from the once-per-name warning (the logging module, imported by the first
warning).
"""

import threading
import warnings
import weakref
from collections.abc import Mapping
from typing import Any, NamedTuple

from dynaorm._types import Item, PlainKey
from dynaorm.errors import DynaormError, KeyTemplateError
from dynaorm.plugins import SURFACE_ROWS, loaded
from dynaorm.protocol.hooks import logger
from dynaorm.schema.checks import could_overlap
from dynaorm.schema.rules.receipts import own_row
from dynaorm.schema.templates import KeyTemplate
from dynaorm.values.keys import GUARD_TYPE, OWN_PREFIX, key_av, named
from dynaorm.values.records import Put, Role


def surface_hint(item: Mapping[str, Any], pk: str, sk: str | None, type_name: str | None
                 ) -> str | None:
    """What to do about ``item`` (of a table keyed on ``pk``/``sk``, stored under
    ``type_name``) when it is a row a surface keeps (found by its entry point,
    :data:`dynaorm.plugins.SURFACE_ROWS`: LangGraph's ``Saver`` and ``Store``) that no
    class of the process claims; ``None``: no surface's. The surfaces are loaded once (per
    :func:`~dynaorm.plugins.forget`); one whose ``claims`` raises is left out from then
    on, with one ``RuntimeWarning``, never the error of a read or a check."""
    surfaces = loaded(SURFACE_ROWS)
    for name, rows in list(surfaces.items()):
        try:
            if rows.claims(item, pk, sk, type_name):
                return str(rows.hint)
        except Exception as exc:  # (a third party's bug: left out)
            surfaces.pop(name, None)
            warnings.warn(f"dynaorm: {SURFACE_ROWS} {name!r}: claims() raised {exc!r}",
                          RuntimeWarning, stacklevel=2)
    return None


_lock = threading.Lock()
_warned: set[tuple[str, str]] = set()


class RuleRow(NamedTuple):
    """A kind of row a rule adds to its entity's writes (beside the rows every reader
    tells by their role: unique guards, version rows, latest copies, receipts)."""

    entity: type[Any]
    """The entity whose writes carry it."""
    rule: str
    """The rule's name (:attr:`~dynaorm.Rule.name`)."""
    type_name: str | None
    """The type name it carries in the table's type attribute (``None``: none)."""
    pk: KeyTemplate | None
    """The shape of its partition key, as the rule renders it for a described write
    (``{field}`` where a field's value goes; ``None``: not a key shape)."""
    sk: KeyTemplate | None = None
    """The shape of its sort key where every described write renders the same one (then
    a row without a type name must fit it too); ``None``: it varies (``insert#...``,
    ``delete#...``), or no sort key."""


#: each entity class's rule rows, with the spec they were found for (a class defined
#: again gets a new spec: found again)
_RULE_ROWS: weakref.WeakKeyDictionary[type[Any], tuple[Any, tuple[RuleRow, ...]]] = (
    weakref.WeakKeyDictionary())


def rule_rows(spec: Any) -> tuple[RuleRow, ...]:
    """The kinds of row the rules of ``spec``'s entity add to its writes, found as the
    model finds them (:func:`~dynaorm.schema.model.row_kinds`): each rule's ``rows`` hook
    run on a described insert, update and delete, each ``Put`` of a row of role
    ``row`` (not the entity's own row) being one; asked once per entity class."""
    found = _RULE_ROWS.get(spec.cls)
    if found is not None and found[0] is spec:
        return found[1]
    from dynaorm.schema.described import described, own_key

    own, table = own_key(spec), spec.table
    sort_keys: dict[tuple[str, str | None, str], set[str]] = {}
    for write in ("insert", "update", "delete"):
        change = described(spec, write)
        for add in spec.rules.adders:
            try:
                added = add(change)
            except Exception:  # (a rule that cannot describe its rows claims none)
                continue
            for op in (*added.before, *added.after):
                if isinstance(op, Put) and op.origin.role is Role.ROW and op.key != own:
                    name = named(op.item, table.type_attribute)
                    kind = (str(getattr(getattr(add, "__self__", None), "name", "?")),
                            name if isinstance(name, str) and name not in table.entities
                            else None, str(op.key.get(table.pk, "")))
                    sort_keys.setdefault(kind, set()).add(str(op.key.get(table.sk or "", "")))
    rows = tuple(RuleRow(spec.cls, rule, name, _shape(pk),
                         _shape(next(iter(sks))) if len(sks) == 1 else None)
                 for (rule, name, pk), sks in sort_keys.items())
    _RULE_ROWS[spec.cls] = (spec, rows)
    return rows


def _shape(text: str) -> KeyTemplate | None:
    """A key a rule renders for a described write, as a template (``None``: none, or a
    value computed from a placeholder, which is no shape)."""
    try:
        return KeyTemplate.parse(text) if text else None
    except DynaormError:
        return None


def _fits(template: KeyTemplate | None, av: Any) -> bool:
    """Whether the key attribute value ``av`` (a string) fits ``template``."""
    text = av.get("S") if isinstance(av, dict) else None
    return template is not None and isinstance(text, str) and (
        template.parse_key(text) is not None)


def rule_row(table: Any, item: Item | None) -> RuleRow | None:
    """The kind of rule row ``item`` (a stored row of ``table``, an image or a key) is,
    if a rule of an entity of ``table`` writes it: by its type name where it carries
    one (a name no class claims), else by its partition key's shape; ``None``: none.
    Asked of an item no entity claims (an entity's own rows come first)."""
    if item is None:
        return None
    name = named(item, table.type_attribute)
    for cls in table.entities.values():
        for row in rule_rows(cls.__dynaorm_spec__):
            if name is not None:
                if row.type_name == name:
                    return row
            elif _row_fits(table, row, item):
                return row
    return None


def _row_fits(table: Any, row: RuleRow, item: Item) -> bool:
    """Whether the table key of ``item`` fits the key shape of rule row kind ``row``."""
    return _fits(row.pk, item.get(table.pk)) and (
        row.sk is None or _fits(row.sk, item.get(table.sk or "")))


def _pairs(row: RuleRow, spec: Any) -> list[tuple[KeyTemplate, KeyTemplate]]:
    """A rule row kind's templates and an entity's, on each key attribute both give one
    for (a kind without one sort key shape is ranked on its partition key)."""
    assert row.pk is not None
    return [(row.pk, spec.pk), *([(row.sk, spec.sk)] if row.sk and spec.sk else [])]


def _narrower(pairs: list[tuple[KeyTemplate, KeyTemplate]]) -> bool:
    """Whether each pair's first template is within its second, and one strictly
    (:meth:`~dynaorm.schema.templates.KeyTemplate.covers`)."""
    return all(b.covers(a) for a, b in pairs) and not all(a.covers(b) for a, b in pairs)


class _Claims(NamedTuple):
    """What may claim a key ``spec``'s entity renders, before it does (:func:`_claims`)."""

    classes: tuple[type[Any], ...]
    """The table's entity classes it was found for (it holds while they are: a class's
    spec, and so its rules and rule rows, is made with it)."""
    literals: tuple[tuple[Any, KeyTemplate, KeyTemplate | None], ...]
    """The layouts ``(entity, pk, sk)`` whose literal keys win over ``spec``'s templates
    where both may fit a key, previous ones included
    (:meth:`~dynaorm.schema.spec.EntitySpec.literal_claims`)."""
    rows: tuple[RuleRow, ...]
    """Rule row kinds narrower than ``spec``'s templates."""


#: each entity class's claims, with the spec they were found for
_CLAIMS: weakref.WeakKeyDictionary[type[Any], tuple[Any, _Claims]] = weakref.WeakKeyDictionary()


def _claims(spec: Any) -> _Claims:
    """The entities and rule row kinds whose key shapes win over ``spec``'s templates,
    found once per spec and the table's entity classes (one defined or redefined: found
    again); each key or item then costs one parse per candidate, never a ranking. An
    entity whose literal keys cannot be keys of ``spec``'s is left out, by the grammar: a
    literal of its that ``spec``'s template beside it does not cover
    (:meth:`~dynaorm.schema.templates.KeyTemplate.covers`); a template on both sides, or a
    sort key read under a layout's prefix, leaves it in (the item decides). An entity's
    previous layout (``Meta.previous``) claims as its current one until migrated."""
    classes = tuple(spec.table.entities.values())
    found = _CLAIMS.get(spec.cls)
    if found is not None and found[0] is spec and found[1].classes == classes:
        return found[1]
    rows = tuple(r for c in classes for r in rule_rows(c.__dynaorm_spec__)
                 if r.pk is not None and _narrower(_pairs(r, spec)))
    literals = tuple((w, pk, sk) for w, pk, sk in spec.literal_claims() if all(
        mine.covers(theirs) for mine, theirs in ((spec.pk, pk), (spec.sk, sk))
        if mine and theirs and theirs.is_literal and not (
            mine is spec.sk and (spec.rules.sort_keys.latest or w.rules.sort_keys.latest))))
    claims = _Claims(classes, literals, rows)
    _CLAIMS[spec.cls] = (spec, claims)
    return claims


def ruled_over(spec: Any, item: Item, rows: tuple[RuleRow, ...] | None
               ) -> RuleRow | None:
    """The rule row kind ``item``, whose key may fit the key templates of ``spec``'s
    entity, is a row of instead: its key fits a rule row kind narrower than them (an
    audit row ``AUDIT#ORDER#{oid}`` within ``AUDIT#{kind}#{ref}``); ``None``: none.
    ``rows``: those kinds, found already."""
    table = spec.table
    return next((r for r in (_claims(spec).rows if rows is None else rows)
                 if _row_fits(table, r, item)), None)


def claimant(spec: Any, item: Item) -> Any:
    """What claims ``item``'s key before the key templates of ``spec``'s entity, where both
    fit it: an entity whose literal key it is (its spec), a rule's row kind narrower than
    them (:func:`ruled_over`); ``None``: nothing."""
    claims = _claims(spec)
    return next((w for w, pk, sk in claims.literals if w.fits_layout(item, pk, sk)),
                None) or ruled_over(
        spec, item, claims.rows)


def refuse_claimed(spec: Any, key: PlainKey) -> None:
    """Refuse ``key``, a key ``spec``'s entity renders for an object, where reads would
    take the item stored there for something else, so a save would be told it stored an
    object no read returns: another entity whose literal key it is (``USER#admin`` /
    ``PROFILE`` of an ``AdminProfile``, rendered by a ``Profile`` keyed ``USER#{id}`` with
    ``id="admin"``: :meth:`~dynaorm.schema.spec.EntitySpec.outranked`), or a rule's row
    kind (a ``Ledger`` keyed ``AUDIT#{kind}#{ref}`` with ``kind="ORDER"``, where an audit
    rule writes ``AUDIT#ORDER#{oid}`` rows: :func:`ruled_over`). Asked on a table without
    a type attribute (with one, the stored type name tells them apart)."""
    claims = _claims(spec)
    if not claims.literals and not claims.rows:
        return  # (most entities: nothing can claim their keys, nothing to build)
    who = claimant(spec, {attr: key_av(text) for attr, text in key.items()})
    if who is not None:
        why = (f"fits the rows rule {who.rule!r} adds to {who.entity.__name__}'s writes "
               f"({who.pk}, {who.sk})" if isinstance(who, RuleRow)
               else f"is {who.name}'s literal key")
        raise KeyTemplateError(
            f"{spec.name}: the key {key!r} {why}; table {spec.table.name!r} has no type "
            "attribute, so reads would take it for theirs (choose other key values, or give "
            "the table a type attribute)")


def check_rule_rows(spec: Any) -> None:
    """Refuse, on a table without a type attribute, an entity whose key templates and a
    rule's row kind (its own rules' or another entity's) could fit one key where neither
    is narrower than the other, as two entities' unranked templates are refused;
    ``Meta.overlaps = 'refuse'`` on either entity refuses any such pair."""
    table = spec.table
    if table.type_attribute is not None:
        return
    specs = [spec, *(c.__dynaorm_spec__ for c in table.entities.values()
                     if c.__qualname__ != spec.cls.__qualname__)]
    for owner in specs:
        for row, entity in ((r, e) for r in rule_rows(owner)
                            for e in (specs if owner is spec else (spec,))):
            pairs = [] if row.pk is None else _pairs(row, entity)
            if not pairs or not all(could_overlap(a, b) for a, b in pairs):
                continue
            ranked = _narrower(pairs) or _narrower([(b, a) for a, b in pairs])
            if not ranked or "refuse" in (entity.overlaps, owner.overlaps):
                raise _unranked(entity, row, owner, ranked)


def _unranked(entity: Any, row: RuleRow, owner: Any, ranked: bool) -> DynaormError:
    """The error of an entity whose key templates and a rule's row kind could fit one
    key, where no precedence tells them apart (``ranked``: one would, but ``Meta.overlaps
    = 'refuse'`` keeps such pairs out), in the words two entities' overlap gets."""
    def shown(t: KeyTemplate | None) -> str | None:
        return None if t is None else t.source
    why = ("Meta.overlaps = 'refuse' keeps such pairs out" if ranked else
           "neither key shape is narrower than the other, so no precedence can tell them "
           "apart")
    return DynaormError(
        f"{entity.name}: its keys ({shown(entity.pk)!r}, {shown(entity.sk)!r}) could match "
        f"the same item as the row rule {row.rule!r} adds to {owner.name}'s writes "
        f"({shown(row.pk)!r}, {shown(row.sk)!r}); table {entity.table.name!r} has no type "
        f"attribute, so items are told apart by key shape only ({why})")


def claimed_names(table: Any) -> frozenset[str]:
    """Every type name a class of ``table`` claims: its own ``type_name`` and the one its
    ``Meta.previous`` declares, plus unique guards and the rows its rules add
    (:func:`rule_rows`); a row keyed in dynaorm's namespace (a receipt, a surface's row
    kind's) is claimed too (:func:`unclaimed_name`)."""
    names = {GUARD_TYPE, *table.entities}
    for cls in table.entities.values():
        spec = cls.__dynaorm_spec__
        if spec.previous is not None:
            names.add(spec.previous.type_name)
        names.update(r.type_name for r in rule_rows(spec) if r.type_name is not None)
    return frozenset(names)


def unclaimed_name(table: Any, item: Item) -> str | None:
    """The stored type name of ``item`` when no class of ``table`` claims it, else ``None``
    (also ``None`` on a table without a type attribute, or an item without one)."""
    name = named(item, table.type_attribute)
    if name is None or name in table.entities or (
            name.startswith(OWN_PREFIX) and own_row(table, item)):
        return None  # (most items: a class's or dynaorm's; the rest looks at every class)
    return None if name in claimed_names(table) else name


def unclaimed_shape(table: Any, item: Item) -> bool:
    """Whether ``item``, an item of ``table`` (without a type attribute) whose key fits no
    entity's key templates, is one nobody claims: not one of dynaorm's own rows (a
    receipt, a Powertools record), which are claimed, by dynaorm, as on a table with a
    type attribute, nor a row a rule adds to its entity's writes (:func:`rule_row`)."""
    return not own_row(table, item) and rule_row(table, item) is None


def fix_hint(name: str) -> str:
    """What to do about items stored under type name ``name`` that no class claims."""
    return surface_hint({}, "", None, name) or (
        f"if a class was renamed, give it back its stored name with 'class Meta: type_name "
        f"= {name!r}', or declare 'Meta.previous = Previous(type_name={name!r})' and run "
        "'dynaorm migrate'")


def note_unclaimed(table: Any, item: Item) -> bool:
    """Whether ``item`` carries a type name no class of ``table`` claims; the first time a
    name is met on a table, one WARNING on the ``dynaorm`` logger says so and how to fix."""
    name = unclaimed_name(table, item)
    if name is None:
        return False
    mark = (str(table.name), name)
    with _lock:
        if mark in _warned:
            return True
        _warned.add(mark)
    logger().warning("dynaorm: table %r holds items of type name %r that no class claims, so "
                     "reads skip them (counted in Page.skipped; 'dynaorm check' lists them): %s",
                     table.name, name, fix_hint(name))
    return True
