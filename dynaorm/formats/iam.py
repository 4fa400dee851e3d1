"""A least-privilege IAM policy from the model (``dynaorm iam MODULE:table --role
read|write [--scope FIELD]``): the actions the role's access patterns and their rules send
(a transaction is authorized item by item: ``PutItem``, ``UpdateItem``, ``DeleteItem``,
``ConditionCheckItem``; a write's lost answer is settled by a ``GetItem``; a versioned
save reads the last version with a ``Query``), on the table's ARN and on the ARN of each
index a pattern queries (and ``BatchGetItem`` on the table where an index does not
project every attribute, and for every search: the rest of each hit is read by key), and
``SearchVectors`` in a statement of its own (it ignores
DynamoDB's fine-grained condition keys). With a scope field, every statement but
``SearchVectors`` holds a ``dynamodb:LeadingKeys`` condition: one pattern per partition
key template (the table's and each index's), the scope field bound to the principal's tag
``aws:PrincipalTag/FIELD``. What the scope cannot cover (a key template without the field,
a unique guard outside it, a Scan, a search) is named: ``dynaorm iam`` exits 2. The
table's own rows (receipts of idempotent commits) are granted where their key carries the
scope field, else named by :func:`unbound_rows` and left out (the policy still printed).
Receipts (``commit(idempotency_key=)``: one in each table the commit writes) are keyed
``dynaorm:receipt#...`` with no scope field today, so a scoped write role cannot commit
with a key: they are named.

Reads the model's plain data only."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["READS", "to_format", "unbound_rows"]

#: the operations a read role sends (a pattern of any other operation writes)
READS = frozenset({"GetItem", "Query", "Scan", "BatchGetItem", "SearchVectors"})
#: the IAM actions a write pattern needs (IAM authorizes a transaction's items one by one;
#: a save of a loaded object may be sent as an update; a lost answer is read back)
_WRITES: dict[str, tuple[str, ...]] = {
    "PutItem": ("PutItem", "UpdateItem", "GetItem"),
    "UpdateItem": ("UpdateItem", "GetItem"),
    "DeleteItem": ("DeleteItem", "GetItem"),
    "BatchWriteItem": ("BatchWriteItem",),
    "TransactWriteItems": ("PutItem", "UpdateItem", "DeleteItem", "ConditionCheckItem",
                           "GetItem"),
}
_FIELD = re.compile(r"\{([^{}]*)\}")


def _arn(table: str, index: str | None, where: Mapping[str, str]) -> str:
    found = (f"arn:{where.get('partition', 'aws')}:dynamodb:{where.get('region', '*')}:"
             f"{where.get('account', '*')}:table/{table}")
    return found if index is None else f"{found}/index/{index}"


def to_format(model: Mapping[str, Any], role: str, scope: str | None = None,
              where: Mapping[str, str] | None = None) -> tuple[dict[str, Any], list[str]]:
    """(the policy document, what ``scope`` cannot cover) for ``role`` (``"read"`` or
    ``"write"``); ``where``: the ARNs' ``partition``, ``region`` and ``account`` (``*``)."""
    if role not in ("read", "write"):
        raise ValueError(f"role must be 'read' or 'write', got {role!r}")
    grants = _granted(model, role, scope)
    statements = _policy_statements(grants, model["table"]["name"], scope, where or {})
    return ({"Version": "2012-10-17", "Statement": statements},
            list(dict.fromkeys(grants.uncovered)))


def _granted(model: Mapping[str, Any], role: str, scope: str | None) -> _Grants:
    """What ``role``'s access patterns of every entity of ``model`` need."""
    grants = _Grants(model["table"], scope)
    for entity in model["entities"]:
        patterns = [p for p in entity["access_patterns"]
                    if role == "write" or p["operation"] in READS]
        if patterns and scope is not None:
            grants.uncovered += _rows_outside(entity, scope, grants.leading[""])
        for pattern in patterns:
            grants.add(entity, pattern)
    if role == "write" and scope is not None:  # (the table's own rows: receipts)
        grants.leading[""].update(b for b in (leading_key(r, scope) for r in _own(model)) if b)
    return grants


def _policy_statements(grants: _Grants, table: str, scope: str | None,
                where: Mapping[str, str]) -> list[dict[str, Any]]:
    """The policy's statements granting ``grants`` on the table named ``table``: one
    for the table, one per index, one for the vector searches."""
    on_table, on_index, searched = grants.on_table, grants.on_index, grants.searched
    leading = grants.leading
    statements = []
    if on_table:
        statements.append(_statement("Table", on_table, [_arn(table, None, where)],
                                     scope, leading[""]))
    for name in sorted(on_index):
        statements.append(_statement(f"Index{_sid(name)}", on_index[name],
                                     [_arn(table, name, where)], scope,
                                     leading.get(name, set())))
    if searched:
        statements.append({"Sid": "SearchVectors", "Effect": "Allow",
                           "Action": ["dynamodb:SearchVectors"],
                           "Resource": [_arn(table, i, where) for i in sorted(searched)]})
    return statements

class _Grants:
    """What the role's patterns need: actions on the table, on each index, the vector
    indexes searched, the leading-key patterns by index (``""``: the table's), and what
    the scope cannot cover."""

    def __init__(self, table: Mapping[str, Any], scope: str | None) -> None:
        self.table, self.scope = table, scope
        indexes = table.get("indexes", ())
        self.vectors = {i["name"] for i in indexes if i["kind"] == "vector"}
        self.partial = {i["name"] for i in indexes if i["projection"] != "ALL"}
        self.on_table: set[str] = set()
        self.on_index: dict[str, set[str]] = {}
        self.searched: set[str] = set()
        self.uncovered: list[str] = []
        self.leading: dict[str, set[str]] = {"": set()}

    def add(self, entity: Mapping[str, Any], pattern: Mapping[str, Any]) -> None:
        """What one access pattern of ``entity`` needs."""
        operation, index, scope = pattern["operation"], pattern.get("index"), self.scope
        where = f"{entity['name']} {pattern['name']}"
        if index in self.partial or operation == "SearchVectors":  # (the rest of each hit
            self.on_table.add("BatchGetItem")  # is read by key; a search's every hit)
        if operation == "SearchVectors" or index in self.vectors:
            self.searched.add(index or "*")
            if scope is not None:
                self.uncovered.append(f"{where}: SearchVectors ignores dynamodb:LeadingKeys "
                                      "(a search reads every tenant's vectors)")
        elif operation == "Scan" and scope is not None:
            self.uncovered.append(f"{where}: a Scan reads every partition "
                                  "(dynamodb:LeadingKeys cannot hold it)")
        elif index is not None:
            self.on_index.setdefault(index, set()).add(operation)
            if scope is not None:
                found = _index_leading(entity, self.table, index, scope)
                if isinstance(found, str):
                    self.uncovered.append(f"{where}: {found}")
                else:
                    self.leading.setdefault(index, set()).update(found)
        else:
            self.on_table.update(_WRITES.get(operation, (operation,)))
            if operation in _WRITES and entity.get("versioned"):
                self.on_table.add("Query")  # (a save reads the last version)


def _own(model: Mapping[str, Any]) -> list[str]:
    """The partition key templates of the rows the table keeps for itself (the receipts
    of idempotent commits)."""
    return [next(iter(r["key"].values())) for r in model["table"].get("rows", ())]


def unbound_rows(model: Mapping[str, Any], role: str, scope: str | None) -> list[str]:
    """The table's own rows (receipts of ``commit(idempotency_key=)``) a write role held
    to ``scope`` is not granted, because their keys do not carry the scope field: never
    granted to every tenant (a receipt keeps the keys its commit wrote, and a tenant
    could claim another's key first), so such a role commits without idempotency keys."""
    if role != "write" or scope is None:
        return []
    return [f"receipts of idempotent commits (partition key {t!r}) do not carry {{{scope}}}:"
            " not granted, so this role cannot commit with idempotency_key="
            for t in _own(model) if leading_key(t, scope) is None]


def _sid(name: str) -> str:
    return "".join(c for c in name.title() if c.isalnum())


def _statement(sid: str, actions: Iterable[str], resources: list[str], scope: str | None,
               leading: set[str]) -> dict[str, Any]:
    found: dict[str, Any] = {"Sid": sid, "Effect": "Allow",
                             "Action": [f"dynamodb:{a}" for a in sorted(actions)],
                             "Resource": resources}
    if scope is not None:  # (Null: a request without leading keys, a Scan, is refused)
        found["Condition"] = {
            "ForAllValues:StringLike": {"dynamodb:LeadingKeys": sorted(leading)},
            "Null": {"dynamodb:LeadingKeys": "false"}}
    return found


def leading_key(template: str, scope: str) -> str | None:
    """The ``dynamodb:LeadingKeys`` pattern of a partition key template, the scope field
    bound to the principal's tag and every other field any text (``None``: the template
    does not hold the scope field apart, so it cannot be bound)."""
    parts = _FIELD.split(template)  # literal, field, literal, field, ...
    fields = parts[1::2]
    if scope not in fields:
        return None
    out = []
    for i, part in enumerate(parts):
        if i % 2 == 0:
            out.append(re.sub(r"([$*?])", lambda m: "${" + m.group(1) + "}", part))
        elif part == scope:
            if i + 1 < len(parts) - 1 and parts[i + 1] == "":  # (another field follows)
                return None
            out.append(f"${{aws:PrincipalTag/{scope}}}")
        else:
            out.append("*")
    return "".join(out)


def _rows_outside(entity: Mapping[str, Any], scope: str, leading: set[str]) -> list[str]:
    """Every kind of row the entity writes (its own, a guard, a version row)
    whose partition key the scope binds: its pattern added to ``leading``; those it cannot
    bind, named."""
    out = []
    for kind in entity.get("rows") or [{"role": "item", "key": {"pk": entity["pk"]}}]:
        template = next(iter(kind["key"].values()))
        found = leading_key(template, scope)
        if found is None:
            what = f"{kind['role']}" + (f" of {kind['field']!r}" if kind.get("field") else "")
            out.append(f"{entity['name']} {what}: partition key {template!r} does not carry "
                       f"{{{scope}}} apart")
        else:
            leading.add(found)
    return out


def _index_leading(entity: Mapping[str, Any], table: Mapping[str, Any], index: str,
                   scope: str) -> set[str] | str:
    """The leading-key patterns of a query of ``index`` by the entity, else why none."""
    for own in entity.get("indexes", ()):
        if own["name"] == index:
            found = leading_key(own["pk"], scope)
            return {found} if found else (f"index {index!r} partition key {own['pk']!r} "
                                          f"does not carry {{{scope}}} apart")
    declared = next((i for i in table["indexes"] if i["name"] == index), None)
    if declared is not None and declared.get("native") and declared["pk"] == [scope]:
        return {f"${{aws:PrincipalTag/{scope}}}"}
    if entity.get("history_index") == index:
        found = leading_key(entity["pk"], scope)
        return {found} if found else f"history index {index!r} is not scoped by {{{scope}}}"
    return (f"index {index!r} is keyed on {declared['pk'] if declared else '?'}, not on "
            f"{{{scope}}} alone")
