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
from pydantic import BaseModel, Field

from dynaorm import (
    AsyncSession,
    ConcurrentModificationError,
    ConflictError,
    Entity,
    InvalidCursorError,
    InvalidValueError,
    ItemNotFoundError,
    KeyTemplateError,
    Table,
    Unique,
    UniqueConstraintError,
    ksuid,
)

table = Table("dynaorm-example-web")


# -- models: the abstract base is what a client may send ------------------------------------
class CustomerFields(Entity):
    """The fields a client sets: an entity without a key template is an abstract base,
    and a plain pydantic model for FastAPI (request bodies cannot set server-owned fields
    such as ids, timestamps or the version)."""

    name: str = Field(min_length=1)
    email: str


class Customer(CustomerFields):
    """The stored entity (and the response model): server-owned fields added."""

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
    """One page of customers and the cursor of the next (``null`` on the last page)."""

    items: list[Customer]
    cursor: str | None


# -- a session per request ----------------------------------------------------------------
async def session() -> AsyncIterator[AsyncSession]:
    """One unit of work per request (FastAPI dependency); nothing is committed unless the
    route commits."""
    yield AsyncSession(table)


Db = Annotated[AsyncSession, Depends(session)]
app = FastAPI(title="customers")


# -- errors as HTTP statuses ----------------------------------------------------------------
def _problem(status: int, title: str, exc: Exception, **extra: Any) -> JSONResponse:
    return JSONResponse({"title": title, "detail": str(exc), **extra}, status_code=status)


@app.exception_handler(ItemNotFoundError)
async def not_found(request: Request, exc: ItemNotFoundError) -> JSONResponse:
    """404 (an ``ItemGoneError`` is one too: deleted since it was read)."""
    return _problem(404, "not found", exc, key=exc.key_values)


@app.exception_handler(UniqueConstraintError)
async def taken(request: Request, exc: UniqueConstraintError) -> JSONResponse:
    """409: a unique value is already claimed."""
    return _problem(409, f"{exc.field} already taken", exc, field=exc.field)


@app.exception_handler(ConcurrentModificationError)
async def stale(request: Request, exc: ConcurrentModificationError) -> JSONResponse:
    """412 with the current ETag (the stored item came with the error)."""
    response = _problem(412, "precondition failed", exc)
    if exc.item is not None:
        response.headers["ETag"] = f'"{exc.item.version}"'
    return response


@app.exception_handler(ConflictError)
async def conflict(request: Request, exc: ConflictError) -> JSONResponse:
    """409: another writer got there first (an insert over an existing item)."""
    return _problem(409, "conflict", exc)


@app.exception_handler(KeyTemplateError)
async def bad_key(request: Request, exc: KeyTemplateError) -> JSONResponse:
    """400 naming the field whose value cannot be part of a key (a ``#`` in a path)."""
    return _problem(400, f"invalid {exc.field or 'key'}", exc, field=exc.field)


@app.exception_handler(InvalidCursorError)
@app.exception_handler(InvalidValueError)
async def bad_input(request: Request, exc: Exception) -> JSONResponse:
    """400: a tampered or foreign cursor, a value DynamoDB would refuse."""
    return _problem(400, "bad request", exc)


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


@app.put("/tenants/{tenant}/customers/{customer_id}")
async def replace(tenant: str, customer_id: str, body: CustomerFields, s: Db,
                  response: Response, if_match: Annotated[str, Header()]) -> Customer:
    customer = await s.get(Customer, tenant=tenant, customer_id=customer_id)
    if customer is None:
        raise HTTPException(404, f"customer {customer_id} does not exist")
    customer.version = int(if_match.strip('W/"'))  # the client's expected version
    customer.name, customer.email = body.name, body.email
    s.save(customer)
    await s.commit()  # ConcurrentModificationError -> 412
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
