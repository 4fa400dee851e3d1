"""dynaorm: declarative entity mapping for Amazon DynamoDB single-table design.

Entities are pydantic models with key templates; a :class:`Session` commits every staged
change, with its unique guard items and version rows, in one atomic transaction, across
the tables of one :class:`Client`.
"""

from typing import TYPE_CHECKING, Any

from dynaorm._version import __version__ as __version__
from dynaorm.client.client import Client
from dynaorm.client.table import Table
from dynaorm.errors import (
    AnswerLostError,
    BadAnswerError,
    BulkWriteError,
    ConcurrentModificationError,
    ConditionFailedError,
    ConditionTooLargeError,
    ConflictError,
    DecryptionError,
    DynaormError,
    ExpressionTooLargeError,
    ForgottenError,
    IdempotencyMismatchError,
    InvalidCursorError,
    InvalidValueError,
    ItemDecodeError,
    ItemExistsError,
    ItemGoneError,
    ItemNotFoundError,
    ItemTooLargeError,
    KeyringError,
    KeyTemplateError,
    LakeError,
    LeaseError,
    MultipleResultsError,
    OffloadError,
    OutcomeUnknownError,
    RequestError,
    RequestNotSentError,
    ScopeError,
    SettingsError,
    TableNotFoundError,
    ThrottledError,
    TransactionConflictError,
    TransactionTooLargeError,
    UniqueConstraintError,
)
from dynaorm.ksuid import ksuid
from dynaorm.protocol.events import CommitResult, Reason, RequestEvent, ThrottlingReason
from dynaorm.protocol.hooks import Attempt, Hook, Operation
from dynaorm.protocol.policy import Rate
from dynaorm.read.grouped import Grouped
from dynaorm.read.search import Hit, Hits
from dynaorm.read.spec import Page
from dynaorm.schema.entity import Entity, Versioned
from dynaorm.schema.lease import Lease
from dynaorm.schema.lock import Lock
from dynaorm.schema.rules import Rule, register_rule
from dynaorm.schema.rules.shards import Shards
from dynaorm.schema.rules.unique import Unique
from dynaorm.schema.rules.vectors import Vector
from dynaorm.schema.table import GSI, LSI, VectorIndex
from dynaorm.sync.reads import Query, Scan, Search
from dynaorm.sync.session import Session
from dynaorm.values.expressions import Condition, F

if TYPE_CHECKING:  # (imported on first use: see __getattr__)
    from dynaorm.aio.session import AsyncSession
    from dynaorm.client.infer import infer
    from dynaorm.core.explain import Explanation, explain
    from dynaorm.errors import ModelFileError
    from dynaorm.protocol.tracing import Tracing
    from dynaorm.schema.inspection import Inspection, inspect
    from dynaorm.schema.rows import RowKind
    from dynaorm.schema.rules.compressed import Compressed
    from dynaorm.schema.rules.encrypted import Encrypted
    from dynaorm.schema.rules.keyrings import KmsKeyring, StaticKeyring
    from dynaorm.schema.rules.offloaded import Offloaded
    from dynaorm.schema.rules.previous import Previous
    from dynaorm.schema.streams import Change
    from dynaorm.values.formats import StoredAs
    from dynaorm.write.updates import StagedUpdate

__all__ = [
    "GSI",
    "LSI",
    "AnswerLostError",
    "AsyncSession",
    "Attempt",
    "BadAnswerError",
    "BulkWriteError",
    "Change",
    "Client",
    "CommitResult",
    "Compressed",
    "ConcurrentModificationError",
    "Condition",
    "ConditionFailedError",
    "ConditionTooLargeError",
    "ConflictError",
    "DecryptionError",
    "DynaormError",
    "Encrypted",
    "Entity",
    "Explanation",
    "ExpressionTooLargeError",
    "F",
    "ForgottenError",
    "Grouped",
    "Hit",
    "Hits",
    "Hook",
    "IdempotencyMismatchError",
    "Inspection",
    "InvalidCursorError",
    "InvalidValueError",
    "ItemDecodeError",
    "ItemExistsError",
    "ItemGoneError",
    "ItemNotFoundError",
    "ItemTooLargeError",
    "KeyTemplateError",
    "KeyringError",
    "KmsKeyring",
    "LakeError",
    "Lease",
    "LeaseError",
    "Lock",
    "ModelFileError",
    "MultipleResultsError",
    "OffloadError",
    "Offloaded",
    "Operation",
    "OutcomeUnknownError",
    "Page",
    "Previous",
    "Query",
    "Rate",
    "Reason",
    "RequestError",
    "RequestEvent",
    "RequestNotSentError",
    "RowKind",
    "Rule",
    "Scan",
    "ScopeError",
    "Search",
    "Session",
    "SettingsError",
    "Shards",
    "StagedUpdate",
    "StaticKeyring",
    "StoredAs",
    "Table",
    "TableNotFoundError",
    "ThrottledError",
    "ThrottlingReason",
    "Tracing",
    "TransactionConflictError",
    "TransactionTooLargeError",
    "Unique",
    "UniqueConstraintError",
    "Vector",
    "VectorIndex",
    "Versioned",
    "explain",
    "infer",
    "inspect",
    "ksuid",
    "register_rule",
]


#: public names whose modules a program that only defines entities and reads does not need:
#: each is imported on first use (PEP 562), and the first write, stream read, inspection or
#: async session pays for its module (``AsyncSession`` also needs ``dynaorm[async]`` only
#: then; ``Tracing``: OpenTelemetry's tracer, found by entry point, never imported by the
#: core); ``tests/system/test_import.py`` holds ``import dynaorm`` to it
_LAZY = {
    "AsyncSession": "dynaorm.aio.session",
    "Change": "dynaorm.schema.streams",
    "Compressed": "dynaorm.schema.rules.compressed",
    "Encrypted": "dynaorm.schema.rules.encrypted",
    "KmsKeyring": "dynaorm.schema.rules.keyrings",
    "StaticKeyring": "dynaorm.schema.rules.keyrings",
    "Offloaded": "dynaorm.schema.rules.offloaded",
    "Inspection": "dynaorm.schema.inspection",
    "ModelFileError": "dynaorm.errors",
    "Explanation": "dynaorm.core.explain",
    "explain": "dynaorm.core.explain",
    "infer": "dynaorm.client.infer",
    "Previous": "dynaorm.schema.rules.previous",
    "RowKind": "dynaorm.schema.rows",
    "StagedUpdate": "dynaorm.write.updates",
    "StoredAs": "dynaorm.values.formats",
    "Tracing": "dynaorm.protocol.tracing",
    "inspect": "dynaorm.schema.inspection",
}


def __getattr__(name: str) -> Any:
    """A name of :data:`_LAZY`, imported on first use (then kept as a module attribute)."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'dynaorm' has no attribute {name!r}")
    import importlib

    found = getattr(importlib.import_module(module), name)
    globals()[name] = found
    return found


def __dir__() -> list[str]:
    """The module's names, the lazy ones included."""
    return sorted({*globals(), *_LAZY})
