"""S3 beside the test's engine, for offloaded values (``Table(offload=...)``): moto's S3
in-process beside the in-process moto, else a moto server's beside the engine (DynamoDB
Local), configured as an application configures it (``AWS_ENDPOINT_URL_S3``), as
tests/integration/test_encryption.py does for KMS. :func:`bucket` makes a bucket of its
own and points a table's ``offload=`` at it; :class:`Bucket` lists, reads and removes its
objects directly (not through dynaorm); :func:`kms_for` is KMS beside it, to make keys for
an offloading table's ``KmsKeyring``."""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import boto3
import pytest

from dynaorm import Table
from dynaorm.client.settings import default_session, resolve_region
from dynaorm.schema.rules.offloaded import references

__all__ = ["Bucket", "bucket", "kms_for", "s3_for"]


@dataclass
class Bucket:
    """A bucket of the test's S3 and a boto3 client of it."""

    s3: Any
    name: str

    def keys(self) -> set[str]:
        """The keys of every object in the bucket."""
        found: set[str] = set()
        for page in self.s3.get_paginator("list_objects_v2").paginate(Bucket=self.name):
            found |= {o["Key"] for o in page.get("Contents", [])}
        return found

    def uris(self) -> set[str]:
        """``s3://bucket/key`` of every object."""
        return {f"s3://{self.name}/{k}" for k in self.keys()}

    def body(self, uri: str) -> bytes:
        """The bytes of the object ``uri`` names."""
        key = uri.removeprefix(f"s3://{self.name}/")
        data: bytes = self.s3.get_object(Bucket=self.name, Key=key)["Body"].read()
        return data

    def remove(self, uri: str) -> None:
        """Remove the object ``uri`` names (behind dynaorm's back)."""
        self.s3.delete_object(Bucket=self.name, Key=uri.removeprefix(f"s3://{self.name}/"))

    def put(self, key: str, body: bytes) -> None:
        """An object written behind dynaorm's back."""
        self.s3.put_object(Bucket=self.name, Key=key, Body=body)


def referenced(rows: list[dict[str, Any]]) -> set[str]:
    """The URIs every reference of ``rows`` (stored items) names."""
    return {ref.uri for row in rows for ref in references(row).values()}


def s3_for(backend: str | None, endpoint: str | None) -> Any:
    """A boto3 S3 client of the S3 at ``endpoint`` (``None``: moto's in-process one), in
    the region the table's client signs for."""
    region = resolve_region(None, default_session(), backend)
    return boto3.client("s3", endpoint_url=endpoint, region_name=region,
                        aws_access_key_id="x", aws_secret_access_key="x")


@contextlib.contextmanager
def bucket(backend: str | None, request: pytest.FixtureRequest,
           monkeypatch: pytest.MonkeyPatch, *tables: Table, prefix: str = "v/"
           ) -> Iterator[Bucket]:
    """A bucket of its own on the S3 beside the test's engine, each of ``tables``
    offloading into it (``offload=`` pointed at it for the block)."""
    endpoint = None if backend is None else request.getfixturevalue("dynaorm_moto_server")
    if endpoint is not None:
        monkeypatch.setenv("AWS_ENDPOINT_URL_S3", endpoint)
    s3 = s3_for(backend, endpoint)
    name = f"dynaorm-{uuid.uuid4().hex[:20]}"
    region = s3.meta.region_name
    s3.create_bucket(Bucket=name, **({} if region == "us-east-1" else {
        "CreateBucketConfiguration": {"LocationConstraint": region}}))
    was = [t.offload for t in tables]
    for table in tables:
        table.offload = f"s3://{name}/{prefix}"
    try:
        yield Bucket(s3, name)
    finally:
        for table, uri in zip(tables, was, strict=True):
            table.offload = uri


def kms_for(backend: str | None, request: pytest.FixtureRequest,
            monkeypatch: pytest.MonkeyPatch) -> Any:
    """A boto3 KMS client of the KMS beside the test's engine (moto's in-process one,
    else a moto server's, which the table's client is pointed at as an application
    points it: ``AWS_ENDPOINT_URL_KMS``), to make keys with."""
    endpoint = None if backend is None else request.getfixturevalue("dynaorm_moto_server")
    if endpoint is not None:
        monkeypatch.setenv("AWS_ENDPOINT_URL_KMS", endpoint)
    region = resolve_region(None, default_session(), backend)
    return boto3.client("kms", endpoint_url=endpoint, region_name=region,
                        aws_access_key_id="x", aws_secret_access_key="x")
