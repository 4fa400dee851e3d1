"""Values a rule keeps outside the table (contract 24: ``Offloaded``), around a commit:
the phases ask an entity's rules (``spec.rules``), never a rule module.

- :func:`placed` (planning, pure): once every row of a commit is built, each *placing*
  rule (:meth:`~dynaorm.schema.rules.Rule.place`) is handed its entity's write records and
  returns them with references in place of the values it keeps outside; the objects'
  states then hold the references their rows will hold.
- :func:`published_p` (sending, a protocol): each rule's
  :meth:`~dynaorm.schema.rules.Rule.publish` before the request (the uploads), its
  :meth:`~dynaorm.schema.rules.Rule.release` once the outcome is settled (applied: what no
  row references any more goes; proved not applied: what was published goes; unknown,
  every attempt over: what a fresh read of its rows does not reference goes).

A plain commit's plan has no such entity (:attr:`~dynaorm.write.render.WritePlan.outside`
is empty), nor has a commit none of whose rows may hold a value kept outside (none it
deletes, no held value a reference or possibly above the threshold, in a row it writes or
one it replaces: :func:`~dynaorm.write.render.compile_commit` tells, as it builds the
rows, by ``_may_place``): nothing here runs.
"""

from collections.abc import Callable, Generator, Sequence
from typing import Any

from dynaorm._types import Item, PlainKey
from dynaorm.errors import DynaormError, OutcomeUnknownError, RequestError
from dynaorm.protocol.hooks import logger
from dynaorm.values.records import Delete, Fail, Op, Origin, Put, Role, Update
from dynaorm.write.costs import known_items
from dynaorm.write.records import Outcome, Prepared

#: what one rule did outside the table for a commit: its ``release`` and what it returned
Published = list[tuple[Callable[..., Any], Any]]


def known_at(spec: Any, entries: Sequence[Prepared]) -> Callable[[PlainKey], Item | None]:
    """The item stored at a key of ``spec``'s table as the plan of ``entries`` read it
    (``None``: not read)."""
    items = known_items(entries)
    name = spec.table.name
    return lambda key: items.get((name, tuple(sorted(key.items()))))


def placed(specs: Sequence[Any], ops: list[Op], entries: Sequence[Prepared],
           outcomes: list[Outcome], op_id: Callable[[Op], tuple[Any, ...]]
           ) -> tuple[list[Op], list[Outcome]]:
    """``ops`` with the values the rules of ``specs`` (:func:`placing`'s) keep outside the
    table placed (each placing rule handed its entity's records at once), before the
    limits are checked; and ``outcomes`` whose states hold what their rows will
    (``op_id``: an action's item's identity)."""
    was = list(ops)
    for spec in specs:
        mine = [at for at, op in enumerate(ops) if op.origin.entity is spec.cls]
        for place in spec.rules.placers:
            for at, op in zip(mine, place([ops[at] for at in mine], known_at(spec, entries)),
                              strict=True):
                ops[at] = op
    return ops, _with_placed(was, ops, outcomes, op_id)


def _with_placed(was: Sequence[Op], ops: Sequence[Op], outcomes: list[Outcome],
                 op_id: Callable[[Op], tuple[Any, ...]]) -> list[Outcome]:
    """``outcomes`` whose states hold what a placing rule put in their rows in place of
    a value (the reference the row will hold)."""
    changed = {}
    for old, new in zip(was, ops, strict=True):
        if new is not old and isinstance(new, Put | Update):
            values, before = (new.item, getattr(old, "item", {})) if isinstance(new, Put) else (
                new.set, getattr(old, "set", {}))
            attrs = {a: av for a, av in values.items() if before.get(a) is not av}
            if attrs:
                changed[(new.origin.entity, *op_id(new))] = attrs
    if not changed:
        return outcomes
    out = []
    for outcome in outcomes:
        state = outcome.state
        placed_attrs = None if state is None else changed.get(
            (type(outcome.obj), *op_id(Delete(state.key, None, Origin(
                type(outcome.obj), state.key, Role.ROW, Fail.GONE)))))
        out.append(outcome if placed_attrs is None or state is None else outcome._replace(
            state=state.revised(placed_attrs)))
    return out



def settled_p(plan: Any, prepared: Sequence[Prepared], send: Generator[Any, Any, Any]
              ) -> Generator[Any, Any, Any]:
    """``send`` (the protocol of the commit's request, not started) with what its
    entities' rules do outside the table around it: :func:`publish_p` before,
    :func:`release_p` once its outcome is settled (a replay, not a response: an earlier
    commit's writes stand, none of this one's; closed while sending: nothing)."""
    try:
        published = yield from publish_p(plan, prepared)
    except BaseException:
        send.close()
        raise
    try:
        response = yield from send
    except Exception as exc:  # (proved not applied; else unknown: judged on a fresh read)
        if isinstance(exc, DynaormError):
            yield from release_p(published, False if _definite(exc) else None)
        raise
    yield from release_p(published, isinstance(response, dict))
    return response


def _definite(exc: Exception) -> bool:
    """Whether ``exc``, raised by a commit's send, proves it applied nothing (a typed
    error, a request that was never applied), not an outcome left unknown."""
    return not isinstance(exc, OutcomeUnknownError) and not (
        isinstance(exc, RequestError) and exc.maybe_applied)


def publish_p(plan: Any, prepared: Sequence[Prepared] = ()
              ) -> Generator[Any, Any, Published]:
    """Every :meth:`~dynaorm.schema.rules.Rule.publish` of the entities of ``plan`` (each
    handed its entity's records, and what the plan read), in order; one that fails
    releases what the others did, and raises."""
    done = []
    try:
        for spec in plan.outside:
            mine = [op for op in plan.ops if op.origin.entity is spec.cls]
            known = known_at(spec, prepared)
            for publish in spec.rules.publishers:
                token = yield from publish(mine, known)
                done.append((publish.__self__.release, token))
    except Exception:
        yield from release_p(done, False)
        raise
    return done


def release_p(published: Published, applied: bool | None) -> Generator[Any, Any, None]:
    """Every release of ``published`` (``applied``: the commit applied, ``False``: it
    proved not to, ``None``: unknown); a failure is logged, never raised: the commit's
    outcome stands."""
    for release, token in published:
        try:
            yield from release(token, applied)
        except Exception:
            logger().exception("releasing what a rule published for a commit failed (dynaorm "
                               "check reports what is left)")
