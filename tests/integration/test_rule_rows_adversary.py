"""Red team of a user's rule that adds rows (contract 22: "a rule a user writes gets every
surface by existing"): an audit rule whose ``rows(change)`` adds one audit row to every
write of its entity. Every kind of write gets it (a save of a new object, of a loaded
one, an update, a delete), a failed commit leaves none, the model lists its row kind and
counts it as the writes make it; and the guide documents the hooks ``Rule`` has.

What does not hold is recorded as strict xfails (outside ``Compressed``)."""

from __future__ import annotations

import inspect
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from dynaorm import (
    ConditionFailedError,
    DynaormError,
    Entity,
    F,
    ItemExistsError,
    Rule,
    register_rule,
)
from dynaorm.schema.rules import RULES, Change, Rows
from dynaorm.testing import TestBackend
from dynaorm.values.records import Fail, Put, Role
from tests.support.models import User, app

AUDIT = "red:audit"


class RedAudit(Rule):
    """One audit row per write of a ``RedAudited*`` entity: ``AUDIT#<pk>`` /
    ``<insert|update|delete>#<place in the commit>``."""

    __slots__ = ()
    name = "red-team-audit"
    order = 90
    transforms = False

    @classmethod
    def build(cls, decl: Any) -> RedAudit | None:
        return cls() if decl.type_name.startswith("RedAudited") else None

    def rows(self, change: Change) -> Rows:
        key = change.new_key or change.old_key
        assert key is not None
        what = "delete" if change.new is None else "insert" if change.old is None else "update"
        at = {"pk": f"AUDIT#{key['pk']}", "sk": f"{what}#{change.staged}"}
        item = {"pk": {"S": at["pk"]}, "sk": {"S": at["sk"]}, "_type": {"S": AUDIT}}
        return Rows((), (Put(at, item, None, change.origin(Role.ROW, Fail.CALLER, owner=at)),))


@pytest.fixture(scope="module")
def audited() -> Iterator[type[Any]]:
    register_rule(RedAudit)
    try:
        class RedAuditedNote(Entity):
            class Meta:
                table = app
                pk = "RANOTE#{nid}"
                sk = "RANOTE"

            nid: str
            n: int = 0

        yield RedAuditedNote
    finally:
        RULES.pop(RedAudit.name, None)


def _audits(db: TestBackend, nid: str) -> list[str]:
    return sorted(i["sk"] for i in db.scan() if i["pk"] == f"AUDIT#RANOTE#{nid}")


def test_saves_and_deletes_of_objects_get_the_audit_row(db: TestBackend,
                                                        audited: type[Any]) -> None:
    s = db.session()
    s.save(audited(nid="a"))
    s.commit()
    got = s.get(audited, nid="a")
    got.n = 1
    s.save(got)
    s.commit()
    s.delete(got)
    s.commit()
    assert _audits(db, "a") == ["delete#0", "insert#0", "update#0"]


def test_a_failed_commit_leaves_no_audit_row(db: TestBackend, audited: type[Any]) -> None:
    s = db.session()
    s.save(audited(nid="b"))
    s.commit()
    s.save(audited(nid="c"))
    s.save(audited(nid="b"))  # (exists: the commit fails)
    with pytest.raises(DynaormError):
        s.commit()
    assert _audits(db, "b") == ["insert#0"] and _audits(db, "c") == []
    assert s.get(audited, nid="c") is None


def test_the_model_lists_the_audit_row_kind(audited: type[Any]) -> None:
    entity = next(e for e in app.model()["entities"] if e["name"] == "RedAuditedNote")
    assert {"role": "row", "key": {"pk": "AUDIT#RANOTE#{nid}", "sk": "insert#0"}} in (
        entity["rows"])


def test_updates_and_deletes_by_key_get_the_audit_row(db: TestBackend,
                                                      audited: type[Any]) -> None:
    entity = next(e for e in app.model()["entities"] if e["name"] == "RedAuditedNote")
    assert entity["writes"]["update"] == {"row": 2} and entity["writes"]["delete"] == {"row": 2}
    s = db.session()
    s.save(audited(nid="d"))
    s.commit()
    s.update(audited, nid="d").set(n=2)
    s.commit()
    s.delete(audited(nid="d"))
    s.commit()
    assert _audits(db, "d") == ["delete#0", "insert#0", "update#0"]


class RedPlainNote(Entity):
    class Meta:
        table = app
        pk = "RPNOTE#{nid}"
        sk = "RPNOTE"

    nid: str
    n: int = 0


@pytest.mark.parametrize("entity", [RedPlainNote, User], ids=["plain", "unique"])
def test_a_new_objects_save_refused_by_the_callers_condition_is_not_said_to_exist(
        db: TestBackend, entity: type[Any]) -> None:
    """The item is absent, so the save's own "not there yet" held: it was the caller's
    condition that failed; "already exists" would be untrue."""
    s = db.session()
    obj = entity(nid="cx1") if entity is RedPlainNote else entity(
        user_id="cx1", username="cx1", email="cx1@x.com")
    s.save(obj, condition=F("n" if entity is RedPlainNote else "username") == "nobody")
    with pytest.raises(DynaormError) as caught:
        s.commit()
    assert not isinstance(caught.value, ItemExistsError), str(caught.value)
    assert isinstance(caught.value, ConditionFailedError)


def test_the_guide_documents_the_hooks_rule_has() -> None:
    guide = (Path(__file__).parents[2] / "docs" / "guide" / "rules.md").read_text()
    table = re.findall(r"^\| `(\w+)\(", guide, flags=re.M)
    hooks = {n for n, _ in inspect.getmembers(Rule, inspect.isfunction) if n[0] != "_"}
    assert set(table) - {"build"} == hooks, sorted(set(table) ^ hooks)
