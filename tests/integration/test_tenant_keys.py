"""The red team of issue 84 (keys per tenant, forgetting one): what must never happen --
a value of a forgotten tenant read by any path, a tenant's ciphertext opened for another
tenant's row. The fixtures are tests/integration/test_tenants.py's."""

from __future__ import annotations

import contextlib
import uuid
from typing import Any

import pytest
from pydantic import Field

from dynaorm import (
    DecryptionError,
    DynaormError,
    Encrypted,
    Entity,
    ForgottenError,
    Session,
    StaticKeyring,
)
from dynaorm.schema.rules.receipts import digest
from dynaorm.testing import TestBackend, inject_faults
from dynaorm.write.save import SaveEntry
from tests.integration.test_tenants import KEY, Account, ks, kt
from tests.support.offload import Bucket
from tests.support.recording import Requests

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


def _code() -> str:
    return "recovery-" + uuid.uuid4().hex


class Vault(Entity):
    """An encrypted value a default factory makes (a recovery code)."""

    class Meta:
        table = ks
        pk = "T#{tenant_id}#VAULT#{vid}"
        sk = "VAULT"

    tenant_id: str
    vid: str
    code: Encrypted[str] = Field(default_factory=_code)


@pytest.mark.engines("moto")
def test_a_keyed_commits_receipt_keeps_no_encrypted_value_in_plaintext(
        kt: tuple[TestBackend, Bucket]) -> None:
    """A keyed commit's receipt keeps what default factories made (a replay puts it
    back): an Encrypted value among them must not be kept there in plaintext, or
    forgetting its tenant leaves it readable in the receipt row (the commit is refused
    before sending instead)."""
    tb, _ = kt
    s = Session(ks, idempotency_key="vault-1")
    vault = Vault(tenant_id="acme", vid="1")
    s.save(vault)
    with pytest.raises(DynaormError, match="receipt"):  # (refused before sending)
        s.commit()
    ks.forget(scope={"tenant_id": "acme"})
    assert not any(vault.code in repr(row) for row in tb.scan_raw())


@pytest.mark.engines("moto")
def test_a_ciphertext_of_one_tenant_never_opens_in_another_tenants_row(
        kt: tuple[TestBackend, Bucket]) -> None:
    """A row whose key_scope attribute was changed outside dynaorm (another tool, a
    hand fix) still holds values sealed under its old tenant's key: read as the new
    tenant's row they must not open (forgetting the new tenant would leave them readable,
    and forgetting the old one would not reach a row that is no longer its)."""
    tb, _ = kt
    s = tb.session()
    s.save(Profile(pid="2", tenant_id="acme", secret="acme's"))
    s.commit()
    (row,) = [r for r in tb.scan_raw() if r["pk"] == {"S": "PROFILE#2"}]
    ks.client.put_item(TableName=ks.name, Item={**row, "tenant_id": {"S": "beta"}})
    with pytest.raises(DecryptionError):
        tb.session().get(Profile, pid="2", consistent=True)


@pytest.mark.engines("moto")
@pytest.mark.parametrize("fault", ["lose", "500"])
def test_a_save_racing_the_forget_of_its_tenant_leaves_nothing_readable(
        kt: tuple[TestBackend, Bucket], fault: str) -> None:
    """The forget lands inside the window of a save of that tenant (after the write
    applied and before its answer; or before a retried attempt): whatever the save is
    told, afterwards none of the tenant's encrypted values reads, anywhere."""
    tb, b = kt
    s = tb.session()
    s.save(Account(tenant_id="acme", account_id="1", iban="old-IBAN"))
    s.commit()
    s.save(Account(tenant_id="acme", account_id="2", iban="racing-IBAN", notes="n" * 900),
           overwrite=True)

    def forget() -> None:
        ks.forget(scope={"tenant_id": "acme"})

    with inject_faults(ks) as faults:
        if fault == "lose":
            faults.lose_answer("PutItem", after=forget)
        else:
            faults.server_error("PutItem", after=forget)
        with contextlib.suppress(DynaormError):
            s.commit()
    r = tb.session()
    with pytest.raises(ForgottenError):
        r.get(Account, tenant_id="acme", account_id="1", consistent=True)
    try:  # (the racing save: refused, or landed sealed under the destroyed key)
        racing = r.get(Account, tenant_id="acme", account_id="2", consistent=True)
    except ForgottenError:
        racing = None
    assert racing is None, racing
    assert not any(b"racing-IBAN" in repr(row).encode() for row in tb.scan_raw())
    assert not any(b"n" * 100 in b.body(u) for u in b.uris())


def _digests(rows: list[dict[str, Any]]) -> set[str]:
    return {row["dynaorm:digest"]["S"] for row in rows if "dynaorm:digest" in row}


@pytest.mark.engines("moto")
def test_a_receipt_holds_no_digest_a_guess_of_an_encrypted_value_confirms(
        kt: tuple[TestBackend, Bucket]) -> None:
    """A keyed commit's receipt digests what was staged, Encrypted values included: with
    the row's plaintext fields known, a guessable value (a PIN) must not be confirmed
    offline by computing digests, before or after its tenant is forgotten (the digest is
    an HMAC under the keyring's MAC key; was a strict xfail of 0.9)."""
    tb, _ = kt
    guessed: dict[str, set[str]] = {}
    for guess in ("1234", "4321", "9999"):  # (what anyone can compute: nothing is applied)
        guessed[guess] = {digest([SaveEntry(Account(tenant_id="acme", account_id="7",
                                                    iban=guess))])}
        ks.keyring = StaticKeyring(KEY, mac_key=b"x" * 32)  # (the guesser's own MAC key)
        seen = Requests(ks)
        g = Session(ks, idempotency_key="pin-1")
        g.save(Account(tenant_id="acme", account_id="7", iban=guess))
        with inject_faults(ks) as faults, contextlib.suppress(DynaormError):
            faults.throttle("TransactWriteItems", times=None)
            g.commit()
        guessed[guess] |= _digests([item["Put"]["Item"] for op, req in seen.calls
                                   if op == "TransactWriteItems"
                                   for item in req["TransactItems"] if "Put" in item])
    assert tb.scan_raw() == [] and all(len(d) == 2 for d in guessed.values())
    ks.keyring = StaticKeyring(KEY, mac_key=b"m" * 32)
    s = Session(ks, idempotency_key="pin-1")
    s.save(Account(tenant_id="acme", account_id="7", iban="4321"))
    s.commit()
    ks.forget(scope={"tenant_id": "acme"})
    stored = _digests(tb.scan_raw())
    assert stored
    assert [g for g, d in guessed.items() if d & stored] == []


@pytest.mark.engines("moto")
def test_a_keyed_commit_of_encrypted_fields_without_a_mac_key_warns(
        kt: tuple[TestBackend, Bucket]) -> None:
    """Without a MAC key to key its receipt's digest, a keyed commit of Encrypted fields
    keeps 0.9's unkeyed digest and says so: a RuntimeWarning
    naming the table and the way out, never silence."""
    tb, _ = kt
    s = Session(ks, idempotency_key="pin-2")
    s.save(Account(tenant_id="acme", account_id="8", iban="1234"))
    with pytest.warns(RuntimeWarning, match="no MAC key"):
        s.commit()
    assert _digests(tb.scan_raw()) == {digest([SaveEntry(Account(
        tenant_id="acme", account_id="8", iban="1234"))])}
    ks.keyring = StaticKeyring(KEY, mac_key=b"m" * 32)  # (a MAC key given later: the
    again = Session(ks, idempotency_key="pin-2")      # unkeyed receipt, as 0.9's, settles)
    again.save(Account(tenant_id="acme", account_id="8", iban="1234"))
    assert again.commit().replayed


@pytest.mark.engines("moto")
def test_a_keyed_replay_after_its_tenant_is_forgotten_is_forgotten(
        kt: tuple[TestBackend, Bucket]) -> None:
    """A replay of a keyed commit (same key, same writes) after its tenant was forgotten:
    the forget wins. Its values cannot be sealed again, so the commit raises
    ForgottenError before its receipt is consulted, and writes nothing; it is never told
    ``replayed`` (a result whose objects could not be read back)."""
    tb, _ = kt
    ks.keyring = StaticKeyring(KEY, mac_key=b"m" * 32)
    for attempt in range(2):
        s = Session(ks, idempotency_key="pin-3")
        s.save(Account(tenant_id="acme", account_id="9", iban="5678"))
        if attempt:
            before = tb.scan_raw()
            with pytest.raises(ForgottenError):
                s.commit()
            assert tb.scan_raw() == before
        else:
            s.commit()
            ks.forget(scope={"tenant_id": "acme"})
