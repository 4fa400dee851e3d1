"""The red team of issue 84 (values of any size): what must never happen to offloaded
values when answers are lost and another writer acts inside the window, when S3 is
hostile, and when ``dynaorm check --repair`` races a writer. The fixtures and entities are
tests/integration/test_offload.py's."""

from __future__ import annotations

import contextlib
import hashlib

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dynaorm import DynaormError, OffloadError
from dynaorm.schema.rules.offloaded import MARK, references
from dynaorm.testing import TestBackend, inject_faults
from tests.integration.test_offload import Doc, Moving, Note, big, consistent, rows, s3, store
from tests.support.examples import examples
from tests.support.offload import Bucket
from tests.support.recording import Requests

__all__ = ["s3"]


def _dangling(tb: TestBackend, b: Bucket) -> set[str]:
    """References of the table's rows that name no object."""
    have = b.uris()
    return {ref.uri for row in rows(tb) for ref in references(row).values()} - have


# -- lost answers, a second writer in the window ---------------------------------------------
@pytest.mark.parametrize("how", ["timeout", "500"])
def test_a_key_move_in_the_window_of_a_lost_answer_keeps_its_object(
        s3: tuple[TestBackend, Bucket], how: str) -> None:
    """A's save of a new value applies, its answer is lost; inside the window B moves the
    row to another key, carrying A's object. A's release (outcome unknown) must not
    remove the object the moved row now references (a dangling reference)."""
    tb, b = s3
    s = tb.session()
    s.save(Moving(mid="a", body=big()))
    s.commit()
    mine = tb.session().get(Moving, mid="a", consistent=True)

    def move() -> None:
        other = tb.session()
        obj = other.get(Moving, mid="a", consistent=True)
        assert obj is not None and obj.body == big(c="n")  # (A applied)
        obj.mid = "b"
        other.save(obj)
        other.commit()

    mine.body = big(c="n")
    a = tb.session()
    a.save(mine)
    with inject_faults(store) as faults:
        faults.lose_answer("UpdateItem", after=move, how=how)
        with pytest.raises(DynaormError):
            a.commit()
    assert _dangling(tb, b) == set()
    assert tb.session().get(Moving, mid="b", consistent=True).body == big(c="n")


def test_a_delete_in_the_window_of_an_unapplied_save_and_a_move_keep_objects(
        s3: tuple[TestBackend, Bucket]) -> None:
    """A's delete may have applied (a 500 before the server saw it would prove nothing);
    B moves the row inside the window: what B's row references stays."""
    tb, b = s3
    s = tb.session()
    s.save(Moving(mid="a", body=big()))
    s.commit()
    doomed = tb.session().get(Moving, mid="a", consistent=True)
    a = tb.session()
    a.delete(doomed)

    def move() -> None:
        other = tb.session()
        obj = other.get(Moving, mid="a", consistent=True)
        if obj is None:
            return
        obj.mid = "c"
        other.save(obj)
        other.commit()

    with inject_faults(store) as faults:
        faults.server_error("DeleteItem", after=move)
        with contextlib.suppress(DynaormError):
            a.commit()
    assert _dangling(tb, b) == set()
    consistent(tb, b)


@pytest.mark.parametrize("how", ["timeout", "500"])
def test_a_versioned_save_whose_answer_is_lost_keeps_what_a_second_writer_kept(
        s3: tuple[TestBackend, Bucket], how: str) -> None:
    """A's transaction (a versioned entity) applies, its answer is lost; inside the window
    B saves the entity again keeping A's value (its reference). Whatever A is told, the
    table never references a missing object and reads B's row."""
    tb, b = s3
    s = tb.session()
    s.save(Note(note_id="1", text=big()))
    s.commit()
    mine = tb.session().get(Note, note_id="1", consistent=True)
    store.max_wait = 0

    def second() -> None:
        other = tb.session()
        obj = other.get(Note, note_id="1", consistent=True)
        obj.tag = "b"
        other.save(obj)
        other.commit()

    mine.text = big(c="n")
    a = tb.session()
    a.save(mine)
    with inject_faults(store) as faults:
        faults.lose_answer("TransactWriteItems", after=second, how=how)
        with contextlib.suppress(DynaormError):
            a.commit()
    assert _dangling(tb, b) == set()
    got = tb.session().get(Note, note_id="1", consistent=True)
    assert (got.text, got.tag) == (big(c="n"), "b")
    assert [v.text[:1] for v in tb.session().history(Note, note_id="1")] == ["x", "n", "n"]


# -- references that name objects not the table's own -------------------------------------------
@pytest.mark.engines("moto")
def test_a_delete_never_removes_an_object_outside_its_tables_prefix(
        s3: tuple[TestBackend, Bucket]) -> None:
    """A row whose reference names an object outside the table's prefix (a table restored
    from a backup under another name still references the original's objects; a row
    written by another tool): deleting or replacing it through dynaorm must not remove
    that object (another table's row references it)."""
    tb, b = s3
    body = big(c="f").encode()
    foreign = f"other-table/{hashlib.sha256(body).hexdigest()}"
    b.put(foreign, body)
    ref = {"M": {MARK: {"M": {"uri": {"S": f"s3://{b.name}/{foreign}"},
                              "sha256": {"S": hashlib.sha256(body).hexdigest()},
                              "size": {"N": str(len(body))}, "tag": {"S": "S"}}}}}
    s = tb.session()
    s.save(Doc(doc_id="1"))
    s.commit()
    (row,) = rows(tb)
    store.client.put_item(TableName=store.name, Item={**row, "body": ref})
    doc = tb.session().get(Doc, doc_id="1", consistent=True)
    assert doc.body == big(c="f")
    doc.body = big(c="g")
    s.save(doc)
    s.commit()
    assert foreign in set(b.keys())
    s.delete(tb.session().get(Doc, doc_id="1", consistent=True))
    s.commit()
    assert foreign in set(b.keys())


# -- a hostile S3 ----------------------------------------------------------------------------------
@pytest.mark.engines("moto")
@settings(max_examples=examples(25), deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(how=st.sampled_from(["truncate", "extend", "flip", "empty", "other"]),
       at=st.integers(0, 4999))
def test_an_altered_object_is_a_typed_error_never_other_data(
        s3: tuple[TestBackend, Bucket], how: str, at: int) -> None:
    tb, b = s3
    s = tb.session()
    one, two = f"{how}{at}", f"{how}{at}-other"
    s.save(Doc(doc_id=one, body=big(5000, "1")), overwrite=True)
    s.save(Doc(doc_id=two, body=big(5000, "2")), overwrite=True)
    s.commit()
    uri = next(r.uri for row in rows(tb) if row["doc_id"] == {"S": one}
               for r in references(row).values())
    other = next(r.uri for row in rows(tb) if row["doc_id"] == {"S": two}
                 for r in references(row).values())
    body = b.body(uri)
    altered = {"truncate": body[:at], "extend": body + body[:at + 1],
               "flip": body[:at] + bytes([body[at] ^ 1]) + body[at + 1:], "empty": b"",
               "other": b.body(other)}[how]
    b.put(uri.removeprefix(f"s3://{b.name}/"), altered)
    with pytest.raises(OffloadError):
        tb.session().get(Doc, doc_id=one, consistent=True)


@pytest.mark.engines("moto")
def test_a_huge_object_is_never_read_whole(s3: tuple[TestBackend, Bucket]) -> None:
    """An object replaced by a far larger body (a hostile or broken S3): the read is a
    typed error and never takes more of the body than the reference's size (memory)."""
    tb, b = s3
    s = tb.session()
    s.save(Doc(doc_id="1", body=big(2000)))
    s.commit()
    (uri,) = b.uris()
    b.put(uri.removeprefix(f"s3://{b.name}/"), b"x" * (4 << 20))
    seen = Requests(store)
    with pytest.raises(OffloadError):
        tb.session().get(Doc, doc_id="1", consistent=True)
    got = [len(r.get("Body") or b"") for op, r in seen.responses if op == "s3:GetObject"]
    assert got and max(got) <= 2001


# -- state across calls ------------------------------------------------------------------------
@pytest.mark.engines("moto")
def test_a_pickled_object_holding_an_offloaded_value_saves_without_orphans(
        s3: tuple[TestBackend, Bucket]) -> None:
    """A loaded object pickled (another process, a cache) and saved back: its row reads
    the same value, and the objects it replaced are gone (no orphan, no dangling)."""
    import pickle

    tb, b = s3
    s = tb.session()
    s.save(Doc(doc_id="1", body=big(), blob=b"\x01" * 3000))
    s.commit()
    loaded = tb.session().get(Doc, doc_id="1", consistent=True)
    copy = pickle.loads(pickle.dumps(loaded))
    copy.title = "pickled"
    s.save(copy)
    s.commit()
    consistent(tb, b)
    again = pickle.loads(pickle.dumps(copy))
    again.body = big(c="p")
    s.save(again)
    s.commit()
    consistent(tb, b)
    got = tb.session().get(Doc, doc_id="1", consistent=True)
    assert (got.title, got.body, got.blob) == ("pickled", big(c="p"), b"\x01" * 3000)
    assert len(b.keys()) == 2


# -- versioned entities ------------------------------------------------------------------------
def test_a_versioned_entity_saved_again_after_a_delete_that_kept_history(
        s3: tuple[TestBackend, Bucket]) -> None:
    """Deleted with its history kept, then saved anew under the same key: whatever the
    new save does with the old version rows, no object is left that no row references
    and no row references a missing one; every version row reads."""
    tb, b = s3
    s = tb.session()
    note = Note(note_id="1", text=big(c="1"))
    s.save(note)
    s.commit()
    note.text = big(c="2")
    s.save(note)
    s.commit()
    s.delete(note)
    s.commit()
    with contextlib.suppress(DynaormError):
        s.save(Note(note_id="1", text=big(c="3")))
        s.commit()
    consistent(tb, b)
    for v in tb.session().history(Note, note_id="1"):
        assert v.text[:1] in "123"
