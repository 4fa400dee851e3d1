"""Stored names (pydantic aliases) and a field that is itself a key attribute (contract 14)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from pydantic import AliasChoices, BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from dynaorm import DynaormError, Entity, F, Session
from dynaorm.client.table import Table
from dynaorm.schema.entity import encode_entity, spec_of
from dynaorm.testing import TestBackend
from dynaorm.values.expressions import Placeholders
from tests.support.alias_models import Game, Player, games
from tests.support.engines import on_engine
from tests.support.recording import Requests


@pytest.fixture
def db(backend: str | None) -> Iterator[TestBackend]:
    yield from on_engine(backend, games)


def raw(db: TestBackend) -> list[dict[str, Any]]:
    return db.scan(games)


# -- pure ----------------------------------------------------------------------------------
def test_stored_item_uses_aliases_and_both_names_construct() -> None:
    a = Player(player_id="p1", fullName="Ann Lee", email="a@x.io", lvl=3)  # type: ignore[call-arg]
    b = Player(player_id="p1", full_name="Ann Lee", email="a@x.io", level=3)
    assert a == b
    item = encode_entity(a, spec_of(Player))
    assert {"fullName", "emailAddress", "lvl"} <= set(item)
    assert not {"full_name", "email", "level"} & set(item)
    assert item["lvl"] == {"N": "3"}


def test_field_as_index_key_is_stored_once() -> None:
    item = encode_entity(Game(game_id="g1", map="Green Grasslands", open_players="3",
                              creator="ann"), spec_of(Game))
    assert item["map"] == {"S": "Green Grasslands"}
    assert item["open_players"] == {"S": "3"}
    assert sorted(item) == ["_type", "createdBy", "game_id", "map", "open_players", "pk", "sk"]


def test_placeholders_translate_field_names() -> None:
    ph = Placeholders({"level": "lvl"})
    assert ph.name("level") == "#n0"
    assert ph.name("level.x") == "#n0.#n1"
    assert ph.names == {"#n0": "lvl", "#n1": "x"}


def test_a_field_named_like_a_key_attribute_is_still_refused() -> None:
    with pytest.raises(DynaormError, match="collide with key attributes"):
        class Clash(Entity):
            class Meta:
                table = games
                pk = "C#{c}"
                sk = "C"
            c: str
            map: str  # not used as the by_map key by this entity: it would leak into it


def test_two_fields_with_one_stored_name_are_refused() -> None:
    with pytest.raises(DynaormError, match="both stored as attribute 'x'"):
        class Twice(Entity):
            class Meta:
                table = games
                pk = "T#{t}"
                sk = "T"
            t: str
            a: str = Field(alias="x")
            b: str = Field(alias="x")


def test_an_alias_onto_a_key_attribute_is_refused() -> None:
    with pytest.raises(DynaormError, match="collide"):
        class Onto(Entity):
            class Meta:
                table = games
                pk = "O#{o}"
                sk = "O"
            o: str
            where: str = Field(alias="pk")


# -- on the backends -----------------------------------------------------------------------
def test_aliased_entity_round_trips(db: TestBackend) -> None:
    s = db.session()
    s.save(Player(player_id="p1", full_name="Ann Lee", email="a@x.io", level=3, tags={"x"}))
    s.commit()
    got = s.get(Player, player_id="p1")  # 0.1: a ValidationError
    assert got is not None and got.full_name == "Ann Lee" and got.level == 3
    assert got.email == "a@x.io" and got.tags == {"x"}
    [item] = raw(db)[1:] if raw(db)[0]["pk"].startswith("email#") else raw(db)[:1]
    assert item["fullName"] == "Ann Lee" and item["lvl"] == 3 and "full_name" not in item
    assert s.find(Player, email="a@x.io") == got


def test_partial_update_writes_stored_names(db: TestBackend) -> None:
    s = db.session()
    s.save(Player(player_id="p1", full_name="Ann", email="a@x.io"))
    s.commit()
    p = s.get(Player, player_id="p1")
    assert p is not None
    p.level = 7
    p.full_name = "Ann Lee"
    s.save(p)
    rec = Requests(games)
    s.commit()
    [update] = rec.of("UpdateItem")
    assert set(update["ExpressionAttributeNames"].values()) >= {"lvl", "fullName"}
    assert "level" not in update["ExpressionAttributeNames"].values()
    again = Session(games).get(Player, player_id="p1", consistent=True)
    assert again is not None and again.level == 7 and again.full_name == "Ann Lee"


def test_update_where_filter_values_keys_use_field_names(db: TestBackend) -> None:
    s = db.session()
    for i in range(5):
        s.save(Player(player_id=f"p{i}", full_name=f"N{i}", email=f"{i}@x", level=i))
    s.commit()
    s.update(Player, player_id="p2").add(level=10).where(F("level") == 2)
    s.commit()
    got = s.get(Player, player_id="p2")
    assert got is not None and got.level == 12
    rec = Requests(games)
    found = s.scan(Player).filter(F("level") >= 3).all()
    assert sorted(p.player_id for p in found) == ["p2", "p3", "p4"]
    [scan] = rec.of("Scan")
    assert "lvl" in scan["ExpressionAttributeNames"].values()
    values = s.scan(Player).filter(F("level") == 12).values("full_name", "level")
    assert values == [{"full_name": "N2", "level": 12}]
    assert "fullName" in rec.of("Scan")[-1]["ExpressionAttributeNames"].values()
    keys = s.scan(Player).keys()
    assert sorted(k["player_id"] for k in keys) == [f"p{i}" for i in range(5)]


def test_save_condition_on_an_aliased_field(db: TestBackend) -> None:
    from dynaorm import ConditionFailedError

    s = db.session()
    s.save(Player(player_id="p1", full_name="Ann", email="a@x.io", level=1))
    s.commit()
    p = s.get(Player, player_id="p1")
    assert p is not None
    p.full_name = "Bob"
    s.save(p, condition=F("level") == 5)
    with pytest.raises(ConditionFailedError):
        s.commit()
    s.rollback()
    stored = Session(games).get(Player, player_id="p1", consistent=True)
    assert stored is not None and stored.full_name == "Ann"  # nothing changed
    p.full_name = "Bob"
    s.save(p, condition=F("level") == 1)
    s.commit()
    stored = Session(games).get(Player, player_id="p1", consistent=True)
    assert stored is not None and stored.full_name == "Bob"


@pytest.mark.dynaorm_index_lag(0, reason="checks its own writes through a global index")
def test_field_as_gsi_key_queries_and_updates(db: TestBackend) -> None:
    s = db.session()
    s.save(Game(game_id="g1", map="Green Grasslands", open_players="2", creator="ann"))
    s.save(Game(game_id="g2", map="Green Grasslands", creator="bob"))  # sparse: not indexed
    s.save(Game(game_id="g3", map="Juicy Jungle", open_players="1", creator="cy"))
    s.commit()
    on_map = s.query(Game, index="by_map", map="Green Grasslands").all()
    assert [g.game_id for g in on_map] == ["g1"]
    s.update(Game, game_id="g1").set(map="Juicy Jungle")
    s.commit()
    jungle = s.query(Game, index="by_map", map="Juicy Jungle").all()
    assert sorted(g.game_id for g in jungle) == ["g1", "g3"]
    item = next(i for i in raw(db) if i["pk"] == "GAME#g1")
    assert item["map"] == "Juicy Jungle" and item["createdBy"] == "ann"
    g = s.get(Game, game_id="g2")
    assert g is not None and g.open_players is None
    g.open_players = "4"
    s.save(g)
    s.commit()
    assert [x.game_id for x in s.query(Game, index="by_map", map="Green Grasslands")] == ["g2"]


def test_check_repairs_a_missing_guard_of_an_aliased_unique_field(db: TestBackend) -> None:
    from dynaorm.jobs.audit import audit_items, repair

    games.client.put_item(TableName=games.name, Item={
        "pk": {"S": "PLAYER#p9"}, "sk": {"S": "PROFILE"}, "_type": {"S": "Player"},
        "player_id": {"S": "p9"}, "fullName": {"S": "Nine"}, "emailAddress": {"S": "9@x.io"},
        "lvl": {"N": "1"}})
    problems = audit_items(games, db.scan_raw(games))
    assert [(p.kind, p.detail) for p in problems] == [
        ("missing-guard", "Player.email has no guard item 'email#9@x.io'")]
    check = problems[0].fix[1]["ConditionCheck"]
    assert "emailAddress" in check["ExpressionAttributeNames"].values()
    assert [r.ok for r in repair(games, problems)] == [True]
    assert audit_items(games, db.scan_raw(games)) == []
    assert db.session().find(Player, email="9@x.io") is not None


def test_check_conditions_use_field_names(db: TestBackend) -> None:
    from dynaorm import ConditionFailedError

    s = db.session()
    s.save(Player(player_id="p1", full_name="Ann", email="a@x.io", level=4))
    s.save(Player(player_id="p2", full_name="Bo", email="b@x.io"))
    s.commit()
    s.check(Player, player_id="p1", condition=F("level") == 4)
    s.update(Player, player_id="p2").set(full_name="Bo B")
    s.commit()
    s.check(Player, player_id="p1", condition=F("full_name") == "nobody")
    s.update(Player, player_id="p2").set(full_name="Zed")
    with pytest.raises(ConditionFailedError):
        s.commit()
    s.rollback()
    stored = Session(games).get(Player, player_id="p2", consistent=True)
    assert stored is not None and stored.full_name == "Bo B"


# --- nested models' aliases of every kind (issue 59, point 1b) ---------------------------
# (red team of issue 59's fixes; moved from integration/test_fix59_red_team.py)


aliased = Table("dynaorm-red-aliases")


class Deep(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True)
    long_name: str = "d"


class Camel(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel)
    first_name: str
    deep: Deep | None = None


class OnlyValidation(BaseModel):
    x: str = Field(validation_alias=AliasChoices("ex", "x_in"))


class OnlySerialization(BaseModel):
    y: str = Field(serialization_alias="why")


class Aliased(Entity):
    class Meta:
        table = aliased
        pk = "DOC#{doc_id}"
        sk = "DOC"

    doc_id: str
    camel: Camel
    by: dict[str, Camel] = {}
    grid: list[list[Camel]] = []
    va: OnlyValidation | None = None
    sa: OnlySerialization | None = None


def _aliased(i: str = "1") -> Aliased:
    return Aliased(doc_id=i, camel=Camel(firstName="a", deep=Deep(longName="L")),
                   by={"k": Camel(firstName="b")}, grid=[[Camel(firstName="n")]],
                   va=OnlyValidation(ex="v"), sa=OnlySerialization(y="s"))


@pytest.fixture
def aliased_tb(backend: str | None) -> Any:
    yield from on_engine(backend, aliased)


def test_every_alias_kind_saves_and_reads_back(aliased_tb: Any) -> None:
    """alias_generator (nested twice), dicts and lists of lists of aliased models, a
    validation_alias only and a serialization_alias only: fix59 refused the last two at
    save (``InvalidValueError``: check_fields dumped them by alias and validated by
    alias, which a validation_alias or serialization_alias alone does not round-trip)."""
    want = _aliased()
    with Session(aliased) as s:
        s.save(want)
    s = Session(aliased)
    assert s.get(Aliased, doc_id="1") == want
    assert s.query(Aliased, doc_id="1").all() == [want]
    assert s.scan(Aliased).all() == [want]
    assert s.get_many(Aliased, [{"doc_id": "1"}]) == [want]
    assert s.query(Aliased, doc_id="1").filter(F("camel.deep.long_name") == "L").all() == [want]
    assert s.query(Aliased, doc_id="1").values("va", "sa") == [
        {"va": OnlyValidation(ex="v"), "sa": OnlySerialization(y="s")}]


def test_an_aliased_nested_model_changed_in_place_saves(aliased_tb: Any) -> None:
    with Session(aliased) as s:
        s.save(_aliased())
    with Session(aliased) as s:
        got = s.get(Aliased, doc_id="1")
        assert got is not None and got.sa is not None and got.va is not None
        got.sa.y, got.va.x, got.camel.first_name = "s2", "v2", "a2"
        s.save(got)
    again = Session(aliased).get(Aliased, doc_id="1")
    assert again is not None and again.sa is not None and again.va is not None
    assert (again.sa.y, again.va.x, again.camel.first_name) == ("s2", "v2", "a2")


