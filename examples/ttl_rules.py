"""TTL with rules (0.3): an expired owner never blocks its unique values, and the history
of a versioned entity never has gaps.

A handle is reserved until a time; once that time has passed, someone else can reserve
it, even though DynamoDB has not deleted the expired reservation yet (it may take days):
the guard item carries its owner's TTL, and a claim over an expired guard succeeds. A
versioned document whose TTL passes reads as gone, but its history stays whole: version
rows never carry the TTL attribute.

Run: ``python examples/ttl_rules.py [--endpoint-url URL]``
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from _support import run, show

from dynaorm import Entity, Table, UniqueConstraintError
from dynaorm.jobs.checking import check_table

store = Table("dynaorm-example-ttl-rules", ttl="expires")


class Reservation(Entity):
    class Meta:
        table = store
        pk = "RES#{reservation_id}"
        sk = "RES"
        unique = ("handle",)

    reservation_id: str
    handle: str
    expires: datetime | None = None


class Draft(Entity):
    class Meta:
        table = store
        pk = "DRAFT#{draft_id}"
        sk = "DRAFT"
        versioned = True

    draft_id: str
    text: str
    expires: datetime | None = None


def main() -> None:
    now = datetime.now(UTC).replace(microsecond=0)
    with run(store, "TTL with unique values and history") as db:
        s = db.session()
        s.save(Reservation(reservation_id="r1", handle="ada", expires=now + timedelta(days=1)))
        s.commit()
        guard = next(i for i in db.scan() if i["pk"] == "handle#ada")
        print(f"\nthe guard carries its owner's TTL: "
              f"{guard['expires'] == int((now + timedelta(days=1)).timestamp())}")

        s.save(Reservation(reservation_id="r2", handle="ada", expires=now + timedelta(days=2)))
        try:
            s.commit()
        except UniqueConstraintError as exc:
            print(f"a live reservation blocks: {type(exc).__name__} ({exc.field}={exc.value!r})")

        r1 = s.get(Reservation, reservation_id="r1")
        assert r1 is not None
        r1.expires = now - timedelta(minutes=1)  # r1 expires (its guard with it)
        s.save(r1)
        s.commit()
        s.save(Reservation(reservation_id="r2", handle="ada", expires=now + timedelta(days=2)))
        s.commit()
        owner = s.find(Reservation, handle="ada")
        print(f"after r1 expired, r2 reserved 'ada': owner={owner and owner.reservation_id}")
        # (r1 stays stored until DynamoDB deletes it; reads skip it already)
        print(f"r1 read: {s.get(Reservation, reservation_id='r1')}")

        draft = Draft(draft_id="d1", text="first", expires=now + timedelta(days=1))
        s.save(draft)
        s.commit()
        draft.text = "second"
        s.save(draft)
        s.commit()
        draft.text, draft.expires = "third", now - timedelta(minutes=1)  # it expires
        s.save(draft)
        s.commit()
        rows = [i for i in db.scan() if i["pk"] == "DRAFT#d1" and i["sk"] != "v0_DRAFT"]
        print(f"\nversion rows under the TTL attribute: {sum('expires' in r for r in rows)}")
        show('s.get(Draft, draft_id="d1")', [s.get(Draft, draft_id="d1")])
        show('s.history(Draft, draft_id="d1")', s.history(Draft, draft_id="d1"),
             lambda d: f"v{d.version}: {d.text}")  # type: ignore[attr-defined]

        result = check_table(store)
        print(f"\ndynaorm check: {len(result.problems)} problem(s)")


if __name__ == "__main__":
    main()
