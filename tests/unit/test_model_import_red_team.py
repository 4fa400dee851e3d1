"""Red team of ``dynaorm model --import`` (issue 59 point 2, contract 22): a hostile file
gives a ``ModelFileError`` or code that compiles, defines without side effects and defines
the same model; it never runs what the file says."""

from __future__ import annotations

import ast
import json
import keyword
import math
import os
import re
import sys
import types
import uuid
from pathlib import Path
from typing import Any, Final

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dynaorm import ModelFileError
from dynaorm.formats import code as codegen
from dynaorm.formats import read
from dynaorm.formats._common import PURE_MODULES
from dynaorm.schema.model import _returns
from tests.support.designs import defined
from tests.support.examples import examples

_BASE: dict[str, Any] = {
    "dynaorm_model": 1, "table": {"name": "red-team", "pk": "pk", "sk": "sk"},
    "entities": [{"name": "A", "pk": "A#{a}", "sk": "A",
                  "fields": [{"name": "a", "type": "string"}]}]}


def _doc(**table: Any) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(json.dumps(_BASE))
    doc["table"].update(table)
    return doc


def _field(doc: dict[str, Any], **field: Any) -> dict[str, Any]:
    doc["entities"][0]["fields"].append({"type": "string", "required": False, **field})
    return doc


def _only_definitions(code: str) -> None:
    """``code``'s statements only import, define or assign: its docstring first, then
    imports, classes, functions, assignments of ``_d.Table(...)`` and pattern calls."""
    tree = ast.parse(code)
    first, *rest = tree.body
    assert isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
    for node in rest:
        if isinstance(node, ast.Expr):  # (a declared access pattern: table.pattern(...))
            call = node.value
            assert isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and (
                call.func.attr == "pattern"), ast.unparse(node)
        else:
            assert isinstance(node, ast.Import | ast.ImportFrom | ast.ClassDef |
                              ast.FunctionDef | ast.Assign), ast.unparse(node)


def test_a_table_name_never_closes_the_docstring_and_runs_code(tmp_path: Path) -> None:
    """0.7 draft: a table name holding triple quotes ended the module's docstring, and
    what followed ran when ``--import`` defined the code to check it."""
    marker = tmp_path / "pwned"
    name = f'x"""; import os; os.system("touch {marker}"); """'
    with pytest.raises(ModelFileError):  # (no DynamoDB table has that name)
        codegen.import_code(json.dumps(_doc(name=name)))
    assert not marker.exists()
    code = codegen.code_of([_doc(name=name)], check=True)
    compile(code, "<code>", "exec")
    assert name in str(ast.get_docstring(ast.parse(code)))
    _only_definitions(code)


def test_a_named_function_called_todo_is_not_replaced_by_the_stub() -> None:
    """0.7 draft: ``mod:todo`` was imported as ``_todo``, the name of the stub a lambda
    gets, so the stub replaced the named function."""
    doc = _field(_field(json.loads(json.dumps(_BASE)), name="x",
                        default_factory="myapp.ids:todo"), name="y", default_factory="<lambda>")
    code = codegen.import_code(json.dumps(doc))
    assert "import todo as _todo\n" not in code, code
    assert "from myapp.ids import todo as _myapp_ids_todo" in code


# -- the property: any document is a ModelFileError or code that defines the same model ------
#: text that, run anywhere (a docstring closed, an f-string, an expression), writes the
#: file ``pwned`` in the working directory: the property's sentinel
_RUNS: Final = ("open('pwned', 'w')", '""";open("pwned","w");"""',
                "''';open('pwned','w');'''", "{open('pwned','w')}",
                "\\n__import__('pathlib').Path('pwned').touch()#")
_HOSTILE_TEXT = st.sampled_from([*_RUNS,
    'a"""b', "a'''b", "a\nb", "a\\", "\\", '"', "'", "a\x00b", "\u0391\u0392", "\U0001d5ba",
    "__import__('os').system('x')", "{a}", "a#b", "", " ", "\u2028", "\r"]) | st.text(
    max_size=12)
_NAMES = st.sampled_from([
    "a", "b", "A", "Entity", "Table", "Field", "BaseModel", "Meta", "date", "datetime", "str",
    "int", "float", "list", "dict", "set", "bytes", "bool", "type", "object", "None", "True",
    "class", "def", "lambda", "import", "match", "_", "__class__", "__init__", "__dict__",
    "_d", "_p", "_t", "_dt", "_b", "_dec", "_uuid", "_todo", "_system", "model_config",
    "model_dump", "save", "delete", "copy", "json", "schema", "fields", "pk", "sk", "Order",
    "order", "red_team", "Ord\u0435r"])
_NAMES = _NAMES.filter(lambda n: not keyword.iskeyword(n))
_FUNCTIONS = st.sampled_from([
    "<lambda>", "builtins:str", "str", "uuid:uuid4", "operator:methodcaller('lower')",
    "operator:methodcaller('__class__')", "operator:attrgetter('__globals__')",
    "operator:itemgetter(0)", "operator:methodcaller('replace', 'a', 'b')",
    "operator:todo", "os:system", "exec", "eval", "breakpoint", "os:environ.clear",
    "operator:methodcaller(__import__('os'))", "operator:methodcaller('a', str('x'))",
    "operator:attrgetter('a').__call__", "<lambda>; import os", "a:b\nimport os",
    "colorsys:rgb_to_hsv", "builtins:eval", "builtins:open", "io:open", "pathlib:Path.touch",
    "subprocess:run", "importlib:import_module", "getattr", "type", "str.__class__",
    "operator:methodcaller('__init_subclass__')", "operator:attrgetter('__globals__')",
    "operator:methodcaller('replace', '_', '')", "str.lower", "uuid:nope", "antigravity:fly",
    "myapp.__builtins__:eval", "myapp.ids:new_id", "dynaorm.ksuid:ksuid"])
_FLOATS = st.floats(allow_nan=True, allow_infinity=True)
_VALUES = st.recursive(st.none() | st.booleans() | st.integers(-2**70, 2**70) | _FLOATS
                       | _HOSTILE_TEXT,
                       lambda inner: st.lists(inner, max_size=3)
                       | st.dictionaries(_HOSTILE_TEXT, inner, max_size=3), max_leaves=8)
_SCALAR_TYPES = st.sampled_from(["string", "integer", "number", "decimal", "boolean",
                                 "binary", "datetime", "date", "uuid", "any"])


@st.composite
def _types(draw: st.DrawFn, depth: int = 0) -> dict[str, Any]:
    kind = draw(st.sampled_from(["scalar"] * 4 + (
        ["list", "set", "map", "enum", "union", "object"] if depth < 2 else [])))
    if kind == "scalar":
        return {"type": draw(_SCALAR_TYPES)}
    if kind in ("list", "set"):
        return {"type": kind, "items": draw(_types(depth + 1))}
    if kind == "map":
        return {"type": kind, "values": draw(_types(depth + 1))}
    if kind == "enum":
        return {"type": kind, "values": draw(st.lists(
            st.integers(-5, 5) | _HOSTILE_TEXT | _FLOATS | st.booleans(), min_size=1,
            max_size=3))}
    if kind == "union":
        return {"type": kind, "of": draw(st.lists(_types(depth + 1), min_size=2, max_size=2))}
    return {"type": "object", "model": draw(_NAMES),
            "fields": draw(st.lists(_fields(depth + 1), max_size=2))}


@st.composite
def _fields(draw: st.DrawFn, depth: int = 0) -> dict[str, Any]:
    out: dict[str, Any] = {"name": draw(_NAMES), **draw(_types(depth))}
    if draw(st.booleans()):
        out["stored"] = draw(_HOSTILE_TEXT)
    if draw(st.booleans()):
        out["required"] = False
        choice = draw(st.sampled_from(["default", "factory", "none"]))
        if choice == "default":
            out["default"] = draw(_VALUES)
        elif choice == "factory":
            out["default_factory"] = draw(_FUNCTIONS)
    out["nullable"] = draw(st.booleans())
    return out


@st.composite
def _documents(draw: st.DrawFn) -> dict[str, Any]:
    entities = []
    for _ in range(draw(st.integers(1, 2))):
        fields = [{"name": "a", "type": "string"}, *draw(st.lists(_fields(), max_size=4))]
        entity: dict[str, Any] = {
            "name": draw(_NAMES), "pk": draw(st.sampled_from(["A#{a}", "{a}", "X"])),
            "sk": draw(st.sampled_from([None, "S", "S#{a}"])), "fields": fields}
        if draw(st.booleans()):
            entity["type_name"] = draw(_HOSTILE_TEXT)
        if draw(st.booleans()):
            entity["unique"] = [{"field": "a", "normalize": draw(_FUNCTIONS),
                                 "prefix": draw(_HOSTILE_TEXT)}]
        if draw(st.booleans()):
            entity["patterns"] = "declared"
            entity["access_patterns"] = [{
                "name": draw(_NAMES), "operation": "GetItem",
                "description": draw(_HOSTILE_TEXT),
                "parameters": [{"name": draw(_HOSTILE_TEXT), "type": draw(_HOSTILE_TEXT)}]}]
        entities.append(entity)
    table = {"name": draw(st.sampled_from(["red-team", "str", "int", "order", "Order",
                                           "entity", "a.b-c"]) | _HOSTILE_TEXT),
             "pk": draw(st.sampled_from(["pk", "PK"]) | _HOSTILE_TEXT), "sk": "sk"}
    return {"dynaorm_model": 1, "table": table, "entities": entities}


#: the modules code --import prints may import (a file's ``module:name`` adds its module)
_ALLOWED = ("dynaorm", "pydantic", "pydantic_core", "typing", "datetime", "decimal", "uuid",
            "builtins", "operator", "annotated_types", *PURE_MODULES)


def _new_id() -> str:
    """The application's function a file may name (``myapp.ids:new_id``): stood in for."""
    return str(uuid.uuid4())


_new_id.__module__, _new_id.__qualname__ = "myapp.ids", "new_id"


def _comparable(model: dict[str, Any]) -> Any:
    """A model read back as the reader gives it, without places."""
    (table,) = read(json.dumps(model))
    for e in table["entities"]:
        e.pop("_place", None)
        e["name"] = codegen.identifier(e["name"])  # (a keyword, or a leading _: renamed)
        if e["patterns"] == "derived":  # (recomputed from the keys: not the file's)
            e.pop("access_patterns")
        for p in e.get("access_patterns", ()):  # (none given: the operation's, as code says)
            p["returns"] = p["returns"] or _returns(p["operation"])
    _as_json_defaults(table["entities"])
    return json.loads(json.dumps(table, default=str).replace("NaN", '"nan"'))


def _as_json_defaults(value: Any) -> None:
    """Each field's ``default_repr`` (a Python literal the model gives for a default JSON
    holds too, a dict or a list of lists) as its ``default``: the same value."""
    if isinstance(value, dict):
        if "default_repr" in value:
            value["default"] = ast.literal_eval(value.pop("default_repr"))
        for v in value.values():
            _as_json_defaults(v)
    elif isinstance(value, list):
        for v in value:
            _as_json_defaults(v)


@settings(max_examples=examples(int(os.environ.get("DYNAORM_RED_TEAM_EXAMPLES", "300"))),
          derandomize=True, deadline=5000, suppress_health_check=list(HealthCheck))
@given(doc=_documents())
def test_any_model_document_is_refused_or_defines_the_same_model_without_side_effects(
        doc: dict[str, Any], tmp_path_factory: pytest.TempPathFactory) -> None:
    """0.7 draft: the model differed (two classes of one name, a union or enum repeating
    a member, empty names, an optional field's default), and an entity named ``model_x``
    hung ``identifier`` (``model_x_``, ``model_x__``...: each still a ``model_`` name).
    Every document is now refused or imported within the deadline (5 s, most take ms),
    and importing never runs what it says: nothing is written, nothing imported but the
    standard modules of values (:data:`_RUNS` writes a sentinel file if ever run)."""
    text = json.dumps(doc)
    where = tmp_path_factory.mktemp("import")
    before, cwd = set(sys.modules), Path.cwd()
    os.chdir(where)
    try:
        try:
            code = codegen.import_code(text)
        except ModelFileError as exc:
            assert exc.place.startswith(("$", "line ")), exc.place
            assert list(where.iterdir()) == [], "refusing the file ran code"
            assert {m.split(".")[0] for m in set(sys.modules) - before} <= {*_ALLOWED}
            return
        assert list(where.iterdir()) == [], "importing the file ran code"
        assert {m.split(".")[0] for m in set(sys.modules) - before} <= {*_ALLOWED}, (
            "--import imported what the file names", set(sys.modules) - before)
        compile(code, "<code>", "exec")
        _only_definitions(code)
        named = {f.partition(":")[0] for f in re.findall(r"[\w.]+:[\w.]+", text)}
        app = {m: types.ModuleType(m) for m in ("myapp", "myapp.ids")}
        app["myapp.ids"].new_id = _new_id  # type: ignore[attr-defined]
        sys.modules.update(app)  # (the application module a file may name: stood in for)
        try:
            (table,) = defined(code)
        finally:
            del sys.modules["myapp"], sys.modules["myapp.ids"]
        new = {m.split(".")[0] for m in set(sys.modules) - before}
        assert new <= {*_ALLOWED, *(n.split(".")[0] for n in named)}, new
        assert list(where.iterdir()) == [], "defining the code wrote files"
        assert _comparable(table.model()) == _comparable(doc), code
    finally:
        os.chdir(cwd)



@pytest.mark.parametrize("fields", [["a"], ["Meta"], ["_p"], ["model_config"]])
def test_a_field_no_class_can_hold_is_refused_never_silently_dropped(fields: list[str]) -> None:
    """0.7 draft: a field named twice kept the last; ``Meta`` dropped the entity; ``_p``
    became a private attribute (the code defined another model)."""
    doc = json.loads(json.dumps(_BASE))
    for name in fields:
        _field(doc, name=name)
    with pytest.raises(ModelFileError) as err:
        codegen.import_code(json.dumps(doc))
    assert err.value.place == "$.entities[0].fields[1]" + (".name" if fields != ["a"] else "")


def _same(doc: dict[str, Any]) -> Any:
    """``doc`` imports as code defining the model it says; the table it defines."""
    (table,) = defined(codegen.import_code(json.dumps(doc)))
    assert _comparable(table.model()) == _comparable(doc)
    return table


@pytest.mark.parametrize("name", ["str", "addr", "Addr", "float", "red_team", "set", "dict"])
def test_a_table_named_like_a_builtin_or_a_class_imports(name: str) -> None:
    """0.7 draft: the table's variable was its lowercased name: a table named ``str`` (a
    valid DynamoDB name) rebound ``str`` and the design was refused; one named like a
    nested model (``addr`` beside ``class addr``) replaced it."""
    doc = _doc(name=name)
    _field(doc, name="x", type="object", model="addr",
           fields=[{"name": "street", "type": "string"}])
    _field(doc, name="y", type="object", model="Addr", fields=[{"name": "z", "type": "integer"}])
    _field(doc, name="s", type="string", default="text")
    _same(doc)


def test_a_nan_inside_a_default_imports() -> None:
    """0.7 draft: a NaN or infinity inside a list or an object was written as ``nan``,
    ``inf``: a NameError, so the design was refused."""
    doc = _field(json.loads(json.dumps(_BASE)), name="x", type="any",
                 default=[math.nan, {"k": -math.inf}, [math.inf]])
    table = _same(doc)
    (entity,) = table.entities.values()
    x = entity.model_fields["x"].default
    assert math.isnan(x[0]) and x[1] == {"k": -math.inf} and x[2] == [math.inf]


def test_an_entity_named_model_something_imports_at_once() -> None:
    """0.7 draft: ``identifier('model_config')`` added ``_`` while the name started with
    ``model_``: forever (the property's hang at 300 examples)."""
    doc = json.loads(json.dumps(_BASE))
    doc["entities"][0]["name"] = "model_config"
    assert codegen.identifier("model_config") == "fmodel_config"
    _same(doc)


def _twice(d: dict[str, Any]) -> None:
    d["entities"].append(json.loads(json.dumps(d["entities"][0])))


@pytest.mark.parametrize(("change", "place"), [
    (_twice, "$"),
    (lambda d: _field(d, name="x", type="object", model="A", fields=[]), "$"),
    (lambda d: _field(_field(d, name="x", type="object", model="N", fields=[]), name="y",
                      type="object", model="N", fields=[{"name": "q", "type": "string"}]), "$"),
    (lambda d: _field(d, name="x", type="union", of=[{"type": "number"}] * 2),
     "$.entities[0].fields[1].of"),
    (lambda d: _field(d, name="x", type="enum", values=[1, 1]),
     "$.entities[0].fields[1].values"),
    (lambda d: _field(d, name="x", stored=""), "$.entities[0].fields[1].stored"),
    (lambda d: d["entities"][0].update(type_name=""), "$.entities[0].type_name"),
    (lambda d: d["entities"][0].update(unique=[{"field": "a", "prefix": ""}]),
     "$.entities[0].unique[0].prefix"),
], ids=["entity-twice", "entity-and-nested", "nested-two-shapes", "union-repeats",
        "enum-repeats", "empty-alias", "empty-type-name", "empty-prefix"])
def test_what_code_would_define_otherwise_is_refused(change: Any, place: str) -> None:
    """0.7 draft: each of these imported as code defining another model (a second class of
    a name renamed ``A_``; ``float | float`` is ``float``; ``Literal[1, 1]`` is
    ``Literal[1]``; an empty alias, type name or prefix is the default one)."""
    doc = json.loads(json.dumps(_BASE))
    change(doc)
    with pytest.raises(ModelFileError, match=r"named|once|never empty") as err:
        codegen.import_code(json.dumps(doc))
    assert err.value.place.startswith(place)


def test_an_optional_field_without_a_default_defaults_to_none() -> None:
    _same(_field(json.loads(json.dumps(_BASE)), name="x"))


# -- what a file may name as a function (issue 59: "a hostile file can still name eval") ----
_REFUSED = ["eval", "builtins:eval", "exec", "open", "getattr", "type", "breakpoint",
            "os:system", "posix:system", "subprocess:run", "importlib:import_module",
            "antigravity:fly", "pathlib:Path.touch", "str.__class__", "uuid:nope",
            "myapp:__builtins__", "myapp.__init__:x", "operator:methodcaller('__class__')",
            "operator:attrgetter('a.__globals__')", "operator:attrgetter('_x')"]
_TAKEN = {"str.lower": "normalize=str.lower", "builtins:str": "normalize=str",
          "uuid:uuid4": "from uuid import uuid4 as _uuid4",
          "operator:methodcaller('replace', '_', '')": "methodcaller('replace', '_', '')",
          "myapp.ids:new_id": "from myapp.ids import new_id as _new_id",
          "dynaorm.ksuid:ksuid": "from dynaorm.ksuid import ksuid as _ksuid"}


@pytest.mark.parametrize(("name", "where"), [
    (name, where) for name in _REFUSED for where in ("normalize", "default_factory", "by")
    if where != "by" or ":" in name])  # (a bare name a shard is chosen by is a field's)
def test_a_function_that_reaches_beyond_values_is_refused(name: str, where: str) -> None:
    """0.7 draft: ``"normalize": "eval"`` printed ``normalize=eval``: code that evals every
    value saved. Only what dynaorm's own model names is taken: builtins of values and their
    public methods, ``operator``'s getters of public names, the standard library's modules
    of values (:data:`~dynaorm.formats._common.PURE_MODULES`, found there) and modules
    outside the standard library (the application's: written as named, never imported)."""
    doc = json.loads(json.dumps(_BASE))
    entity, place = doc["entities"][0], "$.entities[0]."
    if where == "normalize":
        entity["unique"], place = [{"field": "a", "normalize": name}], place + "unique[0].normalize"
    elif where == "by":
        entity["shards"] = {"pk": {"count": 2, "by": name}}
        entity["pk"], place = "A#{a}#{shard}", place + "shards.pk.by"
    else:
        _field(doc, name="x", default_factory=name)
        place += "fields[1].default_factory"
    before = set(sys.modules)
    with pytest.raises(ModelFileError) as err:
        codegen.import_code(json.dumps(doc))
    assert err.value.place == place, err.value
    assert not {m for m in set(sys.modules) - before if m.split(".")[0] not in _ALLOWED}


@pytest.mark.parametrize(("name", "line"), _TAKEN.items())
def test_a_function_of_values_is_written_as_named_and_not_imported(name: str, line: str) -> None:
    doc = json.loads(json.dumps(_BASE))
    doc["entities"][0]["unique"] = [{"field": "a", "normalize": name}]
    before = set(sys.modules)
    code = codegen.import_code(json.dumps(doc))
    assert line in code, code
    assert "myapp" not in sys.modules and not {
        m for m in set(sys.modules) - before if m.split(".")[0] not in _ALLOWED}


@pytest.mark.parametrize("statement", [
    "import os as _d", "from os import system", "_b.eval('1')", "open('pwned', 'w')",
    "x = (1).__class__", "def f(): pass", "print('x')", "t = _d.Table('t'); t.save()",
    "x = [y for y in ()]", "x = __import__('os')", "x = _dt.__builtins__",
    "class A(_p.BaseModel):\n    x: int = open('pwned', 'w')"])
def test_the_check_defines_only_definitions(statement: str, tmp_path: Path) -> None:
    """The check behind ``--import`` defines the code it wrote (to see dynaorm take the
    design): before that, the code's syntax tree must hold only what the writer writes
    (imports of its aliases, classes, assignments, ``table.pattern`` calls, naming only
    its aliases, what it defines and the builtin types), and it is defined with no other
    builtins. Code the writer might one day get wrong is refused, never run."""
    code = f'"""doc"""\nimport dynaorm as _d\nimport pydantic as _p\n{statement}\n'
    cwd = Path.cwd()
    os.chdir(tmp_path)
    try:
        with pytest.raises(ModelFileError, match="would run"):
            codegen._define(code)
    finally:
        os.chdir(cwd)
    assert list(tmp_path.iterdir()) == []


def test_the_check_has_no_builtins_but_the_types_it_names(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Even code the tree check let through reaches no builtin that runs code."""
    monkeypatch.setattr(codegen, "_only_definitions", lambda tree: None)
    with pytest.raises(ModelFileError, match="name 'print' is not defined"):
        codegen._define('"""doc"""\nimport dynaorm as _d\nt = _d.Table(str(print))\n')


def test_the_command_refuses_a_file_naming_eval_with_exit_2(tmp_path: Path) -> None:
    """``dynaorm model --import`` of a file whose unique rule normalizes with ``eval``: no
    code printed (0.7 draft: ``normalize=eval``), one line naming the place, exit 2."""
    import subprocess

    doc = json.loads(json.dumps(_BASE))
    doc["entities"][0]["unique"] = [{"field": "a", "normalize": "builtins:eval"}]
    (tmp_path / "hostile.json").write_text(json.dumps(doc))
    root = Path(__file__).resolve().parents[2]
    result = subprocess.run(
        [sys.executable, "-m", "dynaorm", "model", "--import", "hostile.json"], cwd=tmp_path,
        capture_output=True, text=True, timeout=120,
        env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin"})
    assert result.returncode == 2 and result.stdout == "", result
    assert result.stderr == ("dynaorm model: error: $.entities[0].unique[0].normalize: 'eval' "
                             "is not a builtin dynaorm takes (a type or function of values), "
                             "got 'builtins:eval'\n")
