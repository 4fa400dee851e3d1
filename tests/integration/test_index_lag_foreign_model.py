"""Red team (issue 59, point 4): under ``index_lag``, random sequences of writes by
dynaorm's client and by a client of its own (boto3, the handler under test), checked
against a model of what a global index read may return: each item it shows is a version
some write made (never one that was never written, never one deleted before the lag
began), and once the lag has passed (``advance(lag.seconds)``) the index shows exactly
the table."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dynaorm.testing import TestBackend, index_lag
from tests.integration.test_index_lag import _foreign, lagging  # noqa: F401
from tests.support.examples import examples
from tests.support.recording import send

STEP = st.one_of(
    st.tuples(st.sampled_from(["ours", "theirs"]), st.sampled_from(["put", "delete"]),
              st.integers(1, 3), st.integers(0, 2)),
    st.tuples(st.just("advance"), st.sampled_from([0.0, 1.0, 4.0, 10.0])))


def _item(n: int, v: int) -> dict[str, Any]:
    return {"pk": {"S": f"FM#{n}"}, "sk": {"S": "FM"}, "gsi1pk": {"S": "FM"},
            "gsi1sk": {"S": f"G{n}"}, "v": {"N": str(v)}}


def _read(db: TestBackend) -> dict[str, int]:
    out = send(db.table, "Query", {
        "TableName": db.table.name, "IndexName": "gsi1",
        "KeyConditionExpression": "gsi1pk = :p", "ExpressionAttributeValues": {
            ":p": {"S": "FM"}}})
    return {i["pk"]["S"]: int(i["v"]["N"]) for i in out["Items"]}


@pytest.mark.sync_only
@settings(max_examples=examples(8), deadline=None, suppress_health_check=list(HealthCheck))
@given(steps=st.lists(STEP, min_size=1, max_size=12), seed=st.integers(0, 5))
def test_index_reads_under_lag_follow_the_model(lagging: TestBackend, backend: str | None,  # noqa: F811
                                                steps: list[Any], seed: int) -> None:
    db, other = lagging, _foreign(lagging, backend)
    name = db.table.name
    for n in (1, 2, 3):  # start: FM#1 v0 stored, FM#2 deleted before the lag, FM#3 absent
        send(db.table, "DeleteItem", {"TableName": name,
                                      "Key": {"pk": {"S": f"FM#{n}"}, "sk": {"S": "FM"}}})
    send(db.table, "PutItem", {"TableName": name, "Item": _item(1, 0)})
    send(db.table, "PutItem", {"TableName": name, "Item": _item(2, 0)})
    send(db.table, "DeleteItem", {"TableName": name,
                                  "Key": {"pk": {"S": "FM#2"}, "sk": {"S": "FM"}}})
    table: dict[str, int] = {"FM#1": 0}
    written: dict[str, set[int]] = {"FM#1": {0}, "FM#2": set(), "FM#3": set()}
    with index_lag(10, seed=seed) as lag:
        for step in steps:
            if step[0] == "advance":
                lag.advance(step[1])
            else:
                who, kind, n, v = step
                key = {"pk": {"S": f"FM#{n}"}, "sk": {"S": "FM"}}
                if kind == "put":
                    v += 10 * len(written[f"FM#{n}"]) + 1  # (each version its own number)
                    if who == "ours":
                        send(db.table, "PutItem", {"TableName": name, "Item": _item(n, v)})
                    else:
                        other.put_item(TableName=name, Item=_item(n, v))
                    table[f"FM#{n}"] = v
                    written[f"FM#{n}"].add(v)
                else:
                    if who == "ours":
                        send(db.table, "DeleteItem", {"TableName": name, "Key": key})
                    else:
                        other.delete_item(TableName=name, Key=key)
                    table.pop(f"FM#{n}", None)
            shown = _read(db)
            for pk, v in shown.items():
                assert v in written[pk], (pk, v, written, steps)
        lag.advance(lag.seconds)
        assert _read(db) == table, (steps, table)
