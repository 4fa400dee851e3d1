"""Definitions, checked when they are made, with no engine: a Table's CreateTable
definition (contract section 1) and the refusals of a bad Table or entity ``Meta``
(contract section 10). Creating and deleting tables on the engines is in
tests/integration/test_table.py."""

from __future__ import annotations

import copy
import dataclasses
import importlib
import pickle
import re
import subprocess
import sys
from pathlib import Path
from typing import Annotated, Any

import pytest
from pydantic import Field
from typing_extensions import TypedDict

from dynaorm import GSI, LSI, DynaormError, Entity, Table, Unique
from tests.support.models import app


def test_definition_of_the_test_table() -> None:
    assert app.definition() == {
        "TableName": "dynaorm-tests",
        "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"},
                      {"AttributeName": "sk", "KeyType": "RANGE"}],
        "AttributeDefinitions": [
            {"AttributeName": name, "AttributeType": "S"}
            for name in ("gsi1pk", "gsi1sk", "gsi2pk", "gsi2sk", "lsi1sk", "pk", "sk")
        ],
        "BillingMode": "PAY_PER_REQUEST",
        "GlobalSecondaryIndexes": [
            {"IndexName": "gsi1",
             "KeySchema": [{"AttributeName": "gsi1pk", "KeyType": "HASH"},
                           {"AttributeName": "gsi1sk", "KeyType": "RANGE"}],
             "Projection": {"ProjectionType": "ALL"}},
            {"IndexName": "gsi2",
             "KeySchema": [{"AttributeName": "gsi2pk", "KeyType": "HASH"},
                           {"AttributeName": "gsi2sk", "KeyType": "RANGE"}],
             "Projection": {"ProjectionType": "ALL"}},
        ],
        "LocalSecondaryIndexes": [
            {"IndexName": "lsi1",
             "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"},
                           {"AttributeName": "lsi1sk", "KeyType": "RANGE"}],
             "Projection": {"ProjectionType": "ALL"}},
        ],
    }


def test_definition_variants() -> None:
    t = Table("plain", pk="id", sk=None,
              indexes=[GSI("by_owner", pk="owner"), GSI("keys", pk="k", sk="s",
                                                         projection="keys_only"),
                       GSI("some", pk="k", projection=["a", "b"])])
    d = t.definition()
    assert d["KeySchema"] == [{"AttributeName": "id", "KeyType": "HASH"}]
    assert d["AttributeDefinitions"] == [
        {"AttributeName": n, "AttributeType": "S"} for n in ("id", "k", "owner", "s")]
    assert "LocalSecondaryIndexes" not in d
    gsis = {g["IndexName"]: g for g in d["GlobalSecondaryIndexes"]}
    assert gsis["by_owner"]["KeySchema"] == [{"AttributeName": "owner", "KeyType": "HASH"}]
    assert gsis["keys"]["Projection"] == {"ProjectionType": "KEYS_ONLY"}
    assert gsis["some"]["Projection"] == {"ProjectionType": "INCLUDE",  # (0.2) + the type
                                          "NonKeyAttributes": ["a", "b", "_type"]}
    bare = Table("bare").definition()
    assert "GlobalSecondaryIndexes" not in bare and "LocalSecondaryIndexes" not in bare
    assert bare["BillingMode"] == "PAY_PER_REQUEST"


@pytest.mark.parametrize("name", ["", "ab", "has space", "x" * 256, "bad/char"])
def test_invalid_table_and_index_names_are_refused_at_definition(name: str) -> None:
    with pytest.raises(DynaormError, match="name"):
        Table(name)
    with pytest.raises(DynaormError, match="index name"):
        Table("valid-table", indexes=[GSI(name, pk="gpk")])


# -- definition errors (raised when the class is defined) ---------------------------------
def _define(meta: dict[str, Any], **fields: Any) -> type[Entity]:
    annotations = {"a": str, "b": str, **fields}
    inner = type("Meta", (), {**meta, "__qualname__": "ErrDefined.Meta",
                              "__module__": __name__})
    ns: dict[str, Any] = {"__annotations__": annotations, "__module__": __name__,
                          "__qualname__": "ErrDefined", "Meta": inner}
    return type("ErrDefined", (Entity,), ns)


@pytest.mark.parametrize(("meta", "message"), [
    ({"table": app, "pk": "A#{a}"}, "sk is required"),
    ({"table": app, "pk": "A#{nope}", "sk": "X"}, "nope"),
    ({"table": app, "pk": "A#{a}", "sk": "{b}", "colour": "red"}, "unknown option"),
    ({"table": "app", "pk": "A#{a}", "sk": "X"}, "must be a dynaorm Table"),
    ({"table": app, "pk": "A#{a}", "sk": "X", "indexes": {"gsi9": ("A", "B")}}, "gsi9"),
    ({"table": app, "pk": "A#{a}", "sk": "X", "indexes": {"lsi1": ("B#{b}", "C")}}, "LSI"),
    ({"table": app, "pk": "A#{a}", "sk": "X", "indexes": {"gsi1": ("A",)}}, "gsi1"),
    ({"table": app, "pk": "A#{a}", "sk": "X", "unique": ("zzz",)}, "zzz"),
    ({"table": app, "pk": "A#{a}", "sk": "X", "unique": (Unique("a", scope="S#{q}"),)}, "q"),
    ({"table": app, "pk": "A#{a}", "sk": "X", "shards": {"gsi1": 4},
      "indexes": {"gsi1": ("A#{a}", "B")}}, "shard"),
    ({"table": app, "pk": "A#{a}#{shard}", "sk": "X"}, "shard"),
    ({"table": app, "pk": "A#{a}", "sk": "X#{b}", "shards": {"primary": 0}}, "shards"),
])
def test_definition_errors(meta: dict[str, Any], message: str) -> None:
    with pytest.raises(DynaormError, match=message):
        _define(meta)


def test_field_colliding_with_a_key_attribute() -> None:
    with pytest.raises(DynaormError, match="collide"):
        _define({"table": app, "pk": "A#{a}", "sk": "X"}, gsi1pk=str)


@pytest.mark.parametrize(("table", "stored"), [
    (app, "_rev"), (app, "_dynaorm_job"),
    (Table("rev_named", revision_attribute="etag"), "etag")])
def test_a_field_stored_as_an_attribute_dynaorm_writes_is_refused(table: Table,
                                                                  stored: str) -> None:
    """(0.6, contract 21) A field stored as the row revision (``_rev``, as CouchDB and
    PouchDB tools write it) or a backfill's marker is refused when the class is defined:
    0.5 took it, and every write overwrote it with the revision (while a field stored as
    ``_type`` or ``pk`` was refused)."""
    with pytest.raises(DynaormError, match=f"stored as \\['{stored}'\\]: dynaorm writes"):
        _define({"table": table, "pk": "A#{a}", "sk": "X"},
                other=Annotated[str, Field(alias=stored)])
    # a table that keeps no revision: a field of its own (another tool's design)
    _define({"table": Table("rev_free", revision_attribute=None), "pk": "A#{a}", "sk": "X"},
            rev=Annotated[str, Field(alias="_rev")])


def test_type_name_used_twice() -> None:
    with pytest.raises(DynaormError, match="type name"):
        _define({"table": app, "pk": "A#{a}", "sk": "X", "type_name": "User"})


def test_table_definition_errors() -> None:
    with pytest.raises(DynaormError):
        Table("")
    with pytest.raises(DynaormError, match="twice"):
        Table("tbl", indexes=[GSI("gsi", pk="a"), GSI("gsi", pk="b")])
    with pytest.raises(DynaormError, match="sort key"):
        Table("tbl", sk=None, indexes=[LSI("lsi", sk="x")])
    with pytest.raises(DynaormError, match="projection"):
        Table("tbl", indexes=[GSI("gsi", pk="a", projection="SOME")]).definition()


def _in_module(module: str, source: str, table: Table) -> Any:
    """The class ``source`` defines, as if written in ``module``."""
    scope: dict[str, Any] = {"__name__": module, "Entity": Entity, "table": table}
    exec(source, scope)
    return scope["Twin"]


def test_a_type_name_taken_by_another_module_is_refused() -> None:
    # Two classes named alike in two modules used to share one type name: each read the
    # other's items (issue 18). The second is refused; the message says what to do.
    names = Table("dynaorm-type-names")
    twin = """
class Twin(Entity):
    class Meta:
        table = table
        pk = "T#{t}"
        sk = "A"{extra}

    t: str
"""
    first = _in_module("shop.models", twin.replace("{extra}", ""), names)
    with pytest.raises(DynaormError, match=r"type name 'Twin' is taken by shop\.models\.Twin; "
                       r"give billing\.models\.Twin its own type name .*Meta: type_name"):
        _in_module("billing.models", twin.replace("{extra}", "").replace("T#", "U#"), names)
    assert names.entities == {"Twin": first}
    other = _in_module("billing.models", twin.replace("T#", "U#").replace(
        "{extra}", '\n        type_name = "BillingTwin"'), names)  # its own name: welcome
    assert names.entities == {"Twin": first, "BillingTwin": other}
    again = _in_module("shop.models", twin.replace("{extra}", ""), names)  # a reload
    assert names.entities["Twin"] is again and again is not first


# -- Meta.overlaps and Meta.key_only (contract 18, "Mapping"; behaviour on an engine:
#    integration/test_key_precedence.py and integration/test_key_only.py) -----------------
def test_two_overlapping_templates_stay_refused_and_a_literal_may_sit_beside_one() -> None:
    shapes = Table("dynaorm-overlaps", type_attribute=None)

    class Event(Entity):
        class Meta:
            table = shapes
            pk = "STORE#{store_id}"
            sk = "{timestamp}"

        store_id: str
        timestamp: str

    class Profile(Entity):  # the literal wins where the two meet: accepted
        class Meta:
            table = shapes
            pk = "STORE#{store_id}"
            sk = "METADATA"

        store_id: str

    assert Profile.__dynaorm_spec__ is not None and Profile.__dynaorm_spec__.overlaps == "literal"
    with pytest.raises(DynaormError, match=r"could match the same item as Event.*neither key is "
                       r"a literal"):
        class Other(Entity):  # two templates: no precedence tells them apart
            class Meta:
                table = shapes
                pk = "STORE#{store_id}"
                sk = "ORDER#{order_id}"

            store_id: str
            order_id: str
    with pytest.raises(DynaormError, match=r"could match the same item as Event.*'refuse'"):
        class Strict(Entity):
            class Meta:
                table = shapes
                pk = "STORE#{store_id}"
                sk = "SETTINGS"
                overlaps = "refuse"

            store_id: str
    with pytest.raises(DynaormError, match=r"Meta.overlaps must be one of \('literal', "
                       "'refuse'\\), got 'first'"):
        class Wrong(Entity):
            class Meta:
                table = shapes
                pk = "W#{w}"
                sk = "W"
                overlaps = "first"

            w: str
    assert set(shapes.entities) == {"Event", "Profile"}


def test_an_entity_refusing_overlaps_keeps_literals_out() -> None:
    shapes = Table("dynaorm-overlaps-strict", type_attribute=None)

    class Event(Entity):
        class Meta:
            table = shapes
            pk = "STORE#{store_id}"
            sk = "{timestamp}"
            overlaps = "refuse"

        store_id: str
        timestamp: str

    with pytest.raises(DynaormError, match="'refuse'"):
        class Profile(Entity):
            class Meta:
                table = shapes
                pk = "STORE#{store_id}"
                sk = "METADATA"

            store_id: str


def _define_reading(meta: dict[str, Any], fields: str) -> None:
    """Define an entity on the shared table with ``meta`` as its Meta options."""
    options = "".join(f"\n        {k} = {v!r}" for k, v in meta.items())
    source = f"""
class Reading(Entity):
    class Meta:
        table = table{options}
{fields}
"""
    exec(source, {"__name__": __name__, "Entity": Entity, "table": app, "Field": Field})


def _key_only(key_only: Any, pk: str = "R#{device}", sk: str = "{timestamp}",
              **extra: Any) -> None:
    _define_reading({"pk": pk, "sk": sk, "key_only": key_only, **extra},
            "    device: str\n    timestamp: str\n    site: str\n    name: str")


@pytest.mark.parametrize(("key_only", "extra", "message"), [
    (("serial",), {}, "names 'serial', which is not a field"),
    (("site",), {}, "field 'site' is in no key template"),
    (("site",), {"indexes": {"gsi1": ("SITE#{site}", "{device}")}},
     "field 'site' is only in an index key template"),
    (("name",), {"unique": ("name",)}, "field 'name' is in no key template"),
    ("device timestamp", {}, "names 'device timestamp', which is not a field"),
    (42, {}, "Meta.key_only must be a tuple of field names"),
])
def test_key_only_names_must_be_fields_held_by_the_table_key(
        key_only: Any, extra: dict[str, Any], message: str) -> None:
    with pytest.raises(DynaormError, match=message):
        _key_only(key_only, **extra)


def test_a_key_only_field_must_parse_back_exactly() -> None:
    with pytest.raises(DynaormError, match="cannot be read back exactly"):
        _key_only(("device",), pk="R#{device!u}")
    with pytest.raises(DynaormError, match="cannot be read back exactly"):
        _key_only(("timestamp",), sk="{timestamp:>10}")


def test_an_excluded_field_in_a_unique_rule_or_an_index_must_be_in_the_table_key() -> None:
    for extra, used in (({"unique": ("site",)}, "a unique rule"),
                        ({"indexes": {"gsi1": ("SITE#{site}", "{device}")}},
                         "an index key template")):
        with pytest.raises(DynaormError, match=f"'site' has exclude=True .*but {used}"):
            _define_reading({"pk": "X#{device}", "sk": "X", **extra},
                    "    device: str\n    site: str = Field('', exclude=True)")


# -- a client's receipts table (Client(receipts=), contract 24) -----------------------------
def test_a_receipts_table_that_cannot_keep_receipts_is_refused() -> None:
    from dynaorm import Client

    with pytest.raises(DynaormError, match="receipts= takes the Table"):
        Client(receipts="receipts")  # type: ignore[arg-type]
    numbered = Table("numbered-receipts", key_types={"pk": "N"}, sk=None)
    with pytest.raises(DynaormError, match="keys are not strings"):
        Client(receipts=numbered)
    clashing = Table("clashing-receipts", pk="dynaorm:digest", sk=None)
    with pytest.raises(DynaormError, match="named as a receipt's"):
        Client(receipts=clashing)
    home = Table("dynaorm-receipts", pk="id", sk=None)
    client = Client(receipts=home)
    assert client.receipts is home
    client.receipts = None
    assert client.receipts is None


# -- a rule's kind inside a field's value (contract 25, "One value tree") --------------------
def _kinds() -> dict[str, Any]:
    from dynaorm import Compressed, Encrypted, Offloaded, Vector

    return {"Encrypted": Encrypted[str], "Compressed": Compressed[str],
            "Offloaded": Offloaded[str], "Vector": Annotated[list[float], Vector(3)]}


@pytest.mark.parametrize("kind", ["Encrypted", "Compressed", "Offloaded", "Vector"])
@pytest.mark.parametrize("shape", ["model", "list of models", "mapping of models",
                                   "dataclass", "typed dict",
                                   "optional model", "optional list", "list of lists"])
def test_a_rules_kind_inside_a_fields_value_is_refused_naming_its_path(
        kind: str, shape: str) -> None:
    """0.9 stored a nested model's ``Encrypted`` field in plaintext (and ignored a nested
    ``Compressed`` or ``Offloaded``): a rule's kind is applied to whole fields only, so one
    declared inside a value is refused when the class is defined, with its path."""
    from pydantic import BaseModel, create_model

    marked = _kinds()[kind]
    card: Any = create_model("Card", brand=(str, ...), pan=(marked, ...), __base__=BaseModel)
    plain: Any = dataclasses.make_dataclass("Plain", [("brand", str), ("pan", marked)])
    typed: Any = TypedDict("Typed", {"brand": str, "pan": marked})  # type: ignore[operator]
    annotation, path = {
        "dataclass": (plain, "wallet.pan"), "typed dict": (list[typed], "wallet[].pan"),
        "model": (card, "wallet.pan"), "list of models": (list[card], "wallet[].pan"),
        "mapping of models": (dict[str, card], "wallet{}.pan"),
        "optional model": (card | None, "wallet.pan"),
        "optional list": (list[list[marked] | None] | None, "wallet[][]"),
        "list of lists": (list[list[marked]], "wallet[][]")}[shape]
    with pytest.raises(DynaormError, match=re.escape(
            f"Holder.{path}: {kind} inside a field's value is not applied")):
        class Holder(Entity):
            class Meta:
                table = app
                pk = "H#{holder_id}"
                sk = "H"

            holder_id: str
            wallet: annotation  # type: ignore[valid-type]


def test_a_rules_kind_a_fields_rules_read_is_kept() -> None:
    """What the rules do read stays allowed: a kind on the field or on its members' first
    level, each through an ``Optional``'s arm (the whole field is sealed), below the same
    kind on the field, a value kind (``StoredAs``) anywhere, a model inside itself."""
    from datetime import datetime

    from pydantic import BaseModel

    from dynaorm import Encrypted, StoredAs

    class Stamp(BaseModel):
        at: Annotated[datetime, StoredAs.ISO_Z]
        children: list[Stamp] = []

    class Kept(Entity):
        class Meta:
            table = Table("dynaorm-kinds-kept")  # (not app: its model() describes its classes)
            pk = "K#{kept_id}"
            sk = "K"

        kept_id: str
        whole: Encrypted[Stamp] | None = None
        members: list[Encrypted[str] | None] | None = []
        sealed: Encrypted[list[list[Encrypted[str]]]] = []
        stamp: Stamp | None = None

    assert Kept.__dynaorm_spec__ is not None


def _holders_of_hidden_kinds() -> dict[str, Any]:
    """Values holding ``Encrypted`` where ``check_nested_kinds`` does not look: structured
    types other than pydantic models, a nested model whose field is still a forward
    reference when the entity is defined, a type alias naming the kind."""
    import dataclasses
    from typing import NamedTuple

    from pydantic import BaseModel
    from typing_extensions import TypeAliasType, TypedDict

    from dynaorm import Encrypted

    class CardDict(TypedDict):
        pan: Encrypted[str]

    @dataclasses.dataclass
    class CardData:
        pan: Encrypted[str]

    class CardTuple(NamedTuple):
        pan: Encrypted[str]

    class Later(BaseModel):
        inner: Inner  # a forward reference until Inner exists

    class Inner(BaseModel):
        pan: Encrypted[str]

    pan = TypeAliasType("pan", Encrypted[str])  # type: ignore[misc]
    return {"typeddict": CardDict, "dataclass": CardData, "namedtuple": CardTuple,
            "forward reference": Later, "type alias": pan}


@pytest.mark.parametrize("shape", ["typeddict", "dataclass", "namedtuple",
                                   "forward reference", "type alias"])
def test_a_rules_kind_hidden_in_any_structured_value_is_refused(shape: str) -> None:
    """Contract 25: a kind inside a value either holds or is refused at definition. Each of
    these is accepted today and its card number stored in plaintext (a moto save of
    ``Holder(card=...)`` writes ``{"M": {"pan": {"S": "4111..."}}}``)."""
    annotation = _holders_of_hidden_kinds()[shape]
    refusal = "is not resolved when Holder is defined" if shape in (
        "forward reference", "typeddict", "dataclass", "namedtuple") else (
        "inside a field's value is not applied")
    with pytest.raises(DynaormError, match=refusal):
        class Holder(Entity):
            class Meta:
                table = Table("hidden_kinds")
                pk = "H#{holder_id}"
                sk = "H"

            holder_id: str
            card: annotation  # type: ignore[valid-type]


# --- a table pickles, copies and deep-copies by reference
# (moved from system/test_red_team_lg.py:
# Red team of fixlg (``Table.__reduce__``; the LangGraph Store's refusal of dict keys that
# are no strings; the Saver's tasks of more than 100 writes, chunked and hidden until whole).
#
# 1. A table pickles, copies and deep-copies by reference: what a worker process gets back,
#    what ``copy.copy`` gives, a reloaded module, a table held by two attributes.
# 2. ``Store.put`` of values JSON keeps and changes: accepted means read back equal.
# 3. ``Saver.put_writes`` past a transaction, every one of its transactions failing or its
#    answer lost (another writer in the window): the reader never shows part of a task, and
#    ``put_writes`` never reports success for writes that are not read back.
#
# Each test states what must never happen; what does not hold is a strict xfail naming the
# defect. moto only: none of it depends on the engine (the saver's and store's own rows).)

agents = Table("redlg_agents", ttl="expires")


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


@pytest.mark.sync_only
@pytest.mark.engines('moto')
def test_a_table_pickled_comes_back_as_itself_in_a_fresh_process(tmp_path: Path) -> None:
    """A module's table, pickled, is that module's table in another process."""
    app = _module(tmp_path, "redlg_plain_app", "from dynaorm import Table\n"
                  "table = Table('redlg_plain')\nalias = table\n")
    data = pickle.dumps(app.table)
    assert pickle.loads(data) is app.table
    assert _in_fresh_process(tmp_path, data, "redlg_plain_app") == "True"


@pytest.mark.sync_only
@pytest.mark.engines('moto')
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


@pytest.mark.sync_only
@pytest.mark.engines('moto')
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


@pytest.mark.sync_only
@pytest.mark.engines('moto')
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


# --- a table pickles by reference or not at all
# (moved from system/test_red_team_08c.py:
# Red team 08c: what was never attacked.
#
# 1. :mod:`dynaorm.langgraph`'s ``Saver`` and ``Store`` kept across calls in the ways an
#    application keeps objects: ``copy.deepcopy`` (of a saver, a store, a compiled graph, a
#    config holding them), ``pickle``, ``importlib.reload`` of the adapter's modules (its
#    entity classes defined again) with savers and stores made before still in use, and
#    ``asyncio.run`` after ``asyncio.run`` with a saver or store made in the first loop; a
#    saver the model refuses, made again; a job's tasks on a table of LangGraph rows.
# 2. The refusal of a write at a key a user rule's row kind claims (a table without a type
#    attribute: ``EntitySpec.primary_key``), across what else an entity is (Compressed,
#    Encrypted through KMS, a previous layout; versioned and unique need a type attribute,
#    so they are refused when declared) and every surface that writes: ``Session``,
#    ``AsyncSession``, ``save_many``, an idempotent commit, update, delete, the MCP write
#    tools, a backfill job, ``dynaorm migrate``, the LangGraph ``Store`` and ``Saver``.
#
# Each test states what must never happen; what does not hold is a strict xfail naming the
# defect. moto only (``pytest.mark.engines``): the refusals happen before sending.)

# == 1. LangGraph's saver and store, kept across calls ====================================
copies = Table("red08c_agents", ttl="expires")


@pytest.mark.sync_only
@pytest.mark.engines('moto')
def test_a_table_pickles_by_reference_or_not_at_all() -> None:
    """A table pickles as the module attribute that holds it (the same table back, its
    client never carried); one no module attribute holds is refused, never copied."""
    assert pickle.loads(pickle.dumps(copies)) is copies
    with pytest.raises(pickle.PicklingError, match="held by no module attribute"):
        pickle.dumps(Table("red08c-nowhere"))
