"""Red team of ``dynaorm model --import`` (issue 59 point 2, contract 22): a hostile file
gives a ``ModelFileError`` or code that compiles, defines without side effects and defines
the same model; it never runs what the file says."""

from __future__ import annotations

import ast
import json
from pathlib import Path
from typing import Any

import pytest

from dynaorm import ModelFileError
from dynaorm.formats import code as codegen

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
                        default_factory="operator:todo"), name="y", default_factory="<lambda>")
    code = codegen.import_code(json.dumps(doc))
    assert "import todo as _todo\n" not in code, code
    assert "from operator import todo as _operator_todo" in code
