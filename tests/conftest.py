"""Backends for the suite: every test that takes ``backend`` or ``db`` runs twice, on the
in-process moto and on DynamoDB Local (installed from npm by ``make test``).

DynamoDB Local is required when ``CI=true`` or ``DYNAORM_REQUIRE_LOCAL=1``: there, a
missing jar or a server that does not start fails the run instead of skipping.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from dynaorm.testing import TestBackend, moto_backend, use_tables
from tests.ddb_local import DEFAULT_CACHE_DIR, DynamoDBLocal, find_jar
from tests.models import app

BACKENDS = ("moto", "local")


def _required() -> bool:
    return os.environ.get("CI", "").lower() == "true" or os.environ.get(
        "DYNAORM_REQUIRE_LOCAL") == "1"


@pytest.fixture(scope="session")
def ddb_local() -> Iterator[str]:
    """The endpoint of a DynamoDB Local server shared by the whole run."""
    if find_jar(DEFAULT_CACHE_DIR) is None:
        msg = "DynamoDB Local is not installed (run scripts/install-ddb-local.sh or make test)"
        if _required():
            pytest.fail(msg)
        pytest.skip(msg)
    server = DynamoDBLocal()
    try:
        server.start()
    except Exception as exc:
        if _required():
            pytest.fail(f"DynamoDB Local did not start: {exc}")
        pytest.skip(f"DynamoDB Local did not start: {exc}")
    try:
        yield server.endpoint_url
    finally:
        server.stop()


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> Iterator[str | None]:
    """``None`` for moto (active for the test), or DynamoDB Local's endpoint URL."""
    if request.param == "moto":
        with moto_backend():
            yield None
    else:
        yield request.getfixturevalue("ddb_local")


@pytest.fixture
def db(backend: str | None) -> Iterator[TestBackend]:
    """The shared test table (tests/models.py), fresh, on the current backend."""
    with use_tables(app, endpoint_url=backend) as tb:
        yield tb
