"""Rules own their rows, on every engine (contract 22, "The model says every row"): the row
kinds ``table.model()`` lists for a versioned entity with unique values, taken from its
rules' ``rows`` hook, are the keys a save and an update of it actually write (the hook
itself, pure: ``tests/unit/test_rule_rows.py``)."""

from __future__ import annotations

import re
from typing import Any

from dynaorm import Entity, Unique
from dynaorm.testing import TestBackend
from tests.support.models import app


class ModelRowsAccount(Entity):
    """Versioned, with a unique value and a scoped, prefixed one."""

    class Meta:
        table = app
        pk = "MRACCOUNT#{account_id}"
        sk = "PROFILE"
        unique = ("username", Unique("email", scope="ORG#{org}", prefix="mail"))
        versioned = True

    account_id: str
    username: str
    email: str
    org: str


def _pattern(shape: str) -> re.Pattern[str]:
    """A key shape as a pattern: ``{field}`` any text, ``<n>`` a version number (1 and
    up, zero-padded: 0 is the latest copy's)."""
    parts = re.split(r"(\{[^}]*\}|<n>)", shape)
    return re.compile("".join(
        "0*[1-9][0-9]*" if p == "<n>" else ".+" if p.startswith("{") else re.escape(p)
        for p in parts) + "$")


def _kind_of(kinds: list[dict[str, Any]], key: dict[str, str]) -> list[str]:
    return [k["role"] for k in kinds
            if all(_pattern(shape).match(key.get(attr, "")) for attr, shape in k["key"].items())]


def test_the_row_kinds_of_the_model_are_the_keys_written(db: TestBackend) -> None:
    entity = next(e for e in app.model()["entities"] if e["name"] == "ModelRowsAccount")
    kinds = entity["rows"]
    s = db.session()
    a = ModelRowsAccount(account_id="a1", username="ann", email="ann@x.com", org="o1")
    s.save(a)
    s.commit()
    a.username = "bob"
    s.save(a)
    s.commit()
    keys = [{"pk": i["pk"], "sk": i["sk"]} for i in db.scan()
            if i["pk"].startswith(("MRACCOUNT#", "username#", "ORG#o1#mail#"))]
    roles = sorted(r for key in keys for r in _kind_of(kinds, key))
    # every row written is of exactly one kind, and every kind was written
    assert all(len(_kind_of(kinds, key)) == 1 for key in keys), keys
    assert roles == ["latest copy", "unique guard", "unique guard", "version row",
                     "version row"]
    rendered = {k["role"] + ":" + k["key"]["pk"].format(**a.__dict__) for k in kinds
                if "<n>" not in k["key"]["sk"]}
    assert {"latest copy:MRACCOUNT#a1", "unique guard:username#bob",
            "unique guard:ORG#o1#mail#ann@x.com"} == rendered
