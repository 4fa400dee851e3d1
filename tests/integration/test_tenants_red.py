"""The red team of issue 84 (keys per tenant, forgetting one): what must never happen --
a value of a forgotten tenant read by any path, a tenant's ciphertext opened for another
tenant's row. The fixtures are tests/integration/test_tenants.py's."""

from __future__ import annotations

import pytest

from dynaorm import DecryptionError, Encrypted, Entity, ForgottenError
from dynaorm.testing import TestBackend
from tests.integration.test_tenants import ks, kt
from tests.support.offload import Bucket

__all__ = ["kt"]


class Profile(Entity):
    """The tenant is a plain field, not in the key: a row can change tenant in place."""

    class Meta:
        table = ks
        pk = "PROFILE#{pid}"
        sk = "PROFILE"

    pid: str
    tenant_id: str
    secret: Encrypted[str] = ""


@pytest.mark.engines("moto")
@pytest.mark.parametrize("how", ["update", "save"])
def test_a_row_moved_to_another_tenant_is_forgotten_with_that_tenant(
        kt: tuple[TestBackend, Bucket], how: str) -> None:
    """A row whose key_scope field changes (an update by key of that field alone, or a
    save of the loaded object) belongs to the new tenant: forgetting that tenant leaves
    none of its encrypted values readable."""
    tb, _ = kt
    s = tb.session()
    s.save(Profile(pid="1", tenant_id="acme", secret="s3cret"))
    s.commit()
    if how == "update":
        s.update(Profile, pid="1").set(tenant_id="beta")
    else:
        obj = tb.session().get(Profile, pid="1", consistent=True)
        obj.tenant_id = "beta"
        s.save(obj)
    s.commit()
    moved = tb.session().get(Profile, pid="1", consistent=True)
    assert moved is not None and (moved.tenant_id, moved.secret) == ("beta", "s3cret")
    ks.forget(scope={"tenant_id": "beta"})
    with pytest.raises((ForgottenError, DecryptionError)):
        tb.session().get(Profile, pid="1", consistent=True)
