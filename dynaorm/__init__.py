"""dynaorm: declarative entity mapping for Amazon DynamoDB single-table design.

Entities are pydantic models with key templates; a :class:`Session` commits every staged
change, with its unique guard items and version rows, in one atomic transaction.
"""

from typing import TYPE_CHECKING, Any

from .entity import Entity, Versioned
from .errors import (
    ConcurrentModificationError,
    ConditionFailedError,
    DynaormError,
    InvalidCursorError,
    InvalidValueError,
    ItemExistsError,
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
from .events import CommitResult, RequestEvent
from .expressions import Condition, F
from .ksuid import ksuid
from .query import Page, Query
from .scan import Scan
from .session import Session
from .shards import Shards
from .spec import Unique
from .streams import Change
from .table import GSI, LSI, Table
from .updates import StagedUpdate

if TYPE_CHECKING:
    from .aio import AsyncSession

__version__ = "0.2.0.dev0"  # the one place the version is written (pyproject reads it)

__all__ = [
    "GSI",
    "LSI",
    "AsyncSession",
    "Change",
    "CommitResult",
    "ConcurrentModificationError",
    "Condition",
    "ConditionFailedError",
    "DynaormError",
    "Entity",
    "F",
    "InvalidCursorError",
    "InvalidValueError",
    "ItemExistsError",
    "ItemNotFoundError",
    "ItemTooLargeError",
    "KeyTemplateError",
    "MultipleResultsError",
    "OutcomeUnknownError",
    "Page",
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
    "ksuid",
]


def __getattr__(name: str) -> Any:
    """``AsyncSession`` is imported on first use (it needs ``dynaorm[async]`` only then)."""
    if name == "AsyncSession":
        from .aio import AsyncSession

        return AsyncSession
    raise AttributeError(f"module 'dynaorm' has no attribute {name!r}")
