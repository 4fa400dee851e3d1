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
           "moto_nested", "moto_sizes_unchecked", "moto_transactions_copy_once", "unobserved"]


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


def moto_transactions_copy_once() -> None:
    """From now on, moto's ``TransactWriteItems`` backs each table up once, not once an
    item: moto deep-copies a table for every item of a transaction (to restore it if the
    transaction fails), identical copies of which it keeps the last, so a commit of N
    rows copied the table N times. The same backup: the same answers and rollback (moto
    answers one request at a time behind the emulator).

    moto: ``moto.dynamodb.models.copy`` (the module ``transact_write_items`` copies
    with); moto has no setting for it."""
    import copy
    import types

    from moto.dynamodb import models
    from moto.dynamodb.models.table import Table

    transact = models.DynamoDBBackend.transact_write_items
    if transact.__name__ == "once":  # (already)
        return

    def once(self: Any, items: Any) -> None:
        made = {}

        def deepcopy(value: Any) -> Any:
            if not isinstance(value, Table):
                return copy.deepcopy(value)
            if id(value) not in made:
                made[id(value)] = copy.deepcopy(value)
            return made[id(value)]

        models.copy = types.SimpleNamespace(deepcopy=deepcopy)  # type: ignore[attr-defined, assignment]
        try:
            transact(self, items)
        finally:
            models.copy = copy  # type: ignore[attr-defined]

    models.DynamoDBBackend.transact_write_items = once  # type: ignore[method-assign, assignment]


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
