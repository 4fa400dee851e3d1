"""plan_keys refuses field names that are not the query's key template fields."""

from __future__ import annotations

import pytest

from dynaorm.errors import KeyTemplateError
from dynaorm.model.entity import spec_of
from dynaorm.read.keycond import plan_keys
from tests.support.models import User


def test_refused_field_names_stay_refused() -> None:
    spec = spec_of(User)
    for _ in range(2):
        with pytest.raises(KeyTemplateError, match="not key template fields"):
            plan_keys(spec, None, {"user_id": "u1", "email": "x"}, None)
        with pytest.raises(KeyTemplateError, match="needs partition key field"):
            plan_keys(spec, "gsi1", {"username": "ann"}, None)
