"""One identity for the CLI, the pytest plugin and the application (issue 21).

DynamoDB Local without ``-sharedDb`` keeps one database per access key and region. With an
AWS profile active, ``dynaorm create-table --endpoint-url <DynamoDB Local>`` and the plugin's
``--dynaorm-endpoint`` must sign with the profile's key, so the application (same profile)
sees their tables; with no credentials at all, all three use dynaorm's dummy key.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import botocore.session
import pytest

from dynaorm.client.settings import LOOPBACK_ACCESS_KEY, LOOPBACK_REGION, LOOPBACK_SECRET_KEY
from tests.support.ddb_local import DEFAULT_CACHE_DIR, QUICK_JVM, DynamoDBLocal, find_jar

MODELS = """
from dynaorm import Entity, Table

app = Table({name!r})


class Note(Entity):
    class Meta:
        table = app
        pk = "NOTE#{{note_id}}"
        sk = "NOTE"

    note_id: str
    text: str = ""
"""

ROOT = Path(__file__).resolve().parents[2]  # the dynaorm under test, not an installed one
PROFILE_CONFIG = "[profile dev]\nregion = eu-west-1\n"
PROFILE_CREDENTIALS = "[dev]\naws_access_key_id = devkey\naws_secret_access_key = devsecret\n"


@pytest.fixture(scope="module")
def keyed_local() -> Iterator[str]:
    """A DynamoDB Local keeping one database per access key and region (no -sharedDb)."""
    if find_jar(DEFAULT_CACHE_DIR) is None:
        pytest.skip("DynamoDB Local is not installed (run scripts/install-ddb-local.sh)")
    with DynamoDBLocal(shared_db=False, jvm_args=QUICK_JVM) as server:
        yield server.endpoint_url


def _project(tmp_path: Path) -> tuple[Path, str]:
    name = f"ident-{uuid.uuid4().hex[:10]}"
    (tmp_path / "models.py").write_text(textwrap.dedent(MODELS.format(name=name)))
    (tmp_path / "config").write_text(PROFILE_CONFIG)
    (tmp_path / "credentials").write_text(PROFILE_CREDENTIALS)
    return tmp_path, name


def _env(project: Path, profile: bool) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "DYNAORM_",
                                                                      "PYTEST_"))}
    env.update(PYTHONPATH=os.pathsep.join((str(project), str(ROOT))),
               AWS_EC2_METADATA_DISABLED="true", AWS_CONFIG_FILE=str(project / "config"),
               AWS_SHARED_CREDENTIALS_FILE=str(project / "credentials"))
    if profile:
        env["AWS_PROFILE"] = "dev"
    return env


def _tables(endpoint: str, key: str, secret: str, region: str) -> list[str]:
    client: Any = botocore.session.get_session().create_client(
        "dynamodb", endpoint_url=endpoint, region_name=region, aws_access_key_id=key,
        aws_secret_access_key=secret)
    names: list[str] = client.list_tables()["TableNames"]
    return names


PROFILE = ("devkey", "devsecret", "eu-west-1")
DUMMY = (LOOPBACK_ACCESS_KEY, LOOPBACK_SECRET_KEY, LOOPBACK_REGION)


@pytest.mark.parametrize("profile", [True, False], ids=["profile", "no-credentials"])
def test_cli_create_table_uses_the_applications_identity(tmp_path: Path, keyed_local: str,
                                                         profile: bool) -> None:
    project, name = _project(tmp_path)
    result = subprocess.run(
        [sys.executable, "-m", "dynaorm.cli.main", "create-table", "models:app",
         "--endpoint-url", keyed_local], cwd=project, env=_env(project, profile),
        capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    mine, other = (PROFILE, DUMMY) if profile else (DUMMY, PROFILE)
    assert name in _tables(keyed_local, *mine)
    assert name not in _tables(keyed_local, *other)


PLUGIN_CONFTEST = """
from dynaorm.testing import tables_fixture
from models import app

db = tables_fixture(app)
"""

PLUGIN_TEST = """
import botocore.session


def test_the_fixture_table_is_the_applications(db):
    # a client made the way the application makes one: the profile decides
    client = botocore.session.get_session().create_client(
        "dynamodb", endpoint_url=db.endpoint_url)
    assert db.table.name in client.list_tables()["TableNames"]
    assert client._request_signer._credentials.access_key == "devkey"
"""


def test_plugin_endpoint_uses_the_profile(tmp_path: Path, keyed_local: str) -> None:
    project, _ = _project(tmp_path)
    (project / "conftest.py").write_text(textwrap.dedent(PLUGIN_CONFTEST))
    (project / "test_app.py").write_text(textwrap.dedent(PLUGIN_TEST))
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
         "--dynaorm-endpoint", keyed_local], cwd=project, env=_env(project, True),
        capture_output=True, text=True, timeout=180, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 passed" in result.stdout
