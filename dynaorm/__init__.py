"""dynaorm: declarative entity mapping for Amazon DynamoDB single-table design.

Entities are pydantic models with key templates; a :class:`Session` commits every staged
change, with its unique guard items and version rows, in one atomic transaction.
"""

from typing import TYPE_CHECKING, Any

from dynaorm.errors import (
    BulkWriteError,  # (0.3)
    ConcurrentModificationError,
    ConditionFailedError,
    ConflictError,  # (0.3)
    DynaormError,
    InvalidCursorError,
    InvalidValueError,
    ItemDecodeError,  # (0.3)
    ItemExistsError,
    ItemGoneError,  # (0.3)
    ItemNotFoundError,
    ItemTooLargeError,
    KeyTemplateError,
    MultipleResultsError,
    OutcomeUnknownError,
    RequestError,
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
from dynaorm.model.table import GSI, LSI, Table
from dynaorm.read.query import Query
from dynaorm.read.scan import Scan
from dynaorm.read.terminals import Page
from dynaorm.sync.session import Session
from dynaorm.transport.events import CommitResult, RequestEvent
from dynaorm.write.updates import StagedUpdate

if TYPE_CHECKING:
    from dynaorm.aio.session import AsyncSession

__version__ = "0.2.0.dev0"  # the one place the version is written (pyproject reads it)

__all__ = [
    "GSI",
    "LSI",
    "AsyncSession",
    "BulkWriteError",
    "Change",
    "CommitResult",
    "ConcurrentModificationError",
    "Condition",
    "ConditionFailedError",
    "ConflictError",
    "DynaormError",
    "Entity",
    "F",
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
    "OutcomeUnknownError",
    "Page",
    "Previous",
    "Query",
    "RequestError",
    "RequestEvent",
    "Scan",
    "Session",
    "Shards",
    "StagedUpdate",
    "Table",
    "TableNotFoundError",
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
