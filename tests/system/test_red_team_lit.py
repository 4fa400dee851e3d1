"""Red team of the literal-claims fix (merge ``lit``): on a table without a type attribute
a write or get at a key another entity's literal key claims is refused before sending
(:func:`dynaorm.schema.unclaimed.refuse_claimed`). What must never happen:

1. a refusal of a key no other entity's read would take (a false refusal), or a key
   reads would take for another entity's let through: the refusal is exactly the read's
   precedence (``EntitySpec.outranked``), over three entities' random templates (sort
   key literals only, both literal, partial literals ``USER#adm{x}``, prefixes
   ``USER#{a}`` beside ``USER#{a}#X``, separators inside values);
2. anything refused on a table WITH a type attribute (the type name decides there);
3. a save allowed that does not read back, by get and by query, as itself (three
   entities, several literals);
4. a rename (a loaded object saved with another key) onto a claimed key stored, or the
   old row lost;
5. a cache that misses a literal entity defined after a Session was opened (or the
   template class redefined), or survives its redefinition without the literal;
   the refusal after a pickle round trip and in a forked child;
6. a GSI key of one entity where another's index template would put it: not refused
   (reads by index classify by the table key), each query returns its own entity only;
7. an entity's previous layout (``Meta.previous``, ``dynaorm migrate``) taking another
   entity's literal row for its own (``Layout.owns`` asks the literal claims: mv69c), or
   an entity's previous literal key read, queried, streamed or overwritten as another's
   template's (the claims know each entity's previous layout until it is migrated);
8. the surfaces (MCP tools, a backfill, ``AsyncSession.save_many``) and a table with a
   partition key only sending anything at a claimed key.

Moto only: none of it depends on the engine."""

from __future__ import annotations

import json
import os
import pickle
from collections.abc import Iterator
from itertools import count
from typing import Any

import pytest
from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st

import dynaorm
from dynaorm import GSI, DynaormError, Session, Table
from dynaorm.errors import KeyTemplateError
from dynaorm.schema.rules.previous import Previous
from dynaorm.schema.rules.receipts import own_row
from dynaorm.schema.streams import classify
from dynaorm.schema.templates import KeyTemplate
from dynaorm.testing import use_tables, worker_suffix
from dynaorm.values.keys import key_av
from tests.support.examples import examples

pytestmark = [pytest.mark.sync_only, pytest.mark.engines("moto")]

PKS = ["USER#{a}", "USER#admin", "USER#{a}#X", "USER#adm{a}", "USER#admin#X", "{a}",
       "USER#{a}#{b}", "USER#admin#{b}", "ORG#{a}"]
SKS = ["PROFILE", "{c}", "PROFILE#{c}", "PRO{c}", "{c}#PROFILE", "PROFILE#1"]
#: mostly the literals' own pieces (a refusal needs a template's value to render one)
_piece = st.sampled_from(["admin", "in", "PROFILE", "FILE", "1", "X"])
_value = st.one_of(_piece, _piece, _piece,
                   st.sampled_from(["admin#X", "USER#admin", "PROFILE#1", "USER#admin#X"]),
                   st.text(st.sampled_from("adminPROFILE1#X"), min_size=1, max_size=6))
_names = count()
_pair = st.tuples(st.sampled_from(PKS), st.sampled_from(SKS))


def _keyed(home: Table, name: str, pk: str, sk: str) -> type[Any]:
    """An entity of ``home`` keyed ``pk``/``sk`` (each field a ``str``)."""
    fields = dict.fromkeys((*KeyTemplate.parse(pk).fields, *KeyTemplate.parse(sk).fields), str)
    body = {"table": home, "pk": pk, "sk": sk, "__qualname__": f"{name}.Meta",
            "__module__": __name__}
    return type(name, (dynaorm.Entity,), {"__annotations__": fields, "__module__": __name__,
                                          "__qualname__": name,
                                          "Meta": type("Meta", (), body)})


def _declare(home: Table, shapes: list[tuple[str, str]]) -> list[type[Any]]:
    """Entities of ``home`` of the key ``shapes`` (``[]``: refused at definition)."""
    n = next(_names)
    try:
        return [_keyed(home, f"RedLit{n}x{i}", *shape) for i, shape in enumerate(shapes)]
    except DynaormError:
        return []  # (two templates no precedence ranks: refused when the class is defined)


def _render(cls: type[Any], values: dict[str, str]) -> dict[str, str] | None:
    """The table key ``cls`` renders for ``values``; ``None``: refused, as a claimed key."""
    spec = cls.__dynaorm_spec__
    try:
        return dict(spec.primary_key({f: values[f] for f in cls.model_fields}))
    except KeyTemplateError as exc:
        if "literal key" in str(exc) or "fits the rows rule" in str(exc):
            return None
        raise


def _scan(home: Table) -> list[str]:
    return sorted(json.dumps(i, sort_keys=True) for i in home.db.send(
        "Scan", {"TableName": home.name})["Items"])


# == 1, 2. the refusal is the read's precedence, no more, no less (pure) ====================
@st.composite
def _meeting(draw: st.DrawFn) -> tuple[list[tuple[str, str]], dict[str, str]]:
    """A template's shape, a second one made of it with some fields replaced by literal
    pieces (a literal, or a partial literal, of the first), maybe a third at random, and
    values that often are the pieces replaced (half the time a claimed key)."""
    pk, sk = draw(_pair)
    pieces = {f: draw(_piece) for f in "abc"}
    fixed = draw(st.sets(st.sampled_from("abc"), min_size=1))
    pk2, sk2 = pk, sk
    for f in fixed:
        pk2, sk2 = pk2.replace(f"{{{f}}}", pieces[f]), sk2.replace(f"{{{f}}}", pieces[f])
    shapes = [(pk, sk), (pk2, sk2), *draw(st.lists(_pair, max_size=1))]
    values = {f: pieces[f] if draw(st.booleans()) else draw(_value) for f in "abc"}
    return list(dict.fromkeys(shapes)), values


@settings(deadline=None, suppress_health_check=list(HealthCheck), max_examples=examples(300))
@given(shapes_values=st.one_of(
    _meeting(), st.tuples(st.lists(_pair, min_size=2, max_size=3, unique=True),
                          st.fixed_dictionaries({k: _value for k in "abc"}))))
@example(shapes_values=([("USER#{a}", "PROFILE"), ("USER#admin", "PROFILE")],
         {"a": "admin", "b": "1", "c": "1"}))
@example(shapes_values=([("USER#{a}", "{c}"), ("USER#admin", "PROFILE"),
                        ("USER#{a}", "PROFILE")], {"a": "admin", "b": "1", "c": "PROFILE"}))
@example(shapes_values=([("{a}", "{c}"), ("USER#admin#X", "PROFILE")],
         {"a": "USER#admin#X", "b": "1", "c": "PROFILE"}))
@example(shapes_values=([("USER#{a}", "PROFILE"), ("USER#admin#X", "PROFILE")],
         {"a": "admin", "b": "1", "c": "1"}))
def test_a_key_is_refused_exactly_when_a_read_takes_it_for_anothers(
        shapes_values: tuple[list[tuple[str, str]], dict[str, str]]) -> None:
    """Up to three entities on a table without a type attribute: each one's key for
    random values is refused (a claimed key) exactly when a read of it would take the item
    for another entity (``outranked``: the literal wins), and then some other entity's
    read does take it (``fits``): never a false refusal, never a claimed key let through;
    a key allowed is the entity's own row to the stream reader too. On a table with a
    type attribute, the same entities refuse nothing."""
    shapes, values = shapes_values
    bare = Table(f"red-lit-p-{next(_names)}", pk="PK", sk="SK", type_attribute=None)
    for cls in _declare(bare, shapes):
        spec = cls.__dynaorm_spec__
        try:
            key = _render(cls, values)
        except KeyTemplateError:
            continue  # (a value its template cannot hold: a separator)
        rendered = {"PK": spec.pk.render(values, spec.name),
                    "SK": spec.sk.render(values, spec.name)}
        item = {a: key_av(t) for a, t in rendered.items()}
        if own_row(bare, item):
            continue
        claimed = spec.outranked(item)
        event("refused" if key is None else "allowed")
        assert (key is None) == claimed, (shapes, values, rendered)
        if key is None:
            others = [c for c in bare.entities.values() if c is not cls]
            assert any(o.__dynaorm_spec__.fits(item) for o in others), (shapes, rendered)
        else:
            assert key == rendered
            assert classify(bare, item)[:2] == (cls, "row"), (shapes, rendered)
    typed = Table(f"red-lit-t-{next(_names)}", pk="PK", sk="SK")
    for cls in _declare(typed, shapes):
        try:
            cls.__dynaorm_spec__.primary_key({f: values[f] for f in cls.model_fields})
        except KeyTemplateError as exc:
            assert "literal key" not in str(exc) and "rows rule" not in str(exc), exc


# == 3. two or three entities: what is allowed reads back as itself (moto) ==============
@settings(deadline=None, suppress_health_check=list(HealthCheck), max_examples=examples(25))
@given(shapes_values=_meeting())
@example(shapes_values=([("USER#{a}", "{c}"), ("USER#admin", "PROFILE"),
                         ("USER#{a}", "PROFILE#1")], {"a": "admin", "b": "1", "c": "PROFILE#1"}))
def test_a_save_allowed_reads_back_as_itself(
        moto: None, shapes_values: tuple[list[tuple[str, str]], dict[str, str]]) -> None:
    """Two or three entities (a template, a literal or partial literal made of it, maybe
    another): each saved in turn with the same values is refused before sending, or reads
    back by a get and a query as itself; a refused save leaves the table as it was."""
    shapes, values = shapes_values
    home = Table(f"red-lit-s-{next(_names)}", pk="PK", sk="SK", type_attribute=None)
    classes = _declare(home, shapes)
    with use_tables(home, name_suffix=worker_suffix()):
        for cls in classes:
            obj = cls(**{f: values[f] for f in cls.model_fields})
            before = _scan(home)
            try:
                with Session(home) as s:
                    s.save(obj)
            except KeyTemplateError:
                assert _scan(home) == before
                continue
            spec = cls.__dynaorm_spec__
            keys = {f: getattr(obj, f) for f in spec.lookup_fields}
            got = Session(home).get(cls, **keys)
            assert type(got) is cls and got == obj, (shapes, values)
            found = Session(home).query(cls, **{f: keys[f] for f in spec.pk.fields}).all()
            assert obj in found and all(type(x) is cls for x in found)


@pytest.fixture(scope="module")
def moto() -> Iterator[None]:
    from dynaorm.testing import moto_backend

    with moto_backend():
        yield


def _profiles(label: str, **tables: Any) -> tuple[Table, type[Any], type[Any]]:
    """A table without a type attribute with ``Profile`` (``USER#{a}``/``PROFILE``) and
    ``AdminProfile`` (``USER#admin``/``PROFILE``)."""
    home = Table(f"red-lit-{label}", pk="PK", sk="SK", type_attribute=None, **tables)
    return (home, _keyed(home, f"RedLitProfile{label}", "USER#{a}", "PROFILE"),
            _keyed(home, f"RedLitAdmin{label}", "USER#admin", "PROFILE"))


# == 4. a rename onto a claimed key ========================================================
def test_a_rename_onto_a_claimed_key_is_refused_and_keeps_the_old_row(moto: None) -> None:
    """A loaded ``Profile`` saved with its key field changed moves (old row deleted, new
    put); changed to ``admin``, the literal's key, the save is refused before sending and
    both rows stay; a rename elsewhere moves it."""
    home, profile, admin = _profiles("rename")
    with use_tables(home, name_suffix=worker_suffix()):
        with Session(home) as s:
            s.save(admin())
            s.save(profile(a="ada"))
        held = _scan(home)
        s = Session(home)
        ada = s.get(profile, a="ada")
        assert ada is not None
        ada.a = "admin"
        with pytest.raises(KeyTemplateError, match="literal key"):
            s.save(ada)
            s.commit()
        assert _scan(home) == held
        s = Session(home)
        ada = s.get(profile, a="ada")
        assert ada is not None
        ada.a = "bob"
        s.save(ada)
        s.commit()
        assert Session(home).get(profile, a="ada") is None
        assert Session(home).get(profile, a="bob") == profile(a="bob")
        assert Session(home).get(admin) == admin()


# == 5. the cache: late and redefined classes, pickle, fork ===============================
def test_a_literal_defined_after_a_session_opened_refuses_at_once(moto: None) -> None:
    """A session opened, ``Profile(admin)`` saved, then the literal entity defined: the
    commit refuses (the key is rendered again); the template class redefined still
    refuses; the literal redefined on another key frees it at once."""
    home = Table("red-lit-late", pk="PK", sk="SK", type_attribute=None)
    profile = _keyed(home, "RedLitLateProfile", "USER#{a}", "PROFILE")
    with use_tables(home, name_suffix=worker_suffix()):
        s = Session(home)
        s.save(profile(a="admin"))
        _keyed(home, "RedLitLateAdmin", "USER#admin", "PROFILE")
        with pytest.raises(KeyTemplateError, match="RedLitLateAdmin's literal key"):
            s.commit()
        assert _scan(home) == []
        profile = _keyed(home, "RedLitLateProfile", "USER#{a}", "PROFILE")  # (redefined)
        with pytest.raises(KeyTemplateError, match="literal key"):
            Session(home).save(profile(a="admin"))
        _keyed(home, "RedLitLateAdmin", "ADMIN#root", "PROFILE")  # (no longer claims it)
        with Session(home) as s:
            s.save(profile(a="admin"))
        assert Session(home).get(profile, a="admin") == profile(a="admin")


#: module-level so pickle finds them by name
PICKLED, PICKLED_PROFILE, PICKLED_ADMIN = _profiles("pickled")
globals()[PICKLED_PROFILE.__name__] = PICKLED_PROFILE


def test_the_refusal_holds_after_a_pickle_round_trip_and_in_a_forked_child(
        moto: None) -> None:
    """An object pickled and loaded is refused as the original; a forked child (the
    claims cached in the parent copied) refuses alike and frees other keys."""
    spec = PICKLED_PROFILE.__dynaorm_spec__
    with pytest.raises(KeyTemplateError, match="literal key"):
        spec.primary_key({"a": "admin"})  # (the claims cached)
    obj = pickle.loads(pickle.dumps(PICKLED_PROFILE(a="admin")))
    with pytest.raises(KeyTemplateError, match="literal key"):
        Session(PICKLED).save(obj)
    if not hasattr(os, "fork"):
        return
    pid = os.fork()
    if pid == 0:  # (the child: exit 0 only if it refuses the claimed key, not another)
        code = 1
        try:
            spec.primary_key({"a": "admin"})
        except KeyTemplateError:
            code = 0 if spec.primary_key({"a": "ada"}) == {"PK": "USER#ada",
                                                            "SK": "PROFILE"} else 2
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0


# == 6. GSI keys =========================================================================
def test_an_index_key_where_another_entitys_index_literal_is_allowed_and_reads_apart(
        moto: None) -> None:
    """``User`` indexed ``EMAIL#{email}``/``ROW`` beside ``Org`` indexed ``EMAIL#admin``/
    ``ROW``: a user with ``email="admin"`` lands in the org's index partition. Not refused
    (reads by index tell items by their table key), and each query of the index returns
    its own entity only."""
    home = Table("red-lit-gsi", pk="PK", sk="SK", type_attribute=None,
                 indexes=[GSI("GSI1", "GSI1PK", "GSI1SK")])

    class RedLitGsiUser(dynaorm.Entity):
        class Meta:
            table = home
            pk = "USER#{a}"
            sk = "PROFILE"
            indexes = {"GSI1": ("EMAIL#{email}", "ROW")}

        a: str
        email: str

    class RedLitGsiOrg(dynaorm.Entity):
        class Meta:
            table = home
            pk = "ORG#{o}"
            sk = "META"
            indexes = {"GSI1": ("EMAIL#admin", "ROW")}

        o: str

    with use_tables(home, name_suffix=worker_suffix()):
        with Session(home) as s:
            s.save(RedLitGsiOrg(o="x"))
            s.save(RedLitGsiUser(a="ada", email="admin"))
        s = Session(home)
        assert s.query(RedLitGsiUser, index="GSI1", email="admin").all() == [
            RedLitGsiUser(a="ada", email="admin")]
        assert s.query(RedLitGsiOrg, index="GSI1").all() == [RedLitGsiOrg(o="x")]


# == 7. the previous layout (Meta.previous, dynaorm migrate) ==============================
def _previous(label: str) -> tuple[Table, type[Any], type[Any]]:
    """``OldAdmin`` keyed literally ``OLD#admin``/``PROFILE`` beside ``Moved`` keyed
    ``USER#{a}``/``PROFILE`` whose previous layout was ``OLD#{a}``/``PROFILE``."""
    home = Table(f"red-lit-{label}", pk="PK", sk="SK", type_attribute=None)
    admin = _keyed(home, f"RedLitOldAdmin{label}", "OLD#admin", "PROFILE")

    class Moved(dynaorm.Entity):
        class Meta:
            table = home
            pk = "USER#{a}"
            sk = "PROFILE"
            previous = Previous(pk="OLD#{a}")

        a: str

    return home, Moved, admin


def test_a_get_in_the_migration_window_never_takes_anothers_literal_row(moto: None) -> None:
    """``get(Moved, a="admin")`` misses ``USER#admin`` and reads the old key ``OLD#admin``:
    the literal entity's row, never a ``Moved``; saving what it returned must not delete
    the admin's row."""
    home, moved, admin = _previous("prevget")
    with use_tables(home, name_suffix=worker_suffix()):
        with Session(home) as s:
            s.save(admin())
        s = Session(home)
        got = s.get(moved, a="admin")
        if got is not None:
            s.save(got)
            s.commit()
        assert Session(home).get(admin) == admin()
        assert got is None


def test_migrate_never_moves_anothers_literal_row(moto: None) -> None:
    """``dynaorm migrate`` moves old-layout rows of ``Moved``; the literal entity's row at
    ``OLD#admin`` is not one: it stays, and no ``Moved`` appears."""
    from dynaorm.jobs.migration import migrate

    home, moved, admin = _previous("prevmig")
    with use_tables(home, name_suffix=worker_suffix()):
        with Session(home) as s:
            s.save(admin())
        migrate(home)
        assert Session(home).get(admin) == admin()
        assert Session(home).get(moved, a="admin") is None


# == 8. the surfaces: MCP tools, a backfill, AsyncSession.save_many, a pk-only table ======
mcp_home = Table("red-lit-mcp", pk="PK", sk="SK", type_attribute=None)


class RedLitMcpProfile(dynaorm.Entity):
    class Meta:
        table = mcp_home
        pk = "USER#{a}"
        sk = "PROFILE"

    a: str
    bio: str = ""


class RedLitMcpAdmin(dynaorm.Entity):
    class Meta:
        table = mcp_home
        pk = "USER#admin"
        sk = "PROFILE"

    bio: str = ""


def test_mcp_tools_refuse_a_claimed_key_as_a_tool_error(moto: None) -> None:
    """The MCP save, update, delete and get tools of ``Profile`` at the admin's literal
    key answer a tool error naming the refusal, and write nothing; another user's
    profile is saved and read back through them."""
    import dynaorm.mcp
    from tests.support.mcp_client import call, text

    with use_tables(mcp_home, name_suffix=worker_suffix()):
        with Session(mcp_home) as s:
            s.save(RedLitMcpAdmin(bio="root"))
        held = _scan(mcp_home)
        srv = dynaorm.mcp.server(mcp_home, writes=["RedLitMcpProfile"])
        names = asyncio_tools(srv)
        save, get, upd, delete = (next(n for n in names if n.startswith(verb) and
                                       "admin" not in n) for verb in
                                  ("save_", "get_", "update_", "delete_"))
        results = call(srv, (save, {"item": {"a": "admin", "bio": "evil"}}),
                       (get, {"a": "admin"}), (upd, {"a": "admin", "set": {"bio": "x"}}),
                       (delete, {"a": "admin"}),
                       (save, {"item": {"a": "ada", "bio": "hi"}}), (get, {"a": "ada"}))
        for result in results[:4]:
            assert result.is_error and "literal key" in text(result), text(result)
        assert not results[4].is_error and not results[5].is_error, text(results[5])
        assert results[5].structured_content["item"]["bio"] == "hi"
        assert [i for i in _scan(mcp_home) if "USER#admin" in i] == [
            i for i in held if "USER#admin" in i]


def asyncio_tools(srv: Any) -> list[str]:
    """The tool names an MCP server lists."""
    import asyncio

    from mcp import Client

    async def go() -> list[str]:
        async with Client(srv) as client:
            return [t.name for t in (await client.list_tools()).tools]
    return asyncio.run(go())


def _rename_to_admin(obj: Any) -> Any:
    """A backfill step that moves every profile onto the admin's literal key."""
    return obj.model_copy(update={"a": "admin"})


def test_a_backfill_onto_a_claimed_key_changes_nothing(moto: None) -> None:
    """A backfill whose step renames profiles onto the literal's key: refused before
    sending (the job stops with the error, or counts it failed), the admin's row and the
    profiles stay as they were."""
    from dynaorm.jobs.job import backfill, run_local

    with use_tables(mcp_home, name_suffix=worker_suffix()):
        with Session(mcp_home) as s:
            s.save(RedLitMcpAdmin(bio="root"))
            s.save(RedLitMcpProfile(a="ada"))
            s.save(RedLitMcpProfile(a="bob"))
        held = _scan(mcp_home)
        job = backfill(RedLitMcpProfile, _rename_to_admin, name="red-lit")
        try:
            report = run_local(job, workers=1)
        except KeyTemplateError as exc:  # (the step's object refused before sending)
            assert "literal key" in str(exc)
        else:
            assert report.changed == 0 and report.failed, report
        unmarked = [{k: v for k, v in json.loads(i).items() if k != "_dynaorm_job"}
                    for i in _scan(mcp_home)]
        assert sorted(json.dumps(i, sort_keys=True) for i in unmarked) == held
        assert Session(mcp_home).get(RedLitMcpAdmin) == RedLitMcpAdmin(bio="root")
        assert Session(mcp_home).get(RedLitMcpProfile, a="ada") == RedLitMcpProfile(a="ada")


def test_async_save_many_refuses_the_whole_batch_before_sending(moto: None) -> None:
    """``AsyncSession.save_many`` with one claimed key among others: refused before
    anything is sent; the table is unchanged."""
    import asyncio

    from dynaorm.aio.session import AsyncSession

    with use_tables(mcp_home, name_suffix=worker_suffix()):
        with Session(mcp_home) as s:
            s.save(RedLitMcpAdmin(bio="root"))
        held = _scan(mcp_home)

        async def go() -> None:
            await AsyncSession(mcp_home).save_many(
                [RedLitMcpProfile(a="ada"), RedLitMcpProfile(a="admin"),
                 RedLitMcpProfile(a="bob")])
        with pytest.raises(KeyTemplateError, match="literal key"):
            asyncio.run(go())
        assert _scan(mcp_home) == held


def test_a_table_without_a_sort_key_refuses_the_literal_partition_only(moto: None) -> None:
    """A table keyed by a partition key only: ``Account`` keyed ``ACCT#{a}`` beside
    ``Root`` keyed ``ACCT#root``: ``a="root"`` refused, ``a="rooted"`` stored and read
    back."""
    home = Table("red-lit-pk-only", pk="PK", sk=None, type_attribute=None)

    class RedLitAccount(dynaorm.Entity):
        class Meta:
            table = home
            pk = "ACCT#{a}"

        a: str

    class RedLitRoot(dynaorm.Entity):
        class Meta:
            table = home
            pk = "ACCT#root"

    account, root = RedLitAccount, RedLitRoot
    with use_tables(home, name_suffix=worker_suffix()):
        with Session(home) as s:
            s.save(root())
        with pytest.raises(KeyTemplateError, match="RedLitRoot's literal key"):
            Session(home).save(account(a="root"))
        with Session(home) as s:
            s.save(account(a="rooted"))
        assert Session(home).get(account, a="rooted") == account(a="rooted")
        assert Session(home).get(root) == root()


def test_an_unmigrated_literal_row_is_never_anothers(moto: None) -> None:
    """``Root`` keyed literally ``ADMIN#root`` (previously ``USER#root``) beside
    ``Account`` keyed ``USER#{a}``: the root's unmigrated row at ``USER#root`` is read by
    ``get(Root)``; a ``get``, query or scan of ``Account`` never returns it, the stream
    reader never takes it for an ``Account``, an ``Account(a="root")`` save never
    overwrites it (refused, as at a current literal's key), ``a="rooted"`` is stored;
    ``dynaorm migrate`` moves it to ``ADMIN#root``."""
    from dynaorm.jobs.migration import migrate

    home = Table("red-lit-prevlit", pk="PK", sk="SK", type_attribute=None)
    account = _keyed(home, "RedLitPrevAccount", "USER#{a}", "PROFILE")

    class RedLitPrevRoot(dynaorm.Entity):
        class Meta:
            table = home
            pk = "ADMIN#root"
            sk = "PROFILE"
            previous = Previous(pk="USER#root")

        bio: str = ""

    old = {"PK": {"S": "USER#root"}, "SK": {"S": "PROFILE"}, "bio": {"S": "root"}}
    with use_tables(home, name_suffix=worker_suffix()):
        home.db.send("PutItem", {"TableName": home.name, "Item": old})
        assert Session(home).get(RedLitPrevRoot) == RedLitPrevRoot(bio="root")
        try:  # (refused as a get of a current literal's key is, or a miss)
            taken = Session(home).get(account, a="root")
        except KeyTemplateError as exc:
            assert "RedLitPrevRoot's literal key" in str(exc)
            taken = None
        assert taken is None
        assert Session(home).query(account, a="root").all() == []
        assert Session(home).scan(account).all() == []
        assert classify(home, old)[0] is not account
        held = _scan(home)
        with pytest.raises(KeyTemplateError, match="RedLitPrevRoot's literal key"), Session(
                home) as s:
            s.save(account(a="root"), overwrite=True)
        assert _scan(home) == held
        assert Session(home).get(RedLitPrevRoot) == RedLitPrevRoot(bio="root")
        with Session(home) as s:
            s.save(account(a="rooted"))
        assert Session(home).get(account, a="rooted") == account(a="rooted")
        migrate(home)
        assert Session(home).get(RedLitPrevRoot) == RedLitPrevRoot(bio="root")
        assert [i["PK"] for i in home.db.send("Scan", {"TableName": home.name})["Items"]
                if i["PK"] != {"S": "USER#rooted"}] == [{"S": "ADMIN#root"}]


def test_a_previous_template_never_takes_anothers_previous_literal_row(moto: None) -> None:
    """Both layouts moved: ``Moved`` keyed ``USER#{a}`` (previously ``OLD#{a}``) beside
    ``Admin`` keyed ``ADMIN#root`` (previously literally ``OLD#admin``): the admin's
    unmigrated row at ``OLD#admin`` is never a ``Moved`` to ``get(Moved, a="admin")``
    (which reads the old key on a miss) nor to ``dynaorm migrate``, which moves it to
    ``ADMIN#root``."""
    from dynaorm.jobs.migration import migrate

    home = Table("red-lit-prevprev", pk="PK", sk="SK", type_attribute=None)

    class RedLitPrevMoved(dynaorm.Entity):
        class Meta:
            table = home
            pk = "USER#{a}"
            sk = "PROFILE"
            previous = Previous(pk="OLD#{a}")

        a: str

    class RedLitPrevAdmin(dynaorm.Entity):
        class Meta:
            table = home
            pk = "ADMIN#root"
            sk = "PROFILE"
            previous = Previous(pk="OLD#admin")

        bio: str = ""

    old = {"PK": {"S": "OLD#admin"}, "SK": {"S": "PROFILE"}, "bio": {"S": "root"}}
    with use_tables(home, name_suffix=worker_suffix()):
        home.db.send("PutItem", {"TableName": home.name, "Item": old})
        home.db.send("PutItem", {"TableName": home.name, "Item": {
            "PK": {"S": "OLD#ada"}, "SK": {"S": "PROFILE"}}})
        assert Session(home).get(RedLitPrevAdmin) == RedLitPrevAdmin(bio="root")
        assert Session(home).get(RedLitPrevMoved, a="admin") is None
        assert Session(home).get(RedLitPrevMoved, a="ada") == RedLitPrevMoved(a="ada")
        migrate(home)
        assert Session(home).get(RedLitPrevAdmin) == RedLitPrevAdmin(bio="root")
        assert Session(home).get(RedLitPrevMoved, a="admin") is None
        assert sorted(i["PK"]["S"] for i in home.db.send(
            "Scan", {"TableName": home.name})["Items"]) == ["ADMIN#root", "USER#ada"]
