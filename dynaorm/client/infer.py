"""``dynaorm.infer`` and ``dynaorm model --infer``: the model of a live table (contract
23, "Tables you already have").

This is the thin driver around :mod:`dynaorm.formats.infer` (pure): it reads the table's
description, its TTL setting and a sample of its items (a parallel Scan, at most
``sample`` items, its consumed capacity reported), the S3 objects of the values its
items hold offloaded (``Offloaded``), and nothing else: no request it sends writes. The
inferred model is turned into entity code (:func:`dynaorm.formats.code.code_of`), the
code is defined, and the model of what it defines is the answer, so every format of
``dynaorm model`` prints it and the code it prints runs as is.
"""

from __future__ import annotations

import json
import sys
import types
import uuid
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from functools import partial
from typing import Any, TextIO

from dynaorm.errors import DynaormError, KeyringError
from dynaorm.formats.infer import (
    InferenceError,
    Inferred,
    infer_model,
    opened_values,
    read_offloaded,
    table_of,
)
from dynaorm.schema.entity import spec_of

__all__ = ["EndpointUnreachableError", "InferenceError", "decoded", "infer", "infer_code",
           "inferred_code", "read_sample"]

#: the segments of the parallel Scan (each reads its share of the sample)
SEGMENTS = 4
#: the unplaced keys the report names (the rest are only counted)
_SHOWN = 5
#: why the report names a field the printed model declares as ``Meta.lock``
_LOCKED = ("every item holds it as an integer N from 1: the optimistic lock of DynamoDBMapper "
           "(@DynamoDBVersionAttribute), the Enhanced Client (@DynamoDbVersionAttribute) or "
           "PynamoDB (VersionAttribute), declared Meta.lock (their startAt/incrementBy "
           "other than 0/1: Lock.enhanced)")
#: the first line of the code ``--format code`` prints
_HEAD = '"""Entities of {name!r}, inferred from its items by `dynaorm model --infer`."""'


class EndpointUnreachableError(DynaormError, ConnectionError):
    """The endpoint did not answer (no connection): ``dynaorm model --infer`` exits 1."""


def _client(client: Any, endpoint_url: str | None, region: str | None) -> Any:
    from dynaorm.client.client import Client

    # (a dynaorm Client, given or made: its botocore client)
    return getattr(client or Client(endpoint_url, region), "botocore", client)


def _call(op: Callable[..., dict[str, Any]], table: str, **kwargs: Any) -> dict[str, Any]:
    """One read request, its failures typed: no such table, no endpoint."""
    from botocore.exceptions import ClientError, EndpointConnectionError
    from botocore.exceptions import ConnectionError as BotoConnectionError

    try:
        return op(TableName=table, **kwargs)
    except (EndpointConnectionError, BotoConnectionError) as exc:
        raise EndpointUnreachableError(f"cannot reach DynamoDB: {exc}") from exc
    except ClientError as exc:
        code = exc.response.get("Error", {}).get("Code", "")
        if code == "ResourceNotFoundException":
            raise InferenceError(f"no table named {table!r} there") from exc
        raise


def read_sample(client: Any, table: str, sample: int
                ) -> tuple[dict[str, Any], str | None, list[dict[str, Any]], float]:
    """The table's description, TTL attribute, at most ``sample`` items (a parallel Scan
    of ``segments`` segments) and the read units the Scan consumed."""
    description = _call(client.describe_table, table)["Table"]
    table_of(description, None)  # (a binary key is refused before anything is read)
    ttl_desc = _call(client.describe_time_to_live, table).get("TimeToLiveDescription", {})
    ttl = (ttl_desc.get("AttributeName")
           if ttl_desc.get("TimeToLiveStatus") in ("ENABLED", "ENABLING") else None)
    segments = max(1, min(SEGMENTS, sample))
    share = [sample // segments + (1 if n < sample % segments else 0) for n in range(segments)]

    starts: list[dict[str, Any] | None] = [None] * segments
    done = [False] * segments

    def scan(segment: int, want: int) -> tuple[list[dict[str, Any]], float]:
        """Up to ``want`` more items of ``segment``, from where it stopped."""
        items: list[dict[str, Any]] = []
        units = 0.0
        while len(items) < want and not done[segment]:
            kwargs: dict[str, Any] = {"Segment": segment, "TotalSegments": segments,
                                      "Limit": min(1000, want - len(items)),
                                      "ReturnConsumedCapacity": "TOTAL"}
            if starts[segment] is not None:
                kwargs["ExclusiveStartKey"] = starts[segment]
            page = _call(client.scan, table, **kwargs)
            items += page.get("Items", [])
            units += float(page.get("ConsumedCapacity", {}).get("CapacityUnits", 0.0))
            starts[segment] = page.get("LastEvaluatedKey")
            done[segment] = starts[segment] is None
        return items, units

    with ThreadPoolExecutor(max_workers=segments) as pool:
        pages = list(pool.map(scan, range(segments), share))
    items = [item for found, _ in pages for item in found]
    units = sum(u for _, u in pages)
    for segment in range(segments):  # (a segment that ran short: the others make it up)
        if len(items) >= sample:
            break
        more, used = scan(segment, sample - len(items))
        items, units = items + more, units + used
    return description, ttl, items[:sample], units


def _objects(client: Any, region: str, refs: list[Any]) -> list[bytes | Exception]:
    """The S3 objects of offloaded values (their references ``refs``: GetObject, in
    parallel, through ``client`` when it is a :class:`~dynaorm.Client`, else one of
    ``region``): each object's bytes, or the error reading it gave."""
    from dynaorm.client.client import Client
    from dynaorm.errors import RequestError

    if not refs:
        return []
    s3 = client if isinstance(client, Client) else Client(region=region)

    def body(ref: Any) -> bytes | Exception:
        try:
            got: bytes = s3.send("s3:GetObject", ref.request)["Body"]
        except RequestError as exc:
            return exc
        return got

    with ThreadPoolExecutor(max_workers=SEGMENTS) as pool:
        return list(pool.map(body, refs))


def inferred_code(found: Inferred) -> str:
    """The entity code of an inferred model (what ``--format code`` prints), checked by
    defining it."""
    from dynaorm.formats.code import import_code

    code = import_code(json.dumps(found.model), "json")
    rest = code.partition("\n")[2]
    return _HEAD.format(name=found.model["table"]["name"]) + "\n" + rest


def _defined_table(code: str) -> Any:
    """The one table (a :class:`~dynaorm.Table`) ``code`` defines."""
    from dynaorm.client.table import Table

    # (a module of its own, kept in sys.modules: pydantic resolves the annotations of a
    # class through its module, on first validation too)
    module = types.ModuleType(f"dynaorm_inferred_{uuid.uuid4().hex}")
    sys.modules[module.__name__] = module
    exec(compile(code, "<dynaorm inferred>", "exec"), module.__dict__)
    return next(v for v in vars(module).values() if isinstance(v, Table))


def decoded(found: Inferred, table: Any, refused: str = "") -> Inferred:
    """``found`` with only the items the printed model's ``table`` reads counted placed
    (contract 24: placed means decoded): each item the keys placed is classified as a
    read of the table classifies it (by its type name, else by its key's shape) and
    decoded by the class that claims it, a stored item as it would come from a Scan. An
    item no class claims, or whose class does not decode it, is unplaced, named first
    among the keys, and why in ``unreadable`` (``refused``: why the table has no keyring,
    for an item holding sealed values)."""
    from dynaorm.formats.infer import key_of

    keys = {"pk": table.pk, "sk": table.sk}
    bad = []
    for item in found.placed_items:
        why = _unread(table, item, refused)
        if why is not None:
            bad.append((key_of(item, keys), why))
    if not bad:
        return found
    shown = [k for k, _ in bad][:_SHOWN] + found.unplaced_keys
    return replace(found, placed=found.placed - len(bad), unplaced=found.unplaced + len(bad),
                   unplaced_keys=shown[:_SHOWN],
                   unreadable=[f"{json.dumps(k)}: {why}" for k, why in bad[:_SHOWN]])


def _unread(table: Any, item: Mapping[str, Any], refused: str) -> str | None:
    """Why the table's classes do not read ``item`` (``None``: one does), as a Scan of
    the table would meet it (classified, then decoded by its class: a stream image of an
    INSERT is read the same way)."""
    try:
        change = _change(table, item)
        if change is None or change.entity is None:
            return "no class of the printed model claims it"
        if change.role in ("guard", "rule"):
            return None  # (a row of a rule of its entity: a unique guard)
        sealed = sorted(spec_of(change.entity).encrypted.keys() & item.keys())
        if sealed and table.keyring is None:  # (not decoded: no key to open them with)
            return refused or (f"it holds sealed values ({', '.join(sealed)}), read only "
                               "with the table's keyring (in Python: dynaorm.infer(..., "
                               "client=Client(keyring=...)))")
        # (its image as the Scan read it, offloaded values read with the sample: nothing
        # is asked through a client)
        replace(change, prepare=lambda _, image: image.update(item)).new  # noqa: B018
    except (DynaormError, ValueError) as exc:
        return str(exc).split(": ", 1)[-1][:200]
    return None


def _run(table_name: str, client: Any, sample: int, endpoint_url: str | None,
         region: str | None, report: TextIO | None) -> tuple[Inferred, str, dict[str, Any]]:
    if sample < 1:
        raise InferenceError(f"--sample must be at least 1, got {sample}")
    dynamodb = _client(client, endpoint_url, region)
    description, ttl, items, units = read_sample(dynamodb, table_name, sample)
    read_offloaded(items, lambda refs: _objects(client, dynamodb.meta.region_name, refs))
    if report is not None:
        print(f"dynaorm model --infer: scanned {len(items)} items of {table_name!r}, "
              f"{units:g} read capacity units consumed", file=report)
    found = infer_model(description, ttl, items)
    refused = ""
    for again in (True, False):
        code = inferred_code(found)
        table = _defined_table(code)
        # (sealed values decode with the keyring of a dynaorm Client given: placed means
        # decoded; without one, their items are unplaced, the report saying to give it; one
        # the printed model refuses, a unique sealed field's without a MAC key, says why)
        try:
            table.keyring = getattr(client, "keyring", None)
        except KeyringError as exc:
            refused = str(exc)
            break
        if not (again and table.keyring and (opened := opened_values(
                found.placed_items, partial(_entity, table)))):
            break
        found = infer_model(description, ttl, items, opened)  # (sealed fields typed)
    return decoded(found, table, refused), code, table.model()


def _entity(table: Any, item: Mapping[str, Any]) -> Any:
    """The class of the printed model that claims ``item`` (``None``: none)."""
    return getattr(_change(table, item), "entity", None)


def _change(table: Any, item: Mapping[str, Any]) -> Any:
    """``item`` classified as a read of the table classifies it (``None``: no class claims
    it), a stream image of an INSERT read the same way."""
    return next(iter(table.changes([{"eventName": "INSERT", "dynamodb": {"NewImage": item}}])),
                None)


def infer(table_name: str, *, client: Any = None, sample: int = 1000,
          endpoint_url: str | None = None, region: str | None = None,
          report: TextIO | None = sys.stderr) -> dict[str, Any]:
    """The model of the live table ``table_name``, as the plain data ``table.model()``
    gives, inferred from its description, TTL setting and at most ``sample`` of its items
    (read with a parallel Scan; ``client``: a botocore DynamoDB client or a
    :class:`~dynaorm.Client`, default one for ``endpoint_url`` and ``region``). Its
    ``"inferred"`` part says how many items were sampled and placed (decoded by the printed
    model: an item holding ``Encrypted`` values only with the keyring of a ``Client``
    given), and names a few of those it did not place, and why. The Scan's consumed
    capacity goes to ``report``.

    Raises :class:`InferenceError` for no such table, an empty table or binary keys,
    :class:`EndpointUnreachableError` when the endpoint does not answer."""
    found, _, model = _run(table_name, client, sample, endpoint_url, region, report)
    return with_report(model, found)


def infer_code(table_name: str, *, client: Any = None, sample: int = 1000,
               endpoint_url: str | None = None, region: str | None = None,
               report: TextIO | None = sys.stderr) -> tuple[str, dict[str, Any]]:
    """The entity code of the live table (see :func:`infer`) and the model."""
    found, code, model = _run(table_name, client, sample, endpoint_url, region, report)
    return code, with_report(model, found)


def with_report(model: dict[str, Any], found: Inferred) -> dict[str, Any]:
    """``model`` with the inference's last section: what was sampled, placed, and the
    items it could not place (how many, with a few keys)."""
    model["inferred"] = {"sampled": found.sampled, "placed": found.placed,
                         "unplaced": {"count": found.unplaced, "keys": found.unplaced_keys,
                                      "unreadable": found.unreadable},
                         "own": found.own}
    return model


def unplaced_note(model: Mapping[str, Any]) -> str:
    """The last section as text (for ``--format code`` and stderr)."""
    info = model["inferred"]
    lines = [f"sampled {info['sampled']} items, placed {info['placed']}"]
    if info.get("own"):
        lines.append(f"{info['own']} rows of dynaorm's own (receipts, LangGraph's), "
                     "not entities")
    lines += [f"{e['name']}.{e['lock']['field']}: {_LOCKED}" for e in model["entities"]
              if e.get("lock")]
    lines += [f"{e['name']}.{f['name']}: sealed by dynaorm (Encrypted): give the table its "
              "keyring (Table(keyring=)) to read it" for e in model["entities"]
              for f in e["fields"] if f.get("encrypted")]
    if info["unplaced"]["count"]:
        lines.append(f"could not place {info['unplaced']['count']} items, e.g.:")
        lines += [f"  {json.dumps(k)}" for k in info["unplaced"]["keys"]]
    if info["unplaced"].get("unreadable"):
        lines.append("placed by their keys, but the printed model does not read them:")
        lines += [f"  {why}" for why in info["unplaced"]["unreadable"]]
    return "\n".join(lines)
