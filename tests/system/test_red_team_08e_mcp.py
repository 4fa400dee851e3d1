"""Red team 08e, the MCP server's async path (``server``: a get or find awaited by an
:class:`~dynaorm.AsyncSession` on the event loop (``AsyncSession.run``),
any other call in a worker thread) and ``run`` by it itself: what must never happen.

- concurrent tool calls on one event loop (saves, updates, deletes and gets of the same
  and of different items) with answers lost at the wire (``inject_faults``): a call is
  told something untrue (a save "ok" whose item is not what is stored, a save refused
  that is stored, two creates of one item both "ok"), or what a tool stored differs from
  what a ``Session`` save stores of the same JSON;
- a write cancelled mid-commit (by an AsyncSession, at any point of its attempts): the
  table holds anything but what it held before or what the whole commit writes, or the caller is
  told it succeeded or failed when it was cancelled; a retry with its idempotency key
  writes it twice;
- a call after the event loop that made the session closed, or on loops in threads at
  once sharing the table's client: a hang, a wrong answer, an error other than a clear
  refusal.

moto only: the server's concurrency does not depend on the engine."""

from __future__ import annotations

import asyncio
import base64
import json
import threading
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from mcp import Client
from pydantic import ConfigDict

import dynaorm.mcp
from dynaorm import AsyncSession, Attempt, Entity, Hook, Session, Table
from dynaorm.mcp.tools import run, tools_of
from dynaorm.testing import TestBackend, inject_faults, use_tables, worker_suffix
from tests.support.examples import examples
from tests.support.mcp_client import text

pytestmark = [pytest.mark.sync_only, pytest.mark.engines("moto")]

crates = Table("red08e-mcp")
#: examples are slow (a server, a client, threads each): found ones are printed unshrunk
NO_SHRINK = (Phase.explicit, Phase.reuse, Phase.generate)
WRITES = ("PutItem", "UpdateItem", "DeleteItem", "TransactWriteItems")


class Crate(Entity):
    model_config = ConfigDict(ser_json_bytes="base64", val_json_bytes="base64")

    class Meta:
        table = crates
        pk = "CRATE#{crate_id}"
        sk = "CRATE"

    crate_id: str
    n: int = 0
    words: set[str] = set()
    blob: bytes = b""


@pytest.fixture
def cdb(backend: str | None) -> Iterator[TestBackend]:
    with use_tables(crates, endpoint_url=backend, name_suffix=worker_suffix()) as tb:
        yield tb


def _raw(crate_id: str) -> dict[str, Any] | None:
    """The item stored under ``crate_id`` as DynamoDB holds it (but its revision)."""
    found = crates.db.send("GetItem", {"TableName": crates.name, "ConsistentRead": True,
                                       "Key": {"pk": {"S": f"CRATE#{crate_id}"},
                                               "sk": {"S": "CRATE"}}}).get("Item")
    return None if found is None else json.loads(json.dumps(
        {k: v for k, v in found.items() if k != "_rev"}, sort_keys=True, default=str))


def _as_session_saves(item: dict[str, Any]) -> dict[str, Any] | None:
    """What a ``Session`` save of the object the entity validates from ``item`` (JSON)
    stores, read back (saved under the same key, then the key is put back as it was)."""
    before = _raw(item["crate_id"])
    obj = Crate.model_validate_json(json.dumps(item))
    with Session(crates) as s:
        s.save(obj, overwrite=True)
    stored = _raw(item["crate_id"])
    if before is None:
        with Session(crates) as s:
            s.delete(Crate, crate_id=item["crate_id"])
    return stored


def _plain(item: dict[str, Any]) -> dict[str, Any]:
    """``item`` (JSON) with its set sorted and its bytes decoded: the MCP tools write bytes
    in standard base64 (``/``), the entity's own JSON in the URL-safe alphabet (``_``)."""
    blob = item["blob"].replace("-", "+").replace("_", "/")
    return {**item, "words": sorted(item["words"]), "blob": base64.b64decode(blob)}


def _told(result: Any) -> tuple[str, Any]:
    """("ok", structured content) or ("error", the message), never a traceback."""
    said = text(result)
    assert "Traceback" not in said, said
    return ("error", said) if result.is_error else ("ok", result.structured_content)


def _unknown(message: str) -> bool:
    """Whether an error says the outcome is not known (the write may have been applied)."""
    return message.startswith(("OutcomeUnknownError", "RequestError")) or "may have" in message


# == concurrent calls on one loop, answers lost at the wire ===================================
_ITEM = st.fixed_dictionaries({
    "n": st.integers(-(10**6), 10**6),
    "words": st.lists(st.sampled_from(["a", "b", "é", "\u200d"]), max_size=3, unique=True),
    "blob": st.sampled_from(["", "/w==", "AAEC"]),
})


@st.composite
def _plans(draw: Any) -> dict[str, Any]:
    racing = draw(st.lists(st.tuples(_ITEM, st.booleans()), min_size=1, max_size=4))
    alone = draw(st.lists(st.tuples(_ITEM, st.booleans()), min_size=0, max_size=3))
    updates = draw(st.lists(st.tuples(st.integers(1, 99), st.booleans()), max_size=3))
    delete = draw(st.booleans())
    lost = {op: draw(st.integers(0, 2)) for op in WRITES}
    return {"racing": racing, "alone": alone, "updates": updates, "delete": delete,
            "lost": lost, "gets": draw(st.integers(0, 4))}


@settings(max_examples=examples(12), deadline=None, phases=NO_SHRINK,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(plan=_plans())
def test_concurrent_tool_calls_with_lost_answers_are_told_the_truth(
        cdb: TestBackend, plan: dict[str, Any]) -> None:
    """On one event loop at once: creates racing for one item, creates of items of their
    own, updates racing on a seeded item, a delete of another seeded item, gets of the
    raced item; some write answers lost (applied, then failed). Never: two creates of one
    item "ok"; an "ok" create whose item is not stored exactly as a ``Session`` save
    stores its JSON; a create refused as existing while none was stored by another; an
    "ok" update whose returned item is not what it set; a get answering an item no
    create sent; a deleted item still stored after its delete said "ok"."""
    tag = uuid.uuid4().hex[:8]
    raced, seeded, gone = f"r-{tag}", f"u-{tag}", f"d-{tag}"
    with Session(crates) as s:
        s.save(Crate(crate_id=seeded))
        s.save(Crate(crate_id=gone))
    calls: list[tuple[str, dict[str, Any]]] = []
    for item, keyed in plan["racing"]:
        calls.append(("save_crate", {"item": {**item, "crate_id": raced},
                                     **({"idempotency_key": uuid.uuid4().hex} if keyed
                                        else {})}))
    for i, (item, keyed) in enumerate(plan["alone"]):
        calls.append(("save_crate", {"item": {**item, "crate_id": f"a{i}-{tag}"},
                                     **({"idempotency_key": uuid.uuid4().hex} if keyed
                                        else {})}))
    for n, keyed in plan["updates"]:
        calls.append(("update_crate", {"crate_id": seeded, "set": {"n": n},
                                       **({"idempotency_key": uuid.uuid4().hex} if keyed
                                          else {})}))
    if plan["delete"]:
        calls.append(("delete_crate", {"crate_id": gone}))
    calls += [("get_crate", {"crate_id": raced})] * plan["gets"]
    srv = dynaorm.mcp.server(crates, writes=["Crate"])

    async def go() -> list[Any]:
        async with Client(srv) as client:
            return list(await asyncio.gather(*(client.call_tool(name, args)
                                               for name, args in calls)))

    with inject_faults(crates) as faults:
        for op, times in plan["lost"].items():
            if times:
                faults.lose_answer(op, times=times)
        results = [_told(r) for r in asyncio.run(go())]
    told = list(zip(calls, results, strict=True))

    # the raced create: at most one "ok"; stored exactly as a Session save stores it
    creates = [(args["item"], said) for (name, args), said in told
               if name == "save_crate" and args["item"]["crate_id"] == raced]
    oks = [item for item, (how, _) in creates if how == "ok"]
    assert len(oks) <= 1, f"two creates of one item told ok: {oks}"
    stored = _raw(raced)
    possible = [item for item, (how, said) in creates
                if how == "ok" or _unknown(said)]
    if oks:
        assert stored == _as_session_saves(oks[0])
    elif stored is not None:
        assert any(stored == _as_session_saves(i) for i in possible), (
            "stored by a create told it failed", creates)
    for _, (how, said) in creates:
        if how == "error" and said.startswith("ItemExistsError"):
            assert stored is not None, said
    # gets of the raced item: nothing or what one create sent
    sent = [json.loads(Crate.model_validate_json(json.dumps(i)).model_dump_json())
            for i, _ in creates]
    for (name, _), (how, said) in told:
        if name == "get_crate":
            assert how == "ok", said
            got = said["item"]
            assert got is None or _plain(got) in [_plain(s) for s in sent], got
    # creates of items of their own
    for (name, args), (how, said) in told:
        item = args.get("item", {})
        if name != "save_crate" or item.get("crate_id") == raced:
            continue
        mine = _raw(item["crate_id"])
        if how == "ok":
            assert mine == _as_session_saves(item)
        else:
            assert _unknown(said), f"a create of an item of its own refused: {said}"
            assert mine is None or mine == _as_session_saves(item)
    # updates racing on one item: each "ok" returns what it set; the stored n is one set
    ns = [args["set"]["n"] for (name, args), (how, said) in told
          if name == "update_crate" and (how == "ok" or _unknown(said))]
    for (name, args), (how, said) in told:
        if name == "update_crate":
            assert how == "ok" or _unknown(said), said
            if how == "ok" and "idempotency_key" not in args:  # (its own ALL_NEW)
                assert said["item"]["n"] == args["set"]["n"]
            elif how == "ok":  # (a transaction's item is read after it: maybe a later
                assert said["item"]["n"] in ns  # racing update's, never one not applied)
    last = Session(crates).get(Crate, crate_id=seeded, consistent=True)
    assert last is not None and (last.n in ns if ns else last.n == 0)
    # the delete
    for (name, _), (how, said) in told:
        if name == "delete_crate":
            assert how == "ok" or _unknown(said), said
            if how == "ok":
                assert _raw(gone) is None


class _WriteAfterReadBack(Hook):
    """After the first consistent ``GetItem`` of ``crate_id`` (the read-back that proves
    a lost answer applied), another writer sets ``n`` to ``later`` (once)."""

    def __init__(self, crate_id: str, later: int) -> None:
        self.crate_id, self.later, self.done = crate_id, later, False

    def on_end(self, phase: Any, token: Any) -> object:
        if (not self.done and isinstance(phase, Attempt) and phase.operation == "GetItem"
                and self.crate_id in json.dumps(phase.request)):
            self.done = True
            with Session(crates) as s:
                s.update(Crate, crate_id=self.crate_id).set(n=self.later)
        return None


@pytest.mark.parametrize("through", ["session", "mcp"])
def test_an_update_whose_answer_was_lost_returns_its_own_item(cdb: TestBackend,
                                                              through: str) -> None:
    """Fixed: an update alone (``UpdateItem``, ``ALL_NEW``) whose answer was lost, proved
    applied by the item read back holding its revision, had its ``result`` (and an MCP
    update's returned item) read again afterwards: another writer's later change was
    returned as this update's item (n=2 for an update that set n=1). Now its result is the
    item read back, the one that proved it."""
    tag = uuid.uuid4().hex[:8]
    with Session(crates) as s:
        s.save(Crate(crate_id=tag))
    hook = _WriteAfterReadBack(tag, 2)
    crates.db.add_hook(hook)
    try:
        with inject_faults(crates) as faults:
            faults.lose_answer("UpdateItem")
            if through == "session":
                with Session(crates) as s:
                    staged = s.update(Crate, crate_id=tag).set(n=1).returning()
                got = staged.result.n
            else:
                srv = dynaorm.mcp.server(crates, writes=["Crate"], threads=False)

                async def go() -> Any:
                    async with Client(srv) as client:
                        return await client.call_tool("update_crate", {
                            "crate_id": tag, "set": {"n": 1}})
                how, said = _told(asyncio.run(go()))
                assert how == "ok", said
                got = said["item"]["n"]
    finally:
        crates.db.remove_hook(hook)
    assert hook.done
    assert got == 1
    assert Session(crates).get(Crate, crate_id=tag, consistent=True).n == 2  # type: ignore[union-attr]


# == cancelled mid-commit =====================================================================
class _CancelAt(Hook):
    """Cancels the task running the ``at``-th hook event (each attempt's start and end
    counted, in order) of a write."""

    def __init__(self, at: int) -> None:
        self.at, self.seen, self.fired = at, 0, False

    def _tick(self, phase: Any) -> None:
        if isinstance(phase, Attempt) and phase.operation in WRITES:
            if self.seen == self.at and not self.fired:
                self.fired = True
                task = asyncio.current_task()
                assert task is not None
                task.cancel()
            self.seen += 1

    def on_start(self, phase: Any) -> object:
        self._tick(phase)
        return None

    def on_end(self, phase: Any, token: Any) -> object:
        self._tick(phase)
        return None


@settings(max_examples=examples(20), deadline=None, phases=NO_SHRINK,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(kind=st.sampled_from(["save", "update", "delete"]), at=st.integers(0, 5),
       lost=st.integers(0, 1), item=_ITEM)
def test_a_write_cancelled_mid_commit_is_all_or_nothing(
        cdb: TestBackend, kind: str, at: int, lost: int, item: dict[str, Any]) -> None:
    """A write (by an AsyncSession) with an idempotency key, cancelled at its ``at``-th
    attempt event (an answer lost first, or not): it raises ``CancelledError`` (or, cancelled
    after its last await, answers the truth); the table holds what it held before or
    what the whole write makes; retried with its key, it is applied once."""
    tag = uuid.uuid4().hex[:8]
    crate_id = f"c-{tag}"
    if kind != "save":
        with Session(crates) as s:
            s.save(Crate(crate_id=crate_id, n=7))
    before = _raw(crate_id)
    tools = tools_of(crates, ["Crate"])
    key = uuid.uuid4().hex
    args: dict[str, Any] = {
        "save": {"item": {**item, "crate_id": crate_id}},
        "update": {"crate_id": crate_id, "set": {"n": item["n"]}},
        "delete": {"crate_id": crate_id}}[kind]
    args["idempotency_key"] = key
    tool = tools[f"{kind}_crate"]
    hook = _CancelAt(at)

    async def once() -> Any:
        return await run(tool, dict(args), AsyncSession(crates), {}, None, tools)

    crates.db.add_hook(hook)
    try:
        with inject_faults(crates) as faults:
            if lost:
                faults.lose_answer("TransactWriteItems", times=lost)
            try:
                outcome: Any = asyncio.run(once())
            except asyncio.CancelledError:
                outcome = "cancelled"
            except dynaorm.DynaormError as exc:
                outcome = exc
    finally:
        crates.db.remove_hook(hook)
    middle = _raw(crate_id)
    retried = asyncio.run(once())  # (no fault, no cancel: its key makes it once)
    after = _raw(crate_id)
    if kind == "save":
        whole = _as_session_saves({**item, "crate_id": crate_id})
    elif kind == "update":
        whole = None if before is None else {**before, "n": {"N": str(item["n"])}}
    else:
        whole = None
    assert middle in (before, whole), (outcome, before, middle, whole)
    if hook.fired and outcome != "cancelled":
        assert isinstance(outcome, dict), outcome  # (cancelled past its last await: true)
    if isinstance(outcome, dict):
        assert middle == whole
    assert after == whole, (outcome, retried)
    assert retried.get("replayed") is (middle == whole and middle != before) or (
        kind == "update" and before == whole)


# == loops closed, loops in threads ===========================================================
def test_a_session_used_again_after_its_loop_closed(cdb: TestBackend) -> None:
    """An ``AsyncSession`` that ran a tool on one event loop, used by ``run`` on another
    after the first closed: it answers as on the first (or refuses clearly; never a
    hang or a wrong answer)."""
    tools = tools_of(crates, ["Crate"])
    with Session(crates) as s:
        s.save(Crate(crate_id="kept", n=3))
    session = AsyncSession(crates)

    async def get() -> Any:
        return await run(tools["get_crate"], {"crate_id": "kept"}, session, {}, None,
                          tools)

    first = asyncio.run(get())
    try:
        second = asyncio.run(asyncio.wait_for(get(), 30))
    except dynaorm.DynaormError as exc:  # (a clear refusal)
        assert "loop" in str(exc), exc
    else:
        assert second == first and first["item"]["n"] == 3

    async def save() -> Any:
        return await run(tools["save_crate"], {"item": {"crate_id": "late", "n": 4}},
                          AsyncSession(crates), {}, None, tools)

    assert asyncio.run(save()) == {"replayed": False, "item": {
        "crate_id": "late", "n": 4, "words": [], "blob": ""}}
    assert _raw("late") == _as_session_saves({"crate_id": "late", "n": 4})


def test_tool_calls_on_loops_in_threads_at_once(cdb: TestBackend) -> None:
    """Four threads, each its own event loop and MCP client of one server (one table
    client shared by them all): gets (on each loop, by an AsyncSession) and saves (in
    worker threads) all answer the truth; nothing hangs."""
    with Session(crates) as s:
        for i in range(4):
            s.save(Crate(crate_id=f"t{i}", n=i))
    srv = dynaorm.mcp.server(crates, writes=["Crate"])
    errors: list[BaseException] = []
    answers: dict[int, list[Any]] = {}

    def work(i: int) -> None:
        async def go() -> list[Any]:
            async with Client(srv) as client:
                calls = [client.call_tool("get_crate", {"crate_id": f"t{j % 4}"})
                         for j in range(8)]
                calls += [client.call_tool("save_crate", {"item": {
                    "crate_id": f"s{i}-{j}", "n": j}}) for j in range(3)]
                return list(await asyncio.gather(*calls))
        try:
            answers[i] = [_told(r) for r in asyncio.run(asyncio.wait_for(go(), 60))]
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(90)
    assert not errors, errors
    for i, told in answers.items():
        for j, (how, said) in enumerate(told[:8]):
            assert how == "ok" and said["item"]["n"] == j % 4, said
        for j, (how, said) in enumerate(told[8:]):
            assert how == "ok", said
            assert _raw(f"s{i}-{j}") == _as_session_saves({"crate_id": f"s{i}-{j}", "n": j})
    assert len(answers) == 4
