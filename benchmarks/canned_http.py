#!/usr/bin/env python
"""A canned DynamoDB endpoint for the wire benchmarks: ``http.server`` on loopback in a
child process (HTTP/1.1 keep-alive), answering DynamoDB's JSON protocol with fixed bodies
and a correct ``x-amz-crc32``, so a client pays its whole path (render, sign, socket, read,
parse, build objects) while the server's work is in another process.

Answers, by ``X-Amz-Target``: ``GetItem`` a user item; ``PutItem`` and
``TransactWriteItems`` ``{}``; ``Query`` a page of 25 or 1,000 message items (room ``r25`` /
``r1000`` in the request's ``:pk``). Anything else: a 400 ``ValidationException``.

Usage from a benchmark::

    with canned_endpoint() as endpoint:   # "http://127.0.0.1:PORT"
        ...

The server is standard library only (the child imports nothing of dynaorm).
"""

from __future__ import annotations

import http.server
import itertools
import json
import subprocess
import sys
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

__all__ = ["REGION", "TABLE", "canned_endpoint", "dynaorm_models", "ids", "message_item", "serve",
           "user_item"]

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


def answers() -> dict[str, bytes]:
    """The answer body per operation (a Query's per room: ``Query:r25`` / ``Query:r1000``)."""
    out: dict[str, Any] = {"GetItem": {"Item": user_item()}, "PutItem": {},
                           "TransactWriteItems": {}}
    for size in (25, 1000):
        items = [message_item(f"r{size}", n) for n in range(size)]
        out[f"Query:r{size}"] = {"Items": items, "Count": size, "ScannedCount": size}
    return {k: json.dumps(v, separators=(",", ":")).encode() for k, v in out.items()}


class Canned(http.server.BaseHTTPRequestHandler):
    """DynamoDB's JSON protocol, canned (see the module's docstring)."""

    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body leave at once (no delayed-ACK wait)
    bodies: dict[str, bytes] = {}

    def do_POST(self) -> None:
        request = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        operation = self.headers.get("X-Amz-Target", "").rpartition(".")[2]
        if operation == "Query":
            operation += ":r1000" if b"ROOM#r1000" in request else ":r25"
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
        self.end_headers()
        self.wfile.write(body)

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


if __name__ == "__main__":
    serve()
