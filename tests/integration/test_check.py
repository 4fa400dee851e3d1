"""The data audit (dynaorm.jobs.audit): problems planted through raw requests are found,
reported with the right kind and key, and repaired by conditional transactions; and
``dynaorm check`` (0.2): stale index keys and table keys, guards missing after a unique
rule was added, conditional repair, the checkpoint (an interrupted run resumed covers every
item exactly once) and the progress bar (total, rate, ETA)."""

from __future__ import annotations

import io
import itertools
import json
import time
from datetime import UTC, datetime, timedelta
from itertools import accumulate
from pathlib import Path
from typing import Any

import pytest
from pydantic import Field

from dynaorm import (
    GSI,
    LSI,
    DynaormError,
    Encrypted,
    Entity,
    Session,
    StaticKeyring,
    Table,
    Unique,
    Versioned,
)
from dynaorm.cli.main import main
from dynaorm.jobs.audit import (
    Problem,
    audit_items,
    repair,
    scan_pages,
)
from dynaorm.jobs.checking import ProgressBar, check_table, item_count, progress_line
from dynaorm.jobs.checkpoint import CheckpointError
from dynaorm.read.batches import MAX_BATCH_ROUNDS
from dynaorm.testing import TestBackend, inject_faults, use_tables, worker_suffix
from tests.conftest import wire_of
from tests.support.audit import audit_table
from tests.support.models import Audit, User, app
from tests.support.recording import FlakyBatches, Requests, send
from tests.support.tenant_models import plant_stale_rows, stale
from tests.support.user_rules import audited_entities

pytestmark = pytest.mark.sync_only  # instruments of the sync client (see conftest)


def _put(db: TestBackend, item: dict[str, Any]) -> None:
    send(db.table, "PutItem", {"TableName": db.table.name, "Item": item})


def _delete(db: TestBackend, pk: str, sk: str) -> None:
    send(db.table, "DeleteItem", {"TableName": db.table.name,
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


def test_a_problem_a_writer_resolves_before_its_repair_is_not_left(
        seeded: TestBackend, monkeypatch: pytest.MonkeyPatch) -> None:
    import dynaorm.jobs.checking as check_module

    guard = next(i for i in seeded.scan_raw() if i["pk"]["S"] == "username#bob")
    _delete(seeded, "username#bob", "username#bob")
    real = check_module.repair

    def writer_first(table: Table, problems: list[Problem]) -> Any:
        if problems and problems[0].kind == "missing-guard":
            _put(seeded, guard)  # a live writer puts the guard back in the window
        return real(table, problems)

    monkeypatch.setattr(check_module, "repair", writer_first)
    result = check_table(app, fix=True)
    assert [p.split()[0] for p in result.problems] == ["missing-guard"]
    assert (result.repaired, result.resolved, result.left) == (0, 1, 0)
    assert [i for i in seeded.scan_raw() if i["pk"]["S"] == "username#bob"] == [guard]
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


sealed = Table("check-sealed", keyring=StaticKeyring(b"c" * 32),
               indexes=[GSI("by_region", pk=("region",))])


class Sealed(Versioned):
    """Versioned, an encrypted field (each row's ciphertext bound to that row) and a
    native index field (kept aside in version rows)."""

    class Meta:
        table = sealed
        pk = "SEALED#{ident}"
        sk = "SEALED"

    ident: str
    region: str
    secret: Encrypted[str]


@pytest.mark.dynaorm_index_lag(0, reason="checks its own writes through a global index")
def test_a_versioned_entity_with_encrypted_and_native_index_fields(backend: str | None
                                                                   ) -> None:
    """(0.6, the rule matrix) The audit compared a version row's ciphertext with its
    latest copy's (each sealed for its own row: every such latest copy was stale-latest),
    and its repair copied the version row's ciphertext (which opens only there) and left
    out the native index fields it keeps aside. Both are compared and rebuilt as read
    through the rules; the rebuilt latest copy gets a fresh revision."""
    with use_tables(sealed, endpoint_url=backend, name_suffix=worker_suffix()) as tb:
        obj = Sealed(ident="s1", region="eu", secret="one")
        for secret in ("one", "two"):
            obj.secret = secret
            with Session(sealed) as s:
                s.save(obj)
        assert check_table(sealed).problems == []
        latest = next(i for i in tb.scan_raw() if i["sk"]["S"] == "v0_SEALED")
        _put_raw(tb, {**latest, "region": {"S": "us"}})  # (edited by hand)
        result = check_table(sealed, fix=True)
        assert [p.split()[0] for p in result.problems] == ["stale-latest"]
        assert result.repaired == 1 and check_table(sealed).problems == []
        rebuilt = next(i for i in tb.scan_raw() if i["sk"]["S"] == "v0_SEALED")
        assert rebuilt["region"] == {"S": "eu"} and rebuilt["_rev"] != latest["_rev"]
        got = Session(sealed).get(Sealed, ident="s1", consistent=True)
        assert got == Sealed(ident="s1", region="eu", secret="two", version=2)
        assert [o.ident for o in Session(sealed).query(Sealed, index="by_region",
                                                       region="eu")] == ["s1"]


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
    seen = list(accumulate(len(page) for page, _ in scan_pages(app, page_size=2)))
    assert seen[-1] == len(seeded.scan_raw()) and len(seen) >= seen[-1] // 2


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


# -- dynaorm check (0.2): index and table keys, guards after a new rule, checkpoints, progress ----

def _raw_user(uid: str, username: str, email: str, **extra: Any) -> dict[str, Any]:
    """A User item as another tool (or 0.1 before a unique rule existed) wrote it: no
    guard items, index keys rendered correctly unless ``extra`` says otherwise."""
    item = {"pk": {"S": f"USER#{uid}"}, "sk": {"S": "PROFILE"}, "_type": {"S": "User"},
            "user_id": {"S": uid}, "org_id": {"S": "acme"}, "username": {"S": username},
            "email": {"S": email}, "full_name": {"S": ""},
            "gsi1pk": {"S": "ORG#acme"}, "gsi1sk": {"S": f"USER#{username}"}}
    item.update(extra)
    return {k: v for k, v in item.items() if v is not None}


def _guards(uid: str, username: str, email: str) -> list[dict[str, Any]]:
    return [{"pk": {"S": key}, "sk": {"S": key}, "_type": {"S": "dynaorm:unique"},
             "owner_pk": {"S": f"USER#{uid}"}, "owner_sk": {"S": "PROFILE"},
             "owner_type": {"S": "User"}, "unique_field": {"S": field}}
            for key, field in ((f"username#{username}", "username"),
                               (f"email#{email.lower()}", "email"))]


def _item(db: TestBackend, pk: str, sk: str) -> dict[str, Any]:
    return next(i for i in db.scan() if (i["pk"], i["sk"]) == (pk, sk))


# -- stale derived keys --------------------------------------------------------------------
@pytest.mark.dynaorm_index_lag(0, reason="checks its own writes through a global index")
def test_stale_index_keys_found_and_rerendered(db: TestBackend) -> None:
    with db.session() as s:
        s.save(User(user_id="u1", username="ada", email="ada@x.com"))
    # a template change: gsi1sk used to be "{username}"; a tool that forgot gsi1pk
    _put(db, _raw_user("u2", "bob", "bob@x.com", gsi1sk={"S": "bob"}))
    _put(db, _raw_user("u3", "cy", "cy@x.com", gsi1pk=None))
    for g in (*_guards("u2", "bob", "bob@x.com"), *_guards("u3", "cy", "cy@x.com")):
        _put(db, g)
    problems = audit_items(app, db.scan_raw())
    assert [(p.kind, p.key) for p in problems] == [("stale-index", ("USER#u2", "PROFILE")),
                                                  ("stale-index", ("USER#u3", "PROFILE"))]
    assert problems[0].detail == "User: gsi1sk 'bob' -> 'USER#bob'"
    assert problems[1].detail == "User: gsi1pk '(none)' -> 'ORG#acme'"
    assert problems[0].fix == ({"Update": {
        "TableName": app.name, "Key": {"pk": {"S": "USER#u2"}, "sk": {"S": "PROFILE"}},
        "UpdateExpression": "SET #n0 = :v0",
        "ConditionExpression": "(attribute_exists(#n1)) AND (#n2 = :v1) AND (#n0 = :v2) AND "
                               "(#n3 = :v3) AND (#n4 = :v4)",  # (attributes sorted)
        "ExpressionAttributeNames": {"#n0": "gsi1sk", "#n1": "pk", "#n2": "_type",
                                     "#n3": "org_id", "#n4": "username"},
        "ExpressionAttributeValues": {":v0": {"S": "USER#bob"}, ":v1": {"S": "User"},
                                      ":v2": {"S": "bob"}, ":v3": {"S": "acme"},
                                      ":v4": {"S": "bob"}}}},)
    assert [r.ok for r in repair(app, problems)] == [True, True]
    assert audit_items(app, db.scan_raw()) == []
    assert _item(db, "USER#u2", "PROFILE")["gsi1sk"] == "USER#bob"
    found = Session(app).query(User, index="gsi1", org_id="acme").all()
    assert [u.user_id for u in found] == ["u1", "u2", "u3"]


def test_sparse_index_attribute_left_behind_is_removed(db: TestBackend) -> None:
    from tests.support.models import Note

    with db.session() as s:
        s.save(Note(note_id="n1"))
    raw = next(i for i in db.scan_raw() if i["pk"]["S"] == "NOTE#n1")
    _put(db, {**raw, "gsi2pk": {"S": "junk"}})  # Note is in no index: not its attribute
    assert audit_items(app, db.scan_raw()) == []  # attributes no template owns are left be
    with db.session() as s:
        s.save(User(user_id="u1", username="ada", email="ada@x.com"))
    raw = next(i for i in db.scan_raw() if i["pk"]["S"] == "USER#u1")
    _put(db, {**raw, "username": {"S": "ada2"}})  # written without re-rendering
    (problem,) = [p for p in audit_items(app, db.scan_raw()) if p.kind == "stale-index"]
    assert problem.detail == "User: gsi1sk 'USER#ada' -> 'USER#ada2'"


def test_repair_never_overwrites_a_concurrent_write(db: TestBackend) -> None:
    _put(db, _raw_user("u2", "bob", "bob@x.com", gsi1sk={"S": "bob"}))
    for g in _guards("u2", "bob", "bob@x.com"):
        _put(db, g)
    problems = audit_items(app, db.scan_raw())
    assert [p.kind for p in problems] == ["stale-index"]
    # between the scan and the repair, a writer renames the user (with its own keys)
    moved = _raw_user("u2", "bobby", "bob@x.com", gsi1sk={"S": "bobby-by-hand"})
    _put(db, moved)
    before = db.scan()
    (result,) = repair(app, problems)
    assert not result.ok and "changed" in result.message
    assert db.scan() == before


def test_stale_table_key_reported_never_moved(db: TestBackend) -> None:
    # an item whose pk was rendered by an older template ("U#{user_id}")
    _put(db, _raw_user("u9", "zed", "zed@x.com", pk={"S": "U#u9"}))
    for g in _guards("u9", "zed", "zed@x.com"):
        _put(db, {**g, "owner_pk": {"S": "U#u9"}})
    problems = audit_items(app, db.scan_raw())
    assert [(p.kind, p.key, p.repairable) for p in problems] == [
        ("stale-key", ("U#u9", "PROFILE"), False)]
    assert "render the key 'USER#u9 | PROFILE'" in problems[0].detail
    before = db.scan()
    assert repair(app, problems) == []
    assert db.scan() == before


# -- a unique rule added after the data was written ----------------------------------------
def test_guards_missing_after_a_unique_rule_was_added(db: TestBackend) -> None:
    for uid, name in (("u1", "ada"), ("u2", "bob"), ("u3", "cy")):
        _put(db, _raw_user(uid, name, f"{name}@X.com"))
    _put(db, _raw_user("u4", "dup", "ada@x.com"))  # a clash the new rule reveals
    result = check_table(app)
    kinds = sorted((line.split()[0], line.split()[1]) for line in result.problems)
    assert kinds == [("duplicate", "USER#u1"), ("duplicate", "USER#u4"),
                     *[("missing-guard", f"USER#u{i}") for i in (1, 2, 2, 3, 3, 4)]]
    assert result.scanned == 4 and not result.repairs
    fixed = check_table(app, fix=True)
    assert (fixed.repaired, fixed.failed, fixed.unrepairable) == (6, 0, 2)
    again = check_table(app)
    assert [line.split()[:2] for line in again.problems] == [["duplicate", "USER#u1"],
                                                             ["duplicate", "USER#u4"]]
    s = Session(app)
    assert [u.user_id for u in (s.find(User, username="cy"), s.find(User, email="BOB@x.com"))
            if u] == ["u3", "u2"]


# -- checkpoint ----------------------------------------------------------------------------
def _plant(db: TestBackend, n: int) -> set[tuple[str, str]]:
    """n users, every third with a stale gsi1sk, every fifth without guards."""
    planted = set()
    for i in range(n):
        uid, name = f"u{i:02d}", f"name{i:02d}"
        extra = {"gsi1sk": {"S": name}} if i % 3 == 0 else {}
        _put(db, _raw_user(uid, name, f"{name}@x.com", **extra))
        if i % 3 == 0:
            planted.add(("stale-index", f"USER#{uid}"))
        if i % 5 == 0:
            planted.add(("missing-guard", f"USER#{uid}"))
            continue
        for g in _guards(uid, name, f"{name}@x.com"):
            _put(db, g)
    return planted


def _scanned_keys(table: Any, into: list[str], fail_at: int | None = None) -> Any:
    calls = {"n": 0}

    def hook(parsed: dict[str, Any], **_: Any) -> None:
        calls["n"] += 1
        if fail_at is not None and calls["n"] == fail_at:
            raise RuntimeError("interrupted")  # the page was read, never processed
        into.extend(f"{i['pk']['S']}|{i['sk']['S']}" for i in parsed.get("Items", []))

    table.wire = "botocore"  # hooks botocore's client: its wire
    table.client.meta.events.register("after-call.dynamodb.Scan", hook)
    return hook


@pytest.mark.parametrize("fix", [False, True], ids=["report", "repair"])
def test_interrupted_run_resumes_and_covers_every_item_once(
        db: TestBackend, tmp_path: Path, fix: bool) -> None:
    planted = _plant(db, 20)
    before = {f"{i['pk']['S']}|{i['sk']['S']}" for i in db.scan_raw()}
    checkpoint = tmp_path / "check.json"
    first: list[str] = []
    hook = _scanned_keys(app, first, fail_at=4)
    with pytest.raises(RuntimeError, match="interrupted"):
        check_table(app, fix=fix, checkpoint=checkpoint, page_size=5)
    app.client.meta.events.unregister("after-call.dynamodb.Scan", hook)
    state = json.loads(checkpoint.read_text())
    assert (state["scanned"], state["pages"], state["done"]) == (15, 3, False)
    assert state["last_key"] is not None and state["table"] == app.name

    second: list[str] = []
    hook = _scanned_keys(app, second)
    result = check_table(app, fix=fix, checkpoint=checkpoint, page_size=5)
    app.client.meta.events.unregister("after-call.dynamodb.Scan", hook)
    processed = first + second
    assert len(processed) == len(set(processed)) == result.scanned  # no item twice
    assert result.resumed and before <= set(processed)  # and every item
    # a repair adds guard items while the scan runs: the scan may meet some of them
    assert set(processed) == before if not fix else len(processed) >= len(before)
    found = [(line.split()[0], line.split()[1]) for line in result.problems]
    expected = [p for p in planted for _ in range(2 if p[0] == "missing-guard" else 1)]
    assert sorted(found) == sorted(expected)  # a missing owner lacks two guards
    if fix:
        assert result.repaired == len(result.problems) and result.left == 0
        assert check_table(app).problems == []
    else:
        assert result.repaired == 0 and result.left == len(result.problems)
    assert json.loads(checkpoint.read_text())["done"] is True
    fresh = check_table(app, checkpoint=checkpoint, page_size=5)  # a finished one restarts
    assert not fresh.resumed and fresh.scanned == len(db.scan_raw())


def test_unusable_checkpoints_are_refused(db: TestBackend, tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(CheckpointError, match="not a dynaorm check checkpoint"):
        check_table(app, checkpoint=bad)
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"table": "elsewhere", "repair": False}))
    with pytest.raises(CheckpointError, match="belongs to table 'elsewhere'"):
        check_table(app, checkpoint=other)
    half = tmp_path / "half.json"
    half.write_text(json.dumps({"table": app.name, "repair": False, "scanned": 3}))
    with pytest.raises(CheckpointError, match="without --repair"):
        check_table(app, fix=True, checkpoint=half)
    typed = tmp_path / "typed.json"
    typed.write_text(json.dumps({"table": app.name, "repair": False, "scanned": "x"}))
    with pytest.raises(CheckpointError, match="scanned must be int"):
        check_table(app, checkpoint=typed)
    with pytest.raises(CheckpointError, match="is a directory"):
        check_table(app, checkpoint=tmp_path)
    with pytest.raises(CheckpointError, match="cannot be written"):
        check_table(app, checkpoint=tmp_path / "missing-dir" / "cp.json")


# -- progress and the command --------------------------------------------------------------
def test_progress_line() -> None:
    assert progress_line(1200, 5000, 700, 2.0) == (
        "scanned 1200 items of ~5000 (24%), 350 items/s, ETA 0:00:11")
    assert progress_line(10, None, 10, 1.0) == "scanned 10 items, 10 items/s, ETA ?"
    assert progress_line(60, 50, 60, 1.0) == (
        "scanned 60 items of ~60 (100%), 60 items/s, ETA 0:00:00")  # the count is approximate
    ticks = iter([0.0, 1.0, 2.0])
    out = io.StringIO()
    bar = ProgressBar(out, 100, clock=lambda: next(ticks))
    bar(20)   # resumed at 20 items: the rate counts this run's items only
    bar(30)
    bar(40)
    bar.close()
    assert out.getvalue().split("\r")[-1] == (
        "scanned 40 items of ~100 (40%), 10 items/s, ETA 0:00:06\n")


def _cli(db: TestBackend, *args: str) -> int:
    extra = ["--endpoint-url", db.endpoint_url] if db.endpoint_url else []
    return main(["check", "tests.support.models:app", *args, *extra])


def test_command_progress_checkpoint_and_exit_codes(
        db: TestBackend, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _plant(db, 6)
    total = len(db.scan_raw())
    assert _cli(db, "--progress", "--page-size", "4") == 1
    captured = capsys.readouterr()
    assert f"checked table {app.name!r}: {total} items, 6 problem(s)" in captured.out
    assert "6 of 6 can be repaired: run again with --repair" in captured.out
    last = captured.err.strip().split("\r")[-1]
    assert last.startswith(f"scanned {total} items of ~") and "items/s, ETA " in last
    assert captured.err.count("\r") >= total // 4  # redrawn after every page

    checkpoint = str(tmp_path / "cp.json")
    assert _cli(db, "--repair", "--checkpoint", checkpoint) == 0
    captured = capsys.readouterr()
    assert captured.out.count("fixed") == 6 and "0 problem(s) left" in captured.out
    assert captured.err == ""  # not a terminal, not forced: no progress bar
    assert _cli(db) == 0
    assert "0 problem(s)" in capsys.readouterr().out

    Path(checkpoint).write_text("[]")
    assert _cli(db, "--checkpoint", checkpoint) == 2
    assert "not a dynaorm check checkpoint" in capsys.readouterr().err
    assert _cli(db, "--checkpoint", str(tmp_path)) == 2  # a directory: one line, exit 2
    err = capsys.readouterr().err
    assert "is a directory" in err and err.count("\n") == 1
    assert _cli(db, "--page-size", "0") == 2


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


def _wire(**options: Any) -> tuple[FlakyBatches, list[float]]:
    """A :class:`FlakyBatches` hook on the table's client for its BatchGetItem requests
    (the first ``flaky`` answers read only ``keep`` of their keys), and the back-off sleeps
    its sync driver is told (the suite resets both after the test; :func:`_unwire`
    earlier). Set the table's ``max_wait`` / ``max_attempts`` first: that rebinds it."""
    wire = FlakyBatches(app, operations=("BatchGetItem",), **options)
    sleeps: list[float] = []
    wire.client.driver.sleep = sleeps.append
    return wire, sleeps


def _unwire(wire: FlakyBatches) -> None:
    wire.detach()
    wire.client.driver.sleep = time.sleep


def _keys(items: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return [(i["pk"]["S"], i["sk"]["S"]) for i in items]


@pytest.mark.sync_only
def test_check_retries_unprocessed_keys_with_backoff(db: TestBackend) -> None:
    total = _users(db, 12)
    clean = check_table(app, page_size=5)
    assert clean.scanned == total and len(clean.problems) == 3  # u00, u04, u08
    wire, sleeps = _wire()
    asked = check_table(app, page_size=5)
    keys_read = sum(read for _, _, read in wire.batches)  # every key once, nothing throttled

    _unwire(wire)
    wire, sleeps = _wire(flaky=5)
    result = check_table(app, page_size=5)
    assert (result.scanned, result.problems) == (clean.scanned, clean.problems)
    assert asked.problems == clean.problems
    # five answers left keys unprocessed: each was followed by a retry round of exactly
    # those keys, after a back-off (the table's, within its max_wait)
    assert sum(asked > read for _, asked, read in wire.batches) == 5
    assert sum(read for _, _, read in wire.batches) == keys_read
    assert len(sleeps) == 5 and all(d > 0 for d in sleeps)
    assert sum(sleeps) <= app.max_wait
    assert all(req["RequestItems"][app.name].get("ConsistentRead") is True
               for req, _ in wire.ops("BatchGetItem"))


@pytest.mark.sync_only
def test_check_gives_up_on_keys_never_processed_and_resumes_the_page(
        db: TestBackend, tmp_path: Path) -> None:
    total = _users(db, 6)
    checkpoint = tmp_path / "check.json"
    app.max_wait = 0.5  # (first: it rebinds the table to a client that waits so long)
    wire, sleeps = _wire(flaky=10**6, keep=0.0)
    with pytest.raises(DynaormError, match=f"unprocessed requests after {MAX_BATCH_ROUNDS}"):
        check_table(app, checkpoint=checkpoint, page_size=4)
    # bounded: MAX_BATCH_ROUNDS requests, the back-offs between them within max_wait
    assert len(wire.ops("BatchGetItem")) == MAX_BATCH_ROUNDS
    assert 0 < sum(sleeps) <= 0.5 + 1e-9 and len(sleeps) <= MAX_BATCH_ROUNDS - 1
    state = json.loads(checkpoint.read_text())  # the page read last was never recorded
    assert len(wire.ops("Scan")) == state["pages"] + 1 and not state["done"]

    _unwire(wire)  # throttling over: the run resumes at the page it could not finish
    result = check_table(app, checkpoint=checkpoint, page_size=4)
    assert result.resumed and result.scanned == total and len(result.problems) == 2


@pytest.mark.sync_only
def test_resumed_check_reads_every_item_once_in_counted_requests(
        db: TestBackend, tmp_path: Path) -> None:
    total = _users(db, 12)  # 12 users, 24 guards less 3: 33 items
    stored = set(_keys(db.scan_raw()))
    pages = -(-total // 5)  # the last page partial: DynamoDB ends the scan with it
    assert total % 5
    checkpoint = tmp_path / "check.json"
    scans = {"n": 0}

    def third_scan(operation: str, request: dict[str, Any]) -> bool:
        scans["n"] += operation == "Scan"
        return operation == "Scan" and scans["n"] == 3

    attempts = app.max_attempts
    app.max_attempts = 1  # the run stops at that page (first: it rebinds the table)
    first, _ = _wire(fail=third_scan)
    with pytest.raises(DynaormError, match="cannot scan table"):
        check_table(app, checkpoint=checkpoint, page_size=5)
    state = json.loads(checkpoint.read_text())
    assert (state["pages"], state["scanned"], state["done"]) == (2, 10, False)
    assert state["last_key"] == first.ops("Scan")[-1][1]["LastEvaluatedKey"]

    _unwire(first)
    app.max_attempts = attempts
    second, _ = _wire()
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
    # guard, the guard's holder), and for a page with findings their confirmation (0.3:
    # up to three consistent re-reads of three BatchGetItem each), nothing else
    assert len(first.ops("Scan")) + len(requests) == pages
    assert {op for op, _, _ in second.log} == {"Scan", "BatchGetItem"}
    assert len(second.ops("BatchGetItem")) <= 2 * len(requests) + 9 * len(result.problems)
    assert json.loads(checkpoint.read_text())["pages"] == pages


@pytest.mark.sync_only
def test_a_throttled_scan_page_is_retried_with_backoff(db: TestBackend) -> None:
    total = _users(db, 4)
    scans = {"n": 0}

    def second_scan(operation: str, request: dict[str, Any]) -> bool:
        scans["n"] += operation == "Scan"
        return operation == "Scan" and scans["n"] == 2

    wire, sleeps = _wire(fail=second_scan)
    seen = list(accumulate(len(page) for page, _ in scan_pages(app, page_size=5)))
    assert seen[-1] == total
    assert len(sleeps) == 1  # the client's retry rules: one back-off, then the page
    sizes = [len(out["Items"]) for _, out in wire.ops("Scan")]
    assert seen == [sum(sizes[:i + 1]) for i in range(len(sizes))]  # progress per page


@pytest.mark.sync_only
def test_describe_and_repair_requests_retry_by_the_shared_rules(db: TestBackend) -> None:
    _users(db, 4)  # u00's username guard gone: one missing-guard
    firsts: set[str] = set()

    def first_of_each(operation: str, request: dict[str, Any]) -> bool:
        if operation in firsts or operation not in ("DescribeTable", "TransactWriteItems"):
            return False
        firsts.add(operation)
        return True

    wire, sleeps = _wire(fail=first_of_each)
    assert item_count(app) is not None
    result = check_table(app, fix=True)
    assert (result.repaired, result.failed) == (1, 0)
    assert [op for op, _ in wire.refused] == ["DescribeTable", "TransactWriteItems"]
    assert len(sleeps) == 2  # one back-off each, then the same request again
    ((sent, _),) = wire.ops("TransactWriteItems")
    assert sent == wire.refused[1][1]  # its ClientRequestToken too: applied once
    assert check_table(app).problems == []


def test_a_repair_that_may_have_applied_says_its_outcome_is_unknown(db: TestBackend) -> None:
    """(0.5) Outcomes are proofs for check --repair too: a fix whose attempts all met a
    500 may have been applied; it is reported failed as unknown, never as refused."""
    _users(db, 4)
    before = app.binding()
    app.max_wait = 0
    try:
        with inject_faults(app) as faults:
            faults.server_error("TransactWriteItems", times=None)
            result = check_table(app, fix=True)
    finally:
        app.restore(before)
    assert (result.repaired, result.failed) == (0, 1)
    (repair,) = result.repairs
    assert not repair.ok and repair.message.startswith("outcome unknown (may have been")


def test_scan_pages_resume_from_any_position(seeded: TestBackend) -> None:
    pages = list(scan_pages(app, page_size=3))
    assert [last is None for _, last in pages] == [False] * (len(pages) - 1) + [True]
    everything = [k for items, _ in pages for k in _keys(items)]
    assert sorted(everything) == sorted(_keys(seeded.scan_raw()))
    for at, (_, last) in enumerate(pages[:-1]):
        rest = list(scan_pages(app, last, page_size=3))
        assert [_keys(items) for items, _ in rest] == [_keys(i) for i, _ in pages[at + 1:]]


# -- healthy tables of every feature combination (0.3): nothing found, nothing written ------
combo = Table("check-combos", ttl="expires",
              indexes=[GSI("gsi1", pk="gsi1pk", sk="gsi1sk"), LSI("lsi1", sk="lsi1sk"),
                       LSI("hist", sk="histsk")])

_COMBOS = [(u, v, g, h, (i % 2 == 0), (i % 3 != 0), (i % 2 == 1), (i % 4 < 2))
           for i, (u, v, g, h) in enumerate(itertools.product(
               (False, True), (False, True), ("none", "gsi", "sharded"), (False, True)))
           if v or not h]


def _combo_class(n: int, unique: bool, versioned: bool, gsi: str, history: bool,
                 lsi: bool, ttl: bool, stamps: bool, aliases: bool) -> type[Entity]:
    """An entity of ``combo`` with the given features (fields ``ident``, ``name``, ``mail``,
    ``notes`` and, with ``ttl``, ``expires``)."""
    meta: dict[str, Any] = {"table": combo, "pk": f"C{n}#{{ident}}", "sk": "ITEM",
                            "type_name": f"Combo{n}"}
    indexes: dict[str, Any] = {}
    if unique:
        meta["unique"] = ("name", Unique("mail", normalize=str.lower))
    if versioned:
        meta["versioned"] = True
    if gsi != "none":
        indexes["gsi1"] = (f"C{n}#{{name}}" + ("#{shard}" if gsi == "sharded" else ""),
                           "N#{notes}")
        if gsi == "sharded":
            meta["shards"] = {"gsi1": 3}
    if lsi:
        indexes["lsi1"] = (f"C{n}#{{ident}}", "M#{mail}")
    if history:
        meta["history_index"] = "hist"
    if indexes:
        meta["indexes"] = indexes
    if stamps:
        meta["timestamps"] = ("created_at", "updated_at")
    ns: dict[str, Any] = {
        "Meta": type("Meta", (), {**meta, "__qualname__": f"Combo{n}.Meta"}),
        "__module__": __name__, "__qualname__": f"Combo{n}",
        "__annotations__": {"ident": str, "name": str, "mail": str, "notes": str},
        "notes": Field(default="x", alias="n") if aliases else "x",
        "mail": Field(serialization_alias="mailAddress") if aliases else Field(),
    }
    if ttl:
        ns["__annotations__"]["expires"] = datetime | None
        ns["expires"] = None
    return type(f"Combo{n}", (Entity,), ns)


_COMBO_CLASSES = [_combo_class(n, *c) for n, c in enumerate(_COMBOS)]


def _write_combos(tb: TestBackend) -> None:
    """Every write kind on every combination: inserts, edits (a unique value changed, a
    versioned save), deletes, and owners whose TTL has passed but are still readable."""
    s = tb.session()
    past = datetime.now(UTC) - timedelta(days=1)
    future = datetime.now(UTC) + timedelta(days=1)
    for cls in _COMBO_CLASSES:
        ttl = "expires" in cls.model_fields
        objs = []
        for i in range(3):
            extra = {"expires": past if i == 2 else future} if ttl else {}
            c = cls.__name__  # unique values are table-wide
            obj = cls(ident=f"i{i}", name=f"{c}n{i}", mail=f"{c}M{i}@x", **extra)
            s.save(obj)
            objs.append(obj)
        s.commit()
        objs[0].notes = "edited"
        objs[0].name += "b"
        s.save(objs[0])
        objs[1].notes = "edited"
        s.save(objs[1])
        s.commit()
        objs[0].mail += ".b"
        s.save(objs[0])
        s.delete(objs[1])
        s.commit()


def test_healthy_tables_of_every_combination_need_no_repair(backend: str | None) -> None:
    """``check`` finds nothing and ``--repair`` sends no write (the table unchanged: a run
    again would judge the same items): the judged shape is exactly what the writer writes
    (version rows without index keys, history keys, TTL in the past, timestamps, aliases,
    shards, dynaorm's own extra attributes)."""
    assert len(_COMBOS) >= 18
    with use_tables(combo, endpoint_url=backend, name_suffix=worker_suffix()) as tb:
        _write_combos(tb)
        before = _canonical(tb.scan_raw())
        assert audit_table(tb.table)[1] == []
        recorded = Requests(tb.table)
        result = check_table(tb.table, fix=True, page_size=25)
        assert result.problems == [] and result.repairs == []
        writes = [op for op, _ in recorded.calls if op in (
            "PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem", "TransactWriteItems")]
        assert writes == []
        assert _canonical(tb.scan_raw()) == before
        # an unknown attribute dynaorm writes for itself (a write token) is never judged
        for item in tb.scan_raw():
            _put_raw(tb, {**item, "_wt": {"S": "token"}})
        assert audit_table(tb.table)[1] == []


def _canonical(items: list[dict[str, Any]]) -> list[str]:
    """Items as comparable text, whatever order an engine lists attributes in (dynoxide's
    order changes between two scans of the same items)."""
    return sorted(json.dumps(item, sort_keys=True, default=repr) for item in items)


def _put_raw(tb: TestBackend, item: dict[str, Any]) -> None:
    send(tb.table, "PutItem", {"TableName": tb.table.name, "Item": item})


def test_a_user_rules_rows_are_no_finding(db: TestBackend,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    """The rows a rule a user registers adds to its entity's writes (the rules guide's
    audit rule), with a type name of their own or none, are the rule's: ``check`` claims
    them from the model and exits 0 on the healthy table (it reported them as
    ``unclaimed-type`` and exited 1)."""
    order_cls, ticket_cls = audited_entities()
    with db.session() as s:
        s.save(order_cls(order_id="o1", total=3))
        s.save(ticket_cls(ticket_id="t1"))
    s = db.session()
    s.update(order_cls, order_id="o1").set(total=4)
    s.commit()
    assert sum(i["pk"]["S"].startswith("AUDIT#") for i in db.scan_raw()) == 3
    assert audit_table(db.table)[1] == []
    result = check_table(db.table)
    assert result.problems == [] and result.unclaimed == {}
    args = ["check", "tests.support.models:app"]
    if db.endpoint_url:
        args += ["--endpoint-url", db.endpoint_url]
    assert main(args) == 0, capsys.readouterr().out


def test_a_stale_key_a_scoped_session_skips_is_reported(db: TestBackend,
                                                          request: pytest.FixtureRequest
                                                          ) -> None:
    """The rows 0.7 wrote for tenant ``acme-corp`` (``T-acme-corp-123``, and under a
    previous layout ``M-acme-corp-9``), whose keys the grammar reads as acme's and which
    acme's scoped session skips (contract 24), are each a ``stale-key`` finding naming
    the separator, never repaired; acme's own rows are none."""
    with use_tables(stale, endpoint_url=db.endpoint_url, name_suffix=worker_suffix(),
                    wire=wire_of(request)):
        plant_stale_rows()
        problems = audit_items(stale, db.scan_raw(stale))
        assert sorted((p.kind, p.key, p.repairable) for p in problems) == [
            ("stale-key", ("M-acme-corp-9", "MOVED"), False),
            ("stale-key", ("T-acme-corp-123", "PAPER"), False)]
        assert all("'-'" in p.detail and "scoped session skips" in p.detail
                   for p in problems)
        assert repair(stale, problems) == []


@pytest.mark.engines("moto")
def test_items_no_entity_claims_are_reported_on_a_table_without_a_type_attribute(
        backend: str | None) -> None:
    """Issue 82: ``dynaorm check`` was silent there (a guard the old code wrote, a planted
    item); dynaorm's own rows (a receipt) are claimed, by dynaorm."""
    from dynaorm import Entity, Table
    from dynaorm.jobs.checking import check_table
    from dynaorm.testing import use_tables, worker_suffix

    bare = Table("check-untyped", pk="PK", sk="SK", type_attribute=None)

    class Member(Entity):
        class Meta:
            table = bare
            pk = "M#{member_id}"
            sk = "PROFILE"

        member_id: str
        email: str = ""

    with use_tables(bare, endpoint_url=backend, name_suffix=worker_suffix()):
        for item in ({"PK": {"S": "M#1"}, "SK": {"S": "PROFILE"}, "email": {"S": "a@x"}},
                     {"PK": {"S": "EMAIL#a@x"}, "SK": {"S": "EMAIL#a@x"}},  # the old guard
                     {"PK": {"S": "PLANTED"}, "SK": {"S": "X"}},
                     {"PK": {"S": "dynaorm:receipt#k"}, "SK": {"S": "dynaorm:receipt#k"}}):
            bare.client.put_item(TableName=bare.name, Item=item)
        result = check_table(bare)
    assert result.scanned == 4
    assert result.unclaimed == {"(no type attribute)": 2}
    assert sorted(p.split()[1] for p in result.problems) == ["EMAIL#a@x", "PLANTED"]
    assert all(p.startswith("unclaimed-item") for p in result.problems)


@pytest.mark.engines("moto")
@pytest.mark.parametrize("typed", [True, False])
def test_langgraph_rows_no_saver_claims_are_named_as_such(backend: str | None,
                                                          typed: bool) -> None:
    """Red team of issue 82: the model ``dynaorm model --infer`` prints never declares
    ``dynaorm.langgraph``'s rows (they are dynaorm's own), so ``dynaorm check`` of it
    finds them unclaimed: the problem says to declare ``Saver``/``Store`` with the table,
    not to give a class their type name (which refuses ``Saver(table)``) or to delete
    them."""
    from dynaorm import Entity, Table
    from dynaorm.jobs.checking import check_table
    from dynaorm.testing import use_tables, worker_suffix

    app = Table("check-lg", pk="PK", sk="SK", type_attribute="_type" if typed else None)

    class Member(Entity):
        class Meta:
            table = app
            pk = "M#{member_id}"
            sk = "PROFILE"

        member_id: str

    def s(text: str) -> dict[str, str]:
        return {"S": text}

    rows = [{"PK": s("LG#t1"), "SK": s("C#_#c1#"), "_type": s("LangGraphCheckpoint"),
             "thread_id": s("t1"), "ns": s("_"), "checkpoint_id": s("c1")},
            {"PK": s("LG#t1"), "SK": s("C#_#c1#W#task#0"), "_type": s("LangGraphWrite"),
             "thread_id": s("t1"), "ns": s("_"), "checkpoint_id": s("c1"),
             "task_id": s("task"), "idx": {"N": "0"}},
            {"PK": s("LANGGRAPH#STORE"), "SK": s("a..b"), "_type": s("LangGraphMemory"),
             "path": s("a..b")}]
    with use_tables(app, endpoint_url=backend, name_suffix=worker_suffix()):
        app.client.put_item(TableName=app.name, Item={"PK": s("M#1"), "SK": s("PROFILE"),
                                                      **({"_type": s("Member")} if typed
                                                         else {})})
        for row in rows:
            app.client.put_item(TableName=app.name, Item=row if typed else {
                k: v for k, v in row.items() if k != "_type"})
        result = check_table(app)
    assert len(result.problems) == 3, result.problems
    for problem in result.problems:
        assert "dynaorm.langgraph" in problem and "Saver" in problem, problem
        assert "renamed" not in problem and "delete it" not in problem, problem
