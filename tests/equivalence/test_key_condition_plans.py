"""plan_keys plans the common query (partition fields only) once per field names: its
plans equal planning afresh, for every partition value, and its refusals still refuse."""

from __future__ import annotations

from typing import Any

import pytest

from dynaorm.errors import KeyTemplateError
from dynaorm.model.entity import spec_of
from dynaorm.read.keycond import _plan_keys, plan_keys
from tests.support.models import Audit, Note, User


@pytest.mark.parametrize(("entity", "index", "fields", "latest"), [
    (User, None, {"user_id": "u1"}, False),
    (User, "gsi1", {"org_id": "o1"}, False),
    (User, "gsi1", {"org_id": "o1", "username": "ann"}, False),  # a sort-key field too
    (Audit, None, {"equipment_id": "e1"}, True),
    (Audit, None, {"equipment_id": "e1"}, False),
    (Note, None, {"note_id": "n1"}, False),
])
def test_plans_equal_planning_afresh_for_each_partition(
        entity: type[Any], index: str | None, fields: dict[str, Any], latest: bool) -> None:
    spec = spec_of(entity)
    for value in ["a", "b", "b", "a"]:  # new values, a repeated one, an earlier one
        given = {k: (f"{v}-{value}" if k == next(iter(fields)) else v)
                 for k, v in fields.items()}
        plan = plan_keys(spec, index, given, None, latest=latest)
        assert plan == _plan_keys(spec, index, given, None, latest, False, None)
        assert plan.pk_values[0].endswith(f"-{value}")


def test_refused_field_names_stay_refused() -> None:
    spec = spec_of(User)
    for _ in range(2):
        with pytest.raises(KeyTemplateError, match="not key template fields"):
            plan_keys(spec, None, {"user_id": "u1", "email": "x"}, None)
        with pytest.raises(KeyTemplateError, match="needs partition key field"):
            plan_keys(spec, "gsi1", {"username": "ann"}, None)
