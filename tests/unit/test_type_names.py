"""Which stored type names a table's classes claim (dynaorm.schema.unclaimed), pure: a
class's own name, the name its ``Meta.previous`` declares, dynaorm's guards. (On an
engine: integration/test_type_names.py.)"""

from __future__ import annotations

from dynaorm import Table
from dynaorm.schema.rules.unique import GUARD_TYPE
from dynaorm.schema.unclaimed import claimed_names, fix_hint, unclaimed_name
from tests.support.migration_models import mig


def test_current_previous_and_guard_names_are_claimed() -> None:
    names = claimed_names(mig)
    assert {"account", "user", "Ledger", GUARD_TYPE} <= names
    for name in names:
        assert unclaimed_name(mig, {"_type": {"S": name}}) is None


def test_other_names_are_unclaimed_and_nothing_else_is() -> None:
    assert unclaimed_name(mig, {"_type": {"S": "Customer"}}) == "Customer"
    assert unclaimed_name(mig, {"pk": {"S": "x"}}) is None  # no type attribute
    assert unclaimed_name(mig, {"_type": {"N": "1"}}) is None  # not a name
    shapeless = Table("dynaorm-shapeless", type_attribute=None)
    assert unclaimed_name(shapeless, {"_type": {"S": "Customer"}}) is None


def test_the_fix_names_both_ways() -> None:
    hint = fix_hint("Customer")
    assert "type_name = 'Customer'" in hint and "Previous(type_name='Customer')" in hint


def test_describe_says_when_the_type_name_is_the_class_name() -> None:
    from dynaorm.cli.main import describe_entity
    from dynaorm.schema.entity import spec_of
    from tests.support.migration_models import Account
    from tests.support.models import Note

    assert "Note   (the class name: renaming the class renames it" in describe_entity(
        spec_of(Note))[0]
    assert describe_entity(spec_of(Account))[0].rstrip().endswith("type name  account")
