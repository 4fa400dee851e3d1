"""What a commit given an idempotency key does beside a plain one (contract 22 "Exactly
once across invocations"), asking the commit's receipt rule
(:data:`~dynaorm.schema.rules.COMMIT_RULES`) for the receipt, never naming it:

- its transaction carries a receipt row in every table it writes, each conditioned on no
  live receipt at its key, with the ``ClientRequestToken`` the rule derives from the key
  (a commit that would otherwise be a single-item write goes as a transaction too);
- a failure whose cancellation reasons include a receipt's condition, or an answer lost
  after sending (or a token DynamoDB saw with other parameters), is settled by the stored
  receipts: applied by this commit (the lost answer's write succeeded), replayed (an
  earlier commit of the same writes under the key: :class:`Replayed` carries its result),
  or a mismatch (:class:`~dynaorm.IdempotencyMismatchError`: any receipt of other writes,
  as an earlier commit under the key to more or other tables left). No live receipt after
  a lost answer: nothing was applied (the error is raised as it is, never
  ``OutcomeUnknownError``: committing again with the key applies at most once).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any, Final

from dynaorm._types import Item, PlainKey
from dynaorm.errors import DynaormError, RequestError, TransactionTooLargeError
from dynaorm.protocol.events import RECORDER, CommitResult
from dynaorm.protocol.steps import Call, Proto
from dynaorm.schema.entity import spec_of
from dynaorm.schema.rules import COMMIT_RULES
from dynaorm.schema.table import TableSchema
from dynaorm.write.records import StagedWrite
from dynaorm.write.render import MAX_ACTIONS, MAX_REQUEST_BYTES, WritePlan

__all__ = ["Replayed", "keyed_request", "receipt_of", "settle_p"]
#: the most a receipt adds to a request, but the keys it keeps of the commit's result
RECEIPT_BYTES: Final = 1024
_RECEIPT_REFUSED = ("ConditionalCheckFailed",)
_SETTLE_CODES = frozenset({"IdempotentParameterMismatchException",
                           "TransactionInProgressException"})


class Replayed(Exception):
    """The commit's key was used by an earlier commit of the same writes: nothing was
    applied; ``result`` is that commit's (its rows hold the revision this commit's
    would: both derive it from the key and the digest); ``restored``: the values default
    factories made were put back on the staged objects (they are planned again)."""

    def __init__(self, result: CommitResult, restored: bool = False) -> None:
        super().__init__("replayed")
        self.result = result
        self.restored = restored


def receipt_of(staged: list[StagedWrite], key: str, stage: Any = None) -> Any:
    """The receipt of a commit of ``staged`` with idempotency key ``key`` (``stage``: the
    session's, whose scope its key renders and whose other tables it checks)."""
    tables = list({id(t): t for t in (spec_of(e._entity).table for e in staged)}.values())
    scope = None if stage is None else stage.scope
    return COMMIT_RULES["receipt"].start(staged, key, tables,
                                         None if scope is None else scope.values,
                                         () if stage is None else stage.tables())


def keyed_request(plan: WritePlan, receipt: Any, token: str, rev: str,
                  sent: list[tuple[str, dict[str, Any]]]) -> dict[str, Any]:
    """The transaction of ``plan`` with the receipts last, one per table it writes
    (``sent``: the requests the commit sent before: each receipt keeps each one's
    operation and keys, and the transaction's, as the result a replay returns). Raises
    :class:`~dynaorm.TransactionTooLargeError` before sending when the writes and their
    receipts exceed a transaction's actions or bytes."""
    count = len(receipt.tables) + len(receipt.checked)
    if len(plan.ops) + count > MAX_ACTIONS:
        raise TransactionTooLargeError(
            f"commit needs {len(plan.ops)} actions and its receipts (idempotency_key=, one "
            f"per table it may write) {count} more: {len(plan.ops) + count}; DynamoDB "
            f"allows {MAX_ACTIONS} per transaction")
    request = plan.transaction_request(token, rev)
    actions = receipt.actions(rev, [*((op, [body["Key"]] if "Key" in body else [])
                                      for op, body in sent),
                                    ("TransactWriteItems", [op.key for op in plan.ops])])
    text = receipt.size
    if sum(plan.sizes) + (RECEIPT_BYTES + text) * count > MAX_REQUEST_BYTES:
        raise TransactionTooLargeError(f"commit with its receipts exceeds DynamoDB's "
                                       f"{MAX_REQUEST_BYTES} byte request limit")
    request["TransactItems"].extend(actions)
    return request


def settle_p(receipt: Any, exc: RequestError, at: int,
             read: Callable[[TableSchema, PlainKey], Proto[Item | None]], step: Call,
             resent: bool = False) -> Proto[dict[str, Any] | None]:
    """What the failed send ``step`` of a keyed commit (its receipts the actions from the
    ``at``-th on) means, by its receipts: the response (``{}``: this commit's write was
    applied, its answer lost), or ``None`` (a failure of the writes themselves: mapped as
    usual). Raises :class:`Replayed` or :class:`~dynaorm.IdempotencyMismatchError`, or
    ``exc`` when a lost answer's write was not applied. A token DynamoDB holds for other
    parameters (an earlier attempt of the key that applied nothing) is resent once with a
    fresh one (the receipts' conditions keep it at most once)."""
    reasons = exc.reasons if exc.code == "TransactionCanceledException" else []
    refused = [(table, reasons[at + i].item) for i, table in enumerate(receipt.all)
               if len(reasons) > at + i
               and getattr(reasons[at + i], "code", None) in _RECEIPT_REFUSED]
    if refused:  # (a receipt whose condition passed holds nothing live: engines report
        stored = []  # every failed condition of a cancelled transaction)
        for table, item in refused:
            live = receipt.live(item, table)
            if live is None:  # (refused, not returned: read it)
                live = receipt.live((yield from read(table, receipt.where(table))), table)
            if live is not None:
                stored.append((table, live))
        if not stored:
            raise exc
        return _verdict(receipt, stored)
    if not (exc.maybe_applied or exc.code in _SETTLE_CODES):
        return None
    try:
        stored = yield from _read_all(receipt, read)
    except RequestError as err:
        if exc.maybe_applied:  # (maybe applied, unsettled: mapped as usual, which reads
            return None        # the items back or says the outcome is unknown)
        raise DynaormError(f"{exc}; reading its receipt to settle it failed too ({err.code})"
                           ) from err
    if stored:
        return _verdict(receipt, stored)
    if exc.code != "IdempotentParameterMismatchException" or resent:
        raise exc  # not applied (when read): committing again with the key is safe
    step.request["ClientRequestToken"] = os.urandom(16).hex()
    try:
        response: dict[str, Any] = yield step
        return response
    except RequestError as again:
        return (yield from settle_p(receipt, again, at, read, step, True))


def _read_all(receipt: Any, read: Callable[[TableSchema, PlainKey], Proto[Item | None]]
              ) -> Proto[list[tuple[Any, Item]]]:
    """The live receipts of the key in the commit's tables, read consistently (stopping at
    this commit's own: the writes and all their receipts were one transaction)."""
    stored = []
    for table in receipt.all:
        live = receipt.live((yield from read(table, receipt.where(table))), table)
        if live is not None:
            stored.append((table, live))
            if receipt.own(live):
                break
    return stored


def _verdict(receipt: Any, stored: list[tuple[Any, Item]]) -> dict[str, Any]:
    """``{}`` when one of the live receipts ``stored`` is this commit's own (applied);
    raises :class:`Replayed` (or a mismatch) for an earlier commit's."""
    if receipt.explain(stored).value == "applied":
        return {}
    # (its capacity: what this commit's own requests reported -- the reads it made, when
    # the client asks reads for it; DynamoDB's answer to the cancelled transaction reports
    # none, so what that consumed is not known, and not counted as nothing)
    recorded = RECORDER.get()
    raise Replayed(CommitResult(requests=receipt.result(stored[0][1]), replayed=True,
                                consumed_capacity=dict(recorded.consumed_capacity)
                                if recorded is not None else {}), receipt.restore(stored[0][1]))
