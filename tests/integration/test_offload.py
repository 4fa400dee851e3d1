"""Values of any size (contract 24): ``Offloaded[T]`` fields of a table with ``offload=``
keep a value above ``offload_threshold`` in S3 (moto's, beside the engine), the row
holding a reference; every read path reads the value back (a page's objects fetched in
parallel), an update or a delete removes what no row references any more only once the
commit applied, a failed commit loses nothing and leaves nothing, a key move and version
rows keep their values. S3 requests are requests of the client (hooks, faults, retries,
sync and async). The orphan / dangling-reference property is
tests/system/test_offload_model.py; ``dynaorm check`` is tests/integration/test_check.py.
"""

from __future__ import annotations

import hashlib
import json
import os
import pickle
import threading
import warnings
from collections.abc import Iterator
from datetime import timedelta
from typing import Annotated, Any

import pytest

from dynaorm import (
    Compressed,
    ConcurrentModificationError,
    ConditionFailedError,
    DynaormError,
    Encrypted,
    Entity,
    F,
    ItemExistsError,
    ItemTooLargeError,
    KmsKeyring,
    Offloaded,
    OffloadError,
    Session,
    StaticKeyring,
    Table,
    Unique,
    Versioned,
)
from dynaorm.schema.rules.offloaded import MARK, references
from dynaorm.testing import TestBackend, inject_faults, use_tables, worker_suffix
from tests.conftest import engine_of, wire_of
from tests.support import mocked_aws
from tests.support.offload import Bucket, bucket, referenced
from tests.support.recording import Requests, send

aws_moto = mocked_aws.aws_moto  # (a fixture: moto in process, boto3's clients too)

#: (what it asserts depends on the engine: it runs on each)
pytestmark = pytest.mark.engines("moto", "local", "dynoxide")

KEY = b"k" * 32
#: the size from which the suite's offloaded values go to S3
LIMIT = 1000
store = Table("offload_store", offload="s3://placeholder/v/", offload_threshold=LIMIT,
              keyring=StaticKeyring(KEY, mac_key=b"m" * 32))


class Doc(Entity):
    class Meta:
        table = store
        pk = "DOC#{doc_id}"
        sk = "DOC"

    doc_id: str
    title: str = ""
    body: Offloaded[str] = ""
    blob: Offloaded[bytes] | None = None
    data: Offloaded[dict[str, Any]] | None = None


class Note(Versioned):
    class Meta:
        table = store
        pk = "NOTE#{note_id}"
        sk = "NOTE"

    note_id: str
    text: Offloaded[str] = ""
    tag: str = ""


class Secret(Entity):
    """Compressed (48), sealed (50), then offloaded: the object holds the ciphertext."""

    class Meta:
        table = store
        pk = "SECRET#{sid}"
        sk = "SECRET"

    sid: str
    text: Encrypted[Offloaded[Annotated[str, Compressed(min_size=10)]]] = ""


class Packed(Entity):
    """Compressed, then offloaded: the object holds the compressed bytes."""

    class Meta:
        table = store
        pk = "PACKED#{pid}"
        sk = "PACKED"

    pid: str
    blob: Offloaded[Compressed[bytes]] = b""


class Journal(Versioned):
    """Sealed then offloaded, with history: each version row's object holds its own
    ciphertext."""

    class Meta:
        table = store
        pk = "JOURNAL#{jid}"
        sk = "JOURNAL"

    jid: str
    entry: Encrypted[Offloaded[str]] = ""


class Profile(Entity):
    """An offloaded value beside a plain map (whose changed members a save writes by
    their paths)."""

    class Meta:
        table = store
        pk = "PROFILE#{pid}"
        sk = "PROFILE"

    pid: str
    bio: Offloaded[str] = ""
    prefs: dict[str, str] = {}
    meta: dict[str, Any] = {}


class Moving(Entity):
    class Meta:
        table = store
        pk = "MOVE#{mid}"
        sk = "MOVE"

    mid: str
    body: Offloaded[str] = ""


@pytest.fixture
def tb(db: TestBackend) -> TestBackend:
    return db


@pytest.fixture
def s3(backend: str | None, request: pytest.FixtureRequest,
       monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[TestBackend, Bucket]]:
    """``store`` on the test's engine, offloading into a bucket of its own."""
    with bucket(backend, request, monkeypatch, store) as b, use_tables(
            store, endpoint_url=backend, name_suffix=worker_suffix(),
            wire=wire_of(request)) as tb:
        if request.node.callspec.params.get("backend", "").endswith("-async"):
            tb.session_kind = "async"
        yield tb, b


def big(n: int = 5000, c: str = "x") -> str:
    return c * n


def _doc_kept_in_s3(tb: TestBackend) -> None:
    """``Doc`` 1 committed, its body (:func:`big`) kept in S3."""
    s = tb.session()
    s.save(Doc(doc_id="1", body=big()))
    s.commit()


def rows(tb: TestBackend) -> list[dict[str, Any]]:
    return tb.scan_raw()


def consistent(tb: TestBackend, b: Bucket) -> None:
    """No orphan, no dangling reference: the objects in the bucket are exactly those
    the table's rows reference."""
    assert b.uris() == referenced(rows(tb))


# -- what is stored ------------------------------------------------------------------------
@pytest.mark.engines("moto")  # (what the client sends S3, never the engine's)
def test_a_small_value_stays_in_its_row_and_asks_s3_nothing(s3: tuple[TestBackend, Bucket]
                                                            ) -> None:
    tb, b = s3
    seen = Requests(store)
    s = tb.session()
    s.save(Doc(doc_id="1", body="short", blob=b"\x00" * 10, data={"a": 1}))
    s.commit()
    assert tb.session().get(Doc, doc_id="1") == Doc(doc_id="1", body="short",
                                                    blob=b"\x00" * 10, data={"a": 1})
    assert not [op for op in seen.operations if op.startswith("s3:")]
    (row,) = rows(tb)
    assert row["body"] == {"S": "short"} and not references(row)
    assert b.keys() == set()


def test_a_large_value_is_kept_in_s3_and_read_back(s3: tuple[TestBackend, Bucket]) -> None:
    tb, b = s3
    doc = Doc(doc_id="1", title="t", body=big(), blob=bytes(range(256)) * 20,
              data={"k": big(2000), "n": 3})
    s = tb.session()
    s.save(doc)
    s.commit()
    (row,) = rows(tb)
    refs = references(row)
    assert set(refs) == {"body", "blob", "data"}
    assert row["title"] == {"S": "t"}
    # the object holds what the row would have held: UTF-8 text, bytes, DynamoDB JSON
    assert b.body(refs["body"].uri) == big().encode()
    assert b.body(refs["blob"].uri) == bytes(range(256)) * 20
    assert json.loads(b.body(refs["data"].uri))["M"]["n"] == {"N": "3"}
    for ref in refs.values():
        assert ref.sha256 == hashlib.sha256(b.body(ref.uri)).hexdigest()
    got = tb.session().get(Doc, doc_id="1", consistent=True)
    assert got == doc
    consistent(tb, b)


@pytest.mark.engines("moto")
def test_codec_fields_of_an_offloaded_row_says_to_read_it_through_a_session(
        s3: tuple[TestBackend, Bucket]) -> None:
    """``dynaorm.codec.fields_of`` sends nothing, so it cannot fetch an offloaded value:
    an OffloadError naming the field and its object (it raised ``Unplaced``, a placing
    rule's signal to a read that did not prepare its rows, not a DynaormError)."""
    from dynaorm import codec

    tb, _ = s3
    s = tb.session()
    s.save(Doc(doc_id="1", title="t", body=big()))
    s.commit()
    (row,) = rows(tb)
    with pytest.raises(OffloadError, match=r"Doc\.body: .*s3://.* read it through a session"):
        codec.fields_of(Doc, row)
    assert codec.fields_of(Doc, {**row, "body": {"S": "inline"}})["body"] == "inline"


def test_a_value_over_400_kb_is_saved_when_offloaded(s3: tuple[TestBackend, Bucket]) -> None:
    tb, b = s3
    s = tb.session()
    s.save(Doc(doc_id="huge", body=big(600_000)))
    s.commit()
    assert tb.session().get(Doc, doc_id="huge", consistent=True).body == big(600_000)
    consistent(tb, b)


def test_a_dict_that_looks_like_a_reference_is_offloaded_and_read_as_itself(
        s3: tuple[TestBackend, Bucket]) -> None:
    """A stored map whose one member is the reference's mark is a reference: a small
    inline value of that shape is offloaded whatever its size, never read as one."""
    tb, b = s3
    lookalike = {MARK: {"uri": "s3://elsewhere/x", "sha256": "0", "size": 1, "tag": "S"}}
    s = tb.session()
    s.save(Doc(doc_id="1", data=lookalike))
    s.commit()
    assert tb.session().get(Doc, doc_id="1", consistent=True).data == lookalike
    assert len(b.keys()) == 1


# -- reads ---------------------------------------------------------------------------------
def test_every_read_path_fetches_the_values(s3: tuple[TestBackend, Bucket]) -> None:
    tb, _ = s3
    s = tb.session()
    docs = [Doc(doc_id=str(i), body=big(c=str(i))) for i in range(4)]
    for d in docs:
        s.save(d)
    s.commit()
    r = tb.session()
    assert r.get(Doc, doc_id="2", consistent=True).body == big(c="2")
    assert sorted(d.body[0] for d in r.scan(Doc).all()) == ["0", "1", "2", "3"]
    assert sorted(v["body"] for v in r.scan(Doc).values("body")) == sorted(
        big(c=str(i)) for i in range(4))
    got = r.get_many(Doc, [{"doc_id": str(i)} for i in range(4)])
    assert sorted(d.body[0] for d in got if d is not None) == ["0", "1", "2", "3"]
    assert r.query(Doc, doc_id="3").first().body == big(c="3")


class Overlap(Requests):
    """Holds the first ``parties`` GETs until all are in flight at once (a proof of
    concurrency that does not depend on how fast S3 answers: sent one after another, the
    barrier times out)."""

    def __init__(self, table: Table, parties: int) -> None:
        super().__init__(table)
        self.barrier = threading.Barrier(parties)
        self.overlapped: bool | None = None

    def on_start(self, phase: Any) -> object:
        token = super().on_start(phase)
        if phase.operation == "s3:GetObject" and not self.barrier.broken and (
                self.overlapped is None):
            try:
                self.barrier.wait(timeout=10)
                self.overlapped = True
            except threading.BrokenBarrierError:
                self.overlapped = False
        return token


@pytest.mark.sync_only  # (the barrier holds the driver's threads)
def test_a_page_fetches_its_objects_in_parallel_one_get_each(
        s3: tuple[TestBackend, Bucket]) -> None:
    tb, _ = s3
    s = tb.session()
    for i in range(6):
        s.save(Doc(doc_id=str(i), body=big(c=str(i))))
    s.commit()
    seen = Overlap(store, parties=3)
    assert len(tb.session().scan(Doc).all()) == 6
    assert seen.overlapped is True
    assert seen.operations.count("s3:GetObject") == 6
    assert set(seen.operations) == {"Scan", "s3:GetObject"}


@pytest.mark.engines("moto")  # (S3's object checked by the client: one engine)
def test_a_read_of_a_missing_object_raises_never_another_value(
        s3: tuple[TestBackend, Bucket]) -> None:
    tb, b = s3
    _doc_kept_in_s3(tb)
    (uri,) = b.uris()
    b.remove(uri)
    with pytest.raises(OffloadError, match="missing") as caught:
        tb.session().get(Doc, doc_id="1", consistent=True)
    assert caught.value.uri == uri
    b.put(uri.removeprefix(f"s3://{b.name}/"), b"other bytes")
    with pytest.raises(OffloadError, match="SHA-256"):
        tb.session().get(Doc, doc_id="1", consistent=True)


# -- writes ----------------------------------------------------------------------------------
def test_a_save_that_leaves_the_value_alone_uploads_nothing(
        s3: tuple[TestBackend, Bucket]) -> None:
    tb, b = s3
    _doc_kept_in_s3(tb)
    before = b.uris()
    doc = tb.session().get(Doc, doc_id="1", consistent=True)
    seen = Requests(store)
    doc.title = "renamed"
    s = tb.session()
    s.save(doc)
    s.commit()
    assert not [op for op in seen.operations if op.startswith("s3:")]
    assert b.uris() == before
    (write,) = seen.of("UpdateItem")
    assert "body" not in json.dumps(write.get("ExpressionAttributeNames", {}))
    doc.title = "again"  # (its state after the save: the same reference)
    s.save(doc)
    s.commit()
    assert b.uris() == before
    assert tb.session().get(Doc, doc_id="1", consistent=True).body == big()


def test_a_pickled_object_fetches_its_values_before_its_save_is_planned(
        s3: tuple[TestBackend, Bucket]) -> None:
    """A loaded object pickled (its row's references without their objects' bytes: a
    reference pickles as a plain map) has them fetched before its save is planned, then
    planned as the loaded one: its unchanged value keeps its object, one GET, no upload."""
    tb, b = s3
    s = tb.session()
    s.save(Doc(doc_id="p", body=big()))
    s.commit()
    before = b.uris()
    doc = pickle.loads(pickle.dumps(tb.session().get(Doc, doc_id="p", consistent=True)))
    seen = Requests(store)
    doc.title = "renamed"
    s = tb.session()
    s.save(doc)
    s.commit()
    assert [op for op in seen.operations if op.startswith("s3:")] == ["s3:GetObject"]
    (write,) = seen.of("UpdateItem")
    assert "body" not in json.dumps(write.get("ExpressionAttributeNames", {}))
    assert b.uris() == before
    assert tb.session().get(Doc, doc_id="p", consistent=True).title == "renamed"


def test_a_changed_value_replaces_its_object_after_the_commit(
        s3: tuple[TestBackend, Bucket]) -> None:
    tb, b = s3
    s = tb.session()
    doc = Doc(doc_id="1", body=big())
    s.save(doc)
    s.commit()
    (old,) = b.uris()
    seen = Requests(store)
    doc.body = big(c="y")
    s.save(doc)
    s.commit()
    ops = seen.operations
    assert ops.index("s3:PutObject") < ops.index("UpdateItem") < ops.index("s3:DeleteObjects")
    assert old not in b.uris() and len(b.uris()) == 1
    assert tb.session().get(Doc, doc_id="1", consistent=True).body == big(c="y")
    doc.body = "small again"
    s.save(doc)
    s.commit()
    assert b.keys() == set()
    consistent(tb, b)


@pytest.mark.engines("moto")  # (what the save plans, never the engine's)
def test_a_value_under_a_raised_threshold_stays_until_written_then_moves_into_its_row(
        s3: tuple[TestBackend, Bucket], monkeypatch: pytest.MonkeyPatch) -> None:
    """The threshold is asked where the save plans. Once it is raised past a value kept in
    S3, a save of another field leaves that value as stored (its object kept, nothing
    uploaded); a save that writes the value again writes it into its row and removes its
    object after the commit. Nothing is left behind; the value reads the same throughout."""
    tb, b = s3
    s = tb.session()
    s.save(Doc(doc_id="t", body=big()))
    s.commit()
    (kept,) = b.uris()
    monkeypatch.setattr(store, "offload_threshold", 10 * LIMIT)
    doc = tb.session().get(Doc, doc_id="t", consistent=True)
    doc.title = "renamed"
    s = tb.session()
    s.save(doc)
    s.commit()
    assert b.uris() == {kept}
    assert tb.session().get(Doc, doc_id="t", consistent=True).body == big()
    doc.body = big(c="y")
    s.save(doc)
    s.commit()
    (row,) = [r for r in rows(tb) if r["pk"] == {"S": "DOC#t"}]
    assert row["body"] == {"S": big(c="y")}
    assert b.uris() == set()
    consistent(tb, b)
    back = tb.session().get(Doc, doc_id="t", consistent=True)
    assert (back.title, back.body) == ("renamed", big(c="y"))


@pytest.mark.engines("moto")  # (what the save plans, never the engine's)
def test_a_map_kept_in_its_row_that_a_changed_member_makes_large_goes_to_s3(
        s3: tuple[TestBackend, Bucket]) -> None:
    """A loaded save writes a changed member of a stored map by its path: never so for an
    offloaded map, whose whole value the rule must see (it was stored inline, above the
    threshold, and read as a plain map)."""
    tb, b = s3
    s = tb.session()
    s.save(Doc(doc_id="1", data={"a": "x", "b": "y"}))
    s.commit()
    doc = tb.session().get(Doc, doc_id="1", consistent=True)
    doc.data = {"a": "x", "b": big()}
    s = tb.session()
    s.save(doc)
    s.commit()
    assert list(rows(tb)[0]["data"]["M"]) == [MARK]
    consistent(tb, b)
    assert tb.session().get(Doc, doc_id="1", consistent=True).data == {"a": "x", "b": big()}


@pytest.mark.engines("moto")  # (what the save plans, never the engine's)
def test_a_map_member_changed_beside_a_large_value_is_written(
        s3: tuple[TestBackend, Bucket]) -> None:
    tb, b = s3
    s = tb.session()
    s.save(Profile(pid="1", bio=big(), prefs={"theme": "light", "lang": "en"}))
    s.commit()
    p = tb.session().get(Profile, pid="1", consistent=True)
    p.bio, p.prefs = big(c="y"), {"theme": "dark", "lang": "en"}
    s = tb.session()
    s.save(p)
    s.commit()
    got = tb.session().get(Profile, pid="1", consistent=True)
    assert (got.bio, got.prefs) == (big(c="y"), {"theme": "dark", "lang": "en"})
    consistent(tb, b)


@pytest.mark.engines("moto")  # (what the read asks S3, never the engine's)
def test_a_map_of_a_references_shape_in_a_field_not_offloaded_asks_s3_nothing(
        s3: tuple[TestBackend, Bucket]) -> None:
    tb, _ = s3
    look = {MARK: {"uri": "s3://elsewhere-bucket/x", "sha256": "0" * 64, "size": 1, "tag": "S"}}
    s = tb.session()
    s.save(Profile(pid="1", meta=look))
    s.commit()
    seen = Requests(store)
    assert tb.session().get(Profile, pid="1", consistent=True).meta == look
    assert not [op for op in seen.operations if op.startswith("s3:")]


def test_an_update_by_key_reads_the_row_and_releases_its_object(
        s3: tuple[TestBackend, Bucket]) -> None:
    tb, b = s3
    s = tb.session()
    s.save(Doc(doc_id="1", body=big()))
    s.commit()
    seen = Requests(store)
    s.update(Doc, doc_id="1").set(title="x")  # (no offloaded field: not read first)
    s.commit()
    assert "GetItem" not in seen.operations
    s.update(Doc, doc_id="1").set(body=big(c="z"))
    s.commit()
    assert tb.session().get(Doc, doc_id="1", consistent=True).body == big(c="z")
    consistent(tb, b)
    assert len(b.keys()) == 1
    with pytest.raises(DynaormError, match="Offloaded field cannot be in an update's append"):
        s.update(Doc, doc_id="1").append(body="x")


def test_deletes_remove_the_objects(s3: tuple[TestBackend, Bucket]) -> None:
    tb, b = s3
    s = tb.session()
    s.save(Doc(doc_id="1", body=big(), blob=b"b" * 3000))
    s.save(Doc(doc_id="2", body=big()))
    s.commit()
    doc = tb.session().get(Doc, doc_id="1", consistent=True)
    s.delete(doc)
    s.delete(Doc(doc_id="2"))  # (by key: read first)
    s.commit()
    assert b.keys() == set() and rows(tb) == []


def test_a_failed_commit_loses_nothing_and_leaves_nothing(
        s3: tuple[TestBackend, Bucket]) -> None:
    tb, b = s3
    s = tb.session()
    doc = Doc(doc_id="1", body=big())
    s.save(doc)
    s.commit()
    before = b.uris()
    stale = tb.session().get(Doc, doc_id="1", consistent=True)
    doc.title = "other writer"
    s.save(doc)
    s.commit()
    stale.body = big(c="n")
    s.save(stale, condition=F("title") == "nobody")
    with pytest.raises(ConditionFailedError):
        s.commit()
    assert b.uris() == before  # (its upload removed, the stored value kept)
    assert tb.session().get(Doc, doc_id="1", consistent=True).body == big()
    consistent(tb, b)


def test_a_key_move_carries_the_object(s3: tuple[TestBackend, Bucket]) -> None:
    tb, b = s3
    s = tb.session()
    s.save(Moving(mid="a", body=big()))
    s.commit()
    (uri,) = b.uris()
    obj = tb.session().get(Moving, mid="a", consistent=True)
    seen = Requests(store)
    obj.mid = "b"
    s.save(obj)
    s.commit()
    # (nothing uploaded or removed: its object goes with it; the move's read of the row
    # for what it carries reads it whole)
    assert not {"s3:PutObject", "s3:DeleteObjects"} & set(seen.operations)
    assert tb.session().get(Moving, mid="b", consistent=True).body == big()
    assert tb.session().get(Moving, mid="a", consistent=True) is None
    assert b.uris() == {uri}
    consistent(tb, b)


def test_version_rows_keep_their_values_when_the_latest_changes(
        s3: tuple[TestBackend, Bucket]) -> None:
    tb, b = s3
    s = tb.session()
    note = Note(note_id="1", text=big(c="1"))
    s.save(note)
    s.commit()
    note.tag = "same text"  # (version 2 holds the same value: an object of its own)
    s.save(note)
    s.commit()
    note.text = big(c="3")
    s.save(note)
    s.commit()
    note.text = "short"
    s.save(note)
    s.commit()
    r = tb.session()
    assert [v.text[:1] for v in r.history(Note, note_id="1")] == ["1", "1", "3", "s"]
    assert r.get(Note, note_id="1", version=2, consistent=True).text == big(c="1")
    consistent(tb, b)
    own = [ref.uri for row in rows(tb) for ref in references(row).values()]
    assert len(own) == len(set(own)), "each row holds its own objects"
    s.delete(r.get(Note, note_id="1", consistent=True), history=True)
    s.commit()
    assert b.keys() == set() and rows(tb) == []


def test_a_delete_that_keeps_history_keeps_its_values(s3: tuple[TestBackend, Bucket]) -> None:
    tb, b = s3
    s = tb.session()
    note = Note(note_id="1", text=big())
    s.save(note)
    s.commit()
    s.delete(note)
    s.commit()
    assert tb.session().get(Note, note_id="1", version=1, consistent=True).text == big()
    consistent(tb, b)


def test_compressed_then_sealed_then_offloaded(s3: tuple[TestBackend, Bucket]) -> None:
    """The order: compressed (48), sealed (50), placed last: the object holds the
    ciphertext (no plaintext in S3), the row its reference."""
    tb, b = s3
    text = "".join(f"{i:05d} secret words " for i in range(400))  # (compresses, still big)
    s = tb.session()
    s.save(Secret(sid="1", text=text))
    s.commit()
    (uri,) = b.uris()
    body = b.body(uri)
    assert b"secret words" not in body and body[0] == 2  # (a sealed value's format)
    (row,) = rows(tb)
    assert set(references(row)) == {"text"}
    assert tb.session().get(Secret, sid="1", consistent=True).text == text


@pytest.mark.engines("moto", "local")  # (KMS and S3 a moto server's on any engine)
def test_a_rotation_reaches_the_offloaded_values_and_the_old_key_can_go(
        s3: tuple[TestBackend, Bucket], backend: str | None, request: pytest.FixtureRequest,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """``jobs.reencrypt`` seals the values kept in S3 anew too (rows and version rows,
    KMS through the client): each gets a new object under the new key, the old object
    goes once its row holds the new one; with the first key dropped every value reads
    and ``dynaorm check`` finds nothing (before, they were skipped with ``failed=[]``,
    and dropping the key lost them)."""
    from datetime import timedelta

    from dynaorm.jobs import reencrypt, run_local
    from dynaorm.jobs.checking import check_table
    from dynaorm.schema.rules.encrypted import header_of
    from tests.support.offload import kms_for

    tb, b = s3
    text = "".join(f"{i:05d} secret words " for i in range(400))  # (compresses, still big)
    kms = kms_for(backend, request, monkeypatch)
    first, second = (kms.create_key()["KeyMetadata"]["KeyId"] for _ in range(2))
    mac = kms.create_key(KeySpec="HMAC_256", KeyUsage="GENERATE_VERIFY_MAC")["KeyMetadata"][
        "KeyId"]
    was, store.keyring = store.keyring, KmsKeyring(first, mac_key_id=mac)
    try:
        s = tb.session()
        s.save(Secret(sid="1", text=text))
        s.save(Secret(sid="2", text="short"))  # (in its row)
        journal = Journal(jid="1", entry=big(c="1"))
        s.save(journal)
        s.commit()
        journal.entry = big(c="2")
        s.save(journal)
        s.commit()
        assert len(b.keys()) == 4  # (a secret, the latest copy, two version rows)
        store.keyring = KmsKeyring(second, previous=[first], mac_key_id=mac)
        for entity, resealed in ((Secret, 2), (Journal, 3)):
            report = run_local(reencrypt(entity), workers=1)
            assert report.failed == [] and report.resealed == resealed
        assert {header_of({"B": b.body(u)})[0] for u in b.uris()} == {second}
        consistent(tb, b)  # (the old objects removed)
        store.keyring = KmsKeyring(second, mac_key_id=mac)  # (the first key dropped)
        r = tb.session()
        assert r.get(Secret, sid="1", consistent=True).text == text
        assert r.get(Secret, sid="2", consistent=True).text == "short"
        assert [v.entry[:1] for v in r.history(Journal, jid="1")] == ["1", "2"]
        assert check_table(store, orphan_age=timedelta(0)).problems == []
    finally:
        store.keyring = was


@pytest.mark.sync_only  # (a writer of the sync client inside the job's request)
def test_a_rotation_beside_a_writer_of_the_offloaded_value_leaves_nothing(
        s3: tuple[TestBackend, Bucket]) -> None:
    """A writer replaces the value after the re-encryption uploaded its new object and
    before its write: the write fails its condition, the object it uploaded is removed,
    and the row, read again, holds the writer's value under the current key (counted
    current). Nothing is left in S3 that no row references."""
    from dynaorm import Hook
    from dynaorm.jobs import reencrypt, run_local

    tb, b = s3
    old, new = ("".join(f"{i:05d} {w} " for i in range(900)) for w in ("old", "new"))
    s = tb.session()
    s.save(Secret(sid="1", text=old))
    s.commit()
    written: list[str] = []

    class Writer(Hook):  # (another writer, in the job's window)
        def on_start(self, phase: Any) -> object:
            if phase.operation == "UpdateItem" and not written:
                written.append("text")
                r = tb.session()
                got = r.get(Secret, sid="1", consistent=True)
                got.text = new
                r.save(got)
                r.commit()
            return None

    was, store.keyring = store.keyring, StaticKeyring(b"n" * 32, previous=[KEY],
                                                      mac_key=b"m" * 32)
    try:
        store.db.add_hook(Writer())
        report = run_local(reencrypt(Secret), workers=1)
        assert written and (report.failed, report.resealed, report.current) == ([], 0, 1)
        store.keyring = StaticKeyring(b"n" * 32, mac_key=b"m" * 32)  # (the old key dropped)
        assert tb.session().get(Secret, sid="1", consistent=True).text == new
        consistent(tb, b)
    finally:
        store.keyring = was


def test_a_failed_upload_sends_nothing_and_leaves_nothing(
        s3: tuple[TestBackend, Bucket]) -> None:
    tb, b = s3
    store.max_wait = 0
    with inject_faults(store) as faults:
        faults.throttle("s3:PutObject", times=1)  # (retried: the commit goes through)
        s = tb.session()
        s.save(Doc(doc_id="1", body=big(), blob=b"b" * 3000))
        s.commit()
    assert len(b.keys()) == 2
    with inject_faults(store) as faults:
        faults.throttle("s3:PutObject", times=None)  # (to the end of its attempts)
        s = tb.session()
        s.save(Doc(doc_id="2", body=big(c="2"), blob=b"c" * 3000))
        with pytest.raises(OffloadError, match="uploading"):
            s.commit()
    assert tb.session().get(Doc, doc_id="2", consistent=True) is None
    consistent(tb, b)


def test_s3_requests_are_requests_of_the_client(s3: tuple[TestBackend, Bucket]) -> None:
    tb, _ = s3
    services: list[tuple[str, str, tuple[str, ...]]] = []

    class Seen(Requests):
        def on_start(self, phase: Any) -> object:
            services.append((getattr(phase, "service", "?"), phase.operation,
                             tuple(getattr(phase, "tables", ()))))
            return super().on_start(phase)

    Seen(store)
    _doc_kept_in_s3(tb)
    tb.session().get(Doc, doc_id="1", consistent=True)
    s3_ops = [(svc, op, t) for svc, op, t in services if op.startswith("s3:")]
    assert {op for _, op, _ in s3_ops} == {"s3:PutObject", "s3:GetObject"}
    assert all(svc == "s3" and store.name in t for svc, _, t in s3_ops)


# -- what it refuses -------------------------------------------------------------------------
def test_offloaded_fields_need_a_table_that_offloads() -> None:
    plain = Table("offload_plain")
    with pytest.raises(DynaormError, match="need a table that declares where values go"):
        class NoWhere(Entity):
            class Meta:
                table = plain
                pk = "N#{k}"
                sk = "N"

            k: str
            v: Offloaded[str]


@pytest.mark.parametrize("where", ["key", "unique"])
def test_offloaded_fields_are_refused_where_compared(where: str) -> None:
    table = Table("offload_refused", offload="s3://bucket/p")
    with pytest.raises(DynaormError, match="cannot be in a key"):
        class Refused(Entity):
            class Meta:
                pk = "N#{v}" if where == "key" else "N#{k}"
                sk = "N"
                unique = [Unique("v")] if where == "unique" else []

            Meta.table = table  # (a class body does not see the function's names)
            k: str
            v: Offloaded[str]


def test_offloaded_fields_are_refused_in_conditions_and_bulk_calls(
        s3: tuple[TestBackend, Bucket]) -> None:
    tb, _ = s3
    s = tb.session()
    with pytest.raises(DynaormError, match="Offloaded field cannot be in a condition"):
        s.scan(Doc).filter(F("body") == "x").all()
    with pytest.raises(DynaormError, match="save_many cannot keep them"):
        s.save_many([Doc(doc_id="1")])


@pytest.mark.parametrize("uri", ["s3:/x", "http://b/p", "s3://B/p", "s3://a"])
def test_offload_takes_an_s3_uri(uri: str) -> None:
    with pytest.raises(DynaormError, match="offload takes 's3://BUCKET/PREFIX'"):
        Table("offload_bad", offload=uri)


def test_without_offload_a_value_over_the_item_limit_is_refused_before_sending(
        tb: TestBackend) -> None:
    from tests.support.models import Note as Plain

    seen = Requests(Plain.__dynaorm_spec__.table)
    s = tb.session()
    fields = Plain.model_fields
    text = next(n for n, i in fields.items() if i.annotation is str and not i.is_required())
    s.save(Plain.model_validate({**{n: "1" for n, i in fields.items() if i.is_required()},
                                 text: "x" * 500_000}))
    with pytest.raises(ItemTooLargeError):
        s.commit()
    assert not seen.calls
    assert engine_of  # (the suite's table, any engine)


def test_an_async_session_uploads_fetches_and_removes(s3: tuple[TestBackend, Bucket],
                                                      request: pytest.FixtureRequest) -> None:
    """The same rule through an AsyncSession: its S3 requests are awaited (botocore's S3
    client in a worker thread, off the loop); a page's objects gathered as tasks."""
    import asyncio

    if engine_of(request) == "moto":
        pytest.skip("in-process moto does not answer an AsyncSession")
    from dynaorm import AsyncSession

    tb, b = s3

    async def main() -> list[str]:
        s = AsyncSession(store)
        for i in range(3):
            s.save(Doc(doc_id=str(i), body=big(c=str(i))))
        await s.commit()
        doc = await s.get(Doc, doc_id="1", consistent=True)
        assert doc is not None and doc.body == big(c="1")
        doc.body = big(c="n")
        s.save(doc)
        await s.commit()
        s.delete(Doc(doc_id="2"))
        await s.commit()
        return sorted(d.body[0] for d in await s.scan(Doc).all())

    assert asyncio.run(main()) == ["0", "n"]
    consistent(tb, b)
    assert len(b.keys()) == 2


def test_an_async_sessions_refusal_names_the_stored_entity_with_its_value_in_s3(
        s3: tuple[TestBackend, Bucket], request: pytest.FixtureRequest) -> None:
    """An AsyncSession's insert refused by the stored row (ItemExistsError): its ``item``
    is the stored entity, its value kept in S3 fetched as the sync session fetches it."""
    import asyncio

    if engine_of(request) == "moto":
        pytest.skip("in-process moto does not answer an AsyncSession")
    from dynaorm import AsyncSession

    async def main() -> Any:
        s = AsyncSession(store)
        s.save(Doc(doc_id="1", body=big(c="s")))
        await s.commit()
        s.save(Doc(doc_id="1", body="other"))
        with pytest.raises(ItemExistsError) as refused:
            await s.commit()
        return refused.value.item

    item = asyncio.run(main())
    assert item is not None and item.body == big(c="s")


# -- hostile objects: any shape reads as OffloadError, bounded -----------------------------
def _replaced(tb: TestBackend, b: Bucket, attr: str, body: bytes, size: int | None = None
              ) -> str:
    """The object the one row's ``attr`` references replaced by ``body``, and the row's
    reference made to name it (its SHA-256, its ``size``): what a writer with the bucket
    and the table can do. Returns the object's URI."""
    (row,) = rows(tb)
    ref = references(row)[attr]
    b.put(ref.key, body)
    inner = row[attr]["M"][MARK]["M"]
    inner["sha256"] = {"S": hashlib.sha256(body).hexdigest()}
    inner["size"] = {"N": str(len(body) if size is None else size)}
    send(store, "PutItem", {"TableName": store.name, "Item": row})
    return ref.uri


@pytest.mark.engines("moto")
def test_an_object_nested_too_deep_reads_as_offload_error(s3: tuple[TestBackend, Bucket]
                                                          ) -> None:
    tb, b = s3
    s = tb.session()
    s.save(Doc(doc_id="1", data={"k": big(2000)}))
    s.commit()
    uri = _replaced(tb, b, "data", b'{"M":{"a":' * 5000 + b'{"S":"x"}' + b"}}" * 5000)
    with pytest.raises(OffloadError, match=r"Doc\.data: .*s3://") as caught:
        tb.session().get(Doc, doc_id="1", consistent=True)
    assert caught.value.uri == uri


@pytest.mark.engines("moto")
def test_a_reference_to_an_object_larger_than_s3_puts_is_not_read(
        s3: tuple[TestBackend, Bucket]) -> None:
    """No object dynaorm wrote is larger than one PutObject takes (5 GiB): a reference
    naming a larger size is refused before its object is asked for."""
    tb, b = s3
    _doc_kept_in_s3(tb)
    uri = _replaced(tb, b, "body", big().encode(), size=6 << 30)
    seen = Requests(store)
    with pytest.raises(OffloadError, match="larger") as caught:
        tb.session().get(Doc, doc_id="1", consistent=True)
    assert caught.value.uri == uri and "s3:GetObject" not in seen.operations


@pytest.mark.engines("moto")
def test_a_decompression_bomb_behind_an_offloaded_value_is_bounded(
        s3: tuple[TestBackend, Bucket]) -> None:
    import zlib

    from dynaorm.schema.rules.compressed import MAX_INFLATED

    tb, b = s3
    s = tb.session()
    s.save(Packed(pid="1", blob=os.urandom(3000)))  # (incompressible: offloaded)
    s.commit()
    # (a value Compressed could have written, but of MAX_INFLATED bytes and more)
    uri = _replaced(tb, b, "blob", zlib.compress(b'{"B":"' + b"A" * MAX_INFLATED + b'"}', 9))
    with pytest.raises(OffloadError, match=r"Packed\.blob: .*more than") as caught:
        tb.session().get(Packed, pid="1", consistent=True)
    assert caught.value.uri == uri  # (contract 25: a hostile object of any shape)


# -- dynaorm check -------------------------------------------------------------------------
def test_check_reports_orphans_and_dangling_references_and_repair_removes_orphans(
        s3: tuple[TestBackend, Bucket]) -> None:
    from datetime import timedelta

    from dynaorm.jobs.checking import check_table

    tb, b = s3
    s = tb.session()
    s.save(Doc(doc_id="1", body=big()))
    s.save(Doc(doc_id="2", body=big(c="2")))
    s.commit()
    healthy = check_table(store, orphan_age=timedelta(0))
    assert healthy.problems == [] and healthy.objects == 2
    prefix = next(iter(b.keys())).rpartition("/")[0]
    b.put(f"{prefix}/left-behind", b"an object no row references")
    (gone,) = references(next(r for r in rows(tb) if r["doc_id"] == {"S": "2"})).values()
    b.remove(gone.uri)
    young = check_table(store)  # (an hour's grace: the new object may be a commit's)
    assert [p.split()[0] for p in young.problems] == ["dangling-ref"]
    found = check_table(store, orphan_age=timedelta(0))
    assert sorted(p.split()[0] for p in found.problems) == ["dangling-ref", "orphan-object"]
    assert any(gone.uri in p and "body" in p for p in found.problems)
    assert found.unrepairable == 1
    fixed = check_table(store, fix=True, orphan_age=timedelta(0))
    assert fixed.repaired == 1 and f"s3://{b.name}/{prefix}/left-behind" not in b.uris()
    assert [p.split()[0] for p in check_table(store, orphan_age=timedelta(0)).problems] == [
        "dangling-ref"]
    assert tb.session().get(Doc, doc_id="1", consistent=True).body == big()


nested = Table("offload_nested", offload="s3://placeholder/v/", offload_threshold=LIMIT)


class Leaf(Entity):
    class Meta:
        table = nested
        pk = "LEAF#{lid}"
        sk = "LEAF"

    lid: str
    body: Offloaded[str] = ""


@pytest.mark.engines("moto")
def test_repair_leaves_the_objects_of_a_table_whose_prefix_lies_under_its_own(
        s3: tuple[TestBackend, Bucket], backend: str | None) -> None:
    """A table offloading under ``s3://B/v/<store's name>/`` writes where ``store``'s own
    objects are: ``check`` of ``store`` neither reports nor removes them."""
    from datetime import timedelta

    from dynaorm.jobs.checking import check_table

    tb, b = s3
    s = tb.session()
    s.save(Doc(doc_id="1", body=big()))
    s.commit()
    with use_tables(nested, endpoint_url=backend, name_suffix=worker_suffix()) as nb:
        was = nested.offload
        nested.offload = f"s3://{b.name}/v/{store.name}/"
        try:
            n = nb.session()
            n.save(Leaf(lid="1", body=big(c="n")))
            n.commit()
            theirs = referenced(nb.scan_raw())
            assert theirs and all(u.startswith(f"s3://{b.name}/v/{store.name}/")
                                  for u in theirs)
            found = check_table(store, orphan_age=timedelta(0))
            assert found.problems == []
            fixed = check_table(store, fix=True, orphan_age=timedelta(0))
            assert fixed.repaired == 0 and theirs <= b.uris()
            # a row of store naming the other table's object (written outside dynaorm):
            # replacing its value removes nothing of the other table's
            (leaf,) = nb.scan_raw()
            send(store, "PutItem", {"TableName": store.name, "Item": {
                "pk": {"S": "DOC#2"}, "sk": {"S": "DOC"}, "_type": {"S": "Doc"},
                "doc_id": {"S": "2"}, "body": leaf["body"]}})
            w = tb.session()
            doc = w.get(Doc, doc_id="2", consistent=True)
            assert doc is not None and doc.body == big(c="n")
            doc.body = "short"
            w.save(doc)
            w.commit()
            assert theirs <= b.uris()
            got = nb.session().get(Leaf, lid="1", consistent=True)
            assert got is not None and got.body == big(c="n")
        finally:
            nested.offload = was


def test_a_retried_commit_uploads_nothing_twice(s3: tuple[TestBackend, Bucket],
                                                request: pytest.FixtureRequest) -> None:
    """A transaction whose answer is lost is resent with its token: its objects were
    uploaded once, for the plan, not for each attempt; none is left behind."""
    if engine_of(request) == "moto":
        pytest.skip("moto does not apply a ClientRequestToken at most once")
    tb, b = s3
    store.max_wait = 0
    seen = Requests(store)
    with inject_faults(store) as faults:
        faults.lose_answer("TransactWriteItems")
        s = tb.session()
        s.save(Note(note_id="1", text=big()))  # (a versioned entity: a transaction)
        s.commit()
    assert seen.operations.count("TransactWriteItems") == 2
    assert seen.operations.count("s3:PutObject") == 2  # (its latest copy's, its version's)
    consistent(tb, b)
    assert tb.session().get(Note, note_id="1", consistent=True).text == big()


def test_dynaorm_check_repairs_orphans(s3: tuple[TestBackend, Bucket],
                                       capsys: pytest.CaptureFixture[str]) -> None:
    from dynaorm.cli.main import main

    tb, b = s3
    _doc_kept_in_s3(tb)
    prefix = next(iter(b.keys())).rpartition("/")[0]
    b.put(f"{prefix}/stray", b"no row references it")
    assert main(["check", f"{__name__}:store", "--orphan-age", "0"]) == 1
    assert "orphan-object" in capsys.readouterr().out
    assert main(["check", f"{__name__}:store", "--orphan-age", "0", "--repair"]) == 0
    capsys.readouterr()
    consistent(tb, b)


# -- adversaries of the S3 writes: lost answers, a second writer in the window -----------
@pytest.mark.engines("moto")
@pytest.mark.parametrize("kind", ["lose", "500"])  # (applied; not applied)
def test_an_upload_whose_answer_is_lost_beside_a_second_writer(
        s3: tuple[TestBackend, Bucket], kind: str) -> None:
    """The commit's PutObject is applied and its answer lost (or a 500); inside that
    window a second writer replaces the value (its own upload, write and removal). The
    upload is resent to its own key (one object), the first's write then finds the row
    is not the one it read and fails: its object is removed, the second's value stays. No
    orphan, no dangling reference, and the failure is said, never a success."""
    from tests.support.fault_kinds import arm

    tb, b = s3
    _doc_kept_in_s3(tb)
    mine = tb.session().get(Doc, doc_id="1", consistent=True)

    def second() -> None:
        w = tb.session()
        other = w.get(Doc, doc_id="1", consistent=True)
        other.body = big(c="s")
        w.save(other)
        w.commit()

    seen = Requests(store)
    with inject_faults(store) as faults:
        arm(faults, ["s3:PutObject"], kind, after=second)
        mine.body = big(c="m")
        s = tb.session()
        s.save(mine)
        with pytest.raises(ConcurrentModificationError):
            s.commit()
    assert seen.operations.count("s3:PutObject") == 3  # (ours twice, to one key; theirs)
    assert tb.session().get(Doc, doc_id="1", consistent=True).body == big(c="s")
    consistent(tb, b)
    assert len(b.keys()) == 1


@pytest.mark.engines("moto")
@pytest.mark.parametrize("kind", ["lose", "500"])  # (applied; not applied)
@pytest.mark.parametrize("move", ["change", "delete", "insert"])
def test_a_removal_whose_answer_is_lost_beside_a_second_writer(
        s3: tuple[TestBackend, Bucket], kind: str, move: str) -> None:
    """The commit applied; the removal of the object it replaced (DeleteObjects) is
    applied and its answer lost (or a 500); inside that window a second writer changes
    the row again, deletes it, or (after a delete) saves a new entity at the same key.
    The resent removal takes exactly the objects the first commit replaced, never the
    second writer's: the bucket holds what the rows reference, every row reads."""
    from tests.support.fault_kinds import arm

    tb, b = s3
    _doc_kept_in_s3(tb)
    mine = tb.session().get(Doc, doc_id="1", consistent=True)

    def second() -> None:
        w = tb.session()
        if move == "insert":
            w.save(Doc(doc_id="1", body=big(c="i")))
        else:
            other = w.get(Doc, doc_id="1", consistent=True)
            if move == "delete":
                w.delete(other)
            else:
                other.body = big(c="s")
                w.save(other)
        w.commit()

    with inject_faults(store) as faults:
        arm(faults, ["s3:DeleteObjects"], kind, after=second)
        s = tb.session()
        if move == "insert":
            s.delete(mine)
        else:
            mine.body = big(c="m")
            s.save(mine)
        s.commit()
    got = tb.session().get(Doc, doc_id="1", consistent=True)
    want = {"insert": big(c="i"), "change": big(c="s"), "delete": None}[move]
    assert (got.body if got is not None else None) == want
    consistent(tb, b)
    assert len(b.keys()) == (0 if move == "delete" else 1)


@pytest.mark.engines("moto")
@pytest.mark.sync_only  # (a writer of the sync client inside the job's request)
@pytest.mark.parametrize("writer", [False, True])
def test_a_rotation_whose_answer_is_lost_removes_the_object_it_replaced(
        s3: tuple[TestBackend, Bucket], writer: bool) -> None:
    """The job's UpdateItem applies and its answer is lost (with, or without, a second
    writer replacing the value inside that window). The fresh read proves the job's
    write applied: the object it replaced, sealed under the key the rotation lets go,
    must not stay in S3 (nor the copy of a tenant's value a forget would not reach)."""
    from dynaorm.jobs import reencrypt, run_local
    from tests.support.fault_kinds import arm

    tb, b = s3
    old = "".join(f"{i:05d} old " for i in range(900))
    s = tb.session()
    s.save(Secret(sid="1", text=old))
    s.commit()

    def second() -> None:
        w = tb.session()
        got = w.get(Secret, sid="1", consistent=True)
        got.text = "".join(f"{i:05d} new " for i in range(900))
        w.save(got)
        w.commit()

    was, store.keyring = store.keyring, StaticKeyring(b"n" * 32, previous=[KEY],
                                                      mac_key=b"m" * 32)
    try:
        with inject_faults(store) as faults:
            arm(faults, ["UpdateItem"], "lose", after=second if writer else None)
            report = run_local(reencrypt(Secret), workers=1)
        assert report.failed == [] and report.resealed + report.current == 1
        consistent(tb, b)  # (the object under the old key removed)
    finally:
        store.keyring = was


def test_a_rotation_names_the_entity_whose_object_is_missing(
        s3: tuple[TestBackend, Bucket]) -> None:
    """A row whose object is gone from S3 is failed by the job, its error naming the
    re-sealed entity's field (the fetch runs for whichever entity of the table reads
    first: never that entity's name)."""
    from dynaorm.jobs import reencrypt, run_local

    tb, b = s3
    s = tb.session()
    s.save(Doc(doc_id="1", body=big()))  # (Doc is the table's first entity)
    s.save(Secret(sid="1", text="".join(f"{i:05d} old " for i in range(900))))
    s.commit()
    (uri,) = references(next(r for r in rows(tb) if r["pk"]["S"] == "SECRET#1")).values()
    b.remove(uri.uri)
    was, store.keyring = store.keyring, StaticKeyring(b"n" * 32, previous=[KEY],
                                                      mac_key=b"m" * 32)
    try:
        (failed,) = run_local(reencrypt(Secret), workers=1).failed
    finally:
        store.keyring = was
    assert f"Secret.text: the offloaded value {uri.uri} is missing" in failed
    assert "Doc" not in failed


# --- offloaded values beside tenant-sealed ones: loads, check, the key table
# (moved from system/test_seams_09.py:
# The seams of release 0.9 (contract 24), attacked pair by pair by someone who wrote none
# of them: the round trip and ``StoredAs`` (a), inference (b), leases (c), the public door's
# ``Session.run`` (d), scoped sessions (e), bulk loads (f), offloaded values and keys per
# tenant (g). Each test states what must never happen where two surfaces meet. Nothing here
# depends on the engine: moto only.)

# -- (f) x (g), (b) x (g): offloaded values, keys per tenant, forget -------------------------
OFFLOAD_BUCKET = "seams09-offload"


kept = Table("seams09_kept", offload=f"s3://{OFFLOAD_BUCKET}/v/", offload_threshold=1024,
             keyring=StaticKeyring(b"k" * 32), key_scope="tenant_id")


class Paper(Entity):
    class Meta:
        table = kept
        pk = "T#{tenant_id}#P#{paper_id}"
        sk = "PAPER"

    tenant_id: str
    paper_id: str
    title: str = ""
    body: Offloaded[str] = ""
    secret: Encrypted[str] | None = None


@pytest.fixture
def papers(aws_moto: None) -> Iterator[tuple[TestBackend, Any]]:
    """``kept`` on moto, its offload bucket and a bucket for loads' staging, in moto's
    S3 (boto3's client of it)."""
    import boto3

    with use_tables(kept) as b:
        s3 = boto3.client("s3")
        for name in (OFFLOAD_BUCKET, "seams09-loads"):
            s3.create_bucket(Bucket=name)
        yield b, s3


def _objects(s3: Any) -> list[str]:
    return [o["Key"] for o in s3.list_objects_v2(Bucket=OFFLOAD_BUCKET).get("Contents", [])]


@pytest.mark.engines('moto')
@pytest.mark.sync_only
def test_a_bulk_load_never_stores_a_reference_to_a_value_it_did_not_upload(
        papers: tuple[TestBackend, Any]) -> None:
    """An entity whose ``Offloaded`` value is above the table's threshold is refused by
    ``jobs.load`` (its save uploads the value before the commit, which a bulk put cannot),
    the whole load with it, nothing written: the load stored rows whose references named
    objects never uploaded, every such value lost (a read failed, ``OffloadError``). A
    load whose values all stay in their rows, sealed under the tenant's key, stores and
    reads back."""
    from dynaorm.jobs import load

    b, s3 = papers
    big = [Paper(tenant_id="acme", paper_id=f"p{n}", body="x" * 5000, secret="s")
           for n in range(2)]
    with pytest.raises(DynaormError, match="outside the table"):
        load(kept, big, s3="s3://seams09-loads/runs", name="big", poll=0)
    assert b.scan_raw() == [] and _objects(s3) == []
    small = [Paper(tenant_id="acme", paper_id="q", body="short", secret="s")]
    assert load(kept, small, s3="s3://seams09-loads/runs", name="small", poll=0).loaded == 1
    with Session(kept) as s:
        got = s.get(Paper, tenant_id="acme", paper_id="q")
        assert got is not None and (got.body, got.secret) == ("short", "s")


@pytest.mark.engines('moto')
@pytest.mark.sync_only
def test_check_names_a_dangling_reference_beside_a_tenant_sealed_value(
        papers: tuple[TestBackend, Any]) -> None:
    """``dynaorm check`` of a table whose entity has an ``Encrypted`` field beside an
    ``Offloaded`` one names a row whose object is gone (``dangling-ref``), as it does
    without the encrypted field: it raised ``OffloadError`` from the rows' preparing, and
    checked nothing. A read of that row still refuses."""
    from dynaorm.jobs.checking import check_table

    _, s3 = papers
    with Session(kept) as s:
        s.save(Paper(tenant_id="acme", paper_id="p1", body="x" * 5000, secret="s"))
        s.save(Paper(tenant_id="acme", paper_id="p2", body="y" * 5000, secret="t"))
    s3.delete_object(Bucket=OFFLOAD_BUCKET, Key=sorted(_objects(s3))[0])
    result = check_table(kept, orphan_age=timedelta(0))
    assert result.scanned == 2
    assert [p.split()[0] for p in result.problems] == ["dangling-ref"], result.problems
    with Session(kept) as s, pytest.raises(OffloadError, match="missing"):
        for paper_id in ("p1", "p2"):  # (a read of it still refuses: its value is gone)
            s.get(Paper, tenant_id="acme", paper_id=paper_id)


@pytest.mark.engines('moto')
@pytest.mark.sync_only
def test_inference_of_a_key_table_prints_no_entity(papers: tuple[TestBackend, Any]) -> None:
    """``dynaorm model --infer`` of a table's key table (``key_scope``: each tenant's
    wrapped key, a forgotten tenant's tombstone) counts its rows as dynaorm's own, as it
    does a receipts table's, and prints no entity that would read or write them."""
    import boto3

    from dynaorm.client.infer import infer_code

    with Session(kept) as s:
        for tenant in ("acme", "globex"):
            s.save(Paper(tenant_id=tenant, paper_id="p", secret="s"))
    kept.forget(scope={"tenant_id": "acme"})
    assert kept.key_table is not None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        code, model = infer_code(kept.key_table, client=boto3.client("dynamodb"), report=None)
    assert model["inferred"]["own"] == 2 and model["inferred"]["placed"] == 0, code
