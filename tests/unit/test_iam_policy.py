"""``dynaorm iam`` (contract 22): the policy of each role, evaluated (tests/support/iam_eval.py,
IAM's documented semantics: moto's enforcement checks no DynamoDB resource or condition
key) against every request each access pattern of every design sends, as ``dynaorm
explain`` plans it: the role's own are allowed, the rest denied; with ``--scope``, a
principal's requests in its own partition allowed and in another's denied; what the scope
cannot cover is named (exit 2). Every policy passes cfn-lint's IAM checks (E3510 and
friends: policy grammar, condition operators; W3037: known actions) with no error or
warning.
"""

from __future__ import annotations

import json
from typing import Annotated, Any

import pytest
from pydantic import Field

pytest.importorskip("cfnlint", reason="cfn-lint (the dev group's) is not installed")

from cfnlint.api import ManualArgs, lint
from hypothesis import given, settings
from hypothesis import strategies as st

from dynaorm import GSI, Entity, Previous, RowKind, Table, Unique, Vector, VectorIndex
from dynaorm.cli.explain import explain_patterns
from dynaorm.cli.main import main
from dynaorm.formats import iam
from dynaorm.write.render import WritePlan
from tests.support.designs import DESIGNS, design
from tests.support.examples import examples
from tests.support.iam_eval import Check, allowed, checks_of

tenants = Table("iam_tenants", indexes=[GSI("by_status", pk="gsi1pk", sk="gsi1sk")])
#: the row kind a surface registers (``dynaorm.powertools`` registers its records so)
tenants.keeps(RowKind("Powertools idempotency record", "dynaorm:idempotency", "{hashed key}",
                      writer="dynaorm.powertools.DynaormPersistenceLayer"))


class Account(Entity):
    class Meta:
        table = tenants
        pk = "TENANT#{tenant_id}#ACCOUNT#{account_id}"
        sk = "ACCOUNT"
        unique = (Unique("email", scope="TENANT#{tenant_id}"),)

    tenant_id: str
    account_id: str
    email: str


class Ticket(Entity):
    class Meta:
        table = tenants
        pk = "TENANT#{tenant_id}#TICKET#{ticket_id}"
        sk = "TICKET"
        versioned = True
        indexes = {"by_status": ("TENANT#{tenant_id}#STATUS#{status}", "{ticket_id}")}

    tenant_id: str
    ticket_id: str
    status: str = "open"


unscoped = Table("iam_mixed", vector_indexes=[VectorIndex("by_meaning", attribute="emb",
                                                          dimensions=2)])


class Shared(Entity):
    class Meta:
        table = unscoped
        pk = "SHARED#{name}"
        sk = "SHARED"

    name: str
    emb: Annotated[list[float], Vector(2)] = Field(default_factory=lambda: [0.0, 1.0])


def _keys(table: Table) -> dict[str | None, str]:
    keys: dict[str | None, str] = {None: table.pk}
    keys.update({name: table.key_attributes(name)[0] for name in table.indexes})
    return keys


def _pattern_checks(table: Table, role: str) -> list[tuple[str, Check]]:
    """Every check IAM makes for the requests of the role's patterns (read: the reads)."""
    out = []
    for pattern, found in explain_patterns(table):
        if isinstance(found, str):
            continue
        if role == "read" and pattern.operation not in iam.READS:
            continue
        for request in found.requests:
            for check in checks_of(request.operation, request.request, _keys(table)):
                out.append((f"{pattern.entity.__name__} {pattern.name}", check))
    return out


def _lint_all(policies: dict[str, dict[str, Any]]) -> dict[str, list[str]]:
    """cfn-lint's findings on each policy, by name: one template holding them all as
    resources of their own (a run of cfn-lint costs ~0.5 s of CPU whatever it holds, and
    the designs are some fifty: run once, not twice per design)."""
    template = {"Resources": {name: {"Type": "AWS::IAM::ManagedPolicy",
                                     "Properties": {"PolicyDocument": policy}}
                              for name, policy in policies.items()}}
    found: dict[str, list[str]] = {name: [] for name in policies}
    for m in lint(json.dumps(template), config=ManualArgs(regions=["us-east-1"])):
        path = list(getattr(m, "path", None) or [])
        name = path[1] if len(path) > 1 and path[0] == "Resources" else None
        found.setdefault(str(name), []).append(f"{m.rule.id} {m.message}")
    return found


def _lint(policy: dict[str, Any]) -> list[str]:
    return [f for findings in _lint_all({"Policy": policy}).values() for f in findings]


@pytest.fixture(scope="module")
def design_lint() -> dict[str, list[str]]:
    """cfn-lint's findings on the read and the write policy of every design (resource
    ``Read<n>`` / ``Write<n>``, n the design's place in DESIGNS; ``None``: a finding
    outside any resource)."""
    policies = {}
    for n, reference in enumerate(DESIGNS):
        model = design(reference).model()
        policies[f"Read{n}"] = iam.to_format(model, "read")[0]
        policies[f"Write{n}"] = iam.to_format(model, "write")[0]
    return _lint_all(policies)


def test_the_joint_lint_names_the_policy_it_faults() -> None:  # (the check can fail)
    good = iam.to_format(tenants.model(), "read")[0]
    bad = json.loads(json.dumps(good))
    bad["Statement"][0]["Effect"] = "Allw"
    found = _lint_all({"Good": good, "Bad": bad})
    assert found["Good"] == []
    assert [f.split()[0] for f in found["Bad"]] == ["E3510"], found


@pytest.mark.parametrize("reference", DESIGNS)
def test_every_request_of_the_roles_patterns_is_allowed_and_no_other(
        reference: str, design_lint: dict[str, list[str]]) -> None:
    table = design(reference)
    model = table.model()
    read, _ = iam.to_format(model, "read")
    write, _ = iam.to_format(model, "write")
    n = DESIGNS.index(reference)
    assert design_lint[f"Read{n}"] == [] and design_lint[f"Write{n}"] == []
    assert design_lint.get("None", []) == []
    for role, policy in (("read", read), ("write", write)):
        for what, check in _pattern_checks(table, role):
            assert allowed(policy, check, {}), (role, what, check)
            elsewhere = Check(check.action, check.resource.replace(
                f"table/{table.name}", "table/another-table"), check.leading)
            assert not allowed(policy, elsewhere, {}), (role, what, "another table")
    for what, check in _pattern_checks(table, "write"):
        if check.action not in iam.READS:
            assert not allowed(read, check, {}), ("read role", what, check)
    declared = {i for i in table.indexes}
    used = {c.resource.rsplit("/", 1)[-1] for _, c in _pattern_checks(table, "write")
            if "/index/" in c.resource}
    for index in declared - used:  # (an index no pattern reads)
        check = Check("Query", f"arn:aws:dynamodb:us-east-1:1:table/{table.name}/index/"
                      f"{index}", ("x",))
        assert not allowed(write, check, {}), index
    if table.vector_indexes:
        (search,) = [s for s in write["Statement"] if s["Sid"] == "SearchVectors"]
        assert search["Action"] == ["dynamodb:SearchVectors"] and "Condition" not in search


def test_a_transaction_needs_each_items_action() -> None:
    policy, _ = iam.to_format(tenants.model(), "write")
    (table,) = [s for s in policy["Statement"] if s["Sid"] == "Table"]
    assert set(table["Action"]) == {
        "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem",
        "dynamodb:ConditionCheckItem", "dynamodb:GetItem", "dynamodb:Query"}
    assert "dynamodb:TransactWriteItems" not in json.dumps(policy)  # (not an IAM action)
    read, _ = iam.to_format(tenants.model(), "read")
    assert {a for s in read["Statement"] for a in s["Action"]} == {"dynamodb:GetItem",
                                                                  "dynamodb:Query"}


@pytest.mark.parametrize("role", ["read", "write"])
def test_a_scoped_policy_holds_each_principal_to_its_own_partitions(role: str) -> None:
    policy, uncovered = iam.to_format(tenants.model(), role, scope="tenant_id")
    assert uncovered == []
    assert _lint(policy) == []
    leading = policy["Statement"][0]["Condition"]["ForAllValues:StringLike"][
        "dynamodb:LeadingKeys"]
    assert leading == ["TENANT#${aws:PrincipalTag/tenant_id}#*"] + (
        ["dynaorm:receipt#${aws:PrincipalTag/tenant_id}#*"] if role == "write" else [])
    checks = _pattern_checks(tenants, role)
    assert checks
    for what, check in checks:  # (the sample object's tenant_id is "x")
        assert allowed(policy, check, {"tenant_id": "x"}), (what, check)
        assert not allowed(policy, check, {"tenant_id": "y"}), (what, "another tenant")
        assert not allowed(policy, check, {}), (what, "no tag")
        assert not allowed(policy, check, {"tenant_id": "*"}), (what, "a wildcard tag")
    scan = Check("Scan", f"arn:aws:dynamodb:us-east-1:1:table/{tenants.name}", None)
    assert not allowed(policy, scan, {"tenant_id": "x"})
    batch = Check("GetItem", scan.resource, ("TENANT#x#ACCOUNT#1", "TENANT#y#ACCOUNT#1"))
    assert not allowed(policy, batch, {"tenant_id": "x"})  # (ForAllValues: every key)


def test_what_the_scope_cannot_cover_is_named() -> None:
    _, uncovered = iam.to_format(unscoped.model(), "read", scope="tenant_id")
    assert "Shared item: partition key 'SHARED#{name}' does not carry {tenant_id}" in (
        uncovered)
    assert any("search_shared_on_by_meaning: SearchVectors ignores dynamodb:LeadingKeys"
               in line for line in uncovered)
    from tests.support.models import app

    _, uncovered = iam.to_format(app.model(), "write", scope="org_id")
    assert "User unique guard of 'email': partition key 'email#{email}' does not carry " \
           "{org_id}" in uncovered
    assert iam.leading_key("ORG#{org_id}{user_id}", "org_id") is None  # (no separator)
    assert iam.leading_key("A$*?{org_id}?#*", "org_id") == (
        "A${$}${*}${?}${aws:PrincipalTag/org_id}${?}*")


def test_the_command_prints_the_policy_or_exits_2_naming_what_is_not_covered(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["iam", f"{__name__}:tenants", "--role", "write", "--scope", "tenant_id",
                 "--account", "123456789012", "--aws-region", "eu-west-1"]) == 0
    policy = json.loads(capsys.readouterr().out)
    assert policy["Statement"][0]["Resource"] == [
        "arn:aws:dynamodb:eu-west-1:123456789012:table/iam_tenants"]
    assert main(["iam", f"{__name__}:unscoped", "--role", "read", "--scope", "tenant_id"]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert "dynaorm iam: --scope tenant_id cannot cover Shared item: partition key " \
           "'SHARED#{name}'" in err
    with pytest.raises(SystemExit) as usage:
        main(["iam", f"{__name__}:tenants", "--role", "admin"])
    assert usage.value.code == 2


def _receipt() -> Any:
    """The receipts of a commit of one account under the key ``order-7``."""
    from dynaorm.write.save import SaveEntry

    return Account.__dynaorm_spec__.table.receipts.start(
        [SaveEntry(Account(tenant_id="t", account_id="a", email="e"))], "order-7")


def _receipt_checks(key: str) -> list[Check]:
    """What IAM checks for an idempotent commit's receipt at ``key``: the receipt's Put
    in the transaction (the action the commit sends, its key replaced by ``key``) and the
    GetItem that settles a lost answer."""
    [action] = WritePlan(tuple(_receipt().rows([]))).transaction_request("t")["TransactItems"]
    action["Put"]["Item"][tenants.pk] = {"S": key}
    arn = f"arn:aws:dynamodb:us-east-1:123456789012:table/{tenants.name}"
    return [*checks_of("TransactWriteItems", {"TransactItems": [action]}, {None: tenants.pk}),
            Check("GetItem", arn, (key,))]


def test_a_scoped_write_role_is_granted_its_own_receipts_only(
        capsys: pytest.CaptureFixture[str]) -> None:
    """A write role commits with an idempotency key (its receipt row: a Put in the
    transaction, a GetItem to settle a lost answer). Unscoped: granted. Scoped: a scoped
    session's receipt is keyed ``dynaorm:receipt#<scope value>#<digest>``, so the role is
    granted its tenant's receipts exactly: never another tenant's, never an unscoped
    session's (``dynaorm:receipt#<digest>``, which any tenant could claim first), never
    with no tag or a wildcard tag; a read role (it never commits) is granted none.
    A row kind the model lists that renders no scope (Powertools' records): named beside
    the policy, not granted."""
    digest = _receipt().hashed
    model = tenants.model()
    plain, _ = iam.to_format(model, "write")
    scoped, uncovered = iam.to_format(model, "write", scope="tenant_id")
    read, _ = iam.to_format(model, "read", scope="tenant_id")
    assert uncovered == [] and _lint(scoped) == []
    for check in _receipt_checks(f"dynaorm:receipt#{digest}"):
        assert allowed(plain, check, {}), check
    for check in _receipt_checks(f"dynaorm:receipt#x#{digest}"):
        assert allowed(scoped, check, {"tenant_id": "x"}), check
        for tag in ({"tenant_id": "y"}, {"tenant_id": "*"}, {"tenant_id": "x#"}, {}):
            assert not allowed(scoped, check, tag), (check, tag)
        assert not allowed(read, check, {"tenant_id": "x"}), check
    for other in (f"dynaorm:receipt#{digest}", f"dynaorm:receipt#y#{digest}",
                  f"dynaorm:receipt#xy#{digest}", f"dynaorm:receipt#x{digest}"):
        for check in _receipt_checks(other):
            assert not allowed(scoped, check, {"tenant_id": "x"}), check
    [note] = iam.unbound_rows(model, "write", "tenant_id")
    assert "'dynaorm:idempotency#{hashed key}'" in note and "DynaormPersistenceLayer" in note
    assert "receipt" not in note
    assert iam.unbound_rows(model, "read", "tenant_id") == []
    assert iam.unbound_rows(model, "write", None) == []
    assert main(["iam", f"{__name__}:tenants", "--role", "write", "--scope",
                 "tenant_id"]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out) == scoped and note in err


# --- principals whose tags hold any character a tag may hold
# (moved from unit/test_red_team_081_iam.py:
# The red team of issue 81: ``dynaorm iam --scope`` evaluated (``tests/support/iam_eval``,
# IAM's documented rules) for principals whose tags hold any character an AWS tag value may
# hold (letters, digits, spaces and ``_ . : / = + - @``): a principal reads a key only where
# the grammar reads that key as the principal's own tenant's, on every template the role
# reaches (a previous layout's, an index's).)

SCOPE = "tenant_id"
TAG_CHARS = "ab1 _.:/=+-@"
mixed = Table("red81_iam", indexes=[GSI("gsi1", pk="gsi1pk", sk="gsi1sk")])


class Sheet(Entity):
    class Meta:
        table = mixed
        pk = "S-{tenant_id}-{sheet_id}"
        sk = "SHEET"
        indexes = {"gsi1": ("G:{tenant_id}:{kind}", "{sheet_id}")}

    tenant_id: str
    sheet_id: str
    kind: str = "k"


class Folder(Entity):
    class Meta:
        table = mixed
        pk = "F/{tenant_id}/{folder_id}"
        sk = "FOLDER"
        previous = Previous(pk="F.{tenant_id}.{folder_id}")

    tenant_id: str
    folder_id: str


_TEXT = st.text(st.sampled_from(TAG_CHARS), min_size=1, max_size=5)


@settings(max_examples=examples(60), deadline=None)
@given(tag=_TEXT, owner=_TEXT, rest=_TEXT,
       shape=st.sampled_from(["S-{t}-{r}", "F/{t}/{r}", "F.{t}.{r}", "G:{t}:{r}"]))
def test_a_principal_reads_no_key_the_grammar_gives_another_tenant(
        tag: str, owner: str, rest: str, shape: str) -> None:
    """Any key of the table's shapes (its tenant and the rest of any text a tag may hold,
    as a raw writer or 0.7 could store it): allowed for the tag only when each template of
    that shape that parses the key gives it the tag as its tenant."""
    policy, uncovered = iam.to_format(mixed.model(), "read", scope=SCOPE)
    assert uncovered == []
    key = shape.format(t=owner, r=rest)
    index = "gsi1" if shape.startswith("G:") else None
    resource = "arn:aws:dynamodb:us-east-1:123456789012:table/red81_iam" + (
        f"/index/{index}" if index else "")
    action = "Query" if index else "GetItem"
    ok = allowed(policy, Check(action, resource, (key,)), {SCOPE: tag})
    templates = {"S-{t}-{r}": Sheet.__dynaorm_spec__.pk,  # type: ignore[attr-defined]
                 "F/{t}/{r}": Folder.__dynaorm_spec__.pk,  # type: ignore[attr-defined]
                 "F.{t}.{r}": Folder.__dynaorm_spec__.rules.before.pks[0],  # type: ignore[attr-defined]
                 "G:{t}:{r}": Sheet.__dynaorm_spec__.indexes[0].pk}  # type: ignore[attr-defined]
    parsed = templates[shape].parse_key(key)
    if ok:
        assert parsed is not None and parsed[SCOPE] == tag, (key, tag, parsed)
