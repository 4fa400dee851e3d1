"""No lost updates (contract section 4, 0.2), planned with no engine: the values an update
is conditioned on count in the size of its request. The updates on the engines are in
tests/integration/test_lost_updates.py."""

from __future__ import annotations

import pytest

from dynaorm import TransactionTooLargeError
from dynaorm.write.planner import compile_commit
from dynaorm.write.staged import SaveEntry
from tests.support.models import Note

T = "dynaorm-tests"


def test_request_size_counts_condition_values() -> None:
    """Twelve updates of ~190 KB each: 2.3 MB of new values, but each is also conditioned on
    its ~190 KB old value, so the request is over 4 MB and is refused before sending."""
    from dynaorm.model.entity import Entity

    entries = []
    for i in range(12):
        n = Note._from_item({"pk": {"S": f"NOTE#{i}"}, "sk": {"S": "NOTE"},
                             "type": {"S": "Note"}, "note_id": {"S": str(i)},
                             "body": {"S": "a" * 190_000}})
        n.body = "b" * 190_000
        entries.append((SaveEntry(n), n._dynaorm_state))
    assert isinstance(entries[0][0].obj, Entity)
    with pytest.raises(TransactionTooLargeError):
        compile_commit(T, entries)
    plan, _ = compile_commit(T, entries[:5])  # the same shape, small enough, plans fine
    assert len(plan.ops) == 5
