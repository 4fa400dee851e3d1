"""Sealed agent state (``Saver(sealed=True)``, ``Store(sealed=True)``; issue 83, contract
24): every checkpoint, its metadata, every pending write and every memory stored sealed
with the table's keyring (``Encrypted``), read back whole, and a row the saver did not
seal (written in the clear, or under another key) refused with ``DecryptionError``,
where LangGraph's ``EncryptedSerializer`` reads an unencrypted row without a word
(langgraph#8938). Sealing is the client's: on moto only."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterable, Iterator
from typing import Any

import pytest
from langgraph.checkpoint.base import empty_checkpoint
from langgraph.checkpoint.conformance import checkpointer_test, validate
from langgraph.store.base import PutOp

from dynaorm import DecryptionError, DynaormError, KeyringError, StaticKeyring, Table
from dynaorm.langgraph import Saver, Store
from dynaorm.testing import TestBackend, use_tables, worker_suffix

pytestmark = [pytest.mark.engines("moto")]
RING = StaticKeyring(os.urandom(32))
vault = Table("langgraph_sealed", ttl="expires_at", keyring=RING)
# (a writer without the keyring, and one with another: their rows are copied into the
# vault's table as they stored them, as another writer of that table would store them)
clear = Table("langgraph_clear", ttl="expires_at")
other = Table("langgraph_other_key", ttl="expires_at", keyring=StaticKeyring(os.urandom(32)))
SECRETS = ("the launch code", "a private note", "the user's address")


@pytest.fixture
def tb(backend: str | None) -> Iterator[TestBackend]:
    with use_tables(vault, clear, other, endpoint_url=backend,
                    name_suffix=worker_suffix()) as found:
        yield found


def _smuggle(tb: TestBackend, source: Table) -> None:
    """Every item of ``source`` put into the vault's table as it is stored."""
    for item in tb.scan_raw(source):
        vault.client.put_item(TableName=vault.name, Item=item)


def _put(saver: Saver, thread: str, cid: str, value: Any, parent: str | None = None,
         run: str | None = None) -> Any:
    cp = empty_checkpoint()
    cp["id"] = cid
    cp["channel_values"], cp["channel_versions"] = {"messages": value}, {"messages": 1}
    conf: dict[str, Any] = {"thread_id": thread, "checkpoint_ns": ""}
    if parent:
        conf["checkpoint_id"] = parent
    return saver.put({"configurable": conf}, cp, {"source": "loop", "step": 0,
                                                  "note": SECRETS[1], "run_id": run},
                     {"messages": 1})


def _keyed(rows: Iterable[dict[str, Any]]) -> dict[tuple[str, str], dict[str, Any]]:
    """Stored rows by their key (a scan's order is the engine's, not the test's)."""
    return {(r["pk"]["S"], r["sk"]["S"]): r for r in rows}


def _leaks(tb: TestBackend) -> list[str]:
    raw = repr(tb.scan_raw())
    return [s for s in SECRETS if s in raw]


def test_a_sealed_saver_stores_no_value_in_the_clear_and_reads_them_back(
        tb: TestBackend) -> None:
    """Values, metadata and writes: none in the clear in the table; get_tuple, list,
    copy_thread and the delta history (sync and async) read them as written."""
    saver = Saver(vault, sealed=True)
    first = _put(saver, "th", "0001", [SECRETS[0]])
    saver.put_writes(first, [("messages", SECRETS[2])], "task")
    assert _leaks(tb) == []
    found = saver.get_tuple(first)
    assert found is not None and found.checkpoint["channel_values"] == {
        "messages": [SECRETS[0]]}
    assert found.metadata["note"] == SECRETS[1]
    assert found.pending_writes == [("task", "messages", SECRETS[2])]
    _put(saver, "th", "0002", None, parent="0001")
    history = asyncio.run(saver.aget_delta_channel_history(
        config={"configurable": {"thread_id": "th", "checkpoint_ns": ""}},
        channels=["messages"]))
    assert history["messages"] == {"writes": [("task", "messages", SECRETS[2])],
                                   "seed": [SECRETS[0]]}
    saver.copy_thread("th", "copy")  # (sealed anew, bound to the copy's rows)
    assert [t.checkpoint["id"] for t in saver.list({"configurable": {
        "thread_id": "copy"}})] == ["0002", "0001"]
    assert _leaks(tb) == []


@pytest.mark.parametrize("writer", ["clear", "another key"])
def test_a_row_the_saver_did_not_seal_is_refused(tb: TestBackend, writer: str) -> None:
    """A checkpoint written into the thread in the clear (a forged row, or one written
    before sealing was turned on), or sealed under another keyring: its read raises
    DecryptionError, never returns its values."""
    saver = Saver(vault, sealed=True)
    _put(saver, "th", "0001", ["mine"])
    source = clear if writer == "clear" else other
    _put(Saver(source, sealed=source is other), "th", "0002", ["forged"], parent="0001")
    _smuggle(tb, source)
    with pytest.raises(DecryptionError):
        saver.get_tuple({"configurable": {"thread_id": "th"}})
    with pytest.raises(DecryptionError):
        list(saver.list({"configurable": {"thread_id": "th"}}))
    found = saver.get_tuple({"configurable": {"thread_id": "th", "checkpoint_id": "0001"}})
    assert found is not None and found.checkpoint["channel_values"] == {"messages": ["mine"]}


def test_a_sealed_store_stores_no_value_in_the_clear_and_refuses_one_it_did_not_seal(
        tb: TestBackend) -> None:
    store = Store(vault, sealed=True)
    store.put(("users", "u1"), "prefs", {"text": SECRETS[2]})
    assert _leaks(tb) == []
    item = store.get(("users", "u1"), "prefs")
    assert item is not None and item.value == {"text": SECRETS[2]}
    assert [i.value for i in store.search(("users",))] == [{"text": SECRETS[2]}]
    Store(clear).put(("users", "u1"), "forged", {"text": "forged"})
    _smuggle(tb, clear)
    with pytest.raises(DecryptionError):
        store.get(("users", "u1"), "forged")


def test_what_sealing_needs_is_refused_when_made() -> None:
    with pytest.raises(KeyringError, match="has none"):
        Saver(Table("langgraph_no_ring"), sealed=True)
    with pytest.raises(KeyringError, match="has none"):
        Store(Table("langgraph_no_ring"), sealed=True)
    mixed = Table("langgraph_mixed", keyring=RING)
    Saver(mixed, sealed=True)
    Store(mixed, sealed=True)
    with pytest.raises(DynaormError, match="the same sealed="):
        Saver(mixed)
    with pytest.raises(DynaormError, match="the same sealed="):
        Store(mixed)


def test_a_sealed_saver_passes_the_conformance_suite(tb: TestBackend) -> None:
    @checkpointer_test(name="dynaorm.langgraph.Saver(sealed=True)")
    async def saver() -> Any:
        yield Saver(vault, sealed=True)

    report = asyncio.run(validate(saver))
    assert all(r.passed for r in report.results.values()), {
        n: r.failures for n, r in report.results.items()}


def test_a_refused_row_is_never_shown_in_the_error(tb: TestBackend) -> None:
    """The DecryptionError of a row stored in the clear, or of a value laid out like a
    sealed one (a header of a key the ring lacks, around plaintext), names the field and
    never prints the row's bytes: its message, its key id and its repr hold none of the
    secrets (a header's key id is named: a dropped key's, say). Before, the message
    carried the decoder's own error, with a slice of the row (``b'gpack\\n...a private
    note'``), and a row in the clear had a slice of its bytes as its key id."""
    saver = Saver(vault, sealed=True)
    _put(saver, "th", "0001", ["mine"])
    _put(Saver(clear), "th", "0002", [SECRETS[0]], parent="0001")
    _smuggle(tb, clear)
    body = SECRETS[2].encode() * 3
    for item in tb.scan_raw(vault):
        if item["sk"]["S"] == "C#_#0001#":  # (a retired key's header around plaintext)
            item["meta"] = {"B": bytes([2, 7]) + b"retired\x00\x01x" + body}
            vault.client.put_item(TableName=vault.name, Item=item)
    for cid in ("0002", "0001"):
        with pytest.raises(DecryptionError) as refused:
            saver.get_tuple({"configurable": {"thread_id": "th", "checkpoint_id": cid}})
        shown = f"{refused.value} {refused.value!r} {refused.value.key_id}"
        assert refused.value.field == "meta"
        assert refused.value.key_id == ("?" if cid == "0002" else "retired")
        assert not [s for s in (*SECRETS, "gpack") if s in shown], shown


# -- keys per tenant (contract 24): a sealed saver's and store's values under the tenant's key
tenanted = Table("langgraph_tenants", ttl="expires_at", keyring=RING, key_scope="tenant_id")


def test_sealed_agent_state_is_sealed_under_its_tenants_key_and_forgotten_with_it(
        backend: str | None) -> None:
    """On a table with ``key_scope``, a sealed saver and store scoped to a tenant seal
    every value under that tenant's key (its ciphertexts name it); forgetting the
    tenant makes its checkpoints, writes and memories unreadable (``ForgottenError``)
    and refuses new ones, while another tenant's read and write as before."""
    from dynaorm import ForgottenError

    with use_tables(tenanted, endpoint_url=backend, name_suffix=worker_suffix()) as tb:
        savers = {t: Saver(tenanted, scope={"tenant_id": t}, sealed=True)
                  for t in ("acme", "beta")}
        stores = {t: Store(tenanted, scope={"tenant_id": t}, sealed=True)
                  for t in ("acme", "beta")}
        done = {}
        for t in ("acme", "beta"):
            done[t] = _put(savers[t], "th", "0001", [f"{t}: {SECRETS[0]}"])
            savers[t].put_writes(done[t], [("messages", SECRETS[2])], "task")
            stores[t].put(("memories",), "m1", {"text": SECRETS[1]})
        raw = tb.scan_raw()
        assert _leaks(tb) == []
        sealed = [v["B"] for row in raw for k, v in row.items()
                  if k in ("data", "meta", "value") and "B" in v]
        assert sealed and all(bytes(b)[2:9] == b"tenant/" for b in sealed)
        tenanted.forget(scope={"tenant_id": "acme"})
        with pytest.raises(ForgottenError):
            savers["acme"].get_tuple(done["acme"])
        with pytest.raises(ForgottenError):
            stores["acme"].get(("memories",), "m1")
        with pytest.raises(ForgottenError):
            _put(savers["acme"], "th2", "0001", ["more"])
        found = savers["beta"].get_tuple(done["beta"])
        assert found is not None and found.checkpoint["channel_values"] == {
            "messages": [f"beta: {SECRETS[0]}"]}
        assert found.pending_writes == [("task", "messages", SECRETS[2])]
        item = stores["beta"].get(("memories",), "m1")
        assert item is not None and item.value == {"text": SECRETS[1]}


def test_a_forgotten_tenants_memories_are_deleted(backend: str | None) -> None:
    """A forgotten tenant's store items are deleted without their values (a delete needs
    none): ``Store.delete`` and a batch of deletes leave none of them; another tenant's
    stay readable. (Tenants of their own: the test above forgot ``acme``.)"""
    from dynaorm import ForgottenError

    with use_tables(tenanted, endpoint_url=backend, name_suffix=worker_suffix()) as tb:
        stores = {t: Store(tenanted, scope={"tenant_id": t}, sealed=True)
                  for t in ("gamma", "delta")}
        for t in ("gamma", "delta"):
            for key in ("m1", "m2"):
                stores[t].put(("memories",), key, {"text": SECRETS[1]})
        tenanted.forget(scope={"tenant_id": "gamma"})
        with pytest.raises(ForgottenError):
            stores["gamma"].get(("memories",), "m1")
        stores["gamma"].delete(("memories",), "m1")
        stores["gamma"].batch([PutOp(("memories",), "m2", None)])
        assert not [r for r in tb.scan_raw() if "gamma" in str(r)]
        item = stores["delta"].get(("memories",), "m2")
        assert item is not None and item.value == {"text": SECRETS[1]}


def test_a_forgotten_tenants_threads_are_deleted(backend: str | None) -> None:
    """A forgotten tenant's threads go without their values (a delete needs none):
    ``delete_thread``, ``prune`` and ``delete_for_runs`` of its sealed saver remove its
    checkpoints and writes; another tenant's stay readable. (Tenants of their own: the
    tests above forgot theirs.)"""
    with use_tables(tenanted, endpoint_url=backend, name_suffix=worker_suffix()) as tb:
        savers = {t: Saver(tenanted, scope={"tenant_id": t}, sealed=True)
                  for t in ("eps", "zeta")}
        for t in ("eps", "zeta"):
            for thread in ("t1", "t2", "t3"):
                first = _put(savers[t], thread, "0001", [f"{t}: {SECRETS[0]}"])
                savers[t].put_writes(first, [("messages", SECRETS[2])], "task")
                _put(savers[t], thread, "0002", [SECRETS[0]], parent="0001")
        tenanted.forget(scope={"tenant_id": "eps"})
        gone = savers["eps"]
        gone.delete_thread("t1")
        gone.prune(["t2"], strategy="delete")
        gone.delete_for_runs(["no-such-run"])  # (reads the tenant's rows: no value needed)
        gone.delete_thread("t3")
        assert not [r for r in tb.scan_raw() if "eps" in str(r)]
        found = savers["zeta"].get_tuple({"configurable": {"thread_id": "t2",
                                                           "checkpoint_ns": ""}})
        assert found is not None and found.checkpoint["id"] == "0002"


#: a tenanted table keeping large values in S3 (``offload=``)
kept = Table("langgraph_tenants_s3", ttl="expires_at", keyring=RING, key_scope="tenant_id",
             offload="s3://placeholder/lg/", offload_threshold=200)


@pytest.mark.parametrize("how", ["keep_latest", "delete", "delete_thread", "delete_for_runs"])
def test_a_forgotten_tenants_thread_and_memories_kept_in_s3_are_deleted(
        backend: str | None, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch,
        how: str) -> None:
    """On a table with ``offload=``, a forgotten tenant's checkpoints and writes whose
    values are kept in S3 go with their objects (``prune`` keeping the latest keeps its
    rows and objects only), and its store items too (a batch of deletes, ``delete``
    again); another tenant's rows and objects stay."""
    from dynaorm import ForgottenError
    from tests.support.offload import bucket, referenced

    big, acme = "x" * 600, f"acme-{how}"  # (a tenant of its own: a forget is held)
    with bucket(backend, request, monkeypatch, kept) as b, use_tables(
            kept, endpoint_url=backend, name_suffix=worker_suffix()) as tb:
        savers = {t: Saver(kept, scope={"tenant_id": t}, sealed=True) for t in (acme, "beta")}
        stores = {t: Store(kept, scope={"tenant_id": t}, sealed=True) for t in (acme, "beta")}
        for t in (acme, "beta"):
            first = _put(savers[t], "t1", "0001", [big], run="r1")
            savers[t].put_writes(first, [("messages", big)], "task")
            latest = _put(savers[t], "t1", "0002", [big + "2"], parent="0001", run="r2")
            savers[t].put_writes(latest, [("messages", big)], "task")
            for key in ("m1", "m2"):
                stores[t].put(("memories",), key, {"text": big})
        beta = _keyed(r for r in tb.scan_raw() if "beta" in str(r))
        kept.forget(scope={"tenant_id": acme})
        gone = savers[acme]
        if how == "delete_thread":
            gone.delete_thread("t1")
        elif how == "delete_for_runs":
            gone.delete_for_runs(["r1", "r2"])
        else:
            gone.prune(["t1"], strategy=how)
        with pytest.raises(ForgottenError):
            stores[acme].batch([PutOp(("memories",), "m1", None),
                                  PutOp(("memories",), "m3", {"text": "new"})])
        stores[acme].batch([PutOp(("memories",), k, None) for k in ("m1", "m2")])
        stores[acme].delete(("memories",), "m2")
        left = [r for r in tb.scan_raw() if acme in str(r)]
        assert b.uris() == referenced(list(beta.values())) | referenced(left)
        assert {r["_type"]["S"] for r in left} <= {"LangGraphLease", "LangGraphCheckpoint",
                                                     "LangGraphWrite"}
        if how == "keep_latest":
            assert {r["checkpoint_id"]["S"] for r in left if "checkpoint_id" in r} == {"0002"}
            assert referenced(left) != set()
        else:
            assert [r for r in left if r["_type"]["S"] != "LangGraphLease"] == []
        assert _keyed(r for r in tb.scan_raw() if "beta" in str(r)) == beta


def test_a_forgotten_tenants_history_is_not_walked_from_a_config_listed_before(
        backend: str | None) -> None:
    """A sealed tenant's thread listed (its configs carry the rows the list read), then
    the tenant forgotten: a ``DeltaChannel`` history of a listed checkpoint raises
    ``ForgottenError`` as a read of it does (the tenants guide: no encrypted value of a
    forgotten tenant is read through dynaorm in this process from the tombstone on)."""
    from langgraph.checkpoint.serde.types import _DeltaSnapshot

    from dynaorm import ForgottenError
    from tests.integration.test_langgraph_delta import _chain

    with use_tables(tenanted, endpoint_url=backend, name_suffix=worker_suffix()):
        saver = Saver(tenanted, scope={"tenant_id": "walked"}, sealed=True)
        _chain(saver, "th", "", [(_DeltaSnapshot([SECRETS[0]]), None, ["ch"]),
                                 (None, None, ["ch"]), (None, None, ["ch"])], {})
        listed = list(saver.list({"configurable": {"thread_id": "th"}}))
        tenanted.forget(scope={"tenant_id": "walked"})
        with pytest.raises(ForgottenError):
            saver.get_tuple(listed[0].config)
        with pytest.raises(ForgottenError):
            saver.get_delta_channel_history(config=listed[0].config, channels=["ch"])


def test_a_forgotten_tenants_thread_held_by_a_run_is_deleted_and_let_go(
        backend: str | None) -> None:
    """Red team of issue 90: a single-writer sealed saver's run holds a thread (its lease
    live) when its tenant is forgotten. The run's next write stores nothing; the
    thread's rows and its lease are deleted by ``delete_thread`` (a delete needs no value,
    and takes the lease from the run); the run's later write is refused, never stored."""
    with use_tables(tenanted, endpoint_url=backend, name_suffix=worker_suffix()) as tb:
        saver = Saver(tenanted, scope={"tenant_id": "theta"}, sealed=True,
                      single_writer=True)
        first = _put(saver, "t1", "0001", [SECRETS[0]], run="A")
        mine = {"configurable": {**first["configurable"], "run_id": "A"}}
        saver.put_writes(mine, [("messages", SECRETS[2])], "task")
        assert [r["sk"]["S"] for r in tb.scan_raw(tenanted) if r["sk"]["S"] == "L#"]
        tenanted.forget(scope={"tenant_id": "theta"})
        with pytest.raises(DynaormError):
            saver.put_writes(mine, [("messages", "after the forget")], "task2")
        saver.delete_thread("t1")
        assert [r for r in tb.scan_raw(tenanted) if "theta" in str(r)] == []
        with pytest.raises(DynaormError):
            saver.put_writes(mine, [("messages", "later")], "task3")
        assert [r for r in tb.scan_raw(tenanted) if "theta" in str(r)] == []
