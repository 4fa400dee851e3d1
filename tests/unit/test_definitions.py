"""Definitions, checked when they are made, with no engine: a Table's CreateTable
definition (contract section 1) and the refusals of a bad Table or entity ``Meta``
(contract section 10). Creating and deleting tables on the engines is in
tests/integration/test_table.py."""

from __future__ import annotations

import dataclasses
import re
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
