#!/usr/bin/env python
"""A canned DynamoDB endpoint for the wire benchmarks: ``http.server`` on loopback in a
child process (HTTP/1.1 keep-alive), answering DynamoDB's JSON protocol with fixed bodies
and a correct ``x-amz-crc32``, so a client pays its whole path (render, sign, socket, read,
parse, build objects) while the server's work is in another process.

Answers, by ``X-Amz-Target``: ``GetItem`` a user item; ``PutItem``, ``UpdateItem`` and
``TransactWriteItems`` ``{}``; ``Query`` a page of 25 or 1,000 message items (room ``r25`` /
``r1000`` in the request's ``:pk``); ``SearchVectors`` the ``TopK`` (10 or 100) nearest
documents of 768 dimensions, their vectors included only when a ``ProjectionExpression``
asks (as DynamoDB answers); ``BatchGetItem`` as many of those documents as it asks for
(10 or 100). Anything else: a 400 ``ValidationException``.

Usage from a benchmark::

    with canned_endpoint() as endpoint:   # "http://127.0.0.1:PORT"
        ...

The server is standard library only (the child imports nothing of dynaorm).
"""

from __future__ import annotations

import argparse
import http.server
import itertools
import json
import re
import subprocess
import sys
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["DIMENSIONS", "ITERATIONS", "JSON_TARGET", "OPS", "REGION", "TABLE", "TARGETS",
           "RawMessage", "RawUser", "arguments", "canned_endpoint", "check_answer",
           "dynaorm_models", "floor_ops", "ids", "json_ops", "message_item", "messages_of",
           "pydynox_models", "raw_requests", "serve", "ticket_item", "ticket_models",
           "user_item", "user_of", "vector_item"]

TABLE = "app"
REGION = "us-east-1"


def _s(value: str) -> dict[str, str]:
    return {"S": value}


def user_item() -> dict[str, Any]:
    """The item ``GetItem`` answers (a ``User``)."""
    return {"pk": _s("USER#u1"), "sk": _s("PROFILE"), "_type": _s("User"),
            "user_id": _s("u1"), "org_id": _s("o1"), "username": _s("alice"),
            "email": _s("alice@x.com"), "full_name": _s("Alice Liddell"),
            "logins": {"N": "42"}}


def message_item(room: str, n: int) -> dict[str, Any]:
    """Item ``n`` of a ``Query`` page of ``room``."""
    return {"pk": _s(f"ROOM#{room}"), "sk": _s(f"MSG#m{n:05d}"), "_type": _s("Message"),
            "room": _s(room), "msg_id": _s(f"m{n:05d}"), "author": _s(f"user{n % 5}"),
            "seq": {"N": str(n)},
            "body": _s(f"message number {n}: the quick brown fox jumps over the lazy dog")}


def ticket_item(n: int) -> dict[str, Any]:
    """Ticket ``n`` of tenant ``t1`` (an index query's and a scan's pages): its partition
    key ``TENANT#t1#TICKET#...`` and its ``gsi1`` keys (``TENANT#t1#STATUS#open``)."""
    return {"pk": _s(f"TENANT#t1#TICKET#k{n:05d}"), "sk": _s("TICKET"), "_type": _s("Ticket"),
            "gsi1pk": _s("TENANT#t1#STATUS#open"), "gsi1sk": _s(f"k{n:05d}"),
            "tenant_id": _s("t1"), "ticket_id": _s(f"k{n:05d}"), "status": _s("open"),
            "author": _s(f"user{n % 5}"), "seq": {"N": str(n)},
            "title": _s(f"ticket number {n}: the quick brown fox jumps over the lazy dog")}


#: the dimensions of the searched documents' vectors
DIMENSIONS = 768


def vector_item(n: int) -> dict[str, Any]:
    """Document ``n`` of a vector search (its vector as dynaorm stores one: 32-bit floats
    in 9 significant digits)."""
    import struct

    numbers = [struct.unpack("f", struct.pack("f", ((n * 7919 + i * 104729) % 2001 - 1000)
                                              / 997.0))[0] for i in range(DIMENSIONS)]
    return {"pk": _s(f"DOC#d{n:03d}"), "sk": _s("DOC"), "_type": _s("Doc"),
            "doc_id": _s(f"d{n:03d}"), "tenant_id": _s("t1"), "category": _s("news"),
            "title": _s(f"document number {n} of the corpus"),
            "embedding": {"L": [{"N": f"{x:.9g}"} for x in numbers]}}


def answers() -> dict[str, bytes]:
    """The answer body per operation (a Query's per room: ``Query:r25`` / ``Query:r1000``;
    a search's per ``TopK``, ``:v`` when it asks for the vectors; a ``BatchGetItem``'s per
    number of keys)."""
    out: dict[str, Any] = {"GetItem": {"Item": user_item()}, "PutItem": {},
                           "UpdateItem": {}, "TransactWriteItems": {}}
    for size in (25, 1000):
        items = [message_item(f"r{size}", n) for n in range(size)]
        out[f"Query:r{size}"] = {"Items": items, "Count": size, "ScannedCount": size}
        tickets = [ticket_item(n) for n in range(size)]
        page = {"Items": tickets, "Count": size, "ScannedCount": size}
        out[f"Query:gsi1:{size}"] = out[f"Scan:{size}"] = page
    for top in (10, 100):
        docs = [vector_item(n) for n in range(top)]
        out[f"SearchVectors:k{top}:v"] = {"SearchResults": [
            {"Item": d, "Score": 0.001 * n} for n, d in enumerate(docs)]}
        out[f"SearchVectors:k{top}"] = {"SearchResults": [
            {"Item": {k: v for k, v in d.items() if k != "embedding"}, "Score": 0.001 * n}
            for n, d in enumerate(docs)]}
        out[f"BatchGetItem:n{top}"] = {"Responses": {TABLE: docs}}
    return {k: json.dumps(v, separators=(",", ":")).encode() for k, v in out.items()}


def _keyed(operation: str, request: bytes) -> str:
    """The canned answer's name for ``request`` (see :func:`answers`)."""
    if operation in ("Query", "Scan") and (operation == "Scan" or b"IndexName" in request):
        limit = re.search(rb'"Limit":\s*(\d+)', request)
        size = "1000" if limit is not None and int(limit[1]) > 25 else "25"
        return f"{operation}:gsi1:{size}" if operation == "Query" else f"{operation}:{size}"
    if operation == "Query":
        return operation + (":r1000" if b"ROOM#r1000" in request else ":r25")
    if operation == "SearchVectors":
        top = re.search(rb'"TopK":\s*(\d+)', request)
        return f"{operation}:k{top[1].decode() if top else 0}" + (
            ":v" if b"ProjectionExpression" in request else "")
    if operation == "BatchGetItem":
        return f"{operation}:n{request.count(b'DOC#')}"
    return operation


class Canned(http.server.BaseHTTPRequestHandler):
    """DynamoDB's JSON protocol, canned (see the module's docstring)."""

    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body leave at once (no delayed-ACK wait)
    bodies: dict[str, bytes] = {}

    def do_POST(self) -> None:
        request = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        operation = _keyed(self.headers.get("X-Amz-Target", "").rpartition(".")[2], request)
        body = self.bodies.get(operation)
        status = 200
        if body is None:
            status, body = 400, json.dumps({
                "__type": "com.amazon.coral.validate#ValidationException",
                "message": f"canned endpoint: no answer for {operation}"}).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/x-amz-json-1.0")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("x-amz-crc32", str(zlib.crc32(body) & 0xFFFFFFFF))
        self.send_header("x-amzn-RequestId", "canned")
        # headers and body in one write, so a client reads the answer in one read (two
        # writes made the call traces of benchmarks/traces.py vary with timing)
        self._headers_buffer.append(b"\r\n" + body)
        self.flush_headers()

    def log_message(self, *_: Any) -> None:
        pass


def serve() -> None:
    """Serve forever on a free loopback port; print the port first (one line)."""
    Canned.bodies = answers()
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Canned)
    print(server.server_address[1], flush=True)
    server.serve_forever()


@contextmanager
def canned_endpoint() -> Iterator[str]:
    """The endpoint URL of a canned server in a child process (stopped on exit)."""
    child = subprocess.Popen([sys.executable, __file__], stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None
        yield f"http://127.0.0.1:{child.stdout.readline().strip()}"
    finally:
        child.terminate()
        child.wait()
        if child.stdout is not None:
            child.stdout.close()


# -- what the contenders of both wire benchmarks share (client process) -----------------------
OPS = ("get", "put", "tx3", "query25", "query1000")
#: iterations per repeat of each op (``--scale`` multiplies them)
ITERATIONS = {"get": 300, "put": 300, "tx3": 200, "query25": 150, "query1000": 10}
#: issue 39's bounds: dynaorm's CPU at most this fraction of the raw client's
TARGETS = {"get": 0.12, "put": 0.2, "tx3": 0.2, "query25": 0.2, "query1000": 0.15}
#: issue 31: a query's objects at most this many times bare ``json.loads`` of its page
JSON_TARGET = 2.0


def arguments(doc: str | None, scoped: bool = False) -> argparse.Namespace:
    """The command line both wire benchmarks take (``scoped``: and ``--scoped-only``, the
    scoped-vs-unscoped table alone)."""
    parser = argparse.ArgumentParser(description=(doc or "").splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--json", type=Path)
    if scoped:
        parser.add_argument("--scoped-only", action="store_true",
                            help="only the scoped-vs-unscoped table")
    return parser.parse_args()


@dataclass(slots=True)
class RawUser:
    """What the hand-written contenders build from a user item."""

    user_id: str
    org_id: str
    username: str
    email: str
    full_name: str
    logins: int


@dataclass(slots=True)
class RawMessage:
    """What the hand-written contenders build from a message item."""

    room: str
    msg_id: str
    author: str
    seq: int
    body: str


def user_of(answer: dict[str, Any]) -> RawUser:
    """The user of a ``GetItem`` answer, unmarshalled by hand."""
    i = answer["Item"]
    return RawUser(i["user_id"]["S"], i["org_id"]["S"], i["username"]["S"], i["email"]["S"],
                   i["full_name"]["S"], int(i["logins"]["N"]))


def messages_of(answer: dict[str, Any]) -> list[RawMessage]:
    """The messages of a ``Query`` answer, unmarshalled by hand."""
    return [RawMessage(i["room"]["S"], i["msg_id"]["S"], i["author"]["S"], int(i["seq"]["N"]),
                       i["body"]["S"]) for i in answer["Items"]]


_NOT_EXISTS = {"ConditionExpression": "attribute_not_exists(#pk)",
               "ExpressionAttributeNames": {"#pk": "pk"}}


def _new_user(user_id: str) -> dict[str, Any]:
    return {"pk": _s(f"USER#{user_id}"), "sk": _s("PROFILE"), "_type": _s("User"),
            "user_id": _s(user_id), "org_id": _s("o1"), "username": _s("alice"),
            "email": _s("alice@x.com"), "full_name": _s("Alice Liddell"),
            "logins": {"N": "0"}}


def raw_requests() -> dict[str, Callable[[], tuple[str, dict[str, Any]]]]:
    """The hand-written contenders' requests per op: ``(operation, parameters)``, as
    dynaorm sends them (a new user per put, a user and two unique guards per tx3)."""
    new_id = ids()

    def put() -> tuple[str, dict[str, Any]]:
        return "PutItem", {"TableName": TABLE, "Item": _new_user(new_id()), **_NOT_EXISTS}

    def tx3() -> tuple[str, dict[str, Any]]:
        item = _new_user(new_id())
        guards = [{"Put": {"TableName": TABLE, **_NOT_EXISTS, "Item": {
            "pk": _s(f"{a}#{item[a]['S']}"), "sk": _s(f"{a}#{item[a]['S']}"),
            "_type": _s("dynaorm:unique"), "owner_pk": item["pk"], "owner_sk": item["sk"],
            "owner_type": _s("User"), "unique_field": _s(a)}}} for a in ("username", "email")]
        return "TransactWriteItems", {"TransactItems": [
            {"Put": {"TableName": TABLE, "Item": item, **_NOT_EXISTS}}, *guards]}

    def query(room: str) -> Callable[[], tuple[str, dict[str, Any]]]:
        request = {"TableName": TABLE, "KeyConditionExpression": "#pk = :pk",
                   "ExpressionAttributeNames": {"#pk": "pk"},
                   "ExpressionAttributeValues": {":pk": _s(f"ROOM#{room}")}}
        return lambda: ("Query", request)

    get = {"TableName": TABLE, "Key": {"pk": _s("USER#u1"), "sk": _s("PROFILE")}}
    return {"get": lambda: ("GetItem", get), "put": put, "tx3": tx3,
            "query25": query("r25"), "query1000": query("r1000")}


def check_answer(name: str, op: str, out: object) -> None:
    """What an op must return (each contender's ops are checked once before timing)."""
    if op.startswith("query"):
        size = int(op.removeprefix("query"))
        assert isinstance(out, list) and len(out) == size, (name, op, out)
    if op == "get":
        assert getattr(out, "username", None) == "alice", (name, op, out)


def json_ops() -> dict[str, Callable[[], object]]:
    """The bare floor of the reads (reference): ``json.loads`` of the canned answer, the
    items as dicts, no object and no validation."""
    bodies = answers()

    def page(key: str) -> Callable[[], object]:
        body = bodies[key]
        return lambda: json.loads(body)["Items"]

    return {"query25": page("Query:r25"), "query1000": page("Query:r1000")}


def floor_ops() -> dict[str, Callable[[], object]]:
    """The floor of returning validated objects (reference, no HTTP and no database
    client): ``json.loads`` of the canned answer and a plain pydantic model validated from
    each item's values. Only reads have one."""
    from pydantic import BaseModel

    class User(BaseModel):
        user_id: str
        org_id: str
        username: str
        email: str
        full_name: str = ""
        logins: int = 0

    class Message(BaseModel):
        room: str
        msg_id: str
        author: str
        seq: int
        body: str

    bodies = answers()

    def page(key: str, model: type[BaseModel]) -> Callable[[], object]:
        fields = model.model_fields.keys()
        validate = model.__pydantic_validator__.validate_python

        def run() -> object:
            data = json.loads(bodies[key])
            items = data["Items"] if "Items" in data else [data["Item"]]
            out = [validate({k: next(iter(v.values())) for k, v in i.items() if k in fields})
                   for i in items]
            return out if "Items" in data else out[0]
        return run

    return {"get": page("GetItem", User), "query25": page("Query:r25", Message),
            "query1000": page("Query:r1000", Message)}


def pydynox_models(endpoint: str) -> tuple[Any, Any, Any, Any]:
    """pydynox's client and models for the pydynox contenders (its sync and its async API
    share them): ``(client, User, Guard, Message)``, each model given the client in its
    ``ModelConfig``, as pydynox's docs show. ``User`` and ``Guard`` write the items the
    hand-written contenders send (``_type`` included); ``Message`` reads the query pages."""
    from pydynox import DynamoDBClient, Model, ModelConfig
    from pydynox.attributes import NumberAttribute, StringAttribute

    client = DynamoDBClient(endpoint_url=endpoint, region=REGION, access_key="x",
                            secret_key="x")

    class User(Model):
        model_config = ModelConfig(table=TABLE, client=client)
        pk = StringAttribute(partition_key=True)
        sk = StringAttribute(sort_key=True)
        type = StringAttribute(alias="_type", default="User")
        user_id = StringAttribute()
        org_id = StringAttribute()
        username = StringAttribute()
        email = StringAttribute()
        full_name = StringAttribute(default="")
        logins = NumberAttribute(default=0)

    class Guard(Model):
        model_config = ModelConfig(table=TABLE, client=client)
        pk = StringAttribute(partition_key=True)
        sk = StringAttribute(sort_key=True)
        type = StringAttribute(alias="_type", default="dynaorm:unique")
        owner_pk = StringAttribute()
        owner_sk = StringAttribute()
        owner_type = StringAttribute()
        unique_field = StringAttribute()

    class Message(Model):
        model_config = ModelConfig(table=TABLE, client=client)
        pk = StringAttribute(partition_key=True)
        sk = StringAttribute(sort_key=True)
        room = StringAttribute()
        msg_id = StringAttribute()
        author = StringAttribute()
        seq = NumberAttribute()
        body = StringAttribute()

    return client, User, Guard, Message


def ids() -> Callable[[], str]:
    """A source of fresh ids (``n0``, ``n1``, ...)."""
    counter = itertools.count()
    return lambda: f"n{next(counter)}"


def dynaorm_models(endpoint: str, wire: str) -> tuple[Any, Any, Any, Any]:
    """The table (``Table(wire=wire)``) and the entities every dynaorm contender uses:
    ``User`` (two unique attributes: an insert is a 3-Put transaction), ``PlainUser``
    (an insert is one PutItem) and ``Message`` (the queried items)."""
    from dynaorm import Entity, Table

    app = Table(TABLE, endpoint_url=endpoint, region=REGION, wire=wire)

    class User(Entity):
        class Meta:
            table = app
            pk = "USER#{user_id}"
            sk = "PROFILE"
            unique = ("username", "email")

        user_id: str
        org_id: str
        username: str
        email: str
        full_name: str = ""
        logins: int = 0

    class PlainUser(Entity):
        class Meta:
            table = app
            pk = "USER#{user_id}"
            sk = "PROFILE"

        user_id: str
        org_id: str
        username: str
        email: str
        full_name: str = ""
        logins: int = 0

    class Message(Entity):
        class Meta:
            table = app
            pk = "ROOM#{room}"
            sk = "MSG#{msg_id}"

        room: str
        msg_id: str
        author: str
        seq: int
        body: str

    return app, User, PlainUser, Message


def ticket_models(endpoint: str) -> tuple[Any, Any]:
    """The table (own wire) and ``Ticket``: a tenant's entity (its partition key and its
    ``gsi1`` partition carry ``tenant_id``) that scoped and unscoped index queries and scans
    read (:func:`ticket_item`)."""
    from dynaorm import GSI, Entity, Table

    app = Table(TABLE, endpoint_url=endpoint, region=REGION,
                indexes=[GSI("gsi1", pk="gsi1pk", sk="gsi1sk")])

    class Ticket(Entity):
        class Meta:
            table = app
            pk = "TENANT#{tenant_id}#TICKET#{ticket_id}"
            sk = "TICKET"
            indexes = {"gsi1": ("TENANT#{tenant_id}#STATUS#{status}", "{ticket_id}")}

        tenant_id: str
        ticket_id: str
        status: str
        author: str
        seq: int
        title: str

    return app, Ticket


if __name__ == "__main__":
    serve()
