"""``dynaorm.explain`` without an engine (contract 21, "what it costs"): how index entries
are priced (put, updated where projected attributes change, moved, deleted), the table
``str()`` prints, a find, and a vector search's requests. Its units against DynamoDB
Local's reported capacity are in ``integration/test_explain.py``."""

from __future__ import annotations

import importlib.util

import pytest

from dynaorm import GSI, Entity, Session, Table, explain
from dynaorm.values.limits import item_size
from dynaorm.write.costs import index_entries, read_units, write_units
from tests.support.models import User, app

keys_only = Table("explain-keys-only", indexes=[GSI("by_status", pk="gsi1pk",
                                                    projection="KEYS_ONLY"),
                                                GSI("by_owner", pk="gsi2pk", projection=["n"])])


class Ticket(Entity):
    class Meta:
        table = keys_only
        pk = "T#{ticket_id}"
        sk = "T"
        indexes = {"by_status": ("S#{status}", None), "by_owner": ("O#{owner}", None)}

    ticket_id: str
    status: str | None = None
    owner: str = "o"
    n: int = 0
    body: str = ""


def test_units_round_up_by_kb_for_writes_and_by_4_kb_for_reads() -> None:
    assert [write_units(n) for n in (0, 1, 1024, 1025, 4096)] == [1, 1, 1, 2, 4]
    assert [read_units(n) for n in (1, 4096, 4097)] == [0.5, 0.5, 1.0]
    assert read_units(9000, consistent=True) == 3.0


def test_index_entries_are_written_where_what_they_project_changes() -> None:
    table = keys_only
    keys = {"pk": {"S": "T#1"}, "sk": {"S": "T"}}
    base = {**keys, "gsi1pk": {"S": "S#open"}, "gsi2pk": {"S": "O#o"}, "n": {"N": "1"},
            "body": {"S": "b"}}
    status = item_size({**keys, "gsi1pk": {"S": "S#open"}})  # keys only
    owner = item_size({**keys, "gsi2pk": {"S": "O#o"}, "n": {"N": "1"}})  # and n
    assert index_entries(table, None, base) == [("by_status", "put", status),
                                                ("by_owner", "put", owner)]
    # a change of an attribute neither projects: no entry written
    assert index_entries(table, base, {**base, "body": {"S": "changed"}}) == []
    # n is projected into by_owner only: updated there, priced on the larger
    assert index_entries(table, base, {**base, "n": {"N": "12345"}}) == [
        ("by_owner", "update", owner + 2)]
    # a moved key: deleted and put again; an attribute gone: the entry deleted
    moved = {**base, "gsi1pk": {"S": "S#closed"}}
    assert index_entries(table, base, moved) == [("by_status", "delete", status),
                                                 ("by_status", "put", status + 2)]
    gone = {k: v for k, v in base.items() if k != "gsi1pk"}
    assert index_entries(table, base, gone) == [("by_status", "delete", status)]


def test_str_is_a_table_of_requests_rows_and_totals() -> None:
    s = Session(app)
    s.save(User(user_id="u1", username="ann", email="ann@example.com"))
    text = str(explain(s))
    assert text.splitlines()[0] == "explain: a commit of 1 staged write(s): 3 action(s)"
    assert "  TransactWriteItems  dynaorm-tests  -      0           8" in text
    assert "  User    unique guard  Put     -      pk=username#ann sk=username#ann" in text
    assert text.splitlines()[-3] == "total: 0 read units, 8 write units (not exact: see the notes)"


def test_a_find_reads_the_guard_then_its_owner() -> None:
    found = explain(User, email="Ann@Example.com")
    guard, owner = found.requests
    assert guard.request == {"TableName": "dynaorm-tests", "Key": {
        "pk": {"S": "email#ann@example.com"}, "sk": {"S": "email#ann@example.com"}}}
    assert (guard.read_units, owner.read_units) == (0.5, 0.5)
    assert found.what == "find User {'email': 'Ann@Example.com'}"
    with pytest.raises(TypeError, match="only for a get"):
        explain(Session(app).query(User, user_id="u1"), user_id="u1")


@pytest.mark.skipif(importlib.util.find_spec("tests.support.vector_models") is None,
                    reason="vector search (issue 51) not merged here yet")
def test_a_vector_search_sends_its_request_then_reads_its_hits_by_key() -> None:
    """Issue 59, point 6: one request where the index projects the entity (``ALL``); the
    hits read by key where it does not (``KEYS_ONLY``)."""
    from tests.support.vector_models import Doc, docs

    search = Session(docs).search(Doc, "by_meaning", vector=[0.1, 0.2, 0.3, 0.4], top=3,
                                  tenant_id="t1")
    found = explain(search)
    (first,) = found.requests
    assert (first.operation, first.index) == ("SearchVectors", "by_meaning")
    assert first.request["TopK"] == 3 and not found.exact
    found = explain(Session(docs).search(Doc, "by_dot", vector=[0.1, 0.2, 0.3, 0.4], top=3))
    first, hits = found.requests
    assert (first.operation, first.index, hits.operation) == (
        "SearchVectors", "by_dot", "BatchGetItem")
    assert first.request["TopK"] == 3 and not found.exact


def test_a_transaction_is_exact_only_where_its_actions_differ() -> None:
    """(issue 59) ``explain`` of a transaction said ``exact=True`` with a note that DynamoDB
    Local reports less. Its units are what DynamoDB charges (each action twice its own);
    where two actions cost the same on the same table and indexes DynamoDB Local reports
    them once, so the explanation is not ``exact`` and says so. Against DynamoDB Local in
    ``integration/test_explain.py``."""
    from tests.support.models import Note

    s = Session(app)
    s.save(Note(note_id="n1", body="x" * 100))
    s.save(Note(note_id="n2", body="x" * 1500))  # 1 KB and 2 KB: 2 and 4 units
    found = explain(s)
    assert found.requests[0].operation == "TransactWriteItems"
    assert found.exact and found.by_table() == {app.name: 6.0}
    assert "(as DynamoDB charges)" in found.notes[0] and len(found.notes) == 1
    assert "not exact" not in str(found)
    s.save(Note(note_id="n3", body="y" * 100))  # a second action of 2 units
    found = explain(s)
    assert not found.exact and found.by_table() == {app.name: 8.0}
    assert "DynamoDB Local counts them once" in found.notes[-1]
    assert "(not exact: see the notes)" in str(found)
    s = Session(app)
    s.save(User(user_id="u1", username="ann", email="ann@example.com"))  # two 2-unit guards
    assert not explain(s).exact
    s = Session(app)
    s.save(Note(note_id="n4", body="z"))  # one action alone: no transaction, exact
    assert explain(s).exact
