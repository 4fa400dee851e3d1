"""How an export reads the rows of one entity (:class:`RowReader`): its rules' export
hooks, then as a read decodes them, as the fields of its dataset."""

from typing import Any

from pydantic import BaseModel, ConfigDict, create_model

from dynaorm.jobs.export_files import Item
from dynaorm.schema.spec import EntitySpec
from dynaorm.values.ttl import expired

#: the rules (by name) whose export hooks only leave attributes out, and, with encrypted
#: fields left out, whose decoding is nothing (an entity with no other rule is read the
#: fast way)
_LEAVE_OUT = ("revision", "indexes", "encrypted")


def _rule(hook: Any) -> str | None:
    """The name of the rule whose bound method ``hook`` is."""
    return getattr(getattr(hook, "__self__", None), "name", None)


def _model(spec: EntitySpec, omitted: frozenset[str]) -> type[BaseModel]:
    """The model of an entity's rows as exported: its class, or (fields ``omitted``) one
    of the other fields."""
    if not omitted:
        return spec.cls
    fields: dict[str, Any] = {n: (f.annotation, f) for n, f in spec.cls.model_fields.items()
                              if n not in omitted}
    return create_model(spec.name, __config__=ConfigDict(populate_by_name=True), **fields)


class RowReader:
    """How an export reads the rows of one entity: its rules' export hooks, then as a read
    decodes them (encrypted fields left out, or opened), as the dataset's field values."""

    def __init__(self, spec: EntitySpec, decrypt: bool) -> None:
        self.spec = spec
        self.hooks = [h for h in spec.rules.exporters
                      if not (decrypt and _rule(h) == "encrypted")]
        self.omitted = frozenset() if decrypt else frozenset(spec.encrypted.values())
        #: the TTL attribute whose passed time leaves a row out, as reads skip it (an
        #: entity with a TTL field or timestamps)
        self.expires = spec.table.ttl if "stamps" in spec.rules.by_name else None
        layout = spec.previous
        self.old = None if layout is None else frozenset(
            a for a, n in layout.fields_by_attr.items() if n in self.omitted)
        self.model = _model(spec, self.omitted)

    @property
    def fast(self) -> bool:
        """Whether a row of this entity is its stored attributes read as its fields, and
        nothing else (:mod:`dynaorm.jobs.stored` reads them): no rule decodes it (but an
        encrypted one whose fields are left out) or skips it (a TTL, ``keeps``), its export
        hooks only leave attributes out, no previous layout shares its type name, no
        field-level kind."""
        return self._plain()

    @property
    def vectored(self) -> bool:
        """Whether the vector way reads this entity's rows (:mod:`dynaorm.jobs.vector`):
        as the fast way, or a versioned entity's whose only other rule is its versions
        (its latest copies read so, its version rows told apart by their sort key)."""
        return self._plain("versioned")

    def _plain(self, *also: str) -> bool:
        """:attr:`fast`, the rules named ``also`` allowed too."""
        spec = self.spec
        rules = [_rule(h) for h in (*self.hooks, *spec.rules.decoders, *spec.rules.keepers)]
        return (not spec.kinds and spec.previous is None and self.expires is None and all(
            r in (*_LEAVE_OUT, *also) and not (r == "encrypted" and not self.omitted)
            for r in rules))

    def keeps(self, item: Item) -> bool:
        """Whether the stored row ``item`` of this entity is exported: neither past its
        TTL nor kept from the results by a rule (:meth:`~dynaorm.schema.rules.Rule.keeps`),
        as reads skip it."""
        return not expired(item, self.expires) and self.spec.rules.keeps(item)

    def columns(self) -> list[Any]:
        from dynaorm.jobs.arrow import columns

        return columns(self.model)

    def values(self, item: Item) -> dict[str, Any] | None:
        """The field values of stored row ``item`` (``None``: its rules export nothing)."""
        for hook in self.hooks:
            found = hook(item)
            if found is None:
                return None
            item = found
        spec = self.spec
        if self.old is not None and spec.rules.before.stores(spec, item):
            data = spec.rules.before.values(spec, {a: v for a, v in item.items()
                                                   if a not in self.old})
            return self.model.model_validate(data).__dict__
        return self.model.model_validate(spec.decode_fields(item)).__dict__
