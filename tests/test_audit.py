"""The data audit (dynaorm.tools.audit): problems planted through the raw transport are found,
reported with the right kind and key, and repaired by conditional transactions."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from dynaorm import DynaormError, Entity, Session, Table, Unique
from dynaorm.core.batches import MAX_BATCH_ROUNDS
from dynaorm.testing import TestBackend
from dynaorm.tools.audit import (
    Problem,
    audit_items,
    audit_table,
    repair,
    scan_items,
    scan_pages,
)
from dynaorm.tools.check import check_table, item_count
from dynaorm.transport.sync import RequestFailed
from tests.models import Audit, User, app


def _put(db: TestBackend, item: dict[str, Any]) -> None:
    db.table.transport.call("PutItem", {"TableName": db.table.name, "Item": item})


def _delete(db: TestBackend, pk: str, sk: str) -> None:
    db.table.transport.call("DeleteItem", {"TableName": db.table.name,
                                           "Key": {"pk": {"S": pk}, "sk": {"S": sk}}})


def _guard(key: str, owner_pk: str, field: str, owner_type: str = "User") -> dict[str, Any]:
    return {"pk": {"S": key}, "sk": {"S": key}, "_type": {"S": "dynaorm:unique"},
            "owner_pk": {"S": owner_pk}, "owner_sk": {"S": "PROFILE"},
            "owner_type": {"S": owner_type}, "unique_field": {"S": field}}


def _kinds(problems: list[Problem]) -> list[tuple[str, str]]:
    return [(p.kind, p.key[0]) for p in problems]


@pytest.fixture
def seeded(db: TestBackend) -> TestBackend:
    with db.session() as s:
        s.save(User(user_id="u1", username="ada", email="Ada@Example.com"))
        s.save(User(user_id="u2", username="bob", email="bob@example.com"))
    s = db.session()
    audit = Audit(equipment_id="E1", part="P1", notes="one")
    s.save(audit)
    s.commit()
    audit.notes = "two"
    s.save(audit)
    s.commit()
    return db


def test_clean_table_has_no_problems(seeded: TestBackend) -> None:
    count, problems = audit_table(app)
    assert count == len(seeded.scan_raw())
    assert problems == []


def test_orphan_guards_found_and_deleted(seeded: TestBackend) -> None:
    _put(seeded, _guard("email#ghost@example.com", "USER#gone", "email"))  # owner gone
    _put(seeded, _guard("username#old-ada", "USER#u1", "username"))       # value moved on
    problems = audit_items(app, seeded.scan_raw())
    assert _kinds(problems) == [("orphan-guard", "email#ghost@example.com"),
                                ("orphan-guard", "username#old-ada")]
    assert "USER#gone is gone" in problems[0].detail
    assert "no longer holds that username" in problems[1].detail
    results = repair(app, problems)
    assert [r.ok for r in results] == [True, True]
    keys = {i["pk"] for i in seeded.scan()}
    assert "email#ghost@example.com" not in keys and "username#old-ada" not in keys
    assert audit_table(app)[1] == []


def test_missing_guard_found_and_put_back(seeded: TestBackend) -> None:
    _delete(seeded, "username#bob", "username#bob")
    problems = audit_items(app, seeded.scan_raw())
    assert _kinds(problems) == [("missing-guard", "USER#u2")]
    assert "User.username" in problems[0].detail and "username#bob" in problems[0].detail
    assert [r.ok for r in repair(app, problems)] == [True]
    guard = next(i for i in seeded.scan() if i["pk"] == "username#bob")
    assert guard["owner_pk"] == "USER#u2" and guard["owner_type"] == "User"
    assert Session(app).find(User, username="bob") is not None
    assert audit_table(app)[1] == []


def test_stale_latest_copy_rewritten_from_newest_version(seeded: TestBackend) -> None:
    latest = next(i for i in seeded.scan_raw() if i["sk"]["S"] == "v0_P1")
    _put(seeded, {**latest, "notes": {"S": "edited by hand"}})
    problems = audit_items(app, seeded.scan_raw())
    assert _kinds(problems) == [("stale-latest", "EQUIPMENT#E1")]
    assert problems[0].key == ("EQUIPMENT#E1", "v0_P1")
    assert [r.ok for r in repair(app, problems)] == [True]
    got = Session(app).get(Audit, equipment_id="E1", part="P1", consistent=True)
    assert got is not None
    assert (got.notes, got.model_dump()["version"]) == ("two", 2)
    assert audit_table(app)[1] == []


def test_repair_skips_a_fix_whose_items_changed(seeded: TestBackend) -> None:
    _put(seeded, _guard("email#ghost@example.com", "USER#gone", "email"))
    problems = audit_items(app, seeded.scan_raw())
    # the owner comes back between the scan and the repair: the delete must not apply
    _put(seeded, {"pk": {"S": "USER#gone"}, "sk": {"S": "PROFILE"}, "_type": {"S": "User"},
                  "user_id": {"S": "gone"}, "org_id": {"S": "acme"},
                  "username": {"S": "ghost"}, "email": {"S": "ghost@example.com"}})
    (result,) = repair(app, problems)
    assert not result.ok and "changed" in result.message
    assert any(i["pk"] == "email#ghost@example.com" for i in seeded.scan())


def test_duplicate_values_are_reported_not_repaired(seeded: TestBackend) -> None:
    bob = next(i for i in seeded.scan_raw() if i["pk"]["S"] == "USER#u2")
    _put(seeded, {**bob, "pk": {"S": "USER#u3"}, "user_id": {"S": "u3"}})
    problems = audit_items(app, seeded.scan_raw())
    assert {(p.kind, p.key[0]) for p in problems} == {("duplicate", "USER#u3")}
    assert len(problems) == 2 and not any(p.repairable for p in problems)  # username, email
    assert repair(app, problems) == []


def test_scan_pages(seeded: TestBackend) -> None:
    seen: list[int] = []
    items = list(scan_items(app, seen.append, page_size=2))
    assert len(items) == len(seeded.scan_raw())
    assert seen[-1] == len(items) and len(seen) >= len(items) // 2


# -- pure checks on hand-made items (no backend) -------------------------------------------
pure = Table("audit-pure")


class Member(Entity):
    class Meta:
        table = pure
        pk = "ORG#{org_id}"
        sk = "MEMBER#{name}"
        unique = (Unique("nick", scope="ORG#{org_id}", normalize=str.lower),)

    org_id: str
    name: str
    nick: str


def _member(name: str, nick: str) -> dict[str, Any]:
    return {"pk": {"S": "ORG#o1"}, "sk": {"S": f"MEMBER#{name}"}, "_type": {"S": "Member"},
            "org_id": {"S": "o1"}, "name": {"S": name}, "nick": {"S": nick}}


def _scoped_guard(nick: str, owner: str) -> dict[str, Any]:
    key = f"ORG#o1#nick#{nick}"
    return {"pk": {"S": key}, "sk": {"S": key}, "_type": {"S": "dynaorm:unique"},
            "owner_pk": {"S": "ORG#o1"}, "owner_sk": {"S": f"MEMBER#{owner}"},
            "owner_type": {"S": "Member"}, "unique_field": {"S": "nick"}}


def test_scoped_guards_with_normalization_are_recognised() -> None:
    assert audit_items(pure, [_member("ann", "Annie"), _scoped_guard("annie", "ann")]) == []


def test_guard_held_by_a_gone_owner_is_repointed_to_the_current_holder() -> None:
    (problem,) = audit_items(pure, [_member("bea", "annie"), _scoped_guard("annie", "ann")])
    assert problem.kind == "orphan-guard" and "re-point" in problem.detail
    put = problem.fix[0]["Put"]
    assert put["Item"]["owner_sk"] == {"S": "MEMBER#bea"}
    assert "ConditionExpression" in put


def test_latest_copy_without_history_is_reported() -> None:
    latest = {"pk": {"S": "EQUIPMENT#E9"}, "sk": {"S": "v0_P"}, "_type": {"S": "Audit"},
              "equipment_id": {"S": "E9"}, "part": {"S": "P"}, "version": {"N": "1"}}
    (problem,) = audit_items(app, [latest])
    assert (problem.kind, problem.repairable) == ("no-history", False)


# -- the audit's I/O: the shared batching, retry and paging code --------------------------
def _users(db: TestBackend, n: int) -> int:
    """n users (each with its two guard items), the username guard of every fourth gone:
    the number of items stored."""
    for i in range(n):
        with db.session() as s:
            s.save(User(user_id=f"u{i:02d}", username=f"name{i:02d}", email=f"n{i:02d}@x.com"))
    for i in range(0, n, 4):
        _delete(db, f"username#name{i:02d}", f"username#name{i:02d}")
    return len(db.scan_raw())


class Wire:
    """Wraps a transport's ``send``: records every request answered (operation, request,
    response), and answers the first ``flaky`` BatchGetItem requests by really reading only
    ``keep`` of their keys and returning the rest as ``UnprocessedKeys``, as DynamoDB does
    under throttling. ``fail`` raises instead of sending, for the request it accepts."""

    def __init__(self, send: Any, flaky: int = 0, keep: float = 0.5,
                 fail: Any = None) -> None:
        self._send = send
        self.flaky = flaky
        self.keep = keep
        self.fail = fail
        self.log: list[tuple[str, dict[str, Any], dict[str, Any]]] = []
        self.batches: list[tuple[int, int]] = []  # BatchGetItem (keys asked, keys read)
        self.refused: list[tuple[str, dict[str, Any]]] = []

    def ops(self, operation: str) -> list[tuple[dict[str, Any], dict[str, Any]]]:
        return [(req, out) for op, req, out in self.log if op == operation]

    def __call__(self, operation: str, request: dict[str, Any]) -> dict[str, Any]:
        if self.fail is not None and self.fail(operation, request):
            self.refused.append((operation, request))
            raise RequestFailed(operation, "ThrottlingException", "slow down (injected)")
        if operation != "BatchGetItem":
            out: dict[str, Any] = self._send(operation, request)
        else:
            ((table, body),) = request["RequestItems"].items()
            keys = body["Keys"]
            keep, rest = keys, []
            if self.flaky > 0:
                self.flaky -= 1
                cut = int(len(keys) * self.keep)
                keep, rest = keys[:cut], keys[cut:]
            out = self._send(operation, {"RequestItems": {table: {**body, "Keys": keep}}}
                             ) if keep else {"Responses": {table: []}}
            if rest:
                left = out.get("UnprocessedKeys", {}).get(table, {}).get("Keys", [])
                out["UnprocessedKeys"] = {table: {**body, "Keys": [*left, *rest]}}
            self.batches.append((len(keys), len(keep)))
        self.log.append((operation, request, out))
        return out


def _wire(monkeypatch: pytest.MonkeyPatch, **options: Any) -> tuple[Wire, list[float]]:
    """A :class:`Wire` on the table's transport, and the back-off sleeps it is told."""
    wire = Wire(app.transport.send, **options)
    sleeps: list[float] = []
    monkeypatch.setattr(app.transport, "send", wire)
    monkeypatch.setattr(app.transport, "_sleep", sleeps.append)
    return wire, sleeps


def _keys(items: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return [(i["pk"]["S"], i["sk"]["S"]) for i in items]


@pytest.mark.sync_only
def test_check_retries_unprocessed_keys_with_backoff(
        db: TestBackend, monkeypatch: pytest.MonkeyPatch) -> None:
    total = _users(db, 12)
    clean = check_table(app, page_size=5)
    assert clean.scanned == total and len(clean.problems) == 3  # u00, u04, u08
    wire, sleeps = _wire(monkeypatch)
    asked = check_table(app, page_size=5)
    keys_read = sum(read for _, read in wire.batches)  # every key once, nothing throttled

    monkeypatch.undo()
    wire, sleeps = _wire(monkeypatch, flaky=5)
    result = check_table(app, page_size=5)
    assert (result.scanned, result.problems) == (clean.scanned, clean.problems)
    assert asked.problems == clean.problems
    # five answers left keys unprocessed: each was followed by a retry round of exactly
    # those keys, after a back-off (the table's, within its max_wait)
    assert sum(asked > read for asked, read in wire.batches) == 5
    assert sum(read for _, read in wire.batches) == keys_read
    assert len(sleeps) == 5 and all(d > 0 for d in sleeps)
    assert sum(sleeps) <= app.transport.max_wait
    assert all(req["RequestItems"][app.name].get("ConsistentRead") is True
               for req, _ in wire.ops("BatchGetItem"))


@pytest.mark.sync_only
def test_check_gives_up_on_keys_never_processed_and_resumes_the_page(
        db: TestBackend, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    total = _users(db, 6)
    checkpoint = tmp_path / "check.json"
    wire, sleeps = _wire(monkeypatch, flaky=10**6, keep=0.0)
    monkeypatch.setattr(app.transport, "max_wait", 0.5)
    with pytest.raises(DynaormError, match=f"unprocessed requests after {MAX_BATCH_ROUNDS}"):
        check_table(app, checkpoint=checkpoint, page_size=4)
    # bounded: MAX_BATCH_ROUNDS requests, the back-offs between them within max_wait
    assert len(wire.ops("BatchGetItem")) == MAX_BATCH_ROUNDS
    assert 0 < sum(sleeps) <= 0.5 + 1e-9 and len(sleeps) <= MAX_BATCH_ROUNDS - 1
    state = json.loads(checkpoint.read_text())  # the page read last was never recorded
    assert len(wire.ops("Scan")) == state["pages"] + 1 and not state["done"]

    monkeypatch.undo()  # throttling over: the run resumes at the page it could not finish
    result = check_table(app, checkpoint=checkpoint, page_size=4)
    assert result.resumed and result.scanned == total and len(result.problems) == 2


@pytest.mark.sync_only
def test_resumed_check_reads_every_item_once_in_counted_requests(
        db: TestBackend, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    total = _users(db, 12)  # 12 users, 24 guards less 3: 33 items
    stored = set(_keys(db.scan_raw()))
    pages = -(-total // 5)  # the last page partial: DynamoDB ends the scan with it
    assert total % 5
    checkpoint = tmp_path / "check.json"
    scans = {"n": 0}

    def third_scan(operation: str, request: dict[str, Any]) -> bool:
        scans["n"] += operation == "Scan"
        return operation == "Scan" and scans["n"] == 3

    first, _ = _wire(monkeypatch, fail=third_scan)
    monkeypatch.setattr(app.transport, "max_attempts", 1)  # the run stops at that page
    with pytest.raises(DynaormError, match="cannot scan table"):
        check_table(app, checkpoint=checkpoint, page_size=5)
    state = json.loads(checkpoint.read_text())
    assert (state["pages"], state["scanned"], state["done"]) == (2, 10, False)
    assert state["last_key"] == first.ops("Scan")[-1][1]["LastEvaluatedKey"]

    monkeypatch.undo()
    second, _ = _wire(monkeypatch)
    result = check_table(app, checkpoint=checkpoint, page_size=5)
    assert result.resumed and result.scanned == total and len(result.problems) == 3
    scanned = [k for w in (first, second) for _, out in w.ops("Scan") for k in _keys(
        out["Items"])]
    assert len(scanned) == len(set(scanned)) == total  # every item, once
    assert set(scanned) == stored
    requests = [req for req, _ in second.ops("Scan")]
    assert requests[0]["ExclusiveStartKey"] == state["last_key"]
    assert all(r["Limit"] == 5 and r["ConsistentRead"] is True for r in requests)
    # the request counts: one Scan a page, at most two BatchGetItem a page (an owner's
    # guard, the guard's holder), nothing else
    assert len(first.ops("Scan")) + len(requests) == pages
    assert {op for op, _, _ in second.log} == {"Scan", "BatchGetItem"}
    assert len(second.ops("BatchGetItem")) <= 2 * len(requests)
    assert json.loads(checkpoint.read_text())["pages"] == pages


@pytest.mark.sync_only
def test_a_throttled_scan_page_is_retried_with_backoff(
        db: TestBackend, monkeypatch: pytest.MonkeyPatch) -> None:
    total = _users(db, 4)
    scans = {"n": 0}

    def second_scan(operation: str, request: dict[str, Any]) -> bool:
        scans["n"] += operation == "Scan"
        return operation == "Scan" and scans["n"] == 2

    wire, sleeps = _wire(monkeypatch, fail=second_scan)
    seen: list[int] = []
    assert len(list(scan_items(app, seen.append, page_size=5))) == total
    assert len(sleeps) == 1  # the transport's retry rules: one back-off, then the page
    sizes = [len(out["Items"]) for _, out in wire.ops("Scan")]
    assert seen == [sum(sizes[:i + 1]) for i in range(len(sizes))]  # progress per page


@pytest.mark.sync_only
def test_describe_and_repair_requests_retry_by_the_shared_rules(
        db: TestBackend, monkeypatch: pytest.MonkeyPatch) -> None:
    _users(db, 4)  # u00's username guard gone: one missing-guard
    firsts: set[str] = set()

    def first_of_each(operation: str, request: dict[str, Any]) -> bool:
        if operation in firsts or operation not in ("DescribeTable", "TransactWriteItems"):
            return False
        firsts.add(operation)
        return True

    wire, sleeps = _wire(monkeypatch, fail=first_of_each)
    assert item_count(app) is not None
    result = check_table(app, fix=True)
    assert (result.repaired, result.failed) == (1, 0)
    assert [op for op, _ in wire.refused] == ["DescribeTable", "TransactWriteItems"]
    assert len(sleeps) == 2  # one back-off each, then the same request again
    ((sent, _),) = wire.ops("TransactWriteItems")
    assert sent == wire.refused[1][1]  # its ClientRequestToken too: applied once
    assert check_table(app).problems == []


def test_scan_pages_resume_from_any_position(seeded: TestBackend) -> None:
    pages = list(scan_pages(app, page_size=3))
    assert [last is None for _, last in pages] == [False] * (len(pages) - 1) + [True]
    everything = [k for items, _ in pages for k in _keys(items)]
    assert sorted(everything) == sorted(_keys(seeded.scan_raw()))
    for at, (_, last) in enumerate(pages[:-1]):
        rest = list(scan_pages(app, last, page_size=3))
        assert [_keys(items) for items, _ in rest] == [_keys(i) for i, _ in pages[at + 1:]]
