"""A FastAPI service on dynaorm: a session per request, errors as HTTP statuses, input and
output models from entities, pagination with cursors, ETags, async routes.

Run as a script it serves the app with uvicorn on a loopback port (in a thread) and calls
its routes over real HTTP with httpx, printing each answer. The routes run on a moto
server started for the run, or on any endpoint given with ``--endpoint-url`` /
``AWS_ENDPOINT_URL_DYNAMODB`` (DynamoDB Local, for example). Needs ``pip install
"dynaorm[async]" fastapi uvicorn httpx``. Guide: docs/guide/web-services.md.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import AsyncIterator, Generator
from contextlib import contextmanager
from datetime import datetime
from typing import Annotated, Any

import httpx
import uvicorn
from _support import served
from fastapi import Depends, FastAPI, Header, HTTPException, Request, Response
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field, ValidationError

from dynaorm import (
    AsyncSession,
    Client,
    ConcurrentModificationError,
    ConditionFailedError,
    ConflictError,
    Entity,
    InvalidCursorError,
    InvalidValueError,
    ItemNotFoundError,
    ItemTooLargeError,
    KeyTemplateError,
    OutcomeUnknownError,
    Table,
    TransactionConflictError,
    TransactionTooLargeError,
    Unique,
    UniqueConstraintError,
    ksuid,
)

db = Client()                                # from the environment, connects on first use
table = Table("dynaorm-example-web", client=db)


# -- models: the abstract base is what a client may send ------------------------------------
class CustomerFields(Entity):                # what a client may send
    name: str = Field(min_length=1)
    email: str

class Customer(CustomerFields):              # what is stored and returned
    class Meta:
        table = table
        pk = "TENANT#{tenant}"
        sk = "CUSTOMER#{customer_id}"
        unique = (Unique("email", normalize=str.lower),)
        versioned = True
        timestamps = ("created_at", "updated_at")

    tenant: str
    customer_id: str = Field(default_factory=ksuid)
    created_at: datetime | None = None
    updated_at: datetime | None = None
    version: int = 0

class CustomerPage(BaseModel):
    items: list[Customer]
    cursor: str | None


# -- a session per request ----------------------------------------------------------------
async def session() -> AsyncIterator[AsyncSession]:
    yield AsyncSession(table)                # nothing is written unless a route commits

Db = Annotated[AsyncSession, Depends(session)]
app = FastAPI()


# -- errors as HTTP statuses ----------------------------------------------------------------
def problem(status: int, title: str, exc: Exception, **extra: Any) -> JSONResponse:
    return JSONResponse({"title": title, "detail": str(exc), **extra}, status_code=status)

@app.exception_handler(ItemNotFoundError)        # ItemGoneError too: deleted since read
async def not_found(request: Request, exc: ItemNotFoundError) -> JSONResponse:
    return problem(404, "not found", exc, key=exc.key_values)

@app.exception_handler(UniqueConstraintError)
async def taken(request: Request, exc: UniqueConstraintError) -> JSONResponse:
    return problem(409, f"{exc.field} already taken", exc, field=exc.field)

@app.exception_handler(ConcurrentModificationError)
async def stale(request: Request, exc: ConcurrentModificationError) -> JSONResponse:
    response = problem(412, "precondition failed", exc)
    if exc.item is not None:                     # the stored item: its version, the ETag
        response.headers["ETag"] = f'"{exc.item.version}"'
    return response

@app.exception_handler(KeyTemplateError)         # a '#' in a path, an empty key value
async def bad_key(request: Request, exc: KeyTemplateError) -> JSONResponse:
    return problem(400, f"invalid {exc.field or 'key'}", exc, field=exc.field)

STATUSES: dict[type[Exception], tuple[int, str]] = {
    ConflictError: (409, "conflict"),            # ItemExistsError, any other conflict
    ConditionFailedError: (412, "precondition failed"),  # your condition= / where
    TransactionConflictError: (409, "conflict: try again"),
    InvalidCursorError: (400, "bad request"),    # a tampered, foreign or garbage cursor
    InvalidValueError: (400, "bad request"),     # a value DynamoDB would refuse
    ValidationError: (422, "invalid entity"),    # an entity the route built
    ItemTooLargeError: (413, "too large"),       # over 400 KB
    TransactionTooLargeError: (413, "too large"),  # over 100 actions or 4 MB
    OutcomeUnknownError: (503, "outcome unknown: read before retrying"),
}

async def by_status(request: Request, exc: Exception) -> JSONResponse:
    status, title = next(v for k, v in STATUSES.items() if isinstance(exc, k))
    return problem(status, title, exc)

for error in STATUSES:
    app.add_exception_handler(error, by_status)


# -- routes -----------------------------------------------------------------------------------
@app.post("/tenants/{tenant}/customers", status_code=201)
async def create(tenant: str, body: CustomerFields, s: Db, response: Response) -> Customer:
    customer = Customer(tenant=tenant, **body.model_dump())
    s.save(customer)
    await s.commit()
    response.headers["ETag"] = f'"{customer.version}"'
    return customer


@app.get("/tenants/{tenant}/customers/{customer_id}")
async def read(tenant: str, customer_id: str, s: Db, response: Response) -> Customer:
    customer = await s.get(Customer, tenant=tenant, customer_id=customer_id)
    if customer is None:
        raise HTTPException(404, f"customer {customer_id} does not exist")
    response.headers["ETag"] = f'"{customer.version}"'
    return customer


def expected_version(if_match: str) -> int | None:
    """The version an ``If-Match`` header expects: ``None`` for ``*`` (any), else the
    ETag's number; a header that is no ETag of ours matches nothing (412)."""
    if if_match.strip() == "*":
        return None
    tag = if_match.strip().removeprefix("W/").strip('"')
    if not tag.isdigit():
        raise HTTPException(412, f"If-Match {if_match!r} matches no version")
    return int(tag)

@app.put("/tenants/{tenant}/customers/{customer_id}")
async def replace(tenant: str, customer_id: str, body: CustomerFields, s: Db,
                  response: Response, if_match: Annotated[str, Header()]) -> Customer:
    customer = await s.get(Customer, tenant=tenant, customer_id=customer_id)
    if customer is None:
        raise HTTPException(404, f"customer {customer_id} does not exist")
    version = expected_version(if_match)
    if version is not None:
        customer.version = version               # a stale one: 412 at the commit
    customer.name, customer.email = body.name, body.email
    s.save(customer)
    await s.commit()
    response.headers["ETag"] = f'"{customer.version}"'
    return customer


@app.delete("/tenants/{tenant}/customers/{customer_id}", status_code=204)
async def remove(tenant: str, customer_id: str, s: Db) -> None:
    s.delete(Customer, tenant=tenant, customer_id=customer_id)
    await s.commit()  # ItemNotFoundError -> 404


@app.get("/tenants/{tenant}/customers")
async def listing(tenant: str, s: Db, cursor: str | None = None,
                  limit: Annotated[int, Field(ge=1, le=100)] = 20) -> CustomerPage:
    page = await s.query(Customer, tenant=tenant).page_size(limit).page(cursor)
    return CustomerPage(items=page.items, cursor=page.cursor)


# -- running it: uvicorn in a thread, httpx against it -------------------------------------
def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


@contextmanager
def serving() -> Generator[str]:
    """The app served by uvicorn on a loopback port, in a thread; yields its URL."""
    port = _free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port,
                                           log_level="warning", lifespan="off"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)


def tampered(cursor: str) -> str:
    """``cursor`` with one character in its middle changed, so that bits that count differ
    (the last character of a base64 text may carry padding bits: changing it, or setting
    it to what it already is, proves nothing)."""
    at = (len(cursor) - 1) // 2
    return cursor[:at] + ("B" if cursor[at] == "A" else "A") + cursor[at + 1:]


def show(code: str, answer: httpx.Response, *fields: str) -> dict[str, Any]:
    """Print a request and its status (and some fields of its JSON body)."""
    body: dict[str, Any] = answer.json() if answer.content else {}
    shown = " ".join(f"{f}={body.get(f)!r}" for f in fields)
    print(f"\n>>> {code}")
    print(f"    {answer.status_code} {shown}".rstrip())
    return body


def demo(url: str) -> None:
    """Every route over HTTP: created, read, conflicts, ETags, pages, errors."""
    base = f"{url}/tenants/t1/customers"
    with httpx.Client(timeout=30) as http:
        ada = show("POST ada", http.post(base, json={"name": "Ada", "email": "ada@x.io"}),
                   "name", "version")
        for i in range(4):
            http.post(base, json={"name": f"User {i}", "email": f"u{i}@x.io"})
        show("POST eve with ada's email", http.post(
            base, json={"name": "Eve", "email": "ADA@x.io"}), "title")
        show("POST with customer_id and version (server-owned: ignored)", http.post(
            base, json={"name": "Mal", "email": "mal@x.io", "customer_id": "chosen",
                        "version": 99}), "customer_id", "version")
        one = f"{base}/{ada['customer_id']}"
        got = http.get(one)
        show("GET ada", got, "name")
        print(f"    ETag {got.headers['etag']}")
        show("PUT ada If-Match current", http.put(
            one, json={"name": "Ada L.", "email": "ada@x.io"},
            headers={"If-Match": got.headers["etag"]}), "name", "version")
        stale = http.put(one, json={"name": "Stale", "email": "ada@x.io"},
                         headers={"If-Match": got.headers["etag"]})
        show("PUT ada If-Match stale", stale, "title")
        print(f"    ETag {stale.headers.get('etag')}")
        show("PUT ada If-Match *", http.put(one, json={"name": "Ada Any", "email": "ada@x.io"},
                                            headers={"If-Match": "*"}), "name", "version")
        first = show("GET page 1 (limit=4)", http.get(base, params={"limit": 4}))
        print(f"    {len(first['items'])} items, cursor {'set' if first['cursor'] else None}")
        second = show("GET page 2", http.get(base, params={"limit": 4,
                                                           "cursor": first["cursor"]}))
        print(f"    {len(second['items'])} items, cursor {second['cursor']}")
        show("GET page with a tampered cursor", http.get(
            base, params={"cursor": tampered(first["cursor"])}), "title")
        show("GET a missing customer", http.get(f"{base}/nobody"), "detail")
        show("GET a customer id holding '#'", http.get(f"{base}/a%23b"), "title", "field")
        show("DELETE a missing customer", http.delete(f"{base}/nobody"), "title", "key")
        show("DELETE ada", http.delete(one))
        show("GET ada again", http.get(one), "detail")


if __name__ == "__main__":
    with served(table, "A FastAPI service on dynaorm"), serving() as url:
        demo(url)
