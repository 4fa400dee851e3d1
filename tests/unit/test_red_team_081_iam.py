"""The red team of issue 81: ``dynaorm iam --scope`` evaluated (``tests/support/iam_eval``,
IAM's documented rules) for principals whose tags hold any character an AWS tag value may
hold (letters, digits, spaces and ``_ . : / = + - @``): a principal reads a key only where
the grammar reads that key as the principal's own tenant's, on every template the role
reaches (a previous layout's, an index's)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from dynaorm import GSI, Entity, Previous, Table
from dynaorm.formats import iam
from tests.support.examples import examples
from tests.support.iam_eval import Check, allowed

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
