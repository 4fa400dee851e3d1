"""The pytest plugin (``pytest11`` entry point): a user's project gets an in-process
DynamoDB and fresh tables from one line in its conftest.py, with nothing to register."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from dynaorm import Entity, Session, Table, UniqueConstraintError

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


def _pytest(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("AWS_", "DYNAORM_", "PYTEST_"))}  # plugin autoload stays on
    env["PYTHONPATH"] = str(project)
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

