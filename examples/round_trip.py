"""Saving through a model what another writer stored: a contact written by hand-rolled
boto3 code (an ISO-8601 time ending in ``Z``, a map with a member the model does not
declare, a number spelled ``1.50``, an attribute no class names) is read, changed in one
member and saved back. What the change did not touch stays as stored, byte for byte; the
changed member is written alone; the new time is written in the table's own format.

Run: ``python examples/round_trip.py [--endpoint-url URL]``
"""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal
from typing import Annotated

from _support import run
from pydantic import BaseModel

from dynaorm import Entity, StoredAs, Table

crm = Table("dynaorm-example-round-trip", pk="PK", sk="SK", type_attribute=None)


class Prefs(BaseModel):
    theme: str = "light"
    lang: str | None = None  # declared, absent from the stored map: it stays absent


class Contact(Entity):
    class Meta:
        table = crm
        pk = "CONTACT#{contact_id}"
        sk = "PROFILE"

    contact_id: str
    name: str
    score: Decimal | None = None
    prefs: Prefs = Prefs()
    # the old code parses strptime('%Y-%m-%dT%H:%M:%SZ'): dynaorm writes that form too
    seen: Annotated[datetime | None, StoredAs("%Y-%m-%dT%H:%M:%SZ")] = None
    # a list's members keep their format too (as `dynaorm model --infer` prints them)
    logins: list[Annotated[datetime, StoredAs("%Y-%m-%dT%H:%M:%SZ")]] = []


def main() -> None:
    with run(crm, "saving back what another writer stored") as db:
        key = {"PK": {"S": "CONTACT#c1"}, "SK": {"S": "PROFILE"}}
        crm.client.put_item(TableName=crm.name, Item={
            **key, "name": {"S": "Ann"}, "score": {"N": "1.50"},
            "seen": {"S": "2026-01-02T03:04:05Z"}, "source": {"S": "import-2019"},
            "logins": {"L": [{"S": "2026-01-02T03:04:05Z"}]},
            "prefs": {"M": {"theme": {"S": "light"}, "beta": {"BOOL": True}}}})
        s = db.session()
        ann = s.get(Contact, contact_id="c1")
        assert ann is not None
        print(f"read: {ann.name}, seen {ann.seen.isoformat() if ann.seen else None}")
        ann.prefs.theme = "dark"
        ann.seen = datetime(2026, 11, 27, 9, 30, 56, 761229, tzinfo=UTC)
        ann.logins.append(ann.seen)
        s.save(ann)
        s.commit()
        item = crm.client.get_item(TableName=crm.name, Key=key, ConsistentRead=True)["Item"]
        print(f"prefs: {item['prefs']}")
        print(f"seen: {item['seen']['S']}")
        print(f"logins: {[m['S'] for m in item['logins']['L']]}")
        print(f"untouched: score {item['score']['N']}, source {item['source']['S']}")
        parsed = datetime.strptime(item["seen"]["S"], "%Y-%m-%dT%H:%M:%SZ")
        print(f"the old code parses it: {parsed}")


if __name__ == "__main__":
    main()
