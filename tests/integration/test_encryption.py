"""Field-level encryption (contract 20): ``Encrypted[T]`` fields stored as AES-GCM
ciphertext bound to table, item key and field, on every engine; keyrings (static, and
KMS through moto's KMS), rotation, unique encrypted fields, refusals, and an adversary
that copies, swaps and flips: always :class:`DecryptionError`, never a wrong value.
KMS requests are requests of the client (contract 21): hooks, spans, retries, faults,
``rate=``, an AsyncSession's event loop, and every failure naming its key (moto's KMS,
in-process beside the in-process moto, else a moto server's beside the engine).
"""

from __future__ import annotations

import json
import os
import pickle
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import date
from typing import Any

import boto3
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from dynaorm import (
    GSI,
    Attempt,
    Client,
    ConcurrentModificationError,
    DecryptionError,
    DynaormError,
    Encrypted,
    Entity,
    F,
    Hook,
    InvalidValueError,
    KeyringError,
    KmsKeyring,
    Rate,
    RequestError,
    Session,
    StaticKeyring,
    Table,
    Unique,
    UniqueConstraintError,
)
from dynaorm.client.settings import default_session, resolve_region
from dynaorm.jobs import ReencryptReport, reencrypt, run_local
from dynaorm.schema.rules.encrypted import _aad, header_of, open_value, seal_value
from dynaorm.schema.rules.keyrings import NotPrepared, aesgcm
from dynaorm.testing import TestBackend, inject_faults, moto_backend, use_tables, worker_suffix
from tests.conftest import engine_of, wire_of
from tests.support.concurrency import join_all
from tests.support.examples import examples
from tests.support.recording import Requests
from tests.support.spans import Spans

#: (what it asserts depends on the engine: it runs on each)
pytestmark = pytest.mark.engines("moto", "local", "dynoxide")

KEY, OLD, OTHER, MAC = b"k" * 32, b"o" * 32, b"x" * 32, b"m" * 32
#: KMS is a moto server's whatever the table's engine: its requests on moto and, through
#: dynaorm's own wire, on DynamoDB Local (dynoxide, on botocore's wire, added nothing
#: but a third table; ``test_kms_requests_are_requests_of_the_client`` keeps all three)
KMS_ENGINES = pytest.mark.engines("moto", "local")


def ring(key: bytes, *previous: bytes) -> StaticKeyring:
    """A static keyring whose unique values' MAC key (``MAC``) outlives its data keys."""
    return StaticKeyring(key, previous=previous, mac_key=MAC)


vault = Table("enc_vault", keyring=ring(KEY))


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
    """A versioned entity: each version row holds a ciphertext of its own, bound to that
    row."""

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
    vault.keyring = ring(KEY)
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


def test_a_version_rows_ciphertext_copied_onto_the_latest_copy_does_not_decrypt(
        eb: TestBackend) -> None:
    """(0.6, contract 21) Each row's ciphertext is bound to that row: a writer without the
    key copying a version row's value onto the latest copy (rolling a secret back) gets a
    DecryptionError on read, never the old value (0.5 bound both to the entity's key: the
    copy read back as "flu")."""
    s = eb.session()
    _save(s, Record(record_id="r1", diagnosis="flu"))
    r = s.get(Record, record_id="r1")
    r.diagnosis = "cold"
    _save(s, r)
    rows = {i["sk"]["S"]: i for i in eb.scan_raw() if i["pk"]["S"] == "RECORD#r1"}
    _put_raw(eb, {**rows["v0_RECORD"], "diagnosis": rows["v00000001_RECORD"]["diagnosis"]})
    with pytest.raises(DecryptionError) as info:
        eb.session().get(Record, record_id="r1")
    assert info.value.field == "diagnosis"
    assert next(iter(eb.session().history(Record, record_id="r1"))).diagnosis == "flu"


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
    vault.keyring = ring(OLD)
    s = eb.session()
    _save(s, Patient(patient_id="p1", name="Ada", ssn="111"))
    vault.keyring = ring(KEY, OLD)
    s = eb.session()
    p = s.get(Patient, patient_id="p1")
    assert p.ssn == "111"
    assert s.find(Patient, ssn="111") == p  # the MAC key is its own, not a data key
    _save(s, Patient(patient_id="p2", name="Bob", ssn="222"))
    vault.keyring = ring(KEY)  # the old key dropped: old values do not read
    s = eb.session()
    assert s.get(Patient, patient_id="p2").ssn == "222"
    with pytest.raises(DecryptionError) as info:
        s.get(Patient, patient_id="p1")
    assert info.value.field in {"ssn", "notes", "score"}
    assert info.value.key_id == StaticKeyring(OLD).key_id


def test_dropping_an_old_key_keeps_find_and_uniqueness(eb: TestBackend) -> None:
    """Contract 21, "Rotation can finish": once every value is re-sealed under the new key,
    the old one goes, and the guards (MACs under their own key) are as they were."""
    vault.keyring = ring(OLD)
    _save(eb.session(), Patient(patient_id="p1", name="Ada", ssn="111"))
    guards = sorted(str(i["pk"]) for i in eb.scan_raw() if i["_type"]["S"] == "dynaorm:unique")
    vault.keyring = ring(KEY, OLD)
    s = eb.session()
    p = s.get(Patient, patient_id="p1")
    p.name = "Ada L."  # any save re-seals its values under the current key
    _save(s, p)
    vault.keyring = ring(KEY)  # OLD dropped
    s = eb.session()
    assert s.find(Patient, ssn="111") == s.get(Patient, patient_id="p1")
    with pytest.raises(UniqueConstraintError):
        _save(s, Patient(patient_id="p2", name="Bob", ssn="111"))
    assert guards == sorted(str(i["pk"]) for i in eb.scan_raw()
                            if i["_type"]["S"] == "dynaorm:unique")


def test_a_05_table_keeps_its_guards_with_its_oldest_key_as_mac_key(eb: TestBackend) -> None:
    """0.5 keyed a StaticKeyring's MACs with its oldest key: ``mac_key=`` that key finds
    what 0.5 wrote (a 0.5 guard key: its prefix and the HMAC under that key's MAC key)."""
    import hmac

    vault.keyring = StaticKeyring(KEY, previous=[OLD], mac_key=OLD)
    s = eb.session()
    _save(s, Patient(patient_id="p1", name="Ada", ssn="111"))
    v05 = hmac.new(hmac.new(OLD, b"unique", "sha256").digest(), b"111", "sha256").hexdigest()
    assert {"S": f"ssn#{v05}"} in [i["pk"] for i in eb.scan_raw()]
    assert s.find(Patient, ssn="111") is not None


def test_refusals(eb: TestBackend) -> None:
    with pytest.raises(DynaormError, match="Encrypted"):
        class InKey(Entity):
            class Meta:
                table = vault
                pk = "K#{secret}"
                sk = "K"

            secret: Encrypted[str]
    indexed = Table("enc_indexed", indexes=[GSI("by_secret", pk=("secret",))],
                    keyring=ring(KEY))
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


def _in_plain(value: str, *items: dict[str, Any]) -> bool:
    """Whether ``value`` is stored in plain in ``items``: an S or N attribute of that value
    or a guard's key ending in it (``str(items)`` matched a random ``_rev`` holding it)."""
    return any(v == value or v.endswith(f"#{value}") for i in items for a in i.values()
               for t, v in a.items() if t in ("S", "N"))


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
    assert set(raw["ssn"]) == {"B"} and not _in_plain("333", *eb.scan_raw())
    assert (s.get(Patient, patient_id="p1").ssn, s.get(Patient, patient_id="p1").score) == (
        "333", 9)
    assert s.get(Patient, patient_id="p2").ssn == "444"
    assert s.find(Patient, ssn="333").patient_id == "p1"  # (the guard moved with it)
    assert s.find(Patient, ssn="111") is None
    _put_raw(eb, {**_raw(eb, "p2"), "ssn": raw["ssn"]})  # bound to p1's row: not p2's
    with pytest.raises(DecryptionError):
        s.get(Patient, patient_id="p2")


class Chart(Entity):
    """An encrypted list and number: an update may set them, never add to them."""

    class Meta:
        table = vault
        pk = "CHART#{cid}"
        sk = "CHART"

    cid: str
    readings: Encrypted[list[int]] = []
    total: Encrypted[int] = 0


def test_an_update_adding_to_an_encrypted_field_is_refused_before_sending(
        eb: TestBackend) -> None:
    """(contract 21) ``add``/``append``/``prepend`` of an encrypted field (a ciphertext is
    one opaque value) is refused before anything is sent; ``set`` of it is sealed bound to
    the item, by key (no read) or on a loaded object."""
    _save(eb.session(), Chart(cid="c1", readings=[1], total=1))
    sent = Requests(vault)
    s = eb.session()
    for action in (lambda u: u.append(readings=[2]), lambda u: u.prepend(readings=[0]),
                   lambda u: u.add(total=1)):
        with pytest.raises(DynaormError, match="Encrypted"):
            action(s.update(Chart, cid="c1"))
        s.rollback()
    assert sent.operations == []
    s.update(Chart, cid="c1").set(readings=[1, 2], total=3)
    s.commit()
    assert sent.operations == ["UpdateItem"] and "B" in _raw_chart(eb)["readings"]
    got = s.get(Chart, cid="c1")
    assert (got.readings, got.total) == ([1, 2], 3)


def _raw_chart(tb: TestBackend) -> dict[str, Any]:
    return next(i for i in tb.scan_raw() if i["pk"]["S"] == "CHART#c1")


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
    client.keyring = ring(OTHER)  # Client(keyring=...): for its tables without one
    try:
        _save(eb.session(), Patient(patient_id="p1", name="Ada", ssn="111"))
        assert eb.session().get(Patient, patient_id="p1").ssn == "111"
        vault.keyring = ring(KEY)  # the table's own comes first
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


@pytest.mark.engines("moto")  # (opening a stored value is the client's: one engine)
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
    vault.keyring = ring(OTHER)  # another keyring entirely
    with pytest.raises(DecryptionError):
        eb.session().get(Patient, patient_id="p1")


@settings(max_examples=examples(40), deadline=None, suppress_health_check=list(HealthCheck))
@given(value=st.text(max_size=40), where=st.integers(min_value=0), bit=st.integers(0, 7))
def test_no_edit_of_a_sealed_value_opens(value: str, where: int, bit: int) -> None:
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
    assert set(raw["ssn"]) == {"B"} and not _in_plain("777", raw)
    sealed = bytes(raw["ssn"]["B"])
    # flip a bit: writing a zero byte changed nothing when the tag's last byte was zero
    _put_raw(eb, {**raw, "ssn": {"B": sealed[:-1] + bytes([sealed[-1] ^ 1])}})

    async def read() -> None:
        await AsyncSession(vault).get(Patient, patient_id="a1")

    with pytest.raises(DecryptionError):
        asyncio.run(read())


@settings(max_examples=examples(60), deadline=None, suppress_health_check=list(HealthCheck))
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

    vault.keyring = ring(KEY)
    spec = spec_of(Patient)
    objs = [Patient(patient_id=f"p{i}", name="n", ssn=f"ssn-{i}", notes={"i": i}, score=i)
            for i in range(4)]
    items = [encode_entity(o, spec) for o in objs]
    for src, src_attr, dst, dst_attr in moves:
        items[dst] = {**items[dst], dst_attr: items[src][src_attr]}
    if rotate:
        vault.keyring = ring(OTHER, KEY)
    for i, item in enumerate(items):
        for attr in ("ssn", "notes", "score"):
            try:
                value = spec.decode_fields({k: v for k, v in item.items()
                                            if k not in {"ssn", "notes", "score"} - {attr}})
            except DecryptionError as exc:
                assert exc.field == attr
                continue
            assert value[attr] == getattr(objs[i], attr)
    vault.keyring = ring(KEY)


# -- rotation to the end: jobs.reencrypt (contract 21) ---------------------------------------
def _key_ids(tb: TestBackend) -> list[str]:
    """The key id every stored ciphertext of the table names (sorted), and its format."""
    return sorted(f"{found[0]}/{bytes(av['B'])[0]}" for item in tb.scan_raw()
                  for av in item.values() if (found := header_of(av)) is not None)


def _history(s: Session) -> list[str]:
    return [r.diagnosis for r in s.history(Record, record_id="r1")]


def test_reencrypt_finishes_a_rotation(eb: TestBackend) -> None:
    """Every value written under the old key (rows, a latest copy and its version rows)
    sealed anew under the new one by ``jobs.reencrypt``; run again it changes nothing; then
    the old key goes and everything reads, ``find`` finds and guards hold as before (0.5:
    a value was re-sealed only when its object was saved, never a version row)."""
    vault.keyring = ring(OLD)
    s = eb.session()
    _save(s, Patient(patient_id="p1", name="Ada", ssn="111", notes={"a": 1}),
          Patient(patient_id="p2", name="Bob", ssn="222"), Record(record_id="r1", diagnosis="flu"))
    r = s.get(Record, record_id="r1")
    r.diagnosis = "cold"
    _save(s, r)
    guards = sorted(str(i["pk"]) for i in eb.scan_raw() if i["_type"]["S"] == "dynaorm:unique")
    rows = {(i["pk"]["S"], i["sk"]["S"]): i for i in eb.scan_raw()}
    vault.keyring = ring(KEY, OLD)
    job = reencrypt(Patient, segments=2)
    assert pickle.loads(pickle.dumps(job.tasks())) == job.tasks()
    assert run_local(job) == ReencryptReport(resealed=2, current=0, failed=[], scanned=2)
    assert run_local(reencrypt(Record, segments=3)) == ReencryptReport(3, 0, [], 3)
    new = StaticKeyring(KEY).key_id
    assert set(_key_ids(eb)) == {f"{new}/2"}  # format 2 (bound to its row), the new key
    assert run_local(job) == ReencryptReport(resealed=0, current=2, failed=[], scanned=2)
    for item in eb.scan_raw():  # nothing else changed: no value, revision or version
        assert {k: v for k, v in item.items() if "B" not in v} == {
            k: v for k, v in rows[item["pk"]["S"], item["sk"]["S"]].items() if "B" not in v}
    vault.keyring = ring(KEY)  # the old key dropped
    s = eb.session()
    assert s.get(Patient, patient_id="p1").notes == {"a": 1}
    assert s.find(Patient, ssn="222").patient_id == "p2"
    assert _history(s) == ["flu", "cold"] and s.get(Record, record_id="r1").diagnosis == "cold"
    with pytest.raises(UniqueConstraintError):
        _save(s, Patient(patient_id="p3", name="Cy", ssn="111"))
    assert guards == sorted(str(i["pk"]) for i in eb.scan_raw()
                            if i["_type"]["S"] == "dynaorm:unique")


def test_reencrypt_upgrades_the_values_of_a_05_table(eb: TestBackend) -> None:
    """A 0.5 value (format 1: bound to its entity's key, sealed under a key that may stay)
    is sealed anew in the current format, bound to its row, even under the same key."""
    vault.keyring = ring(KEY)
    s = eb.session()
    _save(s, Patient(patient_id="p1", name="Ada", ssn="111"))
    row, keyring = _raw(eb, "p1"), ring(KEY)
    (data_key, header), nonce = keyring.data_key(), os.urandom(12)
    assert header[0] == 1  # (0.5's format: the keyring's own header)
    key = {"pk": row["pk"], "sk": row["sk"]}
    text = json.dumps({"S": "111"}).encode()
    _put_raw(eb, {**row, "ssn": {"B": header + nonce + aesgcm(data_key).encrypt(
        nonce, text, _aad(vault.name, key, "ssn", header))}})
    assert s.get(Patient, patient_id="p1").ssn == "111"  # 0.5's still reads
    assert run_local(reencrypt(Patient)) == ReencryptReport(1, 0, [], 1)
    assert _raw(eb, "p1")["ssn"]["B"][0] == 2
    assert eb.session().get(Patient, patient_id="p1").ssn == "111"


@pytest.mark.sync_only  # (the fault injector on the sync client)
@pytest.mark.parametrize("fault", ["lose_answer", "server_error"])
@pytest.mark.parametrize("writer", [None, "ssn", "name"])
def test_reencrypt_never_overwrites_a_writer_in_its_window(
        eb: TestBackend, fault: str, writer: str | None) -> None:
    """The re-encryption's write fails after it was applied (a lost answer) or before (a
    500), with another writer changing the row in that window, or none: the writer's
    change is kept, the value ends under the current key, and the row is counted once, as
    ``resealed`` only where this run's own ciphertext is what is stored."""
    vault.keyring = ring(OLD)
    _save(eb.session(), Patient(patient_id="p1", name="Ada", ssn="111"))
    vault.keyring = ring(KEY, OLD)

    def write() -> None:  # another writer, in the fault's window
        s = eb.session()
        if writer == "ssn":
            p = s.get(Patient, patient_id="p1")
            p.ssn = "999"
            _save(s, p)
        elif writer == "name":
            s.update(Patient, patient_id="p1").set(name="Ada L.")
            s.commit()

    with inject_faults(vault) as faults:
        getattr(faults, fault)("UpdateItem", after=write)
        report = run_local(reencrypt(Patient))
    resealed = writer != "ssn"  # (a new ssn is sealed under the current key by its writer)
    assert report == ReencryptReport(int(resealed), int(not resealed), [], 1)
    vault.keyring = ring(KEY)
    got = eb.session().get(Patient, patient_id="p1")
    assert (got.ssn, got.name) == ("999" if writer == "ssn" else "111",
                                   "Ada L." if writer == "name" else "Ada")
    assert set(_key_ids(eb)) == {f"{StaticKeyring(KEY).key_id}/2"}


@pytest.mark.sync_only  # (threads of the sync client)
def test_reencrypt_tasks_run_twice_at_once_reseal_each_row_once(
        eb: TestBackend, request: pytest.FixtureRequest) -> None:
    """Every task run twice at once (two workers handed one segment): each row is re-sealed
    by exactly one of the runs, the other finds it current (DynamoDB Local: moto's
    conditional writes are not atomic under threads)."""
    if engine_of(request) == "moto":
        pytest.skip("moto in-process: two conditional writes of one item both pass")
    vault.keyring = ring(OLD)
    s = eb.session()
    for i in range(12):
        s.save(Patient(patient_id=f"p{i:02}", name="n", ssn=f"s{i}", score=i))
    s.commit()
    vault.keyring = ring(KEY, OLD)
    job = reencrypt(Patient, segments=2)
    results: list[tuple[int, ReencryptReport]] = []
    runs = [threading.Thread(target=lambda t=t: results.append(job.run(t)))
            for t in job.tasks() * 2]
    join_all(runs)
    assert sum(r.resealed for _, r in results) == 12 and not any(r.failed for _, r in results)
    assert all(r.resealed + r.current == r.scanned for _, r in results)
    assert job.merge(results).scanned == 12
    assert set(_key_ids(eb)) == {f"{StaticKeyring(KEY).key_id}/2"}


def test_reencrypt_refuses_what_it_cannot_do() -> None:
    plain = Table("enc_plain")

    class Plain(Entity):
        class Meta:
            table = plain
            pk = "P#{p}"
            sk = "P"

        p: str

    with pytest.raises(DynaormError, match="Plain has no Encrypted fields"):
        reencrypt(Plain)
    vault.keyring = None
    try:
        with pytest.raises(DynaormError, match="keyring"):
            reencrypt(Patient)
    finally:
        vault.keyring = ring(KEY)


# -- KMS: key material through the client (contract 21) ------------------------------------
kvault = Table("enc_kms_vault")


class Member(Entity):
    """A unique encrypted email: a commit asks KMS for a data key and the email's MAC, a
    read for the data keys it has not unwrapped yet."""

    class Meta:
        table = kvault
        pk = "MEMBER#{member_id}"
        sk = "MEMBER"
        unique = [Unique("email")]

    member_id: str
    email: Encrypted[str]
    plan: Encrypted[str] = "free"


class Diary(Entity):
    """Versioned: its history."""

    class Meta:
        table = kvault
        pk = "DIARY#{diary_id}"
        sk = "DIARY"
        versioned = True

    diary_id: str
    entry: Encrypted[str]
    version: int = 0


class Memo(Entity):
    """No rule but encryption: the bulk calls."""

    class Meta:
        table = kvault
        pk = "MEMO#{memo_id}"
        sk = "MEMO"

    memo_id: str
    text: Encrypted[str]


@dataclass
class Kms:
    """``kvault`` on the test's engine, and the KMS its client asks."""

    tb: TestBackend
    kms: Any  # a boto3 KMS client of that KMS (to make keys)
    key: str  # an encryption key
    mac: str  # an HMAC_256 key

    def keyring(self, key: str | None = None, **kw: Any) -> KmsKeyring:
        """A fresh keyring (empty caches: a process that has asked KMS nothing yet)."""
        return KmsKeyring(key or self.key, mac_key_id=self.mac, **kw)


def _kms(endpoint: str | None, backend: str | None) -> tuple[Any, str, str]:
    """A boto3 KMS client of the KMS at ``endpoint`` (``None``: moto's in-process one), in
    the region the table's client signs for, with a new encryption key and a new MAC key."""
    region = resolve_region(None, default_session(), backend)
    kms = boto3.client("kms", endpoint_url=endpoint, region_name=region,
                       aws_access_key_id="x", aws_secret_access_key="x")
    key = kms.create_key()["KeyMetadata"]["KeyId"]
    mac = kms.create_key(KeySpec="HMAC_256", KeyUsage="GENERATE_VERIFY_MAC")["KeyMetadata"][
        "KeyId"]
    return kms, key, mac


@pytest.fixture
def kv(backend: str | None, request: pytest.FixtureRequest,
       monkeypatch: pytest.MonkeyPatch) -> Iterator[Kms]:
    """KMS requests through the table's client's own botocore KMS client: moto's in-process
    KMS beside the in-process moto, else a moto server's, configured as an application
    configures it (``AWS_ENDPOINT_URL_KMS``)."""
    endpoint = None if backend is None else request.getfixturevalue("dynaorm_moto_server")
    if endpoint is not None:
        monkeypatch.setenv("AWS_ENDPOINT_URL_KMS", endpoint)
    with use_tables(kvault, endpoint_url=backend, name_suffix=worker_suffix(),
                    wire=wire_of(request)) as tb:
        kms, key, mac = _kms(endpoint, backend)
        kvault.keyring = KmsKeyring(key, mac_key_id=mac)
        try:
            yield Kms(tb, kms, key, mac)
        finally:
            kvault.keyring = None


@pytest.mark.engines("moto")
def test_codec_fields_of_a_sealed_row_whose_key_is_not_at_hand_says_so(kv: Kms) -> None:
    """``dynaorm.codec.fields_of`` sends nothing: a row sealed under a data key this
    process has not unwrapped (KMS ``Decrypt`` not asked) is a KeyringError saying to read
    it through a session (red team: it raised NotPrepared, a RuntimeError)."""
    from dynaorm import codec

    s = kv.tb.session()
    _save(s, Member(member_id="m1", email="ada@example.com"))
    (row,) = [i for i in kv.tb.scan_raw() if i["pk"]["S"].startswith("MEMBER#")]
    kvault.keyring = kv.keyring()  # another process: nothing unwrapped yet
    with pytest.raises(KeyringError, match="fields_of sends nothing"):
        codec.fields_of(Member, row)
    assert kv.tb.session().get(Member, member_id="m1") is not None  # (a read asks KMS)
    assert codec.fields_of(Member, row)["email"] == "ada@example.com"  # (now at hand)


def test_kms_requests_are_requests_of_the_client(kv: Kms) -> None:
    """GenerateDataKey and GenerateMac are requests of the commit that needs them, Decrypt
    of the read that first meets a data key: each an attempt the client's hooks see, for
    the table; with warm caches a commit or a read asks KMS nothing."""
    seen = Requests(kvault)
    s = kv.tb.session()
    _save(s, Member(member_id="m1", email="ada@example.com"))
    assert seen.calls[:2] == [
        ("kms:GenerateDataKey", {"KeyId": kv.key, "KeySpec": "AES_256"}),
        ("kms:GenerateMac", {"KeyId": kv.mac, "Message": b"ada@example.com",
                             "MacAlgorithm": "HMAC_SHA_256"})]
    assert seen.operations[2:] == ["TransactWriteItems"]
    seen.calls.clear()
    m = s.get(Member, member_id="m1")  # its own data key: no Decrypt
    for plan in ("pro", "team", "free"):  # the data key and the MAC are cached
        m.plan = plan
        _save(s, m)
    assert s.find(Member, email="ada@example.com") == m
    assert not [op for op in seen.operations if op.startswith("kms:")]
    kvault.keyring = kv.keyring()  # another process: nothing asked yet
    seen.calls.clear()
    s = kv.tb.session()
    assert s.get(Member, member_id="m1") == m
    assert s.find(Member, email="ada@example.com") == m
    assert s.scan(Member).all() == [m]
    assert seen.operations == ["GetItem", "kms:Decrypt", "kms:GenerateMac", "GetItem",
                               "GetItem", "Scan"]


@KMS_ENGINES
def test_a_commit_with_unique_encrypted_values_is_planned_once(
        kv: Kms, monkeypatch: pytest.MonkeyPatch) -> None:
    """Contract 23: the MACs a commit renders into guard keys (new values, and stored ones
    a change releases) are asked for before it is planned, by the unique rule's
    ``prepare``: each commit compiles its plan once, an insert, a change of the unique
    value, an update by key touching it and a delete alike, each in a process that has
    asked KMS nothing yet, and the guards are where a find reads them."""
    from dynaorm.core import commit

    planned: list[int] = []
    compile_commit = commit.compile_commit

    def counting(*args: Any, **kw: Any) -> Any:
        planned.append(1)
        return compile_commit(*args, **kw)

    monkeypatch.setattr(commit, "compile_commit", counting)
    seen = Requests(kvault)
    _save(kv.tb.session(), Member(member_id="m1", email="ada@example.com"))
    assert len(planned) == 1
    kvault.keyring = kv.keyring()  # (another process: no MAC cached)
    s = kv.tb.session()
    m = s.get(Member, member_id="m1")
    planned.clear()
    seen.calls.clear()
    m.email = "grace@example.com"
    _save(s, m)
    assert len(planned) == 1
    assert sorted(c[1]["Message"] for c in seen.calls if c[0] == "kms:GenerateMac") == [
        b"ada@example.com", b"grace@example.com"]  # (the old guard released, the new claimed)
    kvault.keyring = kv.keyring()
    s = kv.tb.session()
    planned.clear()
    s.update(Member, member_id="m1").set(email="hopper@example.com")
    s.commit()
    assert len(planned) == 1
    assert s.find(Member, email="grace@example.com") is None
    found = s.find(Member, email="hopper@example.com")
    assert found is not None and found.member_id == "m1"
    kvault.keyring = kv.keyring()
    s = kv.tb.session()
    planned.clear()
    s.delete(s.get(Member, member_id="m1"))
    s.commit()
    assert len(planned) == 1
    assert [i for i in kv.tb.scan_raw() if i["pk"]["S"].startswith("email#")] == []


@KMS_ENGINES
def test_kms_requests_say_their_service(kv: Kms) -> None:
    """Each attempt says the AWS service it goes to (``Attempt.service``): ``"kms"`` for a
    keyring's requests (named ``kms:Name``), ``"dynamodb"`` for the table's."""
    services: list[tuple[str, str]] = []

    class Services(Hook):
        def on_start(self, phase: Any) -> object:
            if isinstance(phase, Attempt):
                services.append((phase.service, phase.operation))
            return None

    kvault.db.add_hook(Services())
    s = kv.tb.session()
    _save(s, Member(member_id="m1", email="ada@example.com"))
    kvault.keyring = kv.keyring()  # nothing cached: a read asks KMS too
    assert kv.tb.session().get(Member, member_id="m1") is not None
    assert {op for service, op in services if service == "kms"} == {
        "kms:GenerateDataKey", "kms:GenerateMac", "kms:Decrypt"}
    assert all(service == "dynamodb" for service, op in services if ":" not in op)
    assert all(service == "kms" for service, op in services if op.startswith("kms:"))


@KMS_ENGINES
def test_kms_data_keys_are_bounded_by_use_and_age(kv: Kms) -> None:
    """A data key seals ``max_uses`` values for ``max_age`` seconds: the next commit's
    prepare past either asks for a new one (a plan already made keeps its own)."""
    seen = Requests(kvault)
    kvault.keyring = ring = kv.keyring()
    ring.max_uses = 4  # two encrypted values a member: a new data key every second commit
    s = kv.tb.session()
    for i in range(5):
        _save(s, Member(member_id=f"m{i}", email=f"m{i}@example.com"))
    assert seen.operations.count("kms:GenerateDataKey") == 3
    kvault.keyring = ring = kv.keyring()
    ring.max_age = -1.0  # every prepare of a write: a new one
    for i in range(5, 8):
        _save(s, Member(member_id=f"m{i}", email=f"m{i}@example.com"))
    assert seen.operations.count("kms:GenerateDataKey") == 6
    assert sorted(m.member_id for m in s.scan(Member).all()) == [f"m{i}" for i in range(8)]


@KMS_ENGINES
def test_kms_rotation_reads_old_values_and_refuses_a_dropped_key(kv: Kms) -> None:
    _save(kv.tb.session(), Member(member_id="m1", email="ada@example.com"))
    second = kv.kms.create_key()["KeyMetadata"]["KeyId"]
    kvault.keyring = kv.keyring(second, previous=[kv.key])
    s = kv.tb.session()
    m = s.get(Member, member_id="m1")
    assert m.email == "ada@example.com"
    m.plan = "pro"
    _save(s, m)  # re-sealed under the second key
    _save(s, Member(member_id="m2", email="bob@example.com"))
    kvault.keyring = kv.keyring(second)  # the first key dropped: find and guards unchanged
    s = kv.tb.session()
    assert s.find(Member, email="ada@example.com") == m
    with pytest.raises(UniqueConstraintError):
        _save(s, Member(member_id="m3", email="ada@example.com"))
    kvault.keyring = kv.keyring()  # only the first key: the second's values do not open
    with pytest.raises(DecryptionError) as info:
        kv.tb.session().get(Member, member_id="m2")
    assert info.value.key_id == second


@KMS_ENGINES
def test_kms_reencrypt_lets_the_first_key_go(kv: Kms) -> None:
    """``jobs.reencrypt`` asks KMS through the client (Decrypt under the first key for each
    data key it meets, one GenerateDataKey under the second), and the first key leaves the
    keyring with nothing left under it: rows and history read, guards and ``find`` stay."""
    s = kv.tb.session()
    _save(s, Member(member_id="m1", email="ada@example.com"), Diary(diary_id="d1", entry="a"))
    d = s.get(Diary, diary_id="d1")
    d.entry = "b"
    _save(s, d)
    second = kv.kms.create_key()["KeyMetadata"]["KeyId"]
    kvault.keyring = kv.keyring(second, previous=[kv.key])
    seen = Requests(kvault)
    assert run_local(reencrypt(Member)) == ReencryptReport(1, 0, [], 1)
    assert run_local(reencrypt(Diary, segments=2)) == ReencryptReport(3, 0, [], 3)
    assert {(op, r.get("KeyId")) for op, r in seen.calls if op.startswith("kms:")} == {
        ("kms:Decrypt", kv.key), ("kms:GenerateDataKey", second)}
    assert seen.operations.count("UpdateItem") == 4
    kvault.keyring = kv.keyring(second)  # the first key dropped
    s = kv.tb.session()
    assert s.find(Member, email="ada@example.com").member_id == "m1"
    assert [x.entry for x in s.history(Diary, diary_id="d1")] == ["a", "b"]
    with pytest.raises(UniqueConstraintError):
        _save(s, Member(member_id="m2", email="ada@example.com"))


@KMS_ENGINES
def test_every_read_and_write_path_asks_kms_first(kv: Kms) -> None:
    """Each read decodes only after asking for the data keys it has not unwrapped, each
    write encodes only after asking for a data key (a fresh keyring before each step:
    nothing known): history, get_many, query, an overwrite, bulk saves and deletes."""
    seen = Requests(kvault)
    s = kv.tb.session()
    _save(s, Diary(diary_id="d0", entry="first"))
    kvault.keyring = kv.keyring()
    d = s.get(Diary, diary_id="d0")
    d.entry = "second"
    _save(s, d)
    kvault.keyring = kv.keyring()
    assert [x.entry for x in s.history(Diary, diary_id="d0")] == ["first", "second"]
    kvault.keyring = kv.keyring()
    s.save_many([Memo(memo_id=f"m{i}", text=f"memo {i}") for i in range(3)])
    kvault.keyring = kv.keyring()
    assert [x.text for x in s.get_many(Memo, [{"memo_id": "m1"}, {"memo_id": "m2"}])
            if x is not None] == ["memo 1", "memo 2"]
    kvault.keyring = kv.keyring()
    assert s.query(Memo, memo_id="m2").one().text == "memo 2"
    kvault.keyring = kv.keyring()
    s.save(Memo(memo_id="m1", text="over"), overwrite=True)
    s.commit()
    kvault.keyring = kv.keyring()
    loaded = s.get_many(Memo, [{"memo_id": "m1"}, {"memo_id": "m2"}])
    kvault.keyring = kv.keyring()
    s.save_many([x for x in loaded if x is not None])  # loaded: each planned on its item
    kvault.keyring = kv.keyring()
    s.delete_many([x for x in loaded if x is not None])
    assert [x.memo_id for x in s.scan(Memo).all()] == ["m0"]
    assert seen.operations.count("kms:GenerateDataKey") == 5


@KMS_ENGINES
def test_check_and_streams_ask_kms_through_the_client(kv: Kms) -> None:
    """``dynaorm check`` audits guards by the MACs of the values it reads, and a stream's
    images open: both ask KMS (Decrypt, GenerateMac) through the table's client."""
    from dynaorm.jobs.checking import check_table
    from tests.support.audit import audit_table

    _save(kv.tb.session(), Member(member_id="m1", email="ada@example.com"),
          Member(member_id="m2", email="bob@example.com"))
    kvault.keyring = kv.keyring()
    seen = Requests(kvault)
    result = check_table(kvault)
    assert (result.scanned, result.problems) == (4, [])
    assert "kms:Decrypt" in seen.operations and "kms:GenerateMac" in seen.operations
    kvault.keyring = kv.keyring()
    assert audit_table(kvault) == (4, [])
    raw = next(i for i in kv.tb.scan_raw() if i["pk"]["S"] == "MEMBER#m1")
    kvault.keyring = kv.keyring()
    seen.calls.clear()
    (change,) = kvault.changes([{"eventName": "INSERT", "dynamodb": {"NewImage": raw}}])
    assert seen.operations == []  # (an image opens when it is read)
    assert change.new.email == "ada@example.com"
    assert seen.operations == ["kms:Decrypt"]


@KMS_ENGINES
@pytest.mark.sync_only  # (the sync driver's sleep)
def test_a_kms_throttle_is_retried(kv: Kms) -> None:
    kvault.db.driver.sleep = lambda seconds: None
    with inject_faults(kvault) as faults:
        faults.throttle("kms:GenerateDataKey", times=2)
        faults.server_error("kms:GenerateMac")
        _save(kv.tb.session(), Member(member_id="m1", email="ada@example.com"))
    assert faults.sent["kms:GenerateDataKey"] == 3 and faults.sent["kms:GenerateMac"] == 2
    kvault.keyring = kv.keyring()
    with inject_faults(kvault) as faults:
        faults.throttle("kms:Decrypt")
        assert kv.tb.session().get(Member, member_id="m1").email == "ada@example.com"
    assert faults.sent["kms:Decrypt"] == 2


@KMS_ENGINES
@pytest.mark.sync_only  # (the sync driver's sleep)
def test_a_kms_failure_past_the_attempts_is_a_keyring_error(kv: Kms) -> None:
    """A KMS request that fails after its retries is a KeyringError naming the key (the
    RequestError its cause), raised before the write is sent: the table is unchanged."""
    kvault.db.driver.sleep = lambda seconds: None
    s = kv.tb.session()
    _save(s, Member(member_id="m1", email="ada@example.com"))
    before = kv.tb.scan_raw()
    m = s.get(Member, member_id="m1")
    m.email = "ada@example.org"  # a new value: its MAC is asked for
    with inject_faults(kvault) as faults:
        faults.throttle("kms:GenerateMac", times=None)
        s.save(m)
        with pytest.raises(KeyringError) as info:
            s.commit()
    assert info.value.key_id == kv.mac
    cause = info.value.__cause__
    assert isinstance(cause, RequestError) and cause.code == "ThrottlingException"
    assert cause.attempts == faults.sent["kms:GenerateMac"] == kvault.db.max_attempts
    assert kv.tb.scan_raw() == before and "TransactWriteItems" not in faults.sent
    kvault.keyring = kv.keyring()  # a read that must unwrap, and cannot
    with inject_faults(kvault) as faults:
        faults.server_error("kms:Decrypt", times=None)
        with pytest.raises(KeyringError) as info:
            kv.tb.session().get(Member, member_id="m1")
    assert info.value.key_id == kv.key


@KMS_ENGINES
def test_missing_wrong_and_refused_kms_keys_name_the_key(kv: Kms) -> None:
    """A missing key (NotFoundException), a key of the wrong kind (InvalidKeyUsage), a
    data key KMS refuses to unwrap (an edited wrapped key: AccessDenied): each a
    DynaormError naming the key id, nothing written."""
    s = kv.tb.session()
    kvault.keyring = KmsKeyring("alias/missing", mac_key_id=kv.mac)
    s.save(Member(member_id="m1", email="ada@example.com"))
    with pytest.raises(KeyringError) as info:
        s.commit()
    assert info.value.key_id == "alias/missing" and "NotFoundException" in str(info.value)
    kvault.keyring = KmsKeyring(kv.key, mac_key_id=kv.key)  # an encryption key as MAC key
    s.save(Member(member_id="m1", email="ada@example.com"))
    with pytest.raises(KeyringError) as info:
        s.commit()
    assert info.value.key_id == kv.key
    assert getattr(info.value.__cause__, "code", None) == "InvalidKeyUsageException"
    assert kv.tb.scan_raw() == []
    kvault.keyring = kv.keyring()
    _save(s, Member(member_id="m1", email="ada@example.com"))
    raw = next(i for i in kv.tb.scan_raw() if i["pk"]["S"] == "MEMBER#m1")
    blob = bytearray(raw["plan"]["B"])
    blob[4 + blob[1] + 8] ^= 0xFF  # a byte of the wrapped data key
    _put_raw(kv.tb, {**raw, "plan": {"B": bytes(blob)}})
    kvault.keyring = kv.keyring()
    with pytest.raises(DecryptionError) as refused:
        kv.tb.session().get(Member, member_id="m1")
    assert (refused.value.field, refused.value.key_id) == ("plan", kv.key)
    assert isinstance(refused.value.__cause__, KeyringError)
    assert isinstance(refused.value.__cause__.__cause__, RequestError)


@KMS_ENGINES
def test_kms_attempts_are_spans_of_their_operation(kv: Kms) -> None:
    spans = Spans()
    kvault.db.tracing.tracer_provider = spans.provider
    try:
        _save(kv.tb.session(), Member(member_id="m1", email="ada@example.com"))
        (commit,) = spans.named("dynaorm.commit")
        assert [c.name for c in spans.children(commit)] == [
            "KMS.GenerateDataKey", "KMS.GenerateMac", "DynamoDB.TransactWriteItems"]
        (span,) = spans.named("KMS.GenerateMac")
        assert span.attributes is not None
        assert {k: span.attributes[k] for k in ("rpc.service", "rpc.method",
                                                "dynaorm.outcome", "dynaorm.entity_types")
                } == {"rpc.service": "KMS", "rpc.method": "GenerateMac", "dynaorm.outcome": "ok",
                      "dynaorm.entity_types": ("Member",)}
        assert "ada@example.com" not in str(span.attributes)
        spans.clear()
        kvault.keyring = kv.keyring()
        kv.tb.session().get(Member, member_id="m1")
        (get,) = spans.named("dynaorm.get")
        assert [c.name for c in spans.children(get)] == ["DynamoDB.GetItem", "KMS.Decrypt"]
    finally:
        kvault.db.tracing.tracer_provider = None


@KMS_ENGINES
@pytest.mark.sync_only  # (the sync driver's sleep)
def test_rate_holds_kms_requests(kv: Kms) -> None:
    """``rate=``: a KMS request consumes no capacity unit but waits, as every request
    does, while the budget is spent (a clock that stands still: the units stay due)."""
    client = kvault.db
    events: list[str] = []
    client.driver.sleep = lambda seconds: events.append("wait")

    class Seen(Hook):
        def on_start(self, phase: Any) -> object:
            if isinstance(phase, Attempt):
                events.append(phase.operation)
            return None

    client.add_hook(Seen())
    client.rate = Rate(write=1)
    try:
        assert client.policy.budget is not None
        client.policy.budget.clock = lambda: 0.0
        kvault.keyring = ring = kv.keyring()
        ring.max_uses = 1  # every commit asks for a new data key
        s = kv.tb.session()
        _save(s, Member(member_id="m1", email="ada@example.com"))
        assert events == ["kms:GenerateDataKey", "kms:GenerateMac", "TransactWriteItems"]
        events.clear()
        _save(s, Member(member_id="m2", email="bob@example.com"))
        assert events == ["wait", "kms:GenerateDataKey", "wait", "kms:GenerateMac", "wait",
                          "TransactWriteItems"]
    finally:
        client.rate = None


def test_an_async_session_awaits_its_kms_requests(backend: str | None,
                                                  request: pytest.FixtureRequest) -> None:
    """An AsyncSession sends KMS requests off its event loop and awaits them: while one is
    held in flight, another task of the loop runs and lets it go (were it sent on the
    loop, the loop would stand still and the hold time out)."""
    import asyncio
    import threading

    if engine_of(request) == "moto":
        pytest.skip("in-process moto does not answer an AsyncSession")
    from dynaorm import AsyncSession

    kms, key, mac = _kms(request.getfixturevalue("dynaorm_moto_server"), backend)
    held: list[bool] = []

    async def run(step: Any, operation: str) -> Any:
        loop = asyncio.get_running_loop()
        sent, release = asyncio.Event(), threading.Event()

        def hold(**_: Any) -> None:  # where botocore sends the KMS request
            loop.call_soon_threadsafe(sent.set)
            held.append(release.wait(timeout=10))

        async def other() -> None:
            await sent.wait()
            release.set()

        kms.meta.events.register(f"before-send.kms.{operation}", hold)
        try:
            return (await asyncio.gather(step, other()))[0]
        finally:
            kms.meta.events.unregister(f"before-send.kms.{operation}", hold)

    async def main() -> Member | None:
        s = AsyncSession(kvault)
        s.save(Member(member_id="m1", email="ada@example.com"))
        await run(s.commit(), "GenerateDataKey")
        kvault.keyring = KmsKeyring(key, mac_key_id=mac, client=kms)  # nothing unwrapped
        found: Member | None = await run(AsyncSession(kvault).get(Member, member_id="m1"),
                                         "Decrypt")
        return found

    with use_tables(kvault, endpoint_url=backend, name_suffix=worker_suffix(),
                    wire=wire_of(request)):
        kvault.keyring = KmsKeyring(key, mac_key_id=mac, client=kms)
        try:
            found = asyncio.run(main())
        finally:
            kvault.keyring = None
    assert found is not None and found.email == "ada@example.com"
    assert held == [True, True]


# -- refusals before sending ------------------------------------------------------------------
def test_a_keyring_without_a_mac_key_is_refused_for_unique_encrypted_fields() -> None:
    """When the class is defined with it on its table, or when it is bound to a table or
    a client with such an entity: never a request that cannot work."""
    for keyring in (KmsKeyring("alias/data"), StaticKeyring(KEY),
                    StaticKeyring(KEY, previous=[OLD])):
        refusing = Table("enc_refused", keyring=keyring)
        with pytest.raises(KeyringError, match="MAC key") as info:
            class Refused(Entity):
                class Meta:
                    table = refusing
                    pk = "R#{r}"
                    sk = "R"
                    unique = [Unique("secret")]

                r: str
                secret: Encrypted[str]
        assert info.value.key_id == keyring.key_id
    with pytest.raises(KeyringError):
        kvault.keyring = KmsKeyring("alias/data")
    assert kvault.keyring is None
    client = Client(endpoint_url="http://127.0.0.1:1")  # (nothing is sent)
    bound = Table("enc_bound", client=client)

    class Bound(Entity):
        class Meta:
            table = bound
            pk = "B#{b}"
            sk = "B"
            unique = [Unique("secret")]

        b: str
        secret: Encrypted[str]

    with pytest.raises(KeyringError) as info:
        client.keyring = KmsKeyring("alias/data")
    assert client.keyring is None and info.value.key_id == "alias/data"
    client.keyring = KmsKeyring("alias/data", mac_key_id="alias/mac")
    bound.keyring = StaticKeyring(KEY, mac_key=MAC)  # (its own: the client's is not asked)
    client.keyring = KmsKeyring("alias/data")


def test_a_static_key_of_the_wrong_size_is_refused() -> None:
    import hashlib

    with pytest.raises(KeyringError, match="16, 24 or 32 bytes") as info:
        StaticKeyring(b"short-key")
    assert info.value.key_id == hashlib.sha256(b"short-key").hexdigest()[:16]
    for kwargs in ({"previous": [b"x" * 31]}, {"mac_key": b"m" * 33}):
        with pytest.raises(KeyringError, match="16, 24 or 32 bytes"):
            StaticKeyring(KEY, **kwargs)
    assert StaticKeyring(b"k" * 16).key_id != StaticKeyring(b"k" * 24).key_id


def test_key_material_not_prepared_is_a_programming_error() -> None:
    """Sealing and opening only read a keyring's caches: what a KmsKeyring was not asked
    to prepare is NotPrepared, never a KMS call made there and then."""
    with moto_backend():
        _, key, mac = _kms(None, None)
        ring = KmsKeyring(key, mac_key_id=mac)
        at = {"pk": {"S": "a"}}
        with pytest.raises(NotPrepared):
            seal_value(ring, {"S": "x"}, "t", at, "f")
        with pytest.raises(NotPrepared):
            ring.mac("x")
        Client().driver.run(ring.prepare(macs=["x"], writing=True))
        sealed = seal_value(ring, {"S": "x"}, "t", at, "f")
        assert open_value(ring, sealed, "t", at, "f", "f") == {"S": "x"}
        assert len(ring.mac("x")) == 64
        with pytest.raises(NotPrepared):
            open_value(KmsKeyring(key), sealed, "t", at, "f", "f")


def test_a_keyring_pickles_without_its_key_material() -> None:
    ring = StaticKeyring(KEY, previous=[OLD], mac_key=MAC)
    at = {"pk": {"S": "a"}}
    sealed = seal_value(ring, {"S": "x"}, "t", at, "f")
    back = pickle.loads(pickle.dumps(ring))
    assert (back.key_id, back.key_ids, back.mac_key_id) == (ring.key_id, ring.key_ids,
                                                            ring.mac_key_id)
    assert open_value(back, sealed, "t", at, "f", "f") == {"S": "x"}
    assert back.mac("v") == ring.mac("v")
    kms = pickle.loads(pickle.dumps(KmsKeyring("k", previous=["j"], region="eu-west-1",
                                               mac_key_id="m")))
    assert (kms.key_ids, kms.region, kms.mac_key_id) == (frozenset({"k", "j"}), "eu-west-1",
                                                         "m")
    with pytest.raises(NotPrepared):
        kms.data_key()


def test_a_hostile_kms_answer_is_a_keyring_error_never_a_key() -> None:
    """What a KMS endpoint answers is read from the network (botocore parses it first): a
    success without a data key, or with one of the wrong size, a body that is not JSON,
    server errors and cut connections past the attempts: each a KeyringError naming the
    key, never a data key that is not one; a server error once is retried."""
    import base64

    import botocore.config

    from tests.support.hostile import Reply, answer, json_body, serving

    good = {"KeyId": "k", "Plaintext": base64.b64encode(b"d" * 32).decode(),
            "CiphertextBlob": base64.b64encode(b"w" * 40).decode()}
    failed = answer(json_body({"__type": "KMSInternalException", "message": "down"}),
                    status="500 Internal Server Error")
    cases: list[tuple[list[bytes | None], str | None]] = [
        ([answer(json_body({"KeyId": "k"}))], "lacks"),
        ([answer(json_body({**good, "Plaintext": base64.b64encode(b"short").decode()}))],
         "32 bytes"),
        ([answer(b"<html>not json</html>")], "lacks"),
        ([failed, failed, failed], "KMSInternalException.*after 3 attempts"),
        ([None, None, None], "ConnectionError.*after 3 attempts"),  # (closed, no answer)
        ([failed, answer(json_body(good))], None),
    ]
    client = Client(endpoint_url="http://127.0.0.1:1", max_attempts=3)  # (KMS only)
    client.driver.sleep = lambda seconds: None
    for replies, refused in cases:
        def script(n: int, body: bytes, replies: list[bytes | None] = replies) -> Reply:
            data = replies[min(n, len(replies)) - 1]
            return Reply(close=True) if data is None else Reply(data)

        with serving(script) as server:
            kms = boto3.client("kms", endpoint_url=server.url, region_name="us-east-1",
                               aws_access_key_id="x", aws_secret_access_key="x",
                               config=botocore.config.Config(retries={"total_max_attempts": 1}))
            ring = KmsKeyring("k", client=kms)
            if refused is None:
                client.driver.run(ring.prepare(writing=True))
                assert ring.data_key()[0] == b"d" * 32 and len(server.bodies) == 2
                continue
            with pytest.raises(KeyringError, match=refused) as info:
                client.driver.run(ring.prepare(writing=True))
            assert info.value.key_id == "k"
            with pytest.raises(NotPrepared):
                ring.data_key()


class Card(BaseModel):
    brand: str
    pan: str


class Wallet(Entity):
    """A nested model sealed whole: the way out the refusal of ``Encrypted`` inside a
    nested model names (tests/unit/test_definitions.py)."""

    class Meta:
        table = vault
        pk = "WALLET#{wallet_id}"
        sk = "WALLET"

    wallet_id: str
    card: Encrypted[Card]
    cards: Encrypted[list[Card]] = []


def test_a_nested_model_sealed_whole_is_never_stored_in_plaintext(eb: TestBackend) -> None:
    """Contract 25: a card number inside a nested model is sealed with it (0.9 accepted
    ``Encrypted`` on the nested model's field and stored the number in plaintext)."""
    s = eb.session()
    w = Wallet(wallet_id="w1", card=Card(brand="visa", pan="4111111111111111"),
               cards=[Card(brand="amex", pan="378282246310005")])
    _save(s, w)
    raw = next(i for i in eb.scan_raw() if i["pk"]["S"] == "WALLET#w1")
    assert set(raw["card"]) == {"B"} and set(raw["cards"]) == {"B"}
    for pan in ("4111111111111111", "378282246310005"):
        assert not _in_plain(pan, *eb.scan_raw()) and pan.encode() not in b"".join(
            bytes(a["B"]) for a in raw.values() if "B" in a)
    assert s.get(Wallet, wallet_id="w1") == w


def test_an_unchanged_save_of_a_versioned_entity_writes_no_version(eb: TestBackend) -> None:
    """A save of a versioned entity whose sealed value did not change (an overwrite with
    the same values, a loaded object saved as it is) writes nothing, as a plain entity's
    does: its values are compared, not their ciphertexts, sealed anew by each encoding
    (every such save wrote a new version and new ciphertexts)."""
    s = eb.session()
    _save(s, Record(record_id="r1", diagnosis="flu"))
    raw = [i for i in eb.scan_raw() if i["pk"]["S"] == "RECORD#r1"]
    _save(s, s.get(Record, record_id="r1"))
    s.save(Record(record_id="r1", diagnosis="flu"), overwrite=True)
    s.commit()
    assert [i for i in eb.scan_raw() if i["pk"]["S"] == "RECORD#r1"] == raw
    s.save(Record(record_id="r1", diagnosis="cold"), overwrite=True)
    s.commit()
    assert [(r.version, r.diagnosis) for r in s.history(Record, record_id="r1")] == [
        (1, "flu"), (2, "cold")]
