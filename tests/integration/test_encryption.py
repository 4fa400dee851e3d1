"""Field-level encryption (contract 20): ``Encrypted[T]`` fields stored as AES-GCM
ciphertext bound to table, item key and field, on every engine; keyrings (static, and
KMS through moto's KMS), rotation, unique encrypted fields, refusals, and an adversary
that copies, swaps and flips: always :class:`DecryptionError`, never a wrong value.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from datetime import date
from typing import Any

import boto3
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from moto import mock_aws

from dynaorm import (
    GSI,
    ConcurrentModificationError,
    DecryptionError,
    DynaormError,
    Encrypted,
    Entity,
    F,
    InvalidValueError,
    KmsKeyring,
    Session,
    StaticKeyring,
    Table,
    Unique,
    UniqueConstraintError,
)
from dynaorm.testing import TestBackend, moto_backend, use_tables, worker_suffix
from tests.conftest import engine_of, wire_of

KEY, OLD, OTHER = b"k" * 32, b"o" * 32, b"x" * 32
vault = Table("enc_vault", keyring=StaticKeyring(KEY))


class Patient(Entity):
    class Meta:
        table = vault
        pk = "PATIENT#{patient_id}"
        sk = "PATIENT"
        unique = [Unique("ssn")]

    patient_id: str
    name: str
    ssn: Encrypted[str]
    born: Encrypted[date] | None = None
    notes: Encrypted[dict[str, Any]] = {}
    score: Encrypted[int] = 0


class Record(Entity):
    """A versioned entity: its version rows carry the same ciphertexts, bound to the
    entity's key (not to the row's version key)."""

    class Meta:
        table = vault
        pk = "RECORD#{record_id}"
        sk = "RECORD"
        versioned = True

    record_id: str
    diagnosis: Encrypted[str]
    version: int = 0


@pytest.fixture
def eb(backend: str | None, request: pytest.FixtureRequest) -> Iterator[TestBackend]:
    vault.keyring = StaticKeyring(KEY)
    with use_tables(vault, endpoint_url=backend, name_suffix=worker_suffix(),
                    wire=wire_of(request)) as tb:
        yield tb


def _save(s: Session, *objs: Entity) -> None:
    for obj in objs:
        s.save(obj)
    s.commit()


def _raw(tb: TestBackend, pid: str) -> dict[str, Any]:
    return next(i for i in tb.scan_raw() if i["pk"]["S"] == f"PATIENT#{pid}")


def test_values_are_stored_as_ciphertext_and_read_back(eb: TestBackend) -> None:
    s = eb.session()
    p = Patient(patient_id="p1", name="Ada", ssn="123-45-6789", born=date(1990, 5, 1),
                notes={"allergy": "nuts", "n": 3}, score=7)
    _save(s, p)
    raw = _raw(eb, "p1")
    for attr in ("ssn", "born", "notes", "score"):
        assert set(raw[attr]) == {"B"}
    blob = b"".join(bytes(v) for item in eb.scan_raw() for v in (
        a.get("B", b"") if isinstance(a, dict) else b"" for a in item.values()))
    texts = str(eb.scan_raw())
    assert "123-45-6789" not in texts and b"123-45-6789" not in blob and "nuts" not in texts
    got = s.get(Patient, patient_id="p1")
    assert got == p
    assert s.query(Patient, patient_id="p1").one() == p
    assert [x.patient_id for x in s.scan(Patient)] == ["p1"]
    # saving an unchanged object writes nothing new: its ciphertexts are kept
    got.name = "Ada L."
    _save(s, got)
    after = _raw(eb, "p1")
    assert after["ssn"] == raw["ssn"] and after["name"] == {"S": "Ada L."}
    got.ssn = "999-99-9999"
    _save(s, got)
    assert _raw(eb, "p1")["ssn"] != raw["ssn"]
    assert s.get(Patient, patient_id="p1").ssn == "999-99-9999"


def test_versioned_entities_read_every_version(eb: TestBackend) -> None:
    s = eb.session()
    _save(s, Record(record_id="r1", diagnosis="flu"))
    r = s.get(Record, record_id="r1")
    r.diagnosis = "cold"
    _save(s, r)
    assert s.get(Record, record_id="r1").diagnosis == "cold"
    assert sorted(x.diagnosis for x in s.history(Record, record_id="r1")) == ["cold", "flu"]
    assert "flu" not in str(eb.scan_raw()) and "cold" not in str(eb.scan_raw())


def test_unique_encrypted_field_guard_holds_a_mac_and_find_works(eb: TestBackend) -> None:
    s = eb.session()
    _save(s, Patient(patient_id="p1", name="Ada", ssn="111"))
    assert "111" not in str([i["pk"] for i in eb.scan_raw()])
    assert s.find(Patient, ssn="111").patient_id == "p1"
    assert s.find(Patient, ssn="222") is None
    with pytest.raises(UniqueConstraintError):
        _save(s, Patient(patient_id="p2", name="Bob", ssn="111"))
    p = s.get(Patient, patient_id="p1")
    p.ssn = "222"
    _save(s, p)
    assert s.find(Patient, ssn="222").patient_id == "p1"
    _save(s, Patient(patient_id="p2", name="Bob", ssn="111"))  # released


def test_two_writers_of_a_unique_encrypted_field_leave_no_stale_guard(eb: TestBackend) -> None:
    """The stored ciphertext, as read, conditions the row: the second writer of a changed
    unique encrypted value is refused, and no guard is left for a value nobody holds."""
    _save(eb.session(), Patient(patient_id="p1", name="Ada", ssn="111"))
    a, b = eb.session(), eb.session()
    pa, pb = a.get(Patient, patient_id="p1"), b.get(Patient, patient_id="p1")
    pa.ssn, pb.ssn = "222", "333"
    _save(a, pa)
    with pytest.raises(ConcurrentModificationError):
        _save(b, pb)
    s = eb.session()
    assert s.find(Patient, ssn="222").patient_id == "p1"
    assert s.find(Patient, ssn="333") is None and s.find(Patient, ssn="111") is None
    guards = [i for i in eb.scan_raw() if i.get("_type", {}).get("S") == "dynaorm:unique"]
    assert len(guards) == 1
    _save(s, Patient(patient_id="p2", name="Bob", ssn="333"))  # free
    for obj in (s.get(Patient, patient_id="p1"), s.get(Patient, patient_id="p2")):
        s.delete(obj)
    s.commit()
    assert not [i for i in eb.scan_raw() if i.get("_type", {}).get("S") == "dynaorm:unique"]


def test_rotation_reads_old_values_and_writes_new_ones(eb: TestBackend) -> None:
    vault.keyring = StaticKeyring(OLD)
    s = eb.session()
    _save(s, Patient(patient_id="p1", name="Ada", ssn="111"))
    vault.keyring = StaticKeyring(KEY, previous=[OLD])
    s = eb.session()
    p = s.get(Patient, patient_id="p1")
    assert p.ssn == "111"
    assert s.find(Patient, ssn="111") == p  # the MAC key is the oldest key's
    _save(s, Patient(patient_id="p2", name="Bob", ssn="222"))
    vault.keyring = StaticKeyring(KEY)  # the old key dropped: old values do not read
    s = eb.session()
    assert s.get(Patient, patient_id="p2").ssn == "222"
    with pytest.raises(DecryptionError) as info:
        s.get(Patient, patient_id="p1")
    assert info.value.field in {"ssn", "notes", "score"}
    assert info.value.key_id == StaticKeyring(OLD).key_id


def test_refusals(eb: TestBackend) -> None:
    with pytest.raises(DynaormError, match="Encrypted"):
        class InKey(Entity):
            class Meta:
                table = vault
                pk = "K#{secret}"
                sk = "K"

            secret: Encrypted[str]
    indexed = Table("enc_indexed", indexes=[GSI("by_secret", pk=("secret",))],
                    keyring=StaticKeyring(KEY))
    with pytest.raises(DynaormError, match="Encrypted"):
        class InIndex(Entity):
            class Meta:
                table = indexed
                pk = "K#{k}"
                sk = "K"

            k: str
            secret: Encrypted[str]
    s = eb.session()
    _save(s, Patient(patient_id="p1", name="Ada", ssn="111"))
    with pytest.raises(DynaormError, match="Encrypted"):
        s.scan(Patient).filter(F("ssn") == "111").all()
    p = s.get(Patient, patient_id="p1")
    with pytest.raises(DynaormError, match="Encrypted"):
        s.save(p, condition=F("ssn") == "111")
        s.commit()
    for action in (lambda u: u.add(score=1), lambda u: u.set(F("notes.allergy"), "x")):
        with pytest.raises(DynaormError, match="Encrypted"):  # (a ciphertext is one value)
            action(s.update(p))


# -- found by the rule matrix (tests/system/test_rule_matrix.py) ----------------------------
def test_an_update_seals_the_value_it_sets_bound_to_the_item(eb: TestBackend) -> None:
    """Contract 21: ``u.set(<Encrypted field>, value)`` encrypts the value bound to the
    item's key (0.5 refused it; 0.6's rule answered that it sealed it, and refused it)."""
    s = eb.session()
    _save(s, Patient(patient_id="p1", name="Ada", ssn="111"),
          Patient(patient_id="p2", name="Bob", ssn="222"))
    s.update(Patient, patient_id="p1").set(ssn="333", score=9)
    s.update(s.get(Patient, patient_id="p2")).set(ssn="444")
    s.commit()
    raw = _raw(eb, "p1")
    assert set(raw["ssn"]) == {"B"} and "333" not in str(eb.scan_raw())
    assert (s.get(Patient, patient_id="p1").ssn, s.get(Patient, patient_id="p1").score) == (
        "333", 9)
    assert s.get(Patient, patient_id="p2").ssn == "444"
    assert s.find(Patient, ssn="333").patient_id == "p1"  # (the guard moved with it)
    assert s.find(Patient, ssn="111") is None
    _put_raw(eb, {**_raw(eb, "p2"), "ssn": raw["ssn"]})  # bound to p1's row: not p2's
    with pytest.raises(DecryptionError):
        s.get(Patient, patient_id="p2")


def test_values_of_an_encrypted_field_are_its_plaintext(eb: TestBackend) -> None:
    """``.values()`` read the stored attribute before the decoded fields: ciphertext."""
    s = eb.session()
    _save(s, Patient(patient_id="p1", name="Ada", ssn="111", score=4))
    assert s.query(Patient, patient_id="p1").values("ssn", "score", "name") == [
        {"ssn": "111", "score": 4, "name": "Ada"}]
    assert s.scan(Patient).values("ssn") == [{"ssn": "111"}]


def test_no_message_or_repr_shows_an_encrypted_value(eb: TestBackend) -> None:
    """A taken unique value, a value that breaks its field's type (on a save and on an
    update) and an entity's repr showed the plaintext; each shows ``<encrypted>``."""
    s = eb.session()
    _save(s, Patient(patient_id="p1", name="Ada", ssn="123-45-6789"))
    with pytest.raises(UniqueConstraintError) as taken:
        _save(s, Patient(patient_id="p2", name="Bob", ssn="123-45-6789"))
    assert taken.value.value == "<encrypted>" and taken.value.field == "ssn"
    bad = Patient.model_construct(patient_id="p3", name="Cy", ssn="987-65-4321", score="fifty-one")
    with pytest.raises(InvalidValueError) as invalid:
        _save(s, bad)
    with pytest.raises(InvalidValueError) as updated:
        s.update(Patient, patient_id="p1").set(score="eighty-six")
    loaded = s.get(Patient, patient_id="p1")
    shown = [str(e.value) for e in (taken, invalid, updated)] + [repr(loaded), str(loaded)]
    assert all("<encrypted>" in text for text in shown[1:]), shown
    for secret in ("123-45-6789", "987-65-4321", "fifty-one", "eighty-six"):
        assert not any(secret in text for text in shown), (secret, shown)
    assert invalid.value.__cause__ is None and updated.value.__cause__ is None
    assert "name='Ada'" in repr(loaded)  # (a field that is no secret: shown)


def test_no_keyring_is_refused_and_the_clients_is_used(eb: TestBackend) -> None:
    vault.keyring = None
    with pytest.raises(DynaormError, match="keyring"):
        _save(eb.session(), Patient(patient_id="p1", name="Ada", ssn="111"))
    client = vault.db
    client.keyring = StaticKeyring(OTHER)  # Client(keyring=...): for its tables without one
    try:
        _save(eb.session(), Patient(patient_id="p1", name="Ada", ssn="111"))
        assert eb.session().get(Patient, patient_id="p1").ssn == "111"
        vault.keyring = StaticKeyring(KEY)  # the table's own comes first
        with pytest.raises(DecryptionError):
            eb.session().get(Patient, patient_id="p1")
    finally:
        client.keyring = None


# -- the adversary -----------------------------------------------------------------------
def _put_raw(tb: TestBackend, item: dict[str, Any]) -> None:
    tb.table.db.driver  # noqa: B018 (bound)
    client = boto3.client("dynamodb", endpoint_url=tb.table.endpoint_url,
                          region_name="us-east-1", aws_access_key_id="x",
                          aws_secret_access_key="x")
    client.put_item(TableName=tb.table.name, Item=item)


def test_copied_swapped_and_flipped_ciphertexts_never_decrypt(eb: TestBackend) -> None:
    s = eb.session()
    _save(s, Patient(patient_id="p1", name="Ada", ssn="111", score=1),
          Patient(patient_id="p2", name="Bob", ssn="222", score=2))
    one, two = _raw(eb, "p1"), _raw(eb, "p2")
    cases = [
        {**two, "ssn": one["ssn"]},                       # another item's value
        {**one, "ssn": one["score"]},                     # another field's value
        {**one, "ssn": {"B": bytes(one["ssn"]["B"])[:-1]}},  # cut
    ]
    blob = bytes(one["ssn"]["B"])
    for i in range(len(blob)):  # every byte flipped
        flipped = bytearray(blob)
        flipped[i] ^= 0x01
        cases.append({**one, "ssn": {"B": bytes(flipped)}})
    for item in cases:
        _put_raw(eb, item)
        with pytest.raises(DecryptionError) as info:
            eb.session().get(Patient, patient_id=item["patient_id"]["S"])
        assert info.value.field == "ssn"
    _put_raw(eb, one)
    vault.keyring = StaticKeyring(OTHER)  # another keyring entirely
    with pytest.raises(DecryptionError):
        eb.session().get(Patient, patient_id="p1")


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(value=st.text(max_size=40), where=st.integers(min_value=0), bit=st.integers(0, 7))
def test_no_edit_of_a_sealed_value_opens(value: str, where: int, bit: int) -> None:
    from dynaorm.schema.rules.encrypted import open_value, seal_value

    ring = StaticKeyring(os.urandom(32))
    av = seal_value(ring, {"S": value}, "t", {"pk": {"S": "a"}}, "f")
    assert open_value(ring, av, "t", {"pk": {"S": "a"}}, "f", "f") == {"S": value}
    blob = bytearray(av["B"])
    blob[where % len(blob)] ^= 1 << bit
    for args in [({"B": bytes(blob)}, "t", {"pk": {"S": "a"}}, "f"),
                 (av, "t2", {"pk": {"S": "a"}}, "f"), (av, "t", {"pk": {"S": "b"}}, "f"),
                 (av, "t", {"pk": {"S": "a"}}, "g")]:
        with pytest.raises(DecryptionError):
            open_value(ring, *args, "f")
    with pytest.raises(DecryptionError):
        open_value(StaticKeyring(os.urandom(32)), av, "t", {"pk": {"S": "a"}}, "f", "f")


# -- KMS (moto's) --------------------------------------------------------------------------
def test_kms_keyring_caches_data_keys_and_rotates() -> None:
    with mock_aws():
        kms = boto3.client("kms", region_name="us-east-1", aws_access_key_id="x",
                           aws_secret_access_key="x")
        first = kms.create_key()["KeyMetadata"]["KeyId"]
        second = kms.create_key()["KeyMetadata"]["KeyId"]
        mac_key = kms.create_key(KeySpec="HMAC_256", KeyUsage="GENERATE_VERIFY_MAC")[
            "KeyMetadata"]["KeyId"]
        calls: list[str] = []
        kms.meta.events.register("before-call.kms.*",
                                 lambda model, **_: calls.append(model.name))
        ring = KmsKeyring(first, client=kms, mac_key_id=mac_key)
        from dynaorm.schema.rules.encrypted import open_value, seal_value

        key = {"pk": {"S": "a"}}
        sealed = [seal_value(ring, {"N": str(i)}, "t", key, "f") for i in range(50)]
        assert [open_value(ring, av, "t", key, "f", "f") for av in sealed] == [
            {"N": str(i)} for i in range(50)]
        assert calls.count("GenerateDataKey") == 1 and calls.count("Decrypt") == 1
        assert ring.mac("v") == ring.mac("v") != ring.mac("w")
        rotated = KmsKeyring(second, previous=[first], client=kms)
        assert open_value(rotated, sealed[3], "t", key, "f", "f") == {"N": "3"}
        assert open_value(rotated, seal_value(rotated, {"S": "x"}, "t", key, "f"), "t", key,
                          "f", "f") == {"S": "x"}
        with pytest.raises(DecryptionError) as info:
            open_value(KmsKeyring(second, client=kms), sealed[0], "t", key, "f", "f")
        assert info.value.key_id == first
        ring = KmsKeyring(first, client=kms)
        ring.max_uses = 2
        for _ in range(5):
            seal_value(ring, {"S": "x"}, "t", key, "f")
        assert calls.count("GenerateDataKey") == 5  # bounded by use: 1 + 3 (of 5 values)
        ring = KmsKeyring(first, client=kms)
        ring.max_age = -1.0  # bounded by age: every value past it gets a new data key
        for _ in range(3):
            seal_value(ring, {"S": "x"}, "t", key, "f")
        assert calls.count("GenerateDataKey") == 8


def test_entities_through_kms_on_moto() -> None:
    with moto_backend():
        kms = boto3.client("kms", region_name="us-east-1", aws_access_key_id="x",
                           aws_secret_access_key="x")
        key_id = kms.create_key()["KeyMetadata"]["KeyId"]
        mac_key = kms.create_key(KeySpec="HMAC_256", KeyUsage="GENERATE_VERIFY_MAC")[
            "KeyMetadata"]["KeyId"]
        vault.keyring = KmsKeyring(key_id, client=kms, mac_key_id=mac_key)
        with use_tables(vault, name_suffix=worker_suffix()) as tb:
            s = tb.session()
            _save(s, Patient(patient_id="p1", name="Ada", ssn="111", score=5))
            assert s.get(Patient, patient_id="p1").score == 5
            assert s.find(Patient, ssn="111").patient_id == "p1"


def test_async_session_seals_opens_and_finds(eb: TestBackend,
                                             request: pytest.FixtureRequest) -> None:
    """An AsyncSession runs the same rules: ciphertext stored, plaintext read, find by the
    MAC, an edited value refused (over HTTP: in-process moto does not answer aiobotocore)."""
    import asyncio

    if engine_of(request) == "moto":
        pytest.skip("in-process moto does not answer an AsyncSession")

    from dynaorm import AsyncSession

    async def main() -> tuple[str, str]:
        s = AsyncSession(vault)
        s.save(Patient(patient_id="a1", name="Ada", ssn="777"))
        await s.commit()
        got = await s.get(Patient, patient_id="a1")
        found = await s.find(Patient, ssn="777")
        assert got is not None and found is not None
        return got.ssn, found.patient_id

    assert asyncio.run(main()) == ("777", "a1")
    raw = _raw(eb, "a1")
    assert set(raw["ssn"]) == {"B"} and "777" not in str(raw)
    _put_raw(eb, {**raw, "ssn": {"B": bytes(raw["ssn"]["B"])[:-1] + b"\0"}})

    async def read() -> None:
        await AsyncSession(vault).get(Patient, patient_id="a1")

    with pytest.raises(DecryptionError):
        asyncio.run(read())


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(moves=st.lists(st.tuples(st.integers(0, 3), st.sampled_from(["ssn", "notes", "score"]),
                                st.integers(0, 3), st.sampled_from(["ssn", "notes", "score"])),
                      min_size=1, max_size=6),
       rotate=st.booleans())
def test_never_a_wrong_value_whatever_is_copied_where(
        moves: list[tuple[int, str, int, str]], rotate: bool) -> None:
    """Items encoded, then ciphertexts copied between items and fields at random (and the
    keyring rotated or not): every field decodes to its own value or is DecryptionError,
    never another item's or field's value."""
    from dynaorm.schema.entity import encode_entity, spec_of

    vault.keyring = StaticKeyring(KEY)
    spec = spec_of(Patient)
    objs = [Patient(patient_id=f"p{i}", name="n", ssn=f"ssn-{i}", notes={"i": i}, score=i)
            for i in range(4)]
    items = [encode_entity(o, spec) for o in objs]
    for src, src_attr, dst, dst_attr in moves:
        items[dst] = {**items[dst], dst_attr: items[src][src_attr]}
    if rotate:
        vault.keyring = StaticKeyring(OTHER, previous=[KEY])
    for i, item in enumerate(items):
        for attr in ("ssn", "notes", "score"):
            try:
                value = spec.decode_fields({k: v for k, v in item.items()
                                            if k not in {"ssn", "notes", "score"} - {attr}})
            except DecryptionError as exc:
                assert exc.field == attr
                continue
            assert value[attr] == getattr(objs[i], attr)
    vault.keyring = StaticKeyring(KEY)
