"""The error tree (contract section 10) on every engine: every error provoked for real, with
messages naming entity and key, and a corrupt stored item raising pydantic's
ValidationError. The tree itself (exports, hierarchy) is in tests/unit/test_errors.py,
definition errors in tests/unit/test_definitions.py."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pydantic
import pytest

from dynaorm import (
    ConcurrentModificationError,
    ConflictError,
    DynaormError,
    Entity,
    InvalidCursorError,
    ItemDecodeError,
    ItemExistsError,
    ItemNotFoundError,
    ItemTooLargeError,
    KeyTemplateError,
    MultipleResultsError,
    RequestError,
    Table,
    TransactionConflictError,
    TransactionTooLargeError,
    UniqueConstraintError,
)
from dynaorm.testing import TestBackend
from tests.support.models import Audit, Note, User
from tests.support.recording import conflict, recording, send

#: what the engine answers is the subject: run on the reference engine too
pytestmark = pytest.mark.engines("moto", "local")


def _seed(db: TestBackend) -> None:
    with db.session() as s:
        s.save(User(user_id="u1", username="bob", email="bob@x.com"))
        s.save(Note(note_id="n1", body="one"))
        s.save(Audit(equipment_id="E1", part="P1"))


def _unique(db: TestBackend) -> None:
    s = db.session()
    s.save(User(user_id="u2", username="amy", email="BOB@x.com"))
    s.commit()


def _exists(db: TestBackend) -> None:
    s = db.session()
    s.save(Note(note_id="n1", body="again"))
    s.commit()


def _not_found(db: TestBackend) -> None:
    s = db.session()
    note = s.get(Note, note_id="n1", consistent=True)
    assert note is not None
    other = db.session()
    other.delete(s.get(Note, note_id="n1", consistent=True))  # type: ignore[arg-type]
    other.commit()
    note.body = "gone"
    s.save(note)
    s.commit()


def _concurrent(db: TestBackend) -> None:
    a = db.session().get(Audit, equipment_id="E1", part="P1", consistent=True)
    b = db.session().get(Audit, equipment_id="E1", part="P1", consistent=True)
    assert a is not None and b is not None
    b.notes = "b"
    with db.session() as s:
        s.save(b)
    a.notes = "a"
    s = db.session()
    s.save(a)
    s.commit()


def _conflicting(db: TestBackend) -> None:
    rec = recording(db.table)  # every attempt of the commit is cancelled by a conflict
    rec.always["TransactWriteItems"] = conflict(2)
    try:
        s = db.session()
        s.save(Note(note_id="c1"))
        s.save(Note(note_id="c2"))
        s.commit()
    finally:
        db.table.db.remove_hook(rec)


def _too_many(db: TestBackend) -> None:
    s = db.session()
    for i in range(101):
        s.save(Note(note_id=f"m{i}"))
    s.commit()


def _too_large(db: TestBackend) -> None:
    s = db.session()
    s.save(Note(note_id="big", body="x" * 401 * 1024))
    s.commit()


def _bad_key_value(db: TestBackend) -> None:
    s = db.session()
    s.save(Note(note_id="a#b"))
    s.commit()


def _query_one_none(db: TestBackend) -> None:
    db.session().query(Note, note_id="nobody").one()


def _query_one_many(db: TestBackend) -> None:
    with db.session() as s:
        s.save(Audit(equipment_id="E1", part="P2"))
    db.session().query(Audit, equipment_id="E1").one()


def _bad_cursor(db: TestBackend) -> None:
    db.session().history(Audit, equipment_id="E1", part="P1").page("not-a-cursor")


CASES: list[tuple[str, Callable[[TestBackend], None], type[DynaormError], tuple[str, ...]]] = [
    ("unique", _unique, UniqueConstraintError, ("User", "email")),
    ("exists", _exists, ItemExistsError, ("Note", "NOTE#n1")),
    ("not_found", _not_found, ItemNotFoundError, ("Note", "NOTE#n1")),
    ("concurrent", _concurrent, ConcurrentModificationError, ("Audit", "EQUIPMENT#E1")),
    ("conflict", _conflicting, TransactionConflictError, ("dynaorm-tests",)),
    ("too_many", _too_many, TransactionTooLargeError, ("Note", "101")),
    ("too_large", _too_large, ItemTooLargeError, ("Note", "NOTE#big")),
    ("key", _bad_key_value, KeyTemplateError, ("Note", "note_id", "a#b")),
    ("one_none", _query_one_none, ItemNotFoundError, ("Note",)),
    ("one_many", _query_one_many, MultipleResultsError, ("Audit",)),
    ("cursor", _bad_cursor, InvalidCursorError, ()),
]


@pytest.mark.parametrize(("provoke", "error", "names"), [c[1:] for c in CASES],
                         ids=[c[0] for c in CASES])
def test_error_provoked_for_real(db: TestBackend, provoke: Callable[[TestBackend], None],
                                 error: type[DynaormError], names: tuple[str, ...]) -> None:
    _seed(db)
    before = db.scan_raw()
    with pytest.raises(error) as err:
        provoke(db)
    assert isinstance(err.value, DynaormError)
    for name in names:
        assert name in str(err.value)
    if error not in (ItemNotFoundError, ConcurrentModificationError, MultipleResultsError):
        assert db.scan_raw() == before  # those cases wrote their own setup first


def test_unique_error_attributes(db: TestBackend) -> None:
    _seed(db)
    with pytest.raises(UniqueConstraintError) as err:
        _unique(db)
    assert err.value.entity is User
    assert (err.value.field, err.value.value) == ("email", "BOB@x.com")
    assert err.value.violations == [("email", "BOB@x.com")]


def test_corrupt_stored_item_raises_item_decode_error(db: TestBackend) -> None:
    send(db.table, "PutItem", {"TableName": db.table.name, "Item": {
        "pk": {"S": "NOTE#bad"}, "sk": {"S": "NOTE"}, "_type": {"S": "Note"},
        "note_id": {"S": "bad"}, "tags": {"N": "5"}}})
    with pytest.raises(ItemDecodeError, match=r"NOTE#bad.*does not fit Note") as err:
        db.session().get(Note, note_id="bad")  # (0.2: a raw pydantic ValidationError)
    assert (err.value.entity, err.value.key) == (Note, {"pk": "NOTE#bad", "sk": "NOTE"})
    assert isinstance(err.value.__cause__, pydantic.ValidationError)


def test_request_failures_are_dynaorm_errors(db: TestBackend) -> None:
    missing = Table("dynaorm-no-such-table", endpoint_url=db.endpoint_url)

    class EGhost(Entity):
        class Meta:
            table = missing
            pk = "G#{gid}"
            sk = "G"

        gid: str

    from dynaorm import Session

    s = Session(missing)
    with pytest.raises(DynaormError):
        s.query(EGhost, gid="g").all()
    with pytest.raises(DynaormError):
        s.get_many(EGhost, [{"gid": "g"}])
    with pytest.raises(DynaormError):
        s.save_many([EGhost(gid="g")])


def test_a_refused_request_carries_its_request_id(db: TestBackend) -> None:
    """A request DynamoDB refused says which request it was (``request_id``, from the
    answer's ``x-amzn-requestid``), on every wire: what a support case or a trace needs."""
    with pytest.raises(RequestError) as caught:
        send(db.table, "GetItem", {"TableName": db.table.name, "Key": {"nope": {"S": "x"}}})
    assert caught.value.code == "ValidationException"
    assert isinstance(caught.value.request_id, str) and caught.value.request_id


def test_errors_name_entity_and_key(db: TestBackend) -> None:
    s = db.session()
    s.save(User(user_id="u1", username="ann", email="ann@x.com"))
    s.commit()
    s.save(User(user_id="u2", username="ann", email="other@x.com"))
    with pytest.raises(UniqueConstraintError) as err:
        s.commit()
    assert err.value.key == {"pk": "USER#u2", "sk": "PROFILE"}
    assert "USER#u2" in str(err.value)
    with pytest.raises(InvalidCursorError, match="User"):
        s.query(User, index="gsi1", org_id="acme").page("not-a-cursor")


# -- what a handler needs (0.4) ---------------------------------------------------------------
NEVER_STORED: list[tuple[str, Callable[[Any], None], dict[str, Any]]] = [
    ("update plain", lambda s: s.update(Note, note_id="zz").set(body="x"), {"note_id": "zz"}),
    ("update unique", lambda s: s.update(User, user_id="zz").set(full_name="x"),
     {"user_id": "zz"}),
    ("update unique field", lambda s: s.update(User, user_id="zz").set(username="x"),
     {"user_id": "zz"}),
    ("update versioned", lambda s: s.update(Audit, equipment_id="zz", part="p").set(notes="x"),
     {"equipment_id": "zz", "part": "p"}),
    ("delete plain", lambda s: s.delete(Note, note_id="zz"), {"note_id": "zz"}),
    ("delete unique", lambda s: s.delete(User, user_id="zz"), {"user_id": "zz"}),
    ("delete versioned", lambda s: s.delete(Audit, equipment_id="zz", part="p"),
     {"equipment_id": "zz", "part": "p"}),
]


@pytest.mark.parametrize("name", [n for n, _, _ in NEVER_STORED])
def test_an_item_that_never_existed_is_not_found_never_a_conflict(
        db: TestBackend, name: str) -> None:
    _seed(db)
    _, stage, key_values = next(x for x in NEVER_STORED if x[0] == name)
    s = db.session()
    stage(s)
    with pytest.raises(ItemNotFoundError) as caught:
        s.commit()
    assert not isinstance(caught.value, ConflictError), type(caught.value)
    assert caught.value.key_values == key_values
    assert caught.value.entity is not None


def test_errors_carry_key_values_typed_as_fields(db: TestBackend) -> None:
    _seed(db)
    s = db.session()
    s.save(User(user_id="u2", username="bob", email="other@x.com"))
    with pytest.raises(UniqueConstraintError):
        s.commit()
    s = db.session()
    s.save(Note(note_id="n1"))
    with pytest.raises(ItemExistsError) as caught:
        s.commit()
    assert caught.value.key == {"pk": "NOTE#n1", "sk": "NOTE"}
    assert caught.value.key_values == {"note_id": "n1"}
    assert caught.value.item == Note(note_id="n1", body="one")  # what is stored


def test_a_concurrent_modification_carries_the_stored_item(db: TestBackend) -> None:
    _seed(db)
    s = db.session()
    audit = s.get(Audit, equipment_id="E1", part="P1")
    assert audit is not None
    with db.session() as other:
        theirs = other.get(Audit, equipment_id="E1", part="P1")
        assert theirs is not None
        theirs.notes = "theirs"
        other.save(theirs)
    audit.notes = "mine"
    s.save(audit)
    with pytest.raises(ConcurrentModificationError) as caught:
        s.commit()
    stored = caught.value.item
    assert stored is not None and (stored.notes, stored.version) == ("theirs", 2)
    assert caught.value.key_values == {"equipment_id": "E1", "part": "P1"}


def test_key_template_error_names_the_field(db: TestBackend) -> None:
    s = db.session()
    with pytest.raises(KeyTemplateError) as caught:
        s.get(Note, note_id="a#b")
    assert caught.value.field == "note_id"
    with pytest.raises(KeyTemplateError) as caught:
        s.get(Note, note_id="")
    assert caught.value.field == "note_id"
