"""What both kinds of session share about their client: what a session is made with (a
:class:`~dynaorm.Table` or a :class:`~dynaorm.Client`) and the client it sends through (its
table's, as the table is bound now, or the one it was made with).
:class:`~dynaorm.Session` and ``AsyncSession`` add their driver and their methods."""

from __future__ import annotations

from typing import Any

from dynaorm.client.client import Client, session_target
from dynaorm.core.unit_of_work import UnitOfWork

__all__ = ["ClientSession"]


class ClientSession(UnitOfWork):
    """A unit of work on one client's tables (the base of both kinds of session)."""

    def __init__(self, target: Any) -> None:
        table, client = session_target(target, type(self).__name__)
        super().__init__(table, client if table is None else None)

    @property
    def client(self) -> Client:
        """The :class:`~dynaorm.Client` the session sends through (its table's, as the
        table is bound now, or the one it was made with)."""
        found: Client = self._client
        return found
