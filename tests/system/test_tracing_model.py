"""Tracing against a model (contract 19, Tracing): random sequences of commits, deletes,
gets, ``get_many`` calls and scans abandoned part-way, each under a caller's span, with
throttles, server errors and lost answers injected now and then. After every step the
spans agree with what a plain counting hook saw: one operation span per operation, under
the caller's span; one attempt span per attempt, under its operation's span (the parts
of a ``get_many`` sent concurrently included); each operation's ``dynaorm.attempts`` its
children; an outcome that says what the caller was told (``ok`` when nothing was raised,
``unknown`` exactly for ``OutcomeUnknownError``); every span ended, none left open in
the hook, and the caller's span current again. Both kinds of session (the ``-async``
variant), both wires (``DYNAORM_WIRE``), moto and DynamoDB Local; the end-to-end tests
are ``integration/test_tracing.py``."""

from __future__ import annotations

import contextlib
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, rule
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from dynaorm import Attempt, DynaormError, Hook, Operation, OutcomeUnknownError
from dynaorm.testing import TestBackend, inject_faults
from tests.support.examples import examples
from tests.support.fault_kinds import arm
from tests.support.models import Note, app

IDS = st.sampled_from(["1", "2", "3", "4", "5"])
FAULTS = st.sampled_from(["none", "none", "throttle", "500", "lose"])
WRITES = ("PutItem", "UpdateItem", "DeleteItem", "TransactWriteItems")


class Counting(Hook):
    """What the spans must agree with: the phases every hook sees."""

    wants_origins = False

    def __init__(self) -> None:
        self.operations = 0
        self.attempts = 0

    def on_end(self, phase: Any, token: Any) -> object:
        if isinstance(phase, Operation):
            self.operations += 1
        elif isinstance(phase, Attempt):
            self.attempts += 1
        return None


class Traced(RuleBasedStateMachine):
    db: TestBackend

    def __init__(self) -> None:
        super().__init__()
        self.exporter = InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.tracer = provider.get_tracer("model")
        app.db.tracing.tracer_provider = provider
        self.counting = app.db.add_hook(Counting())
        self.stored: set[str] = set()

    def teardown(self) -> None:
        app.db.remove_hook(self.counting)
        app.db.tracing.tracer_provider = None
        for note_id in self.stored:  # the next example starts from an empty table
            s = self.db.session()
            s.delete(Note(note_id=note_id))
            with contextlib.suppress(DynaormError):  # deleted by a step already
                s.commit()

    # -- one step under the caller's span, then the checks -------------------------------
    def _step(self, fault: str, operations: tuple[str, ...], act: Any) -> None:
        self.exporter.clear()
        before = (self.counting.operations, self.counting.attempts)
        raised: BaseException | None = None
        with self.tracer.start_as_current_span("step") as step, \
                inject_faults(app) as faults:
            arm(faults, operations, fault)
            try:
                act()
            except DynaormError as exc:
                raised = exc
            assert trace.get_current_span() is step
        self._check(step, raised, self.counting.operations - before[0],
                    self.counting.attempts - before[1])

    def _check(self, step: Any, raised: BaseException | None, operations: int,
               attempts: int) -> None:
        spans = [s for s in self.exporter.get_finished_spans() if s.name != "step"]
        ops = {s.context.span_id: s for s in spans
               if s.name.startswith("dynaorm.") and s.context is not None}
        tries = [s for s in spans if s.name.startswith("DynamoDB.")]
        assert (len(ops), len(tries)) == (operations, attempts)
        step_id = step.get_span_context().span_id
        assert all(o.parent is not None and o.parent.span_id == step_id for o in ops.values())
        children: dict[int, int] = {}
        for t in tries:
            assert t.parent is not None and t.parent.span_id in ops, t.name
            children[t.parent.span_id] = children.get(t.parent.span_id, 0) + 1
            attributes = t.attributes or {}
            assert ("error.type" in attributes) == (attributes["dynaorm.outcome"] != "ok")
        outcomes = []
        for span_id, op in ops.items():
            attributes = op.attributes or {}
            assert attributes["dynaorm.attempts"] == children.get(span_id, 0)
            outcomes.append(attributes["dynaorm.outcome"])
        if raised is None:
            assert set(outcomes) <= {"ok"}
        else:
            expected = "unknown" if isinstance(raised, OutcomeUnknownError) else "failed"
            assert outcomes[-1:] == [expected] or expected in outcomes
        assert not app.db.tracing._open  # every operation's span ended

    # -- the rules -----------------------------------------------------------------------
    @rule(note_id=IDS, body=st.sampled_from(["a", "b"]), fault=FAULTS)
    def save(self, note_id: str, body: str, fault: str) -> None:
        def act() -> None:
            self.stored.add(note_id)
            s = self.db.session()
            s.save(Note(note_id=note_id, body=body))
            s.commit()
        self._step(fault, WRITES, act)

    @rule(note_id=IDS, fault=FAULTS)
    def delete(self, note_id: str, fault: str) -> None:
        def act() -> None:
            s = self.db.session()
            s.delete(Note(note_id=note_id))
            s.commit()
        self._step(fault, WRITES, act)

    @rule(note_id=IDS, fault=FAULTS)
    def get(self, note_id: str, fault: str) -> None:
        self._step(fault, ("GetItem",),
                   lambda: self.db.session().get(Note, note_id=note_id))

    @rule(ids=st.lists(IDS, min_size=1, max_size=5), fault=FAULTS)
    def get_many(self, ids: list[str], fault: str) -> None:
        many = [{"note_id": f"{i}{n}"} for i in ids for n in range(60)]  # 2 to 3 requests
        self._step(fault, ("BatchGetItem",),
                   lambda: self.db.session().get_many(Note, many, concurrency=3))

    @rule(read=st.integers(min_value=0, max_value=3), fault=FAULTS)
    def scan_part(self, read: int, fault: str) -> None:
        def act() -> None:
            rows = iter(self.db.session().scan(Note).page_size(1))
            for _ in range(read):
                if next(rows, None) is None:
                    break
            close = getattr(rows, "close", None)
            if close is not None:
                close()  # abandoned part-way
        self._step(fault, ("Scan",), act)



def test_spans_match_the_phases_every_hook_sees(db: TestBackend) -> None:
    app.max_wait = 0  # faults are retried without waiting (rebinds the table)
    machine = type("Machine", (Traced,), {"db": db})
    machine.TestCase.settings = settings(  # type: ignore[attr-defined]
        max_examples=examples(6), stateful_step_count=12, deadline=None,
        suppress_health_check=list(HealthCheck))
    machine.TestCase().runTest()  # type: ignore[attr-defined]
