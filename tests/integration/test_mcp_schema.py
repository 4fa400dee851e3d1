"""The MCP export passes the AWS DynamoDB MCP server's own schema checks (issue 59, contract
22 "The model says every row"), and its key templates are the keys the engine holds.

The rules below are the server's published validator, written out (not vendored) from
awslabs/mcp at commit 100b55b6d92f731bc8d23486ce9efd5bbf90c606,
``src/dynamodb-mcp-server/awslabs/dynamodb_mcp_server/repo_generation_tool/core/``:
``schema_definitions.py`` (``REQUIRED_*`` keys, ``FieldType``, ``ReturnType``,
``DynamoDBOperation``, ``ParameterType``, ``RangeCondition``, ``GSIDefinition`` /
``GSIMapping``: a key of 1 to 4 attributes as a list, PR #2520), ``schema_validator.py``
(types of each key, unique entity, field and ``pattern_id`` values, template parameters
among the entity's fields, ``index_name`` in ``gsi_list``), ``range_query_validator.py``
(a main-table range condition takes exactly 1 partition value and 1 range value, 2 for
``between``) and ``key_template_parser.py`` (``{name}`` parameters, identifiers). The
validator itself imports only the standard library: run from a fetched tree it accepted
the export of every design below (a local check, not part of the suite).
"""

from __future__ import annotations

import re
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from dynaorm.formats import export
from dynaorm.testing import TestBackend
from tests.support.designs import DESIGNS, design
from tests.support.models import account_renamed, app

_FIELD_TYPES = {"string", "integer", "decimal", "boolean", "array", "object", "uuid"}
_RETURNS = {"single_entity", "entity_list", "success_flag", "mixed_data", "void"}
_OPERATIONS = {"GetItem", "PutItem", "DeleteItem", "Query", "Scan", "UpdateItem",
               "BatchGetItem", "BatchWriteItem"}
_PARAMETERS = _FIELD_TYPES | {"entity"}
_RANGES = {"begins_with", "between", ">", "<", ">=", "<="}
_PARAM = re.compile(r"\{([^{}]*)\}")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _missing(obj: Mapping[str, Any], keys: set[str], path: str) -> list[str]:
    return [f"{path}: missing {k!r}" for k in sorted(keys - set(obj))]


def _templates(value: Any) -> list[str]:
    return [value] if isinstance(value, str) else list(value) if isinstance(value, list) else []


def _keys(value: Any) -> list[str] | None:
    """A GSI key: one attribute name or a list of 1 to 4 (else ``None``)."""
    if isinstance(value, str):
        return [value]
    ok = isinstance(value, list) and 1 <= len(value) <= 4 and all(
        isinstance(v, str) for v in value)
    return list(value) if ok else None


def mcp_errors(doc: Any) -> list[str]:
    """What the MCP server's validator refuses in ``doc`` (a ``schema.json``)."""
    if not isinstance(doc, dict) or not isinstance(doc.get("tables"), list) or not doc[
            "tables"]:
        return ["$: tables must be a non-empty array"]
    errors: list[str] = []
    entity_names: set[str] = set()
    pattern_ids: set[int] = set()
    for t, table in enumerate(doc["tables"]):
        path = f"tables[{t}]"
        errors += _missing(table, {"table_config", "entities"}, path)
        config = table.get("table_config", {})
        errors += _missing(config, {"table_name", "partition_key"}, f"{path}.table_config")
        errors += [f"{path}.table_config.{k}: not a string" for k in ("table_name",
                   "partition_key") if k in config and not isinstance(config[k], str)]
        gsis = {}
        for g, gsi in enumerate(table.get("gsi_list", [])):
            errors += _missing(gsi, {"name", "partition_key"}, f"{path}.gsi_list[{g}]")
            pk, sk = _keys(gsi.get("partition_key")), _keys(gsi.get("sort_key", "x"))
            if pk is None or sk is None:
                errors.append(f"{path}.gsi_list[{g}]: a key is a name or 1 to 4 names")
            gsis[gsi.get("name")] = gsi
        entities = table.get("entities")
        if not isinstance(entities, dict) or not entities:
            errors.append(f"{path}.entities: a non-empty object")
            continue
        for name, entity in entities.items():
            epath = f"{path}.entities.{name}"
            if name in entity_names:
                errors.append(f"{epath}: duplicate entity name")
            entity_names.add(name)
            errors += _entity_errors(entity, epath, gsis, pattern_ids)
    return errors


def _entity_errors(entity: Mapping[str, Any], path: str, gsis: Mapping[str, Any],
                   pattern_ids: set[int]) -> list[str]:
    errors = _missing(entity, {"entity_type", "pk_template", "fields"}, path)
    errors += [f"{path}.{k}: not a string" for k in ("entity_type", "pk_template",
               "sk_template") if k in entity and not isinstance(entity[k], str)]
    fields = entity.get("fields")
    if not isinstance(fields, list) or not fields:
        return [*errors, f"{path}.fields: a non-empty array"]
    names: set[str] = set()
    for i, f in enumerate(fields):
        errors += _missing(f, {"name", "type", "required"}, f"{path}.fields[{i}]")
        if f.get("name") in names:
            errors.append(f"{path}.fields[{i}]: duplicate field name {f.get('name')!r}")
        names.add(f.get("name"))
        if f.get("type") not in _FIELD_TYPES or (f.get("type") == "array" and (
                "item_type" not in f)) or not isinstance(f.get("required"), bool):
            errors.append(f"{path}.fields[{i}]: bad type, item_type or required")
    templates = [*_templates(entity.get("pk_template")), *_templates(entity.get("sk_template"))]
    for m, mapping in enumerate(entity.get("gsi_mappings", [])):
        mpath = f"{path}.gsi_mappings[{m}]"
        errors += _missing(mapping, {"name", "pk_template"}, mpath)
        gsi = gsis.get(mapping.get("name"))
        if gsi is None:
            errors.append(f"{mpath}: no GSI {mapping.get('name')!r} in gsi_list")
        elif len(_templates(mapping.get("pk_template"))) != len(_keys(gsi["partition_key"])
                                                                 or []):
            errors.append(f"{mpath}: one template per partition key attribute")
        templates += [*_templates(mapping.get("pk_template")),
                      *_templates(mapping.get("sk_template"))]
    for text in templates:
        for param in _PARAM.findall(text):
            if not _NAME.fullmatch(param) or param not in names:
                errors.append(f"{path}: template parameter {param!r} is not a field")
    for p, pattern in enumerate(entity.get("access_patterns", [])):
        errors += _pattern_errors(pattern, f"{path}.access_patterns[{p}]", gsis, pattern_ids)
    return errors


def _pattern_errors(pattern: Mapping[str, Any], path: str, gsis: Mapping[str, Any],
                    pattern_ids: set[int]) -> list[str]:
    errors = _missing(pattern, {"pattern_id", "name", "description", "operation",
                                "return_type"}, path)
    pid = pattern.get("pattern_id")
    if not isinstance(pid, int) or isinstance(pid, bool) or pid in pattern_ids:
        errors.append(f"{path}.pattern_id: not an integer, or used before ({pid!r})")
    pattern_ids.add(pid)  # type: ignore[arg-type]
    if pattern.get("operation") not in _OPERATIONS or pattern.get("return_type") not in (
            _RETURNS):
        errors.append(f"{path}: bad operation or return_type")
    params = pattern.get("parameters", [])
    for q in params:
        if not {"name", "type"} <= set(q) or q["type"] not in _PARAMETERS or (
                q["type"] == "entity" and "entity_type" not in q):
            errors.append(f"{path}.parameters: bad parameter {q!r}")
    if "index_name" in pattern and pattern["index_name"] not in gsis:
        errors.append(f"{path}.index_name: no such GSI")
    condition = pattern.get("range_condition")
    if condition is not None:
        wanted = 1 + (2 if condition == "between" else 1)
        if condition not in _RANGES or not params or (
                "index_name" not in pattern and len(params) != wanted):
            errors.append(f"{path}: range condition {condition!r} with {len(params)} "
                          "parameters")
    return errors


def test_the_checks_refuse_what_the_server_refuses() -> None:
    """The rules bite: each breakage the server's validator reports, reported here."""
    good, _ = export(design("examples.users_unique:accounts").model(), "mcp")
    assert mcp_errors(good) == []
    entities = good["tables"][0]["entities"]
    for breakage in (
            lambda e: e["access_patterns"].append(dict(e["access_patterns"][0])),
            lambda e: e.update(pk_template="X#{nobody}"),
            lambda e: e["fields"].append({"name": "n", "type": "binary", "required": True}),
            lambda e: e["access_patterns"][0].update(range_condition="begins_with"),
            lambda e: e.pop("fields")):
        doc: dict[str, Any] = {"tables": [{**good["tables"][0], "entities": {
            k: {**v, "fields": list(v["fields"]),
                "access_patterns": [dict(p) for p in v["access_patterns"]]}
            for k, v in entities.items()}}]}
        breakage(next(iter(doc["tables"][0]["entities"].values())))
        assert mcp_errors(doc), breakage


@pytest.mark.parametrize("reference", ["tests.support.models:app", *DESIGNS])
def test_the_mcp_export_of_every_design_passes_the_servers_checks(reference: str) -> None:
    doc, notes = export(design(reference).model(), "mcp")
    assert mcp_errors(doc) == []
    assert len(notes) == len(set(notes)) and all("\n" not in n for n in notes)


def _regex(template: str) -> re.Pattern[str]:
    return re.compile("".join(".+" if p.startswith("{") else re.escape(p)
                              for p in re.split(r"(\{[^{}]*\})", template)) + "$")


def test_key_templates_are_the_keys_the_engine_holds(db: TestBackend) -> None:
    """Saved twice, the account's latest copy and its guards are stored under the key
    templates of the MCP entities whose ``entity_type`` they carry; its version rows are
    the history pattern's (``v<n>_``), which no template states (said on stderr)."""
    doc, notes = export(app.model(), "mcp")
    assert mcp_errors(doc) == []
    entities = doc["tables"][0]["entities"]
    assert entities["RowsAccount"]["sk_template"] == "v0_PROFILE"
    assert entities["RowsAccount_email_guard"]["pk_template"] == "ORG#{org}#mail#{email}"
    assert any(n.startswith("mcp: RowsAccount's version rows") for n in notes)
    _, items = account_renamed(db)
    matched: dict[str, int] = {}
    versions = 0
    for item in items:
        found = [n for n, e in entities.items() if e["entity_type"] == item["_type"]
                 and _regex(e["pk_template"]).match(item["pk"])
                 and _regex(e["sk_template"]).match(item["sk"])]
        if not found and re.fullmatch(r"v\d{8}_PROFILE", item["sk"]):
            versions += 1  # (a version row: the history pattern's, v<n>_)
            continue
        assert found, item
        if len(found) > 1:
            # (entities on one table with a unique field of the same prefix share one guard
            # namespace, e.g. update_models.Player's handle: such an item matches each of
            # their guard entities, which must all be guards of the same key templates; its
            # owner_pk tells whose guard it is, by the owner entity's pk template)
            guards = [entities[n] for n in found]
            assert all(g["entity_type"] == "dynaorm:unique" and n.endswith("_guard")
                       for n, g in zip(found, guards, strict=True)), (item, found)
            assert len({(g["pk_template"], g["sk_template"]) for g in guards}) == 1, found
            found = [n for n in found if _regex(
                entities[n.rsplit("_", 2)[0]]["pk_template"]).match(item["owner_pk"])]
            assert len(found) == 1, (item, found)
        matched[found[0]] = matched.get(found[0], 0) + 1
    assert matched == {"RowsAccount": 1, "RowsAccount_username_guard": 1,
                       "RowsAccount_email_guard": 1} and versions == 2
    history = next(p for p in entities["RowsAccount"]["access_patterns"]
                   if p["name"] == "history_rows_account")
    assert "v<n>_" in history["description"]


def test_a_local_copy_of_the_servers_validator_when_there_is_one() -> None:
    """Where a fetched awslabs/mcp tree is at hand (``DYNAORM_MCP_TREE``), its own
    ``SchemaValidator`` accepts the export of every design (skipped otherwise)."""
    import os
    import tempfile
    import types

    root = os.environ.get("DYNAORM_MCP_TREE")
    if not root or not Path(root).is_dir():
        pytest.skip("no fetched awslabs/mcp tree (DYNAORM_MCP_TREE)")
    base = Path(root) / "src/dynamodb-mcp-server"
    for name in ("awslabs", "awslabs.dynamodb_mcp_server",
                 "awslabs.dynamodb_mcp_server.repo_generation_tool"):
        module = types.ModuleType(name)
        module.__path__ = [str(base / name.replace(".", "/"))]
        sys.modules.setdefault(name, module)
    from awslabs.dynamodb_mcp_server.repo_generation_tool.core.schema_validator import (
        SchemaValidator,
    )

    for reference in ["tests.support.models:app", *DESIGNS]:
        doc, _ = export(design(reference).model(), "mcp")
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
            import json

            json.dump(doc, f)
        result = SchemaValidator(strict_mode=False).validate_schema_file(f.name)
        assert result.is_valid, (reference, [e.message for e in result.errors][:3])
