"""Every process model (contract 20, "Every process model"), each tried as an adversary
would: hooks and spans that report what the caller sees, whatever a read terminal does
with a page and whatever a hook sets; a client across ``os.fork()`` on both wires; over
many event loops (descriptors and loops counted); across class redefinition and reloads;
several ``Table`` objects of one table on one client."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from dynaorm import (
    DynaormError,
    Hook,
    ItemDecodeError,
    Operation,
    RequestError,
)
from dynaorm.testing import TestBackend
from tests.support.models import Note, app
from tests.support.recording import send
from tests.support.spans import Spans


@pytest.fixture
def spans(db: TestBackend) -> Iterator[Spans]:
    found = Spans()
    found.attach()
    yield found
    app.db.tracing.tracer_provider = None
    found.provider.shutdown()


class Ends(Hook):
    """Writes down how every session operation ended: (name, error class or None)."""

    def __init__(self) -> None:
        self.ends: list[tuple[str, str | None]] = []

    def on_end(self, phase: Any, token: Any) -> object:
        if isinstance(phase, Operation):
            self.ends.append((phase.name, None if phase.error is None
                              else type(phase.error).__name__))
        return None


def _corrupt(db: TestBackend, note_id: str = "bad") -> None:
    """A stored Note whose ``tags`` is a number: it does not decode."""
    send(db.table, "PutItem", {"TableName": db.table.name, "Item": {
        "pk": {"S": f"NOTE#{note_id}"}, "sk": {"S": "NOTE"}, "_type": {"S": "Note"},
        "note_id": {"S": note_id}, "tags": {"N": "5"}}})


TERMINALS = {
    "all": lambda s: s.query(Note, note_id="bad").all(),
    "iteration": lambda s: [n for n in s.query(Note, note_id="bad")],
    "first": lambda s: s.query(Note, note_id="bad").first(),
    "one": lambda s: s.query(Note, note_id="bad").one(),
    "scan": lambda s: s.scan(Note).all(),
    "scan-iteration": lambda s: list(s.scan(Note).page_size(1)),
}


@pytest.mark.parametrize("terminal", sorted(TERMINALS))
def test_a_read_that_raises_is_never_reported_as_succeeded(
        db: TestBackend, terminal: str) -> None:
    db.session().save_many([Note(note_id="good")])
    _corrupt(db)
    hook = app.db.add_hook(Ends())
    with pytest.raises(ItemDecodeError):
        TERMINALS[terminal](db.session())
    name = "scan" if terminal.startswith("scan") else "query"
    assert hook.ends[-1] == (name, "ItemDecodeError"), hook.ends
    # the pages the caller did read are reported as they went: never the failing one
    assert all(end == (name, None) for end in hook.ends[:-1]), hook.ends


def test_a_failed_decode_is_a_failed_span(db: TestBackend, spans: Spans) -> None:
    _corrupt(db)
    with pytest.raises(ItemDecodeError):
        db.session().query(Note, note_id="bad").all()
    (op,) = spans.named("dynaorm.query")
    assert op.attributes is not None and op.attributes["dynaorm.outcome"] == "failed"
    assert not app.db.tracing._open


def test_a_read_stopped_early_is_reported_as_succeeded(db: TestBackend) -> None:
    db.session().save_many([Note(note_id=f"n{i}") for i in range(3)])
    hook = app.db.add_hook(Ends())
    assert db.session().scan(Note).first() is not None
    for note in db.session().scan(Note).page_size(1):
        assert note.note_id
        break
    assert hook.ends and all(error is None for _, error in hook.ends), hook.ends


class Setting(Hook):
    """Sets ``attempt.<name>`` to ``value`` at the start (or the end) of every attempt."""

    def __init__(self, name: str, value: object, at: str = "start") -> None:
        self.name, self.value, self.at = name, value, at

    def _set(self, phase: Any) -> None:
        if not isinstance(phase, Operation):
            setattr(phase, self.name, self.value)
            if self.name == "error":
                phase.response = None

    def on_start(self, phase: Any) -> object:
        if self.at == "start":
            self._set(phase)
        return None

    def on_end(self, phase: Any, token: Any) -> object:
        if self.at == "end":
            self._set(phase)
        return None


BAD_VALUES = [
    ("error", ValueError("boom"), "RequestError"),
    ("error", "throttled", "RequestError"),
    ("response", "junk", "str, not an object"),
    ("response", ["Item"], "list, not an object"),
    ("response", {"Item": "x"}, "str as Item"),
    ("response", {"Items": {"a": 1}}, "dict as Items"),
    ("response", {"Items": [1, 2]}, "entry of Items"),
    ("response", {"Count": "many"}, "str as Count"),
]


@pytest.mark.parametrize("at", ["start", "end"])
@pytest.mark.parametrize(("name", "value", "said"), BAD_VALUES)
def test_a_hook_s_value_of_the_wrong_kind_is_a_dynaorm_error_saying_so(
        db: TestBackend, name: str, value: object, said: str, at: str) -> None:
    db.session().save_many([Note(note_id="n1")])
    hook = app.db.add_hook(Setting(name, value, at))
    ends = app.db.add_hook(Ends())
    s = db.session()
    for read in (lambda: s.get(Note, note_id="n1"), lambda: s.query(Note, note_id="n1").all(),
                 lambda: s.scan(Note).all()):
        with pytest.raises(DynaormError, match=f"attempt.{name}.*{said}") as err:
            read()
        assert not isinstance(err.value, (AttributeError, TypeError))
        assert ends.ends[-1][1] == "DynaormError"
    app.db.remove_hook(hook)
    app.db.remove_hook(ends)
    assert s.get(Note, note_id="n1") is not None  # nothing left behind


def test_a_hook_s_request_error_fails_the_attempt_as_any_failure(db: TestBackend) -> None:
    db.session().save_many([Note(note_id="n1")])
    hook = app.db.add_hook(Setting("error", RequestError("GetItem", "ValidationException",
                                                         "no")))
    with pytest.raises(RequestError, match="ValidationException"):
        db.session().get(Note, note_id="n1")
    app.db.remove_hook(hook)
