#!/usr/bin/env python
"""Client CPU per operation over real HTTP: raw botocore vs PynamoDB vs dynaorm on both wires.

A canned DynamoDB endpoint runs in a child process (``benchmarks/canned_http.py``:
``http.server`` on loopback, HTTP/1.1 keep-alive, fixed JSON answers with a correct
``x-amz-crc32``), so every contender pays
its whole client path: rendering, SigV4 signing, the socket, reading, parsing and building
objects. Only the client process's CPU is timed (``time.process_time``), so the server's
work does not count.

Contenders (all in one run, interleaved repeats, median per operation):

``botocore``         a raw botocore client; items unmarshalled by hand into dataclasses
``pynamodb``         PynamoDB models
``dynaorm-botocore`` dynaorm, ``Table(wire="botocore")`` (the botocore client path)
``dynaorm``          dynaorm, ``Table(wire="dynaorm")`` (dynaorm's own wire, the default)

Operations: ``get`` (GetItem into an object), ``put`` (a new item, PutItem),
``tx3`` (an entity with two unique attributes: one TransactWriteItems of 3 Puts; dynaorm
through a Session commit, the others by hand), ``query25`` and ``query1000`` (a Query page
of 25 / 1,000 items into objects).

Usage::

    .venv/bin/python benchmarks/wire.py [--repeats 5] [--scale 1.0] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.canned_http import REGION, TABLE, canned_endpoint, dynaorm_models, ids

OPS = ("get", "put", "tx3", "query25", "query1000")
CONTENDERS = ("botocore", "pynamodb", "dynaorm-botocore", "dynaorm")
#: iterations per repeat of each op (``--scale`` multiplies them)
ITERATIONS = {"get": 300, "put": 300, "tx3": 200, "query25": 150, "query1000": 10}
#: the issue's targets: dynaorm's CPU at most this fraction of raw botocore's
TARGETS = {"get": 0.6, "put": 0.6, "tx3": 0.6, "query25": 0.4, "query1000": 0.25}


def _s(value: str) -> dict[str, str]:
    return {"S": value}


# -- contenders (client process) ------------------------------------------------------------
Op = Callable[[], object]


@dataclass(slots=True)
class RawUser:
    user_id: str
    org_id: str
    username: str
    email: str
    full_name: str
    logins: int


@dataclass(slots=True)
class RawMessage:
    room: str
    msg_id: str
    author: str
    seq: int
    body: str


def _raw_user(user_id: str) -> dict[str, Any]:
    return {"pk": _s(f"USER#{user_id}"), "sk": _s("PROFILE"), "_type": _s("User"),
            "user_id": _s(user_id), "org_id": _s("o1"), "username": _s("alice"),
            "email": _s("alice@x.com"), "full_name": _s("Alice Liddell"),
            "logins": {"N": "0"}}


NOT_EXISTS = {"ConditionExpression": "attribute_not_exists(#pk)",
              "ExpressionAttributeNames": {"#pk": "pk"}}


def make_botocore(endpoint: str) -> dict[str, Op]:
    import botocore.config
    import botocore.session

    client: Any = botocore.session.get_session().create_client(
        "dynamodb", region_name=REGION, endpoint_url=endpoint,
        config=botocore.config.Config(parameter_validation=False,
                                      retries={"total_max_attempts": 1, "mode": "standard"}))
    new_id = ids()

    def get() -> object:
        i = client.get_item(TableName=TABLE, Key={"pk": _s("USER#u1"), "sk": _s("PROFILE")}
                            )["Item"]
        return RawUser(i["user_id"]["S"], i["org_id"]["S"], i["username"]["S"],
                       i["email"]["S"], i["full_name"]["S"], int(i["logins"]["N"]))

    def put() -> object:
        return client.put_item(TableName=TABLE, Item=_raw_user(new_id()), **NOT_EXISTS)

    def tx3() -> object:
        item = _raw_user(new_id())
        guards = [{"Put": {"TableName": TABLE, **NOT_EXISTS, "Item": {
            "pk": _s(f"{a}#{item[a]['S']}"), "sk": _s(f"{a}#{item[a]['S']}"),
            "_type": _s("dynaorm:unique"), "owner_pk": item["pk"], "owner_sk": item["sk"],
            "owner_type": _s("User"), "unique_field": _s(a)}}} for a in ("username", "email")]
        return client.transact_write_items(TransactItems=[
            {"Put": {"TableName": TABLE, "Item": item, **NOT_EXISTS}}, *guards])

    def query(room: str) -> Op:
        def run() -> object:
            out = client.query(TableName=TABLE, KeyConditionExpression="#pk = :pk",
                               ExpressionAttributeNames={"#pk": "pk"},
                               ExpressionAttributeValues={":pk": _s(f"ROOM#{room}")})
            return [RawMessage(i["room"]["S"], i["msg_id"]["S"], i["author"]["S"],
                               int(i["seq"]["N"]), i["body"]["S"]) for i in out["Items"]]
        return run

    return {"get": get, "put": put, "tx3": tx3, "query25": query("r25"),
            "query1000": query("r1000")}


def make_pynamodb(endpoint: str) -> dict[str, Op]:
    from pynamodb.attributes import NumberAttribute, UnicodeAttribute
    from pynamodb.models import Model
    from pynamodb.transactions import TransactWrite

    class BaseMeta:
        table_name = TABLE
        host = endpoint
        region = REGION
        aws_access_key_id = "x"
        aws_secret_access_key = "x"

    class PUser(Model):
        Meta = BaseMeta
        pk = UnicodeAttribute(hash_key=True)
        sk = UnicodeAttribute(range_key=True)
        type = UnicodeAttribute(attr_name="_type", default="User")
        user_id = UnicodeAttribute()
        org_id = UnicodeAttribute()
        username = UnicodeAttribute()
        email = UnicodeAttribute()
        full_name = UnicodeAttribute(default="")
        logins = NumberAttribute(default=0)

    class PGuard(Model):
        Meta = BaseMeta
        pk = UnicodeAttribute(hash_key=True)
        sk = UnicodeAttribute(range_key=True)
        type = UnicodeAttribute(attr_name="_type", default="dynaorm:unique")
        owner_pk = UnicodeAttribute()
        owner_sk = UnicodeAttribute()
        owner_type = UnicodeAttribute()
        unique_field = UnicodeAttribute()

    class PMessage(Model):
        Meta = BaseMeta
        pk = UnicodeAttribute(hash_key=True)
        sk = UnicodeAttribute(range_key=True)
        room = UnicodeAttribute()
        msg_id = UnicodeAttribute()
        author = UnicodeAttribute()
        seq = NumberAttribute()
        body = UnicodeAttribute()

    connection = PUser._get_connection().connection
    new_id = ids()

    def new_user() -> PUser:
        uid = new_id()
        return PUser(pk=f"USER#{uid}", sk="PROFILE", user_id=uid, org_id="o1",
                     username="alice", email="alice@x.com", full_name="Alice Liddell")

    def get() -> object:
        return PUser.get("USER#u1", "PROFILE")

    def put() -> object:
        return new_user().save(condition=PUser.pk.does_not_exist())

    def tx3() -> object:
        user = new_user()
        with TransactWrite(connection=connection) as tx:
            tx.save(user, condition=PUser.pk.does_not_exist())
            for a in ("username", "email"):
                token = f"{a}#{getattr(user, a)}"
                tx.save(PGuard(pk=token, sk=token, owner_pk=user.pk, owner_sk=user.sk,
                               owner_type="User", unique_field=a),
                        condition=PGuard.pk.does_not_exist())
        return tx

    def query(room: str) -> Op:
        return lambda: list(PMessage.query(f"ROOM#{room}"))

    return {"get": get, "put": put, "tx3": tx3, "query25": query("r25"),
            "query1000": query("r1000")}


def make_dynaorm(endpoint: str, wire: str) -> dict[str, Op]:
    from dynaorm import Session

    app, User, PlainUser, Message = dynaorm_models(endpoint, wire)
    new_id = ids()

    def new(cls: type[Any]) -> Any:
        return cls(user_id=new_id(), org_id="o1", username="alice", email="alice@x.com",
                   full_name="Alice Liddell")

    def get() -> object:
        return Session(app).get(User, user_id="u1")

    def put() -> object:
        session = Session(app)
        session.save(new(PlainUser))
        return session.commit()

    def tx3() -> object:
        session = Session(app)
        session.save(new(User))
        return session.commit()

    def query(room: str) -> Op:
        return lambda: list(Session(app).query(Message, room=room))

    return {"get": get, "put": put, "tx3": tx3, "query25": query("r25"),
            "query1000": query("r1000")}


def check(name: str, ops: dict[str, Op]) -> None:
    """Each op once, before timing: it returns what it should."""
    for op, fn in ops.items():
        out = fn()
        if op.startswith("query"):
            size = int(op.removeprefix("query"))
            assert isinstance(out, list) and len(out) == size, (name, op, out)
        if op == "get":
            assert getattr(out, "username", None) == "alice", (name, op, out)


def timed(fn: Op, n: int) -> float:
    start = time.process_time()
    for _ in range(n):
        fn()
    return (time.process_time() - start) / n


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    # dummy credentials for the contenders that read the environment (a script, not dynaorm)
    os.environ.setdefault("AWS_ACCESS_KEY_ID", "x")
    os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "x")
    os.environ["AWS_EC2_METADATA_DISABLED"] = "true"
    with canned_endpoint() as endpoint:
        contenders = {"botocore": make_botocore(endpoint),
                      "pynamodb": make_pynamodb(endpoint),
                      "dynaorm-botocore": make_dynaorm(endpoint, "botocore"),
                      "dynaorm": make_dynaorm(endpoint, "dynaorm")}
        for name, ops in contenders.items():
            check(name, ops)
            for fn in ops.values():  # warm: pools open, caches filled
                fn()
        samples: dict[tuple[str, str], list[float]] = {}
        for _ in range(args.repeats):
            for op in OPS:
                n = max(1, int(ITERATIONS[op] * args.scale))
                for name in CONTENDERS:
                    samples.setdefault((name, op), []).append(timed(contenders[name][op], n))
    median = {k: statistics.median(v) for k, v in samples.items()}
    print(f"client CPU per operation (ms, median of {args.repeats}), ratio to raw botocore; "
          "canned endpoint over loopback HTTP")
    print(f"| op | {' | '.join(CONTENDERS)} | target (dynaorm) |")
    print(f"| --- | {' | '.join('---:' for _ in CONTENDERS)} | ---: |")
    for op in OPS:
        base = median[("botocore", op)]
        cells = [f"{median[(c, op)] * 1e3:.3f}" + ("" if c == "botocore" else
                                                    f" ({median[(c, op)] / base:.2f}x)")
                 for c in CONTENDERS]
        ratio = median[("dynaorm", op)] / base
        verdict = "met" if ratio <= TARGETS[op] else "MISSED"
        print(f"| {op} | {' | '.join(cells)} | <={TARGETS[op]}x {verdict} |")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({f"{c}:{o}": v for (c, o), v in median.items()},
                                        indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
