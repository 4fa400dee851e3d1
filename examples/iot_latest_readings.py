"""A device and its latest readings in ONE query: the readings' sort keys start with '#', so
they sort before the device item; read the partition descending and the device comes first,
followed by the newest readings.

Run: ``python examples/iot_latest_readings.py [--endpoint-url URL]``
"""

from __future__ import annotations

from datetime import datetime

from _support import keys, run, show

from dynaorm import Entity, Table

iot = Table("dynaorm-example-iot")


class Device(Entity):
    class Meta:
        table = iot
        pk = "DEVICE#{device_id}"
        sk = "DEVICE#{device_id}"

    device_id: str
    location: str


class Reading(Entity):
    class Meta:
        table = iot
        pk = "DEVICE#{device_id}"
        sk = "#READING#{at:%Y-%m-%dT%H:%M:%S}"   # '#' sorts before 'D'

    device_id: str
    at: datetime
    temperature: float


def line(x: Device | Reading) -> str:
    if isinstance(x, Reading):
        return f"Reading  {x.at:%Y-%m-%d %H:%M}  {x.temperature:.1f}"
    return keys(x)


def main() -> None:
    with run(iot, "a device and its latest readings in one descending query") as db:
        s = db.session()
        s.save_many([Device(device_id="124", location="New York, NY"),
                     *(Reading(device_id="124", at=datetime(2020, 3, 14, 10, 33 + i),
                               temperature=72.5 + i / 10) for i in range(8)),
                     Device(device_id="125", location="Omaha, NE")])
        print("sort keys in partition DEVICE#124, ascending:")
        for item in db.scan():
            if item["pk"] == "DEVICE#124":
                print(f"    {item['sk']}")
        show('s.query(Device, Reading, device_id="124").reverse().limit(4)',
             s.query(Device, Reading, device_id="124").reverse().limit(4), line)
        show('s.query(Reading, device_id="124").reverse().limit(2)',
             s.query(Reading, device_id="124").reverse().limit(2), line)
        show('s.query(Reading, device_id="124").gte(at=datetime(2020, 3, 14, 10, 38))',
             s.query(Reading, device_id="124").gte(at=datetime(2020, 3, 14, 10, 38)), line)
        show('s.query(Device, Reading, device_id="125").reverse().limit(4)  # no readings yet',
             s.query(Device, Reading, device_id="125").reverse().limit(4), line)


if __name__ == "__main__":
    main()
