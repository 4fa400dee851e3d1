"""Plumbing shared by the examples (not an example itself).

Every example runs on an embedded, in-process DynamoDB (moto) by default. Pass
``--endpoint-url http://localhost:8000`` (or set ``AWS_ENDPOINT_URL_DYNAMODB``) to run it
against DynamoDB Local or another endpoint instead. The example's table is created fresh
(an existing table of that name is dropped first) and deleted at the end.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable, Generator, Iterable, Sequence
from contextlib import ExitStack, contextmanager
from typing import Any, TypeVar

from dynaorm import Entity, Table
from dynaorm.testing import TestBackend, moto_backend, moto_server, use_tables

__all__ = ["bucket", "keys", "run", "served", "show", "table_keys"]

T = TypeVar("T")


def _endpoint(description: str, argv: Sequence[str] | None) -> str | None:
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument(
        "--endpoint-url", default=os.environ.get("AWS_ENDPOINT_URL_DYNAMODB") or None,
        help="DynamoDB endpoint (e.g. DynamoDB Local); default: an in-process moto")
    url: str | None = parser.parse_args(argv).endpoint_url
    return url


@contextmanager
def run(table: Table, description: str, argv: Sequence[str] | None = None,
        also: Sequence[Table] = ()) -> Generator[TestBackend]:
    """Pick the backend from the command line, create ``table`` (and the tables ``also``
    names) fresh, delete them at the end."""
    url = _endpoint(description, argv)
    print(f"# {description}")
    names = ", ".join(t.name for t in (table, *also))
    print(f"# backend: {url or 'in-process moto'}; table{'s' if also else ''}: {names}")
    with ExitStack() as stack:
        if url is None:
            stack.enter_context(moto_backend())
        yield stack.enter_context(use_tables(table, *also, endpoint_url=url))


@contextmanager
def served(table: Table, description: str, argv: Sequence[str] | None = None
           ) -> Generator[str]:
    """Like :func:`run`, for code that needs an HTTP endpoint (async sessions): the
    endpoint from the command line, else a moto server started for the block; ``table``
    created fresh there. Yields the endpoint URL."""
    url = _endpoint(description, argv)
    print(f"# {description}")
    print(f"# backend: {url or 'moto server'}; table: {table.name}")
    with ExitStack() as stack:
        endpoint = url or stack.enter_context(moto_server())
        stack.enter_context(use_tables(table, endpoint_url=endpoint))
        yield endpoint


def show(code: str, rows: Iterable[T], fmt: Callable[[T], str] = repr) -> list[T]:
    """Print a query's code and its results, one per line; return the results."""
    out = list(rows)
    print(f"\n>>> {code}")
    for row in out:
        print(f"    {fmt(row)}")
    if not out:
        print("    (nothing)")
    return out


def keys(obj: Entity) -> str:
    """``Class(field=value, ...)`` without the noise of default values."""
    fields = obj.model_dump(exclude_defaults=True)
    return f"{type(obj).__name__}(" + ", ".join(f"{k}={v!r}" for k, v in fields.items()) + ")"


def table_keys(db: TestBackend, title: str, extra: Sequence[str] = ()) -> list[dict[str, Any]]:
    """Print every item of the table as ``pk | sk | _type [| extra attributes]``."""
    items = db.scan()
    print(f"\n--- table after: {title} ({len(items)} item{'s' if len(items) != 1 else ''})")
    for item in items:
        cols = [str(item.get("pk")), str(item.get("sk")), str(item.get("_type", "-"))]
        cols += [f"{a}={item[a]!r}" for a in extra if a in item]
        print("    " + " | ".join(cols))
    return items


@contextmanager
def bucket(name: str, endpoint_url: str | None) -> Generator[str]:
    """An S3 bucket for an example's offloaded values: moto's in-process S3 beside the
    in-process DynamoDB (``endpoint_url`` ``None``), else a moto server's, started for the
    block and configured as an application configures S3 (``AWS_ENDPOINT_URL_S3``).
    Yields the bucket's ``s3://`` URI."""
    import boto3

    with ExitStack() as stack:
        endpoint = None if endpoint_url is None else stack.enter_context(moto_server())
        if endpoint is not None:
            os.environ["AWS_ENDPOINT_URL_S3"] = endpoint
            stack.callback(os.environ.pop, "AWS_ENDPOINT_URL_S3", None)
        s3 = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1",
                          aws_access_key_id="x", aws_secret_access_key="x")
        s3.create_bucket(Bucket=name)
        yield f"s3://{name}"
