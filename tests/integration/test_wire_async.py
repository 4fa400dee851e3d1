"""The async wire (:class:`dynaorm.wire.AsyncWire`, a client's ``wire="dynaorm"``)
against aiobotocore (``wire="botocore"``) on DynamoDB Local and dynoxide: the same requests
get the same answers and the same errors (a conditional failure with its item, transaction
cancellation reasons, paged queries, a batch get with unprocessed keys, scans); a crc32
mismatch, a refused connection and a read timeout fail as they must; the connections close
with the client (``aclose``); one client's wire serves its sync and async sessions.
"""

from __future__ import annotations

import asyncio
import gc
import socket
import warnings
import zlib
from collections.abc import Awaitable, Callable, Iterator
from typing import Any, TypeVar

import aiohttp
import aiohttp.web
import botocore.config
import botocore.session
import pytest
from botocore.credentials import Credentials
from botocore.exceptions import ChecksumError

from dynaorm import (
    AnswerLostError,
    AsyncSession,
    Attempt,
    BadAnswerError,
    Client,
    DynaormError,
    Hook,
    RequestError,
    RequestNotSentError,
    Session,
    Table,
)
from dynaorm.aio import close
from dynaorm.client.botocore import botocore_error
from dynaorm.testing import TestBackend, moto_backend, use_tables, worker_suffix
from dynaorm.wire import AsyncWire
from dynaorm.wire.endpoint import client_endpoint
from tests.support.concurrency import arun
from tests.support.hostile import certificate
from tests.support.loaders import shared_loaders
from tests.support.models import Note, User, app

pytestmark = [pytest.mark.sync_only,  # each test drives both async wires itself
              pytest.mark.engines("moto", "local", "dynoxide")]

R = TypeVar("R")
WIRES = ("botocore", "dynaorm")


@pytest.fixture(scope="module", autouse=True)
def _parsed_once() -> Iterator[None]:
    """The module's botocore and aiobotocore sessions share the parsed models
    (``shared_loaders``: each session still new)."""
    with shared_loaders():
        yield


@pytest.fixture(params=["local", "dynoxide"])
def engine(request: pytest.FixtureRequest) -> Iterator[TestBackend]:
    """The suite's table, fresh, on DynamoDB Local and on dynoxide (skipped when absent)."""
    endpoint = request.getfixturevalue("ddb_local" if request.param == "local" else
                                       "dynoxide")
    with use_tables(app, endpoint_url=endpoint, name_suffix=worker_suffix()) as tb:
        yield tb


def on(wire: str) -> Client:
    """The table's client, sending through ``wire`` (the table is bound to it)."""
    app.wire = wire
    return app.db


def strip(answer: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in answer.items() if k != "ResponseMetadata"}


async def both(call: Callable[[Client], Awaitable[R]]) -> list[R]:
    """``call`` through each wire in turn; asserts the dynaorm wire really sent."""
    out = []
    for wire in WIRES:
        client = on(wire)
        out.append(await call(client))
        assert (client.async_wire is not None) == (wire == "dynaorm")
        await close(app)
    return out


async def failure(transport: Client, operation: str,
                  request: dict[str, Any]) -> RequestError:
    with pytest.raises(RequestError) as info:
        await transport.asend(operation, request)
    return info.value


ITEM = {"pk": {"S": "WIRE#1"}, "sk": {"S": "A"}, "n": {"N": "12.5"},
        "b": {"B": b"\x00\xffbin"}, "bs": {"BS": [b"\x01", b"\x02\x03"]},
        "m": {"M": {"l": {"L": [{"S": "x"}, {"NULL": True}, {"BOOL": False}]},
                    "ss": {"SS": ["a", "b"]}, "ns": {"NS": ["1", "2.5"]}}}}


def test_raw_answers_are_the_same(engine: TestBackend) -> None:
    name = app.name
    key = {"pk": ITEM["pk"], "sk": ITEM["sk"]}

    async def main() -> None:
        await on("botocore").asend("PutItem", {"TableName": name, "Item": ITEM})

        async def reads(t: Client) -> list[dict[str, Any]]:
            got = await t.asend("GetItem", {"TableName": name, "Key": key,
                                           "ConsistentRead": True})
            put = await t.asend("PutItem", {"TableName": name, "Item": ITEM,
                                           "ReturnValues": "ALL_OLD"})
            missing = await t.asend("GetItem", {"TableName": name, "Key": {
                "pk": {"S": "WIRE#none"}, "sk": {"S": "A"}}})
            return [strip(got), strip(put), strip(missing)]

        a, b = await both(reads)
        assert a == b
        assert a[0]["Item"] == ITEM  # binary values come back as bytes
        assert a[2] == {}

        async def conditional(t: Client) -> RequestError:
            return await failure(t, "PutItem", {
                "TableName": name, "Item": ITEM,
                "ConditionExpression": "attribute_not_exists(pk)",
                "ReturnValuesOnConditionCheckFailure": "ALL_OLD"})

        x, y = await both(conditional)
        assert (x.code, x.item, x.maybe_applied) == (y.code, y.item, y.maybe_applied)
        assert x.code == "ConditionalCheckFailedException" and x.item == ITEM

        async def cancelled(t: Client) -> RequestError:
            return await failure(t, "TransactWriteItems", {"TransactItems": [
                {"Put": {"TableName": name, "Item": {**ITEM, "sk": {"S": "B"}}}},
                {"Put": {"TableName": name, "Item": ITEM,
                         "ConditionExpression": "attribute_not_exists(pk)",
                         "ReturnValuesOnConditionCheckFailure": "ALL_OLD"}}]})

        x, y = await both(cancelled)
        assert x.code == y.code == "TransactionCanceledException"
        assert x.reasons == y.reasons
        assert x.reasons[0] is None and x.reasons[1] is not None
        assert x.reasons[1].code == "ConditionalCheckFailed"

        async def missing_table(t: Client) -> RequestError:
            return await failure(t, "GetItem", {"TableName": name + "-absent", "Key": key})

        x, y = await both(missing_table)
        assert type(x) is type(y) and x.code == y.code == "ResourceNotFoundException"

    arun(main())


def test_sessions_read_and_write_the_same(engine: TestBackend) -> None:
    async def run(t: Client) -> tuple[Any, ...]:
        suffix = t.wire
        s = AsyncSession(app)
        await s.save_many([Note(note_id=f"{suffix}-{i:04}", body=f"body {i}")
                           for i in range(60)])
        s.save(User(user_id=f"u-{suffix}", username=f"ann-{suffix}",
                    email=f"ann-{suffix}@example.com"))
        await s.commit()
        again = AsyncSession(app)
        again.save(User(user_id=f"u2-{suffix}", username=f"ann-{suffix}",
                          email=f"other-{suffix}@example.com"))
        with pytest.raises(DynaormError) as taken:  # the unique guard cancels the commit
            await again.commit()
        got = await s.get(Note, note_id=f"{suffix}-0007")
        user = await s.get(User, user_id=f"u-{suffix}")
        keys = [{"note_id": f"{suffix}-{i:04}"} for i in range(0, 70, 3)]
        many = await s.get_many(Note, keys)
        notes = [n async for n in s.scan(Note) if n.note_id.startswith(suffix)]
        return (type(taken.value).__name__, got and got.body, user and user.username,
                [n and n.body for n in many], sorted(n.body for n in notes))

    async def main() -> None:
        a, b = await both(run)
        assert a[0] == b[0] and a[1:] == (a[1], "ann-botocore", *a[3:])
        assert b[1:] == (b[1], "ann-dynaorm", *a[3:])
        assert a[1] == "body 7" and len(a[4]) == 60 and a[3][-1] is None

    arun(main())


def test_query_pages_are_the_same(engine: TestBackend) -> None:
    name = app.name
    items = [{"pk": {"S": "WIRE#Q"}, "sk": {"S": f"{i:04}"}, "v": {"N": str(i)},
              "pad": {"S": "x" * 500}} for i in range(120)]

    async def main() -> None:
        for i in range(0, 120, 25):
            await on("botocore").asend("BatchWriteItem", {"RequestItems": {name: [
                {"PutRequest": {"Item": it}} for it in items[i:i + 25]]}})

        async def pages(t: Client) -> list[dict[str, Any]]:
            out, start = [], None
            while True:
                request: dict[str, Any] = {
                    "TableName": name, "KeyConditionExpression": "pk = :p",
                    "ExpressionAttributeValues": {":p": {"S": "WIRE#Q"}}, "Limit": 25}
                if start:
                    request["ExclusiveStartKey"] = start
                page = strip(await t.asend("Query", request))
                out.append(page)
                start = page.get("LastEvaluatedKey")
                if not start:
                    return out

        a, b = await both(pages)
        assert a == b
        assert [it for p in a for it in p["Items"]] == items

    arun(main())


class Unprocess(Hook):
    """A hook that answers the first BatchGetItem with half its items moved back into
    ``UnprocessedKeys`` (as DynamoDB does over its size limit)."""

    def __init__(self) -> None:
        self.batches = 0

    def on_end(self, phase: Any, token: Any) -> object:
        if not isinstance(phase, Attempt) or phase.operation != "BatchGetItem":
            return None
        answer = phase.response
        self.batches += 1
        if self.batches > 1 or answer is None:
            return None
        [(table, found)] = answer["Responses"].items()
        keys = phase.request["RequestItems"][table]
        moved = found[len(found) // 2:]
        answer["Responses"][table] = found[:len(found) // 2]
        answer["UnprocessedKeys"] = {table: {**keys, "Keys": [
            {"pk": it["pk"], "sk": it["sk"]} for it in moved]}}
        return None


def test_batch_get_with_unprocessed_keys(engine: TestBackend) -> None:
    Session(app).save_many([Note(note_id=f"u{i:03}", body=f"body {i}") for i in range(30)])
    keys = [{"note_id": f"u{i:03}"} for i in range(32)]

    async def run(t: Client) -> tuple[list[str | None], int]:
        hook = Unprocess()
        t.add_hook(hook)
        try:
            got = await AsyncSession(app).get_many(Note, keys)
        finally:
            t.remove_hook(hook)
        return [n and n.body for n in got], hook.batches

    async def main() -> None:
        a, b = await both(run)
        assert a == b
        assert a[0] == [f"body {i}" for i in range(30)] + [None, None]
        assert a[1] >= 2  # the unprocessed keys were asked again

    arun(main())


# -- failures of the wire itself ------------------------------------------------------

def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_connection_refused_maps_as_through_aiobotocore() -> None:
    table = Table("dynaorm-wire-refused", endpoint_url=f"http://127.0.0.1:{closed_port()}",
                  max_attempts=1)

    async def one(wire: str) -> RequestError:
        table.wire = wire
        transport = table.db
        try:
            return await failure(transport, "GetItem", {
                "TableName": table.name, "Key": {"pk": {"S": "a"}, "sk": {"S": "b"}}})
        finally:
            await close(table)

    async def main() -> None:
        x = await one("botocore")
        y = await one("dynaorm")
        assert (type(x), x.code, x.maybe_applied) == (type(y), y.code, y.maybe_applied)
        assert y.code == "ConnectionError" and not y.maybe_applied
        assert table.db.transport.botocore is False

    arun(main())


Handler = Callable[[aiohttp.web.Request], Awaitable[aiohttp.web.StreamResponse]]


async def serve(handler: Handler) -> tuple[aiohttp.web.AppRunner, str]:
    web = aiohttp.web.Application()
    web.router.add_route("*", "/{tail:.*}", handler)
    runner = aiohttp.web.AppRunner(web)
    await runner.setup()
    site = aiohttp.web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    return runner, f"http://127.0.0.1:{port}"


def client_for(endpoint: str, verify: bool | str | None = None, **config: Any) -> Any:
    return botocore.session.get_session().create_client(
        "dynamodb", endpoint_url=endpoint, region_name="us-east-1", verify=verify,
        aws_access_key_id="k", aws_secret_access_key="s",
        config=botocore.config.Config(**config))


CREDS = Credentials("AKIDWIRE", "secret")


def _bare(answer: dict[str, Any]) -> dict[str, Any]:
    """An answer without its ``ResponseMetadata``."""
    return {k: v for k, v in answer.items() if k != "ResponseMetadata"}


def test_crc32_mismatch_raises() -> None:
    body = b'{"Item":{"pk":{"S":"a"}}}'
    answers = [zlib.crc32(body), zlib.crc32(body) ^ 1]  # right, then wrong

    async def handler(request: aiohttp.web.Request) -> aiohttp.web.Response:
        return aiohttp.web.Response(body=body, headers={"x-amz-crc32": str(answers.pop(0))},
                                    content_type="application/x-amz-json-1.0")

    async def main() -> None:
        runner, url = await serve(handler)
        try:
            async with AsyncWire(client_endpoint(client_for(url), CREDS)) as wire:
                assert _bare(await wire.send("GetItem", {"TableName": "t"})) == {
                    "Item": {"pk": {"S": "a"}}}
                with pytest.raises(RequestError) as info:
                    await wire.send("GetItem", {"TableName": "t"})
                # as on the sync wire and botocore's: an answer not to be trusted (retried)
                mapped = info.value
                assert isinstance(mapped, BadAnswerError) and mapped.maybe_applied
                assert isinstance(botocore_error("GetItem", {}, ChecksumError(
                    checksum_type="crc32", expected_checksum="1", actual_checksum="2")),
                    BadAnswerError)
        finally:
            await runner.cleanup()

    asyncio.run(main())


def test_read_timeout_from_the_config_is_a_lost_answer() -> None:
    async def handler(request: aiohttp.web.Request) -> aiohttp.web.Response:
        await asyncio.sleep(2)
        return aiohttp.web.Response(body=b"{}")  # pragma: no cover (timed out first)

    async def main() -> None:
        runner, url = await serve(handler)
        try:
            endpoint = client_endpoint(client_for(url, read_timeout=0.3), CREDS)
            async with AsyncWire(endpoint) as wire:
                assert wire.endpoint.read_timeout == 0.3
                with pytest.raises(AnswerLostError):
                    await wire.send("GetItem", {"TableName": "t"})
        finally:
            await runner.cleanup()

    asyncio.run(main())


def test_credentials_are_frozen_per_request() -> None:
    seen: list[str] = []

    async def handler(request: aiohttp.web.Request) -> aiohttp.web.Response:
        seen.append(request.headers["Authorization"].split("Credential=")[1].split("/")[0])
        return aiohttp.web.Response(body=b"{}")

    class Rotating(Credentials):
        def __init__(self) -> None:
            super().__init__("AKID0", "secret")
            self.calls = 0

        def get_frozen_credentials(self) -> Any:
            self.calls += 1
            self.access_key = f"AKID{self.calls}"
            return super().get_frozen_credentials()

    async def main() -> None:
        runner, url = await serve(handler)
        try:
            async with AsyncWire(client_endpoint(client_for(url), Rotating())) as wire:
                await wire.send("GetItem", {"TableName": "t"})
                await wire.send("GetItem", {"TableName": "t"})
        finally:
            await runner.cleanup()

    asyncio.run(main())
    assert seen == ["AKID1", "AKID2"]


def test_no_credentials_is_botocores_error() -> None:
    async def main() -> None:
        async with AsyncWire(client_endpoint(client_for("http://127.0.0.1:9"), None)) as wire:
            with pytest.raises(RequestError) as info:
                await wire.send("GetItem", {"TableName": "t"})
            assert info.value.code == "NoCredentialsError" and not info.value.maybe_applied

    asyncio.run(main())


def test_requests_go_through_the_configured_proxy() -> None:
    seen: list[str] = []

    async def proxy(request: aiohttp.web.Request) -> aiohttp.web.Response:
        seen.append(str(request.url))  # the absolute URL a proxy is asked for
        return aiohttp.web.Response(body=b"{}")

    async def main() -> None:
        runner, url = await serve(proxy)
        try:
            # the endpoint does not resolve: only the proxy can answer
            client = client_for("http://dynamodb.invalid:8000", proxies={"http": url})
            async with AsyncWire(client_endpoint(client, CREDS)) as wire:
                assert wire.endpoint.proxy == url
                assert _bare(await wire.send("GetItem", {"TableName": "t"})) == {}
        finally:
            await runner.cleanup()

    asyncio.run(main())
    assert seen and seen[0].startswith("http://dynamodb.invalid:8000")


@pytest.fixture(scope="module")
def tls_cert(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    """A self-signed certificate for 127.0.0.1 and its key."""
    return certificate(tmp_path_factory)


def test_tls_is_verified_as_the_client_says(tls_cert: tuple[str, str]) -> None:
    import ssl

    cert, key = tls_cert

    async def ok(request: aiohttp.web.Request) -> aiohttp.web.Response:
        return aiohttp.web.Response(body=b"{}")

    async def main() -> None:
        web = aiohttp.web.Application()
        web.router.add_post("/", ok)
        runner = aiohttp.web.AppRunner(web)
        await runner.setup()
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(cert, key)
        site = aiohttp.web.TCPSite(runner, "127.0.0.1", 0, ssl_context=context)
        await site.start()
        url = f"https://127.0.0.1:{runner.addresses[0][1]}"
        try:
            for verify in (cert, False):  # the CA bundle given, or no verification
                endpoint = client_endpoint(client_for(url, verify=verify), CREDS)
                async with AsyncWire(endpoint) as wire:
                    assert _bare(await wire.send("GetItem", {"TableName": "t"})) == {}
            # botocore's bundle
            async with AsyncWire(client_endpoint(client_for(url), CREDS)) as wire:
                with pytest.raises(RequestNotSentError):
                    await wire.send("GetItem", {"TableName": "t"})
        finally:
            await runner.cleanup()

    asyncio.run(main())


# -- the session's life ---------------------------------------------------------------

def unclosed(caught: list[warnings.WarningMessage]) -> list[str]:
    return [str(w.message) for w in caught
            if issubclass(w.category, ResourceWarning) and "nclosed" in str(w.message)]


@pytest.mark.filterwarnings("error::ResourceWarning")
def test_close_closes_the_connections(ddb_local_engine: str) -> None:
    table = Table("dynaorm-wire-close", endpoint_url=ddb_local_engine, wire="dynaorm")

    async def main() -> AsyncWire:
        client = table.db
        await failure(client, "GetItem", {"TableName": table.name, "Key": {
            "pk": {"S": "a"}, "sk": {"S": "b"}}})  # no such table: a real round trip
        wire: AsyncWire = client.async_wire
        assert not wire.closed
        assert wire._direct is not None
        connections = list(wire._direct._idle)  # the keep-alive connection it used
        await close(table)
        assert wire.closed and client.async_wire is None
        assert connections and all(c.closed.done() and c.transport.is_closing()
                                   for c in connections)
        return wire

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        wire = asyncio.run(main())
        del wire
        gc.collect()
    assert unclosed(caught) == []


# -- choosing the wire ----------------------------------------------------------------

def test_one_client_one_wire_for_both_kinds_of_session() -> None:
    """The wire is the client's, for sync and async sessions alike (0.3's async transport
    borrowed the sync one's setting); a bad one is refused when the client is made."""
    assert Client("http://127.0.0.1:9").transport.botocore is False
    assert Client("http://127.0.0.1:9", wire="botocore").transport.botocore is True
    table = Table("dynaorm-wire-choice", endpoint_url="http://127.0.0.1:9")
    assert table.db.transport.botocore is False
    table.wire = "botocore"  # rebinds the table: both kinds of session follow
    assert table.db.transport.botocore is True
    with pytest.raises(DynaormError, match="wire must be one of"):
        Client(wire="http2")
    with pytest.raises(DynaormError, match="wire must be one of"):
        table.wire = "http2"


def test_in_process_moto_keeps_aiobotocore() -> None:
    with moto_backend():
        assert Client(wire="dynaorm").transport.botocore is True


@pytest.mark.parametrize("configured", [True, False], ids=["env-credentials", "none"])
def test_the_wire_signs_as_the_async_client(monkeypatch: pytest.MonkeyPatch,
                                            configured: bool) -> None:
    """The async wire's identity is the aiobotocore client's: configured credentials, else
    dynaorm's local ones for a loopback endpoint."""
    from dynaorm.client.settings import LOOPBACK_ACCESS_KEY

    for name in ("AWS_PROFILE", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY",
                 "AWS_SESSION_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent")
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent")
    if configured:
        monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDENV")
        monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "envsecret")
    seen: list[str] = []

    async def handler(request: aiohttp.web.Request) -> aiohttp.web.Response:
        seen.append(request.headers["Authorization"].split("Credential=")[1].split("/")[0])
        return aiohttp.web.Response(body=b"{}")

    async def main() -> str:
        runner, url = await serve(handler)
        table = Table("dynaorm-wire-identity", endpoint_url=url, wire="dynaorm")
        try:
            client = table.db
            await client.asend("GetItem", {"TableName": table.name})
            made = await client.aiobotocore()
            frozen = await made._request_signer._credentials.get_frozen_credentials()
            return str(frozen.access_key)
        finally:
            await close(table)
            await runner.cleanup()

    client_key = asyncio.run(main())
    assert seen == [client_key]
    assert client_key == ("AKIDENV" if configured else LOOPBACK_ACCESS_KEY)
