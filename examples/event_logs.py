"""Event logs: one partition per device, the sort key an epoch timestamp, read by time range.

Run: ``python examples/event_logs.py [--endpoint-url URL]``
"""

from __future__ import annotations

from datetime import UTC, datetime

from _support import run, show

from dynaorm import Entity, F, Table

logs = Table("dynaorm-example-events")


class Event(Entity):
    class Meta:
        table = logs
        pk = "DEVICE#{device_id}"
        sk = "{ts:012d}#{event_id}"   # zero-padded so that text order is time order

    device_id: str
    ts: int                          # Unix epoch seconds
    event_id: str
    kind: str
    detail: str = ""


def when(ts: int) -> str:
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%d %H:%M UTC")


def line(e: Event) -> str:
    return f"{e.ts}  {when(e.ts)}  {e.event_id:<4} {e.kind:<8} {e.detail}".rstrip()


def main() -> None:
    with run(logs, "event logs queried by epoch-time ranges") as db:
        s = db.session()
        s.save_many([
            Event(device_id="123", ts=1535544000, event_id="e1", kind="boot"),
            Event(device_id="123", ts=1536022800, event_id="e2", kind="alert", detail="temp 81C"),
            Event(device_id="123", ts=1310212800, event_id="e3", kind="install"),
            Event(device_id="123", ts=1535990400, event_id="e4", kind="alert", detail="fan"),
            Event(device_id="456", ts=1535544100, event_id="e5", kind="boot"),
        ])
        cutoff = 1536019200  # 2018-09-04 00:00 UTC
        print(f"cutoff {cutoff} = {when(cutoff)}")
        show('s.query(Event, device_id="123")', s.query(Event, device_id="123"), line)
        show(f's.query(Event, device_id="123").lt(ts={cutoff})',
             s.query(Event, device_id="123").lt(ts=cutoff), line)
        show(f's.query(Event, device_id="123").gte(ts={cutoff})',
             s.query(Event, device_id="123").gte(ts=cutoff), line)
        show('s.query(Event, device_id="123").between({"ts": 1535500000}, {"ts": 1536000000})',
             s.query(Event, device_id="123").between({"ts": 1535500000}, {"ts": 1536000000}),
             line)
        show('s.query(Event, device_id="123").filter(F("kind") == "alert").reverse()',
             s.query(Event, device_id="123").filter(F("kind") == "alert").reverse(), line)
        latest = s.query(Event, device_id="123").reverse().first()
        print(f"\nlatest event of device 123: {latest.event_id if latest else None}")


if __name__ == "__main__":
    main()
