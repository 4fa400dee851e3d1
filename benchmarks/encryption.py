#!/usr/bin/env python
"""An encrypted get and put beside a plain one (contract 20), and beside one sealed under
its row's tenant's key (contract 24, ``key_scope``: at most 1.2x the encrypted one once the
tenant's key is cached): client time per operation of
an entity with three ``Encrypted`` fields against the same entity without, on an
in-process moto (DynamoDB and KMS: nothing leaves the process), and the KMS calls the
steady state makes (none: the keyring's data key is cached, ``max_age``/``max_uses``), and
the client's own share without the backend (encoding an item, loading one).

Both entities hold the same values; the timed loop saves a new object (one PutItem) and
gets one by key (one GetItem). What differs is the AES-GCM work and the keyring.

Usage::

    .venv/bin/python benchmarks/encryption.py [--ops 2000] [--keyring static|kms] [--json F]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
for _name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
    os.environ.setdefault(_name, "x")

import boto3  # noqa: E402

from dynaorm import Encrypted, Entity, KmsKeyring, StaticKeyring, Table  # noqa: E402
from dynaorm.schema.entity import encode_entity, spec_of  # noqa: E402
from dynaorm.testing import moto_backend, use_tables  # noqa: E402

plain_table = Table("bench-plain")
secret_table = Table("bench-encrypted")
#: contract 24: the same values sealed under each row's tenant's key (``key_scope``)
tenant_table = Table("bench-tenants", key_scope="tenant")


class Plain(Entity):
    class Meta:
        table = plain_table
        pk = "T#{tenant}#P#{pid}"
        sk = "P"

    tenant: str = "acme"  # (each entity of one shape: only their rules differ)
    pid: str
    name: str
    ssn: str
    notes: str
    score: int


class Secret(Entity):
    class Meta:
        table = secret_table
        pk = "T#{tenant}#P#{pid}"
        sk = "P"

    tenant: str = "acme"
    pid: str
    name: str
    ssn: Encrypted[str]
    notes: Encrypted[str]
    score: Encrypted[int]


class Tenanted(Entity):
    class Meta:
        table = tenant_table
        pk = "T#{tenant}#P#{pid}"
        sk = "P"

    tenant: str = "acme"
    pid: str
    name: str
    ssn: Encrypted[str]
    notes: Encrypted[str]
    score: Encrypted[int]


def _time(fn: Any, ops: int) -> float:
    """Median microseconds per call over five runs of ``ops`` calls."""
    runs = []
    for _ in range(5):
        start = time.perf_counter()
        for i in range(ops):
            fn(i)
        runs.append((time.perf_counter() - start) / ops * 1e6)
    return statistics.median(runs)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--ops", type=int, default=2000)
    parser.add_argument("--keyring", choices=["static", "kms"], default="kms")
    parser.add_argument("--json")
    args = parser.parse_args()
    with moto_backend():
        kms = boto3.client("kms")
        calls: list[str] = []
        kms.meta.events.register("before-call.kms.*", lambda model, **_: calls.append(model.name))
        secret_table.keyring = tenant_table.keyring = (
            KmsKeyring(kms.create_key()["KeyMetadata"]["KeyId"], client=kms)
            if args.keyring == "kms" else StaticKeyring(os.urandom(32)))
        with use_tables(plain_table, secret_table, tenant_table) as db:
            figures: dict[str, float] = {}
            for name, cls, table in (("plain", Plain, plain_table),
                                     ("encrypted", Secret, secret_table),
                                     ("key_scope", Tenanted, tenant_table)):
                s = db.session(table)

                def put(i: int, s: Any = s, cls: Any = cls) -> None:
                    s.save(cls(pid=str(i), name="Ada", ssn="123-45-6789",
                               notes="allergic to nuts", score=i), overwrite=True)
                    s.commit()

                def get(i: int, s: Any = s, cls: Any = cls) -> None:
                    s.get(cls, pid=str(i % 50), tenant="acme")

                put(0)  # warm-up: the first data key (GenerateDataKey), and its first read
                get(0)  # (Decrypt, once per data key): the steady state makes no KMS call
                before = len(calls)
                figures[f"{name} put us"] = _time(lambda i, p=put: p(i % 1000 + 1), args.ops)
                figures[f"{name} get us"] = _time(get, args.ops)
                figures[f"{name} KMS calls in the timed loops"] = len(calls) - before
                # the client's own share, without the backend: encode an item, load one
                obj = cls(pid="7", name="Ada", ssn="123-45-6789", notes="nuts", score=7)
                spec = spec_of(cls)
                item = encode_entity(obj, spec)
                figures[f"{name} encode us"] = _time(lambda i, o=obj, sp=spec: encode_entity(
                    o, sp), args.ops * 10)
                figures[f"{name} load us"] = _time(lambda i, c=cls, it=item, sp=spec: c._from_item(
                    it, sp), args.ops * 10)
    for key, value in figures.items():
        print(f"{key:40} {value:10.1f}")
    for what in ("put", "get", "encode", "load"):  # (issue 84's budget: at most 1.2)
        ratio = figures[f"key_scope {what} us"] / figures[f"encrypted {what} us"]
        print(f"key_scope / encrypted {what:18} {ratio:10.3f}")
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
