"""Other writers of a table, byte for byte as their own code sends (each rule as
the tool's own source has it; docs/guide/adopting-existing-tables.md, "Writing beside
another mapper"): the AWS SDK for Java's DynamoDBMapper (v1, ``@DynamoDBVersionAttribute``, its
default ``SaveBehavior.UPDATE``), the v2 Enhanced Client (``VersionedRecordExtension``,
``putItem``/``updateItem``/``deleteItem``) and PynamoDB (``VersionAttribute``: ``save``,
``update``, ``delete``), each with its strict reader. They send through botocore.

Their optimistic lock is one rule (:class:`Mapper`): an N, ``1`` for a new item under
``attribute_not_exists(version)`` (no key condition), ``loaded + 1`` under
``version = loaded`` for a loaded one. They differ in the request:

- v1 ``save``: ``UpdateItem`` with legacy ``AttributeUpdates`` (``PUT`` each non-null
  modeled attribute, ``DELETE`` each null one) and legacy ``Expected``, ``ReturnValues
  ALL_NEW``; attributes it does not model stay. ``delete``: ``DeleteItem`` with
  ``Expected`` on the version.
- v2 ``putItem``: the whole item (what it does not model is dropped) under
  ``ConditionExpression``; ``updateItem``: ``SET`` of the modeled attributes;
  ``deleteItem``: unconditioned (aws/aws-sdk-java-v2#2358).
- PynamoDB ``save``: ``PutItem`` of the whole item; ``update``: ``SET``/``ADD`` actions
  with ``ADD version 1``; ``delete``: conditioned on the version.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from botocore.exceptions import ClientError

__all__ = ["ENHANCED", "MAPPER_V1", "PYNAMODB", "Mapper", "Refused", "StrictReadError"]

Doc = dict[str, Any]


class Refused(Exception):
    """The other writer's conditional write was refused (its own exception type)."""


class StrictReadError(Exception):
    """The other writer's reader cannot read an item (a modeled attribute of a wrong type)."""


def _av(kind: str, value: Any) -> dict[str, Any]:
    return {kind: str(value)}


def _value(kind: str, av: dict[str, Any], name: str) -> Any:
    if kind not in av:  # (v2: "N is required"; v1/PynamoDB: a type mismatch)
        raise StrictReadError(f"{name}: {kind} is required, got {sorted(av)}")
    return int(av["N"]) if kind == "N" and "." not in av["N"] else (
        Decimal(av["N"]) if kind == "N" else av[kind])


@dataclass
class Mapper:
    """One other writer: its ``style`` ("v1", "v2", "pynamodb"), the table it writes,
    the key attributes and modeled attributes (name -> "S" or "N") it maps, and its
    version attribute."""

    style: str
    client: Any = None
    table: str = ""
    keys: tuple[str, ...] = ("pk", "sk")
    modeled: dict[str, str] = field(default_factory=dict)
    version: str = "version"

    def bound(self, client: Any, table: str, modeled: dict[str, str]) -> Mapper:
        return Mapper(self.style, client, table, self.keys, modeled, self.version)

    # -- reads ---------------------------------------------------------------------------
    def read(self, item: dict[str, Any]) -> Doc:
        """The object its strict reader makes of ``item``: every key and modeled
        attribute (absent: ``None``), the version an N; unknown attributes ignored."""
        doc: Doc = {k: _value("S", item[k], k) for k in self.keys}
        for name, kind in {**self.modeled, self.version: "N"}.items():
            av = item.get(name)
            doc[name] = None if av is None or av.get("NULL") else _value(kind, av, name)
        return doc

    def load(self, key: Doc) -> Doc | None:
        out = self.client.get_item(TableName=self.table, Key=self._key(key),
                                   ConsistentRead=True)
        return self.read(out["Item"]) if "Item" in out else None

    # -- writes --------------------------------------------------------------------------
    def save(self, doc: Doc) -> None:
        """A save of ``doc`` (its version: the loaded one, ``None``: new); on success
        ``doc``'s version moves, as the mappers move the object's."""
        old = doc.get(self.version)
        new = 1 if old is None else old + 1
        attrs = {n: v for n, v in doc.items() if n not in self.keys and n != self.version}
        try:
            getattr(self, f"_save_{self.style.replace('.', '_')}")(doc, attrs, old, new)
        except ClientError as exc:
            if exc.response["Error"]["Code"] != "ConditionalCheckFailedException":
                raise
            raise Refused(str(exc)) from None
        doc[self.version] = new

    def update(self, doc: Doc, **changes: Any) -> None:
        """An update of the loaded ``doc`` (v2 ``updateItem``, PynamoDB ``update``): the
        changed attributes set, the version moved, conditioned on the loaded one."""
        old = doc.get(self.version)
        names = {f"#a{i}": n for i, n in enumerate(changes)}
        values = {f":a{i}": _av(self.modeled[n], v) for i, (n, v) in enumerate(changes.items())}
        sets = [f"#a{i} = :a{i}" for i in range(len(changes))]
        names["#v"] = self.version
        if self.style == "pynamodb":  # (PynamoDB: ADD 1, or SET 1 for none)
            values[":one"] = {"N": "1"}
            expr = "SET " + ", ".join([*sets, *(["#v = :one"] if old is None else [])]) + (
                "" if old is None else " ADD #v :one")
        else:  # (v2 updateItem: SET of every modeled attribute given and the next version)
            values[":nv"] = {"N": str(1 if old is None else old + 1)}
            expr = "SET " + ", ".join([*sets, "#v = :nv"])
        cond, cvalues = self._condition(old)
        try:
            self.client.update_item(TableName=self.table, Key=self._key(doc),
                                    UpdateExpression=expr, ConditionExpression=cond,
                                    ExpressionAttributeNames=names,
                                    ExpressionAttributeValues={**values, **cvalues})
        except ClientError as exc:
            if exc.response["Error"]["Code"] != "ConditionalCheckFailedException":
                raise
            raise Refused(str(exc)) from None
        doc.update(changes)
        doc[self.version] = 1 if old is None else old + 1

    def delete(self, doc: Doc) -> None:
        """A delete of the loaded ``doc``: v1 and PynamoDB conditioned on its version,
        v2's ``deleteItem`` unconditioned (its default)."""
        old = doc.get(self.version)
        args: dict[str, Any] = {"TableName": self.table, "Key": self._key(doc)}
        if self.style == "v1":
            args["Expected"] = {self.version: {"Exists": False} if old is None else {
                "Value": {"N": str(old)}, "Exists": True}}
        elif self.style == "pynamodb":
            cond, values = self._condition(old)
            args.update(ConditionExpression=cond, ExpressionAttributeNames={"#v": self.version})
            if values:
                args["ExpressionAttributeValues"] = values
        try:
            self.client.delete_item(**args)
        except ClientError as exc:
            if exc.response["Error"]["Code"] != "ConditionalCheckFailedException":
                raise
            raise Refused(str(exc)) from None

    # -- the requests ----------------------------------------------------------------------
    def _key(self, doc: Doc) -> dict[str, Any]:
        return {k: {"S": doc[k]} for k in self.keys}

    def _condition(self, old: int | None) -> tuple[str, dict[str, Any]]:
        if old is None:
            return "attribute_not_exists(#v)", {}
        return "#v = :ov", {":ov": {"N": str(old)}}

    def _item(self, doc: Doc, attrs: Doc, new: int) -> dict[str, Any]:
        item = self._key(doc)
        item.update({n: _av(self.modeled[n], v) for n, v in attrs.items() if v is not None})
        item[self.version] = {"N": str(new)}
        return item

    def _save_v1(self, doc: Doc, attrs: Doc, old: int | None, new: int) -> None:
        """DynamoDBMapper.save, SaveBehavior.UPDATE: legacy AttributeUpdates and Expected."""
        updates = {n: {"Action": "DELETE"} if v is None else {
            "Action": "PUT", "Value": _av(self.modeled[n], v)} for n, v in attrs.items()}
        updates[self.version] = {"Action": "PUT", "Value": {"N": str(new)}}
        expected = {self.version: {"Exists": False} if old is None else {
            "Value": {"N": str(old)}, "Exists": True}}
        self.client.update_item(TableName=self.table, Key=self._key(doc),
                                AttributeUpdates=updates, Expected=expected,
                                ReturnValues="ALL_NEW")

    def _put(self, doc: Doc, attrs: Doc, old: int | None, new: int, name: str) -> None:
        cond, values = self._condition(old)
        args: dict[str, Any] = {"ConditionExpression": cond.replace("#v", name),
                                "ExpressionAttributeNames": {name: self.version}}
        if values:
            args["ExpressionAttributeValues"] = values
        self.client.put_item(TableName=self.table, Item=self._item(doc, attrs, new), **args)

    def _save_v2(self, doc: Doc, attrs: Doc, old: int | None, new: int) -> None:
        """The Enhanced Client's putItem through VersionedRecordExtension (its name
        placeholder ``#AMZN_MAPPED_<attribute>``, its value ``:old_version_value``)."""
        name = f"#AMZN_MAPPED_{self.version}"
        cond, values = self._condition(old)
        args: dict[str, Any] = {"ConditionExpression": cond.replace("#v", name).replace(
            ":ov", ":old_version_value"), "ExpressionAttributeNames": {name: self.version}}
        if values:
            args["ExpressionAttributeValues"] = {":old_version_value": values[":ov"]}
        self.client.put_item(TableName=self.table, Item=self._item(doc, attrs, new), **args)

    def _save_pynamodb(self, doc: Doc, attrs: Doc, old: int | None, new: int) -> None:
        """PynamoDB Model.save: PutItem of the whole item, conditioned on the version."""
        self._put(doc, attrs, old, new, "#0")


#: the three conventions (bind each with :meth:`Mapper.bound`)
MAPPER_V1 = Mapper("v1")
ENHANCED = Mapper("v2")
PYNAMODB = Mapper("pynamodb")


def client_for(endpoint_url: str | None) -> Any:
    """A botocore DynamoDB client on the engine at ``endpoint_url`` (``None``: moto's
    in-process mock, active), as the other writer's own process has."""
    import boto3

    return boto3.client("dynamodb", region_name="us-east-1", endpoint_url=endpoint_url,
                        aws_access_key_id="dummy", aws_secret_access_key="dummy")
