"""A least-privilege IAM policy from the model (``dynaorm iam MODULE:table --role
read|write [--scope FIELD]``): the actions the role's access patterns and their rules send
(a transaction is authorized item by item: ``PutItem``, ``UpdateItem``, ``DeleteItem``,
``ConditionCheckItem``; a write's lost answer is settled by a ``GetItem``; a versioned
save reads the last version with a ``Query``), on the table's ARN and on the ARN of each
index a pattern queries (and ``BatchGetItem`` on the table where an index does not
project every attribute, and for every search: the rest of each hit is read by key), and
``SearchVectors`` in a statement of its own (it ignores
DynamoDB's fine-grained condition keys).

With a scope field, every statement but ``SearchVectors`` holds a
``dynamodb:LeadingKeys`` condition built from the key grammar
(:meth:`dynaorm.keys.KeyTemplate.scope_prefix`, contract 23): one pattern
per partition key template a scoped role reaches (each kind of row its entities write,
their previous layouts', each index it queries), the template's literal start, the
field bound to the principal's tag ``aws:PrincipalTag/FIELD``, then the field's
separator and ``*`` (a value of the field never holds its separator, so only the
principal's own keys begin so), or nothing when the key ends at the field; and a
``StringNotLike`` condition on that tag refuses a principal whose tag holds one of the
field's separators or ``#`` (a tag ``acme-corp`` under ``T-${tag}-*`` would otherwise read
tenant ``acme``'s ``T-acme-corp-123``: the grammar's rule holds the tag too). What the
scope cannot prove (a template without the field, or where it is not the first field,
is formatted or converted, or is the whole key; two templates whose literal starts
begin one another; a Scan, a search) is named: ``dynaorm iam`` exits 2. A scoped write
role is granted its own receipts (``dynaorm:receipt#<scope value>#...``); the row kinds
of the model whose keys do not render the scope (Powertools' idempotency records, once a
``DynaormPersistenceLayer`` is made on the table) are named by :func:`unbound_rows` and
left out (the policy still printed).

Reads the model's plain data only; each template is parsed by the one key grammar."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from dynaorm.keys import KeyTemplate, KeyTemplateError, parse

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
    held: frozenset[str] = frozenset()
    if scope is not None:
        refused = {e["name"]: _refused(e, scope) for e in model["entities"]}
        for found in grants.leading.values():
            grants.uncovered += _apart(found, refused, scope)
        held = frozenset({"#"}).union(*refused.values())
    statements = _policy_statements(grants, model["table"]["name"], scope, where or {}, held)
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
    if role == "write" and scope is not None:  # (the table's own rows that render it)
        grants.leading[""] += [_Prefix(f"{r['type']}#", "#", "", f"{r['role']}s",
                                       next(iter(r["key"].values())))
                               for r in model["table"].get("rows", ())
                               if r.get("scoped", True)]  # (its own row kinds: dynaorm.RowKind)
    return grants


def _policy_statements(grants: _Grants, table: str, scope: str | None,
                       where: Mapping[str, str], refused: frozenset[str]
                       ) -> list[dict[str, Any]]:
    """The policy's statements granting ``grants`` on the table named ``table``: one
    for the table, one per index, one for the vector searches; ``refused``: the
    characters no value of the scope field holds (a principal whose tag holds one is
    refused)."""
    on_table, on_index, searched = grants.on_table, grants.on_index, grants.searched
    leading = grants.leading
    statements = []
    if on_table:
        statements.append(_statement("Table", on_table, [_arn(table, None, where)],
                                     scope, _patterns(leading[""], scope), refused))
    for name in sorted(on_index):
        statements.append(_statement(f"Index{_sid(name)}", on_index[name],
                                     [_arn(table, name, where)], scope,
                                     _patterns(leading.get(name, []), scope), refused))
    if searched:
        statements.append({"Sid": "SearchVectors", "Effect": "Allow",
                           "Action": ["dynamodb:SearchVectors"],
                           "Resource": [_arn(table, i, where) for i in sorted(searched)]})
    return statements

class _Grants:
    """What the role's patterns need: actions on the table, on each index, the vector
    indexes searched, the leading-key patterns by index (``""``: the table's), and what
    the scope cannot cover."""

    def __init__(self, table: Mapping[str, Any], scope: str | None):
        self.table, self.scope = table, scope
        indexes = table.get("indexes", ())
        self.vectors = {i["name"] for i in indexes if i["kind"] == "vector"}
        self.partial = {i["name"] for i in indexes if i["projection"] != "ALL"}
        self.on_table: set[str] = set()
        self.on_index: dict[str, set[str]] = {}
        self.searched: set[str] = set()
        self.uncovered: list[str] = []
        self.leading: dict[str, list[_Prefix]] = {"": []}

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
                    self.leading.setdefault(index, []).append(found)
        else:
            self.on_table.update(_WRITES.get(operation, (operation,)))
            if operation in _WRITES and entity.get("versioned"):
                self.on_table.add("Query")  # (a save reads the last version)


def unbound_rows(model: Mapping[str, Any], role: str, scope: str | None) -> list[str]:
    """The rows a write role held to ``scope`` may need and is not granted, because
    their keys do not render the scope: the row kinds of the model that are not
    ``scoped`` (Powertools' idempotency records, keyed
    ``dynaorm:idempotency#<hashed key>``), never granted to every tenant (one could read
    another's record, or claim its key first). Receipts of ``commit(idempotency_key=)``
    render the session's scope and are granted: they are not named."""
    if role != "write" or scope is None:
        return []
    return [f"{r['role']}s (partition key {next(iter(r['key'].values()))!r}) do not carry "
            f"{{{scope}}}: not granted, so this role cannot write them "
            f"({r.get('writer') or r['type']})" for r in model["table"].get("rows", ())
            if not r.get("scoped", True)]


def _sid(name: str) -> str:
    return "".join(c for c in name.title() if c.isalnum())


def _statement(sid: str, actions: Iterable[str], resources: list[str], scope: str | None,
               leading: list[str], refused: frozenset[str]) -> dict[str, Any]:
    found: dict[str, Any] = {"Sid": sid, "Effect": "Allow",
                             "Action": [f"dynamodb:{a}" for a in sorted(actions)],
                             "Resource": resources}
    if scope is not None:  # (Null: a request without leading keys, a Scan, is refused)
        found["Condition"] = {
            "ForAllValues:StringLike": {"dynamodb:LeadingKeys": leading},
            "Null": {"dynamodb:LeadingKeys": "false"},
            # (a tag holding a separator of the field would let the pattern reach into
            # another tenant's keys: T-${tag}-* with the tag acme-corp reads acme's
            # T-acme-corp-123; no tenant the grammar allows holds one)
            "StringNotLike": {f"aws:PrincipalTag/{scope}": tag_refusals(refused)}}
    return found


def tag_refusals(refused: Iterable[str]) -> list[str]:
    """The ``StringNotLike`` patterns of a principal's tag that holds one of the
    characters ``refused`` (the scope field's separators, ``#``): ``*<c>*`` each, the
    character as IAM's literal where it is a wildcard (:func:`escape`)."""
    return [f"*{escape(c)}*" for c in sorted(set(refused) | {"#"})]


def escape(text: str) -> str:
    """``text`` as a literal in an IAM condition value: ``*``, ``?`` and ``$`` (which
    would begin a wildcard or a policy variable) as IAM's ``${*}``, ``${?}``, ``${$}``."""
    return re.sub(r"([$*?])", lambda m: "${" + m.group(1) + "}", text)


@dataclass(frozen=True)
class _Prefix:
    """What the grammar proves of a partition key template for a scope field: its
    literal start (``head``), then the field, then ``sep`` (a character the field's
    values never hold), or the key's end (``sep`` ``None``); ``owner``: the entity whose
    values the template renders (``""``: the table's own rows), ``what``: which row,
    ``template``: its source."""

    head: str
    sep: str | None
    owner: str
    what: str
    template: str

    def pattern(self, scope: str) -> str:
        """The ``dynamodb:LeadingKeys`` pattern: this start, the principal's tag, then
        the separator and any text (none when the key ends at the field)."""
        tail = "" if self.sep is None else escape(self.sep) + "*"
        return f"{escape(self.head)}${{aws:PrincipalTag/{scope}}}{tail}"

    def named(self) -> str:
        return f"{self.owner} {self.what} {self.template!r}".lstrip()


def _patterns(found: list[_Prefix], scope: str | None) -> list[str]:
    return [] if scope is None else sorted({p.pattern(scope) for p in found})


def _parse(template: str) -> KeyTemplate | None:
    try:
        return parse(template)
    except KeyTemplateError:
        return None


def _proved(template: str, scope: str) -> tuple[str, str | None] | str:
    """``(head, sep)`` of a partition key template (see :class:`_Prefix`), from the
    grammar's :meth:`~KeyTemplate.scope_prefix`; else why no prefix proves the scope."""
    parsed = _parse(template)
    if parsed is None:
        return "is no key template"
    found = parsed.scope_prefix((scope,))
    if found is not None:
        parts, exact = found
        at = parts.index("{" + scope + "}")
        return "".join(parts[:at]), None if exact else parts[at + 1]
    if scope not in parsed.fields:
        return f"does not carry {{{scope}}}"
    if parsed.single is not None:
        return (f"is {{{scope}}} alone (a one-field key's value may hold any character, so no "
                "separator follows it)")
    if parsed.fields[0] != scope:
        return (f"has {{{parsed.fields[0]}}} before {{{scope}}} (no literal start proves "
                "the scope)")
    return f"formats or converts {{{scope}}} (two values could render alike)"


def leading_key(template: str, scope: str) -> str | None:
    """The ``dynamodb:LeadingKeys`` pattern of a partition key template, the scope field
    bound to the principal's tag (``None``: the grammar proves no prefix of the scope)."""
    found = _proved(template, scope)
    if isinstance(found, str):
        return None
    return _Prefix(*found, "", "", template).pattern(scope)


def _prefix(template: str, scope: str, owner: str, what: str) -> _Prefix | str:
    """The proven prefix of ``template`` (a partition key of ``owner``'s ``what``), else
    the line naming why it cannot be covered."""
    found = _proved(template, scope)
    if isinstance(found, str):
        return f"{owner} {what}: partition key {template!r} {found}"
    return _Prefix(*found, owner, what, template)


def _entity_templates(entity: Mapping[str, Any]) -> Iterator[Any]:
    """Every key template in the model of ``entity`` (what its field values are held to)."""
    yield from (entity.get("pk"), entity.get("sk"))
    for index in entity.get("indexes", ()):
        yield from (index.get("pk"), index.get("sk"))
    for unique in entity.get("unique", ()):
        yield unique.get("scope")
    for kind in entity.get("rows", ()):
        yield from kind["key"].values()
    if entity.get("previous"):
        yield from (entity["previous"].get("pk"), entity["previous"].get("sk"))


def _refused(entity: Mapping[str, Any], scope: str) -> frozenset[str]:
    """The characters no value of ``scope`` in ``entity`` holds: ``#`` and its
    separator in each of the entity's key templates."""
    out = {"#"}
    for template in _entity_templates(entity):
        parsed = _parse(template) if isinstance(template, str) else None
        if parsed is not None:
            out.update(parsed.separators(scope))
    return frozenset(out)


def _apart(found: list[_Prefix], refused: Mapping[str, frozenset[str]],
           scope: str) -> list[str]:
    """Why the patterns of one statement could let a principal reach another tenant's
    key, pair by pair (the principal's tag holds no character any of them refuses):

    - two literal starts, one beginning the other (``T#`` and ``T#A#``): a principal
      whose tag is ``A`` would match the keys of every tenant under ``T#A#{f}#...``;
    - one start, and a separator the other template's entity lets a value of the field
      hold (``T{f}-...`` and ``T{f}#...`` where ``-`` is allowed): ``T{t}-*`` would
      match ``Tt-x#...``, a key of tenant ``t-x``."""
    out = []
    kinds = list({(p.head, p.sep, p.owner, p.template): p for p in found}.values())
    for a in kinds:
        for b in kinds:
            if a.head != b.head and b.head.startswith(a.head):
                out.append(f"{a.named()} and {b.named()}: the literal start {b.head!r} "
                           f"begins with {a.head!r}, so a principal's pattern under one "
                           "could match another tenant's keys under the other")
            elif (a.head == b.head and a.sep is not None
                  and a.sep not in refused.get(b.owner, frozenset("#"))):
                out.append(f"{a.named()} and {b.named()}: {b.owner} allows {a.sep!r} in "
                           f"the scope field, so {a.pattern(scope)!r} could match its keys "
                           "of another tenant")
    return out


def _rows_outside(entity: Mapping[str, Any], scope: str, leading: list[_Prefix]) -> list[str]:
    """Every kind of row the entity writes (its own, a guard, a version row) and its
    previous layout's, whose partition key the grammar proves inside the scope: its
    prefix added to ``leading``; those it cannot, named."""
    out = []
    kinds = list(entity.get("rows") or [{"role": "item", "key": {"pk": entity["pk"]}}])
    if entity.get("previous"):
        kinds.append({"role": "previous layout", "key": {"pk": entity["previous"]["pk"]}})
    for kind in kinds:
        template = next(iter(kind["key"].values()))
        what = f"{kind['role']}" + (f" of {kind['field']!r}" if kind.get("field") else "")
        found = _prefix(template, scope, entity["name"], what)
        if isinstance(found, str):
            out.append(found)
        else:
            leading.append(found)
    return out


def _index_leading(entity: Mapping[str, Any], table: Mapping[str, Any], index: str,
                   scope: str) -> _Prefix | str:
    """The leading-key prefix of a query of ``index`` by the entity, else why none."""
    for own in entity.get("indexes", ()):
        if own["name"] == index:
            found = _prefix(own["pk"], scope, entity["name"], f"index {index!r}")
            return found if isinstance(found, _Prefix) else found.split(": ", 1)[1]
    declared = next((i for i in table["indexes"] if i["name"] == index), None)
    if declared is not None and declared.get("native") and declared["pk"] == [scope]:
        # (the index's partition attribute is the field itself: a key is its value)
        return _Prefix("", None, entity["name"], f"index {index!r}", "{" + scope + "}")
    if entity.get("history_index") == index:
        found = _prefix(entity["pk"], scope, entity["name"], f"history index {index!r}")
        return found if isinstance(found, _Prefix) else found.split(": ", 1)[1]
    return (f"index {index!r} is keyed on {declared['pk'] if declared else '?'}, not on "
            f"{{{scope}}} alone")
