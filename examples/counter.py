"""Counters without lost updates: an atomic ``add`` needs no read, and a load-change-save
of the same counter by two writers never loses one of them.

Run: ``python examples/counter.py [--endpoint-url URL]``
"""

from __future__ import annotations

from _support import run

from dynaorm import ConcurrentModificationError, Entity, Table

stats = Table("dynaorm-example-counter")


class PageViews(Entity):
    class Meta:
        table = stats
        pk = "PAGE#{path}"
        sk = "VIEWS"

    path: str
    views: int = 0
    referrers: set[str] = set()


def main() -> None:
    with run(stats, "atomic counters and no lost updates") as db:
        s = db.session()
        # no item yet: upsert creates it; add is an atomic increment (one UpdateItem)
        u = s.update(PageViews, path="/home", upsert=True).add(views=1, referrers={"google"})
        s.commit()
        first = u.result
        print(f"after the first view: views={first.views} referrers={sorted(first.referrers)}")

        for ref in ("bing", "google", "news"):
            s.update(PageViews, path="/home").add(views=1, referrers={ref})
            s.commit()
        page = s.get(PageViews, path="/home")
        assert page is not None
        print(f"after 4 views: views={page.views} referrers={sorted(page.referrers)}")

        # two writers load the same state and both increment: the second is refused
        a, b = db.session(), db.session()
        pa, pb = a.get(PageViews, path="/home"), b.get(PageViews, path="/home")
        assert pa is not None and pb is not None
        pa.views += 10
        a.save(pa)
        a.commit()
        pb.views += 100
        b.save(pb)
        try:
            b.commit()
        except ConcurrentModificationError as exc:
            print(f"second writer refused: {type(exc).__name__}")
        fresh = b.get(PageViews, path="/home")
        assert fresh is not None
        fresh.views += 100  # reload and retry
        b.save(fresh)
        b.commit()
        final = s.get(PageViews, path="/home", consistent=True)
        assert final is not None
        print(f"final views: {final.views}")


if __name__ == "__main__":
    main()
