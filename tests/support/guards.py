"""The unique guards of the shared test table, checked against their owners."""

from __future__ import annotations

from dynaorm.testing import TestBackend

GUARD = "dynaorm:unique"


def assert_guards_consistent(db: TestBackend) -> None:
    """Every guard's owner exists and holds the guarded value; no owner lacks a guard."""
    items = {(i["pk"], i["sk"]): i for i in db.scan()}
    for g in (i for i in items.values() if i.get("_type") == GUARD):
        assert g["pk"] == g["sk"]
        owner = items.get((g["owner_pk"], g["owner_sk"]))
        assert owner is not None, f"orphan guard {g['pk']}"
        assert owner["_type"] == g["owner_type"]
        value = owner[g["unique_field"]]
        assert g["pk"].endswith("#" + (value.lower() if g["unique_field"] == "email"
                                      else value)), (g, owner)
    for owner in (i for i in items.values() if i.get("_type") == "User"):
        assert ("username#" + owner["username"],) * 2 in items
        assert ("email#" + owner["email"].lower(),) * 2 in items
