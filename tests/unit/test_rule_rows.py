"""Rules own their rows (contract 22): the ``rows`` hook of the unique and the versioned
rule gives the guard and version records a write adds, with their origins; the rows a
kind of write costs and the model's row kinds come from the same hook. No I/O (the row
kinds against the keys an engine holds: ``tests/integration/test_rule_rows.py``)."""

from __future__ import annotations

from typing import Any

from dynaorm.schema.entity import encode_entity, spec_of
from dynaorm.schema.model import row_kinds, rows_of
from dynaorm.schema.rules import NO_ROWS, Change, Explained, Rows
from dynaorm.schema.rules.unique import GUARD_TYPE, OWNER_PK, Uniqueness
from dynaorm.schema.rules.versioned import Versioning
from dynaorm.values.records import Delete, Fail, Origin, Put, Role
from dynaorm.write.records import ActionBuilder
from tests.support.models import Note, RowsAccount


def _change(old: dict[str, Any] | None, new: dict[str, Any] | None, **extra: Any) -> Change:
    spec = spec_of(RowsAccount)
    values = new if new is not None else old
    assert values is not None
    key = spec.primary_key(values)
    return Change(RowsAccount, key, old, new, None if old is None else key,
                  None if new is None else key, rules=spec.rules, staged=3, **extra)


VALUES = {"account_id": "a1", "username": "ann", "email": "ann@x.com", "org": "o1"}


def test_the_unique_rule_claims_a_guard_per_value_on_an_insert() -> None:
    rule = spec_of(RowsAccount).rules.get(Uniqueness)
    assert rule is not None
    rows = rule.rows(_change(None, VALUES))
    assert rows.before == ()
    assert [op.key["pk"] for op in rows.after] == ["username#ann", "ORG#o1#mail#ann@x.com"]
    guard = rows.after[0]
    assert isinstance(guard, Put) and guard.item["_type"] == {"S": GUARD_TYPE}
    assert guard.item[OWNER_PK] == {"S": "RACCOUNT#a1"}
    assert guard.origin == Origin(RowsAccount, {"pk": "RACCOUNT#a1", "sk": "v0_PROFILE"},
                                  Role.GUARD, Fail.UNIQUE, "username", "ann", 3)


def test_the_unique_rule_moves_a_changed_value_and_releases_on_a_delete() -> None:
    rule = spec_of(RowsAccount).rules.get(Uniqueness)
    assert rule is not None
    changed = rule.rows(_change(VALUES, {**VALUES, "username": "bob"})).after
    assert [(type(op).__name__, op.key["pk"], op.origin.fail) for op in changed] == [
        ("Delete", "username#ann", Fail.CONCURRENT), ("Put", "username#bob", Fail.UNIQUE)]
    released = changed[0]
    assert isinstance(released, Delete) and released.known is not None  # (for its cost)
    assert rule.rows(_change(VALUES, dict(VALUES))) == NO_ROWS  # (nothing changed)
    gone = rule.rows(_change(VALUES, None)).after
    assert [type(op).__name__ for op in gone] == ["Delete", "Delete"]


def test_the_versioned_rule_puts_the_version_row_before_the_latest_copy() -> None:
    spec = spec_of(RowsAccount)
    rule = spec.rules.get(Versioning)
    assert rule is not None
    item = encode_entity(RowsAccount(**VALUES), spec, 1)
    rows = rule.rows(_change(None, VALUES, item=item, version=1))
    assert rows.after == () and len(rows.before) == 1
    row = rows.before[0]
    assert isinstance(row, Put)
    assert row.key == {"pk": "RACCOUNT#a1", "sk": "v00000001_PROFILE"}
    assert row.origin.role is Role.VERSION and row.origin.fail is Fail.EXISTS
    again = rule.rows(_change(VALUES, VALUES, item=item, version=2)).before[0]
    assert again.key["sk"] == "v00000002_PROFILE" and again.origin.fail is Fail.CONCURRENT
    history = rule.rows(_change(VALUES, None, history=2)).after
    assert [op.key["sk"] for op in history] == ["v00000001_PROFILE", "v00000002_PROFILE"]
    assert rule.rows(_change(VALUES, None)) == NO_ROWS  # (history kept)


def test_the_rules_rows_are_in_rule_order_around_the_own_row() -> None:
    spec = spec_of(RowsAccount)
    item = encode_entity(RowsAccount(**VALUES), spec, 1)
    rows = spec.rules.rows(_change(None, VALUES, item=item, version=1))
    assert isinstance(rows, Rows)
    assert [op.origin.role for op in rows.before] == [Role.VERSION]
    assert [op.origin.role for op in rows.after] == [Role.GUARD, Role.GUARD]
    assert spec.rules.own is Role.LATEST


def test_the_unique_rule_explains_a_refused_claim() -> None:
    spec = spec_of(RowsAccount)
    owner = {"pk": "RACCOUNT#a1", "sk": "v0_PROFILE"}
    claim = Origin(RowsAccount, owner, Role.GUARD, Fail.UNIQUE, "username", "ann")
    mine = {OWNER_PK: {"S": "RACCOUNT#a1"}, "owner_sk": {"S": "v0_PROFILE"}}
    other = {OWNER_PK: {"S": "RACCOUNT#b2"}, "owner_sk": {"S": "v0_PROFILE"}}
    reason = "ConditionalCheckFailed"
    assert spec.rules.explain(claim, reason, mine) == Explained(Fail.CONCURRENT, owner)
    assert spec.rules.explain(claim, reason, other) == Explained(
        Fail.UNIQUE, {"pk": "RACCOUNT#b2", "sk": "v0_PROFILE"})
    row = claim._replace(role=Role.LATEST, fail=Fail.GONE)
    assert spec.rules.explain(row, reason, None) == Explained(Fail.GONE)


def test_costs_and_row_kinds_come_from_the_rows_hook() -> None:
    spec = spec_of(RowsAccount)
    rows = rows_of(spec)
    assert rows["insert"] == {"latest copy": 1, "unique guard": 2, "version row": 1}
    assert rows["update"] == {"latest copy": 1, "unique guard": 4, "version row": 1}
    assert rows["delete"] == {"latest copy": 1, "unique guard": 2}
    assert row_kinds(spec) == [
        {"role": "latest copy", "key": {"pk": "RACCOUNT#{account_id}", "sk": "v0_PROFILE"}},
        {"role": "version row", "key": {"pk": "RACCOUNT#{account_id}", "sk": "v<n>_PROFILE"}},
        {"role": "unique guard", "key": {"pk": "username#{username}",
                                         "sk": "username#{username}"},
         "field": "username", "scope": None},
        {"role": "unique guard", "key": {"pk": "ORG#{org}#mail#{email}",
                                         "sk": "ORG#{org}#mail#{email}"},
         "field": "email", "scope": "ORG#{org}"},
    ]


def test_a_plain_entity_asks_no_rule_for_rows() -> None:
    """The hot path of an entity without rules makes no call for them: its rules have no
    ``rows`` hook to ask, and its own row is a plain row."""
    spec = spec_of(Note)
    assert spec.rules.adders == () and spec.rules.explainers == ()
    assert spec.rules.own is Role.ROW
    b = ActionBuilder(spec, {"pk": "x", "sk": "y"}, 0)
    assert b.rows(None, {}, None, {"pk": "x", "sk": "y"}) is NO_ROWS
