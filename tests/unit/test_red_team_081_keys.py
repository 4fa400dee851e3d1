"""The red team of issue 81: "every path that renders a key refuses a value holding a
separator" (contract 24) for a partition key that is one field (``{tenant_id}``) beside an
index template that gives the field a separator (``{tenant_id}-{category}``). Pure: the
entity's templates, no engine."""

from __future__ import annotations

import pytest

from dynaorm import GSI, Entity, KeyTemplateError, Table
from dynaorm.core.scope import Scope

single = Table("red81_single", indexes=[GSI("gsi1", pk="gsi1pk", sk="gsi1sk")])


class Account(Entity):
    class Meta:
        table = single
        pk = "{tenant_id}"
        sk = "A#{account_id}"
        indexes = {"gsi1": ("{tenant_id}-{category}", "{account_id}")}

    tenant_id: str
    account_id: str
    category: str | None = None


def test_a_one_field_key_refuses_the_field_s_separator_in_another_template() -> None:
    """Tenant ``a-b``: the index refuses it (``-`` follows the field there) and no scope
    can name it (Scope refuses it); the partition key ``{tenant_id}`` must refuse it too,
    else a save that leaves the index out (no category) stores a tenant no scoped session
    can ever reach while the same save with a category is refused."""
    spec = Account.__dynaorm_spec__  # type: ignore[attr-defined]
    with pytest.raises(KeyTemplateError, match="'-'"):
        spec.primary_key({"tenant_id": "a-b", "account_id": "1"})
    with pytest.raises(KeyTemplateError, match="'-'"):
        spec.pk.render({"tenant_id": "a-b"})
    with pytest.raises(Exception, match="'-'"):
        Scope({"tenant_id": "a-b"}).entity(spec)
    # '#' is still a one-field key's to hold (nothing to split), where no template gives
    # the field '#' as a separator... here the index does not either: '#' is the grammar's
    assert spec.pk.render({"tenant_id": "a"}) == "a"
