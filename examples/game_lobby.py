"""A multiplayer game lobby: players join while fewer than 50 are in (an atomic ``add``
with a ``where``), and a game starts exactly once (a condition), all without making the
game versioned.

Run: ``python examples/game_lobby.py [--endpoint-url URL]``
"""

from __future__ import annotations

from _support import run

from dynaorm import ConditionFailedError, Entity, F, Session, Table

games = Table("dynaorm-example-game-lobby")
CAPACITY = 50


class Game(Entity):
    class Meta:
        table = games
        pk = "GAME#{game_id}"
        sk = "GAME"

    game_id: str
    people: int = 0
    started: bool = False


class Seat(Entity):
    class Meta:
        table = games
        pk = "GAME#{game_id}"
        sk = "PLAYER#{player}"

    game_id: str
    player: str


def join(s: Session, game_id: str, player: str) -> bool:
    """One transaction: count the player in (only while there is room and the game has not
    started) and write their seat (only once)."""
    s.update(Game, game_id=game_id).add(people=1).where(
        (F("people") < CAPACITY) & (F("started") == False))  # noqa: E712 - a condition
    s.save(Seat(game_id=game_id, player=player))
    try:
        s.commit()
    except ConditionFailedError:
        return False
    return True


def start(s: Session, game_id: str) -> bool:
    s.update(Game, game_id=game_id).set(started=True).where(F("started") == False)  # noqa: E712
    try:
        s.commit()
    except ConditionFailedError:
        return False
    return True


def main() -> None:
    with run(games, "a game lobby: capacity limit and a one-time start") as db:
        s = db.session()
        s.save(Game(game_id="g1"))
        s.commit()
        joined = sum(join(s, "g1", f"p{i:02d}") for i in range(53))
        game = s.get(Game, game_id="g1", consistent=True)
        assert game is not None
        seats = s.query(Seat, game_id="g1").all()
        print(f"53 tried to join: {joined} joined, people={game.people}, seats={len(seats)}")
        print(f"first start: {start(s, 'g1')}")
        print(f"second start: {start(s, 'g1')}")
        print(f"joining a started game: {join(db.session(), 'g1', 'late')}")
        game = s.get(Game, game_id="g1", consistent=True)
        assert game is not None
        print(f"final: people={game.people} started={game.started}")


if __name__ == "__main__":
    main()
