"""Keys per tenant, and forgetting one (contract 24): a table with ``key_scope`` seals
each tenant's ``Encrypted`` values under that tenant's own key, kept in a key table of
its own (no point-in-time recovery, no stream), made on first use under a condition (two
writers never make two); ``Table.forget`` / ``dynaorm forget`` destroy it: every value of
that tenant, wherever a copy lives (rows, version rows, offloaded objects, what a scan
copied before), reads as ``ForgottenError`` and no write seals one for it, while its other
fields and every other tenant read as before; idempotent, with a tombstone of when.
Static keyrings, and KMS through moto's KMS (requests of the client, cached); rotation
per tenant (``jobs.reencrypt(..., scope=)``); ``Table.seal`` / ``open`` for surfaces that
seal values of their own. The property over random operations is
tests/system/test_tenant_model.py.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Iterator
from typing import Any

import boto3
import pytest

import dynaorm
from dynaorm import (
    DecryptionError,
    DynaormError,
    Encrypted,
    Entity,
    ForgottenError,
    KeyringError,
    KmsKeyring,
    Offloaded,
    Previous,
    Session,
    StaticKeyring,
    Table,
    Versioned,
)
from dynaorm.client.settings import default_session, resolve_region
from dynaorm.jobs import reencrypt, run_local
from dynaorm.testing import TestBackend, use_tables, worker_suffix
from tests.conftest import engine_of, wire_of
from tests.support.entities import entity_class
from tests.support.offload import Bucket, bucket, kms_for, referenced
from tests.support.recording import Requests, send

#: (what the engine answers: the key table's conditions, races and settings, on each
#: engine; a test of what dynaorm seals, reads and deletes by construction on moto alone)
pytestmark = pytest.mark.engines("moto", "local", "dynoxide")

KEY, OLD = b"t" * 32, b"o" * 32
ks = Table("tenant_store", keyring=StaticKeyring(KEY), key_scope="tenant_id",
           offload="s3://placeholder/t/", offload_threshold=500)


#: an account's key and fields, as each part of the application declares them
ACCOUNT_KEY = {"pk": "T#{tenant_id}#ACCOUNT#{account_id}", "sk": "ACCOUNT"}
ACCOUNT_FIELDS: dict[str, tuple[Any, Any]] = {
    "tenant_id": (str, ...), "account_id": (str, ...), "name": (str, ""),
    "iban": (Encrypted[str], ""), "notes": (Encrypted[Offloaded[str]], "")}
Account = entity_class("Account", {"table": ks, **ACCOUNT_KEY}, __name__, **ACCOUNT_FIELDS)


#: the same table as a second part of the application declares it: a Table object (and a
#: client) of its own
ks2 = Table("tenant_store", keyring=StaticKeyring(KEY), key_scope="tenant_id",
            offload="s3://placeholder/t/", offload_threshold=500, client=dynaorm.Client())


Account2 = entity_class("Account2", {"table": ks2, "type_name": "Account", **ACCOUNT_KEY},
                        __name__, **ACCOUNT_FIELDS)


class Ledger(Versioned):
    class Meta:
        table = ks
        pk = "T#{tenant_id}#LEDGER#{ledger_id}"
        sk = "LEDGER"

    tenant_id: str
    ledger_id: str
    balance: Encrypted[int] = 0


@pytest.fixture
def kt(backend: str | None, request: pytest.FixtureRequest,
       monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[TestBackend, Bucket]]:
    """``ks`` (and its key table) on the test's engine, offloading into a bucket."""
    ks.keyring = StaticKeyring(KEY)
    with bucket(backend, request, monkeypatch, ks) as b, use_tables(
            ks, endpoint_url=backend, name_suffix=worker_suffix(),
            wire=wire_of(request)) as tb:
        yield tb, b


def keys_of(tb: TestBackend) -> list[dict[str, Any]]:
    """The key table's items."""
    out = send(ks, "Scan", {"TableName": ks.key_table, "ConsistentRead": True})
    return list(out["Items"])


def seed(tb: TestBackend) -> None:
    s = tb.session()
    for tenant in ("acme", "beta"):
        s.save(Account(tenant_id=tenant, account_id="1", name=f"{tenant} main",
                       iban=f"{tenant}-IBAN", notes=tenant * 200))
    s.commit()
    for tenant in ("acme", "beta"):
        ledger = Ledger(tenant_id=tenant, ledger_id="L", balance=1)
        s.save(ledger)
        s.commit()
        ledger.balance = 2
        s.save(ledger)
        s.commit()


def test_each_tenant_has_a_key_of_its_own_in_the_key_table(
        kt: tuple[TestBackend, Bucket]) -> None:
    tb, _ = kt
    seed(tb)
    rows = keys_of(tb)
    assert len(rows) == 2 and {r["scope"]["M"]["tenant_id"]["S"] for r in rows} == {
        "acme", "beta"}
    assert all("wrapped" in r and "forgotten" not in r for r in rows)
    # the main table holds no key, only ciphertexts naming their tenant's key
    sealed = [r["iban"]["B"] for r in tb.scan_raw() if "iban" in r]
    assert sealed and all(bytes(b)[2:9] == b"tenant/" for b in sealed)
    assert not any("wrapped" in r for r in tb.scan_raw())
    got = tb.session().get(Account, tenant_id="beta", account_id="1", consistent=True)
    assert got is not None and got.iban == "beta-IBAN" and got.notes == "beta" * 200


def test_the_key_table_keeps_no_copies(kt: tuple[TestBackend, Bucket],
                                       request: pytest.FixtureRequest) -> None:
    """The key table is created without a stream or point-in-time recovery (on an
    engine that reports it)."""
    tb, _ = kt
    seed(tb)
    desc = send(ks, "DescribeTable", {"TableName": ks.key_table})["Table"]
    assert not desc.get("StreamSpecification", {}).get("StreamEnabled")
    assert [k["AttributeName"] for k in desc["KeySchema"]] == ["tenant"]
    try:
        backups = send(ks, "DescribeContinuousBackups", {"TableName": ks.key_table})
    except dynaorm.RequestError:
        pytest.skip(f"{engine_of(request)} has no DescribeContinuousBackups")
    pitr = backups["ContinuousBackupsDescription"].get("PointInTimeRecoveryDescription", {})
    assert pitr.get("PointInTimeRecoveryStatus", "DISABLED") == "DISABLED"


@pytest.mark.engines("moto")  # (by construction: see the module's marker)
def test_forget_makes_every_copy_of_the_tenants_values_unreadable(
        kt: tuple[TestBackend, Bucket]) -> None:
    tb, b = kt
    seed(tb)
    copies = tb.scan_raw()  # (a copy taken before: an export, a backup holds the same)
    found = ks.forget(scope={"tenant_id": "acme"})
    assert found.now and found.scope == {"tenant_id": "acme"}
    r = tb.session()
    with pytest.raises(ForgottenError) as caught:
        r.get(Account, tenant_id="acme", account_id="1", consistent=True)
    assert isinstance(caught.value, KeyringError)
    assert caught.value.scope == {"tenant_id": "acme"}
    assert caught.value.forgotten_at == found.forgotten_at
    with pytest.raises(ForgottenError):
        list(r.history(Ledger, tenant_id="acme", ledger_id="L"))  # (version rows)
    with pytest.raises(ForgottenError):
        r.get(Ledger, tenant_id="acme", ledger_id="L", version=1, consistent=True)
    with pytest.raises(ForgottenError):
        r.query(Account, tenant_id="acme", account_id="1").values("iban")
    # its other fields, and every other tenant, read as before
    assert r.query(Account, tenant_id="acme", account_id="1").values("name") == [
        {"name": "acme main"}]
    beta = r.get(Account, tenant_id="beta", account_id="1", consistent=True)
    assert beta is not None and beta.iban == "beta-IBAN" and beta.notes == "beta" * 200
    assert [v.balance for v in r.history(Ledger, tenant_id="beta", ledger_id="L")] == [1, 2]
    # the rows as copied before: each value still names the destroyed key
    spec = Account.__dynaorm_spec__
    for row in copies:
        if row.get("tenant_id") == {"S": "acme"} and row["pk"]["S"].startswith("T#acme#ACC"):
            with pytest.raises(ForgottenError):  # (its sealed iban; notes is in S3)
                spec.decode_fields({a: v for a, v in row.items() if a != "notes"})
    # the offloaded object in S3 holds ciphertext under the same key: no plaintext
    assert not any(b"acme" * 20 in b.body(u) for u in b.uris())


def test_forget_refuses_writes_for_the_tenant_and_is_idempotent(
        kt: tuple[TestBackend, Bucket]) -> None:
    tb, _ = kt
    seed(tb)
    first = ks.forget(scope={"tenant_id": "acme"})
    again = ks.forget(scope={"tenant_id": "acme"})
    assert not again.now and again.forgotten_at == first.forgotten_at
    seen = Requests(ks)
    s = tb.session()
    s.save(Account(tenant_id="acme", account_id="2", iban="new"))
    with pytest.raises(ForgottenError):
        s.commit()
    assert not {"PutItem", "TransactWriteItems"} & set(seen.operations)
    # the tombstone is the audit row: when, and whose (no key material)
    (tomb,) = [r for r in keys_of(tb) if "forgotten" in r]
    assert tomb["forgotten"]["S"] == first.forgotten_at and "wrapped" not in tomb
    assert tomb["scope"]["M"]["tenant_id"]["S"] == "acme"
    # a tenant never seen can be forgotten too: no key is made for it afterwards
    with pytest.warns(RuntimeWarning):
        assert ks.forget(scope={"tenant_id": "gamma"}).now
    s.save(Account(tenant_id="gamma", account_id="1", iban="x"))
    with pytest.raises(ForgottenError):
        s.commit()
    with pytest.raises(DynaormError, match="scope= takes"):
        ks.forget(scope={"name": "acme"})


@pytest.mark.engines("moto")  # (by construction: see the module's marker)
def test_another_process_sees_the_forget_once_its_cached_key_is_old(
        kt: tuple[TestBackend, Bucket]) -> None:
    """A process that cached a tenant's key reads it until the key is older than
    ``TENANT_KEY_AGE``; then it reads the key table again and sees the tombstone."""
    from dynaorm.schema.rules.tenants import forgotten_here, tenant_keys, token

    tb, _ = kt
    seed(tb)
    keys = tenant_keys(ks, ks.keyring)
    assert tb.session().get(Account, tenant_id="acme", account_id="1",
                            consistent=True) is not None
    held = dict(keys._held)
    ks.forget(scope={"tenant_id": "acme"})
    keys._held.update(held)  # (as another process still holds it, knowing nothing of
    forgotten_here(ks).clear()  # the forget this process made)
    assert tb.session().get(Account, tenant_id="acme", account_id="1",
                            consistent=True) is not None
    tok = token("acme")
    keys._held[tok] = (keys._held[tok][0], time.monotonic() - 1)  # (its age passed)
    with pytest.raises(ForgottenError):
        tb.session().get(Account, tenant_id="acme", account_id="1", consistent=True)


@pytest.mark.engines("moto")  # (by construction: see the module's marker)
def test_a_forget_is_seen_at_once_by_another_table_object_of_the_same_table(
        kt: tuple[TestBackend, Bucket], backend: str | None) -> None:
    """A second Table object of the same table (a client of its own) that holds the
    tenant's key reads ForgottenError, and writes nothing for it, as soon as the forget
    through the first returns (it read the plaintext for up to TENANT_KEY_AGE)."""
    tb, _ = kt
    seed(tb)
    was = (ks2.name, ks2.binding(), ks2.offload)
    ks2.name, ks2.offload, ks2.keyring = ks.name, ks.offload, StaticKeyring(KEY)
    ks2.connect(backend)
    try:
        assert ks2.db is not ks.db
        got = Session(ks2).get(Account2, tenant_id="acme", account_id="1", consistent=True)
        assert got is not None and got.iban == "acme-IBAN"  # (its key now held by ks2)
        ks.forget(scope={"tenant_id": "acme"})
        with pytest.raises(ForgottenError):
            Session(ks2).get(Account2, tenant_id="acme", account_id="1", consistent=True)
        seen = Requests(ks2)
        s = Session(ks2)
        s.save(Account2(tenant_id="acme", account_id="2", iban="new"))
        with pytest.raises(ForgottenError):
            s.commit()
        assert not {"PutItem", "TransactWriteItems"} & set(seen.operations)
        other = Session(ks2).get(Account2, tenant_id="beta", account_id="1", consistent=True)
        assert other is not None and other.iban == "beta-IBAN"
    finally:
        ks2.name, ks2.offload = was[0], was[2]
        ks2.restore(was[1])


@pytest.mark.parametrize("fault", ["server_error", "lose_answer"])
@pytest.mark.parametrize("rows", [1, 2])
def test_a_forget_racing_a_write_of_another_table_object(
        kt: tuple[TestBackend, Bucket], backend: str | None, fault: str, rows: int) -> None:
    """A forget through one Table object lands while a second one's commit for the tenant
    is in flight (sealed under the key it held; its request refused with a 500, or applied
    with its answer lost): the caller is told the truth (a commit that succeeded stored
    its rows; one that failed stored none, unless its outcome is said unknown), whatever
    landed reads ForgottenError, and the key table holds the tombstone, no new key."""
    from dynaorm.errors import OutcomeUnknownError
    from dynaorm.schema.rules.tenants import token
    from dynaorm.testing import FaultInjector

    tb, _ = kt
    seed(tb)
    was = (ks2.name, ks2.binding(), ks2.offload)
    ks2.name, ks2.offload, ks2.keyring = ks.name, ks.offload, StaticKeyring(KEY)
    ks2.connect(backend)
    faults = FaultInjector(ks2.name)
    try:
        assert Session(ks2).get(Account2, tenant_id="acme", account_id="1") is not None
        ks2.db.add_hook(faults)
        getattr(faults, fault)("PutItem" if rows == 1 else "TransactWriteItems",
                               after=lambda: ks.forget(scope={"tenant_id": "acme"}))
        s = Session(ks2)
        for n in range(rows):
            s.save(Account2(tenant_id="acme", account_id=f"new{n}", iban="new"))
        try:
            s.commit()
            unknown, failed = False, False
        except OutcomeUnknownError:
            unknown, failed = True, True
        except DynaormError:
            unknown, failed = False, True
        stored = [r for r in tb.scan_raw() if r["pk"]["S"].startswith("T#acme#ACCOUNT#new")]
        if not failed or not unknown:
            assert len(stored) == (0 if failed else rows)
        for r in stored:
            with pytest.raises(ForgottenError):
                Session(ks2).get(Account2, tenant_id="acme",
                                 account_id=r["pk"]["S"].rsplit("#", 1)[1])
        (tomb,) = [r for r in keys_of(tb) if r["tenant"]["S"].endswith(token("acme"))]
        assert "forgotten" in tomb and "wrapped" not in tomb
    finally:
        ks2.db.remove_hook(faults)
        ks2.name, ks2.offload = was[0], was[2]
        ks2.restore(was[1])


@pytest.mark.engines("moto")  # (by construction: see the module's marker)
def test_a_forget_of_a_tenant_nothing_was_sealed_for_warns_and_says_so(
        kt: tuple[TestBackend, Bucket]) -> None:
    """A forget that finds no key (nothing was ever sealed under the tenant's key: a
    table whose entity has no Encrypted field, a tenant never written) changes nothing
    readable: it warns, and its result says nothing was sealed."""
    import warnings

    tb, _ = kt
    seed(tb)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        sealed = ks.forget(scope={"tenant_id": "acme"})
    assert sealed.now and sealed.sealed
    with pytest.warns(RuntimeWarning, match="nothing was sealed"):
        found = ks.forget(scope={"tenant_id": "gamma"})
    assert found.now and not found.sealed


def test_two_writers_never_make_two_keys_for_one_tenant(
        kt: tuple[TestBackend, Bucket]) -> None:
    """A second writer makes the tenant's key inside the first's window (after it found
    none, before its conditioned put): the first's put fails its condition, it reads the
    second's key and seals under it. One key; both values read."""
    from dynaorm.schema.rules.tenants import TenantKeys, tenant_keys, token

    tb, _ = kt
    raced = []

    class Second(dynaorm.Hook):
        def on_start(self, phase: Any) -> object:
            if (phase.operation == "PutItem" and phase.request.get("TableName") == ks.key_table
                    and not raced):
                raced.append(1)
                other = TenantKeys(ks, ks.keyring)  # (another process: its own cache)
                ks.db.driver.run(other.prepare((), {token("new"): "new"}, writing=True))
            return None

    ks.db.add_hook(Second())
    s = tb.session()
    s.save(Account(tenant_id="new", account_id="1", iban="first"))
    s.commit()
    assert raced
    rows = [r for r in keys_of(tb) if r["scope"]["M"]["tenant_id"]["S"] == "new"]
    assert len(rows) == 1
    ring = tenant_keys(ks, ks.keyring).ring("new")
    assert ring.key_id.endswith("/" + rows[0]["kid"]["S"])
    assert tb.session().get(Account, tenant_id="new", account_id="1",
                            consistent=True).iban == "first"


@pytest.mark.engines("moto")  # (by construction: see the module's marker)
def test_seal_and_open_bytes_for_a_tenant(kt: tuple[TestBackend, Bucket]) -> None:
    """What a surface that stores values of its own seals them with (LangGraph's
    ``sealed=True``): bound to the table and a context, under the tenant's key."""
    blob = ks.seal(b"checkpoint bytes", scope={"tenant_id": "acme"}, context="thread-1")
    assert b"checkpoint" not in blob
    assert ks.open(blob, context="thread-1") == b"checkpoint bytes"
    assert ks.open(blob, scope={"tenant_id": "acme"}, context="thread-1") == b"checkpoint bytes"
    with pytest.raises(DecryptionError):
        ks.open(blob, context="thread-2")
    with pytest.raises(DecryptionError):
        ks.open(blob, scope={"tenant_id": "beta"}, context="thread-1")
    ks.forget(scope={"tenant_id": "acme"})
    with pytest.raises(ForgottenError):
        ks.open(blob, context="thread-1")
    with pytest.raises(ForgottenError):
        ks.seal(b"more", scope={"tenant_id": "acme"})


@pytest.mark.engines("moto")  # (by construction: see the module's marker)
def test_reencrypt_moves_a_tenants_values_under_its_key_and_rewraps_it(
        kt: tuple[TestBackend, Bucket]) -> None:
    """Rotation per tenant: values sealed before the table declared key_scope (under
    the keyring itself) move under their tenant's key, one tenant at a time
    (``scope=``); a tenant key wrapped under a key of ``previous`` is wrapped anew."""
    from dynaorm.schema.rules.encrypted import seal_value

    tb, _ = kt
    seed(tb)
    raw = next(r for r in tb.scan_raw() if r["pk"]["S"] == "T#beta#ACCOUNT#1")
    bound = {"pk": raw["pk"], "sk": raw["sk"]}
    old = seal_value(ks.keyring, {"S": "legacy"}, ks.name, bound, "iban")  # (pre key_scope)
    send(ks, "UpdateItem", {"TableName": ks.name, "Key": bound, "UpdateExpression": "SET iban = :v",
                            "ExpressionAttributeValues": {":v": old}})
    assert tb.session().get(Account, tenant_id="beta", account_id="1",
                            consistent=True).iban == "legacy"
    ks.keyring = StaticKeyring(OLD, previous=[KEY])  # (rotation: a new keyring key)
    report = run_local(reencrypt(Account, scope={"tenant_id": "beta"}), workers=1)
    assert report.failed == [] and report.resealed == 1 and report.rewrapped == 1
    rows = {r["scope"]["M"]["tenant_id"]["S"]: r for r in keys_of(tb)}
    assert rows["beta"]["key_id"]["S"] == ks.keyring.key_id
    assert rows["acme"]["key_id"]["S"] != ks.keyring.key_id  # (another tenant: untouched)
    ks.keyring = StaticKeyring(OLD)  # (the old keyring key dropped: beta reads, acme not)
    got = tb.session().get(Account, tenant_id="beta", account_id="1", consistent=True)
    assert got is not None and got.iban == "legacy"
    with pytest.raises(KeyringError):
        tb.session().get(Account, tenant_id="acme", account_id="1", consistent=True)
    ks.keyring = StaticKeyring(OLD, previous=[KEY])
    ks.forget(scope={"tenant_id": "acme"})
    report = run_local(reencrypt(Account), workers=1)
    assert report.failed == [] and report.forgotten == 1


@pytest.mark.engines("moto")  # (by construction: see the module's marker)
def test_reencrypt_to_a_tenants_key_reaches_its_values_kept_in_s3(
        kt: tuple[TestBackend, Bucket], backend: str | None, request: pytest.FixtureRequest,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """An offloaded value sealed before the table declared key_scope (under the keyring
    itself: KMS) moves under its tenant's key with the rest (``scope=``): once the tenant
    is forgotten it reads as ``ForgottenError``, and no object left in S3 holds the
    plaintext or opens without the tenant's key (before, the job skipped it with
    ``failed=[]``, and it still read in plaintext after the forget)."""
    from dynaorm.schema.rules.encrypted import header_of, seal_value
    from dynaorm.schema.rules.offloaded import MARK

    tb, b = kt
    kms = kms_for(backend, request, monkeypatch)
    ks.keyring = KmsKeyring(kms.create_key()["KeyMetadata"]["KeyId"])
    s = tb.session()
    s.save(Account(tenant_id="acme", account_id="1", name="acme main", notes="acme" * 200))
    s.commit()
    (uri,) = b.uris()
    raw = next(r for r in tb.scan_raw() if r["pk"]["S"] == "T#acme#ACCOUNT#1")
    bound = {"pk": raw["pk"], "sk": raw["sk"]}
    ks.db.driver.run(ks.keyring.prepare(writing=True))  # (the keyring's own data key)
    legacy = bytes(seal_value(ks.keyring, {"S": "LEGACY " * 100}, ks.name, bound,
                              "notes")["B"])  # (as written before key_scope)
    b.put(uri.removeprefix(f"s3://{b.name}/"), legacy)
    ref = raw["notes"]["M"][MARK]["M"]
    ref.update(sha256={"S": hashlib.sha256(legacy).hexdigest()}, size={"N": str(len(legacy))})
    send(ks, "UpdateItem", {"TableName": ks.name, "Key": bound,
                            "UpdateExpression": "SET notes = :v",
                            "ExpressionAttributeValues": {":v": raw["notes"]}})
    assert tb.session().get(Account, tenant_id="acme", account_id="1",
                            consistent=True).notes == "LEGACY " * 100
    report = run_local(reencrypt(Account, scope={"tenant_id": "acme"}), workers=1)
    assert report.failed == [] and report.resealed == 1
    ks.forget(scope={"tenant_id": "acme"})
    r = tb.session()
    with pytest.raises(ForgottenError):
        r.query(Account, tenant_id="acme", account_id="1").values("notes")
    with pytest.raises(ForgottenError):
        r.get(Account, tenant_id="acme", account_id="1", consistent=True)
    bodies = [b.body(u) for u in b.uris()]
    assert len(bodies) == 1 and not any(b"LEGACY" in x or b"acme" * 20 in x for x in bodies)
    assert all(header_of({"B": x})[0].startswith("tenant/") for x in bodies)


def test_encrypted_fields_need_the_key_scope_field() -> None:
    table = Table("tenant_refused", keyring=StaticKeyring(KEY), key_scope="tenant_id")
    with pytest.raises(DynaormError, match="need the field 'tenant_id'"):
        class NoTenant(Entity):
            class Meta:
                pk = "N#{k}"
                sk = "N"

            Meta.table = table
            k: str
            secret: Encrypted[str] = ""


@pytest.mark.engines("moto")  # (by construction: see the module's marker)
def test_dynaorm_forget_is_the_command(kt: tuple[TestBackend, Bucket],
                                       capsys: pytest.CaptureFixture[str]) -> None:
    from dynaorm.cli.main import main

    tb, _ = kt
    seed(tb)
    assert main(["forget", f"{__name__}:ks", "--scope", "tenant_id=beta"]) == 0
    assert "forgot tenant tenant_id='beta'" in capsys.readouterr().out
    assert main(["forget", f"{__name__}:ks", "--scope", "tenant_id=beta"]) == 0
    assert "nothing to do" in capsys.readouterr().out
    with pytest.raises(ForgottenError):
        tb.session().get(Account, tenant_id="beta", account_id="1", consistent=True)
    assert main(["forget", f"{__name__}:ks", "--scope", "name=beta"]) == 2
    capsys.readouterr()
    with pytest.warns(RuntimeWarning):
        assert main(["forget", f"{__name__}:ks", "--scope", "tenant_id=gamma"]) == 0
    assert "nothing was sealed for it" in capsys.readouterr().out


# -- KMS: tenant keys wrapped by KMS, asked through the client, cached -------------------
@pytest.mark.engines("moto")  # (by construction: see the module's marker)
def test_tenant_keys_through_kms(backend: str | None, request: pytest.FixtureRequest,
                                 monkeypatch: pytest.MonkeyPatch) -> None:
    endpoint = None if backend is None else request.getfixturevalue("dynaorm_moto_server")
    if endpoint is not None:
        monkeypatch.setenv("AWS_ENDPOINT_URL_KMS", endpoint)
    with bucket(backend, request, monkeypatch, ks), use_tables(
            ks, endpoint_url=backend, name_suffix=worker_suffix(),
            wire=wire_of(request)) as tb:
        region = resolve_region(None, default_session(), backend)
        kms = boto3.client("kms", endpoint_url=endpoint, region_name=region,
                           aws_access_key_id="x", aws_secret_access_key="x")
        ks.keyring = KmsKeyring(kms.create_key()["KeyMetadata"]["KeyId"])
        try:
            seen = Requests(ks)
            s = tb.session()
            s.save(Account(tenant_id="k1", account_id="1", iban="kms-1"))
            s.commit()
            assert seen.operations.count("kms:GenerateDataKey") == 1  # (the tenant's key)
            seen.clear()
            s.save(Account(tenant_id="k1", account_id="2", iban="kms-2"))
            s.commit()
            got = tb.session().get(Account, tenant_id="k1", account_id="1", consistent=True)
            assert got is not None and got.iban == "kms-1"
            assert not [op for op in seen.operations if op.startswith("kms:")]  # (cached)
            from dynaorm.schema.rules.tenants import tenant_keys

            tenant_keys(ks, ks.keyring)._held.clear()  # (a fresh process)
            seen.clear()
            assert tb.session().get(Account, tenant_id="k1", account_id="2",
                                    consistent=True).iban == "kms-2"
            assert seen.operations.count("kms:Decrypt") == 1
            ks.forget(scope={"tenant_id": "k1"})
            with pytest.raises(ForgottenError):
                tb.session().get(Account, tenant_id="k1", account_id="1", consistent=True)
        finally:
            ks.keyring = StaticKeyring(KEY)


def test_forget_and_seal_awaited(kt: tuple[TestBackend, Bucket],
                                 request: pytest.FixtureRequest) -> None:
    """``aforget``, ``aseal`` and ``aopen``: the same protocols on the running event loop
    (over HTTP: in-process moto does not answer aiobotocore)."""
    import asyncio

    if engine_of(request) == "moto":
        pytest.skip("in-process moto does not answer an AsyncSession")
    from dynaorm import AsyncSession

    async def main() -> tuple[bytes, bool, bool]:
        s = AsyncSession(ks)
        s.save(Account(tenant_id="async", account_id="1", iban="a-1"))
        await s.commit()
        blob = await ks.aseal(b"state", scope={"tenant_id": "async"}, context="t")
        opened = await ks.aopen(blob, context="t")
        first = await ks.aforget(scope={"tenant_id": "async"})
        again = await ks.aforget(scope={"tenant_id": "async"})
        try:
            await s.get(Account, tenant_id="async", account_id="1", consistent=True)
        except ForgottenError:
            return opened, first.now and not again.now, True
        return opened, first.now, False

    assert asyncio.run(main()) == (b"state", True, True)


@pytest.mark.engines("moto")  # (by construction: see the module's marker)
@pytest.mark.sync_only
def test_a_forked_child_reads_and_forgets_with_its_own_locks(
        kt: tuple[TestBackend, Bucket], request: pytest.FixtureRequest) -> None:
    """A child of ``os.fork()`` made while a parent's thread held the tenants' keys' lock
    reads a tenant's value and forgets another (the locks renewed in the child)."""
    import os
    import threading

    from dynaorm.schema.rules.tenants import tenant_keys

    if engine_of(request) == "moto":
        pytest.skip("a forked child of the in-process moto shares nothing it can serve")
    tb, _ = kt
    seed(tb)
    keys = tenant_keys(ks, ks.keyring)
    held, done = threading.Event(), threading.Event()

    def hold() -> None:
        with keys._lock:
            held.set()
            done.wait(10)

    thread = threading.Thread(target=hold)
    thread.start()
    held.wait(10)
    pid = os.fork()
    if pid == 0:  # pragma: no cover - (the child reports through its exit code)
        code = 3
        try:
            got = tb.session().get(Account, tenant_id="beta", account_id="1", consistent=True)
            ks.forget(scope={"tenant_id": "acme"})
            code = 0 if got is not None and got.iban == "beta-IBAN" else 4
        finally:
            os._exit(code)
    done.set()
    thread.join()
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    keys._held.clear()  # (this process reads the key table again: the child's forget)
    with pytest.raises(ForgottenError):
        tb.session().get(Account, tenant_id="acme", account_id="1", consistent=True)


# -- adversaries: lost answers of the key table's writes, a second writer in the window --
@pytest.mark.engines("moto")
def test_a_forget_whose_answer_is_lost_says_it_forgot_beside_a_second_forget(
        kt: tuple[TestBackend, Bucket]) -> None:
    """The tombstone's put applied and its answer lost; inside that window another
    process forgets the same tenant (its put fails its condition: it reads ours, ``now``
    false) and a writer of that tenant is refused (it reads the tombstone). The resent put
    fails its condition too, yet this call did destroy the key: ``now`` and its time,
    never "already forgotten" (the one call that forgot says so; the audit row is ours)."""
    from dynaorm.testing import FaultInjector

    tb, _ = kt
    seed(tb)
    seen: list[Any] = []

    def second() -> None:
        from dynaorm.schema.rules.tenants import tenant_keys

        seen.append(ks.forget(scope={"tenant_id": "acme"}))
        tenant_keys(ks, ks.keyring)._held.clear()  # (a writer of another process)
        s = tb.session()
        s.save(Account(tenant_id="acme", account_id="9", iban="late"))
        with pytest.raises(ForgottenError):
            s.commit()

    faults = FaultInjector(ks.key_table)
    ks.db.add_hook(faults)
    try:
        faults.lose_answer("PutItem", after=second)
        first = ks.forget(scope={"tenant_id": "acme"})
    finally:
        ks.db.remove_hook(faults)
    (other,) = seen
    assert first.now and not other.now
    assert other.forgotten_at == first.forgotten_at
    (tomb,) = [r for r in keys_of(tb) if "forgotten" in r]
    assert tomb["forgotten"]["S"] == first.forgotten_at
    with pytest.raises(ForgottenError):
        tb.session().get(Account, tenant_id="acme", account_id="1", consistent=True)
    beta = tb.session().get(Account, tenant_id="beta", account_id="1", consistent=True)
    assert beta is not None and beta.iban == "beta-IBAN"
    assert tb.session().get(Account, tenant_id="acme", account_id="9") is None


@pytest.mark.engines("moto")
def test_a_writer_in_a_lost_forgets_window_makes_no_key(kt: tuple[TestBackend, Bucket]
                                                        ) -> None:
    """A tenant never seen is forgotten; its tombstone's answer is lost, and inside the
    window a writer of that tenant tries to make its key: its conditioned put fails, it
    reads the tombstone and is refused (``ForgottenError``): no key is ever made for it."""
    from dynaorm.schema.rules.tenants import tenant_keys
    from dynaorm.testing import FaultInjector

    tb, _ = kt
    refused: list[BaseException] = []

    def writer() -> None:
        tenant_keys(ks, ks.keyring)._held.clear()  # (another process: nothing cached)
        s = tb.session()
        s.save(Account(tenant_id="delta", account_id="1", iban="d"))
        try:
            s.commit()
        except ForgottenError as exc:
            refused.append(exc)

    faults = FaultInjector(ks.key_table)
    ks.db.add_hook(faults)
    try:
        faults.lose_answer("PutItem", after=writer)
        assert ks.forget(scope={"tenant_id": "delta"}).now
    finally:
        ks.db.remove_hook(faults)
    assert len(refused) == 1
    rows = keys_of(tb)
    assert len(rows) == 1 and "forgotten" in rows[0] and "wrapped" not in rows[0]
    assert not [r for r in tb.scan_raw() if r.get("tenant_id") == {"S": "delta"}]


@pytest.mark.engines("moto")
@pytest.mark.parametrize("kind", ["lose", "lose500", "500"])
def test_a_key_made_under_a_lost_answer_is_the_one_stored(
        kt: tuple[TestBackend, Bucket], kind: str) -> None:
    """A tenant's first write makes its key; the key table's put meets a lost answer
    (applied) or a 500 (not applied), and inside that window a second process writes for
    the same tenant (it makes the key, or finds the first's). The first never seals
    under a key that is not the stored one: one key, both values read."""
    from dynaorm.schema.rules.tenants import TenantKeys, tenant_keys
    from dynaorm.testing import FaultInjector
    from tests.support.fault_kinds import arm

    tb, _ = kt
    fresh = TenantKeys(ks, ks.keyring)

    def second() -> None:
        from dynaorm.schema.rules import tenants

        mine = tenants._KEYS[ks]
        tenants._KEYS[ks] = fresh  # (another process: a cache of its own)
        try:
            s = tb.session()
            s.save(Account(tenant_id="new", account_id="2", iban="second"))
            s.commit()
        finally:
            tenants._KEYS[ks] = mine

    faults = FaultInjector(ks.key_table)
    ks.db.add_hook(faults)
    try:
        arm(faults, ["PutItem"], kind, after=second)
        s = tb.session()
        s.save(Account(tenant_id="new", account_id="1", iban="first"))
        s.commit()
    finally:
        ks.db.remove_hook(faults)
    rows = [r for r in keys_of(tb) if r["scope"]["M"]["tenant_id"]["S"] == "new"]
    assert len(rows) == 1
    assert tenant_keys(ks, ks.keyring).ring("new").key_id.endswith("/" + rows[0]["kid"]["S"])
    tenant_keys(ks, ks.keyring)._held.clear()  # (read back through the key table)
    r = tb.session()
    assert r.get(Account, tenant_id="new", account_id="1", consistent=True).iban == "first"
    assert r.get(Account, tenant_id="new", account_id="2", consistent=True).iban == "second"


@pytest.mark.engines("moto")
def test_a_rewrap_whose_answer_is_lost_is_counted_beside_a_second_rewrap(
        kt: tuple[TestBackend, Bucket]) -> None:
    """Rotation wraps a tenant's key anew (a conditioned update of its key table item);
    the update is applied and its answer lost, and inside that window a second reencrypt
    finds the key already under the current keyring key (nothing to do). The resent
    update fails its condition on what this one wrote: it rewrapped, and says so (one
    rewrap counted in all); the tenant reads once the old keyring key is dropped."""
    from dynaorm.testing import FaultInjector

    tb, _ = kt
    seed(tb)
    ks.keyring = StaticKeyring(OLD, previous=[KEY])
    counted: list[int] = []

    def second() -> None:
        counted.append(run_local(reencrypt(Account, scope={"tenant_id": "beta"}),
                                 workers=1).rewrapped)

    faults = FaultInjector(ks.key_table)
    ks.db.add_hook(faults)
    try:
        faults.lose_answer("UpdateItem", after=second)
        report = run_local(reencrypt(Account, scope={"tenant_id": "beta"}), workers=1)
    finally:
        ks.db.remove_hook(faults)
    assert report.failed == [] and report.rewrapped == 1 and counted == [0]
    ks.keyring = StaticKeyring(OLD)
    from dynaorm.schema.rules.tenants import tenant_keys

    tenant_keys(ks, ks.keyring)._held.clear()
    got = tb.session().get(Account, tenant_id="beta", account_id="1", consistent=True)
    assert got is not None and got.iban == "beta-IBAN"


# -- a forgotten tenant cleaned up: deleting needs no value ------------------------------
MAC = b"m" * 32
km = Table("tenant_members", keyring=StaticKeyring(KEY, mac_key=MAC),
           key_scope="tenant_id", offload="s3://placeholder/m/", offload_threshold=500)


class Member(Versioned):
    class Meta:
        table = km
        pk = "T#{tenant_id}#MEMBER#{member_id}"
        sk = "MEMBER"
        unique = ("email",)

    tenant_id: str
    member_id: str
    email: Encrypted[str]
    notes: Encrypted[Offloaded[str]] = ""


class Note(Entity):
    class Meta:
        table = km
        pk = "T#{tenant_id}#NOTE#{note_id}"
        sk = "NOTE"

    tenant_id: str
    note_id: str
    body: Encrypted[str] = ""


@pytest.fixture
def kg(backend: str | None, request: pytest.FixtureRequest,
       monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[TestBackend, Bucket]]:
    """``km`` (unique encrypted values, history, offloaded values) on the test's engine,
    two tenants' rows in it."""
    km.keyring = StaticKeyring(KEY, mac_key=MAC)  # (no tenant key held from another engine)
    with bucket(backend, request, monkeypatch, km) as b, use_tables(
            km, endpoint_url=backend, name_suffix=worker_suffix(),
            wire=wire_of(request)) as tb:
        s = tb.session()
        for tenant in ("acme", "beta"):
            for n in ("1", "2"):
                member = Member(tenant_id=tenant, member_id=n, email=f"{n}@{tenant}",
                                notes=tenant * 300)
                s.save(member)
                s.commit()
                member.notes = tenant * 400  # (a second version, a second object)
                s.save(member)
                s.save(Note(tenant_id=tenant, note_id=n, body=f"{tenant} note"))
                s.commit()
        yield tb, b


def _of(rows: list[dict[str, Any]], tenant: str) -> list[dict[str, Any]]:
    """The rows and guards of ``tenant`` (a guard by the owner it names)."""
    return [r for r in rows if (r.get("owner_pk") or r["pk"])["S"].startswith(f"T#{tenant}#")]


@pytest.mark.engines("moto")  # (by construction: see the module's marker)
def test_a_forgotten_tenant_is_deleted_every_way_without_its_values(
        kg: tuple[TestBackend, Bucket]) -> None:
    """After a forget, every delete of the tenant's rows goes (a loaded object, by key,
    ``delete_many``), with its version rows and its offloaded objects; the guards of its
    unique encrypted values (the MAC of a value no one can open) are left as orphans,
    which ``check --repair`` removes. Another tenant's rows, guards and objects stay."""
    from dynaorm.jobs.checking import check_table

    tb, b = kg
    beta = _of(tb.scan_raw(), "beta")
    s = tb.session()
    loaded = s.get(Member, tenant_id="acme", member_id="1", consistent=True)
    assert loaded is not None
    km.forget(scope={"tenant_id": "acme"})
    s.delete(loaded, history=True)  # (loaded before the forget)
    s.commit()
    s.delete(Member, tenant_id="acme", member_id="2", history=True)
    s.commit()
    s.delete_many(Note, [{"tenant_id": "acme", "note_id": n} for n in ("1", "2")])
    left = _of(tb.scan_raw(), "acme")
    assert {r["_type"]["S"] for r in left} == {"dynaorm:unique"} and len(left) == 2
    check_table(km, fix=True)
    rows = tb.scan_raw()
    assert _of(rows, "acme") == [] and _of(rows, "beta") == beta
    assert b.uris() == referenced(beta) != set()


@pytest.mark.engines("moto")
def test_check_audits_around_a_forgotten_tenant(kg: tuple[TestBackend, Bucket]) -> None:
    """``check`` of a table with a forgotten tenant finishes: each row holding the
    tenant's values is reported once as ``forgotten`` (not repairable: delete it), and
    every other tenant's rows and guards are judged as before."""
    from dynaorm.jobs.checking import check_table

    tb, _ = kg
    km.forget(scope={"tenant_id": "acme"})
    (guard,) = [r for r in _of(tb.scan_raw(), "beta") if r.get("owner_pk") == {
        "S": "T#beta#MEMBER#1"}]  # (one of beta's guards lost: judged as before)
    send(km, "DeleteItem", {"TableName": km.name, "Key": {a: guard[a] for a in ("pk", "sk")}})
    found = check_table(km, fix=True)
    assert found.repaired == 1 and found.unrepairable == 8  # (acme: 6 member rows, 2 notes)
    forgotten = [p for p in found.problems if p.startswith("forgotten ")]
    assert len(forgotten) == 8 and all(" T#acme#" in p for p in forgotten)
    assert [p.split()[:2] for p in found.problems if p not in forgotten] == [
        ["missing-guard", "T#beta#MEMBER#1"]]
    assert guard in tb.scan_raw()


# -- a forgotten tenant's row still in a previous layout (Meta.previous) -----------------
kp = Table("tenant_moving", keyring=StaticKeyring(KEY, mac_key=MAC), key_scope="tenant_id",
           offload="s3://placeholder/p/", offload_threshold=200)
#: the same table as the classes before the change saw it (a Table object of its own)
kp_old = Table("tenant_moving", keyring=StaticKeyring(KEY, mac_key=MAC), key_scope="tenant_id",
               offload="s3://placeholder/p/", offload_threshold=200, client=dynaorm.Client())


class OldBook(Versioned):
    class Meta:
        table = kp_old
        pk = "OLD#{tenant_id}#{book_id}"
        sk = "BOOK"
        type_name = "book"
        unique = ("code",)

    tenant_id: str
    book_id: str
    code: str
    text: Encrypted[Offloaded[str]]


class Book(Versioned):
    class Meta:
        table = kp
        pk = "T#{tenant_id}#BOOK#{book_id}"
        sk = "BOOK"
        unique = ("code",)
        previous = Previous(pk="OLD#{tenant_id}#{book_id}", type_name="book")

    tenant_id: str
    book_id: str
    code: str
    text: Encrypted[Offloaded[str]]


@pytest.mark.engines("moto")  # (by construction: see the module's marker)
@pytest.mark.parametrize("how", ["by key", "loaded before", "keyed commit"])
def test_a_forgotten_tenants_row_in_its_previous_layout_is_deleted(
        backend: str | None, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch,
        how: str) -> None:
    """A versioned row still in the entity's previous layout is deleted without its
    sealed values (by key, loaded before the forget, in a keyed commit), with its version
    rows, its guard and its objects in S3; a read of it is ForgottenError and a save of
    it (which would seal) refused. Another tenant's rows and objects stay."""
    kp.keyring = kp_old.keyring = StaticKeyring(KEY, mac_key=MAC)
    with bucket(backend, request, monkeypatch, kp, kp_old) as b, use_tables(
            kp, endpoint_url=backend, name_suffix=worker_suffix(),
            wire=wire_of(request)) as tb:
        was = (kp_old.name, kp_old.binding())
        kp_old.name = kp.name
        kp_old.connect(backend)
        try:
            s = Session(kp_old)
            for tenant in ("acme", "beta"):
                book = OldBook(tenant_id=tenant, book_id="1", code=tenant, text="a" * 300)
                s.save(book)
                s.commit()
                book.text = "b" * 400  # (a second version, a second object)
                s.save(book)
                s.commit()
            beta = _in(tb.scan_raw(), "beta")
            s = tb.session()
            loaded = s.get(Book, tenant_id="acme", book_id="1", consistent=True)
            kp.forget(scope={"tenant_id": "acme"})
            with pytest.raises(ForgottenError):
                s.get(Book, tenant_id="acme", book_id="1", consistent=True)
            s.save(Book(tenant_id="acme", book_id="1", code="acme", text="x"),
                   overwrite=True)
            with pytest.raises(ForgottenError):
                s.commit()
            s = tb.session()
            if how == "loaded before":
                s.delete(loaded, history=True)
            else:
                s.delete(Book, tenant_id="acme", book_id="1", history=True)
            s.commit(idempotency_key="gone" if how == "keyed commit" else None)
            rows = tb.scan_raw()
            assert [r for r in _in(rows, "acme")
                    if not r["_type"]["S"].startswith("dynaorm:receipt")] == []
            assert _in(rows, "beta") == beta != []
            assert b.uris() == referenced(beta) != set()
        finally:
            kp_old.name = was[0]
            kp_old.restore(was[1])


def _in(rows: list[dict[str, Any]], tenant: str) -> list[dict[str, Any]]:
    """The rows and guards of ``tenant`` under either layout."""
    return [r for r in rows if f"#{tenant}#" in (r.get("owner_pk") or r["pk"])["S"]]


@pytest.mark.engines("moto")  # (by construction: see the module's marker)
def test_check_repair_keeps_a_forgotten_tenants_objects_while_its_rows_hold_them(
        kg: tuple[TestBackend, Bucket]) -> None:
    """``check --repair`` (every object old enough to judge) removes no object a
    forgotten tenant's row still references (its rows are judged around, not dropped
    from the references); once those rows are gone behind dynaorm's back (TTL, another
    tool), their objects are orphans and go, another tenant's stay."""
    from datetime import timedelta

    from dynaorm.jobs.checking import check_table

    tb, b = kg
    before = b.uris()
    km.forget(scope={"tenant_id": "acme"})
    check_table(km, fix=True, orphan_age=timedelta(0))
    assert b.uris() == before
    for r in _of(tb.scan_raw(), "acme"):
        send(km, "DeleteItem", {"TableName": km.name, "Key": {a: r[a] for a in ("pk", "sk")}})
    beta = _of(tb.scan_raw(), "beta")
    check_table(km, fix=True, orphan_age=timedelta(0))
    assert b.uris() == referenced(beta) != set()
    assert _of(tb.scan_raw(), "beta") == beta


def test_a_table_deleted_and_created_again_holds_no_tenant_key_of_before(
        kt: tuple[TestBackend, Bucket]) -> None:
    """``Table.delete()`` (its key table with it) forgets what the Table object held of
    its tenants: after ``create()``, a tenant it held a key of gets a new key, stored in
    the new key table (its values readable by any Table object), and a tenant forgotten
    before is a new tenant (the guide: ``Table.delete()`` clears it)."""
    tb, _ = kt
    seed(tb)  # (acme's and beta's keys held by ks)
    ks.forget(scope={"tenant_id": "beta"})
    ks.delete()
    ks.create()
    s = tb.session()
    for tenant in ("acme", "beta"):
        s.save(Account(tenant_id=tenant, account_id="1", iban=f"{tenant} again"))
    s.commit()
    assert len([r for r in keys_of(tb) if "wrapped" in r]) == 2
    ks.keyring = StaticKeyring(KEY)  # (another keyring object: nothing held, all read)
    for tenant in ("acme", "beta"):
        got = tb.session().get(Account, tenant_id=tenant, account_id="1", consistent=True)
        assert got is not None and got.iban == f"{tenant} again"
