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
    ConflictError,
    DynaormError,
    InvalidCursorError,
    InvalidValueError,
    ItemDecodeError,
    ItemExistsError,
    ItemGoneError,
    ItemNotFoundError,
    ItemTooLargeError,
    KeyTemplateError,
    MultipleResultsError,
    OutcomeUnknownError,
    RequestError,
    RequestNotSentError,
    TableNotFoundError,
    TransactionConflictError,
    TransactionTooLargeError,
    UniqueConstraintError,
)
from dynaorm.ksuid import ksuid
from dynaorm.model.entity import Entity, Versioned
from dynaorm.model.expressions import Condition, F
from dynaorm.model.inspection import Inspection, inspect
from dynaorm.model.layouts import Previous
from dynaorm.model.shards import Shards
from dynaorm.model.spec import Unique
from dynaorm.model.streams import Change
from dynaorm.model.table import GSI, LSI
from dynaorm.protocol.events import CommitResult, RequestEvent
from dynaorm.protocol.hooks import Attempt, Hook, Operation
from dynaorm.protocol.tracing import Tracing
from dynaorm.read.grouped import Grouped
from dynaorm.read.spec import Page
from dynaorm.sync.reads import Query, Scan
from dynaorm.sync.session import Session
from dynaorm.write.updates import StagedUpdate

if TYPE_CHECKING:
    from dynaorm.aio.session import AsyncSession



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
    "ConcurrentModificationError",
    "Condition",
    "ConditionFailedError",
    "ConflictError",
    "DynaormError",
    "Entity",
    "F",
    "Grouped",
    "Hook",
    "Inspection",
    "InvalidCursorError",
    "InvalidValueError",
    "ItemDecodeError",
    "ItemExistsError",
    "ItemGoneError",
    "ItemNotFoundError",
    "ItemTooLargeError",
    "KeyTemplateError",
    "MultipleResultsError",
    "Operation",
    "OutcomeUnknownError",
    "Page",
    "Previous",
    "Query",
    "RequestError",
    "RequestEvent",
    "RequestNotSentError",
    "Scan",
    "Session",
    "Shards",
    "StagedUpdate",
    "Table",
    "TableNotFoundError",
    "Tracing",
    "TransactionConflictError",
    "TransactionTooLargeError",
    "Unique",
    "UniqueConstraintError",
    "Versioned",
    "inspect",
    "ksuid",
]


def __getattr__(name: str) -> Any:
    """``AsyncSession`` is imported on first use (it needs ``dynaorm[async]`` only then)."""
    if name == "AsyncSession":
        from dynaorm.aio.session import AsyncSession

        return AsyncSession
    raise AttributeError(f"module 'dynaorm' has no attribute {name!r}")
