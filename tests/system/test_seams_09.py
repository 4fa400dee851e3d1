"""The seams of release 0.9 (contract 24), attacked pair by pair by someone who wrote none
of them: the round trip and ``StoredAs`` (a), inference (b), leases (c), the public door's
``Session.run`` (d), scoped sessions (e), bulk loads (f). Each test states what must never
happen where two surfaces meet. Nothing here depends on the engine: moto only."""

from __future__ import annotations

import sys
import types
import uuid
import warnings
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from functools import partial
from typing import Annotated, Any

import pytest

from dynaorm import Entity, Lease, LeaseError, ScopeError, Session, StoredAs, Table
from dynaorm.testing import TestBackend, moto_backend, use_tables

pytestmark = [pytest.mark.engines("moto"), pytest.mark.sync_only]

WHEN = datetime(2026, 1, 1, 10, 30, tzinfo=UTC)
EPOCH = str(int(WHEN.timestamp()))


@pytest.fixture
def moto(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """moto in process, boto3's own clients (inference's) included."""
    from moto import mock_aws

    for name, value in (("AWS_ACCESS_KEY_ID", "x"), ("AWS_SECRET_ACCESS_KEY", "x"),
                        ("AWS_DEFAULT_REGION", "us-east-1")):
        monkeypatch.setenv(name, value)
    with mock_aws(), moto_backend():
        yield


# -- (a) x (b): the model inference prints writes a time as the table stores it -------------
times = Table("seams09_times")


class Visit(Entity):
    """An optional epoch time spelled as pydantic lets one spell it: the ``Annotated``
    inside the ``| None``."""

    class Meta:
        table = times
        pk = "V#{visit_id}"
        sk = "VISIT"

    visit_id: str
    expires: Annotated[datetime, StoredAs.EPOCH_SECONDS] | None = None


def test_an_optional_stored_as_time_is_written_in_its_format(moto: None) -> None:
    """``Annotated[datetime, StoredAs.EPOCH_SECONDS] | None`` stores a number, as
    ``Annotated[datetime | None, StoredAs.EPOCH_SECONDS]`` does: never ISO text beside
    the other writers' numbers (it did, silently), and reads back, changed or not."""
    with use_tables(times) as b:
        with Session(times) as s:
            s.save(Visit(visit_id="v1", expires=WHEN))
        (item,) = b.scan_raw()
        assert item["expires"] == {"N": EPOCH}
        with Session(times) as s:
            got = s.get(Visit, visit_id="v1")
            assert got is not None and got.expires == WHEN
            got.expires = WHEN + timedelta(seconds=1)
            s.save(got)
        (item,) = b.scan_raw()
        assert item["expires"] == {"N": str(int(WHEN.timestamp()) + 1)}


def _defined(code: str) -> Table:
    module = types.ModuleType(f"seams09_inferred_{uuid.uuid4().hex}")
    sys.modules[module.__name__] = module  # (pydantic resolves annotations through it)
    exec(compile(code, "<inferred>", "exec"), module.__dict__)
    return next(v for v in vars(module).values() if isinstance(v, Table))


def test_the_inferred_model_of_an_optional_epoch_time_saves_numbers(moto: None) -> None:
    """Inference of a table whose items hold an epoch time on some items only prints an
    optional ``StoredAs`` time; a save through the printed model (a new object, and a
    changed time of a loaded one) stores a number there, never ISO text the table's other
    writers cannot read as their time."""
    import boto3

    from dynaorm.client.infer import infer_code

    with use_tables(times) as b:
        raw = boto3.client("dynamodb", region_name="us-east-1")
        for n in range(6):
            item: dict[str, Any] = {"pk": {"S": f"V#v{n}"}, "sk": {"S": "VISIT"},
                                    "visit_id": {"S": f"v{n}"}}
            if n % 2:
                item["expires"] = {"N": str(int(WHEN.timestamp()) + n)}
            raw.put_item(TableName=times.name, Item=item)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            code, _ = infer_code(times.name, client=raw, report=None)
        assert "StoredAs.EPOCH_SECONDS" in code, code
        table = _defined(code)
        cls = next(iter(table.entities.values()))
        table.connect(None, "us-east-1")
        with Session(table) as s:
            s.save(cls(visit_id="new", expires=WHEN))
            old = s.get(cls, visit_id="v0")
            assert old is not None
            old.expires = WHEN
            s.save(old)
        stored = {i["visit_id"]["S"]: i.get("expires") for i in b.scan_raw()}
        assert stored["new"] == {"N": EPOCH} and stored["v0"] == {"N": EPOCH}, stored
