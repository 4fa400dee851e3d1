"""Two writers on one table (contract 25, "Beside other writers"): dynaorm with
``Meta.lock`` and a byte-exact mimic of DynamoDBMapper v1, the Enhanced Client or
PynamoDB (tests/support/other_writers.py) race on random items, on DynamoDB Local (moto
ignores the legacy ``Expected`` a v1 save sends). Each side holds its own loaded copy of
every item and interleaves loads, saves and updates at random, so a side writes from a
copy the other has changed since (the race, made deterministic); a refused write is
reloaded and counted, never retried blindly. Afterwards: no acknowledged update of
either side is lost (each side's counter holds its acknowledged increments, the lock
is 1 + every acknowledged move), every attribute dynaorm never wrote is byte for byte
as the mimic wrote it, the mimic's strict reader reads every item, and a delete from a
stale copy is refused (dynaorm's always; the mimic's where its tool conditions it).
``DYNAORM_RACE_EXAMPLES`` sets how many random races run (default 5); the figures are
printed (``-s``). The single-defect tests are in tests/integration/test_lock.py."""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterator
from decimal import Decimal
from itertools import count
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dynaorm import ConcurrentModificationError, Entity, Table
from dynaorm.testing import TestBackend, use_tables, worker_suffix
from tests.support.examples import examples
from tests.support.other_writers import ENHANCED, MAPPER_V1, PYNAMODB, Mapper, Refused, client_for

pytestmark = pytest.mark.engines("local")

shop = Table("other-writers-race", pk="pk", sk="sk", type_attribute=None)
#: what the other writer's class maps (dynaorm maps all of it but ``extra``)
MODELED = {"order_id": "S", "status": "S", "ours": "N", "theirs": "N", "price": "N",
           "extra": "S"}
EXAMPLES = int(os.environ.get("DYNAORM_RACE_EXAMPLES", "5"))
ITEMS = 3
_RUNS = count()


class Order(Entity):
    class Meta:
        table = shop
        pk = "ORDER#{order_id}"
        sk = "ORDER"
        lock = "version"

    order_id: str
    status: str = "NEW"
    ours: int = 0
    theirs: int = 0
    price: Decimal | None = None
    version: int | None = None


@pytest.fixture
def db(backend: str | None, request: pytest.FixtureRequest) -> Iterator[TestBackend]:
    with use_tables(shop, endpoint_url=backend, name_suffix=worker_suffix()) as tb:
        if str(request.node.callspec.params.get("backend", "")).endswith("-async"):
            tb.session_kind = "async"
        yield tb


def _raw(db: TestBackend, key: dict[str, str]) -> dict[str, Any]:
    """The item at ``key`` as stored (a consistent GetItem through botocore)."""
    item: dict[str, Any] = client_for(db.endpoint_url).get_item(
        TableName=shop.name, Key={k: {"S": v} for k, v in key.items()},
        ConsistentRead=True)["Item"]
    return item


STEPS = st.lists(st.tuples(st.sampled_from(["ours", "theirs"]),
                           st.sampled_from(["load", "save", "update"]),
                           st.integers(0, ITEMS - 1)), min_size=4, max_size=40)


@pytest.mark.parametrize("style", [MAPPER_V1, ENHANCED, PYNAMODB], ids=lambda m: m.style)
def test_no_update_of_either_writer_is_lost(db: TestBackend, style: Mapper) -> None:
    m = style.bound(client_for(db.endpoint_url), shop.name, MODELED)
    totals: Counter[str] = Counter()

    def load(order_id: str) -> Order:
        found = db.session().get(Order, order_id=order_id, consistent=True)
        assert found is not None
        return found

    @settings(max_examples=examples(EXAMPLES), deadline=None, derandomize=False,
              suppress_health_check=[HealthCheck.too_slow])
    @given(steps=STEPS, made_by=st.lists(st.booleans(), min_size=ITEMS, max_size=ITEMS))
    def race(steps: list[tuple[str, str, int]], made_by: list[bool]) -> None:
        run = next(_RUNS)
        ids = [f"r{run}-{i}" for i in range(ITEMS)]
        keys = [{"pk": f"ORDER#{i}", "sk": "ORDER"} for i in ids]
        written: dict[int, dict[str, Any]] = {}  # (the items theirs made, as stored)
        for at, (order_id, theirs_first) in enumerate(zip(ids, made_by, strict=True)):
            if theirs_first:  # (theirs: with an attribute dynaorm does not declare)
                doc = {**keys[at], "order_id": order_id, "status": "NEW", "ours": 0,
                       "theirs": 0, "price": Decimal("12.50"), "extra": f"x{at}",
                       "version": None}
                m.save(doc)
                written[at] = _raw(db, keys[at])  # (as stored: DynamoDB's number form)
            else:
                s = db.session()
                s.save(Order(order_id=order_id))
                s.commit()
        acks = {side: [0] * ITEMS for side in ("ours", "theirs")}
        held = {"ours": [load(i) for i in ids], "theirs": [m.load(k) for k in keys]}
        for side, action, at in steps:
            if action == "load":
                held[side][at] = load(ids[at]) if side == "ours" else m.load(keys[at])
                continue
            try:
                if side == "ours":
                    obj = held["ours"][at]
                    s = db.session()
                    if action == "save":
                        obj.ours += 1
                        s.save(obj)
                        s.commit()
                    else:
                        s.update(obj).add(ours=1)
                        s.commit()
                        held["ours"][at] = load(ids[at])  # (an update leaves obj as loaded)
                else:
                    doc = held["theirs"][at]
                    if action == "update" and style.style != "v1":  # (v1: save only)
                        m.update(doc, theirs=doc["theirs"] + 1)
                    else:
                        doc["theirs"] += 1
                        m.save(doc)
                acks[side][at] += 1
                totals[f"{side} writes"] += 1
            except (ConcurrentModificationError, Refused):
                totals[f"{side} refused"] += 1
                held[side][at] = load(ids[at]) if side == "ours" else m.load(keys[at])
        for at, key in enumerate(keys):
            raw = _raw(db, key)
            theirs = m.read(raw)  # (their strict reader: every modeled attribute typed)
            lost = (acks["ours"][at] - theirs["ours"]) + (acks["theirs"][at] - theirs["theirs"])
            totals["lost updates"] += abs(lost)
            assert theirs["ours"] == acks["ours"][at], (steps, at)
            assert theirs["theirs"] == acks["theirs"][at], (steps, at)
            assert theirs["version"] == 1 + acks["ours"][at] + acks["theirs"][at]
            if at in written:  # (what dynaorm never wrote: as the mimic wrote it)
                assert [raw[a] for a in ("extra", "price")] == [
                    written[at][a] for a in ("extra", "price")]
            stale = held["ours"][at]
            if stale.version != theirs["version"]:  # (a stale copy's delete: refused)
                s = db.session()
                s.delete(stale)
                with pytest.raises(ConcurrentModificationError):
                    s.commit()
                totals["stale deletes refused"] += 1
            mine = held["theirs"][at]
            if style.style != "v2" and mine is not None and mine["version"] != theirs[
                    "version"]:
                with pytest.raises(Refused):
                    m.delete(mine)
            s = db.session()
            s.delete(load(ids[at]))
            s.commit()
        totals["races"] += 1

    race()
    print(f"\n{style.style}: {dict(sorted(totals.items()))}")
    assert totals["lost updates"] == 0
