"""Issue 59, point 2 (contract 22, "The model says every row"): the model and the code
``dynaorm model --import`` prints tell the truth. A lambda default factory is a stub that
raises until written, never a value frozen at export; names in the code are qualified so no
design name shadows them; a file naming something that is not a function never becomes
code; ``operator`` normalizers import back; any odd file is a ``ModelFileError`` naming
the place (``dynaorm model --import`` exits 2), never a Python error."""

from __future__ import annotations

import json
import operator
import subprocess
import sys
from datetime import date
from pathlib import Path
from typing import Any
from uuid import uuid4

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import Field

import dynaorm
from dynaorm import ModelFileError, Table, Unique
from dynaorm.formats import code as codegen
from dynaorm.formats import read
from tests.support.designs import defined, design
from tests.support.examples import examples

_ROOT = Path(__file__).resolve().parents[2]


def _import(model: dict[str, Any]) -> tuple[str, Table]:
    code = codegen.import_code(json.dumps(model))
    (table,) = defined(code)
    return code, table


def test_a_lambda_default_factory_is_a_stub_that_raises_never_a_frozen_value() -> None:
    class Order(dynaorm.Entity):
        class Meta:
            table = Table("truth-lambda", sk=None)
            pk = "ORDER#{order_id}"

        order_id: str = Field(default_factory=lambda: uuid4().hex)

    model = Order.__dynaorm_spec__.table.model()
    (field,) = model["entities"][0]["fields"]
    assert field["default_factory"] == "<lambda>" and "default" not in field  # (0.6: a hex)
    code, imported = _import(model)
    assert "order_id: str = _p.Field(default_factory=lambda *args: _todo())" in code
    (cls,) = imported.entities.values()
    with pytest.raises(NotImplementedError, match="write it"):
        cls()  # (two objects never share an id frozen at export)
    assert cls(order_id="o1").order_id == "o1"
    assert imported.model()["entities"][0]["fields"] == [field]


def _field(name: str, kind: str, **more: Any) -> dict[str, Any]:
    return {"name": name, "stored": name, "type": kind, "required": True, "nullable": False,
            **more}


def test_design_names_never_shadow_what_the_code_imports() -> None:
    """An entity called ``Entity`` beside another, a nested model ``Field``, fields
    ``date``, ``str`` and ``list``: the code names dynaorm's, pydantic's, the standard
    library's and the builtins' qualified, so each means what the model says."""
    nested = {"type": "object", "model": "Field", "fields": [_field("note", "string")]}
    entity = {"name": "Entity", "type_name": "Entity", "pk": "E#{ident}", "sk": None,
              "fields": [
                  _field("ident", "string"),
                  _field("date", "date", required=False, nullable=True, default=None),
                  _field("when", "date", required=False, default="2024-01-02"),
                  _field("str", "string", required=False, default="x"),
                  _field("list", "list", items={"type": "string"}, required=False,
                         default=["a"]),
                  {**_field("field", "object", required=False, nullable=True, default=None),
                   **nested}]}
    other = {"name": "Other", "type_name": "Other", "pk": "O#{ident}", "sk": None,
             "fields": [_field("ident", "string"), {**_field("inner", "object"), **nested}]}
    model = {"dynaorm_model": 1, "table": {"name": "truth-shadow", "pk": "pk", "sk": None},
             "entities": [entity, other]}
    code, imported = _import(model)
    assert "import dynaorm as _d" in code and "class Entity(_d.Entity):" in code
    assert "class Other(_d.Entity):" in code and "class Field(_p.BaseModel):" in code
    assert "when: _dt.date = _dt.date.fromisoformat('2024-01-02')" in code
    assert "list: _b.list[_b.str] = ['a']" in code  # (fields named as builtins)
    ent, oth = imported.entities.values()
    assert oth.__mro__[1] is dynaorm.Entity and ent.__mro__[1] is dynaorm.Entity
    made = ent(ident="i", field={"note": "n"})
    assert made.when == date(2024, 1, 2) and made.list == ["a"] and made.str == "x"
    assert ent(ident="j").list is not made.list  # (a mutable default copied per object)
    assert oth(ident="o", inner={"note": "n"}).inner.note == "n"
    again = imported.model()["entities"]
    assert [[{k: v for k, v in f.items()} for f in e["fields"]] for e in again] == [
        e["fields"] for e in model["entities"]]


_MODEL: dict[str, Any] = {"dynaorm_model": 1, "table": {"name": "tbl", "pk": "pk", "sk": "sk"},
                          "entities": [{"name": "A", "pk": "A#{a}", "sk": "A", "fields": [
                              {"name": "a", "type": "string"}]}]}


def _with(**field: Any) -> dict[str, Any]:
    doc = json.loads(json.dumps(_MODEL))
    doc["entities"][0]["fields"].append({"name": "x", "type": "string", "required": False,
                                         **field})
    return doc


@pytest.mark.parametrize("name", ["<lambda>; import os", "<lambda>\nimport os", "os:system(1)",
                                  "operator:methodcaller(__import__('os'))", "a:b; c"])
def test_a_factory_that_is_not_a_function_name_never_becomes_code(name: str) -> None:
    with pytest.raises(ModelFileError) as err:
        codegen.import_code(json.dumps(_with(default_factory=name)))
    assert err.value.place == "$.entities[0].fields[1].default_factory"
    # the code writer refuses it too (a model handed to it directly): a stub, never the text
    code = codegen.code_of([{**_MODEL, "entities": [
        {**_MODEL["entities"][0], "fields": [*_MODEL["entities"][0]["fields"], {
            "name": "x", "type": "string", "required": False, "default_factory": name}]}]}])
    compile(code, "<code>", "exec")
    assert "import os" not in code and "system" not in code and "lambda *args: _todo()" in code


def test_operator_normalizers_import_back_and_still_normalize() -> None:
    class Member(dynaorm.Entity):
        class Meta:
            table = Table("truth-operator", sk=None)
            pk = "M#{ident}"
            unique = (Unique("email", normalize=operator.methodcaller("lower")),
                      Unique("nick", normalize=operator.methodcaller("replace", " ", "")))

        ident: str
        email: str
        nick: str

    model = Member.__dynaorm_spec__.table.model()
    rules = model["entities"][0]["unique"]
    assert [r["normalize"] for r in rules] == ["operator:methodcaller('lower')",
                                               "operator:methodcaller('replace', ' ', '')"]
    code, imported = _import(model)
    assert "from operator import methodcaller as _methodcaller" in code
    assert imported.model()["entities"][0]["unique"] == rules
    (cls,) = imported.entities.values()
    normalize = [r.normalize for r in cls.__dynaorm_spec__.uniques]
    assert [n("A B") for n in normalize if n is not None] == ["a b", "AB"]


_DEEP: Any = [0]
for _ in range(300):
    _DEEP = [_DEEP]
#: the four odd files 0.6 answered with a Python error (exit 1), and their places
ODD: dict[str, tuple[str, str]] = {
    "a number too long for Python (ValueError)": (
        json.dumps(_MODEL).replace('"dynaorm_model": 1', '"dynaorm_model": 1' + "0" * 5000),
        "$"),
    "nesting too deep (RecursionError)": ("[" * 100_000 + "]" * 100_000, "$"),
    "a set's default of lists (TypeError)": (json.dumps(_with(
        type="set", items={"type": "string"}, default=[[1]])), "$.entities[0].fields[1]"),
    "a default nested past Python's parser (SyntaxError)": (json.dumps(_with(
        type="list", items={"type": "any"}, default=_DEEP)), "$"),
}


@pytest.mark.parametrize("what", list(ODD))
def test_an_odd_file_is_a_model_file_error_naming_the_place(what: str) -> None:
    text, place = ODD[what]
    with pytest.raises(ModelFileError) as err:
        codegen.import_code(text)
    assert err.value.place == place


def _cli(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "dynaorm", "model", *args], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120,
                          env={"PYTHONPATH": str(_ROOT), "PATH": "/usr/bin:/bin"})


def test_dynaorm_model_import_of_odd_files_exits_2_with_one_line(tmp_path: Path) -> None:
    files = {f"odd{i}.json": text.encode() for i, (text, _) in enumerate(ODD.values())}
    files["binary.json"] = b"\xff\xfe{"  # (not UTF-8: 0.6 raised UnicodeDecodeError)
    files["template.json"] = json.dumps({**_MODEL, "entities": [
        {**_MODEL["entities"][0], "pk": "A#{a"}]}).encode()
    for name, data in files.items():
        (tmp_path / name).write_bytes(data)
        result = _cli(tmp_path, "--import", name)
        assert result.returncode == 2 and result.stdout == "", (name, result.stderr)
        assert result.stderr.startswith("dynaorm model: error: ") and (
            result.stderr.count("\n") == 1), (name, result.stderr)
    # the place of a bad key template is said once (0.6: "$.entities[0].pk: $.entities[0].pk")
    assert result.stderr == ("dynaorm model: error: $.entities[0].pk: malformed key template "
                             "'A#{a': expected '}' before end of string\n")
    assert read(json.dumps(_MODEL))[0]["entities"][0]["pk"] == "A#{a}"


def test_mcp_guards_and_multi_attribute_keys_read_back_and_odd_ones_are_refused() -> None:
    """A guard entity of the MCP format is the unique rule of the entity it names; a
    multi-attribute GSI key is a list; a guard entity naming no entity is refused at its
    place."""
    from dynaorm.formats import export

    doc, _ = export(design("examples.users_unique:accounts").model(), "mcp")
    (table,) = read(json.dumps(doc), "mcp")
    rules = {e["name"]: [u["field"] for u in e.get("unique", ())] for e in table["entities"]}
    assert any(rules.values()) and all(not n.endswith("_guard") for n in rules)
    native, _ = export(design("tests.integration.test_native_index:native").model(), "mcp")
    by_place = native["tables"][0]["gsi_list"][0]
    assert by_place["partition_key"] == ["tenant_id", "place"]  # (0.6: left out)
    entities = doc["tables"][0]["entities"]
    guard = next(n for n in entities if n.endswith("_guard"))
    entities[f"Nobody_{guard.split('_', 1)[1]}"] = entities.pop(guard)
    with pytest.raises(ModelFileError) as err:
        read(json.dumps(doc), "mcp")
    assert err.value.place.startswith("$.tables[0].entities.Nobody_")


_JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
                     lambda inner: st.lists(inner, max_size=4)
                     | st.dictionaries(st.text(max_size=8), inner, max_size=4), max_leaves=30)


@settings(max_examples=examples(200), deadline=None)
@given(doc=_JSON, fmt=st.sampled_from(["json", "workbench", "mcp"]), at=st.sampled_from(
    ["", "entities", "tables", "DataModel", "table"]))
def test_any_json_imports_or_is_a_model_file_error(doc: Any, fmt: str, at: str) -> None:
    """Whatever JSON a file holds (at the top, or where a format looks first), the import
    gives code that compiles or a ``ModelFileError``: never another Python error."""
    text = json.dumps({**_MODEL, at: doc} if at else doc)
    try:
        code = codegen.import_code(text, fmt)
    except ModelFileError as exc:
        assert exc.place.startswith(("$", "line ", "byte "))
    else:
        compile(code, "<code>", "exec")
