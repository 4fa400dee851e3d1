"""Every private attribute of a dependency that the testing plugin (:mod:`dynaorm.testing`)
relies on, in one place (the core's are :mod:`dynaorm.private_apis`): moto's nesting
counter, DynamoDB routing and item-size check, and OpenTelemetry's key that suppresses
instrumentations for the test backend's own requests. Each function names the library,
the attribute and why no public way serves. Dependencies are imported when a function is
called."""

import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

__all__ = ["moto_attribute_values_direct", "moto_botocore_only", "moto_dynamodb_route",
           "moto_nested", "moto_sizes_unchecked", "moto_transaction_backups", "unobserved"]


def moto_nested() -> bool:
    """Whether a caller's own ``mock_aws`` block is open (moto keeps its settings then).

    moto: ``MockAWS._nested_count``; nested mocks have no public counter."""
    from moto.core.models import MockAWS

    return bool(getattr(MockAWS, "_nested_count", 0))


@contextmanager
def moto_botocore_only() -> Iterator[None]:
    """For the block, a ``mock_aws`` started routes none of moto's services for the
    ``requests`` library, which dynaorm never sends with (building those routes, some
    1,300, was nine tenths of a start); its catch-all for AWS's domains stays, so a
    ``requests`` call to AWS is refused, never passed through. botocore's clients are
    answered as before: the routing table is swapped for the start alone.

    moto: ``moto.backend_index.backend_url_patterns``, which a start routes for
    ``requests`` (and botocore's stubber reads per request); moto has no setting."""
    import moto.backend_index as index

    saved, index.backend_url_patterns = index.backend_url_patterns, []
    try:
        yield
    finally:
        index.backend_url_patterns = saved


def moto_dynamodb_route(dispatch: Any, url_bases: tuple[str, ...]) -> None:
    """Route every request moto answers as DynamoDB to ``dispatch`` (a handler class's
    ``dispatch``), and the endpoints ``url_bases`` (regular expressions) to it too.

    moto: ``moto.dynamodb.urls.url_bases`` and ``url_paths`` (which the backend's
    ``urls`` and a moto server's app read when made) and
    ``moto.backend_index.backend_url_patterns`` (the in-process mock's routing table);
    moto has no public way to answer an operation it lacks (``SearchVectors``) or an
    endpoint of a service it does not know (DynamoDB's vector-search endpoints)."""
    import re

    import moto.backend_index as index
    import moto.dynamodb.urls as urls

    for base in url_bases:
        if base not in urls.url_bases:
            urls.url_bases.append(base)
            index.backend_url_patterns.append(("dynamodb", re.compile(base)))
    urls.url_paths["{0}/"] = dispatch


_SIZES = threading.local()  # .off: moto's own item size check is off on this thread


@contextmanager
def moto_sizes_unchecked() -> Iterator[None]:
    """For the block, on this thread, moto stores items whatever their size: dynaorm's
    emulator checks DynamoDB's 400 KB (as DynamoDB counts it) in front of moto, whose own
    check refuses items from 405,000 bytes as it counts them (a binary value counted as
    its base64 text), below DynamoDB's 409,600.

    moto: ``moto.dynamodb.models.dynamo_type.LimitedSizeDict.__setitem__``, the check
    every item's attributes go through; moto has no setting for the limit."""
    from moto.dynamodb.models.dynamo_type import LimitedSizeDict as Limited

    checked = Limited.__setitem__
    if checked.__name__ != "<lambda>":  # (not replaced yet)
        Limited.__setitem__ = lambda self, key, value: (  # type: ignore[method-assign]
            dict.__setitem__ if getattr(_SIZES, "off", False) else checked)(self, key, value)
    before, _SIZES.off = getattr(_SIZES, "off", False), True
    try:
        yield
    finally:
        _SIZES.off = before


def moto_transaction_backups() -> None:
    """From now on, moto's ``TransactWriteItems`` backs up the items it names, not their
    tables: moto deep-copies every table a transaction names, once for every item (to
    restore it if the transaction fails), so a commit's cost grew with the table (a 5-row
    commit on a 2,000-row table: 656 ms of CPU). A failed transaction puts back each named
    item as it was (absent ones removed, an emptied partition as it was) and each table's
    stream records, all a transaction can change in moto: the same table as the copy's.

    moto: ``moto.dynamodb.models.copy`` (the module ``transact_write_items`` copies
    with), ``Table.items`` (``{hash: item}`` or ``{hash: {range: item}}``) and
    ``Table.stream_shard.items``; moto has no setting for it."""
    import copy
    import types

    from moto.dynamodb import models
    from moto.dynamodb.models.dynamo_type import DynamoType
    from moto.dynamodb.models.table import Table

    transact = models.DynamoDBBackend.transact_write_items
    if transact.__name__ == "backed_up":  # (already)
        return

    def saved(tables: dict[str, Any], entry: Any) -> tuple[Any, ...] | None:
        """``(table, hash, range, partition held, item held, a copy of the item)``."""
        try:
            ((_, op),) = entry.items()
            table = tables[op["TableName"]]
            key = op["Item"] if "Item" in op else op["Key"]
            hash_ = DynamoType(key[table.hash_key_attr])
            range_ = (DynamoType(key[table.range_key_attr])
                      if table.range_key_attr is not None else None)
        except Exception:  # (moto refuses it, writing nothing for it)
            return None
        part = table.items.get(hash_)
        item = part if range_ is None else (part or {}).get(range_)
        return table, hash_, range_, part is not None, item is not None, copy.deepcopy(item)

    def restore(table: Any, hash_: Any, range_: Any, had_part: bool, had: bool,
                item: Any) -> None:
        if range_ is None:
            if had:
                table.items[hash_] = item
            else:
                table.items.pop(hash_, None)
            return
        if had:
            table.items[hash_][range_] = item
            return
        table.items.get(hash_, {}).pop(range_, None)
        if not had_part and not table.items.get(hash_, True):
            del table.items[hash_]

    def backed_up(self: Any, items: Any) -> None:
        backups = [b for b in (saved(self.tables, e) for e in items) if b is not None]
        shards = {id(b[0].stream_shard): (b[0].stream_shard, list(b[0].stream_shard.items))
                  for b in backups if b[0].stream_shard is not None}
        models.copy = types.SimpleNamespace(  # type: ignore[attr-defined, assignment]
            deepcopy=lambda v: v if isinstance(v, Table) else copy.deepcopy(v))
        try:
            transact(self, items)
        except BaseException:
            for backup in reversed(backups):
                restore(*backup)
            for shard, records in shards.values():
                shard.items = records
            raise
        finally:
            models.copy = copy  # type: ignore[attr-defined]

    models.DynamoDBBackend.transact_write_items = backed_up  # type: ignore[method-assign, assignment]


def moto_attribute_values_direct() -> None:
    """From now on, moto writes an answer's DynamoDB attribute values (``{"S": "x"}``)
    member by member as they are, not by asking for each of the ten members an
    ``AttributeValue`` can hold: moto's serializer looks every member up under its
    aliases and snake_case name, so writing the items of its answers took about a fifth
    of an in-process moto test's CPU. The same answer: a value that is not a plain dict of
    those members (or any other shape) takes moto's own way.

    moto: ``moto.core.serialize.BaseJSONSerializer._serialize_type_structure`` (DynamoDB's
    JSON protocol); moto has no setting for it."""
    from moto.core.serialize import BaseJSONSerializer

    own = BaseJSONSerializer._serialize_type_structure
    if own.__name__ == "direct":  # (already)
        return

    def direct(self: Any, serialized: Any, value: Any, shape: Any, key: str) -> None:
        members = shape.members
        if not (key and shape.name == "AttributeValue" and type(value) is dict
                and value.keys() <= members.keys()):
            return own(self, serialized, value, shape, key)
        wrapper: dict[str, Any] = {}
        for name, member in value.items():
            if member is not None:
                self._serialize(wrapper, member, members[name], name)
        self._default_serialize(serialized, wrapper, shape, key)
        return None

    BaseJSONSerializer._serialize_type_structure = direct  # type: ignore[method-assign]


@contextmanager
def unobserved() -> Iterator[None]:
    """For the block, OpenTelemetry's instrumentations (botocore's) make no span: the
    requests dynaorm's test backend sends for itself are no part of the program's trace.

    OpenTelemetry: ``opentelemetry.context._SUPPRESS_INSTRUMENTATION_KEY``, the key every
    instrumentation checks; the public ``suppress_instrumentation`` lives in
    ``opentelemetry-instrumentation``, which an application with the API alone lacks.
    Nothing is done while OpenTelemetry is not imported."""
    context = sys.modules.get("opentelemetry.context")
    key = getattr(context, "_SUPPRESS_INSTRUMENTATION_KEY", None)
    if context is None or key is None:
        yield
        return
    token = context.attach(context.set_value(key, True))
    try:
        yield
    finally:
        context.detach(token)
