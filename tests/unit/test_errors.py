"""The error tree (contract section 10), with no engine: the exports, the hierarchy,
pydantic's ValidationError passing through, a key template error naming entity, field and
value. Every error provoked on the engines is in tests/integration/test_errors.py."""

from __future__ import annotations

import pydantic
import pytest

import dynaorm
from dynaorm import (
    ConcurrentModificationError,
    DynaormError,
    InvalidCursorError,
    ItemExistsError,
    ItemNotFoundError,
    ItemTooLargeError,
    KeyTemplateError,
    MultipleResultsError,
    TransactionConflictError,
    TransactionTooLargeError,
    UniqueConstraintError,
)
from tests.support.models import Audit, Note, User, app

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
DOCUMENTED |= {"BulkWriteError", "ConflictError", "ItemDecodeError", "ItemGoneError"}  # (0.3)
DOCUMENTED |= {"Previous"}  # (0.3: migrations)
DOCUMENTED |= {"inspect", "Inspection"}  # (0.4: inspection)
DOCUMENTED |= {"Client", "Hook", "Operation", "Attempt"}  # (0.4: one client, many tables)
DOCUMENTED |= {"Grouped"}  # (0.4: reads of several types, grouped by class)
DOCUMENTED |= {"Tracing"}  # (0.4: OpenTelemetry tracing)
DOCUMENTED |= {"RequestNotSentError", "AnswerLostError", "BadAnswerError"}  # (0.4: the wire)
DOCUMENTED |= {"Encrypted", "StaticKeyring", "KmsKeyring", "DecryptionError"}  # (0.5: encryption)
DOCUMENTED |= {"Rate"}  # (0.5: capacity budgets)
DOCUMENTED |= {"KeyringError"}  # (0.6: key material through the client)
DOCUMENTED |= {"Vector", "VectorIndex", "Search", "Hit", "Hits"}  # (0.6: vector search)
DOCUMENTED |= {"ThrottledError", "ThrottlingReason"}  # (0.6: throttling reasons)
DOCUMENTED |= {"explain", "Explanation", "ModelFileError"}  # (0.6: the model as data)
DOCUMENTED |= {"IdempotencyMismatchError"}  # (0.7: exactly once across invocations)
DOCUMENTED |= {"Rule", "register_rule", "Compressed"}  # (0.7: rules of your own, compression)
DOCUMENTED |= {"ScopeError"}  # (0.7: sessions scoped to a tenant)
DOCUMENTED |= {"SettingsError"}  # (0.7: table settings)
DOCUMENTED |= {"LakeError"}  # (0.8: the lake's errors, a DynaormError of its own)
DOCUMENTED |= {"infer"}  # (0.8: the model of a table you already have)
DOCUMENTED |= {"Lease", "LeaseError"}  # (0.9: leases, a commit checking a holder's epoch)
DOCUMENTED |= {"StoredAs"}  # (0.9, issue 82: a time field's stored format)
DOCUMENTED |= {"RowKind"}  # (0.9, issue 80: a table's own row kinds, the public door)
DOCUMENTED |= {"Offloaded", "OffloadError", "ForgottenError"}  # (0.9: values of any size,
# keys per tenant)
DOCUMENTED |= {"Lock", "ConditionTooLargeError", "ExpressionTooLargeError"}  # (0.10: beside
# other writers)
DOCUMENTED |= {"Reason"}  # (0.10: a cancellation reason, for transports of your own)
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


def test_invalid_field_values_raise_validation_error() -> None:
    with pytest.raises(pydantic.ValidationError) as err:
        Note(note_id="n1", tags="not a list")
    assert not isinstance(err.value, DynaormError)
    with pytest.raises(pydantic.ValidationError):
        User(username="bob")  # type: ignore[call-arg]
    with pytest.raises(pydantic.ValidationError):
        Audit(equipment_id="E", part="P", version="many")


def test_key_template_error_at_render_names_entity_field_value() -> None:
    with pytest.raises(KeyTemplateError) as err:
        dynaorm.Session(app).save(User(user_id="", username="bob", email="b@x.com"))
    assert "User" in str(err.value) and "'user_id'" in str(err.value)


def test_one_conflict_family() -> None:
    """Contract 18: every "another writer changed this: reload and retry" error is a
    ConflictError; a caller's own condition and an unknown outcome are not."""
    from dynaorm import ConflictError, ItemGoneError, OutcomeUnknownError
    from dynaorm.errors import ConditionFailedError
    for error in (ConcurrentModificationError, ItemExistsError, ItemGoneError):
        assert issubclass(error, ConflictError)
    assert issubclass(ItemGoneError, ItemNotFoundError)
    assert issubclass(ConflictError, DynaormError)
    for error in (ConditionFailedError, OutcomeUnknownError, ItemNotFoundError):
        assert not issubclass(error, ConflictError)
