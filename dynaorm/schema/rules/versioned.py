"""The versioned rule (``Meta.versioned``, contract 5): a latest copy at ``v0_X`` and one
immutable version row per saved version at ``v<n>_X`` (zero-padded, so key order is
version order), optionally kept contiguous in a ``Meta.history_index`` LSI.

Only the latest copy is indexed: a version row leaves every secondary-index key attribute
out, and keeps aside (under :data:`VERSION_KEYS`) the fields a native index is keyed on and
the vectors a vector index reads, and (under :data:`VERSION_TTL`) the TTL its entity had,
so that history never lands in an index and never expires a row at a time; reads put both
back (:meth:`Versioning.decode`).
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass
from typing import Any

from dynaorm._types import Item, PlainKey
from dynaorm.errors import DynaormError
from dynaorm.protocol.steps import call
from dynaorm.schema.rules import (
    NO_ROWS,
    NO_RULES,
    Change,
    Declaration,
    KeyLayout,
    Rows,
    Rule,
    Rules,
    Shape,
    register,
)
from dynaorm.schema.rules.indexes import IndexKeys, Membership
from dynaorm.schema.table import LSI, TableSchema
from dynaorm.values.expressions import Placeholders, attribute, free, not_exists
from dynaorm.values.keys import named
from dynaorm.values.records import Delete, Fail, Put, Role

VERSION_WIDTH = 8
LATEST_PREFIX = "v0_"

#: where a version row keeps the TTL value its entity had (never under the table's TTL
#: attribute: DynamoDB would expire history rows one by one, leaving gaps)
VERSION_TTL = "_version_ttl"
#: where a version row keeps the fields a native index is keyed on and the vectors a vector
#: index reads (a map): under their own names they would put every version into the index
VERSION_KEYS = "_version_keys"


def version_sk(base: str, version: int | None) -> str:
    """``v0_X`` for the latest copy, ``v00000003_X`` for version 3."""
    if not version:
        return LATEST_PREFIX + base
    if version >= 10 ** VERSION_WIDTH:
        raise DynaormError(f"version {version} exceeds {VERSION_WIDTH} digits")
    return f"v{version:0{VERSION_WIDTH}d}_{base}"


def parse_version_sk(sk: str) -> tuple[int, str] | None:
    """A versioned entity's row's sort key read back (the inverse of :func:`version_sk`):
    ``(version, base)``, its version (``0``: the latest copy, ``v0_...``) and the entity's
    own sort key; ``None`` for a sort key of no version row."""
    if sk.startswith(LATEST_PREFIX):
        return 0, sk[len(LATEST_PREFIX):]
    head, sep, base = sk.partition("_")
    digits = head[1:]
    if not sep or not head.startswith("v") or len(digits) != VERSION_WIDTH or not (
            digits.isascii() and digits.isdigit()) or not int(digits):
        return None  # (only what version_sk writes: ASCII digits, a version from 1)
    return int(digits), base


def history_sk(base: str, version: int | str) -> str:
    """The ``Meta.history_index`` sort key of version ``version`` of ``base`` (a
    :class:`~dynaorm.schema.rules.Shape` as it is: its format is itself)."""
    return f"{base}#v{version:0{VERSION_WIDTH}d}"


def version_bounds(base: str, indexed: bool) -> tuple[str, str]:
    """The sort keys between which the version rows (1 and up) of ``base`` lie: in
    ``Meta.history_index`` (``indexed``), those of ``base`` alone; else those of every
    version row of the partition (a reader keeps ``base``'s)."""
    if indexed:
        return history_sk(base, 1), history_sk(base, 10 ** VERSION_WIDTH - 1)
    return "v" + "0" * (VERSION_WIDTH - 1) + "1_", "v" + "9" * VERSION_WIDTH + "_\U0010ffff"


def version_row(spec: Any, item: Item, sk: str) -> Item:
    """A version row: the encoded ``item`` of the entity of ``spec`` under the version
    sort key ``sk`` (:meth:`Versioning.row`)."""
    versioning: Versioning | None = spec.rules.get(Versioning)
    assert versioning is not None
    parsed = parse_version_sk(sk)
    assert parsed is not None
    return versioning.row(item, sk, spec.rules, parsed[1], parsed[0])


def _history_index(owner: str, name: Any, table: TableSchema, versioned: bool,
                   indexes: list[IndexKeys]) -> tuple[str, str] | None:
    if name is None:
        return None
    if not versioned:
        raise DynaormError(f"{owner}.Meta.history_index needs a versioned entity")
    index = table.index(name) if isinstance(name, str) else None
    if not isinstance(index, LSI):
        raise DynaormError(f"{owner}.Meta.history_index must name an LSI of table "
                           f"{table.name!r}, got {name!r}")
    if any(idx.name == name for idx in indexes):
        raise DynaormError(f"{owner}.Meta.history_index {name!r} is also in Meta.indexes; "
                           "the history index holds version rows only")
    sk_attr = table.key_attributes(name)[1]
    assert sk_attr is not None
    return name, sk_attr


@register
@dataclass(frozen=True, slots=True, eq=False)
class Versioning(Rule):
    """``Meta.versioned`` (and ``Meta.history_index``): the latest copy and the version
    rows."""

    table: TableSchema
    history_index: tuple[str, str] | None
    native: frozenset[str]
    ttl: str | None
    #: the attributes a version row leaves out: every secondary-index key attribute of
    #: the table but its own keys (one a newer model writes included; a field stored
    #: under an index's key attribute the entity does not use is a field)
    unindexed: frozenset[str]
    #: the entity's type name (its version rows' type)
    type_name: str
    name = "versioned"
    order = 70
    own = Role.LATEST
    sort_keys = KeyLayout(LATEST_PREFIX, parse_version_sk, version_bounds, version_sk,
                          version_row, lambda n, changed: n + 1 if changed else n)
    transforms = False  # (its decode puts back what a version row keeps aside)
    answers = {
        "save": "puts version n+1 (where none is) and replaces the latest copy on the "
                "condition that it is still at version n and the revision read",
        "update": "an update of a versioned entity is planned as a save (a new version)",
        "delete": "deletes the latest copy; history stays unless delete(history=True)",
        "get": "reads the latest copy (version=n: that version row)",
        "query": "only latest copies are results (begins_with v0_ on the table)",
        "values": "as query",
        "scan": "only latest copies (filtered on the server)",
        "stream": "a version row's change is a Change of role 'version row' with its number",
        "history": "history() reads version rows 1..n in order; never the latest copy",
        "migrate": "the latest copy and every version row move together",
        "backfill": "a change is a new version",
        "check": "a latest copy without its version row, or gaps, are problems",
        "export": "latest copies only; history=True writes <Entity>.history with version",
        "search": "version rows never carry the vector attribute: never hits",
        "messages": "version numbers are shown",
        "logs": "as messages",
        "spans": "as messages",
    }

    @classmethod
    def build(cls, decl: Declaration) -> Versioning | None:
        versioned = bool(decl.meta.get("versioned", False))
        history = _history_index(decl.owner, decl.meta.get("history_index"), decl.table,
                                 versioned, list(decl.indexes))
        if not versioned:
            return None
        if decl.sk is None:
            raise DynaormError(f"{decl.owner}: a versioned entity needs a table with a sort key")
        table, membership = decl.table, decl.built.get("indexes")
        native, own = (membership.native, membership.attributes()) if isinstance(
            membership, Membership) else (frozenset(), frozenset())
        table_wide = set().union(*map(table.key_names, table.indexes))
        fields = set(map(decl.attr, decl.field_names))
        return cls(table, history, native | table.vector_attributes, table.ttl,
                   frozenset(own | (table_wide - fields)) - {table.pk, table.sk},
                   decl.type_name)

    def attributes(self) -> frozenset[str]:
        return frozenset({VERSION_TTL, VERSION_KEYS, *(self.history_index or ())[1:]})

    def pin(self, version: int) -> tuple[tuple[str, Any], ...]:
        """The version the entity was loaded at."""
        return (("version", version),)

    def refuse(self, use: str, name: str) -> None:
        if name == "version" and use not in ("condition", "projection", "key"):
            raise DynaormError("the version of a versioned entity is dynaorm's")

    def decode(self, item: Item) -> Item:
        if VERSION_TTL not in item and VERSION_KEYS not in item:
            return item
        out = {k: v for k, v in item.items() if k not in (VERSION_TTL, VERSION_KEYS)}
        if VERSION_TTL in item and self.ttl is not None:  # a version row's kept TTL
            out[self.ttl] = item[VERSION_TTL]
        out.update(item.get(VERSION_KEYS, {}).get("M", {}))
        return out

    def prepare_write(self, change: Change) -> Generator[Any, Any, int]:
        """The last version kept for the new object of ``change`` (at its key, ``owner``,
        with its ``new`` values): its highest version row (0: no history); in a migration
        window, else the highest kept under the previous layout's key (a deleted entity's
        history not moved yet: a new object continues it, as it would once ``migrate``
        moves it)."""
        found = yield from self._last(change, change.owner, self.type_name,
                                      self.history_index)
        before = (change.rules or NO_RULES).before  # (none: no previous layout)
        old = before.key(change.new or {}, change.entity.__name__, 1)
        if found or old is None:
            return found
        return (yield from self._last(change, old, before.type_name, None))

    def _last(self, change: Change, key: PlainKey, type_name: str,
              index: tuple[str, str] | None) -> Generator[Any, Any, int]:
        """The highest version row of type ``type_name`` kept at ``key``'s partition for
        its sort key: a reverse, consistent query of the partition's version rows (or of
        ``index``, ``Meta.history_index``: only that entity's), first match."""
        pk, sk, type_attr = self.table.pk, self.table.sk or "", self.table.type_attribute
        base = key[sk].partition("_")[2]  # (of v0_X or v00000001_X: X)
        ph = Placeholders()
        rows = attribute(sk if index is None else index[1]).between(*version_bounds(
            base, index is not None))  # (a key condition: never parenthesised)
        request = ph.apply({"TableName": self.table.name, "ConsistentRead": True,
                            "ScanIndexForward": False, "KeyConditionExpression": (
                                f"{(attribute(pk) == key[pk]).render(ph)} AND {rows.render(ph)}")})
        if index is not None:  # this entity's version rows only
            request["IndexName"] = index[0]
        while True:
            out = yield from call("Query", request, (change.entity,))
            for item in out.get("Items", []):
                found = parse_version_sk(item[sk].get("S", ""))  # (a string key)
                if found and found[0] and found[1] == base and named(
                        item, type_attr) in (None, type_name):
                    return found[0]
            if not out.get("LastEvaluatedKey"):
                return 0
            request["ExclusiveStartKey"] = out["LastEvaluatedKey"]

    def rows(self, change: Change) -> Rows:
        """A save's version row (before the latest copy), conditioned on absence (an
        insert's: or on an expired item); a delete's version rows with ``history``."""
        if change.new is None:
            return self._history_rows(change) if change.history else NO_ROWS
        version, item, key = change.version, change.item, change.new_key
        if version is None or item is None or key is None:
            return NO_ROWS
        sk = self.table.sk
        assert sk is not None
        base = _base(key[sk])
        row_sk = f"v{version}_{base}" if isinstance(version, Shape) else version_sk(
            base, int(version))
        row = self.row(item, row_sk, change.rules, base, version)
        pk = self.table.pk
        if change.old is None:  # (an insert: over an expired item is no conflict)
            cond, fail = free(pk, self.ttl), Fail.EXISTS
        else:
            cond, fail = not_exists(pk), Fail.CONCURRENT
        return Rows((Put({**key, sk: row_sk}, row, cond,
                         change.origin(Role.VERSION, fail, owner=key)),))

    def _history_rows(self, change: Change) -> Rows:
        """The deletes of version rows 1 to ``change.history`` of a deleted entity."""
        key, sk = change.old_key, self.table.sk
        assert key is not None and sk is not None
        base = _base(key[sk])
        return Rows((), tuple(Delete({**key, sk: version_sk(base, n)}, None,
                                     change.origin(Role.VERSION, Fail.GONE, owner=key))
                              for n in range(1, change.history + 1)))

    def row(self, item: Item, sk: str, rules: Rules | None, base: str, version: int | str
            ) -> Item:
        """A version row: the item under its version key ``sk`` (of version ``version``
        of ``base``), left out of every secondary index (only the latest copy is indexed,
        or index queries would return every version) except one whose keys are the
        table's own: a table key attribute always stays.

        A version row never carries the table's TTL attribute (history outlives its
        entity until deleted with it: TTL never leaves gaps in it); the TTL value the
        entity had is kept aside under ``VERSION_TTL``, and the fields a native index is
        keyed on and the vectors a vector index reads under ``VERSION_KEYS``, which reads
        put back (:meth:`decode`). Each rule that binds a value to its row (encryption,
        of ``rules``) binds it to the version row anew."""
        assert self.table.sk is not None
        row = {k: v for k, v in item.items() if k not in self.unindexed}
        ttl = self.ttl
        if ttl in row:
            row[VERSION_TTL] = row.pop(ttl)
        aside = {a: row.pop(a) for a in self.native if a in row}
        if aside:
            row[VERSION_KEYS] = {"M": aside}
        row[self.table.sk] = {"S": sk}
        if rules is not None:
            rules.rebind(row, item)
        if self.history_index is not None:  # versions of one entity, contiguous in that LSI
            row[self.history_index[1]] = {"S": history_sk(base, version)}
        return row


def _base(latest_sk: str) -> str:
    """The rendered sort key of an entity whose latest copy is at ``latest_sk``."""
    return latest_sk[len(LATEST_PREFIX):]
