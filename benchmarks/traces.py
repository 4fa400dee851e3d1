#!/usr/bin/env python
"""What a save, a query and an async commit cross inside dynaorm: calls, modules, wing
switches, and climbs back down from a pure floor into an I/O one.

Each path runs once to warm caches, then once under ``sys.setprofile``, against a moto
server on loopback (dynaorm's own wire). Only calls into dynaorm's own functions count
(generator resumptions included: each is a frame entered). A *wing* is a sub-package
(``dynaorm.write``) or a top-level module (``dynaorm.errors``); a *wing switch* is a call
whose caller is in another wing; a *climb down* is a call from a pure floor (``protocol``,
``model``, ``write``, ``read``, ``core``; ``transport`` steps/retry/events before 0.4)
into an I/O one (the drivers, the client, the wire, the sessions).

Usage::

    .venv/bin/python benchmarks/traces.py [--json PATH]

The same script runs on 0.3 (it uses only ``Table(endpoint_url=)``, ``Session``,
``AsyncSession``), so the figures of both can be set side by side.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

PURE = ("protocol", "model", "write", "read", "core", "transport.steps", "transport.retry",
        "transport.events")
IO = ("client", "wire", "sync", "aio", "transport.sync", "transport.aio")
_TABLE: Any = None  # the table the traced entities map onto


def wing(module: str) -> str:
    """``dynaorm.write.planner`` -> ``write``; ``dynaorm.errors`` -> ``errors``."""
    parts = module.split(".")
    if len(parts) > 2 and parts[1] == "transport":  # 0.3: one wing held both kinds
        return f"transport.{parts[2]}"
    return parts[1] if len(parts) > 1 else parts[0]


def floor(w: str) -> str:
    if any(w == p or w.startswith(p + ".") for p in PURE):
        return "pure"
    if any(w == p or w.startswith(p + ".") for p in IO):
        return "io"
    return "edge"


class Trace:
    """Calls into dynaorm while it is on."""

    def __init__(self) -> None:
        self.calls = 0
        self.modules: Counter[str] = Counter()
        self.switches = 0
        self.climbs: Counter[tuple[str, str]] = Counter()

    def __call__(self, frame: FrameType, event: str, arg: Any) -> None:
        if event != "call":
            return
        module = frame.f_globals.get("__name__", "")
        if not module.startswith("dynaorm"):
            return
        self.calls += 1
        self.modules[module] += 1
        caller = frame.f_back
        while caller is not None and not str(caller.f_globals.get("__name__", "")
                                             ).startswith("dynaorm"):
            caller = caller.f_back  # a library frame between two of ours
        if caller is None:
            return
        here, there = wing(module), wing(str(caller.f_globals["__name__"]))
        if here != there:
            self.switches += 1
            if floor(there) == "pure" and floor(here) == "io":
                self.climbs[(there, here)] += 1

    def report(self) -> dict[str, Any]:
        return {"calls": self.calls, "modules": len(self.modules),
                "wing_switches": self.switches,
                "climbs_down": sum(self.climbs.values()),
                "climbs": {f"{a} -> {b}": n for (a, b), n in self.climbs.items()}}


def traced(fn: Callable[[], Any]) -> dict[str, Any]:
    fn()  # warm: caches, connections
    trace = Trace()
    sys.setprofile(trace)
    try:
        fn()
    finally:
        sys.setprofile(None)
    return trace.report()


async def _close() -> None:
    from dynaorm.aio import close

    await close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", help="also write the figures here")
    args = parser.parse_args()

    from pydantic import Field

    from dynaorm import AsyncSession, Entity, Session, Table, Unique, ksuid
    from dynaorm.testing import moto_server

    with moto_server() as url:
        table = Table("traces", endpoint_url=url)
        table.create()
        global _TABLE
        _TABLE = table

        class TUser(Entity):
            class Meta:
                table = _TABLE
                pk = "USER#{user_id}"
                sk = "PROFILE"
                unique = ("username", Unique("email", normalize=str.lower))

            user_id: str = Field(default_factory=ksuid)
            username: str
            email: str

        class TMessage(Entity):
            class Meta:
                table = _TABLE
                pk = "ROOM#{room}"
                sk = "MSG#{sent}#{message_id}"

            room: str
            sent: str
            message_id: str
            body: str = ""

        Session(table).save_many([TMessage(room="lobby", sent=f"2024-01-{i % 28 + 1:02d}",
                                           message_id=f"m{i:03d}", body="hello")
                                  for i in range(30)])
        n = iter(range(1_000_000))

        def save() -> None:
            i = next(n)
            s = Session(table)
            s.save(TUser(username=f"u{i}", email=f"U{i}@example.com"))
            s.commit()

        def query() -> None:
            found = Session(table).query(TMessage, room="lobby").limit(25).all()
            assert len(found) == 25

        loop = asyncio.new_event_loop()  # one loop: the warm run opens its connections

        def async_commit() -> None:
            async def run() -> None:
                i = next(n)
                s = AsyncSession(table)
                s.save(TUser(username=f"a{i}", email=f"A{i}@example.com"))
                await s.commit()
            loop.run_until_complete(run())

        figures = {"save + commit": traced(save), "query 25": traced(query),
                   "async commit": traced(async_commit)}
        loop.run_until_complete(_close())
        loop.close()
        table.delete()
    print("| path | calls | modules | wing switches | climbs down to I/O |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for name, f in figures.items():
        print(f"| {name} | {f['calls']} | {f['modules']} | {f['wing_switches']} | "
              f"{f['climbs_down']} |")
    for name, f in figures.items():
        if f["climbs"]:
            print(f"{name}: {f['climbs']}")
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
