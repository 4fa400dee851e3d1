"""Batch requests by key as protocols (pure): ``BatchGetItem`` reads and the rounds every
batch request (``BatchGetItem``, ``BatchWriteItem``) goes through until nothing is left
unprocessed. Reads by key of indexes that lack attributes, ``get_many``, ``save_many`` and
``delete_many`` send through them; either kind of session drives them."""

from collections.abc import Callable, Sequence
from typing import Any

from dynaorm._types import Item, PlainKey, Reader
from dynaorm.errors import DynaormError, TransactionTooLargeError
from dynaorm.protocol.steps import Backoff, Proto, call, gather
from dynaorm.read.selection import BATCH_GET
from dynaorm.schema.entity import _set_state, prepare_rows, preparing
from dynaorm.schema.rules import Fetching
from dynaorm.values.keys import key_id, wire_key
from dynaorm.values.limits import check_read_key

#: Items one TransactGetItems reads, at most.
MAX_SNAPSHOT = 100

#: Rounds of a batch request before unprocessed keys are an error.
MAX_BATCH_ROUNDS = 12


def batch_rounds(operation: str, table: str, pending: dict[str, Any] | None,
                 unprocessed: str,
                 collect: Callable[[dict[str, Any]], object] = lambda out: None, *,
                 idempotent: bool = True, reader: Reader | None = None,
                 origins: tuple[Any, ...] = ()) -> Proto[None]:
    """Send a batch request until nothing is left unprocessed (backoff with jitter between
    rounds, the rounds' waits within the policy's ``max_wait``); ``collect`` sees each
    round's answer (``reader``: see :class:`~dynaorm.protocol.steps.Send`; ``origins``:
    the entity classes it is for, see :func:`~dynaorm.protocol.steps.call`).
    ``idempotent=False``: a round is not resent after an attempt that may have been
    applied (the :class:`~dynaorm.RequestError` is raised instead)."""
    rounds = 0
    waited = 0.0
    while pending:
        rounds += 1
        if rounds > MAX_BATCH_ROUNDS:
            raise DynaormError(f"{operation} on {table!r} still had unprocessed requests "
                               f"after {MAX_BATCH_ROUNDS} rounds")
        if rounds > 1:
            waited += yield Backoff(rounds - 1, waited)
        out = yield from call(operation, {"RequestItems": pending}, origins,
                              idempotent=idempotent, reader=reader)
        collect(out)
        pending = out.get(unprocessed) or None


def batch_get_p(table: str, keys: Sequence[Item], *, consistent: bool = False,
                concurrency: int = 1, reader: Reader | None = None,
                origins: tuple[Any, ...] = ()) -> Proto[dict[Any, Any]]:
    """Items by key (BatchGetItem, 100 keys a request, ``concurrency`` requests in
    flight; unprocessed keys retried with backoff), by their key's identity; with
    ``reader`` (:func:`~dynaorm.schema.entity.answer_reader`), the objects it read from
    an answer's bytes where it could (matched by the stored keys read beside them);
    ``origins``: the entity classes read (their consumed capacity is counted for them)."""
    unique = list({key_id(k): k for k in keys}.values())
    chunks = [unique[i:i + BATCH_GET] for i in range(0, len(unique), BATCH_GET)]

    def one(chunk: list[Item]) -> Proto[list[tuple[Item, Any]]]:
        request: dict[str, Any] = {"Keys": chunk}
        if consistent:
            request["ConsistentRead"] = True
        items: list[tuple[Item, Any]] = []  # (its stored key, the item or its object)

        def collect(out: dict[str, Any]) -> None:
            got = out.get("Responses", {}).get(table, [])
            items.extend(zip(out.get("Keys", {}).get(table, got), got, strict=True))

        yield from batch_rounds("BatchGetItem", table, {table: request}, "UnprocessedKeys",
                                collect, reader=reader, origins=origins)
        return items

    results = yield from gather([one(c) for c in chunks], concurrency)
    key_attrs = list(unique[0]) if unique else []
    return {key_id({a: key[a] for a in key_attrs}): item for got in results
            for key, item in got}


def snapshot_p(spec: Any, wanted: Sequence[PlainKey]) -> Proto[dict[Any, Item]]:
    """The items of ``spec``'s entity at the keys ``wanted``, read at one instant (one
    ``TransactGetItems``), by their key's identity."""
    unique = list({key_id(k): k for k in wanted}.values())
    if len(unique) > MAX_SNAPSHOT:
        raise TransactionTooLargeError(
            f"{spec.name}: get_many(snapshot=True) reads at most {MAX_SNAPSHOT} distinct "
            f"items in one TransactGetItems, got {len(unique)}")
    if not unique:
        return {}
    request = {"TransactItems": [{"Get": {"TableName": spec.table.name,
                                          "Key": wire_key(k)}} for k in unique]}
    out = yield from call("TransactGetItems", request, (spec.cls,))
    responses = zip(unique, out.get("Responses", []), strict=False)
    return {key_id(key): got["Item"] for key, got in responses if got.get("Item") is not None}


def _item(table: Any, key: PlainKey) -> Proto[Item | None]:
    """The item at ``key`` in ``table``, read consistently, prepared for the table's
    entities (whichever it is, it may be decoded; a key DynamoDB would refuse raises
    before anything is sent)."""
    check_read_key(table, key, "item")
    out = yield from call("GetItem", {"TableName": table.name, "Key": wire_key(key),
                                      "ConsistentRead": True})
    item = out.get("Item")
    if item is not None:
        yield from prepare_rows(preparing(table), (item,))
    return item


#: the reads a rule that reads an entity's rows whole is handed (the previous layout's:
#: :meth:`~dynaorm.schema.rules.Before.owner` and the others)
FETCHING = Fetching(batch_get_p, snapshot_p, prepare_rows, _set_state, _item)
