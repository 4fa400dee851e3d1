"""Vector indexes and ``SearchVectors`` on dynaorm's embedded backend.

moto has no vector index: :func:`~dynaorm.testing.moto_backend` and
:func:`~dynaorm.testing.moto_server` answer them here (:func:`serve_vectors`), as DynamoDB
does (its refusals worded as DynamoDB words them), over moto's own tables: a vector
index's definition lives on moto's table, and ``SearchVectors`` compares every item holding
a valid vector with the index's distance (an exact search, as dynoxide's). Writes are not
checked against the index (a write of a vector of another length succeeds; the item is not
in the index), nor is an index ever backfilling.
"""

import math
import re
import threading
from array import array
from collections.abc import Callable, Iterable, Mapping, Sequence
from decimal import Decimal
from typing import Any

#: the vector-search endpoints (in-process, a search goes where the SDKs send it)
_SEARCH_ENDPOINTS = (r"https?://search-dynamodb\.(.+)\.amazonaws\.com",
                     r"https?://(.+)\.search-ddb\.(.+)\.amazonaws\.com")
#: where a moto table keeps its vector indexes: {"indexes": [...], "attributes": [...]}
_STATE = "dynaorm_vector_indexes"
_INVALID = "One or more parameter values were invalid"
_ROUTED = threading.Lock()
_routed: list[bool] = []
#: the largest float32
_F32_MAX = 3.4028234663852886e38


def serve_vectors() -> None:
    """Make moto's DynamoDB answer vector indexes and ``SearchVectors`` (once a process)."""
    with _ROUTED:
        if not _routed:
            from dynaorm.testing.private_apis import moto_dynamodb_route

            moto_dynamodb_route(_vector_handler().dispatch, _SEARCH_ENDPOINTS)
            _routed.append(True)


class _Refused(Exception):
    """A request DynamoDB refuses with a ``ValidationException`` of this message."""


def _vector_handler() -> type[Any]:
    """moto's DynamoDB handler, answering vector indexes too (made once: imports moto)."""
    from moto.core.responses import ActionResult
    from moto.dynamodb.exceptions import MockValidationException
    from moto.dynamodb.responses import DynamoHandler

    def refused(method: Callable[[Any], Any]) -> Callable[[Any], Any]:
        def run(self: Any) -> Any:
            try:
                return method(self)
            except _Refused as exc:
                raise MockValidationException(str(exc)) from None
        run.__name__ = method.__name__
        return run

    class VectorHandler(DynamoHandler):
        @refused
        def create_table(self) -> Any:
            body = self.body
            state = _created(body)
            result = super().create_table()
            if state is None:
                return result
            table = self.dynamodb_backend.get_table(body["TableName"])
            setattr(table, _STATE, state)
            return ActionResult(_described(result.result, "TableDescription", state))

        @refused
        def update_table(self) -> Any:
            updates = self.body.pop("VectorIndexUpdates", None)
            if updates:
                table = self.dynamodb_backend.get_table(self.body["TableName"])
                setattr(table, _STATE, _updated(table, self.body, updates))
            state = getattr(self.dynamodb_backend.get_table(self.body["TableName"]), _STATE, None)
            _strip_search_attributes(self.body, state)
            return ActionResult(_described(super().update_table().result, "TableDescription",
                                           state))

        def describe_table(self) -> Any:
            result = super().describe_table()
            table = self.dynamodb_backend.get_table(self.body["TableName"])
            return ActionResult(_described(result.result, "Table", getattr(table, _STATE, None)))

        @refused
        def search_vectors(self) -> Any:
            table = self.dynamodb_backend.get_table(self.body.get("TableName", ""))
            state = getattr(table, _STATE, None) or {"indexes": []}
            items = (i.to_json()["Attributes"] for i in table.all_items())
            keys = tuple(a for a in (table.hash_key_attr, table.range_key_attr) if a)
            types = {d["AttributeName"]: d["AttributeType"]
                     for d in [*table.attr, *state.get("attributes", [])]}
            return ActionResult(_search(items, state["indexes"], types, keys, self.body))

    return VectorHandler


def _created(body: dict[str, Any]) -> dict[str, Any] | None:
    """A CreateTable's vector indexes checked as DynamoDB checks them (``None``: none), its
    search schema's attribute definitions taken out of the request moto reads."""
    declared = body.pop("VectorIndexes", None)
    if not declared:
        return None
    definitions = body.get("AttributeDefinitions") or []
    billing = body.get("BillingMode") or "PROVISIONED"
    others = [*(body.get("GlobalSecondaryIndexes") or []),
              *(body.get("LocalSecondaryIndexes") or [])]
    indexes = _checked(declared, definitions, billing, {i.get("IndexName") for i in others}, [])
    keyed = {k["AttributeName"] for i in [body, *others]  # (the key schemas' attributes)
             for k in i.get("KeySchema") or []}
    search = {e["AttributeName"] for i in indexes for e in i.get("SearchSchema") or []}
    body["AttributeDefinitions"] = [d for d in definitions if d["AttributeName"] in keyed]
    return {"indexes": indexes, "attributes": [d for d in definitions if d["AttributeName"]
                                               in search - keyed]}


def _checked(declared: Sequence[dict[str, Any]], definitions: Sequence[dict[str, Any]],
             billing: str, taken: set[Any], existing: Sequence[dict[str, Any]]
             ) -> list[dict[str, Any]]:
    """Vector index definitions as DynamoDB accepts them (else :class:`_Refused`)."""
    if billing != "PAY_PER_REQUEST":
        raise _Refused(f"{_INVALID}: Vector indexes are only supported for PAY_PER_REQUEST "
                       "tables")
    types = {d["AttributeName"]: d["AttributeType"] for d in definitions}
    dims = {i["VectorAttribute"]["AttributeName"]: i["Dimensions"] for i in existing}
    out = []
    for index in declared:
        name = index.get("IndexName")
        attribute = (index.get("VectorAttribute") or {}).get("AttributeName")
        problem = _index_problem(index, types, dims, taken)
        if problem is not None or not attribute:
            raise _Refused(f"{_INVALID}: {problem or 'a VectorAttribute is required'}")
        taken.add(name)
        out.append(dict(index))
    return out


def _index_problem(index: dict[str, Any], types: Mapping[str, str], dims: dict[Any, Any],
                   taken: set[Any]) -> str | None:
    """Why DynamoDB refuses vector index ``index`` (``None``: it does not), the first
    problem in the order it checks them. ``types``: the attribute definitions;
    ``dims``: the dimensions of the indexes of each attribute so far (this one's added
    when it gets that far); ``taken``: the index names the table has."""
    schema = index.get("SearchSchema") or []
    if index.get("IndexName") in taken:
        return f"Duplicate index name: {index.get('IndexName')}"
    if any(e.get("AttributeName") not in types for e in schema):
        return "One element in SearchSchema is not defined in attribute definitions"
    if sum(e.get("SearchSchemaElementType") == "HASH" for e in schema) > 1:
        return "A SearchSchema has at most one HASH element"
    if type(index.get("Dimensions")) is not int or not 1 <= index["Dimensions"] <= 4096:
        return "Dimensions must be a whole number from 1 to 4096"
    attribute = (index.get("VectorAttribute") or {}).get("AttributeName")
    if dims.setdefault(attribute, index["Dimensions"]) != index["Dimensions"]:
        return "Vector indexes on one attribute must have the same number of dimensions"
    if index.get("DistanceFunction") not in ("COSINE", "EUCLIDEAN", "DOT_PRODUCT"):
        return "DistanceFunction must be one of COSINE, EUCLIDEAN, DOT_PRODUCT"
    return None


def _updated(table: Any, body: dict[str, Any], updates: Sequence[Mapping[str, Any]]
             ) -> dict[str, Any]:
    """A table's vector indexes after UpdateTable's ``VectorIndexUpdates``."""
    state = dict(getattr(table, _STATE, None) or {"indexes": [], "attributes": []})
    indexes = list(state["indexes"])
    definitions = [*(body.get("AttributeDefinitions") or []), *table.attr, *state["attributes"]]
    for update in updates:
        if "Create" in update:
            taken = {i["IndexName"] for i in indexes} | {
                i.name for i in [*table.global_indexes, *table.indexes]}
            indexes += _checked([update["Create"]], definitions, table.billing_mode, taken,
                                indexes)
        elif "Delete" in update:
            name = update["Delete"].get("IndexName")
            if name not in {i["IndexName"] for i in indexes}:
                raise _Refused(f"Requested resource not found: Index: {name} not found")
            indexes = [i for i in indexes if i["IndexName"] != name]
    search = {e["AttributeName"] for i in indexes for e in i.get("SearchSchema") or []}
    attributes = {d["AttributeName"]: d for d in definitions if d["AttributeName"] in search}
    return {"indexes": indexes, "attributes": list(attributes.values())}


def _strip_search_attributes(body: dict[str, Any], state: Mapping[str, Any] | None) -> None:
    """Leave out of an UpdateTable moto reads the definitions of search schema attributes
    no key schema names (moto would keep them as the table's own)."""
    if state and body.get("AttributeDefinitions"):
        search = {d["AttributeName"] for d in state["attributes"]}
        keyed = {k["AttributeName"] for u in body.get("GlobalSecondaryIndexUpdates") or []
                 for k in (u.get("Create") or {}).get("KeySchema") or []}
        body["AttributeDefinitions"] = [d for d in body["AttributeDefinitions"]
                                        if d["AttributeName"] not in search - keyed]
        if not body["AttributeDefinitions"]:
            del body["AttributeDefinitions"]


def _described(description: Any, key: str, state: Mapping[str, Any] | None) -> Any:
    """A table description (``{key: {...}}``) with its vector indexes (all ``ACTIVE``) and
    their search schema's attribute definitions."""
    if not state:
        return description
    table = description[key]
    table["AttributeDefinitions"] = [*table.get("AttributeDefinitions", []),
                                     *state["attributes"]]
    arn = table.get("TableArn", "")
    table["VectorIndexes"] = [{**i, "IndexStatus": "ACTIVE", "IndexSizeBytes": 0,
                               "ItemCount": 0, "IndexArn": f"{arn}/index/{i['IndexName']}"}
                              for i in state["indexes"]]
    return description


# -- SearchVectors, exactly -------------------------------------------------------------
def _search(items: Iterable[Mapping[str, Any]], indexes: Sequence[Mapping[str, Any]],
                   types: Mapping[str, str], keys: tuple[str, ...], request: Mapping[str, Any]
                   ) -> dict[str, Any]:
    """The answer to the ``SearchVectors`` ``request`` over a table's ``items`` (as stored,
    in key order), given its vector ``indexes`` (as CreateTable declares them), the
    ``types`` of its defined attributes and its key attributes: every item holding a
    valid vector is scored with the index's distance (32-bit elements, 64-bit sums, as
    DynamoDB scores them), the best ``TopK`` first, equal scores in key order. A request
    DynamoDB refuses raises :class:`_Refused` with DynamoDB's message."""
    top = request.get("TopK")
    if type(top) is not int or not 1 <= top <= 100:
        raise _Refused(f"Provided TopK value '{top}' is out of valid range. The value must "
                       "be between 1 and 100 inclusive")
    wanted = _conditions(request)
    name = request.get("IndexName")
    index = next((i for i in indexes if i["IndexName"] == name), None)
    if index is None:
        raise _Refused(f"The table does not have the specified index: {name}")
    query = _query_vector(request.get("SearchVector") or [], index["Dimensions"])
    scope = _scope(index, wanted, types)
    distance, attribute = index["DistanceFunction"], index["VectorAttribute"]["AttributeName"]
    scored = []
    for item in items:
        vector = _indexed(item.get(attribute), index["Dimensions"])
        if vector is not None and all(_same(item.get(a), v) for a, v in scope.items()):
            scored.append((_score(distance, query, vector), item))
    scored.sort(key=lambda pair: -pair[0] if distance == "DOT_PRODUCT" else pair[0])
    answer: dict[str, Any] = {"SearchResults": [
        {"Item": _projected(item, index, keys, request), "Score": score}
        for score, item in scored[:top]]}
    if request.get("ReturnConsumedCapacity") in ("TOTAL", "INDEXES"):
        answer["ConsumedCapacity"] = {"VectorSearchRequestBytes": float(max(
            1024, 4 * index["Dimensions"] * len(scored)))}
    return answer


#: a condition's tokens: names, placeholders, comparators, anything else one character
_TOKEN = re.compile(r"\s*(#\w+|:\w+|[A-Za-z_]\w*|<>|<=|>=|\S)")


def _conditions(request: Mapping[str, Any]) -> list[tuple[list[str], Any]]:
    """A SearchConditionExpression's equalities, ``(path, value)`` each (a path: its
    attribute's name, then any nested part): only ``path = :value`` joined by AND."""
    text = request.get("SearchConditionExpression")
    if text is None:
        return []
    parts: list[list[str]] = [[]]
    for token in _TOKEN.findall(text):
        if token.upper() == "AND":
            parts.append([])
        elif token not in "()":
            parts[-1].append(token)
    return [_equality(part, request.get("ExpressionAttributeNames") or {},
                      request.get("ExpressionAttributeValues") or {}) for part in parts]


#: what a search condition may not hold (DynamoDB: "Invalid comparator")
_NOT_EQUAL = frozenset({"OR", "NOT", "IN", "BETWEEN", "<", ">", "<>", "<=", ">=", ","})


def _equality(part: list[str], names: Mapping[str, str], values: Mapping[str, Any]
              ) -> tuple[list[str], Any]:
    """One conjunct of a search condition: ``path = :value`` (or ``:value = path``)."""
    invalid = _Refused("Invalid SearchConditionExpression: Invalid comparator used in "
                       "SearchConditionExpression")
    if part.count("=") != 1 or {t.upper() for t in part} & _NOT_EQUAL:
        raise invalid
    left, right = part[:part.index("=")], part[part.index("=") + 1:]
    value, path = (left, right) if left[:1] and left[0].startswith(":") else (right, left)
    if len(value) != 1 or not value[0].startswith(":") or not path or any(
            t.startswith(":") for t in path):
        raise invalid
    try:
        head = names[path[0]] if path[0].startswith("#") else path[0]
        return [head, *path[1:]], values[value[0]]
    except KeyError as exc:
        raise _Refused("Invalid SearchConditionExpression: An expression attribute name or "
                       f"value used in expression is not defined: {exc.args[0]}") from None


def _scope(index: Mapping[str, Any], wanted: list[tuple[list[str], Any]],
           types: Mapping[str, str]) -> dict[str, Any]:
    """The attribute values a search's condition requires, checked against the index's
    search schema as DynamoDB checks them."""
    schema = {e["AttributeName"]: e["SearchSchemaElementType"]
              for e in index.get("SearchSchema") or []}
    for path, _ in wanted:
        if path[0] not in schema:
            raise _Refused("SearchConditionExpression must not contain any attributes that is "
                           f"not in SearchSchema. Invalid attribute: {path[0]}")
    if any(len(path) > 1 for path, _ in wanted):
        raise _Refused("Invalid SearchConditionExpression: SearchConditionExpression cannot "
                       "have conditions on nested attributes")
    scope = {path[0]: value for path, value in wanted}
    if len(scope) != len(wanted):
        raise _Refused("Invalid SearchConditionExpression: SearchConditionExpression must only "
                       "contain one condition per attribute")
    hashed = next((a for a, kind in schema.items() if kind == "HASH"), None)
    if hashed is not None and hashed not in scope:
        raise _Refused("SearchConditionExpression must be provided when SearchSchema has a "
                       "HASH key")
    if hashed is not None and next(iter(scope[hashed]), None) != types.get(hashed):
        raise _Refused(f"Type of '{hashed}' attribute in SearchConditionExpression "
                       f"({next(iter(scope[hashed]), '?')}) does not match type in search "
                       f"schema ({types.get(hashed)})")
    return scope


def _query_vector(vector: Sequence[Any], dimensions: int) -> list[float]:
    """The search vector as 32-bit floats (DynamoDB's refusals of anything else)."""
    try:
        numbers = [float(v["N"]) for v in vector]
        query = array("f", numbers).tolist()
    except (KeyError, TypeError, ValueError, OverflowError):
        query = [math.nan]
    if not all(map(math.isfinite, query)):
        raise _Refused("Search vector contains invalid values. All values in the search "
                       "vector must be a 32-bit floating-point number attribute")
    if len(query) != dimensions:
        raise _Refused(f"Input search vector dimension {len(query)} does not match vector "
                       f"index dimension {dimensions}")
    return query


def _indexed(value: Any, dimensions: int) -> list[float] | None:
    """A stored vector as the index holds it (32-bit floats), or ``None``: not a list of
    ``dimensions`` numbers within float32's range (the item is not in the index)."""
    try:
        found = array("f", [float(v["N"]) for v in value["L"]]).tolist()
    except (KeyError, TypeError, ValueError, OverflowError):
        return None
    return found if len(found) == dimensions and all(map(math.isfinite, found)) else None


def _same(stored: Any, wanted: Any) -> bool:
    """DynamoDB's equality of two attribute values (numbers by value)."""
    if not isinstance(stored, dict) or stored.keys() != wanted.keys():
        return False
    if "N" in stored:
        return Decimal(stored["N"]) == Decimal(wanted["N"])
    return bool(stored == wanted)


def _score(distance: str, query: Sequence[float], stored: Sequence[float]) -> float:
    """The score of ``stored`` for ``query`` under ``distance`` (DynamoDB's: 64-bit sums of
    32-bit elements; COSINE 1 for a zero vector and 0 for the query itself, within 0..2;
    any score held to float32's range)."""
    if distance == "EUCLIDEAN":
        score = math.sqrt(sum((q - s) ** 2 for q, s in zip(query, stored, strict=True)))
    else:  # (the dot product: DOT_PRODUCT's score, and COSINE's numerator)
        score = math.fsum(q * s for q, s in zip(query, stored, strict=True))
    if distance == "COSINE":
        qq, ss = math.fsum(q * q for q in query), math.fsum(s * s for s in stored)
        if qq == 0 or ss == 0:
            return 1.0
        if list(query) == list(stored):
            return 0.0
        score = min(2.0, max(0.0, 1.0 - score / (math.sqrt(qq) * math.sqrt(ss))))
    return min(_F32_MAX, max(-_F32_MAX, score))


def _f32_text(value: float) -> str:
    """The shortest text of a 32-bit float (as the index gives a vector back)."""
    for digits in range(1, 10):
        text = f"{value:.{digits}g}"
        if array("f", [float(text)])[0] == value:
            return text
    return repr(value)


def _projected(item: Mapping[str, Any], index: Mapping[str, Any], keys: tuple[str, ...],
               request: Mapping[str, Any]) -> dict[str, Any]:
    """What a hit holds: what the index projects of ``item`` (its vector as the index's
    32-bit copy, and only when the ``ProjectionExpression`` asks for it), the attributes
    the ``ProjectionExpression`` names among them."""
    attribute = index["VectorAttribute"]["AttributeName"]
    projection = index.get("Projection") or {}
    kind = projection.get("ProjectionType", "ALL")
    held = dict(item) if kind == "ALL" else {a: item[a] for a in (
        *keys, *(e["AttributeName"] for e in index.get("SearchSchema") or []),
        *(projection.get("NonKeyAttributes") or [] if kind == "INCLUDE" else [])) if a in item}
    if attribute in held:
        held[attribute] = {"L": [{"N": _f32_text(v)} for v in
                                 _indexed(held[attribute], index["Dimensions"]) or []]}
    expression = request.get("ProjectionExpression")
    if expression is None:
        held.pop(attribute, None)
        return held
    names = request.get("ExpressionAttributeNames") or {}
    wanted = [names.get(p.strip(), p.strip()) for p in expression.split(",")]
    return {a: held[a] for a in wanted if a in held}
