"""The MCP tools' quick argument check (issue 61's get-call budget): it accepts only what
the tool's JSON Schema accepts (hypothesis, against jsonschema's own validator, over
hostile shapes: bools for numbers, extra keys, long strings, nested junk), takes the plain
calls without the full validator, and leaves the rest to it (which says why)."""

from __future__ import annotations

from typing import Any, Literal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, Field

pytest.importorskip("jsonschema", reason="jsonschema (with dynaorm[mcp]) is not installed")

from jsonschema import Draft202012Validator  # type: ignore[import-untyped]

from dynaorm import GSI, Entity, Table
from dynaorm.mcp.tools import ToolError, _quick, check_arguments, json_of, tools_of
from tests.support.examples import examples
from tests.support.tenant_models import shelf, tenants

TOOLS = {**tools_of(tenants, ["Memo", "Customer"]),
         **tools_of(shelf, [], (), lambda text: [0.0] * 4)}
NAMES = sorted(TOOLS)
KEYS = st.sampled_from(["tenant_id", "customer_id", "memo_id", "clip_id", "text", "set",
                        "item", "version", "limit", "cursor", "vector", "top", "x", "tool",
                        "arguments", "idempotency_key", "filters", "name", "email"])
SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-5, 300), st.floats(),
                    st.text(max_size=5), st.just("a" * 201), st.sampled_from(NAMES))
VALUES = st.recursive(SCALARS, lambda inner: st.one_of(
    st.lists(inner, max_size=5), st.dictionaries(KEYS, inner, max_size=6)), max_leaves=12)


#: each tool's quick check and full validator, made once (what is checked is the example)
CHECKS = {name: (_quick(tool.input_schema), Draft202012Validator(tool.input_schema))
          for name, tool in TOOLS.items()}


@settings(max_examples=examples(1500), deadline=None)
@given(st.sampled_from(NAMES), st.dictionaries(KEYS, VALUES, max_size=6))
def test_the_quick_check_accepts_only_what_the_schema_accepts(name: str,
                                                              args: dict[str, Any]) -> None:
    quick, full = CHECKS[name]
    if quick is not None and quick(args):
        assert full.is_valid(args), (name, args)


def test_plain_calls_take_the_quick_check_and_the_rest_the_full_one() -> None:
    get = TOOLS["get_customer"]
    quick = _quick(get.input_schema)
    assert quick is not None and quick({"tenant_id": "t1", "customer_id": "c1"})
    for wrong in ({"tenant_id": "t1"}, {"tenant_id": "t1", "customer_id": 5},
                  {"tenant_id": "t1", "customer_id": "c1", "x": 1}):
        assert not quick(wrong)
        with pytest.raises(ToolError, match=r"argument 'customer_id'|argument 'x'"):
            check_arguments(get, wrong)
    search = _quick(TOOLS["search_clip_on_by_tenant"].input_schema)
    assert search is not None and search({"tenant_id": "t1", "vector": [1, 0, 0.5, 0]})
    assert not search({"tenant_id": "t1", "vector": [1, 0, True, 0]})  # (a bool: no number)
    assert not search({"tenant_id": "t1", "vector": [1, 0]})
    update = _quick(TOOLS["update_memo"].input_schema)
    assert update is not None and not update({"tenant_id": "t1", "memo_id": "m",
                                              "set": {}, "version": True})


# --- red team (redio): the early initialize answer only for what the SDK takes ----------

_CAP_VALUES = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=3),
              st.just({})), lambda inner: st.one_of(
        st.lists(inner, max_size=2),
        st.dictionaries(st.sampled_from(["listChanged", "form", "context", "x", "list"]),
                        inner, max_size=2)), max_leaves=6)


@settings(max_examples=examples(600), deadline=None)
@given(st.dictionaries(st.sampled_from(["roots", "sampling", "elicitation", "experimental",
                                        "extensions", "tasks", "other"]), _CAP_VALUES,
                       max_size=3),
       st.dictionaries(st.sampled_from(["title", "icons", "websiteUrl", "description",
                                        "other"]), _CAP_VALUES, max_size=2))
def test_an_early_initialize_answer_only_for_what_the_sdk_accepts(
        caps: dict[str, Any], info: dict[str, Any]) -> None:
    import json

    import mcp_types

    from dynaorm.mcp.cli import early_answer

    line = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": caps,
        "clientInfo": {"name": "n", "version": "v", **info}}}).encode()
    if early_answer(line, "x", "s") is not None:
        msg = mcp_types.jsonrpc_message_adapter.validate_json(line, by_name=False)
        mcp_types.InitializeRequestParams.model_validate(
            json.loads(line)["params"], by_name=False)
        assert msg.id == 1  # type: ignore[union-attr]


def test_the_quick_check_leaves_other_schema_shapes_to_the_full_validator() -> None:
    """A list of types (``WithJsonSchema``, a hand-written field schema) or a boolean
    subschema made the quick check's compiler raise (TypeError, AttributeError) instead of
    leaving the schema to the full validator: every call of that tool failed."""
    assert _quick({"type": ["string", "null"]}) is None
    assert _quick({"type": "object", "properties": {"a": True}}) is None
    assert _quick({"type": "array", "items": False}) is None


# -- base64 arguments ----------------------------------------------------------------------
class _Cat(BaseModel):
    kind: Literal["cat"]
    purr: bytes


class _Dog(BaseModel):
    kind: Literal["dog"]
    bark: bytes


class _Kennel(Entity):
    class Meta:
        table = Table("mcp-args-kennel")
        pk = "KENNEL#{kennel_id}"
        sk = "KENNEL"

    kennel_id: str
    pet: _Cat | _Dog = Field(discriminator="kind")
    pets: list[_Cat | _Dog] = Field(default_factory=list)
    pair: tuple[str, bytes] = ("", b"")
    text_or_bytes: str | bytes = ""


def test_base64_arguments_are_read_as_the_entity_reads_its_json() -> None:
    """Bytes inside a discriminated union, a list of one, a tuple: decoded as the entity
    reads its JSON (``val_json_bytes="base64"``); a string a union takes as text too stays
    text; bad base64 is refused naming the field."""
    import json

    from pydantic import ValidationError

    save = tools_of(_Kennel.Meta.table, ["_Kennel"])["save__kennel"]
    item = {"kennel_id": "k", "pet": {"kind": "dog", "bark": "/w=="},
            "pets": [{"kind": "cat", "purr": "gA"}, {"kind": "dog", "bark": "AA=="}],
            "pair": ["AA==", "_-8="], "text_or_bytes": "AA=="}
    check_arguments(save, {"item": item})
    got = json_of(_Kennel).validator.validate_json(json.dumps(item))
    assert got == _Kennel(kennel_id="k", pet=_Dog(kind="dog", bark=b"\xff"),
                          pets=[_Cat(kind="cat", purr=b"\x80"), _Dog(kind="dog", bark=b"\0")],
                          pair=("AA==", b"\xff\xef"), text_or_bytes="AA==")
    with pytest.raises(ValidationError, match=r"pets\.1\._Dog\.bark\n.*base64"):
        json_of(_Kennel).validator.validate_json(json.dumps(
            {**item, "pets": [{"kind": "cat", "purr": "gA"}, {"kind": "dog", "bark": "no!"}]}))


# -- small traps (issue 81) ------------------------------------------------------------------
_traps = Table("mcp_traps", indexes=[GSI("GSI1", pk="gsi1pk", sk="gsi1sk"),
                                     GSI("ByOwner", pk="gsi2pk", sk="gsi2sk")])


class Deal(Entity):
    class Meta:
        table = _traps
        pk = "DEAL#{deal_id}"
        sk = "DEAL"
        indexes = {"GSI1": ("STAGE#{stage}", "{deal_id}"),
                   "ByOwner": ("OWNER#{owner}", "{deal_id}")}

    deal_id: str
    stage: str
    owner: str
    amount: int
    region: str


class HTTPLog(Entity):
    class Meta:
        table = _traps
        pk = "LOG#{log_id}"
        sk = "LOG"

    log_id: str


def test_an_index_or_entity_named_in_capitals_gives_a_readable_tool_name() -> None:
    """``GSI1`` was ``query_deal_on_g_s_i1``, ``HTTPLog`` ``get_h_t_t_p_log``: an acronym
    stays one word."""
    names = set(tools_of(_traps, ["Deal"]))
    assert {"query_deal_on_gsi1", "query_deal_on_by_owner", "get_http_log",
            "save_deal"} <= names
    assert not any("g_s_i" in n or "h_t_t_p" in n for n in names), names


def test_missing_arguments_are_named_once() -> None:
    """A save missing four fields said "missing required arguments ..." four times
    (jsonschema reports each name, each error naming all): said once, naming all."""
    save = tools_of(_traps, ["Deal"])["save_deal"]
    with pytest.raises(ToolError) as info:
        check_arguments(save, {"item": {"deal_id": "d1"}})
    said = str(info.value)
    assert said.count("missing required argument") == 1, said
    for name in ("stage", "owner", "amount", "region"):
        assert f"'item/{name}'" in said, said
