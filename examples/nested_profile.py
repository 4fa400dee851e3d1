"""Nested paths and the model's rules on every write: one field of an address, a counter
inside a stats object and a list of events, each changed alone in one ``UpdateItem``;
results held to the model's bounds; a typo in a path or a filter refused before sending.

Run: ``python examples/nested_profile.py [--endpoint-url URL]``
"""

from __future__ import annotations

from _support import run
from pydantic import BaseModel, Field

from dynaorm import ConditionFailedError, Entity, F, InvalidValueError, Table

profiles = Table("dynaorm-example-nested")


class Address(BaseModel):
    city: str
    zip: str | None = None


class Stats(BaseModel):
    logins: int = Field(default=0, ge=0)
    credits: int = Field(default=0, ge=0, le=100)


class Event(BaseModel):
    kind: str = Field(min_length=1)
    at: int


class Profile(Entity):
    class Meta:
        table = profiles
        pk = "PROFILE#{user_id}"
        sk = "PROFILE"

    user_id: str
    address: Address
    stats: Stats = Stats()
    history: list[Event] = Field(default_factory=list, max_length=3)
    prefs: dict[str, str] = Field(default_factory=dict)


def main() -> None:
    with run(profiles, "nested paths and rules on every write") as db:
        s = db.session()
        s.save(Profile(user_id="u1", address=Address(city="Oslo", zip="0150")))
        s.commit()

        # one field of the address: the zip and every other attribute are left alone
        u = (s.update(Profile, user_id="u1").set(F("address.city"), "Bergen")
             .add(F("stats.logins"), 1).append(F("history"), [Event(kind="login", at=1)])
             .set_default(F("prefs")["theme"], "dark"))
        s.commit()
        p = u.result
        print(f"address: {p.address.city} {p.address.zip}; logins={p.stats.logins}; "
              f"history={[e.kind for e in p.history]}; prefs={p.prefs}")

        # a decrement that keeps ge=0 goes through; one that would break it is refused
        s.update(Profile, user_id="u1").add(F("stats.credits"), 30)
        s.commit()
        s.update(Profile, user_id="u1").add(F("stats.credits"), -30)
        s.commit()
        s.update(Profile, user_id="u1").add(F("stats.credits"), -1)
        try:
            s.commit()
        except ConditionFailedError as exc:
            print(f"refused: {exc}")

        # the list of events is held to max_length=3: the fourth event is refused
        for at in (2, 3):
            s.update(Profile, user_id="u1").append(F("history"), [{"kind": "view", "at": at}])
            s.commit()
        s.update(Profile, user_id="u1").append(F("history"), [{"kind": "view", "at": 4}])
        try:
            s.commit()
        except ConditionFailedError as exc:
            print(f"refused: {exc}")

        # one element of the list, by index; a key of the map removed
        s.update(Profile, user_id="u1").set(F("history")[0]["kind"], "signup").remove(
            F("prefs")["theme"])
        s.commit()
        p2 = s.get(Profile, user_id="u1")
        assert p2 is not None
        print(f"history={[e.kind for e in p2.history]}; prefs={p2.prefs}; "
              f"credits={p2.stats.credits}")

        # a typo is an error, not an empty result
        for bad in (lambda: s.query(Profile, user_id="u1").filter(F("adress.city") == "x"),
                    lambda: s.update(Profile, user_id="u1").set(F("address.town"), "x")):
            try:
                bad()
            except InvalidValueError as exc:
                print(f"typo: {exc}")


if __name__ == "__main__":
    main()
