"""The ``dynaorm`` command, run as a user runs it: a subprocess, in a project directory
holding a models module, against moto's server mode and DynamoDB Local. What the parser
decides alone (usage, ``--help``, a malformed ``--endpoint-url``: 34 cases) runs through
``main`` in this process (:meth:`Project.parse`): the process around it is the same for
every command line, and the other tests run it."""

from __future__ import annotations

import contextlib
import importlib.util
import io
import os
import socket
import subprocess
import sys
import textwrap
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from dynaorm import Session, Table
from dynaorm.cli.main import main
from tests.support.recording import send

MODELS = '''
from dynaorm import GSI, LSI, Entity, Table, Unique

app = Table({name!r}, indexes=[GSI("gsi1", pk="gsi1pk", sk="gsi1sk"), LSI("lsi1", sk="lsi1sk")])


class User(Entity):
    class Meta:
        table = app
        pk = "USER#{{user_id}}"
        sk = "PROFILE"
        unique = ("username", Unique("email", normalize=str.lower))
        indexes = {{"gsi1": ("ORG#{{org_id}}", "USER#{{username}}")}}

    user_id: str
    org_id: str = "acme"
    username: str
    email: str


class Member(Entity):
    class Meta:
        table = app
        pk = "ORG#{{org_id}}"
        sk = "MEMBER#{{name}}"
        unique = (Unique("nick", scope="ORG#{{org_id}}"),)
        shards = {{"gsi1": 4}}
        indexes = {{"gsi1": ("ROLE#{{role}}#{{shard}}", "{{name}}")}}

    org_id: str
    name: str
    nick: str
    role: str = "dev"


class Audit(Entity):
    class Meta:
        table = app
        pk = "EQUIPMENT#{{equipment_id}}"
        sk = "{{part}}"
        versioned = True

    equipment_id: str
    part: str
    notes: str = ""
'''

ROOT = Path(__file__).resolve().parents[2]  # the dynaorm under test, not an installed one
ENV = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
       "AWS_DEFAULT_REGION": "us-east-1"}


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@pytest.fixture(scope="session")
def moto_server() -> Iterator[str]:
    """moto in server mode on a free loopback port."""
    from moto.server import ThreadedMotoServer

    port = _free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.stop()


@pytest.fixture(params=["moto", "local"])
def endpoint(request: pytest.FixtureRequest) -> str:
    name = "moto_server" if request.param == "moto" else "ddb_local"
    url: str = request.getfixturevalue(name)
    return url


@dataclass
class Project:
    """A user's project directory with a models module, and the command to run in it."""

    path: Path
    endpoint: str | None
    table_name: str

    def run(self, *args: str, env_more: dict[str, str] | None = None
            ) -> subprocess.CompletedProcess[str]:
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("AWS_", "DYNAORM_"))}
        env.update(ENV, PYTHONPATH=os.pathsep.join((str(self.path), str(ROOT))),
                   **(env_more or {}))
        extra = ["--endpoint-url", self.endpoint] if self.endpoint and args[0] != "--help" else []
        return subprocess.run([sys.executable, "-m", "dynaorm.cli.main", *args, *extra],
                              cwd=self.path, env=env, capture_output=True, text=True,
                              timeout=120, check=False)

    def parse(self, *args: str) -> subprocess.CompletedProcess[str]:
        """The command line ``args`` as the command's parser and ``main`` take it, in this
        process: for what is decided before any module of the project is imported or any
        request sent (usage, ``--help``, a malformed ``--endpoint-url``). The process
        around ``main`` (``raise SystemExit(main())``, the environment) is the other
        tests' subject."""
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(list(args))
            except SystemExit as exc:  # (argparse's usage errors and --help)
                code = exc.code if isinstance(exc.code, int) else 1
        return subprocess.CompletedProcess(["dynaorm", *args], code, out.getvalue(),
                                           err.getvalue())

    def models(self) -> ModuleType:
        """The project's models, imported in this process and pointed at the endpoint."""
        spec = importlib.util.spec_from_file_location(f"models_{self.table_name}",
                                                      self.path / "models.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        module.app.connect(self.endpoint)
        return module


def _project(path: Path, endpoint: str | None) -> Project:
    name = f"cli-{uuid.uuid4().hex[:10]}"
    (path / "models.py").write_text(textwrap.dedent(MODELS.format(name=name)))
    return Project(path, endpoint, name)


@pytest.fixture
def project(tmp_path: Path, endpoint: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[Project]:
    for key, value in ENV.items():
        monkeypatch.setenv(key, value)
    proj = _project(tmp_path, endpoint)
    yield proj
    Table(proj.table_name).connect(endpoint).delete()


@pytest.fixture
def offline(tmp_path: Path) -> Project:
    """A project for commands that need no backend."""
    return _project(tmp_path, None)


def _scan(table: Table) -> list[dict[str, Any]]:
    out = send(table, "Scan", {"TableName": table.name, "ConsistentRead": True})
    return sorted(out["Items"], key=lambda i: (i["pk"]["S"], i["sk"]["S"]))


# -- create-table --------------------------------------------------------------------------
def test_create_table(project: Project) -> None:
    result = project.run("create-table", "models:app")
    assert result.returncode == 0, result.stderr
    assert f"table {project.table_name!r} created" in result.stdout
    assert "indexes: gsi1, lsi1" in result.stdout
    table = project.models().app
    desc = send(table, "DescribeTable", {"TableName": project.table_name})["Table"]
    assert [i["IndexName"] for i in desc["GlobalSecondaryIndexes"]] == ["gsi1"]
    assert [i["IndexName"] for i in desc["LocalSecondaryIndexes"]] == ["lsi1"]
    again = project.run("create-table", "models:app")
    assert again.returncode == 0 and "already exists" in again.stdout


# -- check ---------------------------------------------------------------------------------
def _seed(project: Project) -> ModuleType:
    models = project.models()
    models.app.create()
    with Session(models.app) as s:
        s.save(models.User(user_id="u1", username="ada", email="Ada@Example.com"))
        s.save(models.User(user_id="u2", username="bob", email="bob@example.com"))
        s.save(models.Member(org_id="o1", name="ann", nick="annie"))
    s = Session(models.app)
    audit = models.Audit(equipment_id="E1", part="P1", notes="one")
    s.save(audit)
    s.commit()
    audit.notes = "two"
    s.save(audit)
    s.commit()
    return models


def test_check_clean_table(project: Project) -> None:
    _seed(project)
    result = project.run("check", "models:app")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "11 items, 0 problem(s)" in result.stdout
    assert result.stderr == ""  # no progress indicator: stderr is not a terminal


def test_check_finds_and_repairs(project: Project) -> None:
    models = _seed(project)
    table: Table = models.app

    def call(operation: str, request: dict[str, Any]) -> dict[str, Any]:
        return send(table, operation, request)

    ghost = "email#ghost@example.com"
    call("PutItem", {"TableName": table.name, "Item": {
        "pk": {"S": ghost}, "sk": {"S": ghost}, "_type": {"S": "dynaorm:unique"},
        "owner_pk": {"S": "USER#gone"}, "owner_sk": {"S": "PROFILE"},
        "owner_type": {"S": "User"}, "unique_field": {"S": "email"}}})
    call("DeleteItem", {"TableName": table.name,
                        "Key": {"pk": {"S": "username#bob"}, "sk": {"S": "username#bob"}}})
    latest = next(i for i in _scan(table) if i["sk"]["S"] == "v0_P1")
    call("PutItem", {"TableName": table.name, "Item": {**latest, "notes": {"S": "hand edit"}}})

    found = project.run("check", "models:app", "--progress")
    assert found.returncode == 1, found.stdout + found.stderr
    out = found.stdout
    assert "3 problem(s)" in out
    assert "orphan-guard" in out and ghost in out and "USER#gone is gone" in out
    assert "missing-guard" in out and "USER#u2" in out and "'username#bob'" in out
    assert "stale-latest" in out and "EQUIPMENT#E1 | v0_P1" in out
    assert "--repair" in out
    assert "scanned 11 items" in found.stderr

    fixed = project.run("check", "models:app", "--repair")
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    assert fixed.stdout.count("fixed") == 3
    assert "0 problem(s) left" in fixed.stdout

    clean = project.run("check", "models:app")
    assert clean.returncode == 0 and "0 problem(s)" in clean.stdout
    items = {(i["pk"]["S"], i["sk"]["S"]): i for i in _scan(table)}
    assert (ghost, ghost) not in items
    assert items[("username#bob", "username#bob")]["owner_pk"] == {"S": "USER#u2"}
    assert items[("EQUIPMENT#E1", "v0_P1")]["notes"] == {"S": "two"}


# -- describe, demo, usage -----------------------------------------------------------------
def test_describe(offline: Project) -> None:
    result = offline.run("describe", "models")
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert f"models:app  table {offline.table_name!r}" in out
    for line in ("get User by user_id", "find User by email", "find User by username",
                 "query User on gsi1 by org_id [, username prefix/range]",
                 "email (prefix email, normalize str.lower)",
                 "nick (prefix nick, scope ORG#{org_id})", "find Member by nick within org_id",
                 "query Member by org_id [, name prefix/range]",
                 "(scatter-gather over 4 shards)", "shards     gsi1: 4",
                 "history Audit by equipment_id, part", "versioned  yes",
                 "pk USER#{user_id}   sk PROFILE", "pk ORG#{org_id}   sk USER#{username}"):
        assert line in out, line


def test_demo_in_process() -> None:
    result = Project(Path.cwd(), None, "-").run("demo")
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "on the in-process moto backend" in out
    assert "email#ada@example.com" in out and "username#bob" in out
    assert "refused: UniqueConstraintError(field='email'" in out
    assert "email guards now: email#ada@example.com, email#robert@example.com" in out
    assert "-> ['ada', 'bob']" in out
    assert "guard items left for ada: 0" in out
    assert "v3: title='Hello' body='second draft'" in out
    assert "0 problem(s)" in out


def test_demo_on_dynamodb_local(ddb_local: str) -> None:
    result = Project(Path.cwd(), ddb_local, "-").run("demo")
    assert result.returncode == 0, result.stderr
    assert f"dynaorm demo on {ddb_local}" in result.stdout
    assert "0 problem(s)" in result.stdout


@pytest.mark.parametrize(("args", "message"), [
    (("check", "models"), "expected MODULE:TABLE"),
    (("create-table", "models:nope"), "has no attribute 'nope' (tables there: app)"),
    (("check", "models:User"), "is not a dynaorm Table"),
    (("create-table", "no_such_module:app"), "no module named 'no_such_module'"),
    (("describe", "no_such_module"), "no module named 'no_such_module'"),
])
def test_bad_reference_exits_2(offline: Project, args: tuple[str, ...], message: str) -> None:
    result = offline.run(*args)
    assert result.returncode == 2
    assert message in result.stderr and result.stdout == ""


def test_usage_error_exits_2(offline: Project) -> None:
    result = offline.run("frobnicate")
    assert result.returncode == 2 and "invalid choice" in result.stderr


def test_missing_table_exits_1(offline: Project, moto_server: str) -> None:
    offline.endpoint = moto_server
    result = offline.run("check", "models:app")
    assert result.returncode == 1
    assert "failed: cannot scan table" in result.stderr and "ResourceNotFound" in result.stderr


@pytest.mark.parametrize("command", [None, "create-table", "describe", "check", "demo"])
def test_help(offline: Project, command: str | None) -> None:
    result = offline.parse(*([command] if command else []), "--help")
    assert result.returncode == 0, result.stderr
    assert "usage: dynaorm" in result.stdout
    if command is None:
        assert all(c in result.stdout for c in ("create-table", "describe", "check", "demo"))
    else:
        assert "--endpoint-url" in result.stdout and "--region" in result.stdout


# -- 0.9: dynaorm load ---------------------------------------------------------------------
def test_load_reports_each_clash_with_a_progress_bar_and_exits_1(
        tmp_path: Path, dynaorm_moto_server: str) -> None:
    """``dynaorm load MODULE:TABLE SOURCE --s3`` on dynaorm's moto server (its emulator
    serves the bulk API over the server's S3): a Parquet dataset of users loaded, the one
    whose e-mail is taken reported by field (exit 1), a progress bar on stderr; run again
    with the same name, nothing is sent again."""
    import botocore.session
    import pyarrow as pa
    import pyarrow.parquet as pq

    proj = _project(tmp_path, dynaorm_moto_server)
    assert proj.run("create-table", "models:app").returncode == 0
    models = proj.models()
    with Session(models.app) as s:
        s.save(models.User(user_id="ann", username="ann", email="Ann@x.io"))
    rows = [{"user_id": f"u{n}", "org_id": "acme", "username": f"user{n}",
             "email": "ann@X.IO" if n == 3 else f"u{n}@x.io"} for n in range(6)]
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "users.parquet")
    bucket = f"cli-loads-{uuid.uuid4().hex[:8]}"
    botocore.session.get_session().create_client(
        "s3", region_name="us-east-1", endpoint_url=dynaorm_moto_server, **{
            f"aws_{k.lower().removeprefix('aws_')}": v for k, v in ENV.items()
            if k != "AWS_DEFAULT_REGION"}).create_bucket(Bucket=bucket)
    args = ("load", "models:app", str(tmp_path / "users.parquet"), "--entity", "User",
            "--s3", f"s3://{bucket}/runs", "--poll", "0", "--name", "cli")
    s3 = {"AWS_ENDPOINT_URL_S3": dynaorm_moto_server}
    result = proj.run(*args, env_more=s3)
    assert result.returncode == 1, result.stderr
    assert "5 of 6 entities loaded (18 rows" in result.stdout
    assert "failed: UniqueConstraintError: User {'pk': 'USER#u3', 'sk': 'PROFILE'}: " \
           "unique value already taken: email='ann@X.IO'" in result.stdout
    assert "loaded 18 rows of ~18 (100%)" in result.stderr
    again = proj.run(*args, env_more=s3)
    assert again.returncode == 1 and "1 operation(s)" in again.stdout
    assert again.stderr == ""  # (settled already: no operation to wait for)
    Table(proj.table_name).connect(dynaorm_moto_server).delete()


# -- 0.2: --version, one-line errors for bad input, describe MODULE:TABLE ------------------
def test_version(offline: Project) -> None:
    import dynaorm

    for cmd in (("--version",),):
        result = offline.run(*cmd)
        assert result.returncode == 0, result.stderr
        assert result.stdout == f"dynaorm {dynaorm.__version__}\n"
    module = subprocess.run([sys.executable, "-m", "dynaorm", "--version"], cwd=offline.path,
                            capture_output=True, text=True, timeout=60, check=False)
    assert module.returncode == 0 and module.stdout == f"dynaorm {dynaorm.__version__}\n"


@pytest.mark.parametrize("command", ["create-table", "describe", "check", "demo"])
@pytest.mark.parametrize("url", ["not a url", "http://", "ftp://x", "localhost:8000",
                                 "http://localhost:99999", ""])
def test_invalid_endpoint_url_is_one_line_exit_2(offline: Project, command: str,
                                                 url: str) -> None:
    target = {"create-table": ["models:app"], "describe": ["models"],
              "check": ["models:app"], "demo": []}[command]
    result = offline.parse(command, *target, "--endpoint-url", url)
    assert result.returncode == 2, result.stdout + result.stderr
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(f"dynaorm {command}: error: argument --endpoint-url: invalid "
                               f"URL {url!r}")


@pytest.mark.parametrize("args", [("describe", "models", "--region", "eu west 1"),
                                  ("describe",), ("describe", "models", "--bogus"),
                                  ("frobnicate",), ()])
def test_bad_usage_is_one_line_exit_2(offline: Project, args: tuple[str, ...]) -> None:
    result = offline.parse(*args)
    assert result.returncode == 2
    assert len(result.stderr.splitlines()) == 1, result.stderr
    assert "error:" in result.stderr and "Traceback" not in result.stderr


TWO_TABLES = '''
from dynaorm import Entity, Table

first = Table("describe-first")
second = Table("describe-second")


class Apple(Entity):
    class Meta:
        table = first
        pk = "APPLE#{apple_id}"
        sk = "APPLE"

    apple_id: str


class Pear(Entity):
    class Meta:
        table = second
        pk = "PEAR#{pear_id}"
        sk = "PEAR"

    pear_id: str
'''


def test_describe_honours_the_table_part(offline: Project) -> None:
    (offline.path / "fruit.py").write_text(TWO_TABLES)
    both = offline.run("describe", "fruit")
    assert both.returncode == 0, both.stderr
    assert "Apple" in both.stdout and "Pear" in both.stdout
    only = offline.run("describe", "fruit:second")
    assert only.returncode == 0, only.stderr
    assert "fruit:second  table 'describe-second'" in only.stdout
    assert "Pear" in only.stdout and "Apple" not in only.stdout
    assert "describe-first" not in only.stdout
    missing = offline.run("describe", "fruit:third")
    assert missing.returncode == 2
    assert "has no attribute 'third' (tables there: first, second)" in missing.stderr


MOVED = '''
from dynaorm import Entity, Previous, Table, Versioned

moving = Table("describe-moving")


class Account(Entity):
    class Meta:
        table = moving
        pk = "ACCOUNT#{id}"
        sk = "PROFILE"
        type_name = "account"
        previous = Previous(pk="USER#{id}", sk="ME", type_name="user",
                            stored_names={"email": "mail", "name": "full_name"})

    id: str
    email: str
    name: str = ""


class Ledger(Versioned):
    class Meta:
        table = moving
        pk = "LEDGER#{id}"
        sk = "LEDGER"
        previous = Previous(pk="BOOK#{id}")

    id: str
'''


def test_describe_shows_the_previous_layout(offline: Project) -> None:
    (offline.path / "moving.py").write_text(MOVED)
    result = offline.run("describe", "moving")
    assert result.returncode == 0, result.stderr
    account, ledger = result.stdout.split("\nLedger\n")
    assert "  previous   pk USER#{id}   sk ME   (a migration window: see dynaorm migrate)" in (
        account)
    assert "             type name user\n" in account
    assert "             stored names email as mail, name as full_name\n" in account
    assert "  previous   pk BOOK#{id}   sk LEDGER   (a migration" in ledger
    assert "             type name Ledger\n" in ledger
    assert "             stored names unchanged\n" in ledger
    plain = offline.run("describe", "models")
    assert plain.returncode == 0 and "previous" not in plain.stdout


# -- 0.6: the model as data (dynaorm model) and what it costs (dynaorm explain) ------------
def test_model_prints_the_model_and_each_format(offline: Project) -> None:
    import json

    from dynaorm import formats

    result = offline.run("model", "models:app")
    assert result.returncode == 0, result.stderr
    model = offline.models().app.model()
    assert json.loads(result.stdout) == model and result.stderr == ""
    for fmt in ("workbench", "mcp"):
        out = offline.path / f"design.{fmt}.json"
        result = offline.run("model", "models:app", "--format", fmt, "-o", str(out))
        assert result.returncode == 0 and result.stdout == "", result.stderr
        expected, notes = formats.export(model, fmt)
        assert json.loads(out.read_text()) == expected
        assert result.stderr.splitlines() == [f"dynaorm model: {n}" for n in notes]
        assert f"{fmt}: left out an LSI, 'lsi1'" in result.stderr
        code = offline.run("model", "--import", str(out), "--format", fmt)
        assert code.returncode == 0, code.stderr
        (offline.path / f"imported_{fmt}.py").write_text(code.stdout)
        table = code.stdout.split(" = _d.Table(")[0].split()[-1]
        again = offline.run("model", f"imported_{fmt}:{table}", "--format", fmt)
        assert again.returncode == 0, again.stderr
        assert json.loads(again.stdout) == expected  # the imported code exports the same


def test_model_import_of_a_bad_file_names_the_place_exit_2(offline: Project) -> None:
    bad = offline.path / "bad.json"
    bad.write_text('{"tables": [{"table_config": {"table_name": "t-1", "partition_key": 7}}]}')
    result = offline.run("model", "--import", str(bad), "--format", "mcp")
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr == ("dynaorm model: error: $.tables[0].table_config.partition_key: "
                             "expected an attribute name, got 7\n")
    bad.write_text("{\n  nope\n}")
    result = offline.run("model", "--import", str(bad))
    assert result.returncode == 2 and "line 2, column 3: not JSON" in result.stderr
    for args in (("model",), ("model", "models:app", "--import", str(bad)),
                 ("model", "--import", str(offline.path / "missing.json"))):
        result = offline.run(*args)
        assert result.returncode == 2 and result.stderr.count("\n") == 1, args


def test_model_chart_writes_one_page(offline: Project) -> None:
    page = offline.path / "design.html"
    result = offline.run("model", "models:app", "--chart", str(page))
    assert result.returncode == 0 and result.stdout == f"wrote {page}\n", result.stderr
    html = page.read_text()
    assert html.startswith("<!DOCTYPE html>") and 'id="entity-Member"' in html


def test_explain_prices_each_access_pattern_sending_nothing(offline: Project) -> None:
    result = offline.run("explain", "models")  # (no endpoint: a request would fail)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    for line in ("User get_user (GetItem)", "User save_user (TransactWriteItems)",
                 "User find_user_by_email (GetItem)", "Member query_member_on_gsi1 (Query)",
                 "Audit save_audit (TransactWriteItems)", "Audit history_audit (Query)"):
        assert line in out, line
    save = out.split("User save_user (TransactWriteItems)")[1].split("\n\n")[0]
    assert "User    unique guard  Put" in save and "index entry   put     gsi1" in save
    assert "total: 0 read units, 8 write units" in save
    big = offline.run("explain", "models:app", "--item-size", "3000")
    assert big.returncode == 0, big.stderr
    save = big.stdout.split("Audit save_audit (TransactWriteItems)")[1].split("\n\n")[0]
    assert "total: 0 read units, 12 write units" in save  # two rows of 3 KB, twice


# -- contract 23: no warning printed to a user of the CLI for a normal run -----------------
WARNED_MODELS = '''
from typing import Annotated

from dynaorm import GSI, LSI, Entity, Table, Unique, Vector, VectorIndex

app = Table({name!r}, indexes=[GSI("gsi1", pk="gsi1pk", sk="gsi1sk"), LSI("lsi1", sk="lsi1sk")],
            vector_indexes=[VectorIndex("by_meaning", attribute="embedding", dimensions=3,
                                        partition="org_id")])


class User(Entity):
    class Meta:
        table = app
        pk = "ORG#{{org_id}}#USER#{{user_id}}"
        sk = "PROFILE"
        unique = (Unique("email", normalize=str.lower, scope="ORG#{{org_id}}"),)
        indexes = {{"gsi1": ("ORG#{{org_id}}#", "USER#{{user_id}}")}}

    user_id: str
    org_id: str = "acme"
    email: str


class Doc(Entity):
    class Meta:
        table = app
        pk = "ORG#{{org_id}}#DOC#{{doc_id}}"
        sk = "DOC"
        versioned = True

    doc_id: str
    org_id: str = "acme"
    notes: str = ""
    embedding: Annotated[list[float], Vector(3)] = [0.1, 0.2, 0.3]


def touch(obj: User) -> User:
    obj.email = obj.email.lower()
    return obj
'''

#: every subcommand's documented happy path (docs/guide/cli.md) but the lake's; "{dir}" is
#: the project directory, "{url}" the engine; each runs in that order on one table
HAPPY_PATHS: list[tuple[str, ...]] = [
    ("--version",), ("create-table", "models:app", "--endpoint-url", "{url}"),
    ("describe", "models"), ("describe", "models:app"), ("model", "models:app"),
    *[("model", "models:app", "--format", f) for f in ("json", "workbench", "mcp",
                                                        "cloudformation", "terraform")],
    ("model", "models:app", "--chart", "{dir}/design.html"),
    ("model", "--import", "{dir}/design.json", "--format", "json"),
    ("explain", "models"), ("iam", "models:app", "--role", "read"),
    ("iam", "models:app", "--role", "write"),
    ("check", "models:app", "--endpoint-url", "{url}"),
    ("check", "models:app", "--endpoint-url", "{url}", "--engine", "local", "--segments", "2",
     "--workers", "2"),
    ("migrate", "models:app", "--dry-run", "--endpoint-url", "{url}"),
    ("backfill", "models:User", "models:touch", "--endpoint-url", "{url}"),
    ("export", "models:app", "{dir}/parquet", "--endpoint-url", "{url}"),
    ("mcp", "models:app", "--endpoint-url", "{url}"), ("demo",)]
MCP_SESSION = "\n".join([
    '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18",'
    '"capabilities":{},"clientInfo":{"name":"t","version":"1"}}}',
    '{"jsonrpc":"2.0","method":"notifications/initialized"}',
    '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"get_user",'
    '"arguments":{"org_id":"acme","user_id":"u1"}}}'])


@pytest.fixture(scope="module")
def warned(tmp_path_factory: pytest.TempPathFactory, dynoxide: str) -> Iterator[Project]:
    """A project whose table (a GSI, an LSI, a vector index, a unique rule, a versioned
    entity) holds a few items on dynoxide (it has vector indexes)."""
    path = tmp_path_factory.mktemp("warned")
    name = f"cli-{uuid.uuid4().hex[:10]}"
    (path / "models.py").write_text(textwrap.dedent(WARNED_MODELS.format(name=name)))
    project = Project(path, None, name)
    (path / "design.json").write_text(project.run("model", "models:app").stdout)
    models = project.models()
    models.app.connect(dynoxide)
    models.app.create()
    with Session(models.app) as s:  # (something to check, as a user's app writes it)
        s.save(models.User(user_id="u1", email="Ada@Example.com"))
        s.save(models.Doc(doc_id="d1"))
    yield project
    Table(name).connect(dynoxide).delete()


@pytest.mark.parametrize("args", HAPPY_PATHS, ids=lambda a: " ".join(a)[:60])
def test_a_normal_run_prints_no_warning(warned: Project, dynoxide: str,
                                        args: tuple[str, ...]) -> None:
    """Contract 23: a dynaorm warning or a dependency's warning is never printed to a user
    of the CLI for a normal run. Each command runs under ``-W error`` (every warning an
    error, those Python hides by default too): it succeeds and stderr holds no warning.
    (An endpoint's command left its connection to the engine open at exit: a
    ``ResourceWarning`` each.)"""
    argv = [a.format(url=dynoxide, dir=warned.path) for a in args]
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("AWS_", "DYNAORM_", "PYTHONWARNINGS"))}
    env.update(ENV, PYTHONPATH=os.pathsep.join((str(warned.path), str(ROOT))))
    command = [sys.executable, "-W", "error", "-m", "dynaorm.cli.main", *argv]
    if argv[0] == "mcp":  # (a client: each answer awaited, then stdin closed)
        result = _mcp_session(command, warned.path, env)
        assert '"id":2' in result.stdout and "ada@example.com" in result.stdout.lower()
    else:
        result = subprocess.run(command, cwd=warned.path, env=env, capture_output=True,
                                text=True, timeout=180, check=False)
    assert result.returncode == 0, result.stderr
    assert "Warning" not in result.stderr and "Exception ignored" not in result.stderr, (
        result.stderr)


def _mcp_session(command: list[str], cwd: Path, env: dict[str, str]
                 ) -> subprocess.CompletedProcess[str]:
    """``dynaorm mcp`` over stdio as a client drives it: each request's answer read before
    the next is sent, stdin closed at the end."""
    process = subprocess.Popen(command, cwd=cwd, env=env, stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert process.stdin is not None and process.stdout is not None
    answers = []
    try:
        for line in MCP_SESSION.splitlines():
            process.stdin.write(line + "\n")
            process.stdin.flush()
            if '"id"' in line:
                answers.append(process.stdout.readline())
        process.stdin.close()
        out = process.stdout.read()
        err = process.stderr.read() if process.stderr else ""
        process.wait(timeout=60)
    finally:
        process.kill()
    return subprocess.CompletedProcess(command, process.returncode, "".join(answers) + out,
                                       err)
