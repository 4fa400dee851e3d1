"""Data audit: find (and repair) inconsistencies that a healthy dynaorm table never holds.

dynaorm keeps unique guard items and the latest copies of versioned entities right by
committing them in the same transaction as their owner. Items written by other tools,
partial restores or manual edits can still break that. :func:`audit_items` inspects the
items of a full table scan (pure: no I/O) and reports four kinds of repairable problem:

- ``orphan-guard``: a guard item whose owner is gone or no longer holds that value;
- ``missing-guard``: an owner whose unique value has no guard item;
- ``stale-latest``: a versioned entity's latest copy (``v0_X``) that differs from its
  newest version row;
- ``stale-index``: an entity item whose secondary-index key attributes differ
  from its index templates rendered from its stored fields (after a template changed, or a
  write by another tool); the fix re-renders them.

A guard missing because a unique rule was added after the data was written is a
``missing-guard`` like any other: the fix backfills it.

TTL (0.3, tables with ``Table(ttl=...)``): a guard carries its owner's TTL, and a version
row keeps its entity's TTL aside (never under the TTL attribute). Two more repairable
kinds follow: ``guard-ttl`` (a guard whose TTL is not its owner's, e.g. written by 0.2
without one: it would block its value after the owner expired; the fix stamps the owner's
TTL on it) and ``history-ttl`` (a version row carrying the TTL attribute, written by 0.2:
DynamoDB would delete it alone, leaving a gap in the history; the fix moves the value
aside). An item whose TTL has passed is never a finding: DynamoDB deletes it.

More are reported but never repaired automatically, because a human must choose:
``duplicate`` (two owners hold one unique value), ``no-history`` (a latest copy without
any version row), ``unclaimed-type`` (an item whose stored type name no class of the table
claims, typically after a class was renamed: every read skips it; the fix is
``Meta.type_name`` or ``Meta.previous``), ``unclaimed-item`` (on a table without a type
attribute, an item whose key fits no entity's templates and that is none of dynaorm's own
rows: another tool's guard, a kind of item no class maps) and ``stale-key`` (an item whose
table key no longer matches its key templates, or whose fields render no key today: a row
0.7 wrote for tenant ``acme-corp`` at ``T-acme-corp-123``, which the grammar reads as
tenant ``acme``'s, and which a scoped session therefore skips; moving it changes its
identity; load and save it under the new key).
Each repairable problem carries its fix as plain data: the
``TransactItems`` of one ``TransactWriteItems`` request, conditioned so that it only
applies to the items as they were scanned. :func:`repair` sends them.
:mod:`dynaorm.jobs.checking` runs the same checks page by page, with a checkpoint.
"""

import uuid
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

from dynaorm._types import Item, PlainKey
from dynaorm.client.table import Table
from dynaorm.errors import DynaormError, ForgottenError, OffloadError, RequestError
from dynaorm.protocol.hooks import Operation
from dynaorm.protocol.steps import Emit, Proto, Stream, call
from dynaorm.read.pager import DONE, Pager
from dynaorm.schema.entity import encode_entity, prepare_rows, preparing, spec_of
from dynaorm.schema.rules.keyrings import NotPrepared
from dynaorm.schema.rules.unique import (
    OWNER_PK,
    OWNER_SK,
    OWNER_TYPE,
    UNIQUE_FIELD,
    UniqueRule,
    guard_item,
)
from dynaorm.schema.rules.versioned import VERSION_TTL, parse_version_sk, version_row, version_sk
from dynaorm.schema.spec import EntitySpec
from dynaorm.schema.templates import SHARD_FIELD
from dynaorm.schema.unclaimed import (
    fix_hint,
    surface_hint,
    unclaimed_name,
    unclaimed_shape,
)
from dynaorm.values.codec import decode_item
from dynaorm.values.expressions import (
    Condition,
    Placeholders,
    all_of,
    exists,
    not_exists,
    raw_eq,
    stored_as,
)
from dynaorm.values.keys import GUARD_TYPE, key_av, key_value, named
from dynaorm.values.revision import new_revision, stamp_of
from dynaorm.values.ttl import expired

#: the kinds of problem, in the order they are reported (guards first)
Kind = Literal["orphan-guard", "missing-guard", "duplicate", "stale-latest", "no-history",
               "stale-index", "stale-key", "guard-ttl", "history-ttl", "unclaimed-type",
               "unclaimed-item", "dangling-ref", "orphan-object", "forgotten"]
#: what :attr:`CheckResult.unclaimed <dynaorm.jobs.checking.CheckResult>` counts the items
#: of a table without a type attribute that no entity claims under
UNTYPED = "(no type attribute)"
Key = tuple[str, str]


@dataclass(frozen=True)
class Problem:
    """One inconsistency: what, which item, why, and the transaction that fixes it."""

    kind: Kind
    key: Key
    detail: str
    fix: tuple[dict[str, Any], ...] = field(default=(), compare=False, repr=False)
    #: the stored type name no class claims (``unclaimed-type``; :data:`UNTYPED` for an
    #: ``unclaimed-item``)
    type_name: str = field(default="", compare=False)

    @property
    def repairable(self) -> bool:
        return bool(self.fix)

    def __str__(self) -> str:
        where = self.key[0] if self.key[1] in ("", self.key[0]) else " | ".join(self.key)
        return f"{self.kind:<14} {where}  ({self.detail})"


@dataclass(frozen=True)
class Repair:
    """The outcome of one fix: ``ok`` False when its conditions no longer held."""

    problem: Problem
    ok: bool
    message: str = ""


# -- scanning ----------------------------------------------------------------------------
def _scan_p(table: Table, pager: Pager, page_size: int | None, operation: str) -> Stream:
    """The pages of a raw, consistent scan of the whole table (every item: guards and
    version rows too), one :class:`Emit` per response, empty pages included, each request
    through the shared retry rules. The paging (``Limit``, ``ExclusiveStartKey``, the
    position after each page) is the reads' :class:`Pager`, over one stream."""
    while True:
        wanted = pager.wants(lambda live: page_size or None)
        if not wanted:
            return
        ((i, request),) = wanted
        try:
            out = yield from call("Scan", request)
        except RequestError as exc:
            raise DynaormError(f"cannot scan table {table.name!r}: {exc}") from exc
        pager.feed(i, out)
        page = pager.take()
        if operation != "export":  # (an export prepares its entities' rows itself)
            yield from prepare_rows(preparing(table), page)  # (key material, S3 values)
        yield Emit(page)


def scan_pages(table: Table, start: Item | None = None, page_size: int | None = None,
               operation: str = "check", segment: tuple[int, int] | None = None
               ) -> Iterator[tuple[list[Item], Item | None]]:
    """The pages of a consistent scan of every item of ``table``, from ``start`` (a
    ``LastEvaluatedKey``; ``None``: the beginning), fetched lazily: ``(items, position)``
    where ``position`` resumes the scan after the page (``None`` after the last page).
    Each page is one ``operation`` (``"check"``, ``"migrate"``) for the hooks.
    ``segment``: ``(i, n)``, only segment ``i`` of ``n`` (one task of a job)."""
    attrs = [a for a in (table.pk, table.sk) if a]
    where = {} if segment is None else {"Segment": segment[0], "TotalSegments": segment[1]}
    pager = Pager([{"TableName": table.name, "ConsistentRead": True, **where}], [start],
                  keep=list,
                  position_of=lambda item: {a: item[a] for a in attrs}, ordered=False)
    for page in table.db.driver.iterate(_scan_p(table, pager, page_size, operation),
                                        Operation(operation, (table.name,))):
        position = pager.positions[0]
        yield list(page), None if position is DONE else position


def keyed(table: Table, items: Sequence[Item]) -> None:
    """The MACs of the unique encrypted values of ``items`` asked for through ``table``'s
    client (what its keyring lacks), before an audit of ``items`` (pure) needs them."""
    macs = [(spec, rule) for spec in map(spec_of, table.entities.values())
            for rule in spec.uniques if rule.mac is not None]
    if macs:
        owners = list(_Auditor(table, items).owners())

        def macs_p() -> Proto[None]:
            for spec, rule in macs:
                yield from rule.macs_p([v for _, s, v in owners if s is spec], spec.name,
                                       (spec.cls,))

        table.db.driver.run(macs_p(), Operation("check", (table.name,)))


# -- the audit (pure) --------------------------------------------------------------------
class _Auditor:
    def __init__(self, table: Table, items: Sequence[Item]):
        self.table = table
        self.items = {self.key_of(i): i for i in items}
        self.specs = {type_name: spec_of(cls) for type_name, cls in table.entities.items()}
        self.problems: list[Problem] = []

    # helpers
    def key_of(self, item: Item) -> Key:
        sk = self.table.sk
        return key_value(item[self.table.pk]), key_value(item[sk]) if sk else ""

    def plain(self, key: Key) -> PlainKey:
        """``key`` as a table key (attribute -> its text)."""
        return {a: text for a, text in zip((self.table.pk, self.table.sk), key, strict=True) if a}

    def key_av(self, key: Key) -> Item:
        return {a: key_av(text) for a, text in self.plain(key).items()}

    def guard_key(self, text: str) -> Key:
        return text, text if self.table.sk else ""

    def type_of(self, item: Item) -> str | None:
        if self.table.type_attribute is None:  # told apart by key shape
            return next((n for n, s in self.specs.items() if s.fits(item)), None)
        return named(item, self.table.type_attribute)

    def action(self, kind: str, key: Key, condition: Condition | None,
               item: Item | None = None, update: str | None = None,
               ph: Placeholders | None = None) -> dict[str, Any]:
        """One action of a fix (``update``: an ``Update``'s expression, rendered with
        ``ph``, the placeholders the condition then adds to)."""
        ph = ph or Placeholders()
        body: dict[str, Any] = {"TableName": self.table.name}
        if item is not None:
            body["Item"] = item
        else:
            body["Key"] = self.key_av(key)
        if update is not None:
            body["UpdateExpression"] = update
        if condition is not None:
            body["ConditionExpression"] = condition.render(ph)
        return {kind: ph.apply(body)}

    def unchanged(self, item: Item, attrs: Iterable[str | None]) -> Condition | None:
        """The condition that ``item`` exists and its ``attrs`` hold what they held (an
        attribute the table lacks, ``None`` or ``""``, is none)."""
        return all_of([exists(self.table.pk), *stored_as(item, set(filter(None, attrs)))])

    def values(self, spec: EntitySpec, item: Item) -> dict[str, Any] | None:
        try:
            return dict(spec.cls.model_validate(spec.decode_fields(item)).__dict__)
        except ForgottenError as exc:  # (judged around: reported once, as such)
            found = Problem("forgotten", self.key_of(item), (
                f"{spec.name} holds values of the forgotten tenant {exc.scope}: not judged "
                "where they are needed; delete its rows, then repair its orphan guards"))
            self.problems += [] if found in self.problems else [found]  # (once an item)
            return None
        except (ValueError, OffloadError):
            return None  # unreadable owner (e.g. a schema change): cannot judge its guards

    def owners(self) -> Iterator[tuple[Item, EntitySpec, dict[str, Any]]]:
        for key, item in self.items.items():
            spec = self.specs.get(self.type_of(item) or "")
            if spec is None or not spec.uniques:
                continue
            if spec.versioned and (parse_version_sk(key[1]) or (1, ""))[0] != 0:
                continue  # version rows own no guards; the latest copy does
            values = self.values(spec, item)
            if values is not None:
                yield item, spec, values

    # checks
    def check_guards(self) -> None:
        """The unique guards: each guard key's owners (:meth:`check_owners`), then each
        guard item (:meth:`check_guard`)."""
        expected = self.expected_guards()
        for gkey, owners in sorted(expected.items()):
            self.check_owners(gkey, owners)
        for key, item in self.items.items():
            if self.type_of(item) == GUARD_TYPE:
                self.check_guard(key, item, expected.get(key, []))

    def expected_guards(self) -> dict[Key, list[tuple[Item, EntitySpec, UniqueRule]]]:
        """Guard key -> the owners (item, spec, unique rule) whose values render it."""
        expected: dict[Key, list[tuple[Item, EntitySpec, UniqueRule]]] = {}
        for item, spec, values in self.owners():
            for rule in spec.uniques:
                try:
                    text = rule.guard_key(values, spec.name)
                except DynaormError:
                    continue
                if text is not None:
                    expected.setdefault(self.guard_key(text), []).append((item, spec, rule))
        return expected

    def check_owners(self, gkey: Key,
                     owners: list[tuple[Item, EntitySpec, UniqueRule]]) -> None:
        """The owners of one guard key: ``missing-guard`` when one owner has no live guard;
        ``duplicate`` for each owner the guard does not name (unless a single owner's
        guard is an orphan that :meth:`check_guard` re-points to it)."""
        stored = self.items.get(gkey)
        # (a guard whose TTL passed holds nothing: a claim takes it over)
        guard = None if stored is not None and expired(stored, self.table.ttl) else stored
        if guard is None and len(owners) == 1:
            if not expired(owners[0][0], self.table.ttl):
                self.missing(gkey, *owners[0], stored)  # (an expired owner's is free)
            return
        holder = None if guard is None else self.holder(guard)
        held = any(self.key_of(o) == holder[0] and r.field == holder[1]
                   for o, _, r in owners) if holder else False
        if holder is not None and not held and len(owners) == 1:
            return  # an orphan guard that check_guard re-points to this owner
        self.duplicates(gkey, owners, holder)

    def duplicates(self, gkey: Key, owners: list[tuple[Item, EntitySpec, UniqueRule]],
                   holder: tuple[Key, str] | None) -> None:
        """``duplicate``: each live owner of guard key ``gkey`` other than the guard's
        ``holder`` (to fix by hand)."""
        for item, spec, rule in owners:
            if holder is not None and self.key_of(item) == holder[0]:
                continue
            if expired(item, self.table.ttl):
                continue  # its TTL passed: DynamoDB deletes it; it holds nothing
            self.problems.append(Problem("duplicate", self.key_of(item), (
                f"{spec.name}.{rule.field} value {gkey[0]!r} is also held by "
                f"{holder[0][0] if holder else 'another item'}; fix by hand")))

    def holder(self, guard: Item) -> tuple[Key, str]:
        """(owner key, unique field) recorded on a guard item."""
        return ((named(guard, OWNER_PK) or "", named(guard, OWNER_SK) or ""),
                named(guard, UNIQUE_FIELD) or "?")

    def missing(self, gkey: Key, owner: Item, spec: EntitySpec, rule: UniqueRule,
                stale: Item | None) -> None:
        """``missing-guard``: put the guard, conditioned on its absence (or on the expired
        guard ``stale`` still being as judged)."""
        free = not_exists(self.table.pk) if stale is None else self.unchanged(
            stale, (OWNER_PK, OWNER_SK, self.table.ttl, self.table.type_attr))
        self.problems.append(Problem("missing-guard", self.key_of(owner), (
            f"{spec.name}.{rule.field} has no guard item {gkey[0]!r}"),
            self.claim(gkey, owner, spec, rule, free)))

    def claim(self, gkey: Key, owner: Item, spec: EntitySpec, rule: UniqueRule,
              free: Condition | None) -> tuple[dict[str, Any], ...]:
        """The fix that puts ``owner``'s guard of ``rule`` at ``gkey`` (on the condition
        ``free``), conditioned on the owner's values it renders being as judged."""
        okey = self.key_of(owner)
        new = guard_item(spec, rule, gkey[0], self.plain(okey), self.ttl_of(owner))
        return (self.action("Put", gkey, free, new),
                self.action("ConditionCheck", okey, self.unchanged(owner, (
                    *map(spec.attr, rule.fields), self.table.ttl, self.table.type_attr))))

    def check_guard(self, key: Key, guard: Item,
                    owners: list[tuple[Item, EntitySpec, UniqueRule]]) -> None:
        if expired(guard, self.table.ttl):
            return  # its TTL passed: DynamoDB deletes it, and a claim takes it over
        (okey, ofield) = self.holder(guard)
        otype = named(guard, OWNER_TYPE) or "?"
        held = next((o for o, _, r in owners if self.key_of(o) == okey and r.field == ofield),
                    None)
        if held is not None:
            self.check_guard_ttl(key, guard, held)
            return
        owner = self.items.get(okey)
        spec = self.specs.get(otype)
        check: Condition | None
        if owner is None:
            reason = f"its owner {okey[0]} is gone"
            check = not_exists(self.table.pk)
        elif self.type_of(owner) != otype:
            reason = f"its owner {okey[0]} is a {self.type_of(owner)}, not a {otype}"
            check = self.unchanged(owner, (self.table.type_attr,))
        elif spec is None or self.values(spec, owner) is None:
            return  # an owner type this module does not declare: cannot judge
        else:
            rule = next((r for r in spec.uniques if r.field == ofield), None)
            attrs = (*(map(spec.attr, rule.fields) if rule else ()), self.table.type_attr)
            reason = (f"its owner {okey[0]} no longer holds that {ofield}" if rule else
                      f"{otype} has no unique rule on {ofield!r} any more")
            check = self.unchanged(owner, attrs)
        mine = all_of([raw_eq(OWNER_PK, {"S": okey[0]}), *(
            [raw_eq(OWNER_SK, {"S": okey[1]})] if self.table.sk else []),
            raw_eq(self.table.type_attr, {"S": GUARD_TYPE})])
        if len(owners) == 1:  # another owner holds the value: point the guard at it
            item, nspec, nrule = owners[0]
            fix = self.claim(key, item, nspec, nrule, mine)
            reason += f"; {nspec.name} {self.key_of(item)[0]} holds it now: re-point the guard"
        else:
            fix = (self.action("Delete", key, mine), self.action("ConditionCheck", okey, check))
        self.problems.append(Problem("orphan-guard", key, f"{otype}.{ofield}: {reason}", fix))

    def ttl_of(self, owner: Item) -> int | None:
        """The TTL an owner's guards carry: its TTL attribute's epoch seconds, if any."""
        av = owner.get(self.table.ttl or "")
        try:
            return None if av is None or "N" not in av else int(float(av["N"]))
        except ValueError:
            return None

    def check_guard_ttl(self, key: Key, guard: Item, owner: Item) -> None:
        """A guard held by ``owner`` carries the owner's TTL; else ``guard-ttl``,
        fixed by setting (or removing) the guard's TTL, conditioned on the guard and the
        owner's TTL and unique values as judged."""
        ttl = self.table.ttl
        if ttl is None:
            return
        want = self.ttl_of(owner)
        have = guard.get(ttl)
        if have == (None if want is None else {"N": str(want)}):
            return
        ph = Placeholders()
        expr = (f"SET {ph.segments((ttl,))} = {ph.value_av({'N': str(want)})}"  # (whole
                if want is not None else f"REMOVE {ph.segments((ttl,))}")  # names)
        cond = self.unchanged(guard, (OWNER_PK, OWNER_SK, UNIQUE_FIELD, ttl,
                                             self.table.type_attr))
        okey = self.key_of(owner)
        fix = (self.action("Update", key, cond, update=expr, ph=ph),
               self.action("ConditionCheck", okey, self.unchanged(
                   owner, (ttl, self.table.type_attr))))
        shown = "none" if have is None else _shown(have)
        self.problems.append(Problem("guard-ttl", key, (
            f"guard TTL {shown} is not its owner {okey[0]}'s "
            f"({'none' if want is None else want}): it would outlive or predecease it"),
            fix))

    def check_history_ttl(self, key: Key, row: Item) -> None:
        """A version row written by 0.2 carries the TTL attribute: DynamoDB would delete it
        alone (a gap in the history). ``history-ttl``: the fix keeps the value aside (as
        0.3's writer does), conditioned on the row's TTL as judged."""
        ttl = self.table.ttl
        if ttl not in row or expired(row, ttl):
            return  # (an expired one is DynamoDB's to delete: nothing left to save)
        ph = Placeholders()
        # (the TTL attribute by its whole name: never a path)
        expr = f"SET {ph.name(VERSION_TTL)} = {ph.segments((ttl,))} REMOVE {ph.segments((ttl,))}"
        fix = (self.action("Update", key, self.unchanged(row, (ttl,)), update=expr,
                           ph=ph),)
        self.problems.append(Problem("history-ttl", key, (
            f"version row carries the TTL attribute {ttl!r} ({_shown(row[ttl])}): DynamoDB "
            "would delete it alone, leaving a gap in the history"), fix))

    def check_keys(self, only: set[Key]) -> None:
        """The table keys and index key attributes of the items ``only`` names against
        the templates."""
        for key, item in self.items.items():
            if key not in only:
                continue
            spec = self.specs.get(self.type_of(item) or "")
            if spec is None:
                self.check_claimed(key, item)
                continue
            parsed = spec.rules.sort_keys.parse(key[1])  # (a plain layout: none)
            values = self.values(spec, item)
            if values is None:
                continue  # unreadable with today's class: nothing to render from
            version = parsed[0] if parsed is not None else None
            try:
                want = spec.primary_key(values, version)
                index = spec.index_keys(values)
            except DynaormError as exc:  # (a value the key grammar refuses: a row 0.7
                # stored, whose key the grammar reads otherwise than its attributes say)
                self.problems.append(Problem("stale-key", key, (
                    f"{spec.name} fields render no key today ({exc}); the grammar reads "
                    "its key as other values, so a scoped session skips it: fix by hand "
                    "(load it and save it under a valid key, then delete the old item)")))
                continue
            if want != self.plain(key) or (spec.versioned and parsed is None):
                shown = " | ".join(want.values())
                self.problems.append(Problem("stale-key", key, (
                    f"{spec.name} fields render the key {shown!r}; fix by hand "
                    "(load it and save it under the new key, then delete the old item)")))
            if version:
                continue  # version rows are kept out of every secondary index
            self.check_index(key, item, spec, index)

    def check_claimed(self, key: Key, item: Item) -> None:
        """An item whose stored type name no class of the table claims (a renamed class),
        or on a table without a type attribute, one whose key fits no entity's templates
        (another tool's guard, an item of a kind no class maps) and that is none of
        dynaorm's own rows: every read skips it. Never repaired: the fix is in the
        code."""
        if self.table.type_attribute is None:
            if unclaimed_shape(self.table, item):
                hint = surface_hint(item, self.table.pk, self.table.sk, None) or (
                    "map it with an entity (see 'dynaorm model --infer'), or delete it if "
                    "nothing reads it")
                self.problems.append(Problem("unclaimed-item", key, (
                    f"no entity's key templates fit it, reads skip it: {hint}"),
                    type_name=UNTYPED))
            return
        name = unclaimed_name(self.table, item)
        if name is not None:
            self.problems.append(Problem("unclaimed-type", key, (
                f"type name {name!r} is claimed by no class, reads skip it: "
                f"{fix_hint(name)}"), type_name=name))

    def check_index(self, key: Key, item: Item, spec: EntitySpec,
                    want: dict[str, str]) -> None:
        table_keys = {self.table.pk, self.table.sk}
        attrs = sorted(a for a in spec.index_attributes if a not in table_keys)
        wrong = [a for a in attrs if item.get(a) != (
            None if want.get(a) is None else key_av(want[a]))]
        if not wrong:
            return
        ph = Placeholders()
        sets = [f"{ph.segments((a,))} = {ph.value_av(key_av(want[a]))}" for a in wrong
                if a in want]  # (whole names: never paths)
        removes = [ph.segments((a,)) for a in wrong if a not in want]
        expr = " ".join(([f"SET {', '.join(sets)}"] if sets else [])
                        + ([f"REMOVE {', '.join(removes)}"] if removes else []))
        fields = [spec.attr(f) for idx in spec.indexes for f in idx.fields if f != SHARD_FIELD]
        typed = (self.table.type_attribute,) if self.table.type_attribute else ()
        cond = self.unchanged(item, (*fields, *wrong, *typed))
        fix = (self.action("Update", key, cond, update=expr, ph=ph),)
        shown = ", ".join(f"{a} {_shown(item.get(a))!r} -> "
                          f"{want.get(a, '(none)')!r}" for a in wrong)
        self.problems.append(Problem("stale-index", key, f"{spec.name}: {shown}", fix))

    def internal(self, attr: str) -> bool:
        """dynaorm's own bookkeeping attributes (write tokens and the like: ``_`` names
        other than the type attribute and declared fields): never compared."""
        return attr.startswith("_") and attr != self.table.type_attr and not any(
            attr == s.attr(f) for s in self.specs.values() for f in s.stored_fields)

    def carried(self, spec: EntitySpec, row: Item) -> dict[str, Any]:
        """The attributes of a version row that its latest copy must match, decoded
        through the entity's rules: its TTL and native index keys put back where it
        keeps them aside (a TTL still under the TTL attribute, as 0.2 wrote it, too), its
        ciphertexts opened (each is bound to its own row: compared as plaintext)."""
        skip = {self.table.sk, *([spec.history_index[1]] if spec.history_index else [])}
        return decode_item({a: v for a, v in spec.rules.decode(row).items()
                            if a not in skip and not self.internal(a)})

    def latest_of(self, spec: EntitySpec, row: Item, latest_sk: str) -> Item | None:
        """The latest copy rebuilt from a version row: its fields read through the rules
        (a kept TTL and native index keys put back, ciphertexts opened) and written as a
        save writes a latest copy (index keys rendered, ciphertexts sealed for the latest
        key, a fresh revision), with the attributes no class here declares."""
        values = self.values(spec, row)
        if values is None:
            return None
        assert self.table.sk is not None
        key = spec.stored_key(row) | {self.table.sk: latest_sk}
        try:
            out = encode_entity(spec.cls.model_validate(values), spec, key=key)
        except (DynaormError, ValueError):
            return None
        skip = {*([spec.history_index[1]] if spec.history_index else [])}
        out.update({a: v for a, v in row.items()
                    if a not in out and a not in skip and not self.internal(a)})
        return out | stamp_of(self.table, new_revision())

    def check_versions(self) -> None:
        newest: dict[tuple[str, str], tuple[int, Item]] = {}
        latest = []
        for key, item in self.items.items():
            spec = self.specs.get(self.type_of(item) or "")
            parsed = parse_version_sk(key[1])
            if spec is None or not spec.versioned or parsed is None:
                continue
            n, base = parsed
            if n == 0:
                latest.append((key, item, spec, base))
                continue
            self.check_history_ttl(key, item)
            if n > newest.get((key[0], base), (0, {}))[0]:
                newest[(key[0], base)] = (n, item)
        for key, item, spec, base in latest:
            self.check_latest(key, item, spec, base, newest.get((key[0], base)))

    def check_latest(self, key: Key, item: Item, spec: EntitySpec, base: str,
                     found: tuple[int, Item] | None) -> None:
        """A latest copy against its newest version row ``found`` (``(n, row)``; ``None``:
        it has none, to fix by hand): stale when it carries other values than the row
        does (a repair writes it again from the row)."""
        if found is None:
            self.problems.append(Problem("no-history", key, (
                f"{spec.name} latest copy has no version rows; fix by hand")))
            return
        n, row = found
        sk = self.table.sk or ""
        if expired(item, self.table.ttl) or expired(row, self.table.ttl):
            return  # TTL passed: DynamoDB deletes them lazily; nothing to judge
        try:
            # (the version row the writer writes of the latest copy: its own)
            if self.carried(spec, version_row(spec, item, row[sk]["S"])) == self.carried(
                    spec, row):
                return
        except (DynaormError, NotPrepared):  # (or a value bound anew needs a key not asked)
            return  # unreadable with today's keys or class: cannot judge
        wanted = self.latest_of(spec, row, key[1])
        if wanted is None:
            return  # unreadable with today's class: cannot render its index keys
        have = item.get("version", {}).get("N", "?")
        next_row = (key[0], version_sk(base, n + 1))
        # (in one order: an engine returns an item's attributes in any order, and a
        # finding is confirmed on the same conditions read twice)
        judged = sorted(a for a in item if a in wanted or not self.internal(a))
        fix = (self.action("Put", key, self.unchanged(
                   item, ("version", self.table.type_attr, *judged)), wanted),
               self.action("ConditionCheck", next_row, not_exists(self.table.pk)))
        self.problems.append(Problem("stale-latest", key, (
            f"{spec.name} latest copy (version {have}) differs from version row {n}"), fix))


def audit_items(table: Table, items: Iterable[Item], context: Sequence[Item] = ()
                ) -> list[Problem]:
    """Audit ``items`` of ``table`` (wire form; a full scan's, or a page's judged with the
    ``context`` items it needs: only the page's problems). Pure: no requests."""
    page = list(items)
    auditor = _Auditor(table, [*page, *context])
    keys = {auditor.key_of(i) for i in page}
    auditor.check_guards()
    if table.sk is not None:
        auditor.check_versions()
    auditor.check_keys(keys)
    # (by kind, guards first, then by item key)
    return sorted((p for p in auditor.problems if _about(p, keys)),
                  key=lambda p: (_KINDS_ORDER[p.kind], p.key))


def _about(problem: Problem, page: set[Key]) -> bool:
    """Whether a problem belongs to this page (context items are judged on their own page,
    except a guard re-pointed to an owner of this page)."""
    if problem.key in page:
        return True
    if problem.kind == "orphan-guard" and len(problem.fix) == 2 and "Put" in problem.fix[0]:
        check = problem.fix[1]["ConditionCheck"]["Key"]
        return tuple(key_value(av) for av in check.values()) in {k[:len(check)] for k in page}
    return False


_KINDS_ORDER = {kind: i for i, kind in enumerate(get_args(Kind))}


# -- repair ------------------------------------------------------------------------------
def repair(table: Table, problems: Iterable[Problem]) -> list[Repair]:
    """Apply each repairable problem's fix as its own transaction.

    A fix whose conditions fail (the items changed since the scan) is skipped and reported
    with ``ok=False``; nothing else is written for it.
    """
    done = []
    for problem in problems:
        if not problem.repairable:
            continue
        request = {"TransactItems": list(problem.fix), "ClientRequestToken": str(uuid.uuid4())}
        try:
            # idempotent: its ClientRequestToken makes a resent attempt apply once
            table.db.driver.run(call("TransactWriteItems", request),
                                Operation("check.repair", (table.name,)))
        except RequestError as exc:
            why = ("changed since the scan" if exc.code == "TransactionCanceledException"
                   else ("outcome unknown (may have been applied): " if exc.maybe_applied
                         else "") + (exc.message or exc.code))
            done.append(Repair(problem, False, why))
            continue
        done.append(Repair(problem, True))
    return done


def _shown(av: Item | None) -> str:
    """A stored key attribute as shown in a problem's detail."""
    if av is None:
        return "(none)"
    return str(next(iter(av.values())))
