"""dynaorm.powertools (contract 22, issue 60): Powertools' own ``@idempotent`` decorator
and ``BatchProcessor`` drive dynaorm, on every engine: idempotency records live in the
application's table (never read back as entities, never a ``check`` finding, never a
stream change), and stream records decode into typed changes, a record no entity claims
being a failed item of the batch."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import pytest
from aws_lambda_powertools.utilities.batch import (
    BatchProcessor,
    EventType,
    process_partial_response,
)
from aws_lambda_powertools.utilities.idempotency import IdempotencyConfig, idempotent
from aws_lambda_powertools.utilities.idempotency.exceptions import (
    IdempotencyAlreadyInProgressError,
    IdempotencyValidationError,
)

from dynaorm import Change, Session
from dynaorm.powertools import (
    POWERTOOLS_TYPE,
    DynaormPersistenceLayer,
    UnclaimedRecordError,
    changes,
)
from dynaorm.testing import TestBackend
from tests.support.models import Note, User
from tests.support.user_rules import AuditRows, audited_entities

AUDIT = AuditRows.name

pytestmark = pytest.mark.sync_only  # (Powertools is sync; the layer uses the table's client)


@dataclass
class Context:
    """The parts of a Lambda context Powertools reads."""

    function_name: str = "handler"
    memory_limit_in_mb: int = 128
    invoked_function_arn: str = "arn:aws:lambda:us-east-1:123456789012:function:handler"
    aws_request_id: str = "req-1"
    remaining: int = 30_000

    def get_remaining_time_in_millis(self) -> int:
        return self.remaining


def _handler(db: TestBackend, calls: list[str], **config: Any) -> Any:
    store = DynaormPersistenceLayer(db.table)
    cfg = IdempotencyConfig(event_key_jmespath="order_id", **config)

    @idempotent(persistence_store=store, config=cfg)
    def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        calls.append(event["order_id"])
        with Session(db.table) as s:
            s.save(Note(note_id=event["order_id"], body=event.get("body", "")))
        return {"saved": event["order_id"], "n": len(calls)}

    return handler


def test_idempotent_runs_a_handler_once_and_keeps_its_record_in_the_table(
        db: TestBackend) -> None:
    calls: list[str] = []
    handler = _handler(db, calls)
    first = handler({"order_id": "o1", "body": "x"}, Context())
    again = handler({"order_id": "o1", "body": "x"}, Context())
    assert first == again == {"saved": "o1", "n": 1}
    assert calls == ["o1"]
    records = [i for i in db.scan() if i.get("_type") == POWERTOOLS_TYPE]
    assert len(records) == 1 and records[0]["status"] == "COMPLETED"
    assert records[0]["_expires"] > time.time()
    s = db.session()
    assert [n.note_id for n in s.scan(Note).all()] == ["o1"]  # (never an entity)
    from dynaorm.jobs.checking import check_table

    assert check_table(db.table).problems == []


def test_an_invocation_in_progress_holds_the_key_until_its_time_runs_out(
        db: TestBackend) -> None:
    store = DynaormPersistenceLayer(db.table)
    cfg = IdempotencyConfig(event_key_jmespath="order_id")
    store.configure(cfg, f"{__name__}._handler.<locals>.handler")  # (the decorated one's)
    store.save_inprogress({"order_id": "o2"}, remaining_time_in_millis=60_000)
    calls: list[str] = []
    handler = _handler(db, calls)
    with pytest.raises(IdempotencyAlreadyInProgressError):
        handler({"order_id": "o2"}, Context())
    assert calls == []
    # the invocation that held it timed out (its remaining time passed): taken over
    store.save_inprogress({"order_id": "o3"}, remaining_time_in_millis=0)
    time.sleep(0.01)
    assert handler({"order_id": "o3"}, Context()) == {"saved": "o3", "n": 1}


def test_a_failing_handler_leaves_no_record_and_runs_again(db: TestBackend) -> None:
    calls: list[str] = []
    store = DynaormPersistenceLayer(db.table)

    @idempotent(persistence_store=store, config=IdempotencyConfig(event_key_jmespath="k"))
    def handler(event: dict[str, Any], context: Any) -> str:
        calls.append(event["k"])
        if len(calls) == 1:
            raise RuntimeError("boom")
        return "ok"

    with pytest.raises(RuntimeError):
        handler({"k": "a"}, Context())
    assert [i for i in db.scan() if i.get("_type") == POWERTOOLS_TYPE] == []
    assert handler({"k": "a"}, Context()) == "ok"
    assert handler({"k": "a"}, Context()) == "ok"
    assert calls == ["a", "a"]


def test_payload_validation_refuses_another_payload_under_a_key(db: TestBackend) -> None:
    calls: list[str] = []
    handler = _handler(db, calls, payload_validation_jmespath="body")
    handler({"order_id": "o1", "body": "x"}, Context())
    with pytest.raises(IdempotencyValidationError):
        handler({"order_id": "o1", "body": "other"}, Context())
    assert calls == ["o1"]


# -- stream records through Powertools' batch processor ---------------------------------------
def _record(db: TestBackend, n: int, image: dict[str, Any], name: str = "INSERT"
            ) -> dict[str, Any]:
    keys = {a: image[a] for a in ("pk", "sk")}
    return {"eventID": f"e{n}", "eventName": name, "eventSource": "aws:dynamodb",
            "eventSourceARN": f"arn:aws:dynamodb:us-east-1:1:table/{db.table.name}/stream/x",
            "dynamodb": {"Keys": keys, "NewImage": image, "SequenceNumber": str(100 + n),
                         "StreamViewType": "NEW_AND_OLD_IMAGES"}}


def test_batch_processor_gets_typed_changes_and_fails_only_nobodys_records(
        db: TestBackend) -> None:
    calls: list[str] = []
    _handler(db, calls)({"order_id": "o1"}, Context())  # (an idempotency record too)
    with Session(db.table) as s:
        s.save(User(user_id="u1", username="ada", email="ada@x.com"))
        s.commit(idempotency_key=f"u1-{time.time()}")  # (and a receipt)
    stored = db.scan_raw()
    foreign = {"pk": {"S": "LEGACY#1"}, "sk": {"S": "X"}, "_type": {"S": "Legacy"}}
    event = {"Records": [_record(db, n, item) for n, item in enumerate([*stored, foreign])]}
    seen: list[tuple[str, str]] = []

    def record_handler(record: Any) -> None:
        change = changes(record, db.table)
        if change is None:
            return  # (a row of dynaorm's own)
        assert change.entity is not None
        seen.append((change.entity.__name__, change.role))
        if change.role == "row":
            assert isinstance(change.new, change.entity)

    processor = BatchProcessor(event_type=EventType.DynamoDBStreams)
    response = process_partial_response(event=event, record_handler=record_handler,
                                        processor=processor, context=Context())
    failed = [f["itemIdentifier"] for f in response["batchItemFailures"]]
    assert failed == [str(100 + len(stored))]  # only the foreign row's
    assert sorted(seen) == [("Note", "row"), ("User", "guard"), ("User", "guard"),
                            ("User", "row")]
    with pytest.raises(UnclaimedRecordError):
        changes(event["Records"][-1], db.table)


def test_changes_gives_one_change_and_none_for_dynaorms_own_rows(db: TestBackend) -> None:
    """Contract 23: one ``Change`` per record (not a list), ``None`` for a receipt or a
    Powertools record."""
    _handler(db, [])({"order_id": "o1"}, Context())
    with Session(db.table) as s:
        s.save(User(user_id="u1", username="ada", email="ada@x.com"))
        s.commit(idempotency_key=f"u1-{time.time()}")
    found = {}
    for n, item in enumerate(db.scan_raw()):
        change = changes(_record(db, n, item), db.table)
        found[item["pk"]["S"].split("#")[0]] = change
    assert found["dynaorm:idempotency"] is None and found["dynaorm:receipt"] is None
    note = found["NOTE"]
    assert isinstance(note, Change) and note.entity is Note and note.new.note_id == "o1"
    assert isinstance(found["USER"], Change) and found["USER"].role == "row"


def test_a_user_rules_rows_are_its_changes_never_a_failed_item(db: TestBackend) -> None:
    """The rules guide's audit rule (a rule a user registers whose ``rows`` hook adds an
    audit row to every write): its rows, with a type name of their own or none, are
    changes of role ``"rule"`` naming the rule and the entity; Powertools' batch processor
    fails none of them (it failed every audited write, forever)."""
    order_cls, ticket_cls = audited_entities()
    with Session(db.table) as s:
        s.save(order_cls(order_id="o1", total=3))
        s.save(ticket_cls(ticket_id="t1"))
    stored = db.scan_raw()
    audits = [i for i in stored if i["pk"]["S"].startswith("AUDIT#")]
    assert len(audits) == 2 and len(stored) == 4
    event = {"Records": [_record(db, n, item) for n, item in enumerate(stored)]}
    seen: list[tuple[str, str, str | None]] = []

    def record_handler(record: Any) -> None:
        change = changes(record, db.table)
        assert change is not None and change.entity is not None
        seen.append((change.entity.__name__, change.role, change.rule))
        if change.role == "rule":
            assert change.new is None and change.new_item is not None

    processor = BatchProcessor(event_type=EventType.DynamoDBStreams)
    response = process_partial_response(event=event, record_handler=record_handler,
                                        processor=processor, context=Context())
    assert response["batchItemFailures"] == []
    assert sorted(seen) == [("AuditedOrder", "row", None), ("AuditedOrder", "rule", AUDIT),
                            ("AuditedTicket", "row", None),
                            ("AuditedTicket", "rule", AUDIT)]
    # a keys-only record (a REMOVE of a KEYS_ONLY stream) is told by its key's shape
    for item in audits:
        keys = {a: item[a] for a in ("pk", "sk")}
        record = {**_record(db, 9, keys, "REMOVE"), "dynamodb": {"Keys": keys}}
        change = changes(record, db.table)
        assert change is not None and change.role == "rule" and change.kind == "remove"


def test_the_layer_registers_its_records_in_the_model() -> None:
    """Contract 24: the records are a row kind of the table (``table.keeps``), which what
    reads the model reads there (``dynaorm iam`` names them for a scoped write role: their
    keys render no scope), not a constant of its own."""
    from dynaorm import Table
    from dynaorm.formats import iam

    table = Table("powertools-kinds")
    assert [k["role"] for k in table.model()["table"]["rows"]] == ["receipt"]
    assert iam.unbound_rows(table.model(), "write", "tenant_id") == []
    DynaormPersistenceLayer(table)
    DynaormPersistenceLayer(table)  # (registered once)
    _, records = table.model()["table"]["rows"]
    key = f"{POWERTOOLS_TYPE}#{{hashed key}}"
    assert records == {"role": "Powertools idempotency record", "type": POWERTOOLS_TYPE,
                       "key": {"pk": key, "sk": key}, "ttl_seconds": None, "scoped": False,
                       "writer": "dynaorm.powertools.DynaormPersistenceLayer"}
    [note] = iam.unbound_rows(table.model(), "write", "tenant_id")
    assert repr(key) in note and "DynaormPersistenceLayer" in note
