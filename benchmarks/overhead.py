#!/usr/bin/env python
"""Client-side overhead per operation: dynaorm vs PynamoDB vs pydynantic vs raw botocore.

Every contender talks to its own botocore DynamoDB client, and every one of those clients
gets the *same* canned transport: a ``before-send`` event handler that short-circuits the
HTTP layer with a pre-built ``AWSResponse`` (status 200, a JSON body fit for the
operation). Nothing leaves the process -- no moto, no DynamoDB Local, no socket (the
endpoint ``http://127.0.0.1:1`` is never contacted) -- but every contender still pays all
of botocore's own work: parameter handling, JSON serialization, SigV4 signing, retry
bookkeeping and response parsing. What is measured is therefore "library + botocore"
client-side CPU per call, in microseconds.

Operations (every contender builds its model object inside the timed loop):

``save``    put a new User (a plain entity: no unique attributes) -> one ``PutItem``
``get``     get a User by key -> one ``GetItem`` -> a model object
``commit``  a new User with two unique attributes (username, email) -> one
            ``TransactWriteItems`` with 3 Puts: the user item and the guard items
            ``username#<v>`` and ``email#<v>``, each ``attribute_not_exists``-conditioned
``query``   a query returning 25 Message items -> 25 model objects

Before timing, each (contender, op) pair is run once with request capture on, and the
requests it sent are checked (operation, count, number of Puts and conditions); the
script refuses to time a contender that does not send what the op is supposed to send.

Usage::

    .venv/bin/python benchmarks/overhead.py                  # 2000 iterations x 5 repeats
    .venv/bin/python benchmarks/overhead.py --iterations 500 --json out.json
    .venv/bin/python benchmarks/overhead.py --show-requests  # print what each one sends
"""

from __future__ import annotations

import argparse
import gc
import itertools
import json
import os
import platform
import statistics
import sys
import time
import timeit
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# Run from a checkout: make the repository's ``dynaorm`` importable without installing it.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

# Dummy credentials and region, set before boto3/botocore/pynamodb are imported. The
# canned transport answers every request, so nothing is ever sent anywhere.
for _name, _value in {
    "AWS_ACCESS_KEY_ID": "x",
    "AWS_SECRET_ACCESS_KEY": "x",
    "AWS_SESSION_TOKEN": "x",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_REGION": "us-east-1",
    "AWS_EC2_METADATA_DISABLED": "true",
    "AWS_CONFIG_FILE": os.devnull,
    "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
}.items():
    os.environ[_name] = _value

import boto3  # noqa: E402
import botocore  # noqa: E402
import botocore.config  # noqa: E402
import pydantic  # noqa: E402
import pynamodb  # noqa: E402
from botocore.awsrequest import AWSPreparedRequest, AWSResponse  # noqa: E402

ENDPOINT = "http://127.0.0.1:1"
REGION = "us-east-1"
TABLE = "app"
QUERY_SIZE = 25

OPS = ("save", "get", "commit", "query")
CONTENDERS = ("dynaorm", "pynamodb", "pydynantic", "botocore")

# The one user every op talks about, and the room the query reads.
USER = {
    "user_id": "u1",
    "org_id": "o1",
    "username": "alice",
    "email": "alice@x.com",
    "full_name": "Alice Liddell",
}
ROOM = "r1"

# Discriminator attributes the libraries write on every item: dynaorm ``_type``
# (``Table(type_attribute=...)``), pydynantic ``__entity__``. PynamoDB and the raw
# client write none. The canned items carry both, so every contender parses the same
# bytes (each ignores the attribute it does not know).
DYNAORM_TYPE_ATTR = "_type"
PYDYNANTIC_TYPE_ATTR = "__entity__"


# --------------------------------------------------------------------------------------
# Key shapes -- shared by every contender so all of them send the same keys.
# --------------------------------------------------------------------------------------


def user_key(user_id: str) -> tuple[str, str]:
    return f"USER#{user_id}", "PROFILE"


def message_key(room: str, msg_id: str) -> tuple[str, str]:
    return f"ROOM#{room}", f"MSG#{msg_id}"


def guard_key(attribute: str, value: str) -> tuple[str, str]:
    """Where a unique value is reserved: pk = sk = ``username#alice``, as dynaorm does.

    dynaorm's guard item also records its owner (``owner_pk``, ``owner_sk``,
    ``owner_type``), ``unique_field`` and ``_type = "dynaorm:unique"`` -- what it needs to
    find an entity by a unique value and to release the guard when the value changes. The
    other contenders write the same attributes, so all send the same bytes (check with
    ``--show-requests``).
    """
    token = f"{attribute}#{value}"
    return token, token


GUARD_TYPE = "dynaorm:unique"


# --------------------------------------------------------------------------------------
# The canned transport
# --------------------------------------------------------------------------------------


def _s(value: str) -> dict[str, str]:
    return {"S": value}


def canned_user_item() -> dict[str, Any]:
    pk, sk = user_key(USER["user_id"])
    item: dict[str, Any] = {"pk": _s(pk), "sk": _s(sk)}
    item.update({name: _s(value) for name, value in USER.items()})
    item[DYNAORM_TYPE_ATTR] = _s("User")
    item[PYDYNANTIC_TYPE_ATTR] = _s("user")
    return item


def canned_message_item(n: int) -> dict[str, Any]:
    msg_id = f"m{n:04d}"
    pk, sk = message_key(ROOM, msg_id)
    return {
        "pk": _s(pk),
        "sk": _s(sk),
        "room": _s(ROOM),
        "msg_id": _s(msg_id),
        "author": _s(f"user{n % 5}"),
        "body": _s(f"message number {n}: the quick brown fox jumps over the lazy dog"),
        DYNAORM_TYPE_ATTR: _s("Message"),
        PYDYNANTIC_TYPE_ATTR: _s("message"),
    }


def canned_bodies() -> dict[str, bytes]:
    items = [canned_message_item(n) for n in range(QUERY_SIZE)]
    bodies: dict[str, Any] = {
        "PutItem": {},
        "TransactWriteItems": {},
        "GetItem": {"Item": canned_user_item()},
        "Query": {"Items": items, "Count": QUERY_SIZE, "ScannedCount": QUERY_SIZE},
    }
    return {op: json.dumps(body).encode() for op, body in bodies.items()}


class _RawBody:
    """Enough of a urllib3 response for ``AWSResponse.content`` (which calls stream())."""

    __slots__ = ("_body",)

    def __init__(self, body: bytes) -> None:
        self._body = body

    def stream(self, **_: Any) -> Iterator[bytes]:
        yield self._body


@dataclass
class Sent:
    operation: str
    body: dict[str, Any]


class CannedTransport:
    """A ``before-send`` handler answering every DynamoDB call with a canned response.

    Returning a response from ``before-send`` makes botocore skip the HTTP send; the
    response then goes through botocore's normal parsing, so the request was fully
    serialized and signed before we get here, and the response is fully parsed after.
    """

    def __init__(self, bodies: dict[str, bytes]) -> None:
        self._bodies = bodies
        self.calls = 0
        self.recording = False
        self.sent: list[Sent] = []

    #: ``--transport stub``: replace the client's ``_make_api_call`` instead, so botocore
    #: does no work at all and only the library's own cost is left.
    stub = False

    def attach(self, client: Any) -> None:
        if self.stub:
            client._make_api_call = self.make_api_call
        else:
            client.meta.events.register("before-send.dynamodb", self)

    def make_api_call(self, operation: str, params: dict[str, Any]) -> dict[str, Any]:
        """Stand-in for ``BaseClient._make_api_call``: the parsed canned response.

        Every generated client method (``client.put_item(...)``) and PynamoDB's
        ``Connection._make_api_call`` end up here. The response is a fresh ``json.loads``
        of the canned body, as botocore would hand back a fresh dict.
        """
        body = self._bodies.get(operation)
        if body is None:
            raise RuntimeError(f"canned transport: unexpected operation {operation}")
        self.calls += 1
        if self.recording:
            self.sent.append(Sent(operation, json.loads(json.dumps(params, default=str))))
        response: dict[str, Any] = json.loads(body)
        return response

    def __call__(self, request: AWSPreparedRequest, event_name: str, **_: Any) -> AWSResponse:
        operation = event_name.rpartition(".")[2]
        body = self._bodies.get(operation)
        if body is None:
            raise RuntimeError(f"canned transport: unexpected operation {operation}")
        self.calls += 1
        if self.recording:
            raw: Any = request.body
            if isinstance(raw, bytes | bytearray):
                raw = raw.decode()
            self.sent.append(Sent(operation, json.loads(raw or "{}")))
        headers: Any = {
            "x-amzn-RequestId": "canned",
            "Content-Type": "application/x-amz-json-1.0",
            "Content-Length": str(len(body)),
        }
        return AWSResponse(request.url, 200, headers, _RawBody(body))


def client_config(native: bool) -> botocore.config.Config | None:
    """The botocore Config of the raw and pydynantic clients.

    PynamoDB's ``Connection`` creates its client
    with ``parameter_validation=False`` and ``retries={'total_max_attempts': 4, 'mode':
    'standard'}``. By default the raw botocore and pydynantic clients get the same
    Config, so every contender runs the very same botocore pipeline; ``--native-config``
    leaves them with boto3's defaults instead (parameter validation on, legacy retries).
    """
    if native:
        return None
    return botocore.config.Config(
        parameter_validation=False,
        connect_timeout=15,
        read_timeout=30,
        max_pool_connections=10,
        retries={"total_max_attempts": 4, "mode": "standard"},
    )


# --------------------------------------------------------------------------------------
# Contenders: each builds a dict op -> zero-argument callable doing one whole operation
# --------------------------------------------------------------------------------------

Op = Callable[[], object]


@dataclass
class Contender:
    name: str
    version: str
    ops: dict[str, Op]
    transport: CannedTransport
    # What each op returns, checked once before timing (class of the model objects).
    model_types: dict[str, type] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def _fresh_ids() -> Callable[[], str]:
    counter = itertools.count()
    return lambda: f"n{next(counter)}"


# ---- raw botocore ----------------------------------------------------------------------


@dataclass(slots=True)
class RawUser:
    user_id: str
    org_id: str
    username: str
    email: str
    full_name: str


@dataclass(slots=True)
class RawMessage:
    room: str
    msg_id: str
    author: str
    body: str


def make_botocore(bodies: dict[str, bytes], native_config: bool) -> Contender:
    transport = CannedTransport(bodies)
    client: Any = boto3.client(
        "dynamodb", region_name=REGION, endpoint_url=ENDPOINT, config=client_config(native_config)
    )
    transport.attach(client)
    new_id = _fresh_ids()
    not_exists: dict[str, Any] = {
        "ConditionExpression": "attribute_not_exists(#pk)",
        "ExpressionAttributeNames": {"#pk": "pk"},
    }

    def user_item(
        user_id: str, org_id: str, username: str, email: str, full_name: str
    ) -> dict[str, Any]:
        pk, sk = user_key(user_id)
        return {
            "pk": {"S": pk},
            "sk": {"S": sk},
            "_type": {"S": "User"},
            "user_id": {"S": user_id},
            "org_id": {"S": org_id},
            "username": {"S": username},
            "email": {"S": email},
            "full_name": {"S": full_name},
        }

    def guard_put(attribute: str, value: str, owner: dict[str, Any]) -> dict[str, Any]:
        pk, sk = guard_key(attribute, value)
        item = {
            "pk": {"S": pk},
            "sk": {"S": sk},
            "_type": {"S": GUARD_TYPE},
            "owner_pk": owner["pk"],
            "owner_sk": owner["sk"],
            "owner_type": {"S": "User"},
            "unique_field": {"S": attribute},
        }
        return {"Put": {"TableName": TABLE, "Item": item, **not_exists}}

    def save() -> object:
        item = user_item(
            new_id(), USER["org_id"], USER["username"], USER["email"], USER["full_name"]
        )
        return client.put_item(TableName=TABLE, Item=item, **not_exists)

    def get() -> object:
        pk, sk = user_key(USER["user_id"])
        item = client.get_item(TableName=TABLE, Key={"pk": {"S": pk}, "sk": {"S": sk}})["Item"]
        return RawUser(
            item["user_id"]["S"],
            item["org_id"]["S"],
            item["username"]["S"],
            item["email"]["S"],
            item["full_name"]["S"],
        )

    def commit() -> object:
        item = user_item(
            new_id(), USER["org_id"], USER["username"], USER["email"], USER["full_name"]
        )
        return client.transact_write_items(
            TransactItems=[
                {"Put": {"TableName": TABLE, "Item": item, **not_exists}},
                guard_put("username", item["username"]["S"], item),
                guard_put("email", item["email"]["S"], item),
            ]
        )

    def query() -> object:
        pk = message_key(ROOM, "")[0]
        out = client.query(
            TableName=TABLE,
            KeyConditionExpression="#pk = :pk AND begins_with(#sk, :sk)",
            ExpressionAttributeNames={"#pk": "pk", "#sk": "sk"},
            ExpressionAttributeValues={":pk": {"S": pk}, ":sk": {"S": "MSG#"}},
        )
        return [
            RawMessage(i["room"]["S"], i["msg_id"]["S"], i["author"]["S"], i["body"]["S"])
            for i in out["Items"]
        ]

    notes = [
        "hand-built AttributeValue dicts; reads unmarshalled by hand into slots "
        "dataclasses (no validation)"
    ]
    if native_config:
        notes.append("boto3 default client config (parameter validation ON)")
    return Contender(
        "botocore",
        botocore.__version__,
        {"save": save, "get": get, "commit": commit, "query": query},
        transport,
        {"get": RawUser, "query": RawMessage},
        notes,
    )


# ---- PynamoDB --------------------------------------------------------------------------


def make_pynamodb(bodies: dict[str, bytes]) -> Contender:
    from pynamodb.attributes import UnicodeAttribute
    from pynamodb.models import Model
    from pynamodb.transactions import TransactWrite

    class PUser(Model):
        class Meta:
            table_name = TABLE
            host = ENDPOINT
            region = REGION

        pk = UnicodeAttribute(hash_key=True)
        sk = UnicodeAttribute(range_key=True)
        type = UnicodeAttribute(attr_name="_type", default="User")
        user_id = UnicodeAttribute()
        org_id = UnicodeAttribute()
        username = UnicodeAttribute()
        email = UnicodeAttribute()
        full_name = UnicodeAttribute(default="")

    class PGuard(Model):
        class Meta:
            table_name = TABLE
            host = ENDPOINT
            region = REGION

        pk = UnicodeAttribute(hash_key=True)
        sk = UnicodeAttribute(range_key=True)
        type = UnicodeAttribute(attr_name="_type", default=GUARD_TYPE)
        owner_pk = UnicodeAttribute()
        owner_sk = UnicodeAttribute()
        owner_type = UnicodeAttribute()
        unique_field = UnicodeAttribute()

    class PMessage(Model):
        class Meta:
            table_name = TABLE
            host = ENDPOINT
            region = REGION

        pk = UnicodeAttribute(hash_key=True)
        sk = UnicodeAttribute(range_key=True)
        room = UnicodeAttribute()
        msg_id = UnicodeAttribute()
        author = UnicodeAttribute()
        body = UnicodeAttribute()

    transport = CannedTransport(bodies)
    # Each Model class caches its own TableConnection -> pynamodb Connection -> botocore
    # client (``Connection.client``, a lazily created property).
    for model in (PUser, PGuard, PMessage):
        transport.attach(model._get_connection().connection.client)
    # TransactWrite needs a Connection; reuse PUser's (a real app would hold one).
    connection = PUser._get_connection().connection
    new_id = _fresh_ids()

    def new_user(user_id: str) -> PUser:
        pk, sk = user_key(user_id)
        return PUser(
            pk=pk,
            sk=sk,
            user_id=user_id,
            org_id=USER["org_id"],
            username=USER["username"],
            email=USER["email"],
            full_name=USER["full_name"],
        )

    def new_guard(attribute: str, value: str, owner: PUser) -> PGuard:
        pk, sk = guard_key(attribute, value)
        return PGuard(
            pk=pk,
            sk=sk,
            owner_pk=owner.pk,
            owner_sk=owner.sk,
            owner_type="User",
            unique_field=attribute,
        )

    def save() -> object:
        user = new_user(new_id())
        return user.save(condition=PUser.pk.does_not_exist())

    def get() -> object:
        pk, sk = user_key(USER["user_id"])
        return PUser.get(pk, sk)

    def commit() -> object:
        user = new_user(new_id())
        with TransactWrite(connection=connection) as tx:
            tx.save(user, condition=PUser.pk.does_not_exist())
            tx.save(
                new_guard("username", user.username, user), condition=PGuard.pk.does_not_exist()
            )
            tx.save(new_guard("email", user.email, user), condition=PGuard.pk.does_not_exist())
        return tx

    def query() -> object:
        pk = message_key(ROOM, "")[0]
        return list(PMessage.query(pk, PMessage.sk.startswith("MSG#")))

    notes = ["Connection.dispatch adds ReturnConsumedCapacity=TOTAL to every request"]
    return Contender(
        "pynamodb",
        pynamodb.__version__,
        {"save": save, "get": get, "commit": commit, "query": query},
        transport,
        {"get": PUser, "query": PMessage},
        notes,
    )


# ---- pydynantic ------------------------------------------------------------------------


def make_pydynantic(bodies: dict[str, bytes], native_config: bool) -> Contender:
    import pydynantic
    from pydynantic import Entity, Table, attr_not_exists, key, transaction

    transport = CannedTransport(bodies)
    # pydynantic never creates a client itself unless asked to: it takes the boto3
    # client as ``Table(client=...)`` and calls it directly (``table.client``).
    client = boto3.client(
        "dynamodb", region_name=REGION, endpoint_url=ENDPOINT, config=client_config(native_config)
    )
    transport.attach(client)
    table = Table(TABLE, pk="pk", sk="sk", client=client)
    g_pk, g_sk = guard_key("{unique_field}", "{value}")

    class User(Entity, table=table, name="user"):
        class Meta:
            primary = key(pk="USER#{user_id}", sk="PROFILE")

        user_id: str
        org_id: str
        username: str
        email: str
        full_name: str = ""

    class Guard(Entity, table=table, name="unique"):
        class Meta:
            primary = key(pk=g_pk, sk=g_sk)

        unique_field: str
        value: str
        owner_pk: str
        owner_sk: str
        owner_type: str

    class Message(Entity, table=table, name="message"):
        class Meta:
            primary = key(pk="ROOM#{room}", sk="MSG#{msg_id}")

        room: str
        msg_id: str
        author: str
        body: str

    new_id = _fresh_ids()
    not_exists = attr_not_exists("pk")

    def new_user(user_id: str) -> User:
        return User(
            user_id=user_id,
            org_id=USER["org_id"],
            username=USER["username"],
            email=USER["email"],
            full_name=USER["full_name"],
        )

    def save() -> object:
        return User.put(new_user(new_id()), condition=not_exists)

    def get() -> object:
        return User.get(user_id=USER["user_id"])

    def commit() -> object:
        user = new_user(new_id())
        owner_pk, owner_sk = user_key(user.user_id)
        with transaction(table) as tx:
            tx.put(user, condition=not_exists)
            for unique_field in ("username", "email"):
                guard = Guard(
                    unique_field=unique_field,
                    value=getattr(user, unique_field),
                    owner_pk=owner_pk,
                    owner_sk=owner_sk,
                    owner_type="user",
                )
                tx.put(guard, condition=not_exists)
        return tx

    def query() -> object:
        return Message.query.primary(room=ROOM).begins_with("MSG#").all()

    notes = [
        "no unique-constraint feature: guards are a hand-written Guard entity put in "
        "pydynantic's own transaction(table) (one TransactWriteItems)",
        "writes __entity__ where the others write _type; guard items also carry a "
        "'value' field (their key template needs it)",
    ]
    if native_config:
        notes.append("boto3 default client config (parameter validation ON)")
    return Contender(
        "pydynantic",
        pydynantic.__version__,
        {"save": save, "get": get, "commit": commit, "query": query},
        transport,
        {"get": User, "query": Message},
        notes,
    )


# ---- dynaorm ---------------------------------------------------------------------------


def make_dynaorm(bodies: dict[str, bytes]) -> Contender:
    import dynaorm
    from dynaorm import Entity, Session, Table

    # wire="botocore": the canned transport is a hook on the botocore client
    app = Table(TABLE, pk="pk", sk="sk", endpoint_url=ENDPOINT, region=REGION, wire="botocore")

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

    class PlainUser(Entity):  # same item, no unique attributes: a new one is one PutItem
        class Meta:
            table = app
            pk = "USER#{user_id}"
            sk = "PROFILE"

        user_id: str
        org_id: str
        username: str
        email: str
        full_name: str = ""

    class Message(Entity):
        class Meta:
            table = app
            pk = "ROOM#{room}"
            sk = "MSG#{msg_id}"

        room: str
        msg_id: str
        author: str
        body: str

    transport = CannedTransport(bodies)
    # dynaorm's botocore client: one per table, botocore's retries off (table.client).
    transport.attach(app.client)
    new_id = _fresh_ids()

    def new_user(cls: type[Any], user_id: str) -> Any:
        return cls(
            user_id=user_id,
            org_id=USER["org_id"],
            username=USER["username"],
            email=USER["email"],
            full_name=USER["full_name"],
        )

    # A fresh Session per operation: a unit of work per request, and no identity map
    # can turn a repeated get into a cache hit.
    def save() -> object:
        session = Session(app)
        obj = new_user(PlainUser, new_id())
        session.save(obj)
        session.commit()
        return obj

    def get() -> object:
        return Session(app).get(User, user_id=USER["user_id"])

    def commit() -> object:
        session = Session(app)
        obj = new_user(User, new_id())
        session.save(obj)
        session.commit()
        return obj

    def query() -> object:
        return list(Session(app).query(Message, room=ROOM))

    version = getattr(dynaorm, "__version__", "?")
    notes = [
        "a new Session per operation",
        "transport = dynaorm's own botocore client (table.client; validation off, botocore "
        "retries off)",
    ]
    return Contender(
        "dynaorm",
        version,
        {"save": save, "get": get, "commit": commit, "query": query},
        transport,
        {"get": User, "query": Message},
        notes,
    )


# --------------------------------------------------------------------------------------
# Checks: every contender must send what the op is supposed to send
# --------------------------------------------------------------------------------------

EXPECTED_OPERATION = {
    "save": "PutItem",
    "get": "GetItem",
    "commit": "TransactWriteItems",
    "query": "Query",
}


def describe(sent: Sent) -> str:
    body = sent.body
    if sent.operation == "TransactWriteItems":
        parts = []
        for action in body.get("TransactItems", []):
            ((kind, spec),) = action.items()
            cond = "+cond" if "ConditionExpression" in spec else ""
            keys = ""
            if "Item" in spec:
                keys = (
                    "("
                    + "/".join(spec["Item"].get(k, {}).get("S", "?") for k in ("pk", "sk"))
                    + ")"
                )
            parts.append(f"{kind}{keys}{cond}")
        return f"TransactWriteItems[{', '.join(parts)}]"
    extra = "+cond" if "ConditionExpression" in body else ""
    return f"{sent.operation}{extra}"


def check(contender: Contender, op: str, result: object, sent: list[Sent]) -> str | None:
    """Return a problem description, or None if the op did what it should."""
    expected = EXPECTED_OPERATION[op]
    if [s.operation for s in sent] != [expected]:
        return f"sent {[describe(s) for s in sent]}, expected exactly one {expected}"
    body = sent[0].body
    if op == "commit":
        actions = body.get("TransactItems", [])
        if len(actions) != 3 or any(set(a) != {"Put"} for a in actions):
            return f"sent {describe(sent[0])}, expected 3 Puts"
        if any("ConditionExpression" not in a["Put"] for a in actions):
            return f"sent {describe(sent[0])}, expected a condition on every Put"
    if op == "get":
        model = contender.model_types["get"]
        if not isinstance(result, model) or getattr(result, "username", None) != "alice":
            return f"returned {result!r}, expected a {model.__name__} for alice"
    if op == "query":
        model = contender.model_types["query"]
        if (
            not isinstance(result, list)
            or len(result) != QUERY_SIZE
            or not all(isinstance(r, model) for r in result)
        ):
            return f"returned {type(result).__name__}, expected {QUERY_SIZE} {model.__name__}"
    return None


def check_requests(contender: Contender, show: bool) -> dict[str, str]:
    problems: dict[str, str] = {}
    transport = contender.transport
    for op, fn in contender.ops.items():
        transport.sent.clear()
        transport.recording = True
        try:
            result = fn()
        except Exception as exc:  # report, do not time
            problems[op] = f"raised {type(exc).__name__}: {exc}"
            continue
        finally:
            transport.recording = False
        sent = list(transport.sent)
        problem = check(contender, op, result, sent)
        if problem:
            problems[op] = problem
        if show:
            for s in sent:
                print(f"--- {contender.name} {op}: {describe(s)}")
                print(json.dumps(s.body, indent=1, sort_keys=True))
        # The same op a second time must send a second request (no caching anywhere).
        before = transport.calls
        fn()
        if transport.calls != before + 1 and op not in problems:
            problems[op] = f"second call sent {transport.calls - before} requests, expected 1"
    return problems


# --------------------------------------------------------------------------------------
# Timing
# --------------------------------------------------------------------------------------


CLOCKS: dict[str, Callable[[], float]] = {
    # CPU time of this process: nothing here waits on I/O, so this is the work done, and
    # time spent descheduled (another process on a busy machine) does not count.
    "process": time.process_time,
    "wall": time.perf_counter,
}


def time_all(
    contenders: list[Contender],
    ops: list[str],
    iterations: int,
    repeats: int,
    warmup: int,
    clock: str = "process",
) -> dict[str, dict[str, list[float]]]:
    """Per op, per contender: ``repeats`` figures in microseconds per call.

    Repeats are interleaved (contender A, B, C, D, then again, rotating the order each
    round) so that drift -- thermal, frequency scaling, another process -- hits every
    contender alike. As with ``timeit``, the garbage collector is off while a batch runs.
    """
    timer = CLOCKS[clock]
    results: dict[str, dict[str, list[float]]] = {op: {} for op in ops}
    for op in ops:
        runners = [(c.name, c.ops[op]) for c in contenders if op in c.ops]
        if not runners:
            continue
        for _, fn in runners:
            for _ in range(warmup):
                fn()
        for r in range(repeats):
            order = runners[r % len(runners) :] + runners[: r % len(runners)]
            for name, fn in order:
                gc.collect()
                seconds = timeit.Timer(fn, timer=timer).timeit(number=iterations)
                results[op].setdefault(name, []).append(seconds / iterations * 1e6)
    return results


# --------------------------------------------------------------------------------------
# Main
# --------------------------------------------------------------------------------------


def build_contenders(args: argparse.Namespace) -> tuple[list[Contender], dict[str, str]]:
    bodies = canned_bodies()
    CannedTransport.stub = args.transport == "stub"
    makers: dict[str, Callable[[], Contender]] = {
        "dynaorm": lambda: make_dynaorm(bodies),
        "pynamodb": lambda: make_pynamodb(bodies),
        "pydynantic": lambda: make_pydynantic(bodies, args.native_config),
        "botocore": lambda: make_botocore(bodies, args.native_config),
    }
    contenders: list[Contender] = []
    unavailable: dict[str, str] = {}
    for name in args.contenders:
        try:
            contenders.append(makers[name]())
        except Exception as exc:  # a contender that cannot be set up is reported, not fatal
            unavailable[name] = f"{type(exc).__name__}: {exc}"
    return contenders, unavailable


def ratio(a: float | None, b: float | None) -> float | None:
    return a / b if a is not None and b else None


def fmt(value: float | None, spec: str, suffix: str = "") -> str:
    return "n/a" if value is None else format(value, spec) + suffix


def print_table(figures: dict[str, dict[str, float | None]], ops: list[str]) -> None:
    headers = [
        "op",
        "dynaorm µs",
        "pynamodb µs",
        "pydynantic µs",
        "botocore µs",
        "dynaorm/botocore",
        "dynaorm/pynamodb",
    ]
    rows = []
    for op in ops:
        row = figures[op]
        d, p, b = row.get("dynaorm"), row.get("pynamodb"), row.get("botocore")
        rows.append(
            [
                op,
                fmt(d, ".1f"),
                fmt(p, ".1f"),
                fmt(row.get("pydynantic"), ".1f"),
                fmt(b, ".1f"),
                fmt(ratio(d, b), ".2f", "x"),
                fmt(ratio(d, p), ".2f", "x"),
            ]
        )
    _print_rows(headers, rows)


def print_overhead(figures: dict[str, dict[str, float | None]], ops: list[str]) -> None:
    """Library cost on top of raw botocore, in µs: the part a library can actually shave."""
    libraries = ("dynaorm", "pynamodb", "pydynantic")
    headers = ["op", *(f"{name} - botocore µs" for name in libraries)]
    rows = []
    for op in ops:
        row = figures[op]
        base = row.get("botocore")
        rows.append([op, *(fmt(difference(row.get(name), base), "+.1f") for name in libraries)])
    _print_rows(headers, rows)


def difference(a: float | None, b: float | None) -> float | None:
    return a - b if a is not None and b is not None else None


def _print_rows(headers: list[str], rows: list[list[str]]) -> None:
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(headers)]
    line = " | ".join(
        h.ljust(w) if i == 0 else h.rjust(w)
        for i, (h, w) in enumerate(zip(headers, widths, strict=True))
    )
    print(line)
    print("-+-".join("-" * w for w in widths))
    for r in rows:
        print(
            " | ".join(
                c.ljust(w) if i == 0 else c.rjust(w)
                for i, (c, w) in enumerate(zip(r, widths, strict=True))
            )
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--iterations", type=int, default=2000, help="calls per timed batch (default 2000)"
    )
    parser.add_argument(
        "--repeats",
        type=int,
        default=5,
        help="timed batches per contender and op; the median is reported",
    )
    parser.add_argument(
        "--warmup",
        type=int,
        default=None,
        help="untimed calls before timing (default: iterations // 10, >= 50)",
    )
    parser.add_argument("--ops", nargs="+", choices=OPS, default=list(OPS))
    parser.add_argument("--contenders", nargs="+", choices=CONTENDERS, default=list(CONTENDERS))
    parser.add_argument(
        "--transport",
        choices=("botocore", "stub"),
        default="botocore",
        help="botocore: canned HTTP response, botocore does all its work "
        "(default); stub: the client's _make_api_call returns the parsed "
        "response, leaving only the library's own cost",
    )
    parser.add_argument(
        "--clock",
        choices=sorted(CLOCKS),
        default="process",
        help="process: CPU time of this process (default; robust on a busy "
        "machine); wall: perf_counter",
    )
    parser.add_argument(
        "--native-config",
        action="store_true",
        help="give the raw botocore and pydynantic clients boto3's default "
        "Config instead of PynamoDB's (parameter validation on)",
    )
    parser.add_argument(
        "--show-requests",
        action="store_true",
        help="print the request bodies each contender sends, then time",
    )
    parser.add_argument(
        "--json",
        nargs="?",
        const="-",
        metavar="PATH",
        help="also dump the figures as JSON to PATH (or stdout)",
    )
    args = parser.parse_args(argv)
    warmup = args.warmup if args.warmup is not None else max(50, args.iterations // 10)

    contenders, unavailable = build_contenders(args)
    for name, reason in unavailable.items():
        print(f"[skip] {name}: not available ({reason})", file=sys.stderr)

    problems: dict[str, dict[str, str]] = {}
    for contender in contenders:
        found = check_requests(contender, args.show_requests)
        for op, problem in found.items():
            print(f"[skip] {contender.name} {op}: {problem}", file=sys.stderr)
            del contender.ops[op]
        if found:
            problems[contender.name] = found

    print(
        f"python {platform.python_version()} | botocore {botocore.__version__} | "
        f"pydantic {pydantic.VERSION} | "
        + " | ".join(f"{c.name} {c.version}" for c in contenders if c.name != "botocore")
    )
    print(
        f"{args.iterations} iterations x {args.repeats} repeats (median), "
        f"warm-up {warmup}, {args.clock} clock; µs per operation, client side, "
        f"canned transport ({args.transport})\n"
    )

    raw = time_all(contenders, args.ops, args.iterations, args.repeats, warmup, args.clock)
    figures: dict[str, dict[str, float | None]] = {
        op: {
            name: statistics.median(raw[op][name]) if name in raw[op] else None
            for name in CONTENDERS
        }
        for op in args.ops
    }
    print_table(figures, args.ops)
    print()
    print_overhead(figures, args.ops)

    print()
    for contender in contenders:
        for note in contender.notes:
            print(f"note: {contender.name}: {note}")

    if args.json:
        dump = {
            "unit": "microseconds per operation (median of repeats)",
            "iterations": args.iterations,
            "repeats": args.repeats,
            "warmup": warmup,
            "clock": args.clock,
            "transport": args.transport,
            "min_us": {op: {name: min(v) for name, v in row.items()} for op, row in raw.items()},
            "native_config": args.native_config,
            "versions": {
                "python": platform.python_version(),
                "botocore": botocore.__version__,
                "pydantic": pydantic.VERSION,
                **{c.name: c.version for c in contenders},
            },
            "median_us": figures,
            "all_us": raw,
            "ratios": {
                op: {
                    "dynaorm/botocore": ratio(row.get("dynaorm"), row.get("botocore")),
                    "dynaorm/pynamodb": ratio(row.get("dynaorm"), row.get("pynamodb")),
                }
                for op, row in figures.items()
            },
            "above_botocore_us": {
                op: {
                    name: difference(row.get(name), row.get("botocore"))
                    for name in ("dynaorm", "pynamodb", "pydynantic")
                }
                for op, row in figures.items()
            },
            "unavailable": unavailable,
            "problems": problems,
            "notes": {c.name: c.notes for c in contenders},
        }
        text = json.dumps(dump, indent=2, sort_keys=True)
        if args.json == "-":
            print(text)
        else:
            with open(args.json, "w", encoding="utf-8") as fh:
                fh.write(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
