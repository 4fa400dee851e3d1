"""Testing support and the pytest plugin (registered as ``pytest11``: installing is enough).

In a ``conftest.py``, one line gives every test an in-process DynamoDB (moto) with fresh
tables for your :class:`~dynaorm.Table` objects::

    from dynaorm.testing import tables_fixture
    from myapp.models import app

    db = tables_fixture(app)

    def test_signup(db):
        with db.session() as s:
            s.save(User(username="ada", email="ada@example.com"))
        assert len(db.scan()) == 3   # the user and its two guard items

Run the same tests against DynamoDB Local or another engine with
``pytest --dynaorm-endpoint http://localhost:8000`` (or ``DYNAORM_TEST_ENDPOINT``).
Under pytest-xdist every worker gets its own tables (their names end in ``-gw0``,
``-gw1``, ...), so workers never share or race on a table.

The embedded backend is moto behind dynaorm's own rules (:mod:`dynaorm.testing.emulation.emulator`):
it enforces what moto skips (``ClientRequestToken``, DynamoDB's size limits, atomic
transactions under threads), and under :func:`index_lag` (or ``pytest
--dynaorm-index-lag=SECONDS``) reads of global secondary indexes see the table as it was
that long ago, as on DynamoDB; :func:`fault_proxy` brings the lag to any local engine.

This module needs moto (``pip install "dynaorm[testing]"``) only for the in-process
backend, and pytest only for :func:`tables_fixture`; both are imported when used. The
plugin registered with pytest is the tiny :mod:`pytest_dynaorm`, which imports dynaorm
only when a test asks for one of its fixtures.
"""

import inspect
import os
import threading
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from typing import Any, cast

from dynaorm import (
    Attempt,
    Hook,
    Operation,
    RequestError,
    Session,
    Table,
    ThrottledError,
    ThrottlingReason,
)
from dynaorm.client.client import in_process_mock
from dynaorm.codec import decode_item
from dynaorm.keys import key_order, key_value
from dynaorm.rules import call
from dynaorm.testing.emulation.bulk import BULK_WRITES, bulk_pace, s3_factory
from dynaorm.testing.emulation.emulator import _WRITES as SIZED
from dynaorm.testing.emulation.emulator import EmbeddedTransport, Emulator, IndexLag, index_lag
from dynaorm.testing.emulation.exports import full_export, incremental_export
from dynaorm.testing.emulation.vectors import serve_vectors
from dynaorm.testing.engines import NotATestEngineError, check_test_engine
from dynaorm.testing.private_apis import (
    moto_attribute_values_direct,
    moto_botocore_only,
    moto_nested,
    moto_sizes_unchecked,
    moto_transactions_copy_once,
)
from dynaorm.testing.proxy import fault_proxy

__all__ = ["IndexLag", "NotATestEngineError", "TestBackend", "bulk_pace", "fault_proxy",
           "index_lag", "moto_backend", "moto_server", "tables_fixture", "use_tables",
           "worker_suffix"]
__all__ += ["FaultInjector", "inject_faults"]  # fault injection, at the end
__all__ += ["full_export", "incremental_export", "s3_factory"]  # exports to S3, made locally

Item = dict[str, dict[str, Any]]  # (an item as DynamoDB JSON)

#: What to install for the in-process backend and the pytest fixtures.
INSTALL_HINT = 'pip install "dynaorm[testing]"'

_EMBEDDED: list[Emulator] = []  # the emulator of the moto_backend blocks open now


@contextmanager
def moto_backend() -> Iterator[None]:
    """An in-process moto DynamoDB for the block's duration, installed as the transport of
    every client (those made before the block included) for tables without an endpoint:
    botocore's client, which moto answers, behind dynaorm's rules
    (:class:`~dynaorm.testing.emulation.emulator.EmbeddedTransport`: what moto skips, and
    :func:`index_lag`), with dummy credentials and, where none is configured, the region
    ``us-east-1`` (:func:`dynaorm.client.client.in_process_mock`). When the block ends,
    every client goes back to the transport it had. No environment variable is set
    (moto's own credential variables are switched off). Give your own clients
    ``**local_credentials(None)`` (:mod:`dynaorm.client.settings`) to reach it; a
    botocore client of your own reaches moto without dynaorm's rules.
    """
    try:
        from moto import mock_aws
    except ModuleNotFoundError as exc:  # the plain install: say what to install
        raise ModuleNotFoundError(f"the in-process DynamoDB needs moto: {INSTALL_HINT}",
                                  name=exc.name) from exc

    from moto.core.config import DefaultConfig, default_user_config

    core = {**default_user_config.get("core", {}), "mock_credentials": False}
    config: DefaultConfig | None = cast(DefaultConfig, {"core": core})
    if moto_nested():  # inside the caller's own mock_aws: keep its
        config = None  # settings (moto restores them when that block ends)
    serve_vectors()
    moto_transactions_copy_once()
    moto_attribute_values_direct()
    emulator = _EMBEDDED[-1] if _EMBEDDED else Emulator(  # (one per moto)
        rules=True, s3=s3_factory())
    _EMBEDDED.append(emulator)
    try:
        mock = mock_aws(config=config)
        with nullcontext() if config is None else moto_botocore_only():  # (a first start
            mock.start()  # alone: nested, another mock's requests may be in flight)
        try:
            with in_process_mock(lambda wire: EmbeddedTransport(emulator, wire)):
                yield
        finally:
            mock.stop()
    finally:
        _EMBEDDED.pop()
        if not _EMBEDDED:
            emulator.close()


class TestBackend:
    """What :func:`tables_fixture` yields: the tables, sessions on them, raw scans.

    ``endpoint_url`` is the endpoint the tables point at (``None``: in-process moto).
    """

    __test__ = False  # not a test class, despite the name

    def __init__(self, tables: Sequence[Table], endpoint_url: str | None,
                 session_kind: str = "sync"):
        self.tables = list(tables)
        """The tables the fixture created, in the order given."""
        self.endpoint_url = endpoint_url
        """The endpoint the tables point at (``None``: in-process moto)."""
        self.session_kind = session_kind
        """``"sync"``: :meth:`session` gives a :class:`Session`; ``"async"``: a blocking
        adapter over a real ``AsyncSession`` (each call runs the coroutine on this thread's
        private event loop), so sync-style tests exercise the async code path."""

    @property
    def table(self) -> Table:
        """The first table."""
        return self.tables[0]

    def session(self, table: Table | None = None) -> Session:
        """A new :class:`Session` on ``table`` (default: the first table); with
        ``session_kind="async"``, an ``AsyncSession`` behind a blocking adapter."""
        if self.session_kind == "async":
            from dynaorm.aio.blocking import BlockingAsyncSession
            from dynaorm.aio.session import AsyncSession

            return cast(Session, BlockingAsyncSession(AsyncSession(table or self.table)))
        return Session(table or self.table)

    def scan_raw(self, table: Table | None = None) -> list[Item]:
        """Every stored item in wire form (consistent scan, sorted by key)."""
        t = table or self.table
        items = []
        request = {"TableName": t.name, "ConsistentRead": True}
        while True:
            out = t.db.driver.run(call("Scan", request))
            items.extend(out.get("Items", []))
            if not out.get("LastEvaluatedKey"):
                break
            request["ExclusiveStartKey"] = out["LastEvaluatedKey"]
        return sorted(items, key=lambda i: tuple(key_order(key_value(i[a]))
                                                 for a in (t.pk, t.sk) if a))

    def scan(self, table: Table | None = None) -> list[dict[str, Any]]:
        """Every stored item as plain Python values, sorted by key."""
        return [decode_item(i) for i in self.scan_raw(table)]


def worker_suffix() -> str:
    """``"-gw0"``, ``"-gw1"``, ... under pytest-xdist (``PYTEST_XDIST_WORKER``), else ``""``."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    return f"-{worker}" if worker else ""


@contextmanager
def use_tables(*tables: Table, endpoint_url: str | None = None,
               name_suffix: str = "", wire: str | None = None) -> Iterator[TestBackend]:
    """Point ``tables`` at ``endpoint_url`` (None: the configured endpoint, or the
    in-process moto of :func:`moto_backend`), create them fresh, and delete them afterwards.

    Only on a test engine (moto in process, an endpoint on this machine, or one on a host
    named in ``DYNAORM_TEST_HOSTS``): anywhere else a table may reach AWS itself, and
    :class:`NotATestEngineError` is raised before any request is sent.

    ``name_suffix`` is appended to every table's name for the block (the tables are module
    globals in user code: they are repointed in place and restored afterwards). ``wire``:
    the wire they send over for the block (``None``: as they say).
    """
    saved = [(t.name, t.binding()) for t in tables]
    checked = False
    try:
        for t in tables:
            t.name = t.name + name_suffix
            t.connect(endpoint_url)
            if wire is not None:
                t.wire = wire
        for t in tables:  # (every table checked before the first is deleted)
            check_test_engine(t)
        checked = True
        for t in tables:
            t.delete()
            t.create()
        yield TestBackend(tables, endpoint_url)
    finally:
        try:
            for t in tables if checked else ():
                t.delete()
        finally:
            for t, (name, binding) in zip(tables, saved, strict=True):
                t.name = name
                t.restore(binding)


@contextmanager
def moto_server() -> Iterator[str]:
    """moto in server mode on a free loopback port, for the block's duration, behind
    dynaorm's rules as :func:`moto_backend` is (a :func:`fault_proxy` with ``rules=True``):
    yields the endpoint URL. Unlike :func:`moto_backend` it serves any client
    (aiobotocore included). moto answers one request at a time: its DynamoDB is not safe
    under concurrent requests (a ``TransactWriteItems`` copies every table it names for its
    rollback while another request changes it: an HTTP 500, and a rollback undoes the
    other's write), which processes and threads sharing the server (``run_local``) do
    send."""
    try:
        from moto.moto_server.werkzeug_app import (
            DomainDispatcherApplication,
            MotoRequestHandler,
            create_backend_app,
        )
        from werkzeug.serving import make_server
    except ModuleNotFoundError as exc:
        raise ModuleNotFoundError(f"the moto server needs moto[server]: {INSTALL_HINT}",
                                  name=exc.name) from exc
    serve_vectors()  # (before the app: it routes moto's DynamoDB when first asked)
    moto_transactions_copy_once()
    moto_attribute_values_direct()
    app, lock = DomainDispatcherApplication(create_backend_app), threading.Lock()

    def one_at_a_time(environ: dict[str, Any], start_response: Any) -> list[bytes]:
        # (the answer's body read inside too: moto may build it lazily; every request
        # comes through the rules' proxy, which holds DynamoDB's item size, not moto's)
        # (only for the writes whose sizes the rules check: a PartiQL write keeps moto's)
        sized = environ.get("HTTP_X_AMZ_TARGET", "").rpartition(".")[2] in SIZED | BULK_WRITES
        with lock, moto_sizes_unchecked() if sized else nullcontext():
            return list(app(environ, start_response))

    class Quiet(MotoRequestHandler):
        def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
            """No line per request (werkzeug's development server logs each)."""

    server = make_server("127.0.0.1", 0, one_at_a_time, threaded=True,
                         request_handler=Quiet)
    serving = threading.Thread(target=server.serve_forever, daemon=True)
    serving.start()
    try:
        url = f"http://127.0.0.1:{server.server_port}"
        with fault_proxy(url, rules=True, s3=url) as proxied:
            yield proxied
    finally:
        server.shutdown()
        serving.join()


def tables_fixture(*tables: Table, scope: str = "function") -> Callable[..., Any]:
    """A pytest fixture giving each test fresh ``tables`` on the test backend.

    The backend is an in-process moto, or the endpoint given by ``--dynaorm-endpoint`` /
    ``DYNAORM_TEST_ENDPOINT``. Under pytest-xdist each worker uses its own tables.
    """
    import pytest

    @pytest.fixture(scope=scope)  # type: ignore[call-overload, untyped-decorator]
    def _fixture(dynaorm_endpoint: str | None) -> Iterator[TestBackend]:
        with nullcontext() if dynaorm_endpoint else moto_backend(), use_tables(
                *tables, endpoint_url=dynaorm_endpoint or None,
                name_suffix=worker_suffix()) as backend:
            yield backend

    return _fixture  # type: ignore[no-any-return]


# -- fault injection ------------------------------------------------------------------
#: ``after`` callbacks: plain functions, or (in an async session) coroutine functions
Callback = Callable[[], Any]


@dataclass
class _Rule:
    operation: str
    kind: str  # "throttle" | "server_error" | "lose_answer"
    left: int | None  # attempts still to fault (None: every attempt)
    skip: int  # attempts let through before the first fault
    after: Callback | None = None
    how: str = "timeout"  # how a lost answer fails: "timeout" or "500"
    reasons: tuple[str | ThrottlingReason, ...] = ()  # a throttle's ThrottlingReasons


class FaultInjector(Hook):
    """The faults planned for one table's requests (see the module): a phase hook on the
    table's client (:meth:`dynaorm.Client.add_hook`) that sees only attempts of requests
    naming that table. Rules apply to the next attempts of an operation, in the order
    they were added; ``sent`` counts every attempt it saw, per operation (faulted or
    not). Other hooks (tracing, logging, ``on_request``) see its faults as real ones."""

    def __init__(self, table: str | None = None):
        self._table = table
        self._rules: list[_Rule] = []
        self._lock = threading.Lock()
        self.sent: Counter[str] = Counter()
        """Attempts of each operation seen since the injector was installed (faulted ones
        included)."""

    # -- planning faults -------------------------------------------------------------
    def throttle(self, operation: str, *, times: int | None = 1, skip: int = 0,
                 reasons: Sequence[str | ThrottlingReason] = ()) -> None:
        """The next ``times`` attempts of ``operation`` (``None``: all; after ``skip``
        attempts pass) are refused with a :class:`~dynaorm.ThrottledError` before reaching
        the server: nothing is applied. ``reasons``: its ``ThrottlingReasons``, each a
        :class:`~dynaorm.ThrottlingReason` or a reason's name
        (``"TableWriteKeyRangeThroughputExceeded"``), whose resource is then the request's
        table, or its index
        for an ``Index...`` reason. The code is ``ProvisionedThroughputExceededException``
        when a reason names a provisioned limit, else ``ThrottlingException``."""
        self._add(_Rule(operation, "throttle", times, skip, reasons=tuple(reasons)))

    def server_error(self, operation: str, *, times: int | None = 1, skip: int = 0,
                     after: Callback | None = None) -> None:
        """The next ``times`` attempts of ``operation`` are answered with an
        ``InternalServerError`` (HTTP 500) without reaching the server. A 5xx may come
        after the server applied a request, so dynaorm treats it as possibly applied.
        ``after()`` runs in the window (another writer), as for :meth:`lose_answer`."""
        self._add(_Rule(operation, "server_error", times, skip, after))

    def lose_answer(self, operation: str, *, times: int | None = 1, skip: int = 0,
                    after: Callback | None = None, how: str = "timeout") -> None:
        """The next ``times`` attempts of ``operation`` are sent for real (the server
        applies them), then ``after()`` runs (another writer sequenced into the window:
        in an async session it may be a coroutine function), then the attempt fails:
        ``how="timeout"`` as a timeout or a dropped connection does (``ConnectionError``),
        ``how="500"`` as a server error after applying (``InternalServerError``); both
        possibly applied."""
        if how not in ("timeout", "500"):
            raise ValueError('how must be "timeout" or "500"')
        self._add(_Rule(operation, "lose_answer", times, skip, after, how))

    def clear(self) -> None:
        """Drop every planned fault (``sent`` is kept)."""
        with self._lock:
            self._rules.clear()

    def _add(self, rule: _Rule) -> None:
        if rule.left is not None and rule.left < 1:
            raise ValueError("times must be at least 1 (or None for every attempt)")
        with self._lock:
            self._rules.append(rule)

    def _next(self, operation: str) -> _Rule | None:
        """The rule that faults this attempt of ``operation``, if any (counted)."""
        with self._lock:
            self.sent[operation] += 1
            for rule in self._rules:
                if rule.operation != operation:
                    continue
                if rule.skip > 0:
                    rule.skip -= 1
                    return None
                if rule.left is not None:
                    rule.left -= 1
                    if rule.left <= 0:
                        self._rules.remove(rule)
                return rule
            return None

    # -- the hook --------------------------------------------------------------------
    def on_start(self, phase: Operation | Attempt) -> object:
        """Before an attempt: a throttle or server error answers it without sending; a
        lost answer lets it go (and is remembered for :meth:`on_end`)."""
        if not isinstance(phase, Attempt) or (
                self._table is not None and self._table not in phase.tables):
            return None
        rule = self._next(phase.operation)
        if rule is None:
            return None
        if rule.kind == "lose_answer":
            return rule
        phase.error = (_throttled(phase.operation, phase.request, rule.reasons)
                       if rule.kind == "throttle" else _error(phase.operation, rule.kind))
        return rule if rule.after is not None else None

    def on_end(self, phase: Operation | Attempt, token: Any) -> object:
        """After an attempt to lose: the server applied it; ``after()`` runs in the
        window (a coroutine is returned to be awaited: an async session awaits it, a sync
        one refuses it), then the attempt fails as possibly applied. An attempt the
        server refused keeps its answer."""
        if not isinstance(token, _Rule) or not isinstance(phase, Attempt):
            return None
        if token.kind == "lose_answer":
            if phase.error is not None:
                return None  # refused by the server: that is the answer
            phase.response = None
            phase.error = _error(phase.operation, token.kind, token.how)
        if token.after is not None:
            result = token.after()
            if inspect.isawaitable(result):
                return result
        return None


def _throttled(operation: str, request: dict[str, Any],
               reasons: Sequence[str | ThrottlingReason]) -> ThrottledError:
    """The throttle a wire raises for DynamoDB's answer naming ``reasons``."""
    arn = f"arn:aws:dynamodb:::table/{request.get('TableName', '')}"
    index = f"{arn}/index/{request['IndexName']}" if "IndexName" in request else arn
    found = [r if isinstance(r, ThrottlingReason) else ThrottlingReason(
        r, index if r.startswith("Index") else arn) for r in reasons]
    provisioned = any("ProvisionedThroughput" in r.reason for r in found)
    return ThrottledError(operation, "ProvisionedThroughputExceededException" if provisioned
                          else "ThrottlingException", "injected throttling", found)


def _error(operation: str, kind: str, how: str = "timeout") -> RequestError:
    """The error a real fault of ``kind`` is raised as (by either wire)."""
    if kind == "server_error" or how == "500":
        err = RequestError(operation, "InternalServerError", "injected server error (500)")
    else:
        err = RequestError(operation, "ConnectionError",
                           "injected: the request was applied and its answer lost")
    err.maybe_applied = True
    return err


@contextmanager
def inject_faults(table: Table) -> Iterator[FaultInjector]:
    """Attach a :class:`FaultInjector` for ``table``'s requests to its client for the
    block (sync and async sessions alike, every wire; other hooks stay attached)."""
    injector = FaultInjector(table.name)
    client = table.db
    client.add_hook(injector)
    try:
        yield injector
    finally:
        client.remove_hook(injector)
