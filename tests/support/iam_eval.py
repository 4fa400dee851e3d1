"""A small evaluator of IAM's documented semantics for DynamoDB requests, for the tests of
``dynaorm iam`` (no offline evaluator holds them: moto's IAM enforcement checks an
operation's name against ``Resource: *`` and no condition key, and takes
``TransactWriteItems`` as an action where IAM authorizes each item).

What it follows (IAM User Guide, "Policy evaluation logic" and DynamoDB's "Using IAM
policy conditions for fine-grained access control"):

- a request is authorized action by action: a ``TransactWriteItems`` item as ``PutItem``,
  ``UpdateItem``, ``DeleteItem`` or ``ConditionCheckItem``, a ``TransactGetItems`` item as
  ``GetItem``, a batch as ``BatchGetItem`` / ``BatchWriteItem`` on each table it names;
- the resource is the table's ARN, or the index's (``table/T/index/I``) for a Query, Scan
  or SearchVectors of an index;
- ``dynamodb:LeadingKeys`` holds the partition key values a request names (a Query's
  equality on the partition key, each item's key; a Query of an index: the index's
  partition key); a Scan and a SearchVectors name none;
- an explicit Deny wins, else an Allow whose Action, Resource and every Condition match,
  else denied (implicit deny); ``ForAllValues:`` on no values holds, ``Null: false``
  needs the key present; ``StringLike`` with ``*`` (any run, the empty one too) and ``?``
  (one character), ``${*}``, ``${?}``, ``${$}`` literal, ``${aws:PrincipalTag/K}`` the
  principal's tag (none: the condition fails): :func:`string_like`, written from those
  rules (no shell glob: ``fnmatch`` reads ``[...]`` as a class);
- ``StringNotLike`` / ``StringLike`` on ``aws:PrincipalTag/K``: the principal's tag
  against the patterns (a negated operator on a key the request context lacks holds).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["Check", "allowed", "checks_of", "string_like"]

_ITEM_ACTIONS = {"Put": "PutItem", "Update": "UpdateItem", "Delete": "DeleteItem",
                 "ConditionCheck": "ConditionCheckItem", "Get": "GetItem"}


@dataclass(frozen=True)
class Check:
    """One authorization IAM makes for a request: an action on a resource, with the
    partition key values it names (``None``: the request names none)."""

    action: str
    resource: str
    leading: tuple[str, ...] | None


def _arn(table: str, index: str | None, account: str = "123456789012",
         region: str = "us-east-1") -> str:
    found = f"arn:aws:dynamodb:{region}:{account}:table/{table}"
    return found if index is None else f"{found}/index/{index}"


def _plain(value: Mapping[str, Any]) -> str:
    (found,) = value.values()
    return str(found)


def checks_of(operation: str, request: Mapping[str, Any], keys: Mapping[str | None, str],
              table: str | None = None) -> Iterator[Check]:
    """The checks IAM makes for one request; ``keys``: the partition attribute of the table
    (key ``None``) and of each index (by name)."""
    name = table or request.get("TableName")
    if operation == "TransactWriteItems" or operation == "TransactGetItems":
        for item in request["TransactItems"]:
            ((kind, body),) = item.items()
            yield from checks_of(_ITEM_ACTIONS[kind], body, keys)
        return
    if operation in ("BatchGetItem", "BatchWriteItem"):
        for table_name, body in request["RequestItems"].items():
            keys_of = ([k for k in body["Keys"]] if operation == "BatchGetItem" else
                       [next(iter(w.values())).get("Key") or w["PutRequest"]["Item"]
                        for w in body])
            yield Check(operation, _arn(table_name, None),
                        tuple(_plain(k[keys[None]]) for k in keys_of if not isinstance(k, str)))
        return
    index = request.get("IndexName")
    resource = _arn(str(name), index)
    if operation in ("Scan", "SearchVectors"):
        yield Check(operation, resource, None)
    elif operation == "Query":
        attr = keys[index]
        names = request.get("ExpressionAttributeNames", {})
        values = request.get("ExpressionAttributeValues", {})
        found = None
        for left, right in re.findall(r"([#:\w]+)\s*=\s*([#:\w]+)",
                                      request["KeyConditionExpression"]):
            if names.get(left, left) == attr:
                found = _plain(values[right])
        yield Check(operation, resource, None if found is None else (found,))
    else:
        item = request.get("Key") or request.get("Item")
        assert item is not None, (operation, request)
        if isinstance(item, str):  # ("<the key the guard names>": the owner's own key,
            return  # which the entity's get reads: checked there)
        yield Check(operation, resource, (_plain(item[keys[None]]),))


#: a StringLike pattern's tokens: a wildcard (``*`` any run of characters, the empty one
#: too; ``?`` exactly one character) or a literal text
_ANY, _ONE = object(), object()


def _tokens(pattern: str, tags: Mapping[str, str]) -> list[object] | None:
    """``pattern``'s tokens with its policy variables put in (IAM User Guide, "Policy
    variables": ``${*}``, ``${?}``, ``${$}`` stand for the character itself,
    ``${aws:PrincipalTag/K}`` for the tag's value as text; a variable without a value
    fails the condition: ``None``)."""
    out: list[object] = []
    i = 0
    while i < len(pattern):
        char = pattern[i]
        if pattern.startswith("${", i) and "}" in pattern[i:]:
            end = pattern.index("}", i)
            inner = pattern[i + 2:end]
            if inner in ("*", "?", "$"):
                out.append(inner)
            elif inner.startswith("aws:PrincipalTag/"):
                tag = tags.get(inner.split("/", 1)[1])
                if tag is None:
                    return None
                out.append(tag)  # (a tag's value is text: its * and ? match themselves)
            else:
                return None
            i = end + 1
            continue
        out.append(_ANY if char == "*" else _ONE if char == "?" else char)
        i += 1
    return out


def string_like(pattern: str, value: str, tags: Mapping[str, str] | None = None) -> bool:
    """IAM's ``StringLike`` of ``value`` against ``pattern`` (case-sensitive), written
    from the documented semantics, not from a shell glob: ``*`` matches any run of
    characters (the empty one too), ``?`` exactly one, anything else itself."""
    tokens = _tokens(pattern, tags or {})
    if tokens is None:
        return False
    # ends[j]: whether the tokens so far can match value[:j] (a set of reachable ends)
    ends = {0}
    for token in tokens:
        if token is _ANY:
            ends = set(range(min(ends), len(value) + 1)) if ends else set()
        elif token is _ONE:
            ends = {j + 1 for j in ends if j < len(value)}
        else:
            assert isinstance(token, str)
            ends = {j + len(token) for j in ends if value.startswith(token, j)}
        if not ends:
            return False
    return len(value) in ends


def _like(pattern: str, value: str, tags: Mapping[str, str]) -> bool:
    return string_like(pattern, value, tags)


def _conditions(conditions: Mapping[str, Any], check: Check, tags: Mapping[str, str]) -> bool:
    for operator, tests in conditions.items():
        for key, wanted in tests.items():
            wanted = wanted if isinstance(wanted, list) else [wanted]
            if key.startswith("aws:PrincipalTag/"):
                if not _tag_condition(operator, wanted, tags.get(key.split("/", 1)[1])):
                    return False
                continue
            assert key == "dynamodb:LeadingKeys", key
            if operator == "Null":
                if (check.leading is None) != (wanted == ["true"]):
                    return False
            elif operator == "ForAllValues:StringLike":
                if not all(any(_like(w, v, tags) for w in wanted)
                           for v in check.leading or ()):
                    return False
            else:
                raise AssertionError(f"operator {operator} not evaluated here")
    return True


def _tag_condition(operator: str, wanted: list[str], tag: str | None) -> bool:
    """A condition on the principal's tag ``tag`` (``None``: the principal has none):
    ``StringLike`` (a missing key fails it) or ``StringNotLike`` (true when the tag
    matches none of ``wanted``; a missing key satisfies a negated operator: IAM User
    Guide, "Condition operators", keys absent from the request context)."""
    if operator == "StringNotLike":
        return tag is None or not any(string_like(w, tag) for w in wanted)
    if operator == "StringLike":
        return tag is not None and any(string_like(w, tag) for w in wanted)
    raise AssertionError(f"operator {operator} not evaluated here")


def allowed(policy: Mapping[str, Any], check: Check, tags: Mapping[str, str]) -> bool:
    """Whether ``policy`` allows ``check`` for a principal with ``tags``."""
    allow = False
    for statement in policy["Statement"]:
        actions = statement["Action"] if isinstance(statement["Action"], list) else [
            statement["Action"]]
        resources = statement["Resource"] if isinstance(statement["Resource"], list) else [
            statement["Resource"]]
        if not any(string_like(a.lower(), f"dynamodb:{check.action}".lower())
                   for a in actions):
            continue
        if not any(string_like(r, check.resource) for r in resources):
            continue
        if not _conditions(statement.get("Condition", {}), check, tags):
            continue
        if statement["Effect"] == "Deny":
            return False
        allow = True
    return allow
