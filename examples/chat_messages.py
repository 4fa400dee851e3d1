"""Chat messages: a room partition with a ``user#datetime`` sort key, and a GSI whose sort
key reverses the template (``datetime#user``) to read a room's messages by time.

Run: ``python examples/chat_messages.py [--endpoint-url URL]``
"""

from __future__ import annotations

from datetime import UTC, datetime

from _support import run, show

from dynaorm import GSI, Entity, Table

chat = Table("dynaorm-example-chat", indexes=[GSI("gsi1", pk="gsi1pk", sk="gsi1sk")])


class Message(Entity):
    class Meta:
        table = chat
        pk = "ROOM#{room}"
        sk = "{user}#{sent:%Y-%m-%d:%H:%M:%S}"            # least to most specific
        indexes = {"gsi1": ("ROOM#{room}", "{sent:%Y-%m-%d:%H:%M:%S}#{user}")}  # by time

    room: str
    user: str
    sent: datetime
    text: str


def line(m: Message) -> str:
    return f"{m.sent:%Y-%m-%d %H:%M}  {m.user:<6} {m.text}"


def main() -> None:
    with run(chat, "chat messages by room, user and month") as db:
        s = db.session()
        at = [datetime(2017, 12, 31, 22, 0), datetime(2018, 7, 2, 9, 15),
              datetime(2018, 8, 3, 10, 0), datetime(2018, 8, 21, 17, 30),
              datetime(2018, 9, 1, 8, 5)]
        texts = ["happy new year", "anyone at the lake?", "meeting at ten",
                 "pizza tonight", "back from holidays"]
        msgs = [Message(room="seattle", user="amsg", sent=t.replace(tzinfo=UTC), text=x)
                for t, x in zip(at, texts, strict=True)]
        msgs += [Message(room="seattle", user="bob", sent=datetime(2018, 8, 9, 12, 0, tzinfo=UTC),
                         text="who has the slides?"),
                 Message(room="seattle", user="carla",
                         sent=datetime(2018, 8, 3, 10, 2, tzinfo=UTC), text="on my way"),
                 Message(room="portland", user="amsg",
                         sent=datetime(2018, 8, 4, 9, 0, tzinfo=UTC), text="other room")]
        s.save_many(msgs)
        print(f"stored {len(msgs)} messages, e.g. sk = {db.scan()[0]['sk']!r}")

        show('s.query(Message, room="seattle", user="amsg")',
             s.query(Message, room="seattle", user="amsg"), line)
        show('s.query(Message, room="seattle", user="amsg").begins_with(sent="2018")',
             s.query(Message, room="seattle", user="amsg").begins_with(sent="2018"), line)
        show('s.query(Message, room="seattle", user="amsg").begins_with(sent="2018-08")',
             s.query(Message, room="seattle", user="amsg").begins_with(sent="2018-08"), line)
        show('s.query(Message, index="gsi1", room="seattle").begins_with(sent="2018-08")',
             s.query(Message, index="gsi1", room="seattle").begins_with(sent="2018-08"), line)
        show('s.query(Message, index="gsi1", room="seattle").reverse().limit(3)',
             s.query(Message, index="gsi1", room="seattle").reverse().limit(3), line)


if __name__ == "__main__":
    main()
