"""``dynaorm iam --scope`` rests on the key grammar (contract 23, issue 68): each
``dynamodb:LeadingKeys`` pattern is the template's proven prefix
(``KeyTemplate.scope_prefix``), so a tenant's pattern matches every key of that tenant and
no key of another, whatever the separators; a template the grammar cannot prove, or two
templates whose literal starts could let one tenant's pattern reach another's keys, is
named and the command exits 2 with no policy. The patterns are evaluated with
``tests/support/iam_eval.string_like`` (IAM's StringLike, written from its documented
rules)."""

from __future__ import annotations

import itertools
import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dynaorm import Entity, KeyTemplateError, Table
from dynaorm.cli.main import main
from dynaorm.formats import iam
from tests.support.examples import examples
from tests.support.iam_eval import Check, allowed, string_like

SCOPE = "tenant_id"
TAG = "${aws:PrincipalTag/tenant_id}"

# -- the defect of 0.7: 'T-{tenant_id}-{doc_id}' --------------------------------------------
dashed = Table("iam_grammar_dashed")


class Doc(Entity):
    class Meta:
        table = dashed
        pk = "T-{tenant_id}-{doc_id}"
        sk = "DOC"

    tenant_id: str
    doc_id: str


def _leading(policy: dict[str, Any], sid: str = "Table") -> list[str]:
    (statement,) = [s for s in policy["Statement"] if s["Sid"] == sid]
    found: list[str] = statement["Condition"]["ForAllValues:StringLike"][
        "dynamodb:LeadingKeys"]
    return found


def _matches(patterns: list[str], key: str, tag: str) -> bool:
    return any(string_like(p, key, {SCOPE: tag}) for p in patterns)


def _gets(policy: dict[str, Any], key: str, tag: str, table: str = "iam_grammar_dashed"
          ) -> bool:
    """Whether ``policy`` lets a principal tagged ``tag`` read the item at partition key
    ``key`` (a GetItem on the table, IAM's evaluation: ``tests/support/iam_eval``)."""
    check = Check("GetItem", f"arn:aws:dynamodb:us-east-1:123456789012:table/{table}",
                  (key,))
    return allowed(policy, check, {SCOPE: tag})


def _key(**values: str) -> str:
    """Doc's partition key as its write path renders it (the grammar's refusals too)."""
    return str(Doc.__dynaorm_spec__.pk.render(values, "Doc"))


def test_a_dashed_template_binds_the_tenant_by_its_separator() -> None:
    """0.7 wrote ``T-${tag}-*``, which matched ``T-acme-corp-123`` for tag ``acme``: tenant
    ``acme-corp``'s doc. The grammar refuses ``-`` in a tenant_id, so ``T-acme-`` begins
    acme's keys only: ``T-acme-corp-123`` is acme's doc ``corp-123``."""
    policy, uncovered = iam.to_format(dashed.model(), "read", scope=SCOPE)
    assert uncovered == []
    assert _leading(policy) == [f"T-{TAG}-*"]
    with pytest.raises(KeyTemplateError, match="'-'"):
        _key(tenant_id="acme-corp", doc_id="123")
    mine = _key(tenant_id="acme", doc_id="corp-123")
    assert mine == "T-acme-corp-123" and _matches(_leading(policy), mine, "acme")
    # no LeadingKeys pattern can keep a tag 'acme-corp' out of acme's 'T-acme-corp-...'
    # (0.8 left it to the IAM page's warning): the policy refuses a principal whose tag
    # holds a separator of the field (StringNotLike), so it reads nothing
    assert _matches(_leading(policy), mine, "acme-corp")
    (statement,) = policy["Statement"]
    assert statement["Condition"]["StringNotLike"] == {
        f"aws:PrincipalTag/{SCOPE}": ["*#*", "*-*"]}
    assert _gets(policy, mine, "acme") and not _gets(policy, mine, "acme-corp")
    assert not _gets(policy, _key(tenant_id="acme", doc_id="1"), "acme-corp")
    assert not _gets(policy, mine, "a#b") and _gets(policy, mine, "acme")
    for other in ("acmecorp", "acm", "acme2", "cme"):
        key = _key(tenant_id=other, doc_id="1")
        assert not _matches(_leading(policy), key, "acme"), key
        assert not _gets(policy, key, "acme"), key


def test_a_key_that_ends_at_the_scope_field_is_matched_exactly() -> None:
    table = _table(["TENANT={tenant_id}"])
    policy, uncovered = iam.to_format(table.model(), "read", scope=SCOPE)
    assert uncovered == [] and _leading(policy) == [f"TENANT={TAG}"]
    assert _matches(_leading(policy), "TENANT=acme", "acme")
    assert not _matches(_leading(policy), "TENANT=acme2", "acme")
    assert not _matches(_leading(policy), "TENANT=acm", "acme")


def test_iam_wildcards_in_a_literal_are_escaped() -> None:
    """``*``, ``?`` and ``$`` of a template's literal start are IAM's ``${*}``, ``${?}``
    and ``${$}`` (IAM User Guide, policy variables): they match themselves only."""
    assert iam.escape("a*b?c$d${e}") == "a${*}b${?}c${$}d${$}{e}"
    pattern = iam.leading_key("$*?{tenant_id}?{doc_id}", SCOPE)
    assert pattern == f"${{$}}${{*}}${{?}}{TAG}${{?}}*"
    assert string_like(pattern, "$*?acme?1", {SCOPE: "acme"})
    for other in ("$xyacme?1", "$**acme?1", "$*?acmex1", "${$}${*}${?}acme?1"):
        assert not string_like(pattern, other, {SCOPE: "acme"}), other


@pytest.mark.parametrize(("templates", "named"), [
    (["DOC#{doc_id}#{tenant_id}"], "has {doc_id} before {tenant_id}"),
    (["DOC#{tenant_id!l}#{doc_id}"], "formats or converts {tenant_id}"),
    (["{tenant_id}"], "is {tenant_id} alone"),
    (["DOC#{doc_id}"], "does not carry {tenant_id}"),
    # a literal start beginning another's: tag 'A' would match every tenant's 'T#A#...'
    (["T#{tenant_id}#{doc_id}", "T#A#{tenant_id}#{doc_id}"], "begins with 'T#'"),
    # one start, and an entity whose tenant_id may hold the other's separator '-'
    (["T{tenant_id}-{doc_id}", "T{tenant_id}#{doc_id}"], "allows '-'"),
])
def test_what_the_grammar_cannot_prove_is_named_and_the_command_exits_2(
        templates: list[str], named: str, capsys: pytest.CaptureFixture[str]) -> None:
    table = _table(templates)
    _, uncovered = iam.to_format(table.model(), "read", scope=SCOPE)
    assert any(named in line for line in uncovered), uncovered
    for line in uncovered:
        assert any(repr(t) in line for t in templates), line  # (the template is named)
    assert main(["iam", f"{__name__}:_last", "--role", "read", "--scope", SCOPE]) == 2
    out, err = capsys.readouterr()
    assert out == ""  # (no policy: what is printed is what is proven)
    assert f"dynaorm iam: --scope {SCOPE} cannot cover" in err and named in err


def test_a_policy_the_grammar_proves_exits_0(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["iam", f"{__name__}:dashed", "--role", "write", "--scope", SCOPE]) == 0
    out, err = capsys.readouterr()
    assert _leading(json.loads(out)) == [f"T-{TAG}-*", f"dynaorm:receipt#{TAG}#*"]
    # (no Powertools layer made on the table: its records are no row kind to name)
    assert "cannot cover" not in err and "Powertools" not in err


# -- the property: a pattern matches every key of its tenant and none of another's ----------
_count = itertools.count()
_last: Table | None = None


def _table(templates: list[str]) -> Table:
    """A table of one entity per template (``tenant_id``, ``doc_id``), each with its own
    sort key; kept as ``_last`` for the command."""
    global _last
    owner = Table(f"iam_grammar_{next(_count)}")
    for i, template in enumerate(templates):
        name = f"E{i}"  # (a nested class pydantic leaves alone: its qualname is inside ours)
        meta = type("Meta", (), {"table": owner, "pk": template, "sk": name,
                                 "__module__": __name__, "__qualname__": f"{name}.Meta"})
        type(name, (Entity,), {"Meta": meta, "__module__": __name__, "__qualname__": name,
                               "__annotations__": {"tenant_id": str, "doc_id": str}})
    _last = owner
    return owner


#: characters of literals and separators: IAM's wildcards and variable sign, '#', and
#: characters a principal tag may hold (IAM: letters, digits, space, _ . : / = + - @)
_CHARS = "#-_.:/=+@*?$Ab"
_literal = st.text(_CHARS, max_size=3)
_template = st.tuples(_literal, st.one_of(st.none(), st.sampled_from(_CHARS)), _literal).map(
    lambda t: t[0].replace("{", "") + "{tenant_id}" + (
        "" if t[1] is None else t[1] + t[2] + "{doc_id}"))
#: a tag's value: what IAM allows in one (no '*' or '?')
_tag = st.text("Ab1-_.:/=+@", min_size=1, max_size=4)
_value = st.text(_CHARS + "1", min_size=1, max_size=4)


def _attacks(templates: list[str], values: list[str]) -> list[str]:
    """Tenant values an attacker would try: where one template's literal start extends
    another's by ``s``, each start of ``s`` and ``s`` then a value; a value then each
    character then a value (a tenant holding another template's separator)."""
    heads = [t.split("{tenant_id}")[0] for t in templates]
    out = []
    for a, b in itertools.permutations(heads, 2):
        if b != a and b.startswith(a):
            rest = b[len(a):]
            out += [rest[:p] for p in range(1, len(rest) + 1)] + [rest + v for v in values]
    out += [v + c + w for v, w in itertools.product(values[:2], values[:2]) for c in _CHARS]
    return out


@settings(max_examples=examples(150), deadline=None, suppress_health_check=list(HealthCheck))
@given(templates=st.lists(_template, min_size=1, max_size=3),
       values=st.lists(_value, min_size=1, max_size=4),
       docs=st.lists(_value, min_size=1, max_size=3), role=st.sampled_from(["read", "write"]),
       data=st.data())
def test_a_proven_pattern_matches_its_tenants_keys_and_no_other(
        templates: list[str], values: list[str], docs: list[str], role: str,
        data: st.DataObject) -> None:
    """Over templates with every separator (IAM's wildcards too) and tenant values
    (an attacker's among them): when the command covers the table, a principal tagged
    ``tag`` is allowed a key rendered by an entity (with values its grammar accepts)
    exactly when the key is ``tag``'s; receipts (a write role's) likewise. The tag obeys
    the grammar of every template the policy covers (the documented requirement)."""
    table = _table(templates)
    policy, uncovered = iam.to_format(table.model(), role, scope=SCOPE)
    if uncovered:
        for line in uncovered:
            assert any(repr(t) in line for t in templates), line
        return
    tenants = [*values, *_attacks(templates, values)]
    specs = [cls.__dynaorm_spec__ for cls in table.entities.values()]
    refused = set().union(*(s.separators(SCOPE) for s in specs))
    patterns = _leading(policy)
    keys = [(spec.pk.render({SCOPE: tenant, "doc_id": doc}), tenant)
            for spec, tenant, doc in itertools.product(specs, tenants, docs)
            if tenant and not any(c in tenant for c in spec.separators(SCOPE))
            and not any(c in doc for c in spec.separators("doc_id"))]  # (what a write takes)
    keys += [(f"dynaorm:receipt#{tenant}#{'0' * 40}", tenant if role == "write" else "")
             for tenant in tenants if tenant and "#" not in tenant]
    for tag in {data.draw(_tag, label="tag"), *tenants}:
        if not tag:
            continue
        held = [(k, t) for k, t in keys if t == tag][:2] + keys[:2]  # (IAM's whole
        # evaluation of a few keys: the patterns' of every key below)
        if any(c in tag for c in refused | {"#"}):  # (a tag holding a separator: refused
            for key, _ in held:                      # by the policy's StringNotLike)
                assert not _gets(policy, key, tag, table.name), (templates, key, tag)
            continue
        for key, tenant in keys:
            assert _matches(patterns, key, tag) == (tenant == tag), (templates, key, tag)
        for key, tenant in held:
            if role == "read" or not key.startswith("dynaorm:"):
                assert _gets(policy, key, tag, table.name) == (tenant == tag), (key, tag)
