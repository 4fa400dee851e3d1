"""A leaderboard: each player's score is in a GSI sort key, so the top players are one
query. ``add(score=...)`` on that field makes dynaorm read the row first and re-render the
index key in the same write (conditioned on what it read).

Run: ``python examples/leaderboard.py [--endpoint-url URL]``
"""

from __future__ import annotations

from _support import run, show

from dynaorm import GSI, Entity, Table

arcade = Table("dynaorm-example-leaderboard", indexes=[GSI("by_score", pk="gpk", sk="gsk")])


class Player(Entity):
    class Meta:
        table = arcade
        pk = "PLAYER#{player_id}"
        sk = "PLAYER"
        unique = ("handle",)
        indexes = {"by_score": ("BOARD#{board}", "{score:010d}#{player_id}")}

    player_id: str
    handle: str
    board: str = "arcade"
    score: int = 0


def main() -> None:
    with run(arcade, "a leaderboard: add on a GSI sort key field") as db:
        s = db.session()
        for pid, handle in (("p1", "ann"), ("p2", "bob"), ("p3", "cat")):
            s.save(Player(player_id=pid, handle=handle))
        s.commit()
        for pid, points in (("p2", 40), ("p1", 25), ("p3", 10), ("p1", 30)):
            u = s.update(Player, player_id=pid).add(score=points)
            s.commit()
            print(f"{u.result.handle} +{points} -> {u.result.score}")
        show('top 3: s.query(Player, index="by_score", board="arcade").reverse().limit(3)',
             s.query(Player, index="by_score", board="arcade").reverse().limit(3),
             lambda p: f"{p.handle}: {p.score}")
        row = next(i for i in db.scan() if i.get("player_id") == "p1")
        print(f"p1's index key: {row['gsk']}")


if __name__ == "__main__":
    main()
