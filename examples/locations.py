"""Hierarchical sort keys: ``country#state#city#store``, queried at every level.

Run: ``python examples/locations.py [--endpoint-url URL]``
"""

from __future__ import annotations

from _support import run, show

from dynaorm import Entity, Table

geo = Table("dynaorm-example-locations")


class Store(Entity):
    class Meta:
        table = geo
        pk = "CHAIN#{chain}"
        sk = "{country}#{state}#{city}#{store_id}"   # least to most specific

    chain: str
    country: str
    state: str
    city: str
    store_id: str
    address: str = ""


def line(st: Store) -> str:
    return f"{st.country}/{st.state}/{st.city:<12} {st.store_id}  {st.address}"


def main() -> None:
    with run(geo, "stores by country, state and city") as db:
        s = db.session()
        rows = [("USA", "TX", "Houston", "s1", "1 Main St"),
                ("USA", "TX", "Houston", "s2", "77 Bay Rd"),
                ("USA", "TX", "Austin", "s3", "5 Congress Ave"),
                ("USA", "WA", "Seattle", "s4", "12 Pike St"),
                ("MEX", "NLE", "Monterrey", "s5", "Av. Constitucion 100"),
                ("USA", "TX", "Houstonia", "s6", "not Houston")]
        s.save_many([Store(chain="acme", country=c, state=st, city=ci, store_id=i, address=a)
                     for c, st, ci, i, a in rows])
        show('s.query(Store, chain="acme")', s.query(Store, chain="acme"), line)
        show('s.query(Store, chain="acme", country="USA")',
             s.query(Store, chain="acme", country="USA"), line)
        show('s.query(Store, chain="acme", country="USA", state="TX")',
             s.query(Store, chain="acme", country="USA", state="TX"), line)
        show('s.query(Store, chain="acme", country="USA", state="TX", city="Houston")',
             s.query(Store, chain="acme", country="USA", state="TX", city="Houston"), line)
        show('s.query(Store, chain="acme", country="USA").begins_with(state="T")',
             s.query(Store, chain="acme", country="USA").begins_with(state="T"), line)
        one = s.get(Store, chain="acme", country="USA", state="WA", city="Seattle", store_id="s4")
        print(f"\nget(...store_id='s4') -> {line(one) if one else None}")


if __name__ == "__main__":
    main()
