"""`Versioned`: the base class that declares `version` and makes an entity versioned."""

from __future__ import annotations

import pytest

from dynaorm import DynaormError, Session, Versioned
from dynaorm.model.entity import spec_of
from dynaorm.testing import TestBackend
from tests.support.models import app


class Manual(Versioned):
    class Meta:
        table = app
        pk = "MANUAL#{manual_id}"
        sk = "BODY"

    manual_id: str
    text: str = ""


def test_versioned_base_declares_the_field_and_the_rule() -> None:
    assert spec_of(Manual).versioned
    assert Manual.model_fields["version"].annotation is int
    assert Manual(manual_id="m").version == 0
    with pytest.raises(DynaormError, match="abstract"):
        spec_of(Versioned)


def test_versioned_base_writes_versions(db: TestBackend) -> None:
    s = Session(app)
    manual = Manual(manual_id="m1", text="one")
    s.save(manual)
    s.commit()
    manual.text = "two"
    s.save(manual)
    s.commit()
    assert manual.version == 2
    assert [m.text for m in s.history(Manual, manual_id="m1").all()] == ["one", "two"]
    assert sorted(str(i["sk"]) for i in db.scan()) == [
        "v00000001_BODY", "v00000002_BODY", "v0_BODY"]
