"""The key grammar (contract 24, "One public door"): the one parser of the key templates
an entity declares (``"ORG#{org_id}#USER#{user_id}"``), for code outside dynaorm that must
read or write keys as dynaorm does: a policy generator, an exporter, a tool that lists a
tenant's rows. Pure: it sends nothing.

- **parse**: :func:`parse` (a :class:`~dynaorm.KeyTemplateError` for a template the grammar
  refuses: two fields side by side, a conversion other than ``!u``/``!l``...);
- **render**: :meth:`KeyTemplate.render` (a whole key from field values, refusing a value
  that holds a separator of its field), :meth:`KeyTemplate.render_prefix` (its leading
  fields, for a ``begins_with``), :func:`render_value` (one value as keys hold it);
- **read back**: :func:`key_value` (a stored key attribute, DynamoDB JSON, as the text
  templates render), :meth:`KeyTemplate.parse_key` (its field texts, ``None`` when the
  template did not render it), :func:`key_order` (key values in DynamoDB's order),
  :func:`named` (the type name a stored item holds under the table's type attribute);
- **the proven prefix**: :meth:`KeyTemplate.scope_prefix` (the leading part of a key
  that proves it belongs to a scope's values: what ``dynaorm iam --scope`` grants);
  :meth:`KeyTemplate.separators` (what a field's values never hold);
- **a version row's sort key** read back: :func:`parse_version_sk` (its version, ``0`` for
  a versioned entity's latest copy, and the entity's own sort key);
- **two templates side by side**: :func:`could_overlap` (whether one key could fit both),
  :func:`literal_outranks` (whether such a key is the first's: a literal part where the
  other has a field wins), as dynaorm ranks two entities' keys on one table;
- **the reserved namespace**: :data:`OWN_PREFIX`, what every key of a row a table keeps
  for itself or a surface begins with (:class:`dynaorm.RowKind`), and no entity's may.

A security decision taken on keys (is this key a tenant's?) rests on this parser alone,
never on a string check beside it. The templates of a model are in ``table.model()``
(``pk``, ``sk``, each index's, each row kind's ``key``)."""

from dynaorm.errors import KeyTemplateError
from dynaorm.schema.checks import could_overlap
from dynaorm.schema.rules.versioned import parse_version_sk
from dynaorm.schema.templates import KeyTemplate, literal_outranks, render_value
from dynaorm.values.keys import OWN_PREFIX, key_order, key_value, named

__all__ = ["OWN_PREFIX", "KeyTemplate", "KeyTemplateError", "could_overlap", "key_order",
           "key_value", "literal_outranks", "named", "parse", "parse_version_sk",
           "render_value"]


def parse(source: str, *, key_type: str = "S") -> KeyTemplate:
    """``source``, a key template, parsed by the grammar every entity's keys are
    (``key_type``: the key attribute's DynamoDB type, ``"N"``/``"B"`` for a template of
    exactly one field); a :class:`~dynaorm.KeyTemplateError` when it refuses it."""
    return KeyTemplate.parse(source, key_type=key_type)
