"""An AWS Lambda handler on dynaorm (API Gateway HTTP API events, payload 2.0).

Everything that costs time is made once per execution environment, at import (the cold
start) or on the first request, and reused by every later invocation: the ``Client``
(credentials, connections), the table binding, the entity classes. A handler builds only a
session per invocation. Where Lambda sets ``_X_AMZN_TRACE_ID`` (active tracing), requests
carry it as ``X-Amzn-Trace-Id``; with ``dynaorm[otel]`` and a tracer provider each
operation is a span (guide "Tracing and monitoring").

Run as a script, it invokes ``handler`` with sample events (on an in-process moto, or
``--endpoint-url`` / ``AWS_ENDPOINT_URL_DYNAMODB``) and prints each answer.
Guide: docs/guide/web-services.md.
"""

from __future__ import annotations

import json
import time
from typing import Any

from _support import run
from pydantic import Field, ValidationError

from dynaorm import (
    Client,
    ConflictError,
    Entity,
    ItemNotFoundError,
    KeyTemplateError,
    Session,
    Table,
    UniqueConstraintError,
    ksuid,
)

# -- made once per execution environment (the cold start) -----------------------------------
COLD_START = time.monotonic()
db = Client()  # from the environment (region, credentials); connects on first use
table = Table("dynaorm-example-lambda", client=db)
invocations = 0


class Order(Entity):
    class Meta:
        table = table
        pk = "CUSTOMER#{customer_id}"
        sk = "ORDER#{order_id}"

    customer_id: str
    order_id: str = Field(default_factory=ksuid)
    item: str
    quantity: int = Field(default=1, ge=1)


def _answer(status: int, body: Any) -> dict[str, Any]:
    return {"statusCode": status, "headers": {"content-type": "application/json"},
            "body": json.dumps(body, default=str)}


def _route(event: dict[str, Any], s: Session) -> dict[str, Any]:
    method = event["requestContext"]["http"]["method"]
    params = event.get("pathParameters") or {}
    customer = params["customer_id"]
    if method == "POST":
        order = Order(customer_id=customer, **json.loads(event.get("body") or "{}"))
        s.save(order)
        s.commit()
        return _answer(201, order.model_dump())
    if method == "GET" and "order_id" in params:
        found = s.get(Order, customer_id=customer, order_id=params["order_id"])
        return _answer(404, {"title": "not found"}) if found is None else _answer(
            200, found.model_dump())
    if method == "GET":
        cursor = (event.get("queryStringParameters") or {}).get("cursor")
        page = s.query(Order, customer_id=customer).page_size(2).page(cursor)
        return _answer(200, {"items": [o.model_dump() for o in page.items],
                             "cursor": page.cursor})
    if method == "DELETE":
        s.delete(Order, customer_id=customer, order_id=params["order_id"])
        s.commit()
        return _answer(204, None)
    return _answer(405, {"title": "method not allowed"})


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    """The Lambda entry point: one session per invocation, errors as HTTP statuses."""
    global invocations
    invocations += 1
    try:
        return _route(event, Session(table))
    except ItemNotFoundError as exc:
        return _answer(404, {"title": "not found", "key": exc.key_values})
    except (UniqueConstraintError, ConflictError) as exc:
        return _answer(409, {"title": "conflict", "detail": str(exc)})
    except KeyTemplateError as exc:
        return _answer(400, {"title": f"invalid {exc.field or 'key'}"})
    except ValidationError as exc:
        return _answer(400, {"title": "invalid body", "errors": exc.error_count()})


# -- sample events ----------------------------------------------------------------------------
def event(method: str, path: dict[str, str], body: Any = None,
          query: dict[str, str] | None = None) -> dict[str, Any]:
    """An API Gateway HTTP API (payload 2.0) event, reduced to what the handler reads."""
    return {"version": "2.0", "routeKey": f"{method} /customers",
            "requestContext": {"http": {"method": method, "path": "/customers"}},
            "pathParameters": path, "queryStringParameters": query,
            "body": None if body is None else json.dumps(body), "isBase64Encoded": False}


def show(code: str, answer: dict[str, Any], *fields: str) -> dict[str, Any]:
    body = json.loads(answer["body"]) or {}
    shown = " ".join(f"{f}={body.get(f)!r}" for f in fields)
    print(f"\n>>> {code}")
    print(f"    {answer['statusCode']} {shown}".rstrip())
    return dict(body)


def main() -> None:
    """Invoke the handler as Lambda would, several times in one environment."""
    client_before = table.db
    first = show("POST an order", handler(event("POST", {"customer_id": "c1"},
                                                {"item": "book", "quantity": 2}), None),
                 "item", "quantity")
    for item in ("pen", "ink"):
        handler(event("POST", {"customer_id": "c1"}, {"item": item}), None)
    show("GET the order", handler(event("GET", {"customer_id": "c1",
                                                "order_id": first["order_id"]}), None),
         "item")
    page = show("GET page 1", handler(event("GET", {"customer_id": "c1"}), None))
    print(f"    {len(page['items'])} items, cursor {'set' if page['cursor'] else None}")
    more = show("GET page 2", handler(event("GET", {"customer_id": "c1"},
                                            query={"cursor": page["cursor"]}), None))
    print(f"    {len(more['items'])} items, cursor {more['cursor']}")
    show("POST quantity 0", handler(event("POST", {"customer_id": "c1"},
                                          {"item": "x", "quantity": 0}), None), "title")
    show("GET order id holding '#'", handler(event("GET", {"customer_id": "c1",
                                                           "order_id": "a#b"}), None),
         "title")
    show("DELETE a missing order", handler(event("DELETE", {"customer_id": "c1",
                                                            "order_id": "nope"}), None),
         "title", "key")
    print(f"\n>>> {invocations} invocations, one client")
    print(f"    same client: {table.db is client_before}")


if __name__ == "__main__":
    with run(table, "An AWS Lambda handler on dynaorm"):
        main()
