"""Page cursors across processes: what one worker hands out, another resumes, with no
configuration (checksummed cursors) and with a shared secret (sealed cursors); a worker
with another secret refuses them. Each page is read by a separate Python process against
DynamoDB Local, as two web workers behind a load balancer would. (The cursor checks
themselves: integration/test_cursor_security.py.)"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from dynaorm.testing import TestBackend
from tests.support.models import EReading

pytestmark = pytest.mark.sync_only

ROOT = Path(__file__).resolve().parents[2]
WORKER = """
import json, sys
from dynaorm import InvalidCursorError, Session
from tests.support.models import EReading, app
app.name = sys.argv[1]
app.connect(sys.argv[2])
q = Session(app).query(EReading, device="d1").page_size(4)
try:
    page = q.page(sys.argv[3] or None)
except InvalidCursorError as exc:
    print(json.dumps({"error": str(exc)}))
else:
    print(json.dumps({"items": [r.ts for r in page.items], "cursor": page.cursor}))
"""


def _worker(db: TestBackend, cursor: str | None, secret: str | None) -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if k != "DYNAORM_CURSOR_SECRET"}
    env["PYTHONPATH"] = str(ROOT)
    if secret is not None:
        env["DYNAORM_CURSOR_SECRET"] = secret
    assert db.endpoint_url is not None
    done = subprocess.run([sys.executable, "-c", WORKER, db.table.name, db.endpoint_url,
                           cursor or ""], env=env, capture_output=True, text=True,
                          check=True, cwd=ROOT, timeout=120)
    answer: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return answer


@pytest.fixture
def readings(db: TestBackend) -> TestBackend:
    if db.endpoint_url is None:
        pytest.skip("another process needs an engine over HTTP (DynamoDB Local)")
    db.session().save_many([EReading(device="d1", ts=i) for i in range(10)])
    return db


@pytest.mark.parametrize("secret", [None, "shared by every worker"])
def test_pages_resume_in_another_process(readings: TestBackend, secret: str | None) -> None:
    first = _worker(readings, None, secret)
    assert first["items"] == [0, 1, 2, 3]
    second = _worker(readings, first["cursor"], secret)  # another worker
    assert second["items"] == [4, 5, 6, 7]
    third = _worker(readings, second["cursor"], secret)
    assert third["items"] == [8, 9] and third["cursor"] is None


def test_a_worker_with_another_secret_refuses_the_cursor(readings: TestBackend) -> None:
    first = _worker(readings, None, "secret one")
    assert "another secret" in _worker(readings, first["cursor"], "secret two")["error"]
    assert "error" in _worker(readings, first["cursor"], None)
    unsealed = _worker(readings, None, None)
    assert "error" in _worker(readings, unsealed["cursor"], "secret one")
