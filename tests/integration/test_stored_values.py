"""A None field round-trips even when leaving it out would reload something else."""

from __future__ import annotations

from dynaorm import Entity
from dynaorm.testing import TestBackend
from tests.support.models import app


class NProfile(Entity):
    class Meta:
        table = app
        pk = "NPROFILE#{pid}"
        sk = "P"

    pid: str
    nick: str | None = "anon"          # non-None default
    motto: str | None                  # required, may be None
    bio: str | None = None             # plain optional: omitted when None


def test_none_round_trips_for_every_kind_of_optional_field(db: TestBackend) -> None:
    s = db.session()
    s.save(NProfile(pid="p1", nick=None, motto=None))
    s.commit()
    loaded = s.get(NProfile, pid="p1", consistent=True)
    assert loaded == NProfile(pid="p1", nick=None, motto=None, bio=None)
    (stored,) = [i for i in db.scan_raw() if i["pk"]["S"] == "NPROFILE#p1"]
    assert stored["nick"] == {"NULL": True} and stored["motto"] == {"NULL": True}
    assert "bio" not in stored


def test_setting_a_defaulted_field_to_none_is_written(db: TestBackend) -> None:
    s = db.session()
    s.save(NProfile(pid="p2", motto="carpe diem"))
    s.commit()
    loaded = s.get(NProfile, pid="p2")
    assert loaded is not None and loaded.nick == "anon"
    loaded.nick = None
    s.save(loaded)
    s.commit()
    again = s.get(NProfile, pid="p2", consistent=True)
    assert again is not None and again.nick is None and again.motto == "carpe diem"
