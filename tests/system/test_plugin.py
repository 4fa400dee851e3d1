"""The pytest plugin (``pytest11`` entry point): a user's project gets an in-process
DynamoDB and fresh tables from one line in its conftest.py, with nothing to register."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import textwrap
import threading
from pathlib import Path
from typing import Any

import pytest

from dynaorm import (
    Attempt,
    DynaormError,
    Entity,
    Hook,
    Session,
    Table,
    UniqueConstraintError,
)
from dynaorm.testing import index_lag
from tests.support.concurrency import join_all
from tests.support.recording import send

ROOT = Path(__file__).resolve().parents[2]  # the dynaorm under test, not an installed one

MODELS = """
from dynaorm import Entity, Table, Unique

app = Table("plugin-app")


class Account(Entity):
    class Meta:
        table = app
        pk = "ACCOUNT#{account_id}"
        sk = "ACCOUNT"
        unique = (Unique("email", normalize=str.lower),)

    account_id: str
    email: str
"""

CONFTEST = """
from dynaorm.testing import tables_fixture
from models import app

db = tables_fixture(app)
"""

TESTS = """
import pytest

from dynaorm import UniqueConstraintError
from models import Account


def test_signup(db):
    with db.session() as s:
        s.save(Account(account_id="a1", email="Ada@Example.com"))
    assert [i["pk"] for i in db.scan()] == ["ACCOUNT#a1", "email#ada@example.com"]


def test_duplicate_email_refused(db):
    s = db.session()
    s.save(Account(account_id="a1", email="ada@example.com"))
    s.commit()
    s.save(Account(account_id="a2", email="ADA@example.com"))
    with pytest.raises(UniqueConstraintError) as info:
        s.commit()
    assert info.value.field == "email"
    assert len(db.scan()) == 2


def test_tables_are_fresh_per_test(db):
    assert db.scan() == []
"""


@pytest.fixture
def user_project(tmp_path: Path) -> Path:
    for name, text in (("models.py", MODELS), ("conftest.py", CONFTEST),
                       ("test_models.py", TESTS)):
        (tmp_path / name).write_text(textwrap.dedent(text))
    return tmp_path


def _pytest(project: Path, *args: str, **extra: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("AWS_", "DYNAORM_", "PYTEST_"))}  # plugin autoload stays on
    env.update(extra)
    env["PYTHONPATH"] = os.pathsep.join((str(project), str(ROOT)))  # this dynaorm
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           *args], cwd=project, env=env, capture_output=True, text=True,
                          timeout=180, check=False)


def test_user_project_on_moto(user_project: Path) -> None:
    result = _pytest(user_project)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "3 passed" in result.stdout


def test_user_project_on_dynamodb_local(user_project: Path, ddb_local: str) -> None:
    result = _pytest(user_project, "--dynaorm-endpoint", ddb_local)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "3 passed" in result.stdout


# -- 0.6: lagging indexes ---------------------------------------------------------------------
LAG_MODELS = """
from dynaorm import GSI, Entity, Table

shop = Table("plugin-shop", indexes=[GSI("by_status", pk="status_pk", sk="status_sk")])


class Order(Entity):
    class Meta:
        table = shop
        pk = "ORDER#{order_id}"
        sk = "ORDER"
        indexes = {"by_status": ("STATUS#{status}", "ORDER#{order_id}")}

    order_id: str
    status: str
"""

LAG_CONFTEST = """
from dynaorm.testing import tables_fixture
from models import shop

db = tables_fixture(shop)
"""

LAG_TESTS = """
import pytest

from models import Order


def _open(db):
    with db.session() as s:
        s.save(Order(order_id="o1", status="open"))
    return [o.order_id for o in db.session().query(Order, index="by_status", status="open")]


def test_reads_its_write_through_the_index(db):
    assert _open(db) == ["o1"]


@pytest.mark.dynaorm_index_lag(0, reason="reads its own write through the index")
def test_marked_as_reading_its_own_write(db):
    assert _open(db) == ["o1"]


def test_reads_its_write_by_key(db):
    _open(db)
    assert db.session().get(Order, order_id="o1", consistent=True) is not None
"""


@pytest.fixture
def lag_project(tmp_path: Path) -> Path:
    for name, text in (("models.py", LAG_MODELS), ("conftest.py", LAG_CONFTEST),
                       ("test_orders.py", LAG_TESTS)):
        (tmp_path / name).write_text(textwrap.dedent(text))
    return tmp_path


@pytest.mark.dynaorm_index_lag(0, reason="runs pytest itself, with a lag of its own")
@pytest.mark.parametrize(("engine", "seed", "outcome"), [
    ("moto", "2", "1 failed, 2 passed"), ("local", "4", "3 passed")])  # (seed 4 picks o1's
def test_the_index_lag_option_fails_a_test_that_reads_its_write_through_an_index(  # write
        lag_project: Path, engine: str, seed: str, outcome: str,  # to show at once)
        request: pytest.FixtureRequest) -> None:
    """Each child session costs a pytest started: the seed (the emulator's choice, not the
    engine's) takes one engine each; the run without the option, once (the marked test of
    each lagged run reads the same write through the index and passes)."""
    endpoint = () if engine == "moto" else (
        "--dynaorm-endpoint", request.getfixturevalue("ddb_local"))
    if engine == "moto":
        result = _pytest(lag_project, *endpoint)
        assert result.returncode == 0, result.stdout + result.stderr
        assert "3 passed" in result.stdout
    result = _pytest(lag_project, *endpoint, "--dynaorm-index-lag=60", "-rf", "-v")
    assert result.returncode == 1, result.stdout + result.stderr
    assert "dynaorm: index reads lag 60s" in result.stdout
    assert "1 failed, 2 passed" in result.stdout
    assert "FAILED test_orders.py::test_reads_its_write_through_the_index" in result.stdout
    seeded = _pytest(lag_project, *endpoint, "--dynaorm-index-lag=60", "-v",
                     f"--dynaorm-index-lag-seed={seed}")
    assert f"dynaorm: index reads lag 60s (seed {seed})" in seeded.stdout
    assert outcome in seeded.stdout, seeded.stdout


def test_a_negative_index_lag_is_a_usage_error(lag_project: Path) -> None:
    """(refused before any engine is chosen: once, not once per engine)"""
    refused = _pytest(lag_project, "--dynaorm-index-lag=-1")
    assert refused.returncode == 4 and "a number of seconds >= 0" in refused.stderr


ENDPOINT_LAG_TESTS = """
import pytest

from dynaorm.testing import index_lag
from models import Order


def _open(db):
    return [o.order_id for o in db.session().query(Order, index="by_status", status="open")]


def test_index_lag_holds_on_the_endpoint_alone(db):
    with index_lag(60) as lag:
        with db.session() as s:
            s.save(Order(order_id="o2", status="open"))
        assert _open(db) == []
        lag.advance(60)
        assert _open(db) == ["o2"]


@pytest.mark.dynaorm_index_lag(60, reason="its own lag, without the option")
def test_the_marker_holds_on_the_endpoint_alone(db):
    with db.session() as s:
        s.save(Order(order_id="o3", status="open"))
    assert _open(db) == []
"""


@pytest.mark.dynaorm_index_lag(0, reason="runs pytest itself, with a lag of its own")
def test_index_lag_holds_on_a_local_endpoint_given_alone(lag_project: Path,
                                                         ddb_local: str) -> None:
    """0.6: ``--dynaorm-endpoint`` without ``--dynaorm-index-lag`` put no proxy in front,
    so ``index_lag()`` and the marker lagged nothing, silently."""
    (lag_project / "test_orders.py").write_text(textwrap.dedent(ENDPOINT_LAG_TESTS))
    result = _pytest(lag_project, "--dynaorm-endpoint", ddb_local)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "2 passed" in result.stdout


def test_index_lag_refuses_an_endpoint_no_proxy_can_front() -> None:
    import importlib.util

    from dynaorm.testing.emulation.emulator import unfronted

    spec = importlib.util.spec_from_file_location("plugin_here", ROOT / "pytest_dynaorm.py")
    assert spec is not None and spec.loader is not None  # (this checkout's plugin)
    plugin = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(plugin)
    fronted = plugin.fronted

    assert fronted("http://localhost:8000") and fronted("http://10.0.0.5:8000")
    assert fronted("https://127.0.0.1:8443")
    assert not fronted("https://dynamodb.eu-west-1.amazonaws.com")
    with unfronted("https://dynamodb.eu-west-1.amazonaws.com"), pytest.raises(
            DynaormError, match=r"index_lag: the tests run on https://dynamodb\.eu-west-1\."
                                r"amazonaws\.com, which no emulator fronts"), index_lag(5):
        pass
    with index_lag(5):  # (outside: as before)
        pass


# -- in process: the plugin's own fixtures are available to this suite too ------------------
inproc = Table("plugin-inproc")


class Handle(Entity):
    class Meta:
        table = inproc
        pk = "HANDLE#{handle_id}"
        sk = "HANDLE"
        unique = ("name",)

    handle_id: str
    name: str


def test_dynaorm_moto_fixture(dynaorm_moto: None) -> None:
    assert inproc.connect(None) is inproc
    inproc.create()
    try:
        with Session(inproc) as s:
            s.save(Handle(handle_id="h1", name="ada"))
        with pytest.raises(UniqueConstraintError), Session(inproc) as s:
            s.save(Handle(handle_id="h2", name="ada"))
        assert Session(inproc).find(Handle, name="ada") == Handle(handle_id="h1", name="ada")
    finally:
        inproc.delete()


# -- 0.2: free when unused, per-worker tables under xdist, the moto server fixture ---------
NO_FIXTURES_CONFTEST = """
import sys


def pytest_sessionfinish(session, exitstatus):
    heavy = sorted(m for m in ("moto", "dynaorm", "pynamodb", "botocore", "boto3")
                   if m in sys.modules)
    with open("imported.txt", "w") as out:
        out.write(",".join(heavy))
"""


def test_a_run_without_dynaorm_fixtures_imports_nothing_heavy(tmp_path: Path) -> None:
    (tmp_path / "conftest.py").write_text(textwrap.dedent(NO_FIXTURES_CONFTEST))
    (tmp_path / "test_plain.py").write_text("def test_plain():\n    assert 1 + 1 == 2\n")
    result = _pytest(tmp_path, "--trace-config")  # (one run: each costs a pytest started)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 passed" in result.stdout
    assert "pytest_dynaorm" in result.stdout  # the plugin was loaded, and cost nothing:
    assert (tmp_path / "imported.txt").read_text() == ""


XDIST_TESTS = """
import pytest

from models import Account


@pytest.mark.parametrize("n", range(20))
def test_worker_has_its_own_fresh_table(db, n):
    assert db.scan() == []
    with db.session() as s:
        s.save(Account(account_id=f"a{n}", email=f"user{n}@example.com"))
    assert len(db.scan()) == 2
    assert db.table.name.startswith("plugin-app-gw")
"""


def test_xdist_workers_get_their_own_tables_on_dynamodb_local(
        user_project: Path, ddb_local: str) -> None:
    (user_project / "test_models.py").unlink()
    (user_project / "test_xdist.py").write_text(textwrap.dedent(XDIST_TESTS))
    # (20 tests side by side on two workers: each table's name carries its worker's id,
    # and a shared table shows as a test seeing the other worker's item; 0.9 ran this twice)
    result = _pytest(user_project, "-n", "2", "--dynaorm-endpoint", ddb_local)
    assert result.returncode == 0, f"{result.stdout}{result.stderr}"
    assert "20 passed" in result.stdout
    assert inproc.name == "plugin-inproc"


served = Table("plugin-moto-server")


class ServedHandle(Entity):
    class Meta:
        table = served
        pk = "HANDLE#{handle_id}"
        sk = "HANDLE"
        unique = ("name",)

    handle_id: str
    name: str


def test_dynaorm_moto_server_serves_any_client(dynaorm_moto_server: str) -> None:
    assert dynaorm_moto_server.startswith("http://127.0.0.1:")
    served.connect(dynaorm_moto_server)
    served.create()
    try:
        with Session(served) as s:
            s.save(ServedHandle(handle_id="h1", name="ada"))
        found = Session(served).find(ServedHandle, name="ada")
        assert found is not None and found.handle_id == "h1"
        assert len(send(served, "Scan", {"TableName": served.name})["Items"]) == 2
    finally:
        served.delete()


class _ServerErrors(Hook):
    """The attempts a server answered with an HTTP 5xx."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    def on_end(self, phase: Any, token: Any) -> object:
        if isinstance(phase, Attempt) and (phase.status_code or 0) >= 500:
            self.seen.append(f"{phase.operation}: {phase.error}")
        return None


def test_the_moto_server_answers_concurrent_writers_one_at_a_time(
        dynaorm_moto_server: str) -> None:
    """(0.6) Threads (or ``run_local``'s processes) writing at once through the moto
    server: moto's DynamoDB is not safe under concurrent requests (a TransactWriteItems
    deep-copies each table it names for its rollback while another request changes it:
    "dictionary changed size during iteration", an HTTP 500, and the rollback undoes the
    other's write), so the server answers one request at a time. 0.5's answered several
    at once: examples/backfill_job.py's run_local failed 3 runs of 5 with HTTP 500s."""
    served.connect(dynaorm_moto_server)
    served.create()
    errors = served.db.add_hook(_ServerErrors()).seen

    def writer(n: int) -> None:
        s = Session(served)
        for i in range(25):  # each a transaction: the row and its unique guard
            s.save(ServedHandle(handle_id=f"h{n}-{i}", name=f"n{n}-{i}"))
            s.commit()
            s.scan(ServedHandle).page_size(10).page()

    try:
        threads = [threading.Thread(target=writer, args=(n,)) for n in range(6)]
        join_all(threads)
        assert errors == []
        assert len(Session(served).scan(ServedHandle).all()) == 150
    finally:
        served.delete()


# -- dynaorm's own suite follows --dynaorm-endpoint ---------------------------------------
OWN_TEST = "tests/integration/test_table.py::test_use_tables_gives_a_fresh_table"


def _own_suite(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DYNAORM_", "PYTEST_"))}
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           OWN_TEST, *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=300, check=False)


def test_own_suite_runs_on_the_given_endpoint(ddb_local: str) -> None:
    result = _own_suite("--dynaorm-endpoint", ddb_local)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 passed" in result.stdout


def _dead_endpoint() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{sock.getsockname()[1]}"


def _one_usage_error(result: subprocess.CompletedProcess[str], message: str) -> None:
    """pytest stopped before running anything, with exactly one line saying ``message``."""
    assert result.returncode == pytest.ExitCode.USAGE_ERROR, result.stdout + result.stderr
    lines = [line for line in (result.stdout + result.stderr).splitlines() if line.strip()]
    assert len(lines) == 1, lines
    assert lines[0].startswith("ERROR: ") and message in lines[0], lines
    assert "Traceback" not in lines[0] and "passed" not in result.stdout


def test_own_suite_stops_at_once_on_a_dead_endpoint() -> None:
    dead = _dead_endpoint()
    _one_usage_error(_own_suite("--dynaorm-endpoint", dead),
                     f"--dynaorm-endpoint: {dead!r} does not answer")


def test_malformed_endpoint_is_one_usage_error(user_project: Path) -> None:
    result = _pytest(user_project, "--dynaorm-endpoint", "notaurl")
    _one_usage_error(result, "--dynaorm-endpoint: 'notaurl' is not")


@pytest.mark.parametrize("url", ["notaurl", "localhost:8000", "ftp://localhost:8000",
                                 "http://", "http://localhost:99999"])
def test_a_malformed_endpoint_is_refused_before_any_connection(url: str) -> None:
    """What the plugin's ``pytest_configure`` says of each malformed URL (the one usage
    error a run stops with: the test above, in a pytest of its own), refused as it is
    read: no connection tried."""
    from pytest_dynaorm import check_endpoint

    problem = check_endpoint(url, timeout=0)
    assert problem is not None and problem.startswith(f"{url!r} is not"), problem


def test_dead_endpoint_is_one_usage_error_for_the_whole_run(user_project: Path) -> None:
    """Three tests ask for the endpoint; the run says so once, and runs none of them."""
    dead = _dead_endpoint()
    result = _pytest(user_project, "--dynaorm-endpoint", dead)
    _one_usage_error(result, f"{dead!r} does not answer (")


def test_endpoint_from_the_environment_is_checked_too(user_project: Path) -> None:
    dead = _dead_endpoint()
    result = _pytest(user_project, DYNAORM_TEST_ENDPOINT=dead)
    _one_usage_error(result, f"$DYNAORM_TEST_ENDPOINT: {dead!r} does not answer")


def test_the_start_up_check_imports_nothing_heavy(tmp_path: Path, ddb_local: str) -> None:
    """With an endpoint given, start-up still imports neither dynaorm nor botocore."""
    (tmp_path / "conftest.py").write_text(textwrap.dedent(NO_FIXTURES_CONFTEST))
    (tmp_path / "test_plain.py").write_text("def test_plain():\n    assert 1 + 1 == 2\n")
    result = _pytest(tmp_path, "--dynaorm-endpoint", ddb_local)
    assert result.returncode == 0, result.stdout + result.stderr
    assert (tmp_path / "imported.txt").read_text() == ""


def test_check_endpoint() -> None:
    from pytest_dynaorm import check_endpoint

    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        assert check_endpoint(f"http://127.0.0.1:{server.getsockname()[1]}") is None
    assert "does not answer" in (check_endpoint(_dead_endpoint()) or "")
    assert "is not an http(s) URL" in (check_endpoint("notaurl") or "")
    assert "is not a valid URL" in (check_endpoint("http://[::1") or "")


# -- CI takes the --dynaorm-endpoint path on dynoxide (make test-endpoint) ------------------
WITH_DYNOXIDE = [sys.executable, str(ROOT / "scripts" / "with-dynoxide.py")]


def _with_dynoxide(*command: str, **env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items()
             if not k.startswith(("DYNAORM_", "PYTEST_")) and k != "CI"}
    return subprocess.run([*WITH_DYNOXIDE, *command], env={**clean, **env}, cwd=ROOT,
                          capture_output=True, text=True, timeout=120, check=False)


def test_make_test_takes_the_endpoint_path_on_dynoxide() -> None:
    """(issue 73) no CI run took ``--dynaorm-endpoint``, so its index-lag tests broke unseen:
    ``make test`` runs ``test-endpoint``, the lag, vector, search and explain tests (sync
    and async variants) on a dynoxide of its own, and ``.ci/run`` is ``make test``."""
    assert (ROOT / ".ci" / "run").read_text().rstrip().endswith("make test")
    plan = subprocess.run(["make", "-n", "test"], cwd=ROOT, capture_output=True, text=True,
                          timeout=60, check=True).stdout
    (run,) = [line for line in plan.splitlines() if "with-dynoxide.py" in line]
    assert "DYNAORM_REQUIRE_LOCAL=1" in run
    selected = plan[plan.index("with-dynoxide.py"):]
    for part in ("tests/integration", "test_index_lag", "test_vectors", "test_search",
                 "test_explain"):
        assert part in selected, part


def test_the_endpoint_run_gives_its_command_a_dynoxide_and_fails_without_one_under_ci(
        ) -> None:
    from pytest_dynaorm import check_endpoint
    from tests.support.dynoxide import find_binary

    if find_binary() is None:
        pytest.skip("dynoxide is not installed")  # (conftest's engines fail under CI)
    ran = _with_dynoxide(sys.executable, "-c", "import os; print(os.environ["
                         "'DYNAORM_TEST_ENDPOINT'])")
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.startswith("http://127.0.0.1:")
    assert check_endpoint(ran.stdout.strip()) is not None  # (stopped once the command ended)
    assert _with_dynoxide(sys.executable, "-c", "raise SystemExit(3)").returncode == 3
    missing = {"DYNAORM_DYNOXIDE": "/nonexistent/dynoxide"}
    for env, code, said in (({}, 0, "skipped"), ({"CI": "true"}, 1, "failing"),
                            ({"DYNAORM_REQUIRE_LOCAL": "1"}, 1, "failing")):
        ran = _with_dynoxide("true", **missing, **env)
        assert (ran.returncode, ran.stdout) == (code, ""), env
        assert "dynoxide is not installed" in ran.stderr and said in ran.stderr, env
