"""Red team of fixlg (``Table.__reduce__``; the LangGraph Store's refusal of dict keys that
are no strings; the Saver's tasks of more than 100 writes, chunked and hidden until whole).

1. A table pickles, copies and deep-copies by reference: what a worker process gets back,
   what ``copy.copy`` gives, a reloaded module, a table held by two attributes.
2. ``Store.put`` of values JSON keeps and changes: accepted means read back equal.
3. ``Saver.put_writes`` past a transaction, every one of its transactions failing or its
   answer lost (another writer in the window): the reader never shows part of a task, and
   ``put_writes`` never reports success for writes that are not read back.

Each test states what must never happen; what does not hold is a strict xfail naming the
defect. moto only: none of it depends on the engine (the saver's and store's own rows)."""

from __future__ import annotations

import copy
import importlib
import json
import pickle
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langgraph.checkpoint.base import empty_checkpoint
from langgraph.checkpoint.memory import InMemorySaver

from dynaorm import DynaormError, Table
from dynaorm.langgraph import Saver, Store
from dynaorm.testing import TestBackend, inject_faults, use_tables, worker_suffix
from tests.support.examples import examples

pytestmark = [pytest.mark.sync_only, pytest.mark.engines("moto")]

_QUICK = settings(deadline=None, suppress_health_check=list(HealthCheck), max_examples=examples(6))

agents = Table("redlg_agents", ttl="expires")


@pytest.fixture
def tb(backend: str | None) -> Iterator[TestBackend]:
    with use_tables(agents, endpoint_url=backend, name_suffix=worker_suffix()) as found:
        yield found


def _module(tmp_path: Path, name: str, source: str) -> Any:
    (tmp_path / f"{name}.py").write_text(source)
    if str(tmp_path) not in sys.path:
        sys.path.insert(0, str(tmp_path))
    return importlib.import_module(name)


def _in_fresh_process(tmp_path: Path, data: bytes, module: str) -> str:
    """In a new interpreter (as a spawned worker or an engine's): whether ``data``
    unpickles to ``module.table``."""
    code = (f"import pickle, sys; sys.path.insert(0, {str(tmp_path)!r}); "
            f"t = pickle.loads(sys.stdin.buffer.read()); import {module}; "
            f"print(t is {module}.table)")
    done = subprocess.run([sys.executable, "-c", code], input=data, capture_output=True,
                          check=False, cwd=Path(__file__).parents[2])
    return done.stdout.decode().strip() or done.stderr.decode().strip().splitlines()[-1]


def test_a_table_pickled_comes_back_as_itself_in_a_fresh_process(tmp_path: Path) -> None:
    """A module's table, pickled, is that module's table in another process."""
    app = _module(tmp_path, "redlg_plain_app", "from dynaorm import Table\n"
                  "table = Table('redlg_plain')\nalias = table\n")
    data = pickle.dumps(app.table)
    assert pickle.loads(data) is app.table
    assert _in_fresh_process(tmp_path, data, "redlg_plain_app") == "True"


def test_a_table_also_bound_at_run_time_elsewhere_pickles_as_its_module_s(
        tmp_path: Path) -> None:
    """A table also held by an attribute another module bound at run time (a registry's
    ``current = table``, imported first) pickles as the module that made it: another
    process imports the registry and finds ``None`` there (or another table: a job would
    run on the wrong table). It pickled as the first attribute in ``sys.modules``."""
    registry = _module(tmp_path, "redlg_registry", "current = None\n")
    app = _module(tmp_path, "redlg_app", "from dynaorm import Table\n"
                  "import redlg_registry\ntable = Table('redlg_app')\n")
    registry.current = app.table  # (an application's "the table in use")
    data = pickle.dumps(app.table)
    assert pickle.loads(data) is app.table  # (in this process: the same object)
    assert _in_fresh_process(tmp_path, data, "redlg_app") == "True"


def test_a_reloaded_module_s_old_table_is_not_taken_for_its_new_one(tmp_path: Path) -> None:
    """After ``importlib.reload`` the module holds a new table: the old one, held by no
    module attribute any more, is refused (not silently the new one); the new one
    pickles as itself."""
    app = _module(tmp_path, "redlg_reloaded", "from dynaorm import Table\n"
                  "table = Table('redlg_reloaded')\n")
    old = app.table
    importlib.reload(app)
    assert app.table is not old
    with pytest.raises(pickle.PicklingError, match="held by no module attribute"):
        pickle.dumps(old)
    assert pickle.loads(pickle.dumps(app.table)) is app.table


def test_copy_copy_of_a_table_is_a_separate_table() -> None:
    """``copy.copy`` gives a table of its own, as before tables pickled by reference
    (it gave the very table, so renaming or connecting the copy changed the module's
    table; a table made in a function raised ``PicklingError``). ``deepcopy`` stays the
    same table (its client has locks: it raised ``TypeError`` before)."""
    local = Table("redlg_local")
    for table in agents, local:
        twin = copy.copy(table)
        assert twin is not table and twin.name == table.name
        twin.name = "redlg_renamed"
        assert table.name != "redlg_renamed"
    assert copy.deepcopy(agents) is agents


# == 2. Store values: accepted means read back equal =====================================
KEYS = st.one_of(st.text(max_size=3), st.integers(-3, 3), st.booleans(), st.none(),
                 st.floats(allow_nan=False, width=16))
VALUES = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-2**70, 2**70), st.text(max_size=4),
              st.floats(allow_nan=False, allow_infinity=False)),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(KEYS, inner, max_size=3),
    max_leaves=8)


@_QUICK
@given(value=st.dictionaries(st.text(max_size=3), VALUES, max_size=3))
def test_a_store_value_is_read_back_equal_or_refused_with_nothing_written(
        tb: TestBackend, value: dict[str, Any]) -> None:
    """Never: a put accepted whose get answers another value (JSON made an int key a
    string, two keys one), nor a refusal that wrote anything."""
    store = Store(agents, scope={"tenant_id": uuid.uuid4().hex})
    before = tb.scan_raw(agents)
    try:
        store.put(("ns",), "k", value)
    except TypeError:
        assert tb.scan_raw(agents) == before
        assert json.loads(json.dumps(value)) != value  # (refused only what JSON changes)
        return
    got = store.get(("ns",), "k")
    assert got is not None and got.value == value


class _Key(str):
    """A str subclass telling itself from a plain string of the same text."""

    def __hash__(self) -> int:
        return hash(("key", str.__str__(self)))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Key) and str.__str__(self) == str.__str__(other)


def test_two_keys_json_makes_one_are_refused(tb: TestBackend) -> None:
    """Two dict keys JSON writes alike (a str subclass beside the plain string) would be
    read back as one: refused like a key that is no string, nothing written. A str
    subclass alone (``StrEnum``) reads back equal and is kept."""
    store = Store(agents, scope={"tenant_id": uuid.uuid4().hex})
    before = tb.scan_raw(agents)
    with pytest.raises(TypeError, match="'a'"):
        store.put(("ns",), "k", {"x": [{_Key("a"): 1, "a": 2}]})
    assert tb.scan_raw(agents) == before
    store.put(("ns",), "k", {_Key("a"): 1})
    got = store.get(("ns",), "k")
    assert got is not None and got.value == {"a": 1}


# == 3. Saver.put_writes past a transaction ===============================================
def _conf(thread: str, cid: str | None = None) -> Any:
    conf = {"thread_id": thread, "checkpoint_ns": ""}
    return {"configurable": {**conf, **({"checkpoint_id": cid} if cid else {})}}


def _put(saver: Any, thread: str, cid: str) -> Any:
    cp = empty_checkpoint()
    cp["id"] = cid
    return saver.put(_conf(thread), cp, {"source": "loop", "step": 0}, {})


def _task(saver: Any, thread: str, task: str = "task") -> list[Any]:
    found = saver.get_tuple(_conf(thread))
    assert found is not None
    return [w[2] for w in found.pending_writes if w[0] == task]


def _sends(n: int, run: str = "") -> list[tuple[str, Any]]:
    return [("__pregel_tasks", f"{run}send {i}") for i in range(n)]


@settings(_QUICK, max_examples=examples(3))  # (CI's 30 minutes: a retried 500 backs off)
@given(kind=st.sampled_from(["server_error", "lose_answer"]), skip=st.integers(0, 4),
       times=st.sampled_from([1, 2, None]), size=st.sampled_from([101, 230]))
def test_put_writes_shows_all_of_a_task_or_none_and_tells_the_truth(
        tb: TestBackend, kind: str, skip: int, times: int | None, size: int) -> None:
    """Whatever transaction of a chunked ``put_writes`` fails (or applies and loses its
    answer), times over: the reader shows all of the task's writes or none; a success is
    all of them, once; run again, all of them, once."""
    saver = Saver(agents, scope={"tenant_id": uuid.uuid4().hex})
    at = _put(saver, "th", "1")
    writes = _sends(size)
    with inject_faults(agents) as faults:
        getattr(faults, kind)("TransactWriteItems", skip=skip, times=times)
        try:
            saver.put_writes(at, writes, "task")
            told = True
        except DynaormError:
            told = False
    shown = _task(saver, "th")
    assert shown in ([], [v for _, v in writes])
    if told:
        assert shown == [v for _, v in writes]
    saver.put_writes(at, writes, "task")
    assert _task(saver, "th") == [v for _, v in writes]


def test_a_concurrent_writer_of_the_same_task_in_a_lost_answer_s_window(
        tb: TestBackend) -> None:
    """The same task's writes written again by another process while a chunk's answer is
    lost: both succeed, the task is read once, whole."""
    scope = {"tenant_id": uuid.uuid4().hex}
    saver, other = Saver(agents, scope=scope), Saver(agents, scope=scope)
    at = _put(saver, "th", "1")
    writes = _sends(230)
    with inject_faults(agents) as faults:
        faults.lose_answer("TransactWriteItems", skip=1,
                           after=lambda: other.put_writes(at, writes, "task"))
        saver.put_writes(at, writes, "task")
    assert _task(saver, "th") == [v for _, v in writes]


@pytest.mark.parametrize("again", [120, 100])
def test_a_task_run_again_with_fewer_writes_after_a_stopped_put_writes(
        tb: TestBackend, again: int) -> None:
    """Issue 90: a task's put_writes stopped after its first transaction (150 writes: 100
    rows in, each counting 150), then the task run again with fewer writes (120, or 100:
    the rows in): the reader shows the second call's writes, as InMemorySaver does (the
    retry deletes the stopped call's rows of another count, never shown, and writes its
    own). Before, the task stayed hidden for ever (the reader wanted 150)."""
    saver, model = Saver(agents, scope={"tenant_id": uuid.uuid4().hex}), InMemorySaver()
    at = _put(saver, "th", "1")
    with inject_faults(agents) as faults:
        faults.server_error("TransactWriteItems", skip=1, times=None)
        with pytest.raises(DynaormError):
            saver.put_writes(at, _sends(150), "task")
    saver.put_writes(at, _sends(again, "second "), "task")  # (success)
    model.put_writes(_put(model, "th", "1"), _sends(again, "second "), "task")
    assert len(_task(saver, "th")) == len(_task(model, "th")) == again
