"""Every process model (contract 20, "Every process model"), each tried as an adversary
would: hooks and spans that report what the caller sees, whatever a read terminal does
with a page and whatever a hook sets; a client across ``os.fork()`` on both wires; over
many event loops (descriptors and loops counted); across class redefinition and reloads;
several ``Table`` objects of one table on one client."""

from __future__ import annotations

import asyncio
import datetime
import gc
import http.server
import os
import ssl
import subprocess
import sys
import threading
import warnings
import weakref
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dynaorm import (
    AsyncSession,
    Client,
    DynaormError,
    Entity,
    Hook,
    ItemDecodeError,
    Operation,
    RequestError,
    RequestNotSentError,
    Session,
    Table,
)
from dynaorm.testing import TestBackend, use_tables, worker_suffix
from tests.support.examples import examples
from tests.support.hostile import EmptyAnswers, certificate
from tests.support.models import Note, app
from tests.support.recording import send
from tests.support.spans import Spans


@pytest.fixture
def spans(db: TestBackend) -> Iterator[Spans]:
    found = Spans()
    found.attach()
    yield found
    app.db.tracing.tracer_provider = None
    found.provider.shutdown()


class Ends(Hook):
    """Writes down how every session operation ended: (name, error class or None)."""

    def __init__(self) -> None:
        self.ends: list[tuple[str, str | None]] = []

    def on_end(self, phase: Any, token: Any) -> object:
        if isinstance(phase, Operation):
            self.ends.append((phase.name, None if phase.error is None
                              else type(phase.error).__name__))
        return None


def _corrupt(db: TestBackend, note_id: str = "bad") -> None:
    """A stored Note whose ``tags`` is a number: it does not decode."""
    send(db.table, "PutItem", {"TableName": db.table.name, "Item": {
        "pk": {"S": f"NOTE#{note_id}"}, "sk": {"S": "NOTE"}, "_type": {"S": "Note"},
        "note_id": {"S": note_id}, "tags": {"N": "5"}}})


TERMINALS = {
    "all": lambda s: s.query(Note, note_id="bad").all(),
    "iteration": lambda s: [n for n in s.query(Note, note_id="bad")],
    "first": lambda s: s.query(Note, note_id="bad").first(),
    "one": lambda s: s.query(Note, note_id="bad").one(),
    "scan": lambda s: s.scan(Note).all(),
    "scan-iteration": lambda s: list(s.scan(Note).page_size(1)),
}


@pytest.mark.parametrize("terminal", sorted(TERMINALS))
def test_a_read_that_raises_is_never_reported_as_succeeded(
        db: TestBackend, terminal: str) -> None:
    db.session().save_many([Note(note_id="good")])
    _corrupt(db)
    hook = app.db.add_hook(Ends())
    with pytest.raises(ItemDecodeError):
        TERMINALS[terminal](db.session())
    name = "scan" if terminal.startswith("scan") else "query"
    assert hook.ends[-1] == (name, "ItemDecodeError"), hook.ends
    # the pages the caller did read are reported as they went: never the failing one
    assert all(end == (name, None) for end in hook.ends[:-1]), hook.ends


def test_a_failed_decode_is_a_failed_span(db: TestBackend, spans: Spans) -> None:
    _corrupt(db)
    with pytest.raises(ItemDecodeError):
        db.session().query(Note, note_id="bad").all()
    (op,) = spans.named("dynaorm.query")
    assert op.attributes is not None and op.attributes["dynaorm.outcome"] == "failed"
    assert not app.db.tracing._open


def test_a_read_stopped_early_is_reported_as_succeeded(db: TestBackend) -> None:
    db.session().save_many([Note(note_id=f"n{i}") for i in range(3)])
    hook = app.db.add_hook(Ends())
    assert db.session().scan(Note).first() is not None
    for note in db.session().scan(Note).page_size(1):
        assert note.note_id
        break
    assert hook.ends and all(error is None for _, error in hook.ends), hook.ends


class Setting(Hook):
    """Sets ``attempt.<name>`` to ``value`` at the start (or the end) of every attempt."""

    def __init__(self, name: str, value: object, at: str = "start") -> None:
        self.name, self.value, self.at = name, value, at

    def _set(self, phase: Any) -> None:
        if not isinstance(phase, Operation):
            setattr(phase, self.name, self.value)
            if self.name == "error":
                phase.response = None

    def on_start(self, phase: Any) -> object:
        if self.at == "start":
            self._set(phase)
        return None

    def on_end(self, phase: Any, token: Any) -> object:
        if self.at == "end":
            self._set(phase)
        return None


BAD_VALUES = [
    ("error", ValueError("boom"), "RequestError"),
    ("error", "throttled", "RequestError"),
    ("response", "junk", "str, not an object"),
    ("response", ["Item"], "list, not an object"),
    ("response", {"Item": "x"}, "str as Item"),
    ("response", {"Items": {"a": 1}}, "dict as Items"),
    ("response", {"Items": [1, 2]}, "entry of Items"),
    ("response", {"Count": "many"}, "str as Count"),
]


@pytest.mark.parametrize("at", ["start", "end"])
@pytest.mark.parametrize(("name", "value", "said"), BAD_VALUES)
def test_a_hook_s_value_of_the_wrong_kind_is_a_dynaorm_error_saying_so(
        db: TestBackend, name: str, value: object, said: str, at: str) -> None:
    db.session().save_many([Note(note_id="n1")])
    hook = app.db.add_hook(Setting(name, value, at))
    ends = app.db.add_hook(Ends())
    s = db.session()
    for read in (lambda: s.get(Note, note_id="n1"), lambda: s.query(Note, note_id="n1").all(),
                 lambda: s.scan(Note).all()):
        with pytest.raises(DynaormError, match=f"attempt.{name}.*{said}") as err:
            read()
        assert not isinstance(err.value, (AttributeError, TypeError))
        assert ends.ends[-1][1] == "DynaormError"
    app.db.remove_hook(hook)
    app.db.remove_hook(ends)
    assert s.get(Note, note_id="n1") is not None  # nothing left behind


def test_a_hook_s_request_error_fails_the_attempt_as_any_failure(db: TestBackend) -> None:
    db.session().save_many([Note(note_id="n1")])
    hook = app.db.add_hook(Setting("error", RequestError("GetItem", "ValidationException",
                                                         "no")))
    with pytest.raises(RequestError, match="ValidationException"):
        db.session().get(Note, note_id="n1")
    app.db.remove_hook(hook)


# -- fork ---------------------------------------------------------------------------------
@pytest.mark.parametrize("wire", ["dynaorm", "botocore"])
def test_a_forked_child_never_shares_a_connection_with_its_parent(
        ddb_local: str, wire: str) -> None:
    """Parent and child read at once after the fork, each its own item, on the client the
    parent had pooled a keep-alive connection on: neither ever gets the other's answer,
    and the child does not close the parent's connection."""
    with use_tables(app, endpoint_url=ddb_local, name_suffix=worker_suffix(), wire=wire):
        with Session(app) as s:
            s.save(Note(note_id="parent", body="parent"))
            s.save(Note(note_id="child", body="child"))
        found = Session(app).get(Note, note_id="parent")  # a pooled connection now
        assert found is not None and found.body == "parent"
        pooled = _pooled(app.db)
        assert wire == "botocore" or pooled
        pid = os.fork()
        if pid == 0:  # pragma: no cover - (the child reports through its exit code)
            code = 3
            try:
                assert not _pooled(app.db)  # (nothing of the parent's to use)
                code = _misread(app.db, "child")
            finally:
                os._exit(code)
        misread = _misread(app.db, "parent")
        _, status = os.waitpid(pid, 0)
        assert (misread, os.waitstatus_to_exitcode(status)) == (0, 0)
        assert wire == "botocore" or _pooled(app.db) & pooled  # the same socket, open


def test_a_forked_child_meters_its_own_capacity(ddb_local: str) -> None:
    """``client.capacity()`` in a child of ``os.fork()`` counts what the child consumed,
    from 0, even when a thread of the parent held the meter's lock at the fork."""
    with use_tables(app, endpoint_url=ddb_local, name_suffix=worker_suffix()):
        app.db.capacity(reset=True)  # (the client is shared: earlier tests consumed too)
        with Session(app) as s:
            s.save(Note(note_id="parent", body="p" * 1500))
        assert app.db.capacity() == {"Note": {"row": 2.0}}
        meter = app.db._meter
        held, release = threading.Event(), threading.Event()

        def hold() -> None:
            with meter._lock:
                held.set()
                release.wait(10)

        holder = threading.Thread(target=hold)
        holder.start()
        held.wait(10)
        pid = os.fork()
        if pid == 0:  # pragma: no cover - (the child reports through its exit code)
            code = 3
            try:
                with Session(app) as s:
                    s.save(Note(note_id="child", body="c"))
                code = 0 if app.db.capacity() == {"Note": {"row": 1.0}} else 4
            finally:
                os._exit(code)
        release.set()
        holder.join()
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
        assert app.db.capacity(reset=True) == {"Note": {"row": 2.0}}  # the parent's own


def _pooled(client: Client) -> set[int]:
    """The descriptors of the own wire's idle sync connections."""
    wire = client.sync_wire
    return set() if wire is None else {c.sock.fileno() for c in wire._direct._idle}


def _misread(client: Client, note_id: str) -> int:
    """How many of 300 gets of ``note_id`` answered another item (a failure raises)."""
    session = Session(client)
    misread = 0
    for _ in range(300):
        found = session.get(Note, note_id=note_id)
        misread += found is None or found.body != note_id
    return misread


# -- event loops ----------------------------------------------------------------------------
def _fds() -> int:
    return len(os.listdir("/proc/self/fd"))


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="counts /proc/self/fd")
@pytest.mark.parametrize("wire", ["dynaorm", "botocore"])
def test_nothing_of_an_ended_event_loop_is_kept(ddb_local_engine: str, wire: str) -> None:
    """100 ``asyncio.run()`` (an async Lambda handler's life, a test suite's), each reading
    through one client: no descriptor, loop or connection of an ended loop is kept."""
    runs = 100 if wire == "dynaorm" else 25  # (an aiobotocore client per loop: slower)
    with use_tables(app, endpoint_url=ddb_local_engine, name_suffix=worker_suffix(), wire=wire):
        Session(app).save_many([Note(note_id="n1")])

        async def read() -> Note | None:
            return await AsyncSession(app).get(Note, note_id="n1")

        asyncio.run(read())  # (imports, credentials: what stays for the process)
        gc.collect()
        before = _fds()
        loops = []
        for _ in range(runs):
            with asyncio.Runner() as runner:
                assert runner.run(read()) is not None
                loops.append(weakref.ref(runner.get_loop()))
        gc.collect()
        assert (_fds(), sum(ref() is not None for ref in loops)) == (before, 0)
        assert (len(app.db._transport._loops), len(app.db._boto._loops)) == (0, 0)  # type: ignore[union-attr]


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="counts /proc/self/fd")
def test_a_loop_closed_without_ending_its_generators_is_let_go(ddb_local_engine: str) -> None:
    """Loops closed by hand (``loop.close()`` without ``shutdown_asyncgens``): each is let
    go, with its connections, at the next loop's first request."""
    with use_tables(app, endpoint_url=ddb_local_engine, name_suffix=worker_suffix()):
        Session(app).save_many([Note(note_id="n1")])
        asyncio.run(AsyncSession(app).get(Note, note_id="n1"))
        gc.collect()
        before = _fds()
        loops = []
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ResourceWarning)  # (collected, not closed)
            for _ in range(20):
                loop = asyncio.new_event_loop()
                assert loop.run_until_complete(AsyncSession(app).get(Note, note_id="n1"))
                loop.close()
                loops.append(weakref.ref(loop))
                del loop
            gc.collect()
        assert sum(ref() is not None for ref in loops) <= 1  # the last, until a next loop
        assert _fds() <= before + 1  # (its connection)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ResourceWarning)
            asyncio.run(AsyncSession(app).get(Note, note_id="n1"))
            gc.collect()
        assert (sum(ref() is not None for ref in loops), _fds()) == (0, before)


def test_an_async_session_on_the_own_wire_imports_no_aiobotocore(ddb_local: str) -> None:
    script = f"""
import asyncio, sys
from dynaorm import AsyncSession, Client, Entity, Table
table = Table("dynaorm-noaio", client=Client({ddb_local!r}))
class Thing(Entity):
    class Meta:
        table = table
        pk = "T#{{tid}}"
        sk = "T"
    tid: str
async def main():
    table.create(wait=10) if not table.exists() else None
    s = AsyncSession(table)
    s.save(Thing(tid="1"))
    await s.commit()
    assert (await AsyncSession(table).get(Thing, tid="1")) is not None
    table.delete(wait=10)
asyncio.run(main())
print(sorted(m for m in sys.modules if m.split(".")[0] in ("aiobotocore", "aiohttp")))
"""
    env = {**os.environ, "AWS_ACCESS_KEY_ID": "x", "AWS_SECRET_ACCESS_KEY": "x",
           "AWS_REGION": "us-east-1"}
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         env=env, check=True, timeout=120)
    assert out.stdout.strip() == "[]", out.stderr


# -- redefinition, reloads, several Table objects -----------------------------------------
def _define(table: Table, type_name: str, field: str = "body") -> type[Entity]:
    """The class ``Reloaded`` of this module, as a notebook cell or a reload defines it
    again (same module and name: a redefinition)."""
    cell = f"""
class Reloaded(Entity):
    class Meta:
        table = table
        pk = "R#{{rid}}"
        sk = "R"
        type_name = {type_name!r}

    rid: str
    {field}: str = ""
"""
    namespace: dict[str, Any] = {"Entity": Entity, "table": table, "__name__": __name__}
    exec(cell, namespace)  # (a notebook cell, run again)
    made: type[Entity] = namespace["Reloaded"]
    return made


def test_a_redefined_class_replaces_the_old_one_everywhere(ddb_local: str) -> None:
    table = Table("dynaorm-reloads" + worker_suffix(), client=Client(ddb_local))
    table.create()
    try:
        first = _define(table, "reloaded")
        with Session(table) as s:
            s.save(first(rid="1", body="old"))
        assert Session(table).query(first, rid="1").all()  # (its read caches filled)
        gone = weakref.ref(first)
        del first, s
        second = _define(table, "renamed")  # a new type name: the old one is not kept
        assert set(table.entities) == {"renamed"}
        page = Session(table).query(second, rid="1").page()
        assert (page.items, page.skipped) == ([], 1)  # the old items: counted, not hidden
        gc.collect()
        assert gone() is None  # no registry or cache keeps the replaced class
        third = _define(table, "reloaded", field="text")  # back to the stored name
        assert set(table.entities) == {"reloaded"}
        found = Session(table).query(third, rid="1").one()
        assert type(found) is third and found.rid == "1"
    finally:
        table.delete()


def test_several_table_objects_of_one_table_on_one_client_share_one_registry(
        ddb_local: str) -> None:
    client = Client(ddb_local)
    name = "dynaorm-two-objects" + worker_suffix()
    first, second = Table(name, client=client), Table(name, client=client)

    class User(Entity):  # a first module's
        class Meta:
            table = first
            pk = "U#{uid}"
            sk = "U"

        uid: str

    assert second.entities == {"User": User}
    cell = """
class User(Entity):
    class Meta:
        table = second
        pk = "USER#{uid}"
        sk = "USER"

    uid: str
"""
    with pytest.raises(DynaormError, match="type name 'User' is taken"):  # another module's
        exec(cell, {"Entity": Entity, "second": second, "__name__": "elsewhere"})

    other = Table(name, client=Client(ddb_local))  # another client: its own registry
    assert other.entities == {}
    late = Table(name)  # bound later (on first use) to the same client: shares it then
    late._given = late._client = None

    class Account(Entity):
        class Meta:
            table = late
            pk = "A#{aid}"
            sk = "A"

        aid: str

    late._attach(client)
    assert set(first.entities) == {"User", "Account"} and late.entities is first.entities
    late._share(None)  # it leaves the client: takes its classes with it
    assert set(first.entities) == {"User"} and set(late.entities) == {"Account"}


# -- TLS: Client(verify=...) ------------------------------------------------------------------
@pytest.fixture(scope="module")
def tls_endpoint(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    """An HTTPS endpoint with a self-signed certificate, and that certificate's path."""
    cert, key = certificate(tmp_path_factory)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), EmptyAnswers)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"https://127.0.0.1:{server.server_address[1]}", cert
    server.shutdown()
    server.server_close()


GET = {"TableName": "t", "Key": {"pk": {"S": "a"}, "sk": {"S": "b"}}}


@pytest.mark.filterwarnings("ignore:Unverified HTTPS request")
@pytest.mark.parametrize("wire", ["dynaorm", "botocore"])
def test_verify_false_or_a_ca_bundle_per_client(tls_endpoint: tuple[str, str], wire: str,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in (("AWS_ACCESS_KEY_ID", "x"), ("AWS_SECRET_ACCESS_KEY", "x")):
        monkeypatch.setenv(name, value)
    url, cert = tls_endpoint
    with pytest.raises(RequestNotSentError, match=r"(?i)certificate"):
        Client(url, "us-east-1", wire=wire).send("GetItem", GET)  # self-signed: refused
    for verify in (False, cert):
        client = Client(url, "us-east-1", wire=wire, verify=verify)
        assert strip(client.send("GetItem", GET)) == {}

        async def both_sides(client: Client = client) -> dict[str, Any]:
            try:
                return await client.asend("GetItem", GET)
            finally:
                await client.aclose()

        assert strip(asyncio.run(both_sides())) == {}
    assert Client(url, "us-east-1", wire=wire, verify=True).verify is True


@pytest.mark.parametrize("verify", [0, 1.5, "", b"/ca.pem", ["x"]])
def test_verify_of_another_kind_is_refused(verify: Any) -> None:
    with pytest.raises(DynaormError, match="verify must be False, True, None or the path"):
        Client(verify=verify)


def strip(answer: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in answer.items() if k != "ResponseMetadata"}


# -- one shape for event data -------------------------------------------------------------------
def test_describe_table_answers_in_one_shape_on_both_wires(ddb_local: str) -> None:
    shapes = []
    for wire in ("dynaorm", "botocore"):
        table = Table("dynaorm-shape" + worker_suffix(), client=Client(ddb_local, wire=wire))
        seen: list[Any] = []
        table.db.on_request(seen.append)
        table.create()
        try:
            table.exists()
        finally:
            table.delete()
        described = [e.response for e in seen if e.operation == "DescribeTable" and e.response]
        created = described[0]["Table"]["CreationDateTime"]
        assert isinstance(created, datetime.datetime) and created.tzinfo is not None
        shapes.append({k: type(v) for k, v in described[0]["Table"].items()})
    assert shapes[0] == shapes[1]


@pytest.mark.filterwarnings("error::ResourceWarning")
@pytest.mark.parametrize("wire", ["dynaorm", "botocore"])
def test_a_client_let_go_mid_loop_has_its_connections_closed_with_the_loop(
        ddb_local_engine: str, wire: str) -> None:
    """A client collected while its loop still runs (a table rebound, a client made per
    request): its connections close when the loop ends, and nothing warns."""
    async def main() -> None:
        client = Client(ddb_local_engine, wire=wire)
        await client.asend("ListTables", {})
        del client
        gc.collect()
        await asyncio.sleep(0)

    with warnings.catch_warnings():  # (what earlier tests let go: not this test's)
        warnings.simplefilter("ignore", ResourceWarning)
        gc.collect()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(3):
            asyncio.run(main())
        gc.collect()
    assert [str(w.message) for w in caught if issubclass(w.category, ResourceWarning)] == []


# -- the docs' idioms under the pytest fixtures --------------------------------------------
def test_the_readme_session_of_a_client_works_under_the_fixtures(ddb_local: str) -> None:
    """README: ``db = Client(...)``, tables given ``client=db``, ``Session(db)`` commits
    across them. A fixture pointing the tables at a test endpoint (``use_tables``) points
    the session too (was: every read and write refused, "bind both tables to one
    Client")."""
    db = Client(region="eu-west-1", max_attempts=3)
    app_table = Table("dynaorm-readme-app" + worker_suffix(), client=db)
    audit = Table("dynaorm-readme-audit" + worker_suffix(), pk="stream", sk="seq",
                  type_attribute=None, key_types={"seq": "N"}, client=db)

    class Order(Entity):
        class Meta:
            table = app_table
            pk = "ORDER#{order_id}"
            sk = "ORDER"

        order_id: str

    class AuditRow(Entity):
        class Meta:
            table = audit
            pk = "{stream}"
            sk = "{seq}"

        stream: str
        seq: int
        what: str = ""

    with use_tables(app_table, audit, endpoint_url=ddb_local):
        with Session(db) as s:
            s.save(Order(order_id="o1"))
            s.save(AuditRow(stream="orders", seq=42, what="order placed"))
        assert Session(db).get(Order, order_id="o1") is not None
        assert Session(db).get(AuditRow, stream="orders", seq=42) is not None
        assert db._transport is None  # (nothing went to the client's own endpoint)


AGENT = """
import importlib.abc, importlib.util, sys
class Agent(importlib.abc.MetaPathFinder):  # ddtrace's way: configure OpenTelemetry's
    def find_spec(self, name, path, target=None):  # provider when its API is imported
        if name != "opentelemetry.trace":
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        run = spec.loader.exec_module
        def exec_module(module):
            run(module)
            from opentelemetry.sdk.trace import TracerProvider
            module.set_tracer_provider(TracerProvider())
        spec.loader.exec_module = exec_module
        return spec
sys.meta_path.insert(0, Agent())
from dynaorm import Client
client = Client("http://127.0.0.1:9")
assert "opentelemetry.trace" not in sys.modules
print(client.tracing.active(), "opentelemetry.trace" in sys.modules)
"""


@pytest.mark.parametrize(("variable", "found"), [
    ("DD_TRACE_OTEL_ENABLED=true", "True True"),
    ("OTEL_PYTHON_TRACER_PROVIDER=sdk_tracer_provider", "True True"),
    ("DD_TRACE_OTEL_ENABLED=false", "False False")])
def test_an_agent_s_provider_is_found_without_the_app_importing_opentelemetry(
        variable: str, found: str) -> None:
    """The tracing guide's Datadog path, "nothing to write": an agent (ddtrace under
    ``DD_TRACE_OTEL_ENABLED``) sets OpenTelemetry's provider when its API is imported.
    An application that never imports it still gets spans: the first operation imports
    it. Without such an agent, OpenTelemetry is never imported."""
    name, value = variable.split("=")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "DD_"))}
    out = subprocess.run([sys.executable, "-c", AGENT], capture_output=True, text=True,
                         env={**env, name: value}, check=True, timeout=60)
    assert out.stdout.strip() == found, out.stderr


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5)
    | st.sampled_from(["1", "x", "S", "N", "NOTE#n1", "NOTE", "Note"]),
    lambda inner: st.lists(inner, max_size=3)
    | st.dictionaries(st.sampled_from(["S", "N", "L", "M", "pk", "sk", "_type", "note_id",
                                       "tags", "body", "x"]), inner, max_size=3),
    max_leaves=12)
_ANSWERS = st.dictionaries(
    st.sampled_from(["Item", "Items", "Count", "ScannedCount", "ConsumedCapacity",
                     "Responses", "UnprocessedKeys", "Attributes"]),
    _JSON, max_size=3) | _JSON


@pytest.mark.sync_only
@settings(max_examples=examples(150), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(answer=_ANSWERS, read=st.sampled_from(["get", "query", "scan", "count", "first"]))
def test_a_hook_s_answer_of_any_shape_never_escapes_as_a_raw_error(
        backend: str | None, answer: Any, read: str) -> None:
    """Whatever JSON a hook answers with, a read returns or raises a DynaormError: never a
    raw TypeError, AttributeError, KeyError ... from deep inside. (No LastEvaluatedKey: a
    hook answering every page with one pages forever, as such a server would.)"""
    if backend is not None:
        pytest.skip("a hook answers: no backend is asked (moto's run suffices)")
    hook = app.db.add_hook(Setting("response", answer))
    s = Session(app)
    reads = {"get": lambda: s.get(Note, note_id="n1"),
             "query": lambda: s.query(Note, note_id="n1").all(),
             "scan": lambda: s.scan(Note).limit(3).all(),
             "count": lambda: s.scan(Note).count(),
             "first": lambda: s.query(Note, note_id="n1").first()}
    try:
        reads[read]()
    except DynaormError:
        pass
    finally:
        app.db.remove_hook(hook)
