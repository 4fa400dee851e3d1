"""The error tree (contract section 10): exports, hierarchy, every error provoked for real,
messages naming entity and key, pydantic's ValidationError passing through, and definition
errors raised when a class is defined."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pydantic
import pytest

import dynaorm
from dynaorm import (
    GSI,
    LSI,
    ConcurrentModificationError,
    DynaormError,
    Entity,
    InvalidCursorError,
    ItemExistsError,
    ItemNotFoundError,
    ItemTooLargeError,
    KeyTemplateError,
    MultipleResultsError,
    Table,
    TransactionConflictError,
    TransactionTooLargeError,
    Unique,
    UniqueConstraintError,
)
from dynaorm.testing import TestBackend
from tests.support.models import Audit, Note, User, app
from tests.support.recording import RecordingTransport, conflict

DOCUMENTED = {
    "Table", "GSI", "LSI", "Entity", "Unique", "ksuid", "Session", "Query", "Page", "F",
    "Condition", "DynaormError", "KeyTemplateError", "UniqueConstraintError",
    "ItemExistsError", "ItemNotFoundError", "ConcurrentModificationError",
    "TransactionConflictError", "TransactionTooLargeError", "ItemTooLargeError",
    "MultipleResultsError", "InvalidCursorError",
    # 0.2
    "ConditionFailedError", "OutcomeUnknownError", "InvalidValueError", "TableNotFoundError",
    "RequestError", "Change", "Versioned", "Scan", "Shards", "CommitResult", "RequestEvent",
    "StagedUpdate", "AsyncSession",
}
ERRORS = (KeyTemplateError, UniqueConstraintError, ItemExistsError, ItemNotFoundError,
          ConcurrentModificationError, TransactionConflictError, TransactionTooLargeError,
          ItemTooLargeError, MultipleResultsError, InvalidCursorError)


def test_exports_are_the_documented_names() -> None:
    assert set(dynaorm.__all__) == DOCUMENTED
    for name in DOCUMENTED:
        assert getattr(dynaorm, name) is not None


@pytest.mark.parametrize("error", ERRORS, ids=lambda e: e.__name__)
def test_every_error_derives_from_dynaorm_error(error: type[Exception]) -> None:
    assert issubclass(error, DynaormError)
    assert issubclass(DynaormError, Exception)


# -- every error, for real -----------------------------------------------------------------
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
    saved = db.table.transport
    rec = RecordingTransport(db.endpoint_url)
    rec.always["TransactWriteItems"] = conflict(2)
    db.table.transport = rec
    try:
        s = db.session()
        s.save(Note(note_id="c1"))
        s.save(Note(note_id="c2"))
        s.commit()
    finally:
        db.table.transport = saved


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


@pytest.mark.sync_only
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


# -- pydantic's ValidationError passes through -------------------------------------------
def test_invalid_field_values_raise_validation_error() -> None:
    with pytest.raises(pydantic.ValidationError) as err:
        Note(note_id="n1", tags="not a list")
    assert not isinstance(err.value, DynaormError)
    with pytest.raises(pydantic.ValidationError):
        User(username="bob")  # type: ignore[call-arg]
    with pytest.raises(pydantic.ValidationError):
        Audit(equipment_id="E", part="P", version="many")


def test_corrupt_stored_item_raises_validation_error(db: TestBackend) -> None:
    db.table.transport.call("PutItem", {"TableName": db.table.name, "Item": {
        "pk": {"S": "NOTE#bad"}, "sk": {"S": "NOTE"}, "_type": {"S": "Note"},
        "note_id": {"S": "bad"}, "tags": {"N": "5"}}})
    with pytest.raises(pydantic.ValidationError):
        db.session().get(Note, note_id="bad")


# -- definition errors (raised when the class is defined) ---------------------------------
def _define(meta: dict[str, Any], **fields: Any) -> type[Entity]:
    annotations = {"a": str, "b": str, **fields}
    inner = type("Meta", (), {**meta, "__qualname__": "ErrDefined.Meta",
                              "__module__": __name__})
    ns: dict[str, Any] = {"__annotations__": annotations, "__module__": __name__,
                          "__qualname__": "ErrDefined", "Meta": inner}
    return type("ErrDefined", (Entity,), ns)


@pytest.mark.parametrize(("meta", "message"), [
    ({"table": app, "pk": "A#{a}"}, "sk is required"),
    ({"table": app, "pk": "A#{nope}", "sk": "X"}, "nope"),
    ({"table": app, "pk": "A#{a}", "sk": "{b}", "colour": "red"}, "unknown option"),
    ({"table": "app", "pk": "A#{a}", "sk": "X"}, "must be a dynaorm Table"),
    ({"table": app, "pk": "A#{a}", "sk": "X", "indexes": {"gsi9": ("A", "B")}}, "gsi9"),
    ({"table": app, "pk": "A#{a}", "sk": "X", "indexes": {"lsi1": ("B#{b}", "C")}}, "LSI"),
    ({"table": app, "pk": "A#{a}", "sk": "X", "indexes": {"gsi1": ("A",)}}, "gsi1"),
    ({"table": app, "pk": "A#{a}", "sk": "X", "unique": ("zzz",)}, "zzz"),
    ({"table": app, "pk": "A#{a}", "sk": "X", "unique": (Unique("a", scope="S#{q}"),)}, "q"),
    ({"table": app, "pk": "A#{a}", "sk": "X", "shards": {"gsi1": 4},
      "indexes": {"gsi1": ("A#{a}", "B")}}, "shard"),
    ({"table": app, "pk": "A#{a}#{shard}", "sk": "X"}, "shard"),
    ({"table": app, "pk": "A#{a}", "sk": "X#{b}", "shards": {"primary": 0}}, "shards"),
])
def test_definition_errors(meta: dict[str, Any], message: str) -> None:
    with pytest.raises(DynaormError, match=message):
        _define(meta)


def test_field_colliding_with_a_key_attribute() -> None:
    with pytest.raises(DynaormError, match="collide"):
        _define({"table": app, "pk": "A#{a}", "sk": "X"}, gsi1pk=str)


def test_type_name_used_twice() -> None:
    with pytest.raises(DynaormError, match="type name"):
        _define({"table": app, "pk": "A#{a}", "sk": "X", "type_name": "User"})


def test_table_definition_errors() -> None:
    with pytest.raises(DynaormError):
        Table("")
    with pytest.raises(DynaormError, match="twice"):
        Table("tbl", indexes=[GSI("gsi", pk="a"), GSI("gsi", pk="b")])
    with pytest.raises(DynaormError, match="sort key"):
        Table("tbl", sk=None, indexes=[LSI("lsi", sk="x")])
    with pytest.raises(DynaormError, match="projection"):
        Table("tbl", indexes=[GSI("gsi", pk="a", projection="SOME")]).definition()


def test_key_template_error_at_render_names_entity_field_value() -> None:
    with pytest.raises(KeyTemplateError) as err:
        dynaorm.Session(app).save(User(user_id="", username="bob", email="b@x.com"))
    assert "User" in str(err.value) and "'user_id'" in str(err.value)
